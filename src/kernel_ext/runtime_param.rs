// SPDX-License-Identifier: GPL-2.0

//! Module parameters that root can also change at run time through
//! `/sys/module/<module>/parameters/<name>`, with a check of every value written: what
//! `module_param_cb()` declares in C. The `module!` parameters are set once, at load.
//!
//! [`runtime_param!`] declares the `AtomicU32` that holds the value, its `kernel_param` in
//! `__param`, and the `parmtype=` and `parm=` strings `modinfo` shows, in `.modinfo`.

/// The bytes of `text` as an array of its length, for a `.modinfo` string built at compile
/// time.
pub(crate) const fn modinfo_bytes<const N: usize>(text: &str) -> [u8; N] {
    let bytes = text.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N && i < bytes.len() {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

/// Declares a `u32` module parameter, readable by everyone and writable by root at run time.
///
/// `check` is a `fn(Option<u32>, &str) -> Result` called with the parsed value (`None` if
/// the text is not a number) and the text written, before the value is stored; an error is
/// returned to the writer (or fails the load) and the value is left as it was. The check
/// logs why it refused.
///
/// ```ignore
/// runtime_param! {
///     /// The depth.
///     static DEPTH: u32 = 0;
///     name: "depth",
///     description: "Entries per record (0-64, 0: off)",
///     check: check_depth,
/// }
/// ```
macro_rules! runtime_param {
    (
        $(#[$meta:meta])*
        static $var:ident: u32 = $default:expr;
        name: $name:literal,
        description: $description:literal,
        check: $check:path $(,)?
    ) => {
        $(#[$meta])*
        static $var: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new($default);

        const _: () = {
            use crate::bindings;
            use crate::kernel_ext::prelude::*;

            /// `kernel_param_ops.set`: at load and on writes to sysfs.
            ///
            /// # Safety
            ///
            /// Called by the module parameter code with a NUL-terminated value.
            unsafe extern "C" fn set(
                val: *const c_char,
                _param: *const bindings::kernel_param,
            ) -> c_int {
                let mut value: c_uint = 0;
                // SAFETY: `val` is a NUL-terminated string; `value` is valid for writes.
                let ret = unsafe { bindings::kstrtouint(val, 0, &mut value) };
                // SAFETY: `val` is a NUL-terminated string.
                let text = unsafe { kernel::str::CStr::from_char_ptr(val) };
                let text = text.to_str().unwrap_or("?").trim_end();
                let parsed = (ret == 0).then_some(value);
                match $check(parsed, text) {
                    Ok(()) => {
                        $var.store(value, core::sync::atomic::Ordering::Relaxed);
                        0
                    }
                    Err(e) => e.to_errno(),
                }
            }

            static OPS: bindings::kernel_param_ops = bindings::kernel_param_ops {
                flags: 0,
                set: Some(set),
                get: Some(bindings::param_get_uint),
                free: None,
            };

            #[link_section = "__param"]
            #[used(compiler)]
            static PARAM: $crate::kernel_ext::module_param::KernelParam =
                $crate::kernel_ext::module_param::KernelParam::new(bindings::kernel_param {
                    name: concat!($name, "\0").as_ptr().cast(),
                    // `__this_module` is set up by the kernel at load time and stays until
                    // the module is unloaded.
                    mod_: &raw mut bindings::__this_module,
                    ops: core::ptr::from_ref(&OPS),
                    // Readable by everyone, writable by root.
                    perm: 0o644,
                    level: -1,
                    flags: 0,
                    __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 {
                        // `param_get_uint` reads an unsigned int here; an `AtomicU32` has its
                        // layout.
                        arg: core::ptr::from_ref(&$var).cast_mut().cast(),
                    },
                });

            // What `modinfo` shows of the parameter, as `module_param()` and
            // `MODULE_PARM_DESC()` record it for a loadable module.
            const PARMTYPE_TEXT: &str = concat!("parmtype=", $name, ":uint\0");
            #[link_section = ".modinfo"]
            #[used(compiler)]
            static PARMTYPE: [u8; PARMTYPE_TEXT.len()] =
                $crate::kernel_ext::runtime_param::modinfo_bytes(PARMTYPE_TEXT);
            const PARM_TEXT: &str = concat!("parm=", $name, ":", $description, "\0");
            #[link_section = ".modinfo"]
            #[used(compiler)]
            static PARM: [u8; PARM_TEXT.len()] =
                $crate::kernel_ext::runtime_param::modinfo_bytes(PARM_TEXT);
        };
    };
}

pub(crate) use runtime_param;
