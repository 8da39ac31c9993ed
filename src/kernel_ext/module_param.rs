// SPDX-License-Identifier: GPL-2.0

//! A module parameter's value, the same on every kernel memmon builds for.
//!
//! 6.12's kernel crate (`memmon_kernel_6_12`) has no parameters in `module!` and no
//! `kernel::module_param`: there [`load_params!`] declares memmon's load parameters itself, as
//! `module_param(NAME, uint, 0)` and `MODULE_PARM_DESC()` do in C, and [`KernelParam`] is this
//! module's.

#[cfg(not(memmon_kernel_6_12))]
use crate::kernel_ext::kcrate::module_param::ModuleParamAccess;

/// The `kernel_param` of a parameter in `__param`, shareable.
#[cfg(not(memmon_kernel_6_12))]
pub(crate) use crate::kernel_ext::kcrate::module_param::KernelParam;

/// The value of the module parameter `param`, as loaded (or its default).
///
/// FIXME(7.2): The `kernel` crate gives the value by copy from 7.3 on and by reference
/// before; use `value()` directly once 7.2 is no longer built for.
#[cfg(not(memmon_kernel_6_12))]
pub(crate) fn param_value<T: Copy>(param: &ModuleParamAccess<T>) -> T {
    #[cfg(memmon_kernel_7_3)]
    {
        param.value()
    }
    #[cfg(not(memmon_kernel_7_3))]
    {
        *param.value()
    }
}

/// The value of the load parameter `param` (6.12: [`load_params!`]'s), as loaded (or its
/// default).
#[cfg(memmon_kernel_6_12)]
pub(crate) fn param_value(param: &core::sync::atomic::AtomicU32) -> u32 {
    param.load(core::sync::atomic::Ordering::Relaxed)
}

/// The `kernel_param` of a parameter in `__param` (what 7.x's `kernel::module_param` has).
#[cfg(memmon_kernel_6_12)]
#[repr(transparent)]
pub(crate) struct KernelParam(kernel::bindings::kernel_param);

#[cfg(memmon_kernel_6_12)]
impl KernelParam {
    /// Wraps `param`.
    pub(crate) const fn new(param: kernel::bindings::kernel_param) -> Self {
        Self(param)
    }
}

// SAFETY: The kernel reads a `kernel_param` only through the module parameter code, which
// serialises its accesses (`kernel_param_lock`); memmon never touches it.
#[cfg(memmon_kernel_6_12)]
unsafe impl Sync for KernelParam {}

/// Declares `u32` load parameters (6.12): each `NAME: DEFAULT, "DESCRIPTION";` gives the static
/// `module_parameters::NAME` ([`param_value`] reads it), its `kernel_param` in `__param`
/// (set at load by the kernel's `param_ops_uint`; not in sysfs, as 7.x's) and its `parmtype=`
/// and `parm=` strings in `.modinfo`.
#[cfg(memmon_kernel_6_12)]
macro_rules! load_params {
    ($($name:ident: $default:tt, $description:tt;)*) => {
        mod module_parameters {
            $(
                #[allow(non_upper_case_globals)]
                pub(crate) static $name: core::sync::atomic::AtomicU32 =
                    core::sync::atomic::AtomicU32::new($default);
            )*
        }

        $(const _: () = {
            use crate::kernel_ext::kcrate::bindings;

            #[link_section = "__param"]
            #[used(compiler)]
            static PARAM: $crate::kernel_ext::module_param::KernelParam =
                $crate::kernel_ext::module_param::KernelParam::new(bindings::kernel_param {
                    name: concat!(stringify!($name), "\0").as_ptr().cast(),
                    // `__this_module` is set up by the kernel at load time and stays until
                    // the module is unloaded.
                    mod_: &raw mut bindings::__this_module,
                    // The kernel's, never written.
                    ops: &raw const bindings::param_ops_uint,
                    // Not in sysfs, as 7.x's `module!` parameters.
                    perm: 0,
                    level: -1,
                    flags: 0,
                    __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 {
                        // `param_ops_uint` reads and writes an unsigned int here; an
                        // `AtomicU32` has its layout.
                        arg: core::ptr::from_ref(&module_parameters::$name).cast_mut().cast(),
                    },
                });

            const PARMTYPE_TEXT: &str = concat!("parmtype=", stringify!($name), ":uint\0");
            #[link_section = ".modinfo"]
            #[used(compiler)]
            static PARMTYPE: [u8; PARMTYPE_TEXT.len()] =
                $crate::kernel_ext::runtime_param::modinfo_bytes(PARMTYPE_TEXT);
            const PARM_TEXT: &str = concat!("parm=", stringify!($name), ":", $description, "\0");
            #[link_section = ".modinfo"]
            #[used(compiler)]
            static PARM: [u8; PARM_TEXT.len()] =
                $crate::kernel_ext::runtime_param::modinfo_bytes(PARM_TEXT);
        };)*
    };
}

#[cfg(memmon_kernel_6_12)]
pub(crate) use load_params;
