// SPDX-License-Identifier: GPL-2.0

//! Typed page faults, from the `mm:mm_fault` tracepoint that `patches/` adds to mm
//! (`trace/events/mm_fault.h`).
//!
//! The tracepoint fires in `mm_account_fault()` once for each fault the kernel counts in the
//! task's `min_flt` or `maj_flt`, with what resolved it (anonymous, file, swap-in,
//! write-protect, NUMA hinting, hugetlbfs, or nothing: spurious) and how many pages it
//! mapped, so a process's fault lines equal its rusage minor + major faults by construction.

/// The fault source this build of the module has, as `/proc/memmon/stats` and the load
/// message name it: `mm_fault` (the tracepoint), or `none` on a kernel without it, where
/// no fault is recorded.
#[cfg(memmon_mm_fault)]
pub(crate) const SOURCE: &str = "mm_fault";
/// See above.
#[cfg(not(memmon_mm_fault))]
pub(crate) const SOURCE: &str = "none";

#[cfg(memmon_mm_fault)]
pub(crate) use tracepoint::attach;

/// The `mm:mm_fault` tracepoint's probe.
#[cfg(memmon_mm_fault)]
mod tracepoint {
    use crate::bindings;
    use crate::kernel_ext::tracepoint::TracepointProbe;
    use crate::probes::stack;
    use crate::record::event::{fault_flags, FaultType, Kind};
    use crate::state::State;
    use kernel::{prelude::*, sync::Arc};

    /// Attaches the probe on `mm:mm_fault`; faults of watched processes go to `state`'s ring.
    pub(crate) fn attach(state: Arc<State>) -> Result<TracepointProbe<State>> {
        // SAFETY: `mm_fault` has the probe signature of `mm:mm_fault` and reads `data` as
        // `*const State`.
        unsafe { TracepointProbe::attach_named(c"mm_fault", mm_fault as *mut c_void, state) }
    }

    /// The probe: `TP_PROTO(struct vm_area_struct *vma, unsigned long address, unsigned int flags,
    /// bool major, const struct vm_fault_report *report, struct pt_regs *regs)`.
    ///
    /// # Safety
    ///
    /// Called by the tracepoint with `data` the `State` given to [`TracepointProbe::attach`], a
    /// valid `report` and `regs` null or valid, all for the duration of the call.
    unsafe extern "C" fn mm_fault(
        data: *mut c_void,
        _vma: *mut bindings::vm_area_struct,
        address: c_ulong,
        flags: c_uint,
        major: bool,
        report: *const bindings::vm_fault_report,
        regs: *mut bindings::pt_regs,
    ) {
        // SAFETY: `data` is the `State` the probe was attached with, alive while it is attached.
        let state = unsafe { &*data.cast::<State>() };
        // Every fault of every process comes here: while no process is watched, one load and a
        // return; the rest is out of line (a tail call), so that this path saves no register.
        if !state.watch.any_watched() {
            return;
        }
        // SAFETY: The caller passes `report` and `regs` as this function's safety section says.
        unsafe { record(state, address, flags, major, report, regs) };
    }

    /// Records a fault if the current process is watched.
    ///
    /// # Safety
    ///
    /// `report` is valid and `regs` null or valid, for the duration of the call.
    #[inline(never)]
    unsafe fn record(
        state: &State,
        address: c_ulong,
        flags: c_uint,
        major: bool,
        report: *const bindings::vm_fault_report,
        regs: *mut bindings::pt_regs,
    ) {
        if !state.watch.contains_current() {
            return;
        }
        // get_user_pages() on another process's mm (ptrace, process_vm_readv): not a fault of the
        // current process's address space.
        if flags & bindings::fault_flag_FAULT_FLAG_REMOTE != 0 {
            return;
        }
        // SAFETY: The caller passes a valid report for the duration of the call.
        let report = unsafe { &*report };
        let mut event = crate::probes::current_event(Kind::Fault);
        event.fault_type = match report.handler {
            bindings::mm_fault_handler_MM_FAULT_ANON => FaultType::Anon,
            bindings::mm_fault_handler_MM_FAULT_FILE => FaultType::File,
            bindings::mm_fault_handler_MM_FAULT_SWAP => FaultType::Swap,
            bindings::mm_fault_handler_MM_FAULT_WP => FaultType::WriteProtect,
            bindings::mm_fault_handler_MM_FAULT_NUMA => FaultType::Numa,
            bindings::mm_fault_handler_MM_FAULT_HUGETLB => FaultType::Hugetlb,
            bindings::mm_fault_handler_MM_FAULT_SPURIOUS => FaultType::Spurious,
            bindings::mm_fault_handler_MM_FAULT_ACCESS => FaultType::Access,
            _ => FaultType::Other,
        };
        let mut bits = 0;
        if flags & bindings::fault_flag_FAULT_FLAG_WRITE != 0 {
            bits |= fault_flags::WRITE;
        }
        if flags & bindings::fault_flag_FAULT_FLAG_INSTRUCTION != 0 {
            bits |= fault_flags::EXEC;
        }
        if flags & bindings::fault_flag_FAULT_FLAG_TRIED != 0 {
            bits |= fault_flags::RETRY;
        }
        if report.huge {
            bits |= fault_flags::HUGE;
        }
        if major {
            bits |= fault_flags::MAJOR;
        }
        // CAST: an unsigned long address fits in u64.
        event.args[0] = address as u64;
        if flags & bindings::fault_flag_FAULT_FLAG_USER != 0 && !regs.is_null() {
            bits |= fault_flags::USER;
            // SAFETY: For a fault from user mode the tracepoint passes the user registers, valid
            // during the call.
            let ip = unsafe { (*regs).ip };
            // CAST: a register is 64 bits wide on x86_64.
            event.args[1] = ip as u64;
        }
        // An access maps nothing: its record carries the generation instead of pages.
        event.args[2] = if event.fault_type == FaultType::Access {
            crate::probes::sample::generation()
        } else {
            u64::from(report.nr_pages)
        };
        event.flags = bits;
        if stack::depth() == 0 {
            state.ring.push(&event);
            return;
        }
        // A fault from user mode: the stack of the faulting code; one the kernel took for the
        // process: the stack of the system call it was in.
        let user_regs = if bits & fault_flags::USER != 0 {
            // SAFETY: For a fault from user mode the tracepoint passes the user registers, valid
            // during the call.
            Some(unsafe { &*regs })
        } else {
            None
        };
        stack::push_with_user_stack(state, &mut event, user_regs);
    }
}
