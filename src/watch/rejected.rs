// SPDX-License-Identifier: GPL-2.0

//! Why an item of a `watch-pids` write is refused.

use crate::kernel_ext::prelude::*;

/// Why an item of a write was refused: the error the write fails with, and the reason the
/// kernel log gives.
pub(super) struct Rejected {
    pub(super) error: Error,
    pub(super) why: &'static str,
}

impl From<Error> for Rejected {
    fn from(error: Error) -> Self {
        let why = if error == ESRCH {
            "no such process"
        } else if error == ENOMEM {
            "out of memory"
        } else {
            "not a pid (N, +N, -N, 0) nor a cgroup (c:PATH, -c:PATH)"
        };
        Self { error, why }
    }
}

impl From<kernel::alloc::AllocError> for Rejected {
    fn from(_: kernel::alloc::AllocError) -> Self {
        ENOMEM.into()
    }
}
