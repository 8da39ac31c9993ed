// SPDX-License-Identifier: GPL-2.0

//! memmon's prelude: the kernel crate's, and, on 6.12's kernel crate (`memmon_kernel_6_12`),
//! what 7.x's prelude has that 6.12's lacks or names differently: the C types, `CStr` as
//! `core::ffi::CStr` (6.12's is the crate's own) with the methods 7.x's `CStrExt` gives it,
//! and `pr_*!` that print without `%pA` (`kernel_ext::print`). On 7.x it is exactly the
//! kernel crate's prelude.

pub(crate) use kernel::prelude::*;

#[cfg(memmon_kernel_6_12)]
pub(crate) use super::print::{pr_err, pr_info, pr_warn};
#[cfg(memmon_kernel_6_12)]
pub(crate) use core::ffi::CStr;
#[cfg(memmon_kernel_6_12)]
pub(crate) use kernel::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void};
#[cfg(memmon_kernel_6_12)]
#[allow(unused_imports)] // Used by the modules that glob-import this prelude.
pub(crate) use CStrExt as _;

/// 7.x's `build_error!`.
#[cfg(memmon_kernel_6_12)]
macro_rules! build_error {
    ($msg:expr) => {
        kernel::build_error($msg)
    };
}
#[cfg(memmon_kernel_6_12)]
pub(crate) use build_error;

/// What 7.x's `kernel::str::CStrExt` gives `core::ffi::CStr` and memmon uses (6.12).
#[cfg(memmon_kernel_6_12)]
pub(crate) trait CStrExt {
    /// The string at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a NUL-terminated string valid for `'a`.
    unsafe fn from_char_ptr<'a>(ptr: *const c_char) -> &'a Self;
    /// The string as a C pointer.
    fn as_char_ptr(&self) -> *const c_char;
}

#[cfg(memmon_kernel_6_12)]
impl CStrExt for CStr {
    unsafe fn from_char_ptr<'a>(ptr: *const c_char) -> &'a Self {
        // SAFETY: The caller's contract.
        unsafe { CStr::from_ptr(ptr.cast()) }
    }

    fn as_char_ptr(&self) -> *const c_char {
        self.as_ptr().cast()
    }
}

#[cfg(memmon_kernel_6_12)]
pub(crate) use super::kcrate::LockClassKeyExt as _;
#[cfg(memmon_kernel_6_12)]
pub(crate) use compat::{ArcExt as _, LockExt as _, OpaqueExt as _, TaskExt as _, VecExt as _};

/// What 7.x's kernel crate has on `Vec`, `Task`, `Arc` and `Lock` that 6.12's lacks, as
/// extension traits with 7.x's names and signatures.
#[cfg(memmon_kernel_6_12)]
mod compat {
    use kernel::{
        alloc::{Allocator, Vec},
        bindings,
        sync::{
            lock::{Backend, Guard, Lock},
            Arc,
        },
        task::Task,
    };

    /// 7.x's `Vec` methods.
    pub(crate) trait VecExt<T> {
        /// Drops every element.
        fn clear(&mut self);
        /// Drops the elements from `len` on.
        fn truncate(&mut self, len: usize);
        /// Keeps the elements for which `f` is true, in order.
        fn retain(&mut self, f: impl FnMut(&mut T) -> bool);
        /// Removes and gives the element at `i`, shifting the rest down; `Err(())` out of
        /// bounds.
        fn remove(&mut self, i: usize) -> Result<T, ()>;
        /// Appends `v` if there is room, else gives it back.
        fn push_within_capacity(&mut self, v: T) -> Result<(), T>;
        /// Inserts `v` at `i` if there is room and `i <= len`, else gives it back.
        fn insert_within_capacity(&mut self, i: usize, v: T) -> Result<(), T>;
    }

    impl<T, A: Allocator> VecExt<T> for Vec<T, A> {
        fn clear(&mut self) {
            self.truncate(0);
        }

        fn truncate(&mut self, len: usize) {
            let old = self.len();
            if len >= old {
                return;
            }
            // SAFETY: The elements from `len` to `old` are initialised; the length is set
            // first, so that a panicking drop leaks rather than double-drops.
            unsafe {
                self.set_len(len);
                let tail =
                    core::ptr::slice_from_raw_parts_mut(self.as_mut_ptr().add(len), old - len);
                core::ptr::drop_in_place(tail);
            }
        }

        fn retain(&mut self, mut f: impl FnMut(&mut T) -> bool) {
            let len = self.len();
            let base = self.as_mut_ptr();
            // SAFETY: While walking, the length is 0: an element is either moved down to
            // `kept` or dropped, once each; the first `kept` are initialised at the end.
            unsafe {
                self.set_len(0);
                let mut kept = 0;
                for i in 0..len {
                    let p = base.add(i);
                    if f(&mut *p) {
                        if kept != i {
                            core::ptr::copy_nonoverlapping(p, base.add(kept), 1);
                        }
                        kept += 1;
                    } else {
                        core::ptr::drop_in_place(p);
                    }
                }
                self.set_len(kept);
            }
        }

        fn remove(&mut self, i: usize) -> Result<T, ()> {
            let len = self.len();
            if i >= len {
                return Err(());
            }
            // SAFETY: `i < len`: the element is read out, the rest shifted down over it, and
            // the length lowered by one.
            unsafe {
                let p = self.as_mut_ptr().add(i);
                let v = core::ptr::read(p);
                core::ptr::copy(p.add(1), p, len - i - 1);
                self.set_len(len - 1);
                Ok(v)
            }
        }

        fn push_within_capacity(&mut self, v: T) -> Result<(), T> {
            let len = self.len();
            if len >= self.capacity() {
                return Err(v);
            }
            // SAFETY: `len < capacity`: the slot is allocated and free.
            unsafe {
                self.as_mut_ptr().add(len).write(v);
                self.set_len(len + 1);
            }
            Ok(())
        }

        fn insert_within_capacity(&mut self, i: usize, v: T) -> Result<(), T> {
            let len = self.len();
            if i > len || len >= self.capacity() {
                return Err(v);
            }
            // SAFETY: `i <= len < capacity`: the elements from `i` move up one slot within
            // the allocation, and `v` fills the gap.
            unsafe {
                let p = self.as_mut_ptr().add(i);
                core::ptr::copy(p, p.add(1), len - i);
                p.write(v);
                self.set_len(len + 1);
            }
            Ok(())
        }
    }

    /// 7.x's `Task::current_raw` and `Task::as_ptr`.
    pub(crate) trait TaskExt {
        /// The current task.
        fn current_raw() -> *mut bindings::task_struct;
        /// The task's `struct task_struct`.
        fn as_ptr(&self) -> *mut bindings::task_struct;
    }

    impl TaskExt for Task {
        fn current_raw() -> *mut bindings::task_struct {
            crate::arch::current_task()
        }

        fn as_ptr(&self) -> *mut bindings::task_struct {
            // `Task` is a transparent wrapper of its `struct task_struct`.
            core::ptr::from_ref(self).cast_mut().cast()
        }
    }

    /// 7.x's `Arc::as_ptr`.
    pub(crate) trait ArcExt<T> {
        /// The address of the shared value.
        fn as_ptr(this: &Self) -> *const T;
    }

    impl<T> ArcExt<T> for Arc<T> {
        fn as_ptr(this: &Self) -> *const T {
            core::ptr::from_ref::<T>(this)
        }
    }

    /// 7.x's `Lock::try_lock`.
    pub(crate) trait LockExt<T, B: Backend> {
        /// The lock if it is free now, else `None`.
        fn try_lock(&self) -> Option<Guard<'_, T, B>>;
    }

    impl<T> LockExt<T, kernel::sync::lock::mutex::MutexBackend>
        for Lock<T, kernel::sync::lock::mutex::MutexBackend>
    {
        fn try_lock(&self) -> Option<Guard<'_, T, kernel::sync::lock::mutex::MutexBackend>> {
            // Its address is its `struct mutex`'s: on 6.12 by rustc's field order, which
            // `killable::check_mutex_layout` checks at module load (see `raw_mutex`).
            let raw = crate::kernel_ext::killable::raw_mutex(self);
            // SAFETY: `raw` is the initialised mutex of `self` (checked at load).
            if unsafe { bindings::mutex_trylock(raw) } == 0 {
                return None;
            }
            // SAFETY: The lock was just acquired; the guard releases it.
            Some(unsafe { crate::kernel_ext::kcrate::sync::guard_of_locked(self) })
        }
    }

    /// 7.x's `Opaque::try_ffi_init`.
    pub(crate) trait OpaqueExt<T>: Sized {
        /// Initialises the value in place with `init`, which may fail.
        fn try_ffi_init<E>(
            init: impl FnOnce(*mut T) -> Result<(), E>,
        ) -> impl kernel::init::PinInit<Self, E>;
    }

    impl<T> OpaqueExt<T> for kernel::types::Opaque<T> {
        fn try_ffi_init<E>(
            init: impl FnOnce(*mut T) -> Result<(), E>,
        ) -> impl kernel::init::PinInit<Self, E> {
            // SAFETY: `Opaque<T>` is a transparent wrapper of `T`'s storage: its slot is the
            // `T`'s; `init` initialises it or fails, as the closure's contract asks; the value
            // is not moved (pinned).
            unsafe {
                kernel::init::pin_init_from_closure(move |slot: *mut Self| init(slot.cast::<T>()))
            }
        }
    }
}
