// SPDX-License-Identifier: GPL-2.0

//! Capability checks (`linux/capability.h`): of the current task, and of the task that
//! opened a file (`file->f_cred`), in the initial user namespace.

use crate::bindings;
use crate::kernel_ext::kcrate::fs::LocalFile;

/// A capability (`CAP_*`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Capability(u32);

impl Capability {
    /// `CAP_SYS_ADMIN`.
    pub(crate) const SYS_ADMIN: Self = Self(bindings::CAP_SYS_ADMIN);

    /// Whether the current task has it in the initial user namespace, now (`capable()`:
    /// counted as used, and audited, as the kernel's own checks are).
    pub(crate) fn held_by_current(self) -> bool {
        // CAST: capability numbers are below 64.
        // SAFETY: `capable` has no preconditions; it only reads the current task's creds.
        unsafe { bindings::capable(self.0 as i32) }
    }

    /// Whether the task that opened `file` had it in the initial user namespace when it
    /// opened it (`file_ns_capable()` on `file->f_cred`): what a privileged write through a
    /// file passed to, or kept by, a less privileged task does not have.
    pub(crate) fn held_by_opener(self, file: &LocalFile) -> bool {
        // CAST: capability numbers are below 64.
        // SAFETY: `file` is valid for the call (a reference to it is held), and so are its
        // `f_cred` and `init_user_ns`, which is static; `file_ns_capable` only reads them.
        unsafe {
            bindings::file_ns_capable(
                file.as_ptr(),
                &raw mut bindings::init_user_ns,
                self.0 as i32,
            )
        }
    }
}
