// SPDX-License-Identifier: GPL-2.0

//! Probes on tracepoints (`linux/tracepoint.h`), attached from a module.
//!
//! A [`TracepointProbe`] is attached when created and detached when dropped; dropping it
//! waits (`tracepoint_synchronize_unregister()`) until no CPU runs the probe any more, so the
//! data the probe was given may be freed right after. Several probes detached into one
//! [`Detached`] share that wait instead.

use crate::bindings;

use crate::kernel_ext::kcrate::{alloc::KVec, error::to_result, sync::Arc};
use crate::kernel_ext::prelude::*;

/// A probe function attached to one tracepoint, with the data passed to it as first argument.
///
/// # Invariants
///
/// `probe` is registered on `tracepoint` with `data` (a pointer from [`Arc::into_raw`]) from
/// creation until drop.
pub(crate) struct TracepointProbe<T: Send + Sync> {
    tracepoint: *mut bindings::tracepoint,
    probe: *mut c_void,
    data: *const T,
}

// SAFETY: The tracepoint core allows unregistering from any thread; `T` is `Send + Sync`.
unsafe impl<T: Send + Sync> Send for TracepointProbe<T> {}
// SAFETY: `&TracepointProbe` gives access to nothing.
unsafe impl<T: Send + Sync> Sync for TracepointProbe<T> {}

impl<T: Send + Sync> TracepointProbe<T> {
    /// Attaches `probe` to `tracepoint`; every call of the probe gets `data` as its first
    /// argument, as a `*const T` cast to `*mut c_void`.
    ///
    /// # Safety
    ///
    /// `tracepoint` must point to a tracepoint that outlives the returned value (one of the
    /// kernel's, exported), and `probe` must be an `unsafe extern "C" fn` with that
    /// tracepoint's probe signature: `(data: *mut c_void, TP_PROTO arguments...)`, that reads
    /// `data` as `*const T`.
    pub(crate) unsafe fn attach(
        tracepoint: *mut bindings::tracepoint,
        probe: *mut c_void,
        data: Arc<T>,
    ) -> Result<Self> {
        let data = Arc::into_raw(data);
        // SAFETY: The caller guarantees `tracepoint` and the signature of `probe`; `data` stays
        // valid until `drop` has unregistered the probe and waited for its callers.
        let ret = unsafe {
            bindings::tracepoint_probe_register(tracepoint, probe, data.cast_mut().cast())
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: `data` came from `Arc::into_raw` above and the probe was not registered.
            drop(unsafe { Arc::from_raw(data) });
            return Err(e);
        }
        // INVARIANT: the probe was just registered with `data`.
        Ok(Self {
            tracepoint,
            probe,
            data,
        })
    }
}

impl<T: Send + Sync> TracepointProbe<T> {
    /// Attaches `probe` to the core kernel tracepoint called `name` (exported or not), as
    /// [`TracepointProbe::attach`] does, with a kernel log line if it is missing or refused.
    ///
    /// # Safety
    ///
    /// `probe` must be an `unsafe extern "C" fn` with that tracepoint's probe signature:
    /// `(data: *mut c_void, TP_PROTO arguments...)`, that reads `data` as `*const T`.
    pub(crate) unsafe fn attach_named(
        name: &CStr,
        probe: *mut c_void,
        data: Arc<T>,
    ) -> Result<Self> {
        let Some(tracepoint) = find_kernel_tracepoint(name) else {
            pr_err!("cannot find the {} tracepoint\n", name);
            return Err(ENOENT);
        };
        // SAFETY: A core kernel tracepoint outlives every module; the caller guarantees the
        // signature of `probe`.
        unsafe { Self::attach(tracepoint, probe, data) }.inspect_err(|e| {
            pr_err!(
                "cannot attach to the {} tracepoint: error {}\n",
                name,
                e.to_errno()
            );
        })
    }

    /// Unregisters the probe without waiting for the calls in flight.
    ///
    /// # Safety
    ///
    /// Called once, from [`Drop::drop`] or [`TracepointProbe::detach_into`], which then wait
    /// for the calls in flight before releasing `data`.
    unsafe fn unregister(&self) {
        // SAFETY: By the type invariants the probe is registered with these arguments.
        let ret = unsafe {
            bindings::tracepoint_probe_unregister(
                self.tracepoint,
                self.probe,
                self.data.cast_mut().cast(),
            )
        };
        if ret != 0 {
            pr_warn!("tracepoint probe unregistration failed: error {}\n", ret);
        }
    }

    /// Releases the reference `data` holds on the probe's `T`.
    ///
    /// # Safety
    ///
    /// `data` must come from `Arc::<T>::into_raw` and no probe call may use it any more.
    unsafe fn release(data: *const c_void) {
        // SAFETY: As the function's safety requirements say.
        drop(unsafe { Arc::from_raw(data.cast::<T>()) });
    }

    /// Detaches the probe now and leaves the wait for its calls in flight, and the release of
    /// its data, to `batch`.
    pub(crate) fn detach_into(self, batch: &mut Detached) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: Called once: `this` is not dropped. The wait is done by `batch`, or below.
        unsafe { this.unregister() };
        let entry = (
            Self::release as unsafe fn(*const c_void),
            this.data.cast::<c_void>(),
        );
        if batch.released.push(entry, GFP_KERNEL).is_err() {
            // No room to defer it: wait now.
            // SAFETY: Sleeping is allowed here (process context).
            unsafe { bindings::memmon_tracepoint_synchronize_unregister() };
            // SAFETY: `data` came from `Arc::into_raw`, and no probe call can use it any more.
            unsafe { Self::release(this.data.cast::<c_void>()) };
        }
    }
}

impl<T: Send + Sync> Drop for TracepointProbe<T> {
    fn drop(&mut self) {
        // SAFETY: Called once, from drop; the wait follows.
        unsafe { self.unregister() };
        // SAFETY: Sleeping is allowed in drop (process context); it returns once no CPU runs
        // the probe any more.
        unsafe { bindings::memmon_tracepoint_synchronize_unregister() };
        // SAFETY: `data` came from `Arc::into_raw`, and no probe call can use it any more.
        unsafe { Self::release(self.data.cast::<c_void>()) };
    }
}

/// How to release a detached probe's data, and the data.
type Release = (unsafe fn(*const c_void), *const c_void);

/// Probes detached with [`TracepointProbe::detach_into`]: dropping it waits once until no
/// CPU runs any of them any more, then releases their data.
///
/// # Invariants
///
/// Every entry is a probe's release function with its data: the probe is unregistered, and
/// the data is still held for it.
pub(crate) struct Detached {
    released: KVec<Release>,
}

impl Detached {
    /// An empty batch.
    pub(crate) fn new() -> Self {
        // INVARIANT: no entries.
        Self {
            released: KVec::new(),
        }
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        if self.released.is_empty() {
            return;
        }
        // SAFETY: Sleeping is allowed in drop (process context); it returns once no CPU runs
        // any of the unregistered probes any more.
        unsafe { bindings::memmon_tracepoint_synchronize_unregister() };
        for &(release, data) in self.released.iter() {
            // SAFETY: By the type invariants `data` is still held for an unregistered probe,
            // which no CPU runs any more; `release` is that probe's.
            unsafe { release(data) };
        }
    }
}

/// The core kernel's tracepoint called `name`, exported or not.
pub(crate) fn find_kernel_tracepoint(name: &CStr) -> Option<*mut bindings::tracepoint> {
    struct Search<'a> {
        name: &'a CStr,
        found: *mut bindings::tracepoint,
    }

    /// # Safety
    ///
    /// Called by `for_each_kernel_tracepoint` with a valid tracepoint and the `Search` below.
    unsafe extern "C" fn visit(tp: *mut bindings::tracepoint, search: *mut c_void) {
        // SAFETY: `search` is the `Search` passed below, alive during the iteration.
        let search = unsafe { &mut *search.cast::<Search<'_>>() };
        // SAFETY: A kernel tracepoint is valid and has a NUL-terminated static name.
        let name = unsafe { CStr::from_char_ptr((*tp).name) };
        if name == search.name {
            search.found = tp;
        }
    }

    let mut search = Search {
        name,
        found: core::ptr::null_mut(),
    };
    // SAFETY: `visit` has the expected signature and only uses `search` during the call.
    unsafe {
        bindings::for_each_kernel_tracepoint(Some(visit), (&raw mut search).cast::<c_void>())
    };
    (!search.found.is_null()).then_some(search.found)
}
