// SPDX-License-Identifier: GPL-2.0

//! Typed page faults, from the fault-path hook that `patches/` adds to mm
//! (`linux/mm_fault_hook.h`).
//!
//! The hook runs after the handler that resolved a fault (anonymous, file, swap-in,
//! write-protect) returned, with the handler's result. A fault is recorded once: an attempt
//! that returned `VM_FAULT_RETRY` is skipped and its repeat (marked `retry=1`) is recorded,
//! so that the fault lines of a process match the kernel's own minor + major fault counts.

use crate::event::{fault_flags, Event, FaultType, Kind};
use crate::State;
use kernel::{bindings, error::to_result, prelude::*, sync::Arc, types::Opaque};

/// The fault hook, attached from initialisation until drop.
///
/// # Invariants
///
/// `raw` is registered with `mm_fault_hook_register` from initialisation until drop.
#[pin_data(PinnedDrop)]
pub(crate) struct FaultHook {
    state: Arc<State>,
    #[pin]
    raw: Opaque<bindings::mm_fault_hook>,
}

// SAFETY: After registration the hook structure is only read by mm; registering and
// unregistering may happen on any thread.
unsafe impl Send for FaultHook {}
// SAFETY: `&FaultHook` gives no access to the hook structure.
unsafe impl Sync for FaultHook {}

impl FaultHook {
    /// Attaches the hook; faults of watched processes go to `state`'s ring.
    pub(crate) fn register(state: Arc<State>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            state,
            raw <- Opaque::try_ffi_init(|slot: *mut bindings::mm_fault_hook| {
                // SAFETY: `slot` is valid for writes.
                unsafe {
                    slot.write(bindings::mm_fault_hook {
                        fault: Some(Self::fault),
                    })
                };
                // SAFETY: `slot` stays pinned and valid until `drop` unregisters it.
                to_result(unsafe { bindings::mm_fault_hook_register(slot) }).inspect_err(|e| {
                    pr_err!(
                        "cannot attach the page-fault hook: error {} (another user?)\n",
                        e.to_errno()
                    );
                })
            }),
        })
    }

    /// # Safety
    ///
    /// Called by mm with the registered hook of a live `FaultHook` and a valid `info`.
    unsafe extern "C" fn fault(
        hook: *mut bindings::mm_fault_hook,
        info: *const bindings::mm_fault_info,
    ) {
        // SAFETY: `hook` is the `raw` field of a live `FaultHook`; `Opaque` is transparent.
        let this = unsafe {
            &*kernel::container_of!(hook.cast::<Opaque<bindings::mm_fault_hook>>(), Self, raw)
        };
        // SAFETY: mm passes a valid `info` for the duration of the call.
        let info = unsafe { &*info };
        if !this.state.watch.contains_current() {
            return;
        }
        if let Some(event) = fault_event(info) {
            this.state.ring.push(&event);
        }
    }
}

/// The event for `info`, or `None` for an attempt that will be retried or a fault that failed
/// (`VM_FAULT_ERROR`: the process gets a signal); mm_account_fault() counts neither.
fn fault_event(info: &bindings::mm_fault_info) -> Option<Event> {
    let result = info.result;
    if result & (bindings::vm_fault_reason_VM_FAULT_RETRY | VM_FAULT_ERROR) != 0 {
        return None;
    }
    let flags = info.flags;
    // get_user_pages() on another process's mm (ptrace, process_vm_readv): not a fault of the
    // current process.
    if flags & bindings::fault_flag_FAULT_FLAG_REMOTE != 0 {
        return None;
    }
    let mut event = Event::new(Kind::Fault);
    event.fault_type = match info.type_ {
        bindings::mm_fault_type_MM_FAULT_ANON => FaultType::Anon,
        bindings::mm_fault_type_MM_FAULT_FILE => FaultType::File,
        bindings::mm_fault_type_MM_FAULT_SWAP => FaultType::Swap,
        bindings::mm_fault_type_MM_FAULT_WP => FaultType::WriteProtect,
        _ => return None,
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
    if info.huge {
        bits |= fault_flags::HUGE;
    }
    // As mm_account_fault(): a fault that had to be retried counts as major.
    if result & bindings::vm_fault_reason_VM_FAULT_MAJOR != 0
        || flags & bindings::fault_flag_FAULT_FLAG_TRIED != 0
    {
        bits |= fault_flags::MAJOR;
    }
    // CAST: an unsigned long address fits in u64.
    event.args[0] = info.address as u64;
    if !info.regs.is_null() {
        bits |= fault_flags::USER;
        // SAFETY: mm passes the faulting task's user registers, valid during the call.
        let ip = unsafe { (*info.regs).ip };
        // CAST: a register is 64 bits wide on x86_64.
        event.args[1] = ip as u64;
    }
    event.flags = bits;
    Some(event)
}

/// `VM_FAULT_ERROR` of `linux/mm_types.h` (a macro, so not in the bindings).
const VM_FAULT_ERROR: u32 = bindings::vm_fault_reason_VM_FAULT_OOM
    | bindings::vm_fault_reason_VM_FAULT_SIGBUS
    | bindings::vm_fault_reason_VM_FAULT_SIGSEGV
    | bindings::vm_fault_reason_VM_FAULT_HWPOISON
    | bindings::vm_fault_reason_VM_FAULT_HWPOISON_LARGE
    | bindings::vm_fault_reason_VM_FAULT_FALLBACK;

#[pinned_drop]
impl PinnedDrop for FaultHook {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `raw` is registered by the type invariants; unregistering waits for an RCU
        // grace period, so no `fault` call is in flight once it returns.
        unsafe { bindings::mm_fault_hook_unregister(self.raw.get()) };
    }
}
