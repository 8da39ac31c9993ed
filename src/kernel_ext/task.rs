// SPDX-License-Identifier: GPL-2.0

//! Tasks: the current task's ids, the clock its records are stamped with, and its saved user
//! registers; a [`Task`] from a pointer the kernel passes, and what [`Task`] does not tell
//! (whether it is a kernel thread, whether its thread group is alive).

use crate::bindings;

use crate::kernel_ext::kcrate::task::{Pid, Task};
use crate::kernel_ext::prelude::*;

/// CLOCK_MONOTONIC now, in nanoseconds; monotonic across CPUs, so that records stamped on
/// different CPUs merge in order. Callable in any context but NMI (no producer runs there).
pub(crate) fn now_ns() -> u64 {
    // SAFETY: `ktime_get` has no preconditions outside NMI context.
    let now = unsafe { bindings::ktime_get() };
    u64::try_from(now).unwrap_or(0)
}

/// The current task, read inline ([`crate::arch::current_task`]), where
/// [`Task::current_raw`] calls an out-of-line C helper.
#[inline(always)]
fn current_raw_inline() -> *mut bindings::task_struct {
    crate::arch::current_task()
}

/// Thread-group id and thread id of the current task, in the initial pid namespace.
#[inline]
pub(crate) fn current_ids() -> (i32, i32) {
    let task = current_raw_inline();
    // SAFETY: `current` is always a valid task. Its `pid` changes only in its own context
    // (`de_thread()` during exec), never concurrently with this read.
    unsafe { ((*task).tgid, (*task).pid) }
}

/// The current task's thread id as its own pid namespace sees it (`task_pid_vnr(current)`,
/// what `gettid()` returns to it); 0 if it has none there (it is exiting). Callable in
/// atomic context: the pid is read under the RCU read lock, which nests anywhere.
pub(crate) fn current_tid_in_own_ns() -> i32 {
    let task = current_raw_inline();
    // SAFETY: `current` is always a valid task; a null namespace means the current task's
    // active one, and `__task_pid_nr_ns` takes the RCU read lock itself.
    unsafe {
        bindings::__task_pid_nr_ns(task, bindings::pid_type_PIDTYPE_PID, core::ptr::null_mut())
    }
}

/// Checks that the `task_struct` layout the bindings describe is the kernel's, by reading the
/// current task's ids both through the bindings and through the kernel's own accessor.
///
/// bindgen lays out an empty but cacheline-aligned struct (`struct sched_statistics` without
/// `CONFIG_SCHEDSTATS`) differently from C, which shifts every later `task_struct` field.
pub(crate) fn check_task_layout() -> Result {
    let task = kernel::task::Task::current_raw();
    let (tgid, pid) = current_ids();
    // SAFETY: `current` is valid; `init_pid_ns` is the initial pid namespace, which is static.
    let (kernel_pid, kernel_tgid) = unsafe {
        let ns = &raw mut bindings::init_pid_ns;
        (
            bindings::__task_pid_nr_ns(task, bindings::pid_type_PIDTYPE_PID, ns),
            bindings::__task_pid_nr_ns(task, bindings::pid_type_PIDTYPE_TGID, ns),
        )
    };
    if (pid, tgid) != (kernel_pid, kernel_tgid) {
        pr_err!(
            "task_struct as built into this module does not match the kernel's \
             (read pid {}/{}, kernel says {}/{}): build the kernel with CONFIG_SCHEDSTATS=y\n",
            tgid,
            pid,
            kernel_tgid,
            kernel_pid
        );
        return Err(EINVAL);
    }
    Ok(())
}

/// The user registers saved at the top of the current task's kernel stack when it entered
/// the kernel (`task_pt_regs(current)`): those of the system call it is in. `None` for a
/// kernel thread or a user worker (io_uring, vhost), which has no user context of its own.
pub(crate) fn current_user_regs() -> Option<&'static bindings::pt_regs> {
    let task = kernel::task::Task::current_raw();
    // SAFETY: `current` is valid; `flags` is only changed by the task itself.
    let flags = unsafe { (*task).flags };
    if flags & (bindings::PF_KTHREAD | bindings::PF_USER_WORKER) != 0 {
        return None;
    }
    // SAFETY: `current` is valid, and a user task.
    let regs = unsafe { crate::arch::task_pt_regs(task) };
    // SAFETY: A user task that entered the kernel saved its user registers there (the entry
    // code builds `pt_regs` at the top of the kernel stack); they stay while it runs.
    Some(unsafe { &*regs })
}

/// The end of the current task's user address space, exclusive (`TASK_SIZE`): user
/// addresses of the task are below it. On x86_64 one page below 2^47 with 4-level page
/// tables, below 2^56 with 5-level ones, and the end of its 4 GiB for a 32-bit task; on
/// arm64 `1 << vabits_actual` (2^52 with LPA2, else 2^48 or 2^39).
pub(crate) fn current_task_size() -> u64 {
    // SAFETY: `TASK_SIZE` reads the current task's flags and the paging mode: no
    // precondition, any context.
    let size = unsafe { bindings::memmon_current_task_size() };
    // CAST: `unsigned long` is 64 bits wide on both architectures.
    size as u64
}

/// The current task's user thread pointer (x86_64: its FS base; arm64: TPIDR_EL0), as the
/// CPU holds it in a fault or system call from user mode. Callable in any context of the current task that came from
/// user mode.
pub(crate) fn current_user_fsbase() -> u64 {
    // SAFETY: Reading the CPU's FS base has no precondition.
    let base = unsafe { bindings::memmon_current_user_fsbase() };
    // CAST: `unsigned long` is 64 bits wide on both architectures.
    base as u64
}

/// Copies `out.len()` bytes of the current task's user memory at `addr` into `out`, with page
/// faults disabled (`copy_from_user_nofault`): `false`, and `out` undefined, where they are
/// not all mapped and readable user memory. Callable in atomic context.
pub(crate) fn read_user_nofault(addr: u64, out: &mut [u8]) -> bool {
    // SAFETY: `out` is valid for `out.len()` bytes of writes; `copy_from_user_nofault` checks
    // the user range and reads it with page faults disabled, failing instead of faulting.
    let ret = unsafe {
        bindings::copy_from_user_nofault(out.as_mut_ptr().cast(), addr as *const c_void, out.len())
    };
    ret == 0
}

/// Reads words of the current task's user memory, with page faults disabled: for each `i`, the
/// 8 bytes at `addr + offsets[i]` into `words[i]`, as [`read_user_nofault`] does but with one
/// user load per word instead of a copy of the whole range. Every offset must be at most
/// `size - 8` (the words lie in `size` bytes at `addr`). `false`, and `words` unspecified,
/// where a word is not mapped and readable user memory, the range is not user memory, an
/// offset is out of range, `size` is below 8, or in NMI context or a task without a user
/// address space (a kernel thread). Callable in atomic context, in the context of a user
/// task whose address space is the one loaded (as at its page faults and system calls).
pub(crate) fn read_user_words_nofault<const N: usize>(
    addr: u64,
    size: u64,
    offsets: &[u16; N],
    words: &mut [u64; N],
) -> bool {
    let Ok(count) = u32::try_from(N) else {
        return false;
    };
    // SAFETY: `offsets` is valid for `N` reads and `words` for `N` writes; the helper checks
    // that every offset lies in `size` bytes and the range is user memory, and reads each word
    // with page faults disabled through a load the exception table covers, so that an unmapped
    // address fails the call instead of faulting.
    unsafe {
        bindings::memmon_read_user_words(
            // CAST: user addresses and sizes fit in unsigned long on 64-bit.
            addr as c_ulong,
            size as c_ulong,
            offsets.as_ptr(),
            words.as_mut_ptr(),
            count,
        )
    }
}

/// The task `ptr` points to, borrowed for `'a`.
///
/// # Safety
///
/// `ptr` must point to a task that stays valid for all of `'a`: `current`, a task a
/// tracepoint passes (for the call), or one found under the RCU read lock (while it is held).
pub(crate) unsafe fn task_from_raw<'a>(ptr: *mut bindings::task_struct) -> &'a Task {
    // SAFETY: The caller guarantees that `ptr` is valid for `'a`; `Task` is a transparent
    // wrapper of `struct task_struct`.
    unsafe { &*ptr.cast::<Task>() }
}

/// What [`Task`] does not tell.
pub(crate) trait TaskExt {
    /// Whether the task is a kernel thread (`PF_KTHREAD`, which one keeps for life).
    fn is_kernel_thread(&self) -> bool;

    /// Whether the task's thread group has a live thread: `signal->live`, which `do_exit()`
    /// decrements (a fully ordered atomic) before it reports the exit of the last thread.
    fn group_alive(&self) -> bool;
}

impl TaskExt for Task {
    fn is_kernel_thread(&self) -> bool {
        // SAFETY: `self` is a valid task. It may change its other flags meanwhile: a racy read,
        // as the kernel's own `READ_ONCE(p->flags)`.
        let flags = unsafe { core::ptr::addr_of!((*self.as_ptr()).flags).read_volatile() };
        flags & bindings::PF_KTHREAD != 0
    }

    fn group_alive(&self) -> bool {
        // SAFETY: `self` is a valid task, and so is its `signal`, freed with the last task of
        // the group; `live` is read once, racily, as `atomic_read()` does.
        let live =
            unsafe { core::ptr::addr_of!((*(*self.as_ptr()).signal).live.counter).read_volatile() };
        live > 0
    }
}

/// The thread-group id of `task` in the initial pid namespace (its `tgid`), what
/// `Task::tgid` gives on kernels whose `kernel` crate has it.
///
/// FIXME(7.2): Use `Task::tgid` once 7.2, whose `kernel` crate lacks it, is no longer built
/// for.
pub(crate) fn task_tgid(task: &Task) -> Pid {
    // SAFETY: `task` is a valid task; its `tgid` is set before the task is visible and
    // never changes after (exec's `de_thread()` changes a thread's `pid`, not its `tgid`).
    unsafe { (*task.as_ptr()).tgid }
}
