// SPDX-License-Identifier: GPL-2.0

//! The fault source of the patched kernel: a probe on the `mm:mm_fault` tracepoint, which
//! fires in `mm_account_fault()` once for each fault the kernel counts in the task's
//! `min_flt` or `maj_flt`, with what resolved it (anonymous, file, swap-in, write-protect,
//! NUMA hinting, hugetlbfs, or nothing: spurious) and how many pages it mapped.

use super::Fault;
use crate::bindings;
use crate::kernel_ext::kcrate::sync::Arc;
use crate::kernel_ext::mm::fault_flag;
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::tracepoint::TracepointProbe;
use crate::record::event::FaultType;
use crate::state::State;

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
    if flags & fault_flag::REMOTE != 0 {
        return;
    }
    // SAFETY: The caller passes a valid report for the duration of the call.
    let report = unsafe { &*report };
    let fault_type = match report.handler {
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
    let fault = Fault {
        // CAST: an unsigned long address fits in u64.
        address: address as u64,
        flags,
        major,
        fault_type,
        huge: report.huge,
        pages: report.nr_pages,
        // SAFETY: The tracepoint passes the user registers (of a fault from user mode) or
        // null, valid during the call.
        regs: unsafe { regs.as_ref() },
    };
    super::record(state, &fault);
}
