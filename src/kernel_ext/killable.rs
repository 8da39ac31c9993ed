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
    let raw = raw_mutex(mutex);
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

/// The `struct mutex` of `mutex`: the address of the `Lock` itself.
///
/// On 7.2 and later `Lock` is `#[repr(C)]` with the kernel lock object as its first field
/// (see `Lock::from_raw`), so this holds by the type's definition. 6.12's `Lock` has neither
/// `#[repr(C)]` nor `from_raw`: its fields are in rustc's order, which puts the lock object
/// (`Opaque<struct mutex>`, aligned to 8) first for data aligned to at most 8, but the
/// language does not promise it. [`check_mutex_layout`] checks it at module load there.
pub(crate) fn raw_mutex<T>(mutex: &Mutex<T>) -> *mut bindings::mutex {
    core::ptr::from_ref(mutex)
        .cast_mut()
        .cast::<bindings::mutex>()
}

/// Checks, on 6.12 (where `Lock`'s layout is rustc's, see [`raw_mutex`]), that [`raw_mutex`]
/// gives the `struct mutex` the kernel crate's `Mutex::lock` takes: locked while a guard is
/// held, unlocked once it is dropped. `EINVAL`, with a line in dmesg, otherwise.
#[cfg(memmon_kernel_6_12)]
pub(crate) fn check_mutex_layout() -> Result {
    use crate::kernel_ext::kcrate::{new_mutex, sync::Arc};
    // The data is 0: were it at the `Lock`'s address, the mutex would read as unlocked.
    let mutex = Arc::pin_init(new_mutex!(0u64), GFP_KERNEL)?;
    let raw = raw_mutex(&mutex);
    let guard = mutex.lock();
    // SAFETY: `raw` is the address of the live `Lock`, at least a `struct mutex` in size;
    // `mutex_is_locked()` reads its first word (`owner`) atomically, whatever is there.
    let locked = unsafe { bindings::mutex_is_locked(raw) };
    drop(guard);
    // SAFETY: As above.
    let unlocked = !unsafe { bindings::mutex_is_locked(raw) };
    if locked && unlocked {
        return Ok(());
    }
    pr_err!(
        "a Mutex's struct mutex is not at its address in this kernel crate (locked: {}, unlocked after: {}): not loading\n",
        locked,
        unlocked
    );
    Err(EINVAL)
}
