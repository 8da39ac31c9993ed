// SPDX-License-Identifier: GPL-2.0

//! The kernel crate as memmon uses it: `kernel::*`, and, on 6.12's kernel crate
//! (`memmon_kernel_6_12`: Debian stable's kernel, built self-contained), the parts of 7.x's
//! that 6.12's lacks, written over the bindings with 7.x's names and signatures: `cpu`
//! (`nr_cpu_ids`, `CpuId::current`), `fs` (`File`, `LocalFile`, `O_NONBLOCK`), `sync::atomic`
//! (`Atomic<T>` and its orderings), `sync::rcu` (`read_lock`),
//! `sync::barrier` (`smp_mb`), `sync::MutexGuard` and `time::{delay::fsleep, Delta}`. On 7.x
//! it is exactly `kernel::*`.

pub(crate) use kernel::*;

#[cfg(memmon_kernel_6_12)]
pub(crate) use compat::{cpu, fs, static_lock_class, sync, task, time, uaccess, LockClassKeyExt};

/// The `path` of the open file `file` (`&file->f_path`, in a union of the struct from 7.1 on).
///
/// # Safety
///
/// `file` is a valid `struct file`, referenced for as long as the result is used.
pub(crate) unsafe fn file_path(file: *mut bindings::file) -> *const bindings::path {
    // SAFETY: `file` is valid (the caller's contract); only the field's address is taken.
    #[cfg(not(memmon_kernel_6_12))]
    let path = unsafe { &raw const (*file).__bindgen_anon_1.f_path };
    // SAFETY: As above.
    #[cfg(memmon_kernel_6_12)]
    let path = unsafe { &raw const (*file).f_path };
    path
}

/// Reads all of `input` into `out` (7.x's `UserSliceReader::read_all` into a `KVVec`, which
/// 6.12's takes only into a `KVec`).
pub(crate) fn read_all_into(
    input: kernel::uaccess::UserSliceReader,
    out: &mut kernel::alloc::KVVec<u8>,
) -> kernel::error::Result {
    #[cfg(not(memmon_kernel_6_12))]
    {
        input.read_all(out, kernel::alloc::flags::GFP_KERNEL)
    }
    #[cfg(memmon_kernel_6_12)]
    {
        let mut input = input;
        let start = out.len();
        out.extend_with(input.len(), 0, kernel::alloc::flags::GFP_KERNEL)?;
        input.read_slice(&mut out.as_mut_slice()[start..])
    }
}

#[cfg(memmon_kernel_6_12)]
mod compat {
    use core::pin::Pin;
    use kernel::sync::LockClassKey;

    /// 7.x's `static_lock_class!()`: a pinned static lock class.
    macro_rules! static_lock_class {
        () => {
            core::pin::Pin::static_ref(kernel::static_lock_class!())
        };
    }
    pub(crate) use static_lock_class;

    /// 7.x's `LockClassKey::as_ptr`, on the pinned key [`static_lock_class!`] gives.
    pub(crate) trait LockClassKeyExt {
        /// The `struct lock_class_key`.
        fn as_ptr(self) -> *mut kernel::bindings::lock_class_key;
    }

    impl LockClassKeyExt for Pin<&'static LockClassKey> {
        fn as_ptr(self) -> *mut kernel::bindings::lock_class_key {
            // `LockClassKey` is a transparent wrapper of its `struct lock_class_key`.
            core::ptr::from_ref::<LockClassKey>(self.get_ref())
                .cast_mut()
                .cast()
        }
    }

    /// 7.x's `kernel::task`: 6.12's, with `Pid` public.
    pub(crate) mod task {
        pub(crate) use kernel::task::*;

        /// A process id.
        pub(crate) type Pid = kernel::bindings::pid_t;
    }

    /// 7.x's `kernel::uaccess`: 6.12's, whose user pointer is a plain `usize`.
    pub(crate) mod uaccess {
        pub(crate) use kernel::uaccess::*;

        /// 7.x's `UserPtr::from_ptr`, giving 6.12's user address.
        pub(crate) struct UserPtr;

        impl UserPtr {
            /// The user address of `ptr`.
            pub(crate) fn from_ptr(ptr: *mut kernel::ffi::c_void) -> usize {
                ptr as usize
            }
        }
    }
    /// 7.x's `kernel::cpu`.
    pub(crate) mod cpu {
        use kernel::bindings;

        /// The number of possible CPU ids (`nr_cpu_ids`).
        #[inline]
        pub(crate) fn nr_cpu_ids() -> u32 {
            // SAFETY: `nr_cpu_ids` is set at boot, before modules load, and not changed after.
            unsafe { bindings::nr_cpu_ids }
        }

        /// A CPU id.
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub(crate) struct CpuId(u32);

        impl CpuId {
            /// The CPU this code runs on (`raw_smp_processor_id()`): stable only while
            /// preemption or migration is disabled.
            #[inline]
            pub(crate) fn current() -> Self {
                // SAFETY: No preconditions.
                let cpu = unsafe { crate::bindings::memmon_raw_smp_processor_id() };
                // CAST: a CPU id is below `nr_cpu_ids`, a `u32`.
                Self(cpu as u32)
            }

            /// The id as a `u32`.
            #[inline]
            pub(crate) fn as_u32(self) -> u32 {
                self.0
            }
        }
    }

    /// 7.x's `kernel::fs`: the two file views memmon's procfs files take.
    pub(crate) mod fs {
        use kernel::{bindings, types::Opaque};

        /// A `struct file` whose reference count the caller holds (7.x's `File`).
        #[repr(transparent)]
        pub(crate) struct File(LocalFile);

        /// A `struct file` used from the task that holds it (7.x's `LocalFile`).
        #[repr(transparent)]
        pub(crate) struct LocalFile(Opaque<bindings::file>);

        impl File {
            /// The `File` at `ptr`.
            ///
            /// # Safety
            ///
            /// `ptr` is a valid `struct file` that stays valid for `'a`.
            pub(crate) unsafe fn from_raw_file<'a>(ptr: *const bindings::file) -> &'a File {
                // SAFETY: `File` is a transparent wrapper of the `struct file` at `ptr`, valid
                // for `'a` by the caller's contract.
                unsafe { &*ptr.cast() }
            }
        }

        impl core::ops::Deref for File {
            type Target = LocalFile;

            fn deref(&self) -> &LocalFile {
                &self.0
            }
        }

        impl LocalFile {
            /// The `LocalFile` at `ptr`.
            ///
            /// # Safety
            ///
            /// `ptr` is a valid `struct file` that stays valid for `'a`.
            pub(crate) unsafe fn from_raw_file<'a>(ptr: *const bindings::file) -> &'a LocalFile {
                // SAFETY: As for `File::from_raw_file`.
                unsafe { &*ptr.cast() }
            }

            /// The `struct file`.
            pub(crate) fn as_ptr(&self) -> *mut bindings::file {
                self.0.get()
            }

            /// The file's flags (`f_flags`), which `fcntl(F_SETFL)` may change at any time.
            pub(crate) fn flags(&self) -> u32 {
                // This `read_volatile` is intended to correspond to a READ_ONCE call, as in
                // 7.x's `kernel::fs::File::flags`.
                //
                // SAFETY: The file is valid (the type's invariant); `f_flags` is read as
                // `READ_ONCE()` reads it, tolerating a concurrent `fcntl()`.
                unsafe { core::ptr::addr_of!((*self.as_ptr()).f_flags).read_volatile() }
            }
        }

        /// 7.x's `kernel::fs::file`.
        pub(crate) mod file {
            /// 7.x's `kernel::fs::file::flags`.
            pub(crate) mod flags {
                /// `O_NONBLOCK`.
                pub(crate) const O_NONBLOCK: u32 = kernel::bindings::O_NONBLOCK;
            }
        }
    }

    /// 7.x's `kernel::sync`: 6.12's, and what it lacks.
    pub(crate) mod sync {
        pub(crate) use kernel::sync::*;

        /// 7.x's `MutexGuard`.
        pub(crate) type MutexGuard<'a, T> =
            kernel::sync::lock::Guard<'a, T, kernel::sync::lock::mutex::MutexBackend>;

        /// The size check of [`guard_of_locked`], evaluated by the compiler for each `T` it is
        /// used with: a build error if it fails. (`build_assert!` would not do on 6.12: the
        /// self-contained build links the `build_error` crate into the module, so a failed
        /// `build_assert!` builds, as a call to `rust_build_error()`, which panics.)
        struct GuardIsRef<'a, T>(core::marker::PhantomData<&'a T>);

        impl<'a, T> GuardIsRef<'a, T> {
            const HOLDS: () = assert!(size_of::<MutexGuard<'a, T>>() == size_of::<&'a Mutex<T>>());
        }

        /// The guard of `mutex`, which the caller has just locked (7.x's `Guard::new`, which
        /// 6.12's crate keeps private).
        ///
        /// # Safety
        ///
        /// The caller holds `mutex`'s lock and hands it to the guard, which releases it.
        pub(crate) unsafe fn guard_of_locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
            // A mutex's guard is its lock's reference and two zero-sized fields (its state,
            // `()`, and a marker): the reference's bits. Checked by the compiler.
            let () = GuardIsRef::<'_, T>::HOLDS;
            // SAFETY: The sizes match and the guard's only data is the reference; the lock is
            // held (the caller's contract), as a guard's is.
            unsafe { core::mem::transmute_copy::<&Mutex<T>, MutexGuard<'_, T>>(&mutex) }
        }

        /// 7.x's `kernel::sync::barrier`.
        pub(crate) mod barrier {
            /// A full memory barrier between CPUs (`smp_mb()`): `MFENCE` on x86_64, where
            /// the kernel's is a locked add to the stack, both full barriers.
            #[inline(always)]
            pub(crate) fn smp_mb(_: super::atomic::Full) {
                core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
            }
        }

        /// 7.x's `kernel::sync::rcu`.
        pub(crate) mod rcu {
            /// An RCU read-side critical section, until dropped. Neither `Send` nor `Sync`
            /// (the raw pointer's marker, as 7.3's `NotThreadSafe`): the section is the
            /// entering CPU's and task's, so the guard must be dropped where it was made.
            pub(crate) struct Guard(core::marker::PhantomData<*mut ()>);

            /// Enters an RCU read-side critical section (`rcu_read_lock()`).
            #[inline]
            pub(crate) fn read_lock() -> Guard {
                // SAFETY: No preconditions; `Guard::drop` leaves it.
                unsafe { crate::bindings::memmon_rcu_read_lock() };
                Guard(core::marker::PhantomData)
            }

            impl Drop for Guard {
                #[inline]
                fn drop(&mut self) {
                    // SAFETY: The section `read_lock` entered.
                    unsafe { crate::bindings::memmon_rcu_read_unlock() };
                }
            }
        }

        /// 7.x's `kernel::sync::atomic`: `Atomic<T>` over `core::sync::atomic` (what it
        /// compiles to on x86_64: plain loads and stores, locked read-modify-writes), with
        /// 7.x's orderings as types.
        pub(crate) mod atomic {
            use core::{cell::UnsafeCell, sync::atomic as core_atomic};

            /// Relaxed ordering.
            #[derive(Clone, Copy)]
            pub(crate) struct Relaxed;
            /// Acquire ordering.
            #[derive(Clone, Copy)]
            pub(crate) struct Acquire;
            /// Release ordering.
            #[derive(Clone, Copy)]
            pub(crate) struct Release;
            /// Full ordering (a full barrier around the operation).
            #[derive(Clone, Copy)]
            pub(crate) struct Full;

            /// An ordering, as `core::sync::atomic`'s.
            pub(crate) trait Ordering: Copy {
                /// For a read-modify-write.
                const RMW: core_atomic::Ordering;
            }
            impl Ordering for Relaxed {
                const RMW: core_atomic::Ordering = core_atomic::Ordering::Relaxed;
            }
            impl Ordering for Acquire {
                const RMW: core_atomic::Ordering = core_atomic::Ordering::Acquire;
            }
            impl Ordering for Release {
                const RMW: core_atomic::Ordering = core_atomic::Ordering::Release;
            }
            impl Ordering for Full {
                const RMW: core_atomic::Ordering = core_atomic::Ordering::SeqCst;
            }
            /// The orderings a load takes.
            pub(crate) trait AcquireOrRelaxed: Ordering {}
            impl AcquireOrRelaxed for Relaxed {}
            impl AcquireOrRelaxed for Acquire {}
            /// The orderings a store takes.
            pub(crate) trait ReleaseOrRelaxed: Ordering {}
            impl ReleaseOrRelaxed for Relaxed {}
            impl ReleaseOrRelaxed for Release {}

            /// A type an [`Atomic`] holds: 1, 4 or 8 bytes, every bit pattern of which that
            /// memmon stores is a valid value.
            ///
            /// # Safety
            ///
            /// The type is `Copy`, of size 1, 4 or 8 and alignment equal to its size.
            pub(crate) unsafe trait AtomicType: Copy {}
            // SAFETY: Each is 1, 4 or 8 bytes, aligned to its size, on x86_64.
            unsafe impl AtomicType for bool {}
            // SAFETY: As above.
            unsafe impl AtomicType for i32 {}
            // SAFETY: As above.
            unsafe impl AtomicType for u32 {}
            // SAFETY: As above.
            unsafe impl AtomicType for i64 {}
            // SAFETY: As above.
            unsafe impl AtomicType for u64 {}
            // SAFETY: As above.
            unsafe impl AtomicType for usize {}
            // SAFETY: As above.
            unsafe impl AtomicType for isize {}
            // SAFETY: As above.
            unsafe impl<T> AtomicType for *mut T {}

            /// The integer types, which add and subtract.
            pub(crate) trait AtomicInt: AtomicType {}
            impl AtomicInt for i32 {}
            impl AtomicInt for u32 {}
            impl AtomicInt for i64 {}
            impl AtomicInt for u64 {}
            impl AtomicInt for usize {}
            impl AtomicInt for isize {}

            /// 7.x's `Atomic<T>`.
            #[repr(transparent)]
            pub(crate) struct Atomic<T: AtomicType>(UnsafeCell<T>);

            // SAFETY: Every access to the value is atomic.
            unsafe impl<T: AtomicType> Sync for Atomic<T> {}
            // SAFETY: As above.
            unsafe impl<T: AtomicType> Send for Atomic<T> {}

            /// `v`'s bits, zero-extended.
            #[inline(always)]
            fn bits<T: AtomicType>(v: T) -> u64 {
                match size_of::<T>() {
                    1 => {
                        // SAFETY: `T` is 1 byte (`bool`): its bits are a `u8`.
                        let b = unsafe { core::mem::transmute_copy::<T, u8>(&v) };
                        u64::from(b)
                    }
                    4 => {
                        // SAFETY: `T` is 4 bytes: its bits are a `u32`.
                        let b = unsafe { core::mem::transmute_copy::<T, u32>(&v) };
                        u64::from(b)
                    }
                    _ => {
                        // SAFETY: `T` is 8 bytes (every other `AtomicType`): its bits are a
                        // `u64`.
                        unsafe { core::mem::transmute_copy::<T, u64>(&v) }
                    }
                }
            }

            /// The `T` of `bits` (as [`bits`] made them).
            #[inline(always)]
            fn value<T: AtomicType>(bits: u64) -> T {
                match size_of::<T>() {
                    1 => {
                        // CAST: the low byte, as stored.
                        let b = bits as u8;
                        // SAFETY: `T` is 1 byte; the byte is one a `T` was stored as.
                        unsafe { core::mem::transmute_copy::<u8, T>(&b) }
                    }
                    4 => {
                        // CAST: the low 4 bytes, as stored.
                        let b = bits as u32;
                        // SAFETY: `T` is 4 bytes; they are a `T`'s, as stored.
                        unsafe { core::mem::transmute_copy::<u32, T>(&b) }
                    }
                    _ => {
                        // SAFETY: `T` is 8 bytes; they are a `T`'s, as stored.
                        unsafe { core::mem::transmute_copy::<u64, T>(&bits) }
                    }
                }
            }

            /// Runs `f` on the value as the `core` atomic of its size.
            macro_rules! with_core {
                ($self:ident, $a:ident => $e:expr) => {
                    match size_of::<T>() {
                        1 => {
                            // SAFETY: `T` is 1 byte, aligned to 1: an `AtomicU8` has its
                            // layout, and every access to it is atomic.
                            let $a = unsafe { core_atomic::AtomicU8::from_ptr($self.0.get().cast()) };
                            // CAST: the byte's value.
                            u64::from($e)
                        }
                        4 => {
                            // SAFETY: `T` is 4 bytes, aligned to 4: an `AtomicU32` has its
                            // layout, and every access to it is atomic.
                            let $a = unsafe { core_atomic::AtomicU32::from_ptr($self.0.get().cast()) };
                            u64::from($e)
                        }
                        _ => {
                            // SAFETY: `T` is 8 bytes, aligned to 8: an `AtomicU64` has its
                            // layout, and every access to it is atomic.
                            let $a = unsafe { core_atomic::AtomicU64::from_ptr($self.0.get().cast()) };
                            $e
                        }
                    }
                };
            }

            impl<T: AtomicType> Atomic<T> {
                /// An atomic holding `v`.
                pub(crate) const fn new(v: T) -> Self {
                    Self(UnsafeCell::new(v))
                }

                /// The value's address.
                pub(crate) fn as_ptr(&self) -> *mut T {
                    self.0.get()
                }

                /// Loads the value.
                #[inline(always)]
                pub(crate) fn load<O: AcquireOrRelaxed>(&self, _: O) -> T {
                    let o = if O::RMW == core_atomic::Ordering::Acquire {
                        core_atomic::Ordering::Acquire
                    } else {
                        core_atomic::Ordering::Relaxed
                    };
                    value(with_core!(self, a => a.load(o)))
                }

                /// Stores `v`.
                #[inline(always)]
                pub(crate) fn store<O: ReleaseOrRelaxed>(&self, v: T, _: O) {
                    let (b, o, p) = (bits(v), O::RMW, self.0.get());
                    // CAST: each store is of the value's own bits, of its size.
                    match size_of::<T>() {
                        1 => {
                            // SAFETY: `T` is 1 byte: an `AtomicU8` has its layout, and every
                            // access to it is atomic.
                            let a = unsafe { core_atomic::AtomicU8::from_ptr(p.cast()) };
                            a.store(b as u8, o)
                        }
                        4 => {
                            // SAFETY: `T` is 4 bytes, aligned to 4: an `AtomicU32` has its
                            // layout, and every access to it is atomic.
                            let a = unsafe { core_atomic::AtomicU32::from_ptr(p.cast()) };
                            a.store(b as u32, o)
                        }
                        _ => {
                            // SAFETY: `T` is 8 bytes, aligned to 8: an `AtomicU64` has its
                            // layout, and every access to it is atomic.
                            let a = unsafe { core_atomic::AtomicU64::from_ptr(p.cast()) };
                            a.store(b, o)
                        }
                    }
                }

                /// Stores `v`, giving the value it replaced.
                #[inline(always)]
                pub(crate) fn xchg<O: Ordering>(&self, v: T, _: O) -> T {
                    let b = bits(v);
                    // CAST: the value's own bits, of its size.
                    value(with_core!(self, a => a.swap(b as _, O::RMW)))
                }

                /// Stores `new` if the value is `old`: `Ok(old)`, else `Err(the value)`.
                #[inline(always)]
                pub(crate) fn cmpxchg<O: Ordering>(&self, old: T, new: T, _: O) -> Result<T, T> {
                    let (o, n) = (bits(old), bits(new));
                    let failure = match O::RMW {
                        core_atomic::Ordering::SeqCst => core_atomic::Ordering::SeqCst,
                        core_atomic::Ordering::Acquire => core_atomic::Ordering::Acquire,
                        _ => core_atomic::Ordering::Relaxed,
                    };
                    let mut ok = true;
                    // CAST: the values' own bits, of their size.
                    let seen = with_core!(self, a => match a.compare_exchange(o as _, n as _, O::RMW, failure) {
                        Ok(v) => v,
                        Err(v) => {
                            ok = false;
                            v
                        }
                    });
                    if ok {
                        Ok(value(seen))
                    } else {
                        Err(value(seen))
                    }
                }
            }

            impl<T: AtomicInt> Atomic<T> {
                /// Adds `v` (wrapping).
                #[inline(always)]
                pub(crate) fn add(&self, v: T, _: Relaxed) {
                    self.fetch_add(v, Relaxed);
                }

                /// Adds `v` (wrapping), giving the value before.
                #[inline(always)]
                pub(crate) fn fetch_add<O: Ordering>(&self, v: T, _: O) -> T {
                    let b = bits(v);
                    // CAST: the value's own bits, of its size: two's complement addition
                    // wraps the same for signed and unsigned.
                    value(with_core!(self, a => a.fetch_add(b as _, O::RMW)))
                }

                /// Subtracts `v` (wrapping), giving the value before.
                #[inline(always)]
                pub(crate) fn fetch_sub<O: Ordering>(&self, v: T, _: O) -> T {
                    let b = bits(v);
                    // CAST: as for `fetch_add`.
                    value(with_core!(self, a => a.fetch_sub(b as _, O::RMW)))
                }
            }
        }
    }

    /// 7.x's `kernel::time`: 6.12's, and `Delta` and `delay::fsleep`.
    pub(crate) mod time {
        pub(crate) use kernel::time::*;

        /// A span of time (7.x's `Delta`, in milliseconds here: all memmon sleeps take).
        #[derive(Clone, Copy)]
        pub(crate) struct Delta {
            millis: u32,
        }

        impl Delta {
            /// `millis` milliseconds (0 to `u32::MAX`).
            pub(crate) const fn from_millis(millis: i64) -> Self {
                // CAST: clamped into a `u32` first.
                let millis = if millis < 0 {
                    0
                } else if millis > u32::MAX as i64 {
                    u32::MAX
                } else {
                    millis as u32
                };
                Self { millis }
            }
        }

        /// 7.x's `kernel::time::delay`.
        pub(crate) mod delay {
            /// Sleeps for `delta` (`msleep()`: memmon's sleeps are milliseconds).
            pub(crate) fn fsleep(delta: super::Delta) {
                // SAFETY: No preconditions (it sleeps: called from process context).
                unsafe { kernel::bindings::msleep(delta.millis) };
            }
        }
    }
}
