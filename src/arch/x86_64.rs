// SPDX-License-Identifier: GPL-2.0

//! x86_64: see [`crate::arch`].

use super::UserFrame;
use crate::bindings;
use crate::kernel_ext::errno::eopnotsupp;
use crate::kernel_ext::prelude::*;
use crate::record::event::Kind;
use crate::unwind::format::{Row, Rule, TableArch};

/// The probed system calls: the entry point the syscall table calls, and the event kind.
pub(crate) const SYSCALLS: [(&CStr, Kind); 18] = [
    (c"__x64_sys_mmap", Kind::Mmap),
    (c"__x64_sys_munmap", Kind::Munmap),
    (c"__x64_sys_mremap", Kind::Mremap),
    (c"__x64_sys_brk", Kind::Brk),
    (c"__x64_sys_mprotect", Kind::Mprotect),
    (c"__x64_sys_madvise", Kind::Madvise),
    (c"__x64_sys_mlock", Kind::Mlock),
    (c"__x64_sys_mlock2", Kind::Mlock2),
    (c"__x64_sys_munlock", Kind::Munlock),
    (c"__x64_sys_mlockall", Kind::Mlockall),
    (c"__x64_sys_munlockall", Kind::Munlockall),
    (c"__x64_sys_fsync", Kind::Fsync),
    (c"__x64_sys_msync", Kind::Msync),
    (c"__x64_sys_pkey_mprotect", Kind::PkeyMprotect),
    (c"__x64_sys_mseal", Kind::Mseal),
    (c"__x64_sys_process_madvise", Kind::ProcessMadvise),
    (c"__x64_sys_shmat", Kind::Shmat),
    (c"__x64_sys_shmdt", Kind::Shmdt),
];

/// The user's six arguments of a system call, from the user registers its `__x64_sys_*`
/// wrapper receives: RDI, RSI, RDX, R10, R8, R9.
#[inline]
pub(crate) fn syscall_args(user: &bindings::pt_regs) -> [u64; 6] {
    // CAST: registers are 64 bits wide on x86_64.
    [
        user.di as u64,
        user.si as u64,
        user.dx as u64,
        user.r10 as u64,
        user.r8 as u64,
        user.r9 as u64,
    ]
}

/// Argument `n` (0 to 5) of a kernel function, at its entry: RDI, RSI, RDX, RCX, R8, R9; 0
/// for another `n`.
#[inline(always)]
pub(crate) fn kernel_arg(regs: &bindings::pt_regs, n: usize) -> usize {
    match n {
        0 => regs.di,
        1 => regs.si,
        2 => regs.dx,
        3 => regs.cx,
        4 => regs.r8,
        5 => regs.r9,
        _ => 0,
    }
}

/// A kernel function's return value, at its return: RAX.
#[inline(always)]
pub(crate) fn return_value(regs: &bindings::pt_regs) -> usize {
    regs.ax
}

/// Argument `n` (0 to 5) of a function hooked through ftrace, from the registers ftrace
/// saved (`struct ftrace_regs`, a `struct pt_regs` on x86_64 of which the argument
/// registers hold the caller's values).
///
/// # Safety
///
/// `fregs` must be the valid `struct ftrace_regs` ftrace passed to a callback that is running.
#[inline(always)]
pub(crate) unsafe fn ftrace_arg(fregs: *mut bindings::ftrace_regs, n: usize) -> usize {
    // SAFETY: `fregs` is valid (the caller's guarantee) and holds a `struct pt_regs`.
    kernel_arg(unsafe { &*bindings::memmon_ftrace_regs_pt_regs(fregs) }, n)
}

/// The user registers a stack walk starts from.
#[inline]
pub(crate) fn user_frame(regs: &bindings::pt_regs) -> UserFrame {
    // CAST: registers are 64 bits wide on x86_64.
    UserFrame {
        pc: regs.ip as u64,
        sp: regs.sp as u64,
        fp: regs.bp as u64,
        lr: None,
        walkable: true,
    }
}

/// The user instruction pointer of `regs`.
#[inline]
pub(crate) fn user_pc(regs: &bindings::pt_regs) -> u64 {
    // CAST: registers are 64 bits wide on x86_64.
    regs.ip as u64
}

/// A return address as read from a user frame: the address itself on x86_64.
#[inline(always)]
pub(crate) fn user_return_address(word: u64, _user_end: u64) -> u64 {
    word
}

/// The architecture of the unwind tables the stack walk follows ([`crate::unwind`]): x86_64's
/// rows (CFA from RSP or RBP, the return address at CFA - 8, RBP saved or not); a table of
/// another architecture is refused when it is written.
pub(crate) const UNWIND_ARCH: TableArch = TableArch::X86_64;

/// The row of a function's first instruction: the return address the call pushed at RSP
/// (CFA = RSP + 8), RBP the caller's.
const FUNCTION_ENTRY: Row = Row {
    pc: 0,
    cfa: 8,
    code: Rule::Sp as u8,
    slot: 0,
};

/// The address of the vsyscall page (`VSYSCALL_ADDR`, arch/x86/include/uapi/asm/vsyscall.h),
/// fixed by the x86_64 ABI.
const VSYSCALL_PAGE: u64 = 0xffff_ffff_ff60_0000;

/// The row of the call a user stack's innermost frame is at the entry of, when the kernel
/// emulates that call: `ip` in the vsyscall page (`is_vsyscall_vaddr()`), where a task's pc
/// is while the kernel emulates the call it made there (`__emulate_vsyscall()`,
/// arch/x86/entry/vsyscall/vsyscall_64.c, from the page fault or the general protection
/// fault of that call), and in the signal (`SIGSEGV`) the kernel sends for one it refuses;
/// either way `[RSP]` is what the call pushed: a function's entry.
pub(crate) fn emulated_call_entry(ip: u64) -> Option<Row> {
    // CAST: `PAGE_SIZE` fits in 64 bits.
    (ip & !(bindings::PAGE_SIZE as u64 - 1) == VSYSCALL_PAGE).then_some(FUNCTION_ENTRY)
}

/// The current task, read inline as x86_64's `get_current()` reads it: one load of the per-CPU
/// `current_task` through the GS segment, where [`kernel::task::Task::current_raw`] calls an
/// out-of-line C helper (which makes a caller on a hot path, such as every fault of every
/// process, save and restore registers around the call).
///
/// FIXME(current): Replace with the kernel crate's `current` once it is inline.
#[inline(always)]
pub(crate) fn current_task() -> *mut bindings::task_struct {
    let task: *mut bindings::task_struct;
    // SAFETY: `current_task` is the per-CPU pointer to the running task, which the scheduler
    // sets on every switch; GS-relative, RIP-relative addressing of the per-CPU symbol is how
    // `this_cpu_read_stable()` reads it (`__percpu_rel`); the load has no side effect.
    unsafe {
        core::arch::asm!(
            "mov {task}, qword ptr gs:[rip + {var}]",
            task = out(reg) task,
            var = sym bindings::current_task,
            options(nostack, preserves_flags, readonly, pure),
        );
    }
    task
}

/// The user registers saved at the top of `task`'s kernel stack (`task_pt_regs()`).
///
/// # Safety
///
/// `task` must be a valid user task (not a kernel thread nor a user worker).
pub(crate) unsafe fn task_pt_regs(task: *mut bindings::task_struct) -> *const bindings::pt_regs {
    let thread_size = bindings::PAGE_SIZE << bindings::THREAD_SIZE_ORDER;
    // SAFETY: `task` is valid (the caller's guarantee); its `stack` is the base of its kernel
    // stack.
    let stack = unsafe { (*task).stack } as usize;
    let top = stack + thread_size - bindings::TOP_OF_KERNEL_STACK_PADDING as usize;
    (top - core::mem::size_of::<bindings::pt_regs>()) as *const bindings::pt_regs
}

/// Whether the handlers of kprobes that do (`ftrace_based`) or do not go through ftrace run
/// where memmon's may take its spinlocks, wake readers and resolve paths, in the probed
/// task's context: on x86_64 only through ftrace; a kprobe's int3 trap in the kernel is
/// handled as an NMI (`exc_int3()`, `irqentry_nmi_enter()`).
pub(crate) fn kprobe_handlers_fit(ftrace_based: bool) -> bool {
    ftrace_based
}

/// The ftrace call site of a kernel function whose entry the kprobes core resolved to
/// `probe` (a kprobe registered there, disabled): x86_64 has kprobes on ftrace, so a kprobe
/// on a traceable function's entry is on its `__fentry__` call, with `KPROBE_FLAG_FTRACE`.
/// `EOPNOTSUPP` for a function ftrace cannot hook.
pub(crate) fn ftrace_site(probe: &bindings::kprobe) -> Result<usize> {
    if probe.flags & bindings::KPROBE_FLAG_FTRACE == 0 {
        return Err(eopnotsupp());
    }
    // CAST: an address fits in usize.
    Ok(probe.addr as usize)
}
