// SPDX-License-Identifier: GPL-2.0

//! `pr_*!` for the kernel crate of 6.12 (`memmon_kernel_6_12`): a kernel built without Rust,
//! for which memmon is built self-contained. That crate's `pr_*!` print through `%pA`, which
//! such a kernel's `vsprintf()` refuses ("(%pA?)" and a warning); these format the message
//! into a line on the stack and print it through `%s`, with the module's prefix, as
//! `pr_fmt()` does in C. A message longer than the line is cut, ending in "...\n".
//!
//! On 7.x they are not built: the kernel crate's own `pr_*!` print.

use core::fmt::{self, Write};

/// Bytes of a message, with its terminating NUL.
const LINE: usize = 512;

/// A message formatted on the stack, cut at [`LINE`] - 1 bytes.
struct Line {
    buf: [u8; LINE],
    len: usize,
    cut: bool,
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = LINE - 1 - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        self.cut |= n < s.len();
        Ok(())
    }
}

/// Prints `args` through `format`: a `KERN_*` level, the prefix "memmon: " and one `%s`
/// (e.g. `c"\x016memmon: %s"`; printk reads the level from the format's start).
pub(crate) fn print(format: &'static core::ffi::CStr, args: fmt::Arguments<'_>) {
    let mut line = Line {
        buf: [0; LINE],
        len: 0,
        cut: false,
    };
    // `write_str` never fails: a long message is cut.
    let _ = line.write_fmt(args);
    if line.cut {
        line.len = LINE - 5;
        line.buf[line.len..line.len + 4].copy_from_slice(b"...\n");
        line.len += 4;
    }
    line.buf[line.len] = 0;
    // SAFETY: `format` and `line.buf` are NUL-terminated and live through the call; the
    // format takes one string.
    unsafe { kernel::bindings::_printk(format.as_ptr().cast(), line.buf.as_ptr()) };
}

/// An argument of a message as 7.x's `kernel::fmt!` passes it: itself, except a `CStr`,
/// which `core::fmt` does not display, shown as its text (by autoref: [`AsCStr`] applies to
/// a `CStr` before [`AsItself`] to anything).
macro_rules! arg {
    ($arg:expr) => {{
        #[allow(unused_imports)]
        use $crate::kernel_ext::print::{AsCStr as _, AsItself as _};
        (&$crate::kernel_ext::print::Arg(&$arg)).arg()
    }};
}
pub(crate) use arg;

/// An argument, for [`arg!`].
pub(crate) struct Arg<'a, T: ?Sized>(pub(crate) &'a T);

/// A `CStr` argument: its text.
pub(crate) trait AsCStr<'a> {
    /// The text.
    fn arg(&self) -> CStrText<'a>;
}

impl<'a> AsCStr<'a> for Arg<'a, &core::ffi::CStr> {
    fn arg(&self) -> CStrText<'a> {
        CStrText(self.0)
    }
}

impl<'a> AsCStr<'a> for Arg<'a, core::ffi::CStr> {
    fn arg(&self) -> CStrText<'a> {
        CStrText(self.0)
    }
}

/// Any other argument: itself.
pub(crate) trait AsItself<'a, T: ?Sized> {
    /// The argument.
    fn arg(&self) -> &'a T;
}

impl<'a, T: ?Sized> AsItself<'a, T> for &Arg<'a, T> {
    fn arg(&self) -> &'a T {
        self.0
    }
}

/// A `CStr` displayed as its text (bytes that are not UTF-8 as `?`).
pub(crate) struct CStrText<'a>(&'a core::ffi::CStr);

impl fmt::Display for CStrText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.to_str() {
            Ok(text) => f.write_str(text),
            Err(_) => f.write_str("?"),
        }
    }
}

/// `pr_err!` (`KERN_ERR`).
macro_rules! pr_err {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {
        $crate::kernel_ext::print::print(
            c"\x013memmon: %s",
            format_args!($fmt $(, $crate::kernel_ext::print::arg!($arg))*),
        )
    };
}

/// `pr_warn!` (`KERN_WARNING`).
macro_rules! pr_warn {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {
        $crate::kernel_ext::print::print(
            c"\x014memmon: %s",
            format_args!($fmt $(, $crate::kernel_ext::print::arg!($arg))*),
        )
    };
}

/// `pr_info!` (`KERN_INFO`).
macro_rules! pr_info {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {
        $crate::kernel_ext::print::print(
            c"\x016memmon: %s",
            format_args!($fmt $(, $crate::kernel_ext::print::arg!($arg))*),
        )
    };
}

pub(crate) use {pr_err, pr_info, pr_warn};
