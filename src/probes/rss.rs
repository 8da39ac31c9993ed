// SPDX-License-Identifier: GPL-2.0

//! `rss` events: a watched process's resident memory, as `/proc/PID/status` shows it
//! (RssAnon, RssFile, RssShmem, VmSwap, VmHWM), when its address space is released (exit,
//! and exec replacing it) and at each mark.
//!
//! The exit line is taken at the `sched_process_exit` tracepoint of the thread that ends the
//! group (`group_dead`, [`crate::probes::lifecycle`]), which `do_exit()` fires before
//! `exit_mm()`, while the address space is still whole; the exec line from the exec probe,
//! before the new program's address space replaces the old one.

use crate::bindings;
use crate::record::event::{Event, Kind};
use crate::state::State;

/// When an `rss` line was taken (its `at=`).
#[derive(Clone, Copy)]
pub(crate) enum RssAt {
    Exit = 0,
    Exec = 1,
    Mark = 2,
}

/// The `rss` event of `mm`, for the current task's ids.
///
/// # Safety
///
/// `mm` must be valid: the current task's, or referenced.
pub(crate) unsafe fn rss_event(mm: *mut bindings::mm_struct, at: RssAt) -> Event {
    let counter = |member: u32| -> u64 {
        // SAFETY: `mm` is valid; its counters are percpu counters, summed under their own
        // lock as `get_mm_counter_sum()` does; `member` is below `NR_MM_COUNTERS`.
        let sum = unsafe {
            let counters = &raw mut (*mm).__bindgen_anon_1.rss_stat;
            bindings::__percpu_counter_sum(
                counters
                    .cast::<bindings::percpu_counter>()
                    .add(member as usize),
            )
        };
        u64::try_from(sum).unwrap_or(0)
    };
    let anon = counter(bindings::MM_ANONPAGES);
    let file = counter(bindings::MM_FILEPAGES);
    let shmem = counter(bindings::MM_SHMEMPAGES);
    let swap = counter(bindings::MM_SWAPENTS);
    // SAFETY: `mm` is valid; `hiwater_rss` is read racily, as `/proc/PID/status` does.
    let hiwater = unsafe { (*mm).__bindgen_anon_1.hiwater_rss } as u64;
    let peak = hiwater.max(anon + file + shmem);
    let mut event = crate::probes::current_event(Kind::Rss);
    let page = bindings::PAGE_SIZE as u64;
    event.args = [
        anon * page,
        file * page,
        shmem * page,
        swap * page,
        peak * page,
        at as u64,
    ];
    event
}

/// Pushes an `rss` event (`at=mark`) for every watched process that still has an address
/// space. Process context.
pub(crate) fn mark_all(state: &State) {
    state.watch.for_each_watched(|tgid| {
        let mm = {
            let _rcu = crate::kernel_ext::kcrate::sync::rcu::read_lock();
            // SAFETY: `find_pid_ns` and `pid_task` need the RCU read lock, held by `_rcu`;
            // `init_pid_ns` is static. `get_task_mm` takes a reference on the mm of a task
            // valid under the RCU read lock, or returns null.
            unsafe {
                let pid = bindings::find_pid_ns(tgid, &raw mut bindings::init_pid_ns);
                if pid.is_null() {
                    return;
                }
                let task = bindings::pid_task(pid, bindings::pid_type_PIDTYPE_TGID);
                if task.is_null() {
                    return;
                }
                bindings::get_task_mm(task)
            }
        };
        if mm.is_null() {
            return;
        }
        // SAFETY: `mm` is referenced until `mmput` below.
        let mut event = unsafe { rss_event(mm, RssAt::Mark) };
        // SAFETY: `mm` was referenced by `get_task_mm`; `mmput` may sleep, allowed here.
        unsafe { bindings::mmput(mm) };
        event.pid = tgid;
        event.tid = tgid;
        state.ring.push(&event);
    });
}
