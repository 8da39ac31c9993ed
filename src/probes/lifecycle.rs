// SPDX-License-Identifier: GPL-2.0

//! Process lifecycle events of watched processes: `fork`, `exec`, `exit`, and `cgroup`
//! when a process is watched as a member of a watched cgroup.
//!
//! - fork: the `sched_process_fork` tracepoint, which `kernel_clone()` fires in the parent
//!   once per new task before the task first runs. A new process of a followed parent is
//!   added to the watch set there, so it is watched from its first instruction. A number left
//!   in the set by a watched process whose exit probe was missed (marked at its
//!   `sched_process_exit`, below) is taken out there, so that it never watches the
//!   process that reuses it. A tracepoint probe is never missed.
//! - exec: a kretprobe on `begin_new_exec(bprm)`, the point of no return of execve; on
//!   success the task has its new mm and comm.
//! - exit: a kprobe on `disassociate_ctty(on_exit)`, which `do_exit()` calls with 1 only for
//!   the last thread of a thread group, after the mm is gone. The process leaves the watch
//!   set there, so that a reused pid is never watched by accident.
//! - cgroup move: the `cgroup_attach_task` tracepoint, fired after a process (or a thread)
//!   was moved to another cgroup (a write to `cgroup.procs`; moves in cgroup v1 hierarchies
//!   are ignored). While a cgroup is watched, the
//!   moved process is watched from then on if it is now in one, and no longer if it is not;
//!   fork and exec look at the cgroup of the new process too. Each process that becomes
//!   watched as a member of a watched cgroup (at the `c:PATH` write, at fork, at exec), and
//!   each one moved while it is in one, gets a `cgroup` line naming its cgroup.

use crate::bindings;
use crate::kernel_ext::cgroup::{on_default_hierarchy, process_cgroup};
use crate::kernel_ext::kcrate::{sync::Arc, task::Task};
use crate::kernel_ext::kprobe::{
    Kprobe, KprobeHandler, Kretprobe, KretprobeHandler, Unregistration,
};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::task::{current_ids, task_from_raw, task_tgid};
use crate::kernel_ext::tracepoint::TracepointProbe;
use crate::record::event::{Event, Kind, TEXT_CAPACITY};
use crate::state::State;
use core::mem::MaybeUninit;

/// Pushes the `cgroup` line of the process of `task`: the id and path of the cgroup v2 it is
/// in (its leader's), with the process's pid and its leader's tid. Nothing for a task already
/// released. Callable in any context but NMI.
pub(crate) fn push_cgroup(state: &State, task: &Task) {
    let mut path = [0u8; TEXT_CAPACITY];
    let Some(cgroup) = process_cgroup(task, &mut path) else {
        return;
    };
    let tgid = task_tgid(task);
    let mut event = Event::new(Kind::Cgroup, tgid, tgid);
    event.args[0] = cgroup.id;
    event.set_text_tail(cgroup.path);
    event.text_head_cut |= cgroup.cut;
    state.ring.push(&event);
}

/// The probe on `sched_process_fork`: `TP_PROTO(struct task_struct *parent, struct
/// task_struct *child)`, fired in the parent (current) after `copy_process()`.
///
/// # Safety
///
/// Called by the tracepoint with `data` the `State` given to [`TracepointProbe::attach`] and
/// a valid, fully set up new task `child`.
unsafe extern "C" fn process_fork(
    data: *mut c_void,
    _parent: *mut bindings::task_struct,
    child: *mut bindings::task_struct,
) {
    // SAFETY: `data` is the `State` the probe was attached with, alive while it is attached.
    let state = unsafe { &*data.cast::<State>() };
    // SAFETY: The tracepoint passes the valid new task, for the call.
    let child = unsafe { task_from_raw(child) };
    let child_tgid = task_tgid(child);
    if child.pid() != child_tgid {
        // A new thread, not a new process.
        return;
    }
    state.watch.new_process(child_tgid);
    let forked = state.watch.fork(current_ids().0, child);
    if forked.parent_watched {
        let mut event = crate::probes::current_event(Kind::Fork);
        event.ret = i64::from(child_tgid);
        event.args[0] = u64::from(forked.child_watched);
        state.ring.push(&event);
    }
    // After the parent's `fork` line, before any line of the child.
    if forked.child_in_cgroup {
        push_cgroup(state, child);
    }
}

/// Attaches the probe on `sched_process_exit`.
pub(crate) fn attach_exit(state: Arc<State>) -> Result<TracepointProbe<State>> {
    // SAFETY: `process_exit` has the probe signature of `sched_process_exit` and reads
    // `data` as `*const State`.
    unsafe {
        TracepointProbe::attach_named(c"sched_process_exit", process_exit as *mut c_void, state)
    }
}

/// The probe: `TP_PROTO(struct task_struct *p, bool group_dead)`, fired by `do_exit()` of
/// the current task (`p`) before `exit_mm()`.
///
/// # Safety
///
/// Called by the tracepoint with `data` the `State` given to [`TracepointProbe::attach`].
#[cfg(not(memmon_kernel_6_12))]
unsafe extern "C" fn process_exit(
    data: *mut c_void,
    _task: *mut bindings::task_struct,
    group_dead: bool,
) {
    // SAFETY: `data` is the `State` the probe was attached with, alive while it is attached.
    let state = unsafe { &*data.cast::<State>() };
    if !group_dead {
        return;
    }
    group_exit(state);
}

/// The probe on 6.12: `TP_PROTO(struct task_struct *p)`, fired by `do_exit()` after
/// `exit_mm()`, without `group_dead`: the group's exit is [`GroupExitProbe`]'s there.
///
/// # Safety
///
/// Called by the tracepoint.
#[cfg(memmon_kernel_6_12)]
unsafe extern "C" fn process_exit(_data: *mut c_void, _task: *mut bindings::task_struct) {}

/// The last thread of the current process is exiting, its address space still whole: the
/// process's `rss` line, and the dropped faults reported.
fn group_exit(state: &State) {
    let tgid = current_ids().0;
    // Its faults not recorded, while readers know it: before its `rss` and `exit` lines, and
    // also when it is no longer watched (unwatched after those faults), so that no count is
    // left in a ring for a later read to report long after the process is gone.
    state.ring.report_dropped_of(tgid);
    if !state.watch.contains(tgid) {
        return;
    }
    // The exit probe (a kprobe, which can be missed) takes it out of the watch set later;
    // the mark lets a new process with this number see a stale bit if it is. On 7.x this is
    // the `sched_process_exit` tracepoint, which cannot be missed. On 6.12 it is a kprobe on
    // `acct_collect()` ([`GroupExitProbe`]), which can: a missed hit is counted in
    // `missed()` (`probe_missed` in stats), and then the process gets no `rss` line at exit
    // (its dropped faults are still reported by the exit probe), and nothing marks it: if
    // the exit probe is missed too, a new process given its number is watched.
    state.watch.exiting(tgid);
    let task = kernel::task::Task::current_raw();
    // SAFETY: `current` is valid; before `exit_mm()` its `mm` is its own, valid address
    // space (null for a kernel thread).
    let mm = unsafe { (*task).mm };
    if mm.is_null() {
        return;
    }
    // SAFETY: `mm` is the current task's.
    let event = unsafe { crate::probes::rss::rss_event(mm, crate::probes::rss::RssAt::Exit) };
    state.ring.push(&event);
}

/// Attaches the probe on `sched_process_fork`.
pub(crate) fn attach_fork(state: Arc<State>) -> Result<TracepointProbe<State>> {
    // SAFETY: `process_fork` has the probe signature of `sched_process_fork` and reads
    // `data` as `*const State`.
    unsafe {
        TracepointProbe::attach_named(c"sched_process_fork", process_fork as *mut c_void, state)
    }
}

/// Attaches the probe on `cgroup_attach_task`.
pub(crate) fn attach_cgroup_move(state: Arc<State>) -> Result<TracepointProbe<State>> {
    // SAFETY: `cgroup_moved` has the probe signature of `cgroup_attach_task` and reads `data`
    // as `*const State`.
    unsafe {
        TracepointProbe::attach_named(c"cgroup_attach_task", cgroup_moved as *mut c_void, state)
    }
}

/// The probe: `TP_PROTO(struct cgroup *dst_cgrp, const char *path, struct task_struct *task,
/// bool threadgroup)`, fired by `cgroup_attach_task()` once the move succeeded, with
/// `cgroup_mutex` held and interrupts off; `task` is the thread moved, or the leader of the
/// thread group moved.
///
/// # Safety
///
/// Called by the tracepoint with `data` the `State` given to [`TracepointProbe::attach`] and
/// a valid `task`.
unsafe extern "C" fn cgroup_moved(
    data: *mut c_void,
    dst_cgrp: *mut bindings::cgroup,
    _path: *const c_char,
    task: *mut bindings::task_struct,
    _threadgroup: bool,
) {
    // A move in a cgroup v1 hierarchy leaves the process's v2 cgroup, which the `cgroup` line
    // names and the watch set follows, as it was.
    // SAFETY: The tracepoint passes a valid destination cgroup, for the call.
    if !unsafe { on_default_hierarchy(dst_cgrp) } {
        return;
    }
    // SAFETY: `data` is the `State` the probe was attached with, alive while it is attached.
    let state = unsafe { &*data.cast::<State>() };
    // SAFETY: The tracepoint passes a valid task, for the call.
    let task = unsafe { task_from_raw(task) };
    // One line a process: the tracepoint fires for each thread moved, and the process's
    // cgroup is its leader's.
    if state.watch.moved(task) && task.pid() == task_tgid(task) {
        push_cgroup(state, task);
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
        // CAST: an int argument is the low half of its register.
        if crate::arch::kernel_arg(regs, 0) as i32 != 1 {
            return;
        }
        let tgid = current_ids().0;
        if !self.state.watch.contains(tgid) {
            return;
        }
        let mut event = crate::probes::current_event(Kind::Exit);
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
        // Faults after the exit tracepoint's report (put_user() of clear_child_tid, the robust
        // futex list, at exit_mm()) that were dropped: reported before the exit line too.
        self.state.ring.report_dropped_of(tgid);
        self.state.ring.push(&event);
        self.state.watch.remove(tgid);
    }
}

/// Handler of the group exit probe of 6.12, a kprobe on `acct_collect(long exitcode, int
/// group_dead)`, which `do_exit()` calls just before `exit_mm()` (6.12's `sched_process_exit`
/// comes after it, and without `group_dead`).
#[cfg(memmon_kernel_6_12)]
pub(crate) struct GroupExitProbe {
    state: Arc<State>,
}

#[cfg(memmon_kernel_6_12)]
impl KprobeHandler for GroupExitProbe {
    fn hit(&self, regs: &bindings::pt_regs) {
        // CAST: an int argument is the low half of its register.
        if crate::arch::kernel_arg(regs, 1) as i32 == 0 {
            return;
        }
        group_exit(&self.state);
    }
}

/// Handler of the exec probe; carries the `linux_binprm` from entry to return.
pub(crate) struct ExecProbe {
    state: Arc<State>,
}

impl KretprobeHandler for ExecProbe {
    type Data = usize;

    fn entry(&self, regs: &bindings::pt_regs, data: &mut MaybeUninit<usize>) -> bool {
        // While a cgroup is watched, a process that is in it and not watched (none should be)
        // is watched from its exec on.
        let (watched, joined) = self.state.watch.exec_current();
        if !watched {
            return false;
        }
        if joined {
            push_cgroup(&self.state, kernel::current!());
        }
        let task = kernel::task::Task::current_raw();
        // SAFETY: `current` is valid; its `mm` is still the address space that the exec is
        // about to replace (null only for a kernel thread, which has none to report).
        let mm = unsafe { (*task).mm };
        if !mm.is_null() {
            // SAFETY: `mm` is the current task's.
            self.state.ring.push(&unsafe {
                crate::probes::rss::rss_event(mm, crate::probes::rss::RssAt::Exec)
            });
        }
        // The first argument register holds the `struct linux_binprm *`.
        data.write(crate::arch::kernel_arg(regs, 0));
        true
    }

    fn exit(&self, bprm: &mut usize, regs: &bindings::pt_regs) {
        // CAST: `begin_new_exec` returns an int.
        if crate::arch::return_value(regs) as i32 != 0 {
            return;
        }
        let bprm = *bprm as *const bindings::linux_binprm;
        let mut event = crate::probes::current_event(Kind::Exec);
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
    exit: Pin<KBox<Kprobe<ExitProbe>>>,
    exec: Pin<KBox<Kretprobe<ExecProbe>>>,
    /// 6.12: the group's exit before `exit_mm()`.
    #[cfg(memmon_kernel_6_12)]
    group_exit: Pin<KBox<Kprobe<GroupExitProbe>>>,
}

impl LifecycleProbes {
    /// Registers the exit and exec probes.
    pub(crate) fn register(state: &Arc<State>) -> Result<Self> {
        Ok(Self {
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
            #[cfg(memmon_kernel_6_12)]
            group_exit: KBox::pin_init(
                Kprobe::register(
                    c"acct_collect",
                    GroupExitProbe {
                        state: state.clone(),
                    },
                ),
                GFP_KERNEL,
            )?,
        })
    }

    /// Hands the probes to `batch`, which unregisters them together.
    pub(crate) fn unregister_into<'a>(&'a self, batch: &mut Unregistration<'a>) {
        batch.add_kprobe(&self.exit);
        batch.add_kretprobe(&self.exec);
        #[cfg(memmon_kernel_6_12)]
        batch.add_kprobe(&self.group_exit);
    }

    /// Probe hits that were not handled (recursion, or no exec instance free).
    pub(crate) fn missed(&self) -> u64 {
        let missed = self.exit.missed() + self.exec.missed();
        #[cfg(memmon_kernel_6_12)]
        let missed = missed + self.group_exit.missed();
        missed
    }

    /// Whether every kprobe goes through ftrace.
    pub(crate) fn ftrace_based(&self) -> bool {
        let based = self.exit.ftrace_based() && self.exec.ftrace_based();
        #[cfg(memmon_kernel_6_12)]
        let based = based && self.group_exit.ftrace_based();
        based
    }
}
