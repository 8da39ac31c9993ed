// SPDX-License-Identifier: GPL-2.0

//! Error codes that the `kernel` crate of some kernels memmon builds for does not name
//! (7.2's `kernel::error::code` lacks these four), made from the C constants on all of them.
//!
//! FIXME(7.2): Use `kernel::error::code`'s once 7.2 is no longer built for.

use crate::bindings;

use crate::kernel_ext::kcrate::{error::Error, ffi::c_int};

/// `errno` as an [`Error`]: `errno` is one of the positive `E*` constants below 4096.
fn from_positive(errno: u32) -> Error {
    // CAST: the `E*` constants are small positive numbers; `from_errno` takes them negated.
    Error::from_errno(-(errno as c_int))
}

/// Operation not supported.
pub(crate) fn eopnotsupp() -> Error {
    from_positive(bindings::EOPNOTSUPP)
}

/// File name too long.
pub(crate) fn enametoolong() -> Error {
    from_positive(bindings::ENAMETOOLONG)
}

/// Wrong medium type (not a cgroup2 file system, as `cgroup_get_from_fd()` says).
pub(crate) fn emediumtype() -> Error {
    from_positive(bindings::EMEDIUMTYPE)
}

/// Too many symbolic links.
pub(crate) fn eloop() -> Error {
    from_positive(bindings::ELOOP)
}
