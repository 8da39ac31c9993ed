// SPDX-License-Identifier: GPL-2.0

//! Safe wrapper over an ftrace callback on the entry of kernel functions (`struct ftrace_ops`,
//! `linux/ftrace.h`): what kprobes on ftrace and fprobes are built on, without their work on
//! every hit (a kprobe's lookup and full register save, an fprobe's hash lookup): the
//! functions' ftrace trampoline saves the argument registers and calls the handler.
//!
//! [`FunctionHooks`] are set up disarmed: their filter is set, nothing is patched.
//! [`FunctionHooks::arm`] registers them with ftrace, which patches the functions' entries;
//! [`FunctionHooks::disarm`] unregisters them and returns once no CPU runs the handler or the
//! trampoline any more (ftrace waits for RCU tasks grace periods). Both may sleep, and are
//! serialised by the hooks' own mutex.

use crate::bindings;
use crate::kernel_ext::kcrate::{
    alloc::KVec, error::to_result, new_mutex, sync::Mutex, types::Opaque,
};
use crate::kernel_ext::prelude::*;
use core::ptr::NonNull;
use raw::{ftrace_free_filter, register_ftrace_function, unregister_ftrace_function};

/// An ftrace callback (`ftrace_func_t`).
type Callback =
    unsafe extern "C" fn(c_ulong, c_ulong, *mut bindings::ftrace_ops, *mut bindings::ftrace_regs);

/// What [`FunctionHooks`] do at the entry of a hooked function.
pub(crate) trait FunctionHooksHandler: Send + Sync {
    /// Runs at the entry of a hooked function, before its body, in whatever context the
    /// function was called in, with preemption as its caller had it. ftrace does not guard it
    /// against recursion: it must not call a hooked function (it would run again, nested).
    fn hit(&self, entry: &mut FunctionEntry<'_>);

    /// Whether [`FunctionHooksHandler::hit`] is to run for this entry: a first test, inlined
    /// into the ftrace callback before the entry is described, for handlers that let most
    /// calls go (context as for `hit`).
    #[inline(always)]
    fn wanted(&self) -> bool {
        true
    }
}

/// The entry of a hooked function, as the handler sees it.
pub(crate) struct FunctionEntry<'a> {
    /// The function's ftrace location (its patched call).
    ip: usize,
    /// The return address: where in its caller the function was called from.
    parent_ip: usize,
    fregs: *mut bindings::ftrace_regs,
    /// The hooks' functions, as given to [`FunctionHooks::register_disarmed`].
    functions: &'a [usize],
    /// The hooks may send the call elsewhere ([`FunctionEntry::redirect`]).
    may_redirect: bool,
}

impl FunctionEntry<'_> {
    /// The index of the hooked function in the addresses the hooks were registered with.
    pub(crate) fn index(&self) -> Option<usize> {
        self.functions.iter().position(|&ip| ip == self.ip)
    }

    /// The return address of the call: an address in the function's caller.
    pub(crate) fn parent_ip(&self) -> usize {
        self.parent_ip
    }

    /// Argument `n` of the call (0 to 5: the integer and pointer arguments passed in
    /// registers on both architectures), as ftrace saved it (it saves the argument registers
    /// without `FTRACE_OPS_FL_SAVE_REGS`; [`crate::arch::ftrace_arg`]).
    #[inline(always)]
    pub(crate) fn arg(&self, n: usize) -> usize {
        // SAFETY: `fregs` is the valid `struct ftrace_regs` ftrace passed to the callback,
        // alive for `self`'s lifetime, which does not outlive the callback.
        unsafe { crate::arch::ftrace_arg(self.fregs, n) }
    }

    /// Makes the call run the function at `target` instead of the hooked one, with the same
    /// arguments and return address: the caller gets `target`'s return value. Fails with
    /// `EINVAL` if the hooks were not registered with `redirects`.
    ///
    /// # Safety
    ///
    /// `target` must be the address of a function with the hooked function's signature and
    /// calling convention, whose code stays in memory until every call sent to it has
    /// returned: the hooks' owner must wait for the calls in flight before unloading it
    /// ([`FunctionHooks::disarm`] only waits until no call is being redirected any more).
    pub(crate) unsafe fn redirect(&mut self, target: usize) -> Result {
        if !self.may_redirect {
            return Err(EINVAL);
        }
        // SAFETY: `fregs` is valid (see `arg`); the hooks were registered with
        // `FTRACE_OPS_FL_IPMODIFY`, so ftrace resumes at the instruction pointer set here;
        // the target is fit to run the call by the caller's guarantee.
        unsafe { bindings::memmon_ftrace_regs_set_ip(self.fregs, target) };
        Ok(())
    }
}

/// An ftrace callback on the entry of some kernel functions, given by their ftrace locations.
///
/// The `ftrace_ops`, the handler and the functions live in one allocation, freed at drop once
/// ftrace has let go of the ops. If ftrace refuses to unregister armed hooks (`ENODEV` once
/// it has disabled itself after an anomaly, `ftrace_disabled`), the functions stay patched to
/// call the ops: the allocation, and whatever the handler owns, is then leaked, never freed.
///
/// # Invariants
///
/// `inner` points to a pinned [`HooksInner`] allocated by [`FunctionHooks::register_disarmed`]
/// and owned by `self`; its `raw` has its filter set (to `functions`) until `self` frees it,
/// and is registered with ftrace exactly while its `armed` is true.
pub(crate) struct FunctionHooks<H: FunctionHooksHandler> {
    inner: NonNull<HooksInner<H>>,
}

/// What [`FunctionHooks`] own: what ftrace uses while they are registered.
#[pin_data]
struct HooksInner<H: FunctionHooksHandler> {
    handler: H,
    functions: KVec<usize>,
    may_redirect: bool,
    /// Whether `raw` is registered; held while registering and unregistering it.
    #[pin]
    armed: Mutex<bool>,
    #[pin]
    raw: Opaque<bindings::ftrace_ops>,
}

// SAFETY: The ftrace_ops is only touched by ftrace after its filter is set, which allows
// registering and unregistering from any thread (under `armed`); `H` is `Send`.
unsafe impl<H: FunctionHooksHandler> Send for FunctionHooks<H> {}
// SAFETY: `&FunctionHooks` gives access to nothing but `H`, which is `Sync`, to the
// functions' addresses, which are not changed after initialisation, and to `arm` and
// `disarm`, serialised by the `armed` mutex.
unsafe impl<H: FunctionHooksHandler> Sync for FunctionHooks<H> {}

impl<H: FunctionHooksHandler> FunctionHooks<H> {
    /// Hooks the entries of `functions` (ftrace locations, as [`ftrace_location`] gives them),
    /// disarmed. With `redirects`, the handler may send calls elsewhere
    /// ([`FunctionEntry::redirect`]): the ops is registered with `FTRACE_OPS_FL_IPMODIFY`,
    /// which is exclusive: ftrace refuses (`EBUSY`) to arm the hooks while another user that
    /// modifies the instruction pointer (a live patch, a kprobe with a post handler) hooks one
    /// of the functions, and refuses that user while the hooks are armed. Hooks without
    /// `redirects` share the functions with any other ftrace user.
    pub(crate) fn register_disarmed(
        functions: KVec<usize>,
        redirects: bool,
        handler: H,
    ) -> Result<Self> {
        let inner = KBox::pin_init(
            try_pin_init!(HooksInner {
                handler,
                functions,
                may_redirect: redirects,
                armed <- new_mutex!(false),
                raw <- Opaque::try_ffi_init(move |slot: *mut bindings::ftrace_ops| {
                    // SAFETY: `slot` is valid for writes and pinned until `drop`, which
                    // frees the filter set here.
                    unsafe { raw::init_ops(slot, Self::callback, redirects, functions) }
                }),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: The allocation is not moved out of: `drop` gives it back to `KBox` pinned.
        let inner = KBox::into_raw(unsafe { Pin::into_inner_unchecked(inner) });
        // INVARIANT: allocated and pinned, filter set, not registered (`armed` false).
        Ok(Self {
            // SAFETY: `KBox::into_raw` gives a non-null pointer.
            inner: unsafe { NonNull::new_unchecked(inner) },
        })
    }

    fn inner(&self) -> &HooksInner<H> {
        // SAFETY: `inner` is valid while `self` is (the type invariants).
        unsafe { self.inner.as_ref() }
    }

    /// Arms the hooks: registers them with ftrace, which patches the functions' entries. Does
    /// nothing if they are armed. May sleep.
    pub(crate) fn arm(&self) -> Result {
        let inner = self.inner();
        let mut armed = inner.armed.lock();
        if *armed {
            return Ok(());
        }
        // SAFETY: `raw` is valid, pinned, with its filter set, and not registered (`armed`
        // is false, and held).
        to_result(unsafe { register_ftrace_function(inner.raw.get()) })?;
        // INVARIANT: registered.
        *armed = true;
        Ok(())
    }

    /// Disarms the hooks: unregisters them from ftrace, which unpatches the functions and
    /// returns once no CPU runs the callback or the trampoline. May sleep. Fails if ftrace
    /// refuses (`ENODEV` once it has disabled itself): the hooks stay armed.
    pub(crate) fn disarm(&self) -> Result {
        let inner = self.inner();
        let mut armed = inner.armed.lock();
        if !*armed {
            return Ok(());
        }
        // SAFETY: `raw` is registered (`armed` is true, and held).
        to_result(unsafe { unregister_ftrace_function(inner.raw.get()) })?;
        // INVARIANT: no longer registered.
        *armed = false;
        Ok(())
    }

    /// # Safety
    ///
    /// Called by ftrace with the `ftrace_ops` of a registered `FunctionHooks<H>` and valid
    /// registers.
    unsafe extern "C" fn callback(
        ip: c_ulong,
        parent_ip: c_ulong,
        op: *mut bindings::ftrace_ops,
        fregs: *mut bindings::ftrace_regs,
    ) {
        // SAFETY: `op` is the `raw` field of a live `HooksInner<H>` (registered only by
        // `arm`, and never freed while registered), and `Opaque` is transparent.
        let this = unsafe {
            &*kernel::container_of!(
                op.cast::<Opaque<bindings::ftrace_ops>>(),
                HooksInner<H>,
                raw
            )
        };
        if !this.handler.wanted() {
            return;
        }
        let mut entry = FunctionEntry {
            ip,
            parent_ip,
            fregs,
            functions: &this.functions,
            may_redirect: this.may_redirect,
        };
        this.handler.hit(&mut entry);
    }
}

impl<H: FunctionHooksHandler> Drop for FunctionHooks<H> {
    fn drop(&mut self) {
        if let Err(e) = self.disarm() {
            // The functions still call the ops, its callback and the handler: leak them.
            pr_err!(
                "cannot unregister function hooks (error {}): leaking them\n",
                e.to_errno()
            );
            return;
        }
        // SAFETY: `raw` is not registered (disarmed above), and its filter is set (the type
        // invariants).
        unsafe { ftrace_free_filter(self.inner().raw.get()) };
        // SAFETY: `inner` came from `KBox::into_raw` of a pinned box (the type invariants),
        // and ftrace no longer uses it.
        drop(unsafe { Pin::new_unchecked(KBox::from_raw(self.inner.as_ptr())) });
    }
}

/// Whether `addr` lies in this module's code or data: a hooked function called by a redirect
/// target of this module has its [`FunctionEntry::parent_ip`] there.
pub(crate) fn within_this_module(addr: usize) -> bool {
    // SAFETY: The helper only compares `addr` with this module's memory ranges.
    unsafe { bindings::memmon_within_this_module(addr) }
}

/// ftrace's registration calls.
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_ARGS)]
mod raw {
    use crate::bindings;
    pub(super) use crate::bindings::{
        ftrace_free_filter, register_ftrace_function, unregister_ftrace_function,
    };
    use crate::kernel_ext::kcrate::{alloc::KVec, error::to_result};
    use crate::kernel_ext::prelude::*;

    /// Sets up the ftrace_ops at `slot` to call `callback` at the entries of `functions`,
    /// with `FTRACE_OPS_FL_IPMODIFY` if it `redirects`, unregistered.
    ///
    /// # Safety
    ///
    /// `slot` must be valid for writes, and stay in place until its filter is freed
    /// (`ftrace_free_filter()`), which is left to the caller on success.
    pub(super) unsafe fn init_ops(
        slot: *mut bindings::ftrace_ops,
        callback: super::Callback,
        redirects: bool,
        functions: &[usize],
    ) -> Result {
        // SAFETY: `slot` is valid for writes; an all-zero ftrace_ops is a valid, unset one
        // (as a static one is).
        unsafe {
            slot.write(core::mem::zeroed());
            (*slot).func = Some(callback);
            if redirects {
                // CAST: the flag is a small enum constant.
                (*slot).flags = bindings::FTRACE_OPS_FL_IPMODIFY as c_ulong;
            }
        }
        let mut ips = KVec::with_capacity(functions.len(), GFP_KERNEL)?;
        for &ip in functions {
            ips.push(ip, GFP_KERNEL)?;
        }
        // CAST: at most a few dozen functions.
        let count = ips.len() as c_uint;
        // SAFETY: `slot` is a valid, unregistered ftrace_ops that stays in place until its
        // filter is freed; `ips` holds `count` addresses. Not removing (`remove` 0),
        // replacing any filter (`reset` 1).
        let ret = unsafe { bindings::ftrace_set_filter_ips(slot, ips.as_mut_ptr(), count, 0, 1) };
        to_result(ret).inspect_err(|_| {
            // SAFETY: `slot` is an unregistered ftrace_ops; freeing a filter that is partly
            // or not set is allowed.
            unsafe { ftrace_free_filter(slot) };
        })
    }
}

/// On a kernel without dynamic ftrace passing the arguments (`CONFIG_FUNCTION_TRACER` off, as
/// in a kernel with kprobes but no ftrace), where `struct ftrace_ops` is empty: setting up
/// hooks fails with `EOPNOTSUPP`, so none is ever registered, and the rest does nothing.
#[cfg(not(CONFIG_DYNAMIC_FTRACE_WITH_ARGS))]
mod raw {
    use crate::bindings;
    use crate::kernel_ext::errno::eopnotsupp;
    use crate::kernel_ext::prelude::*;

    /// Fails with `EOPNOTSUPP`: there is no ftrace to hook functions with.
    ///
    /// # Safety
    ///
    /// None: nothing is done.
    pub(super) unsafe fn init_ops(
        _slot: *mut bindings::ftrace_ops,
        _callback: super::Callback,
        _redirects: bool,
        _functions: &[usize],
    ) -> Result {
        Err(eopnotsupp())
    }

    /// # Safety
    ///
    /// None: nothing is done.
    pub(super) unsafe fn ftrace_free_filter(_ops: *mut bindings::ftrace_ops) {}

    /// # Safety
    ///
    /// None: nothing is done.
    pub(super) unsafe fn register_ftrace_function(_ops: *mut bindings::ftrace_ops) -> c_int {
        eopnotsupp().to_errno()
    }

    /// # Safety
    ///
    /// None: nothing is done.
    pub(super) unsafe fn unregister_ftrace_function(_ops: *mut bindings::ftrace_ops) -> c_int {
        0
    }
}
