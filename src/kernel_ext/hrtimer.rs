// SPDX-License-Identifier: GPL-2.0

//! A one-shot high-resolution timer that can be armed from any context (`linux/hrtimer.h`).
//!
//! [`OneShotTimer::arm`] starts the timer unless it is armed already, so that many callers
//! arming it at once cost one start; the handler runs once, in hard interrupt context, when it
//! expires. Dropping the timer cancels it and waits for a handler in flight.

use crate::bindings;

use crate::kernel_ext::kcrate::{
    sync::atomic::{Atomic, Full},
    types::Opaque,
};
use crate::kernel_ext::prelude::*;

/// The callback's "do not restart" (`HRTIMER_NORESTART`).
///
/// FIXME(7.2): bindgen gives `enum hrtimer_restart` as a newtype from 7.3 on and as integer
/// constants before; use `bindings::hrtimer_restart::HRTIMER_NORESTART` once 7.2 is no
/// longer built for.
#[cfg(memmon_kernel_7_3)]
const HRTIMER_NORESTART: bindings::hrtimer_restart = bindings::hrtimer_restart::HRTIMER_NORESTART;
#[cfg(not(memmon_kernel_7_3))]
const HRTIMER_NORESTART: bindings::hrtimer_restart = bindings::hrtimer_restart_HRTIMER_NORESTART;

/// What an [`OneShotTimer`] does when it expires.
pub(crate) trait TimerHandler: Send + Sync {
    /// Runs in hard interrupt context: it must not sleep.
    fn expired(&self);
}

/// A one-shot timer owning its handler.
///
/// # Invariants
///
/// `raw` is an initialised hrtimer whose callback is [`Self::callback`].
#[pin_data(PinnedDrop)]
pub(crate) struct OneShotTimer<H: TimerHandler> {
    #[pin]
    handler: H,
    /// Set from arming until the handler starts to run.
    armed: Atomic<bool>,
    #[pin]
    raw: Opaque<bindings::hrtimer>,
}

// SAFETY: An hrtimer may be started and cancelled from any thread; `H` is `Send`.
unsafe impl<H: TimerHandler> Send for OneShotTimer<H> {}
// SAFETY: Shared access starts the timer (internally locked) or reads `H`, which is `Sync`.
unsafe impl<H: TimerHandler> Sync for OneShotTimer<H> {}

impl<H: TimerHandler> OneShotTimer<H> {
    /// A timer, not armed, that calls `handler` when it expires.
    pub(crate) fn new(handler: impl PinInit<H>) -> impl PinInit<Self> {
        pin_init!(Self {
            handler <- handler,
            armed: Atomic::new(false),
            raw <- Opaque::ffi_init(|slot: *mut bindings::hrtimer| {
                // SAFETY: `slot` is valid for writes; the callback matches the timer's type.
                unsafe {
                    bindings::hrtimer_setup(
                        slot,
                        Some(Self::callback),
                        // CAST: clock ids are small constants.
                        bindings::CLOCK_MONOTONIC as i32,
                        bindings::hrtimer_mode_HRTIMER_MODE_REL,
                    )
                }
            }),
        })
    }

    /// The handler.
    pub(crate) fn handler(&self) -> &H {
        &self.handler
    }

    /// Arms the timer to expire in `delay_ns` (give or take `slack_ns`), unless it is armed.
    /// Callable in any context but NMI.
    pub(crate) fn arm(&self, delay_ns: u64, slack_ns: u64) {
        // A read-modify-write, not a plain load first: it sees the handler's clearing of
        // `armed` (also one) whenever that came before, so that an event written after the
        // handler looked at its state always gets a timer.
        if self.armed.xchg(true, Full) {
            return;
        }
        // CAST: delays are far below i64::MAX nanoseconds.
        let delay = delay_ns as i64;
        // SAFETY: `raw` is initialised by the type invariants and pinned.
        unsafe {
            bindings::hrtimer_start_range_ns(
                self.raw.get(),
                delay,
                slack_ns,
                bindings::hrtimer_mode_HRTIMER_MODE_REL,
            )
        };
    }

    /// # Safety
    ///
    /// Called by the hrtimer core with the `raw` timer of a live `OneShotTimer<H>`.
    unsafe extern "C" fn callback(timer: *mut bindings::hrtimer) -> bindings::hrtimer_restart {
        // SAFETY: `timer` is the `raw` field of a live `OneShotTimer<H>`, which cannot be
        // freed before this returns (drop cancels the timer and waits); `Opaque` is
        // transparent.
        let this = unsafe {
            &*kernel::container_of!(timer.cast::<Opaque<bindings::hrtimer>>(), Self, raw)
        };
        // Fully ordered before the handler reads its state: either it sees what an arming
        // caller wrote before, or that caller's `xchg` sees `false` and starts the timer again.
        this.armed.xchg(false, Full);
        this.handler.expired();
        HRTIMER_NORESTART
    }
}

#[pinned_drop]
impl<H: TimerHandler> PinnedDrop for OneShotTimer<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `raw` is initialised; cancelling waits for a callback in flight.
        unsafe { bindings::hrtimer_cancel(self.raw.get()) };
    }
}
