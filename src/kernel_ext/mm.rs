// SPDX-License-Identifier: GPL-2.0

//! Page faults (`linux/mm_types.h`, `linux/mm.h`): the flags a fault is handled with, the
//! bits its handler returns, and the folio and `struct vm_fault` that a probed fault handler
//! is passed.

use crate::bindings;

use crate::kernel_ext::kcrate::types::Opaque;

/// `enum fault_flag`: how a fault is handled.
pub(crate) mod fault_flag {
    use crate::bindings;

    /// `FAULT_FLAG_WRITE`: a write access.
    pub(crate) const WRITE: u32 = bindings::fault_flag_FAULT_FLAG_WRITE;
    /// `FAULT_FLAG_USER`: the fault comes from user mode.
    pub(crate) const USER: u32 = bindings::fault_flag_FAULT_FLAG_USER;
    /// `FAULT_FLAG_REMOTE`: in another process's address space (`get_user_pages()`).
    pub(crate) const REMOTE: u32 = bindings::fault_flag_FAULT_FLAG_REMOTE;
    /// `FAULT_FLAG_TRIED`: the fault is handled again after a retry.
    pub(crate) const TRIED: u32 = bindings::fault_flag_FAULT_FLAG_TRIED;
    /// `FAULT_FLAG_INSTRUCTION`: an instruction fetch.
    pub(crate) const INSTRUCTION: u32 = bindings::fault_flag_FAULT_FLAG_INSTRUCTION;
}

/// `vm_fault_t` (`enum vm_fault_reason`): what handling a fault came to.
pub(crate) mod vm_fault_reason {
    use crate::bindings;

    /// `VM_FAULT_MAJOR`: the fault did I/O.
    pub(crate) const MAJOR: u32 = bindings::vm_fault_reason_VM_FAULT_MAJOR;
    /// `VM_FAULT_RETRY`: the fault is to be handled again (the lock was dropped).
    pub(crate) const RETRY: u32 = bindings::vm_fault_reason_VM_FAULT_RETRY;
    /// `VM_FAULT_ERROR`: the fault failed.
    pub(crate) const ERROR: u32 = bindings::vm_fault_reason_VM_FAULT_OOM
        | bindings::vm_fault_reason_VM_FAULT_SIGBUS
        | bindings::vm_fault_reason_VM_FAULT_SIGSEGV
        | bindings::vm_fault_reason_VM_FAULT_HWPOISON
        | bindings::vm_fault_reason_VM_FAULT_HWPOISON_LARGE
        | bindings::vm_fault_reason_VM_FAULT_FALLBACK;
}

/// A folio (`struct folio`).
#[repr(transparent)]
pub(crate) struct Folio(Opaque<bindings::folio>);

impl Folio {
    /// The folio `ptr` points to, borrowed for `'a`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a folio that stays valid for all of `'a`, e.g. the folio argument
    /// of a function being called, for a probe of the call.
    pub(crate) unsafe fn from_raw<'a>(ptr: *const bindings::folio) -> &'a Self {
        // SAFETY: The caller guarantees that `ptr` is valid for `'a`; `Folio` is a transparent
        // wrapper of `struct folio`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Pages in the folio (`folio_nr_pages()`).
    pub(crate) fn nr_pages(&self) -> usize {
        // SAFETY: `self` is a valid folio.
        unsafe { bindings::memmon_folio_nr_pages(self.0.get()) }
    }
}

/// A fault being handled, as the fault handlers are passed it (`struct vm_fault`).
#[repr(transparent)]
pub(crate) struct VmFault(Opaque<bindings::vm_fault>);

impl VmFault {
    /// The `struct vm_fault` `ptr` points to, borrowed for `'a`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a `struct vm_fault` that stays valid for all of `'a` and that no
    /// other task uses meanwhile: that of a fault the current task is handling, whose
    /// handler (which holds it in its frame) has not returned.
    pub(crate) unsafe fn from_raw<'a>(ptr: *const bindings::vm_fault) -> &'a Self {
        // SAFETY: The caller guarantees that `ptr` is valid for `'a`; `VmFault` is a
        // transparent wrapper of `struct vm_fault`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Whether the fault has a page (`vmf->page`): a write-protect fault on the zero page
    /// has none.
    pub(crate) fn has_page(&self) -> bool {
        // SAFETY: `self` is valid, and only the current task uses it (see `from_raw`).
        !unsafe { (*self.0.get()).page }.is_null()
    }
}
