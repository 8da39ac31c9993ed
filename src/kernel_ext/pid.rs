// SPDX-License-Identifier: GPL-2.0

//! Processes by number (`linux/pid.h`): the task a number names in the current task's pid
//! namespace, and a counted reference to a process's thread-group `struct pid`, which names
//! that process and no later one given the same number.

use super::task::{task_from_raw, task_tgid, TaskExt};
use crate::bindings;

use crate::kernel_ext::kcrate::{
    sync::rcu,
    task::{Pid, Task},
};
use crate::kernel_ext::prelude::*;
use core::ptr::NonNull;

/// The task numbered `nr` in the current task's active pid namespace, if there is one; valid
/// while the RCU read lock (`_rcu`) is held.
pub(crate) fn find_task_in_current_ns<'a>(nr: Pid, _rcu: &'a rcu::Guard) -> Option<&'a Task> {
    // SAFETY: `current` is valid and its active pid namespace lives as long as it does (NULL
    // once it is exiting and its pid is detached).
    let ns = unsafe { bindings::task_active_pid_ns(Task::current_raw()) };
    if ns.is_null() {
        return None;
    }
    // SAFETY: `find_pid_ns` and `pid_task` need the RCU read lock, held by `_rcu`; `ns` is the
    // current task's namespace, not NULL; `pid_task` takes a NULL pid.
    let task = unsafe {
        let pid = bindings::find_pid_ns(nr, ns);
        bindings::pid_task(pid, bindings::pid_type_PIDTYPE_PID)
    };
    if task.is_null() {
        return None;
    }
    // SAFETY: A task `pid_task` found stays valid while the RCU read lock is held, which the
    // returned reference borrows.
    Some(unsafe { task_from_raw(task) })
}

/// Whether the current task's active pid namespace is the initial one, whose numbers are the
/// global ones.
pub(crate) fn current_in_initial_pid_ns() -> bool {
    // SAFETY: `current` is valid; its active pid namespace lives at least as long as it does,
    // and `init_pid_ns` is static: only the addresses are compared.
    unsafe { bindings::task_active_pid_ns(Task::current_raw()) == &raw mut bindings::init_pid_ns }
}

/// A process, held by a reference to its thread-group `struct pid`: its identity, since a
/// later process given the same number has another one.
///
/// # Invariants
///
/// `pid` holds a reference to a `struct pid`, dropped with `put_pid()` in `drop`; `tgid` is
/// its number in the initial pid namespace.
pub(crate) struct ProcessPid {
    pid: NonNull<bindings::pid>,
    tgid: Pid,
}

impl ProcessPid {
    /// The process that task `nr` of the current task's pid namespace belongs to, if its
    /// thread group has a live thread; `ESRCH` otherwise.
    pub(crate) fn find_in_current_ns(nr: Pid) -> Result<Self> {
        let rcu = rcu::read_lock();
        let task = find_task_in_current_ns(nr, &rcu).ok_or(ESRCH)?;
        if !task.group_alive() {
            return Err(ESRCH);
        }
        // SAFETY: `task` is valid while the RCU read lock is held; `get_task_pid` returns its
        // thread-group pid with a reference taken, or null.
        let pid = unsafe { bindings::get_task_pid(task.as_ptr(), bindings::pid_type_PIDTYPE_TGID) };
        let pid = NonNull::new(pid).ok_or(ESRCH)?;
        // INVARIANT: `get_task_pid` took a reference on `pid`; a task's `tgid` is its thread
        // group's number in the initial pid namespace.
        Ok(Self {
            pid,
            tgid: task_tgid(task),
        })
    }

    /// The process's number in the initial pid namespace.
    pub(crate) fn tgid(&self) -> Pid {
        self.tgid
    }

    /// Whether this very process (not a later one with its number) still has a live thread.
    pub(crate) fn is_alive(&self) -> bool {
        let _rcu = rcu::read_lock();
        // SAFETY: `pid` is referenced (type invariants); `pid_task` needs the RCU read lock,
        // held by `_rcu`, and returns null once the group's leader is released.
        let task =
            unsafe { bindings::pid_task(self.pid.as_ptr(), bindings::pid_type_PIDTYPE_TGID) };
        if task.is_null() {
            return false;
        }
        // SAFETY: A task `pid_task` found stays valid while the RCU read lock is held, until the
        // end of this function.
        unsafe { task_from_raw(task) }.group_alive()
    }
}

impl Drop for ProcessPid {
    fn drop(&mut self) {
        // SAFETY: `pid` holds a reference (type invariants), dropped once, here.
        unsafe { bindings::put_pid(self.pid.as_ptr()) };
    }
}
