// SPDX-License-Identifier: GPL-2.0

//! `READ_ONCE()` of an [`Atomic`]: one marked load, inline, with no call; and `smp_mb()`
//! the same on every kernel memmon builds for.

use crate::kernel_ext::kcrate::sync::atomic::{Atomic, AtomicType};

/// The value of `atomic`, read as `READ_ONCE()` reads it: one plain load, inlined, where
/// [`Atomic::load`] calls an out-of-line C helper (which makes a caller on a hot path save and
/// restore registers around the call).
///
/// FIXME(read_once): Replace with `read_once` when available on the Rust side.
#[inline(always)]
pub(crate) fn read_once<T: AtomicType>(atomic: &Atomic<T>) -> T {
    // This `read_volatile` is intended to correspond to a READ_ONCE call, as in
    // `kernel::fs::File::flags`.
    //
    // SAFETY: The pointer is `atomic`'s own, valid and aligned for `T`. Every store to it is an
    // atomic operation, so this marked (READ_ONCE) load is no data race under the LKMM; an
    // atomic type is at most 8 bytes, so on x86_64 this is one aligned load, as
    // `atomic64_read()` is.
    unsafe { atomic.as_ptr().read_volatile() }
}

/// A full memory barrier between CPUs (`smp_mb()`).
///
/// FIXME(7.2): `kernel::sync::barrier::smp_mb` takes the ordering (`Full`) from 7.3 on and
/// no argument before; call it directly once 7.2 is no longer built for.
#[inline(always)]
pub(crate) fn smp_mb_full() {
    #[cfg(any(memmon_kernel_7_3, memmon_kernel_6_12))]
    crate::kernel_ext::kcrate::sync::barrier::smp_mb(crate::kernel_ext::kcrate::sync::atomic::Full);
    #[cfg(not(any(memmon_kernel_7_3, memmon_kernel_6_12)))]
    crate::kernel_ext::kcrate::sync::barrier::smp_mb();
}
