// SPDX-License-Identifier: GPL-2.0

//! A delayed work item that its owner can cancel (`linux/workqueue.h`).
//!
//! `kernel::workqueue` queues work items kept alive by the reference the queue holds and has
//! no way to cancel one. A [`CancellableWork`] instead embeds its `struct delayed_work` and
//! its handler, is scheduled by its owner, and when dropped cancels the work and waits for a
//! run in flight (`cancel_delayed_work_sync()`), so that the handler may borrow what the
//! owner holds. The handler runs in process context on an unbound system workqueue and may
//! sleep; it can ask to run again after a delay.

use crate::bindings;

use crate::kernel_ext::kcrate::types::Opaque;
use crate::kernel_ext::prelude::*;

/// What a [`CancellableWork`] does when it runs. `'static`: a work item whose owner is
/// leaked (never dropped, so never cancelled) may run at any time after.
pub(crate) trait WorkHandler: Send + Sync + 'static {
    /// Runs in process context; may sleep. Returns after how many jiffies to run again, or
    /// `None` to stop until the work is scheduled again.
    fn run(&self) -> Option<c_ulong>;
}

/// A delayed work item owning its handler.
///
/// # Invariants
///
/// `raw` is an initialised `delayed_work` whose function is [`Self::work_fn`]; it is neither
/// pending nor running once `drop` (or [`CancellableWork::cancel`]) has returned, until it is
/// scheduled again.
#[pin_data(PinnedDrop)]
pub(crate) struct CancellableWork<H: WorkHandler> {
    #[pin]
    handler: H,
    #[pin]
    raw: Opaque<bindings::delayed_work>,
}

// SAFETY: A delayed work may be queued and cancelled from any thread; `H` is `Send`.
unsafe impl<H: WorkHandler> Send for CancellableWork<H> {}
// SAFETY: Shared access queues the work (internally locked) or reads `H`, which is `Sync`.
unsafe impl<H: WorkHandler> Sync for CancellableWork<H> {}

impl<H: WorkHandler> CancellableWork<H> {
    /// A work item, not scheduled, that runs `handler`.
    pub(crate) fn new(handler: impl PinInit<H, Error>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            handler <- handler,
            raw <- Opaque::ffi_init(|slot: *mut bindings::delayed_work| {
                // SAFETY: `slot` is valid for writes. `work_fn` has the work function's
                // signature; the timer is the one embedded in the `delayed_work` and calls
                // `delayed_work_timer_fn`, as `INIT_DELAYED_WORK()` sets it up; the lock class
                // keys are static (one pair for all handler types: lockdep sees every
                // `CancellableWork` as one class).
                unsafe {
                    bindings::init_work_with_key(
                        core::ptr::addr_of_mut!((*slot).work),
                        Some(Self::work_fn),
                        false,
                        c"memmon_work".as_char_ptr(),
                        crate::kernel_ext::kcrate::static_lock_class!().as_ptr(),
                    );
                    bindings::timer_init_key(
                        core::ptr::addr_of_mut!((*slot).timer),
                        Some(bindings::delayed_work_timer_fn),
                        bindings::TIMER_IRQSAFE,
                        c"memmon_work_timer".as_char_ptr(),
                        crate::kernel_ext::kcrate::static_lock_class!().as_ptr(),
                    );
                }
            }),
        }? Error)
    }

    /// The handler.
    pub(crate) fn handler(&self) -> &H {
        &self.handler
    }

    /// Runs the handler in `delay` jiffies, unless the work is pending already.
    pub(crate) fn schedule(&self, delay: c_ulong) {
        // SAFETY: `raw` is initialised (type invariants) and pinned; drop cancels it before it
        // is freed. `system_dfl_wq` (unbound) is a workqueue that exists from boot on.
        unsafe {
            bindings::queue_delayed_work_on(
                // CAST: a small constant.
                bindings::wq_misc_consts_WORK_CPU_UNBOUND as c_int,
                bindings::system_dfl_wq,
                self.raw.get(),
                delay,
            )
        };
    }

    /// Cancels the work and waits for a run in flight, including one that schedules itself
    /// again. It runs again only if scheduled after this returns.
    pub(crate) fn cancel(&self) {
        // SAFETY: `raw` is initialised (type invariants).
        unsafe { bindings::cancel_delayed_work_sync(self.raw.get()) };
    }

    /// # Safety
    ///
    /// Called by the workqueue with the `work` of the `raw` field of a live
    /// `CancellableWork<H>`.
    unsafe extern "C" fn work_fn(work: *mut bindings::work_struct) {
        // SAFETY: `work` is the `work` field of `raw`, a `delayed_work` inside a live
        // `CancellableWork<H>` (drop cancels and waits for this run before freeing it);
        // `Opaque` is transparent.
        let this = unsafe {
            let dwork = kernel::container_of!(work, bindings::delayed_work, work);
            &*kernel::container_of!(dwork.cast::<Opaque<bindings::delayed_work>>(), Self, raw)
        };
        if let Some(delay) = this.handler.run() {
            this.schedule(delay);
        }
    }
}

#[pinned_drop]
impl<H: WorkHandler> PinnedDrop for CancellableWork<H> {
    fn drop(self: Pin<&mut Self>) {
        self.cancel();
    }
}
