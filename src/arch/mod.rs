// SPDX-License-Identifier: GPL-2.0

//! What differs between the architectures memmon is built for, one file per architecture
//! with the same items: [`x86_64`] and [`arm64`] (AArch64, little-endian). Everything else in
//! the module is the same on both.
//!
//! - the mm system calls' entry points (`__x64_sys_*`, `__arm64_sys_*`) and how their
//!   wrappers pass the user's arguments (a `struct pt_regs *`, in the first argument
//!   register);
//! - the registers of a probed kernel function's arguments and return value;
//! - the user registers a stack walk starts from (pc, stack pointer, frame pointer, link
//!   register), what a return address read from a user frame is (arm64: signed by pointer
//!   authentication), and the architecture of the unwind tables it follows (the rows' meaning
//!   per architecture is the format's: [`crate::unwind::format::TableArch`]), and a call the
//!   kernel emulates at the innermost frame (x86_64's vsyscall page);
//! - the current task pointer, read inline;
//! - where a kernel function's ftrace call site is, given its entry.

#[cfg(target_arch = "aarch64")]
mod arm64;
#[cfg(target_arch = "aarch64")]
pub(crate) use arm64::*;

#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86_64::*;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("memmon is built for x86_64 and arm64 (AArch64) only");

/// The registers a user stack walk starts from.
#[derive(Clone, Copy)]
pub(crate) struct UserFrame {
    /// The instruction pointer (x86_64 RIP, arm64 PC).
    pub(crate) pc: u64,
    /// The stack pointer (RSP, SP).
    pub(crate) sp: u64,
    /// The frame pointer (RBP, X29): where the frame record of the caller is, if the code
    /// keeps one.
    pub(crate) fp: u64,
    /// The link register (arm64's X30), where a function that has not saved its return
    /// address keeps it; `None` on x86_64, whose calls push it.
    pub(crate) lr: Option<u64>,
    /// Whether the walk can follow the task's frames at all: not for arm64's AArch32
    /// (compat) tasks, whose stack is then their pc alone, ending `Unsupported`.
    pub(crate) walkable: bool,
}
