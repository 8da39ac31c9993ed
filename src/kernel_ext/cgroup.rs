// SPDX-License-Identifier: GPL-2.0

//! cgroup v2 (`linux/cgroup.h`): a counted reference to a cgroup of the default hierarchy,
//! found by the path of its directory, and whether a process is in it; the cgroup a process
//! is in; the walk over every process (`for_each_process`).

use super::task::task_from_raw;
use crate::bindings;

use crate::kernel_ext::kcrate::{error::to_result, task::Task};
use crate::kernel_ext::prelude::*;
use core::ptr::NonNull;

/// A reference to a cgroup of the default (v2) hierarchy.
///
/// # Invariants
///
/// `ptr` holds a reference to a `struct cgroup`, dropped with `cgroup_put()` in `drop`.
pub(crate) struct Cgroup {
    ptr: NonNull<bindings::cgroup>,
}

// SAFETY: A cgroup reference may be used and dropped from any thread: `cgroup_put()` is a
// per-CPU reference count decrement whose release runs from a work item.
unsafe impl Send for Cgroup {}
// SAFETY: `&Cgroup` only reads the cgroup's flags and ancestry, which the kernel allows from
// any context.
unsafe impl Sync for Cgroup {}

/// Whether `cgrp` is a cgroup of the default (v2) hierarchy, not of a cgroup v1 one.
///
/// # Safety
///
/// `cgrp` must point to a valid `struct cgroup` for the call (a tracepoint's argument, or one
/// the caller holds a reference to).
pub(crate) unsafe fn on_default_hierarchy(cgrp: *const bindings::cgroup) -> bool {
    // SAFETY: `cgrp` is valid for the call (the caller's contract); the helper reads its root.
    unsafe { bindings::memmon_cgroup_on_dfl(cgrp) }
}

impl Cgroup {
    /// The cgroup whose directory is `path` (absolute, symbolic links followed) in a cgroup2
    /// file system, with a reference taken. Fails with `ENOENT` if there is no such file (or
    /// the cgroup is outside the caller's cgroup namespace), `ENOTDIR` if it is not a
    /// directory, `EMEDIUMTYPE` if it is not in a cgroup2 file system (cgroup v1 included),
    /// or another error of the path lookup.
    pub(crate) fn from_dir(path: &CStr) -> Result<Self> {
        let mut ptr = core::ptr::null_mut();
        // SAFETY: `path` is NUL-terminated and valid for the call; on success the helper
        // stores a cgroup with a reference taken, which `Self` owns from then on.
        to_result(unsafe { bindings::memmon_cgroup_get_dir(path.as_char_ptr(), &mut ptr) })?;
        let ptr = NonNull::new(ptr).ok_or(ENOENT)?;
        // INVARIANT: the helper took a reference on `ptr`.
        Ok(Self { ptr })
    }

    /// Whether the cgroup was removed (`rmdir`): no task can enter it any more, and none is
    /// left in it.
    pub(crate) fn is_dead(&self) -> bool {
        // SAFETY: `ptr` is referenced (type invariants), so valid.
        unsafe { bindings::memmon_cgroup_is_dead(self.ptr.as_ptr()) }
    }

    /// Whether the process of `task` (its thread-group leader) is in this cgroup or below;
    /// false for a task already released, whose leader may be gone.
    pub(crate) fn has_process(&self, task: &Task) -> bool {
        // SAFETY: `ptr` is referenced (type invariants); `task` is valid; the helper reads its
        // leader under RCU only while `task` is alive (`pid_alive`).
        unsafe { bindings::memmon_cgroup_has_process(self.ptr.as_ptr(), task.as_ptr()) }
    }

    /// The `struct cgroup`, valid while `self` is.
    pub(crate) fn as_ptr(&self) -> *mut bindings::cgroup {
        self.ptr.as_ptr()
    }

    /// Whether `self` and `other` are the same cgroup.
    pub(crate) fn is(&self, other: &Cgroup) -> bool {
        self.ptr == other.ptr
    }
}

impl Clone for Cgroup {
    fn clone(&self) -> Self {
        // SAFETY: `ptr` is referenced (type invariants); this takes another reference.
        unsafe { bindings::memmon_cgroup_get(self.ptr.as_ptr()) };
        // INVARIANT: the reference was just taken.
        Self { ptr: self.ptr }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // SAFETY: `ptr` holds a reference (type invariants), dropped once, here.
        unsafe { bindings::memmon_cgroup_put(self.ptr.as_ptr()) };
    }
}

/// The cgroup v2 a process is in, as [`process_cgroup`] finds it.
pub(crate) struct ProcessCgroup<'a> {
    /// The cgroup's id (`cgroup_id()`): the inode number of its directory, the same in every
    /// cgroup namespace and mount.
    pub(crate) id: u64,
    /// The end of its path from the root of the hierarchy (`/`, `/a/b`), as the initial
    /// cgroup namespace sees it: all of it, or its last bytes if `cut`.
    pub(crate) path: &'a [u8],
    /// Whether the start of the path was left out.
    pub(crate) cut: bool,
}

/// The cgroup v2 of the process of `task` (its thread-group leader's), its path written to
/// the end of `buf`; `None` for a task already released. Callable in any context but NMI.
pub(crate) fn process_cgroup<'a>(task: &Task, buf: &'a mut [u8]) -> Option<ProcessCgroup<'a>> {
    let mut id = 0;
    let mut cut = false;
    // SAFETY: `task` is valid; `buf` is valid for `buf.len()` bytes of writes, the helper
    // writes at most that many, at its end, and returns how many.
    let written = unsafe {
        bindings::memmon_process_cgroup_path_tail(
            task.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut id,
            &mut cut,
        )
    };
    let buf: &'a [u8] = buf;
    let start = buf.len().checked_sub(written)?;
    let path = buf.get(start..).filter(|path| !path.is_empty())?;
    Some(ProcessCgroup { id, path, cut })
}

/// Calls `f` with every process (its thread-group leader, zombies included), under the RCU
/// read lock: `f` must not sleep. The task is valid while `f` runs.
pub(crate) fn for_each_process<F: FnMut(&Task)>(mut f: F) {
    /// # Safety
    ///
    /// Called by `memmon_for_each_process` with the `F` passed below and a valid task.
    unsafe extern "C" fn visit<F: FnMut(&Task)>(
        data: *mut c_void,
        task: *mut bindings::task_struct,
    ) {
        // SAFETY: `data` is the `F` passed below, borrowed mutably for the walk only.
        let f = unsafe { &mut *data.cast::<F>() };
        // SAFETY: The walk passes a task that is valid during this call (under the RCU read
        // lock); `f` cannot keep the reference past it.
        f(unsafe { task_from_raw(task) });
    }

    // SAFETY: `visit::<F>` has the expected signature and uses `f` only during the call.
    unsafe { bindings::memmon_for_each_process(Some(visit::<F>), (&raw mut f).cast::<c_void>()) };
}
