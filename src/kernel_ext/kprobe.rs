// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over kprobes and kretprobes (`linux/kprobes.h`).
//!
//! A [`Kprobe`] or [`Kretprobe`] is registered when initialised in place and unregistered when
//! dropped; the kernel structure is pinned inside it and the handler is found from it with
//! `container_of`. Handlers run in atomic context: they must not sleep.
//!
//! Unregistering waits for a grace period, so that no handler runs any more; an
//! [`Unregistration`] unregisters many probes with one wait (`unregister_kprobes()`,
//! `unregister_kretprobes()`) instead of one each.

use crate::bindings;
use crate::kernel_ext::kcrate::{
    alloc::KVec,
    error::to_result,
    sync::atomic::{Acquire, Atomic, Release},
    types::Opaque,
};
use crate::kernel_ext::prelude::*;
use core::mem::{size_of, MaybeUninit};

/// What a [`Kprobe`] does when the probed function is entered.
pub(crate) trait KprobeHandler: Send + Sync {
    /// Runs before the first instruction of the probed function, in atomic context.
    fn hit(&self, regs: &bindings::pt_regs);
}

/// What a [`Kretprobe`] does around a call of the probed function.
pub(crate) trait KretprobeHandler: Send + Sync {
    /// What [`KretprobeHandler::entry`] hands to [`KretprobeHandler::exit`] for one call. It
    /// lives in the call's kretprobe instance, filled in and used in place (never copied, so
    /// it may be large); it is not dropped.
    type Data: Copy;

    /// Runs at function entry, in atomic context. Returns `true` once it has initialised
    /// `data`, to have [`KretprobeHandler::exit`] run for this call; `false` skips it.
    fn entry(&self, regs: &bindings::pt_regs, data: &mut MaybeUninit<Self::Data>) -> bool;

    /// Runs when the call returns (the return value is in `regs`), in atomic context, with
    /// the data its entry initialised.
    fn exit(&self, data: &mut Self::Data, regs: &bindings::pt_regs);
}

/// Reports a failed registration in the kernel log, but for a missing function (`ENOENT`)
/// when `missing_ok`.
fn registered(symbol: &CStr, ret: c_int, missing_ok: bool) -> Result {
    to_result(ret).inspect_err(|e| {
        if !(missing_ok && *e == ENOENT) {
            pr_err!("cannot probe {}: error {}\n", symbol, e.to_errno());
        }
    })
}

/// The ftrace location of the kernel function `symbol`: the patched call at its entry, the
/// address an ftrace callback is given as `ip` ([`crate::kernel_ext::ftrace`]), as the kprobes
/// core resolves it (a disarmed kprobe is registered on the function, read and unregistered,
/// which waits for a grace period). Fails with `ENOENT` if the kernel has no such function
/// (logged unless `missing_ok`), with `EOPNOTSUPP` if its entry is not an ftrace location
/// (the function is not traceable). Where the call site is, given the entry, is the
/// architecture's ([`crate::arch::ftrace_site`]).
pub(crate) fn ftrace_location(symbol: &'static CStr, missing_ok: bool) -> Result<usize> {
    // SAFETY: An all-zero kprobe is a valid, unset one.
    let mut probe: bindings::kprobe = unsafe { core::mem::zeroed() };
    probe.symbol_name = symbol.as_char_ptr();
    probe.flags = bindings::KPROBE_FLAG_DISABLED;
    // SAFETY: `probe` is a set up kprobe with no handler, disarmed; it stays in place (on this
    // stack frame) until it is unregistered below.
    let ret = unsafe { bindings::register_kprobe(&mut probe) };
    registered(symbol, ret, missing_ok)?;
    // Read while registered: the kprobes core has resolved the address, set the flags and
    // saved the instruction at the address in `opcode` (the original one even when another
    // user's kprobe is armed there and the text holds a breakpoint).
    let site = crate::arch::ftrace_site(&probe);
    // SAFETY: `probe` is registered; unregistering returns once the kprobes core no longer
    // uses it.
    unsafe { bindings::unregister_kprobe(&mut probe) };
    site
}

/// A registered kprobe on a function's entry.
///
/// # Invariants
///
/// `raw` is registered with the kprobes core from initialisation until drop, or until an
/// [`Unregistration`] it was added to unregisters it (and then sets `unregistered`).
#[pin_data(PinnedDrop)]
pub(crate) struct Kprobe<H: KprobeHandler> {
    handler: H,
    unregistered: Atomic<bool>,
    #[pin]
    raw: Opaque<bindings::kprobe>,
}

// SAFETY: The kprobe structure is only touched by the kprobes core after registration, which
// allows registering and unregistering from any thread; `H` is `Send`.
unsafe impl<H: KprobeHandler> Send for Kprobe<H> {}
// SAFETY: `&Kprobe` gives access to nothing but `H`, which is `Sync`.
unsafe impl<H: KprobeHandler> Sync for Kprobe<H> {}

impl<H: KprobeHandler> Kprobe<H> {
    /// Hits that were not handled: the probe was hit recursively.
    pub(crate) fn missed(&self) -> u64 {
        // SAFETY: `raw` is valid; the counter is updated by the kprobes core and read racily,
        // as a statistic.
        let missed = unsafe { core::ptr::addr_of!((*self.raw.get()).nmissed).read_volatile() };
        // CAST: an unsigned long counter fits in u64.
        missed as u64
    }

    /// Whether the probe goes through ftrace (`KPROBE_FLAG_FTRACE`), so that its handler runs
    /// in the probed task's context rather than from an int3 trap.
    pub(crate) fn ftrace_based(&self) -> bool {
        // SAFETY: `raw` is valid; the flags are set at registration.
        let flags = unsafe { core::ptr::addr_of!((*self.raw.get()).flags).read_volatile() };
        flags & bindings::KPROBE_FLAG_FTRACE != 0
    }

    /// Probes the entry of the kernel function `symbol`.
    pub(crate) fn register(symbol: &'static CStr, handler: H) -> impl PinInit<Self, Error> {
        Self::register_with_flags(symbol, handler, 0, false)
    }

    fn register_with_flags(
        symbol: &'static CStr,
        handler: H,
        flags: u32,
        missing_ok: bool,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            handler,
            unregistered: Atomic::new(false),
            raw <- Opaque::try_ffi_init(move |slot: *mut bindings::kprobe| {
                // SAFETY: `slot` is valid for writes; an all-zero kprobe is a valid, unset one.
                unsafe {
                    slot.write(core::mem::zeroed());
                    (*slot).symbol_name = symbol.as_char_ptr();
                    (*slot).flags = flags;
                    (*slot).pre_handler = Some(Self::pre_handler);
                }
                // SAFETY: `slot` is a fully set up kprobe that stays pinned until `drop`
                // unregisters it; `handler` was initialised before it.
                registered(symbol, unsafe { bindings::register_kprobe(slot) }, missing_ok)
            }),
        })
    }

    /// # Safety
    ///
    /// Called by the kprobes core with the `kprobe` of a registered `Kprobe<H>`.
    unsafe extern "C" fn pre_handler(
        kp: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: `kp` is the `raw` field of a live `Kprobe<H>` (registered only by
        // `register`), and `Opaque` is transparent.
        let this =
            unsafe { &*kernel::container_of!(kp.cast::<Opaque<bindings::kprobe>>(), Self, raw) };
        // SAFETY: The kprobes core passes the valid registers of the probed context.
        this.handler.hit(unsafe { &*regs });
        0
    }
}

#[pinned_drop]
impl<H: KprobeHandler> PinnedDrop for Kprobe<H> {
    fn drop(self: Pin<&mut Self>) {
        if self.unregistered.load(Acquire) {
            // An `Unregistration` has unregistered it.
            return;
        }
        // SAFETY: `raw` is registered by the type invariants; unregistering waits until no
        // handler runs any more.
        unsafe { bindings::unregister_kprobe(self.raw.get()) };
    }
}

/// A registered kretprobe: a handler at entry and one at return of each call.
///
/// # Invariants
///
/// `raw` is registered with the kprobes core from initialisation until drop, or until an
/// [`Unregistration`] it was added to unregisters it (as for [`Kprobe`]), with
/// `data_size == size_of::<H::Data>()`.
#[pin_data(PinnedDrop)]
pub(crate) struct Kretprobe<H: KretprobeHandler> {
    handler: H,
    unregistered: Atomic<bool>,
    #[pin]
    raw: Opaque<bindings::kretprobe>,
}

// SAFETY: The kretprobe structure is only touched by the kprobes core after registration,
// which allows registering and unregistering from any thread; `H` is `Send`.
unsafe impl<H: KretprobeHandler> Send for Kretprobe<H> {}
// SAFETY: `&Kretprobe` reads `nmissed` racily as a statistic and otherwise only gives access to
// `H`, which is `Sync`.
unsafe impl<H: KretprobeHandler> Sync for Kretprobe<H> {}

impl<H: KretprobeHandler> Kretprobe<H> {
    /// Probes calls of the kernel function `symbol`, with up to `max_active` calls in flight
    /// at once; calls beyond that are missed and counted by [`Kretprobe::missed`].
    pub(crate) fn register(
        symbol: &'static CStr,
        max_active: i32,
        handler: H,
    ) -> impl PinInit<Self, Error> {
        Self::register_with_flags(symbol, max_active, handler, 0)
    }

    /// As [`Kretprobe::register`], but disarmed: the function is not patched and the handlers
    /// do not run until [`Kretprobe::arm`].
    pub(crate) fn register_disarmed(
        symbol: &'static CStr,
        max_active: i32,
        handler: H,
    ) -> impl PinInit<Self, Error> {
        Self::register_with_flags(symbol, max_active, handler, bindings::KPROBE_FLAG_DISABLED)
    }

    fn register_with_flags(
        symbol: &'static CStr,
        max_active: i32,
        handler: H,
        flags: u32,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            handler,
            unregistered: Atomic::new(false),
            raw <- Opaque::try_ffi_init(move |slot: *mut bindings::kretprobe| {
                // SAFETY: `slot` is valid for writes; an all-zero kretprobe is a valid, unset
                // one.
                unsafe {
                    slot.write(core::mem::zeroed());
                    (*slot).kp.symbol_name = symbol.as_char_ptr();
                    (*slot).kp.flags = flags;
                    (*slot).entry_handler = Some(Self::entry_handler);
                    (*slot).handler = Some(Self::exit_handler);
                    (*slot).maxactive = max_active;
                    (*slot).data_size = size_of::<H::Data>();
                }
                // SAFETY: `slot` is a fully set up kretprobe that stays pinned until `drop`
                // unregisters it; `handler` was initialised before it.
                registered(symbol, unsafe { bindings::register_kretprobe(slot) }, false)
            }),
        })
    }

    /// Arms the probe (`enable_kprobe()`): patches the function's entry so that the handlers
    /// run. May sleep. Arming an armed probe does nothing. Fails with `EBUSY` while kprobes
    /// are disabled system-wide (debugfs `kprobes/enabled` is 0): the kprobes core then
    /// reports success but leaves the probe disabled, and does not arm it when kprobes are
    /// enabled again.
    pub(crate) fn arm(&self) -> Result {
        // SAFETY: `raw` is valid and pinned; `enable_kprobe` takes the kprobes mutex and
        // fails with `EINVAL` for a probe that is no longer registered.
        to_result(unsafe { bindings::enable_kprobe(&raw mut (*self.raw.get()).kp) })?;
        // SAFETY: `raw` is valid; the flags are updated under the kprobes mutex, which
        // `enable_kprobe` released after setting them.
        let flags = unsafe { core::ptr::addr_of!((*self.raw.get()).kp.flags).read_volatile() };
        if flags & bindings::KPROBE_FLAG_DISABLED != 0 {
            return Err(EBUSY);
        }
        Ok(())
    }

    /// Disarms the probe (`disable_kprobe()`): the function runs unpatched again; calls in
    /// flight still get their exit handler. May sleep.
    pub(crate) fn disarm(&self) -> Result {
        // SAFETY: As in `arm`.
        to_result(unsafe { bindings::disable_kprobe(&raw mut (*self.raw.get()).kp) })
    }

    /// Calls that were not probed: `max_active` calls (of any process) were in flight, or the
    /// probe was hit recursively.
    pub(crate) fn missed(&self) -> u64 {
        // SAFETY: `raw` is valid; the counters are updated by the kprobes core and read
        // racily, as statistics.
        let (no_instance, recursion) = unsafe {
            let rp = self.raw.get();
            (
                core::ptr::addr_of!((*rp).nmissed).read_volatile(),
                core::ptr::addr_of!((*rp).kp.nmissed).read_volatile(),
            )
        };
        // CAST: an unsigned long counter fits in u64.
        u64::try_from(no_instance).unwrap_or(0) + recursion as u64
    }

    /// Whether the probe goes through ftrace (`KPROBE_FLAG_FTRACE`), so that its handlers run
    /// in the probed task's context rather than from an int3 trap.
    pub(crate) fn ftrace_based(&self) -> bool {
        // SAFETY: `raw` is valid; the flags are set at registration.
        let flags = unsafe { core::ptr::addr_of!((*self.raw.get()).kp.flags).read_volatile() };
        flags & bindings::KPROBE_FLAG_FTRACE != 0
    }

    /// The `Kretprobe` an instance belongs to, and the instance's data area.
    ///
    /// Built only with `CONFIG_KRETPROBE_ON_RETHOOK` (x86_64 has it), where an instance finds
    /// its kretprobe through its rethook.
    ///
    /// # Safety
    ///
    /// `ri` must be an instance of a registered `Kretprobe<H>`, passed by the kprobes core.
    #[cfg(CONFIG_KRETPROBE_ON_RETHOOK)]
    unsafe fn from_instance<'a>(
        ri: *mut bindings::kretprobe_instance,
    ) -> Option<(&'a Self, *mut H::Data)> {
        // SAFETY: With rethook (x86), the instance's rethook data is the `struct kretprobe`
        // (set once, at registration), which is the `raw` field of a live `Kretprobe<H>`
        // (registered only by `register`).
        let this = unsafe {
            let rp = (*(*ri).node.rethook).data.cast::<bindings::kretprobe>();
            &*kernel::container_of!(rp.cast::<Opaque<bindings::kretprobe>>(), Self, raw)
        };
        // SAFETY: The core allocates `data_size` bytes after each instance.
        let data = unsafe { (*ri).data.as_mut_ptr().cast::<H::Data>() };
        Some((this, data))
    }

    /// The `Kretprobe` an instance belongs to, and the instance's data area.
    ///
    /// Built without `CONFIG_KRETPROBE_ON_RETHOOK` (arm64), where an instance finds its
    /// kretprobe through its holder (`get_kretprobe()`).
    ///
    /// # Safety
    ///
    /// `ri` must be an instance of a registered `Kretprobe<H>`, passed by the kprobes core.
    #[cfg(not(CONFIG_KRETPROBE_ON_RETHOOK))]
    unsafe fn from_instance<'a>(
        ri: *mut bindings::kretprobe_instance,
    ) -> Option<(&'a Self, *mut H::Data)> {
        // `unregister_kretprobes()` clears the holder's pointer (`rcu_assign_pointer(..., NULL)`)
        // before its `synchronize_rcu()`, and the trampoline reads it on its own before
        // calling a handler: a handler running then finds NULL, as `get_kretprobe()` users
        // must expect (kernel/trace/trace_kprobe.c). Read once, as READ_ONCE.
        // SAFETY: The holder is valid for the instance's lifetime (the core frees it after
        // the last instance); the read is of an aligned pointer field.
        let rp = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*(*ri).rph).rp)) };
        if rp.is_null() {
            return None;
        }
        // SAFETY: A non-NULL holder pointer is the `struct kretprobe` this instance was
        // taken for, whose unregistration waits (synchronize_rcu) for this handler, and
        // which is the `raw` field of a live `Kretprobe<H>` (registered only by `register`).
        let this =
            unsafe { &*kernel::container_of!(rp.cast::<Opaque<bindings::kretprobe>>(), Self, raw) };
        // SAFETY: The core allocates `data_size` bytes after each instance.
        let data = unsafe { (*ri).data.as_mut_ptr().cast::<H::Data>() };
        Some((this, data))
    }

    /// # Safety
    ///
    /// Called by the kprobes core with an instance of this probe and valid registers.
    unsafe extern "C" fn entry_handler(
        ri: *mut bindings::kretprobe_instance,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: See the function's safety requirements.
        let Some((this, data)) = (unsafe { Self::from_instance(ri) }) else {
            // Being unregistered: no exit handler for this call.
            return 1;
        };
        // SAFETY: The kprobes core passes the valid registers of the probed context.
        let regs = unsafe { &*regs };
        let called = if data.is_aligned() {
            // SAFETY: `data` has room for an `H::Data` (see `register`), is aligned for it, and
            // belongs to this call only until its exit handler returns.
            let slot = unsafe { &mut *data.cast::<MaybeUninit<H::Data>>() };
            this.handler.entry(regs, slot)
        } else {
            let mut value = MaybeUninit::uninit();
            let called = this.handler.entry(regs, &mut value);
            if called {
                // SAFETY: `data` has room for an `H::Data`; the handler initialised `value`.
                unsafe { data.write_unaligned(value.assume_init()) };
            }
            called
        };
        // Non-zero: no exit handler for this call.
        c_int::from(!called)
    }

    /// # Safety
    ///
    /// Called by the kprobes core with an instance whose entry handler returned 0.
    unsafe extern "C" fn exit_handler(
        ri: *mut bindings::kretprobe_instance,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: See the function's safety requirements.
        let Some((this, data)) = (unsafe { Self::from_instance(ri) }) else {
            // Being unregistered: the entry's data (`Copy`) needs no drop.
            return 0;
        };
        // SAFETY: The kprobes core passes the valid registers at return.
        let regs = unsafe { &*regs };
        if data.is_aligned() {
            // SAFETY: `entry_handler` initialised an `H::Data` there for this call, which
            // owns the instance until this returns.
            this.handler.exit(unsafe { &mut *data }, regs);
        } else {
            // SAFETY: As above, written unaligned.
            let mut value = unsafe { data.read_unaligned() };
            this.handler.exit(&mut value, regs);
        }
        0
    }
}

#[pinned_drop]
impl<H: KretprobeHandler> PinnedDrop for Kretprobe<H> {
    fn drop(self: Pin<&mut Self>) {
        if self.unregistered.load(Acquire) {
            // An `Unregistration` has unregistered it.
            return;
        }
        // SAFETY: `raw` is registered by the type invariants; unregistering waits until no
        // handler runs any more.
        unsafe { bindings::unregister_kretprobe(self.raw.get()) };
    }
}

/// Probes to unregister together: dropping it unregisters them all, waiting for one grace
/// period for the kprobes and one for the kretprobes, then marks them unregistered. Until
/// then (and if it is leaked) each probe is still registered and unregisters itself when
/// dropped.
///
/// # Invariants
///
/// `kprobes` and `kretprobes` hold the `raw` fields of registered probes borrowed for `'a`
/// (so pinned and alive until this is dropped), and `flags` their `unregistered` flags.
pub(crate) struct Unregistration<'a> {
    kprobes: KVec<*mut bindings::kprobe>,
    kretprobes: KVec<*mut bindings::kretprobe>,
    flags: KVec<&'a Atomic<bool>>,
}

impl<'a> Unregistration<'a> {
    /// An empty batch.
    pub(crate) fn new() -> Self {
        // INVARIANT: no probes.
        Self {
            kprobes: KVec::new(),
            kretprobes: KVec::new(),
            flags: KVec::new(),
        }
    }

    /// Room for one more probe in `probes` and in `flags`.
    fn reserve<T>(probes: &mut KVec<T>, flags: &mut KVec<&'a Atomic<bool>>) -> bool {
        probes.reserve(1, GFP_KERNEL).is_ok() && flags.reserve(1, GFP_KERNEL).is_ok()
    }

    /// Adds `probe` to the batch. If there is no memory for it, it stays out of the batch
    /// and unregisters itself when dropped.
    pub(crate) fn add_kprobe<H: KprobeHandler>(&mut self, probe: &'a Kprobe<H>) {
        if Self::reserve(&mut self.kprobes, &mut self.flags) {
            // INVARIANT: `raw` is registered (the probe's invariants) and borrowed for `'a`;
            // both pushes fit in the room just reserved.
            let _ = self.kprobes.push(probe.raw.get(), GFP_KERNEL);
            let _ = self.flags.push(&probe.unregistered, GFP_KERNEL);
        }
    }

    /// Adds `probe` to the batch, as [`Unregistration::add_kprobe`] does.
    pub(crate) fn add_kretprobe<H: KretprobeHandler>(&mut self, probe: &'a Kretprobe<H>) {
        if Self::reserve(&mut self.kretprobes, &mut self.flags) {
            // INVARIANT: As above.
            let _ = self.kretprobes.push(probe.raw.get(), GFP_KERNEL);
            let _ = self.flags.push(&probe.unregistered, GFP_KERNEL);
        }
    }
}

impl Drop for Unregistration<'_> {
    fn drop(&mut self) {
        // CAST: at most a few dozen probes.
        let (kprobes, kretprobes) = (self.kprobes.len() as c_int, self.kretprobes.len() as c_int);
        // SAFETY: By the type invariants every pointer is a registered, pinned probe, which
        // its own drop does not unregister before its flag is set below; each call returns
        // once no handler of its probes runs any more.
        unsafe {
            if kprobes > 0 {
                bindings::unregister_kprobes(self.kprobes.as_mut_ptr(), kprobes);
            }
            if kretprobes > 0 {
                bindings::unregister_kretprobes(self.kretprobes.as_mut_ptr(), kretprobes);
            }
        }
        for flag in self.flags.iter() {
            flag.store(true, Release);
        }
    }
}
