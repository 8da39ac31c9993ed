// SPDX-License-Identifier: GPL-2.0

//! The kernel's C API as memmon sees it: the kernel crate's bindings, plus the items Kbuild
//! generates from `src/c/bindings.h` (kprobes, procfs, `struct linux_binprm`, the
//! `mm:mm_fault` report of `patches/0001`, the C helpers of `src/c/helpers.c`), which the
//! kernel crate of a stock kernel does not have. Items generated here take precedence over
//! the kernel crate's of the same name (a glob import); everything else is the kernel
//! crate's, so that pointers pass between the two.

#![allow(
    clippy::all,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ptr_cast_constness,
    clippy::ref_as_ptr,
    clippy::undocumented_unsafe_blocks,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    dead_code,
    unused_imports
)]

pub(crate) use crate::kernel_ext::kcrate::bindings::*;

// 6.12's kernel (memmon_kernel_6_12): 7.x's names for what it spells differently, or has
// inline only (the C helpers of src/c/helpers.c); an explicit import takes precedence over
// the globs.
#[cfg(memmon_kernel_6_12)]
pub(crate) use self::{
    init_timer_key as timer_init_key, memmon_hrtimer_setup as hrtimer_setup,
    memmon_poll_wait as poll_wait, pcpu_hot as current_task,
};

include!(env!("MEMMON_BINDINGS"));
