// SPDX-License-Identifier: GPL-2.0

//! The watched cgroups: the lookup of a `c:PATH` item's cgroup v2 directory, the writers'
//! list (each cgroup with the path it was written with) and the probes' list.

use super::rejected::Rejected;
use crate::kernel_ext::cgroup::Cgroup;
use crate::kernel_ext::errno::{eloop, emediumtype, enametoolong};
use crate::kernel_ext::kcrate::{
    alloc::{flags::GFP_KERNEL, KVec},
    task::Task,
};
use crate::kernel_ext::prelude::*;

/// Most cgroups watched at once.
pub(crate) const CGROUPS_MAX: usize = 64;

/// Longest path of a `c:PATH` item, in bytes: the longest the kernel looks up, `PATH_MAX`
/// bytes with the terminating NUL.
pub(crate) const CGROUP_PATH_MAX: usize = PATH_MAX - 1;

/// `PATH_MAX` of `linux/limits.h`.
const PATH_MAX: usize = 4096;

/// A watched cgroup, as the writers see it: the reference, and the path it was first written
/// with (how `watch-pids` lists it, and a name `-c:` accepts once the path leads elsewhere).
pub(super) struct WatchedCgroup {
    pub(super) cgroup: Cgroup,
    pub(super) path: KVec<u8>,
}

/// What identifies a cgroup while a reference to it is held: its address.
pub(super) fn cgroup_key(cgroup: &Cgroup) -> usize {
    // CAST: an address, only compared.
    cgroup.as_ptr() as usize
}

/// What the membership lock guards: the watched cgroups as the probes see them (the same as
/// the writers' list, each with a reference of its own), and with the lock held, the right to
/// change the `watched`, `by_pid` and `by_cgroup` bitmaps.
pub(super) struct Membership {
    /// Allocated for [`CGROUPS_MAX`] at load: adding one never allocates under the lock.
    pub(super) cgroups: KVec<Cgroup>,
}

impl Membership {
    /// Whether the process of `task` is in a watched cgroup (not removed) or below one.
    pub(super) fn has_process(&self, task: &Task) -> bool {
        self.cgroups
            .iter()
            .any(|cgroup| !cgroup.is_dead() && cgroup.has_process(task))
    }
}

/// The cgroup v2 directory at `path` (the PATH of `c:PATH`, in the writer's mount
/// namespace, and in its cgroup namespace), with a reference taken. Each refusal has an
/// errno of its own, so that the writer can tell why without the kernel log.
pub(super) fn resolve_cgroup(path: &[u8]) -> Result<Cgroup, Rejected> {
    let invalid = |why| Rejected { error: EINVAL, why };
    if path.first() != Some(&b'/') {
        return Err(invalid("not an absolute path (c:/sys/fs/cgroup/...)"));
    }
    if path.len() > CGROUP_PATH_MAX {
        return Err(Rejected {
            error: enametoolong(),
            why: "a path longer than 4095 bytes (PATH_MAX)",
        });
    }
    if path.contains(&0) {
        return Err(invalid("a NUL byte in the path"));
    }
    let mut bytes = KVec::with_capacity(path.len() + 1, GFP_KERNEL)?;
    bytes.extend_from_slice(path, GFP_KERNEL)?;
    bytes.push(0, GFP_KERNEL)?;
    let path = CStr::from_bytes_with_nul(&bytes).map_err(|_| invalid("a NUL byte in the path"))?;
    Cgroup::from_dir(path).map_err(|error| {
        let why = if error == ENOENT {
            "no such directory (or a cgroup outside the writer's cgroup namespace)"
        } else if error == ENOTDIR {
            "not a directory"
        } else if error == emediumtype() {
            "not a cgroup v2 directory (not in a cgroup2 file system)"
        } else if error == eloop() {
            "too many symbolic links"
        } else if error == enametoolong() {
            "a name in the path too long"
        } else if error == EACCES {
            "a directory on the path cannot be searched"
        } else {
            "the path cannot be looked up"
        };
        Rejected { error, why }
    })
}
