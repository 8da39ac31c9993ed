// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers for what `rust/kernel/` lacks, written as if for it: no memmon logic here.

pub(crate) mod atomic;
pub(crate) mod byte_writer;
pub(crate) mod capability;
pub(crate) mod cgroup;
pub(crate) mod delayed_work;
pub(crate) mod errno;
pub(crate) mod ftrace;
pub(crate) mod hrtimer;
pub(crate) mod kcrate;
pub(crate) mod killable;
pub(crate) mod kprobe;
pub(crate) mod mm;
pub(crate) mod module_param;
pub(crate) mod pid;
pub(crate) mod pollqueue;
pub(crate) mod preempt;
pub(crate) mod prelude;
#[cfg(memmon_kernel_6_12)]
pub(crate) mod print;
pub(crate) mod procfs;
pub(crate) mod runtime_param;
pub(crate) mod task;
pub(crate) mod tracepoint;
