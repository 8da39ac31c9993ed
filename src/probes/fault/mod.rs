// SPDX-License-Identifier: GPL-2.0

//! Typed page faults, from one of two sources:
//!
//! - [`tracepoint`]: the `mm:mm_fault` tracepoint that `patches/` adds to mm
//!   (`trace/events/mm_fault.h`), fired in `mm_account_fault()` with what resolved the fault;
//! - [`kprobes`]: on a kernel without it (a distribution's stock kernel), a kretprobe on
//!   `handle_mm_fault()` and kprobes on the handlers it dispatches to.
//!
//! Both record each fault the kernel counts in the task's `min_flt` or `maj_flt` once, so a
//! process's fault lines equal its rusage minor + major faults; they differ only in how
//! exactly they can type some faults (docs/events.md lists the cases).

use crate::bindings;
use crate::kernel_ext::mm::fault_flag;
use crate::probes::stack;
use crate::record::event::{fault_flags, FaultType, Kind};
use crate::state::State;

pub(crate) mod kprobes;
#[cfg(memmon_mm_fault)]
pub(crate) mod tracepoint;

/// Where faults come from, as `/proc/memmon/stats` (`fault_source`) and the load message
/// name it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The `mm:mm_fault` tracepoint of `patches/0001`.
    Tracepoint,
    /// The kprobes of [`kprobes`].
    Kprobes,
}

impl Source {
    /// The source's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Source::Tracepoint => "mm_fault",
            Source::Kprobes => "kprobes",
        }
    }

    /// The source a kernel has by default: the tracepoint where this build has it.
    pub(crate) fn default_for_build() -> Self {
        if cfg!(memmon_mm_fault) {
            Source::Tracepoint
        } else {
            Source::Kprobes
        }
    }
}

/// One fault, as the kernel counted it, with what resolved it.
pub(crate) struct Fault<'a> {
    /// The faulting address.
    pub(crate) address: u64,
    /// `enum fault_flag` bits the fault was handled with.
    pub(crate) flags: u32,
    /// Counted as major (`VM_FAULT_MAJOR`, or retried).
    pub(crate) major: bool,
    pub(crate) fault_type: FaultType,
    /// Handled at PMD or PUD level.
    pub(crate) huge: bool,
    /// Pages the fault added to the resident set.
    pub(crate) pages: u32,
    /// The user registers of a fault from user mode, `None` for one the kernel took for the
    /// process (`get_user_pages()`).
    pub(crate) regs: Option<&'a bindings::pt_regs>,
}

/// Records `fault` of the current task, which is watched, with its user stack when stacks
/// are on.
pub(crate) fn record(state: &State, fault: &Fault<'_>) {
    let mut event = crate::probes::current_event(Kind::Fault);
    event.fault_type = fault.fault_type;
    let mut bits = 0;
    if fault.flags & fault_flag::WRITE != 0 {
        bits |= fault_flags::WRITE;
    }
    if fault.flags & fault_flag::INSTRUCTION != 0 {
        bits |= fault_flags::EXEC;
    }
    if fault.flags & fault_flag::TRIED != 0 {
        bits |= fault_flags::RETRY;
    }
    if fault.huge {
        bits |= fault_flags::HUGE;
    }
    if fault.major {
        bits |= fault_flags::MAJOR;
    }
    event.args[0] = fault.address;
    let user_regs = if fault.flags & fault_flag::USER != 0 {
        fault.regs
    } else {
        None
    };
    if let Some(regs) = user_regs {
        bits |= fault_flags::USER;
        event.args[1] = crate::arch::user_pc(regs);
    }
    // An access maps nothing: its record carries the generation instead of pages.
    event.args[2] = if fault.fault_type == FaultType::Access {
        crate::probes::sample::generation()
    } else {
        u64::from(fault.pages)
    };
    event.flags = bits;
    if stack::depth() == 0 {
        state.ring.push(&event);
        return;
    }
    // A fault from user mode: the stack of the faulting code; one the kernel took for the
    // process: the stack of the system call it was in.
    stack::push_with_user_stack(state, &mut event, user_regs);
}
