// SPDX-License-Identifier: GPL-2.0

//! Taking a [`Mutex`] in a way a fatal signal can interrupt (`mutex_lock_killable()`), for
//! waits that could otherwise last as long as another task pleases, e.g. behind a holder
//! stuck in `copy_to_user()` on a userfaultfd-backed buffer.

use crate::bindings;

use crate::kernel_ext::kcrate::sync::{Mutex, MutexGuard};
use crate::kernel_ext::prelude::*;

/// Acquires `mutex`, or fails with `EINTR` if the task receives a fatal signal while it
/// waits.
pub(crate) fn lock_killable<T>(mutex: &Mutex<T>) -> Result<MutexGuard<'_, T>> {
    // `Lock` is `#[repr(C)]` with the kernel lock object as its first field (see
    // `Lock::from_raw`), so for a `Mutex` its address is that of its `struct mutex`.
    let raw = core::ptr::from_ref(mutex)
        .cast_mut()
        .cast::<bindings::mutex>();
    // SAFETY: `raw` is the initialised `struct mutex` of `mutex`, alive for this call. With
    // lockdep's lock tracking `mutex_lock_killable()` is a macro for this call.
    #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
    let ret = unsafe { bindings::_mutex_lock_killable(raw, 0, core::ptr::null_mut()) };
    // SAFETY: As above.
    #[cfg(not(CONFIG_DEBUG_LOCK_ALLOC))]
    let ret = unsafe { bindings::mutex_lock_killable(raw) };
    if ret != 0 {
        return Err(EINTR);
    }
    // SAFETY: The lock was just acquired, and the guard releases it with `mutex_unlock()`, as
    // for `Mutex::lock`; a mutex backend's guard state is `()`.
    #[cfg(not(memmon_kernel_6_12))]
    let guard = unsafe { crate::kernel_ext::kcrate::sync::lock::Guard::new(mutex, ()) };
    // SAFETY: The lock was just acquired; the guard releases it (6.12's `Guard::new` is private).
    #[cfg(memmon_kernel_6_12)]
    let guard = unsafe { crate::kernel_ext::kcrate::sync::guard_of_locked(mutex) };
    Ok(guard)
}
