// SPDX-License-Identifier: GPL-2.0

//! arm64 (AArch64, little-endian): see [`crate::arch`].
//!
//! arm64 has no kprobes on ftrace sites (`KPROBES_ON_FTRACE`) and its ftrace saves the
//! argument registers only (`DYNAMIC_FTRACE_WITH_ARGS`, a `struct ftrace_regs` that is not a
//! `struct pt_regs`): a function's ftrace call site is found from its entry
//! ([`ftrace_site`]), and a hooked function's arguments are read through the kernel's
//! `ftrace_regs_get_argument()` ([`ftrace_arg`]).

use super::UserFrame;
use crate::bindings;
use crate::kernel_ext::errno::eopnotsupp;
use crate::kernel_ext::prelude::*;
use crate::record::event::Kind;
use crate::unwind::format::{Row, TableArch};

/// The probed system calls: the entry point the syscall table calls, and the event kind.
/// (`mmap` is arm64's own `SYSCALL_DEFINE6(mmap)` of arch/arm64/kernel/sys.c, taking the
/// offset in bytes as x86_64's does.)
pub(crate) const SYSCALLS: [(&CStr, Kind); 18] = [
    (c"__arm64_sys_mmap", Kind::Mmap),
    (c"__arm64_sys_munmap", Kind::Munmap),
    (c"__arm64_sys_mremap", Kind::Mremap),
    (c"__arm64_sys_brk", Kind::Brk),
    (c"__arm64_sys_mprotect", Kind::Mprotect),
    (c"__arm64_sys_madvise", Kind::Madvise),
    (c"__arm64_sys_mlock", Kind::Mlock),
    (c"__arm64_sys_mlock2", Kind::Mlock2),
    (c"__arm64_sys_munlock", Kind::Munlock),
    (c"__arm64_sys_mlockall", Kind::Mlockall),
    (c"__arm64_sys_munlockall", Kind::Munlockall),
    (c"__arm64_sys_fsync", Kind::Fsync),
    (c"__arm64_sys_msync", Kind::Msync),
    (c"__arm64_sys_pkey_mprotect", Kind::PkeyMprotect),
    (c"__arm64_sys_mseal", Kind::Mseal),
    (c"__arm64_sys_process_madvise", Kind::ProcessMadvise),
    (c"__arm64_sys_shmat", Kind::Shmat),
    (c"__arm64_sys_shmdt", Kind::Shmdt),
];

/// The general-purpose registers X0 to X30 of `regs`.
#[inline(always)]
fn gprs(regs: &bindings::pt_regs) -> &[u64; 31] {
    // SAFETY: Both members of the union are the same 64-bit registers (`struct user_pt_regs`
    // and its anonymous copy), plain integers: either view is valid.
    unsafe { &regs.__bindgen_anon_1.user_regs.regs }
}

/// The user's six arguments of a system call, from the user registers its `__arm64_sys_*`
/// wrapper receives, as its `SC_ARM64_REGS_TO_ARGS` (arch/arm64/include/asm/syscall_wrapper.h)
/// reads them: the first from `orig_x0` (X0 is the return value's register, and a tracer
/// may set the two apart), the others from X1 to X5.
#[inline]
pub(crate) fn syscall_args(user: &bindings::pt_regs) -> [u64; 6] {
    let x = gprs(user);
    [user.orig_x0, x[1], x[2], x[3], x[4], x[5]]
}

/// Argument `n` (0 to 7) of a kernel function, at its entry: X0 to X7; 0 for another `n`.
#[inline(always)]
pub(crate) fn kernel_arg(regs: &bindings::pt_regs, n: usize) -> usize {
    // CAST: registers are 64 bits wide on arm64.
    gprs(regs)
        .get(n)
        .filter(|_| n < 8)
        .map_or(0, |&x| x as usize)
}

/// A kernel function's return value, at its return: X0.
#[inline(always)]
pub(crate) fn return_value(regs: &bindings::pt_regs) -> usize {
    // CAST: registers are 64 bits wide on arm64.
    gprs(regs)[0] as usize
}

/// Argument `n` (0 to 7) of a function hooked through ftrace, from the registers ftrace saved
/// (`struct ftrace_regs`: X0 to X8, FP, LR, SP, PC).
///
/// # Safety
///
/// `fregs` must be the valid `struct ftrace_regs` ftrace passed to a callback that is running.
#[inline(always)]
pub(crate) unsafe fn ftrace_arg(fregs: *mut bindings::ftrace_regs, n: usize) -> usize {
    // CAST: `n` is a register index, at most 8.
    let n = n.min(8) as c_uint;
    // SAFETY: `fregs` is valid (the caller's guarantee).
    let value = unsafe { bindings::memmon_ftrace_regs_arg(fregs, n) };
    // CAST: `unsigned long` is 64 bits wide on arm64.
    value as usize
}

/// `PSTATE.nRW`: the task runs AArch32 code (arch/arm64/include/uapi/asm/ptrace.h).
const PSR_MODE32_BIT: u64 = 0x10;

/// The user registers a stack walk starts from: PC, SP, X29, the frame pointer (the
/// AAPCS64 frame record: the caller's X29 at `[X29]`, the return address at `[X29 + 8]`),
/// and X30, the link register (the return address of a function that has not saved it).
/// For an AArch32 (compat) task, none of that holds (its frame pointer and link register
/// are R11 or R7 and R14, its frame records not AAPCS64's, and its `TASK_SIZE` not a power
/// of two): no frame pointer and no link register, and not walkable, so that its stack is
/// its pc alone.
#[inline]
pub(crate) fn user_frame(regs: &bindings::pt_regs) -> UserFrame {
    // SAFETY: As in `gprs`.
    let pstate = unsafe { regs.__bindgen_anon_1.user_regs.pstate };
    if pstate & PSR_MODE32_BIT != 0 {
        return UserFrame {
            pc: user_pc(regs),
            sp: user_sp(regs),
            fp: 0,
            lr: None,
            walkable: false,
        };
    }
    let x = gprs(regs);
    UserFrame {
        pc: user_pc(regs),
        sp: user_sp(regs),
        fp: x[29],
        lr: Some(x[30]),
        walkable: true,
    }
}

/// The user instruction pointer of `regs`.
#[inline]
pub(crate) fn user_pc(regs: &bindings::pt_regs) -> u64 {
    // SAFETY: As in `gprs`.
    unsafe { regs.__bindgen_anon_1.user_regs.pc }
}

/// The user stack pointer of `regs`.
#[inline]
fn user_sp(regs: &bindings::pt_regs) -> u64 {
    // SAFETY: As in `gprs`.
    unsafe { regs.__bindgen_anon_1.user_regs.sp }
}

/// A return address as read from a user frame record: Debian's arm64 userspace is built
/// with `-mbranch-protection=standard`, so a function signs its return address
/// (`PACIASP`) before it saves it, and the pointer authentication code sits in the bits above
/// the task's virtual address size (and the top byte may carry a tag). Those bits are
/// cleared, as `ptrauth_strip_user_insn_pac()` does: `user_end` is `TASK_SIZE`, which on
/// arm64 is `1 << vabits_actual` (52 with LPA2, else 48 or 39), a power of two.
#[inline(always)]
pub(crate) fn user_return_address(word: u64, user_end: u64) -> u64 {
    word & user_end.wrapping_sub(1)
}

/// The architecture of the unwind tables the stack walk follows ([`crate::unwind`]): arm64's
/// rows (CFA from SP or X29, the return address saved or still in X30, X29 saved below it,
/// signed or not); a table of another architecture is refused when it is written.
pub(crate) const UNWIND_ARCH: TableArch = TableArch::Arm64;

/// The row of the call a user stack's innermost frame is at the entry of, when the kernel
/// emulates that call: never on arm64, which has no vsyscall page (x86_64's).
pub(crate) fn emulated_call_entry(_ip: u64) -> Option<Row> {
    None
}

/// The current task, read inline as arm64's `get_current()` reads it: the kernel keeps it in
/// SP_EL0 while it runs.
#[inline(always)]
pub(crate) fn current_task() -> *mut bindings::task_struct {
    let task: *mut bindings::task_struct;
    // SAFETY: Reading SP_EL0, which holds the current task while in the kernel, has no side
    // effect.
    unsafe {
        core::arch::asm!(
            "mrs {task}, sp_el0",
            task = out(reg) task,
            options(nomem, nostack, preserves_flags, pure),
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
    // SAFETY: `task` is valid (the caller's guarantee).
    unsafe { bindings::memmon_task_pt_regs(task) }
}

/// Whether the handlers of kprobes that do (`ftrace_based`) or do not go through ftrace run
/// where memmon's may take its spinlocks, wake readers and resolve paths, in the probed
/// task's context: on arm64 always. Its kprobes are `BRK` instructions (it has no kprobes on
/// ftrace), and a `BRK` from the kernel is a debug exception taken in the probed task's
/// context with interrupts masked and preemption disabled (`el1_brk64()`:
/// `arm64_enter_el1_dbg()` enters RCU's NMI state only, `in_nmi()` stays false), not an NMI.
pub(crate) fn kprobe_handlers_fit(_ftrace_based: bool) -> bool {
    true
}

/// `BTI C`, a function's first instruction when the kernel is built with BTI.
const INSN_BTI_C: u32 = 0xd503_245f;
/// `NOP`: an ftrace call site not in use.
const INSN_NOP: u32 = 0xd503_201f;
/// `MOV X9, X30`: the first instruction of an ftrace call site in use.
const INSN_MOV_X9_LR: u32 = 0xaa1e_03e9;
/// `BL` (with its offset masked off): the second instruction of a call site in use.
const INSN_BL: u32 = 0x9400_0000;
const INSN_BL_MASK: u32 = 0xfc00_0000;

/// The ftrace call site of a kernel function whose entry the kprobes core resolved to
/// `probe` (a kprobe registered there, disabled; arm64 has no kprobes on ftrace sites, so
/// the kprobe is not on the call site but on the entry): the function's patchable entry
/// (`-fpatchable-function-entry=4,2` with `DYNAMIC_FTRACE_WITH_CALL_OPS`) is an optional
/// `BTI C`, then two instructions ftrace patches to `MOV X9, X30; BL ftrace_caller`; the
/// site ftrace knows (`ftrace_call_adjust()`) is the second. The entry's own instruction is
/// the one the kprobes core saved (`opcode`): the text holds a `BRK` there while another
/// user's kprobe is armed on it. `EOPNOTSUPP` when the entry is not such a site (the
/// function cannot be traced). `ftrace_set_filter_ips()` checks the address against
/// ftrace's own records when the hooks are registered.
pub(crate) fn ftrace_site(probe: &bindings::kprobe) -> Result<usize> {
    // CAST: an address fits in usize.
    let address = probe.addr as usize;
    let next = address.checked_add(4).ok_or(eopnotsupp())?;
    let mut insns = [0u32; 2];
    // SAFETY: `insns` is valid for 8 bytes of writes; `copy_from_kernel_nofault` reads kernel
    // memory, failing instead of faulting.
    let ret = unsafe {
        bindings::copy_from_kernel_nofault(
            insns.as_mut_ptr().cast(),
            next as *const c_void,
            core::mem::size_of_val(&insns),
        )
    };
    if ret != 0 {
        return Err(eopnotsupp());
    }
    // `kprobe_opcode_t` is arm64's instruction word, an `__le32` as in the text.
    let first = u32::from_le(probe.opcode);
    let [second, third] = insns.map(u32::from_le);
    let (offset, mov, call) = if first == INSN_BTI_C {
        (8, second, third)
    } else {
        (4, first, second)
    };
    let mov_ok = mov == INSN_NOP || mov == INSN_MOV_X9_LR;
    let call_ok = call == INSN_NOP || call & INSN_BL_MASK == INSN_BL;
    if !(mov_ok && call_ok) {
        return Err(eopnotsupp());
    }
    address.checked_add(offset).ok_or(eopnotsupp())
}
