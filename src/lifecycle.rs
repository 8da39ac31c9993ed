// SPDX-License-Identifier: GPL-2.0

//! Process lifecycle events of watched processes: `fork`, `exec`, `exit`.
//!
//! - fork: a kprobe on `wake_up_new_task(p)`, which runs once per new task before it first
//!   runs; a new process of a followed parent is added to the watch set there, so it is
//!   watched from its first instruction.
//! - exec: a kretprobe on `begin_new_exec(bprm)`, the point of no return of execve; on
//!   success the task has its new mm and comm.
//! - exit: a kprobe on `disassociate_ctty(on_exit)`, which `do_exit()` calls with 1 only for
//!   the last thread of a thread group, after the mm is gone. The process leaves the watch
//!   set there, so that a reused pid is never watched by accident.

use crate::event::{current_ids, Event, Kind};
use crate::kprobe::{Kprobe, KprobeHandler, Kretprobe, KretprobeHandler};
use crate::State;
use kernel::{bindings, prelude::*, sync::Arc};

/// Handler of the fork probe.
pub(crate) struct ForkProbe {
    state: Arc<State>,
}

impl KprobeHandler for ForkProbe {
    fn hit(&self, regs: &bindings::pt_regs) {
        let child = regs.di as *const bindings::task_struct;
        if child.is_null() {
            return;
        }
        // SAFETY: `wake_up_new_task` is called with a valid, fully set up new task.
        let (child_pid, child_tgid) = unsafe { ((*child).pid, (*child).tgid) };
        if child_pid != child_tgid {
            // A new thread, not a new process.
            return;
        }
        let parent = current_ids().0;
        if !self.state.watch.contains(parent) {
            return;
        }
        let follow = self.state.watch.follows(parent);
        if follow {
            self.state.watch.add(child_tgid, true);
        }
        let mut event = Event::new(Kind::Fork);
        event.ret = i64::from(child_tgid);
        event.args[0] = u64::from(follow);
        self.state.ring.push(&event);
    }
}

/// `SIGNAL_GROUP_EXIT` of `linux/sched/signal.h`: a group exit is in progress.
const SIGNAL_GROUP_EXIT: u32 = 0x4;

/// Handler of the exit probe.
pub(crate) struct ExitProbe {
    state: Arc<State>,
}

impl KprobeHandler for ExitProbe {
    fn hit(&self, regs: &bindings::pt_regs) {
        // `disassociate_ctty(int on_exit)`: only do_exit() of a group's last thread passes 1.
        if regs.di as i32 != 1 {
            return;
        }
        let tgid = current_ids().0;
        if !self.state.watch.contains(tgid) {
            return;
        }
        let mut event = Event::new(Kind::Exit);
        let task = kernel::task::Task::current_raw();
        // The status wait(2) reports (wait_task_zombie()): the group exit code after
        // exit_group() or a fatal signal, else the exit code of the group leader, which need
        // not be the last thread to exit.
        // SAFETY: `current` is valid, and so are its `signal` and `group_leader` (a zombie
        // leader stays until the group is reaped); do_exit() set the exit codes before this.
        event.ret = i64::from(unsafe {
            let signal = (*task).signal;
            if (*signal).flags & SIGNAL_GROUP_EXIT != 0 {
                (*signal).group_exit_code
            } else {
                (*(*task).group_leader).exit_code
            }
        });
        self.state.ring.push(&event);
        self.state.watch.remove(tgid);
    }
}

/// Handler of the exec probe; carries the `linux_binprm` from entry to return.
pub(crate) struct ExecProbe {
    state: Arc<State>,
}

impl KretprobeHandler for ExecProbe {
    type Data = usize;

    fn entry(&self, regs: &bindings::pt_regs) -> Option<usize> {
        if !self.state.watch.contains_current() {
            return None;
        }
        let task = kernel::task::Task::current_raw();
        // SAFETY: `current` is valid; its `mm` is still the address space that the exec is
        // about to replace (null only for a kernel thread, which has none to report).
        let mm = unsafe { (*task).mm };
        if !mm.is_null() {
            // SAFETY: `mm` is the current task's.
            self.state
                .ring
                .push(&unsafe { crate::rss::rss_event(mm, crate::rss::RssAt::Exec) });
        }
        // The first argument register holds the `struct linux_binprm *`.
        Some(regs.di)
    }

    fn exit(&self, bprm: &usize, regs: &bindings::pt_regs) {
        // CAST: `begin_new_exec` returns an int.
        if regs.ax as i32 != 0 {
            return;
        }
        let bprm = *bprm as *const bindings::linux_binprm;
        let mut event = Event::new(Kind::Exec);
        let task = kernel::task::Task::current_raw();
        // SAFETY: `current` is valid and its `comm` is a NUL-padded array of 16 bytes, updated
        // by the exec that just succeeded in this task.
        let comm = unsafe { (*task).comm };
        let mut comm_words = [0u8; 16];
        let mut comm_len = 0;
        for (dst, &src) in comm_words.iter_mut().zip(comm.iter()) {
            if src == 0 {
                break;
            }
            *dst = src;
            comm_len += 1;
        }
        event.args[0] = comm_len;
        let mut low = [0u8; 8];
        let mut high = [0u8; 8];
        low.copy_from_slice(&comm_words[..8]);
        high.copy_from_slice(&comm_words[8..]);
        event.args[1] = u64::from_le_bytes(low);
        event.args[2] = u64::from_le_bytes(high);
        // SAFETY: `bprm` is the argument of the call that is returning; execve keeps it (and
        // its `filename`) until after `begin_new_exec` returns.
        unsafe { event.set_text_from_c((*bprm).filename.cast()) };
        self.state.ring.push(&event);
    }
}

/// The lifecycle probes, registered from initialisation until drop.
pub(crate) struct LifecycleProbes {
    fork: Pin<KBox<Kprobe<ForkProbe>>>,
    exit: Pin<KBox<Kprobe<ExitProbe>>>,
    exec: Pin<KBox<Kretprobe<ExecProbe>>>,
}

impl LifecycleProbes {
    /// Registers the fork, exit and exec probes.
    pub(crate) fn register(state: &Arc<State>) -> Result<Self> {
        Ok(Self {
            fork: KBox::pin_init(
                Kprobe::register(
                    c"wake_up_new_task",
                    ForkProbe {
                        state: state.clone(),
                    },
                ),
                GFP_KERNEL,
            )?,
            exit: KBox::pin_init(
                Kprobe::register(
                    c"disassociate_ctty",
                    ExitProbe {
                        state: state.clone(),
                    },
                ),
                GFP_KERNEL,
            )?,
            exec: KBox::pin_init(
                Kretprobe::register(
                    c"begin_new_exec",
                    64,
                    ExecProbe {
                        state: state.clone(),
                    },
                ),
                GFP_KERNEL,
            )?,
        })
    }

    /// Probe hits that were not handled (recursion, or no exec instance free).
    pub(crate) fn missed(&self) -> u64 {
        self.fork.missed() + self.exit.missed() + self.exec.missed()
    }

    /// Whether every probe goes through ftrace.
    pub(crate) fn ftrace_based(&self) -> bool {
        self.fork.ftrace_based() && self.exit.ftrace_based() && self.exec.ftrace_based()
    }
}
