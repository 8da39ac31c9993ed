// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over the procfs C API (`linux/proc_fs.h`).
//!
//! A [`ProcDir`] is a directory under `/proc` holding files whose behaviour is given by
//! implementations of [`ProcFile`]. Each open file gets its own `ProcFile` value, created by
//! [`ProcFile::open`] and dropped at release. Dropping the `ProcDir` removes the directory and
//! its files; procfs waits for callbacks in flight and releases files still open, so no
//! callback runs once the drop returns.

use crate::bindings;
use crate::kernel_ext::kcrate::{
    error::{from_result, to_result, VTABLE_DEFAULT_ERROR},
    fs::{File, LocalFile},
    sync::{Arc, ArcBorrow},
    uaccess::{UserPtr, UserSlice, UserSliceReader, UserSliceWriter},
};
use crate::kernel_ext::prelude::*;
use core::marker::PhantomData;

/// The behaviour of one kind of file in a [`ProcDir`].
#[vtable]
pub(crate) trait ProcFile: Sized + Send + Sync {
    /// Data shared by all files of the directory, given to [`ProcDir::new`].
    type Shared: Send + Sync;

    /// Called at open; the result is this open file's private state.
    fn open(shared: ArcBorrow<'_, Self::Shared>, file: &File) -> Result<Pin<KBox<Self>>>;

    /// Called by read(2); `pos` is the file position, to update.
    fn read(&self, _file: &LocalFile, _out: UserSliceWriter, _pos: &mut i64) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Called by write(2) with the whole user buffer; returns the bytes consumed.
    fn write(&self, _file: &LocalFile, _input: UserSliceReader) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Called by poll(2), select(2) and epoll; returns the `POLL*` mask.
    fn poll(&self, _file: &LocalFile, _table: &PollTableRef<'_>) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The `poll_table` of one poll, select or epoll call, for [`crate::kernel_ext::pollqueue::PollQueue`].
///
/// # Invariants
///
/// `table` is null or valid for `'a`.
pub(crate) struct PollTableRef<'a> {
    table: *mut bindings::poll_table,
    _lifetime: PhantomData<&'a bindings::poll_table>,
}

impl PollTableRef<'_> {
    /// The table: null, or valid while `self` lives.
    pub(crate) fn as_ptr(&self) -> *mut bindings::poll_table {
        self.table
    }
}

/// The `proc_ops` of files of type `T`.
struct Ops<T>(PhantomData<T>);

impl<T: ProcFile> Ops<T> {
    const OPS: bindings::proc_ops = bindings::proc_ops {
        // Files are streams: no seeking, and reads do not depend on `*ppos` unless they want.
        proc_flags: 0,
        proc_open: Some(Self::open),
        proc_read: if T::HAS_READ { Some(Self::read) } else { None },
        proc_write: if T::HAS_WRITE {
            Some(Self::write)
        } else {
            None
        },
        // `nonseekable_open` at open makes lseek(2) fail with ESPIPE.
        proc_lseek: None,
        proc_release: Some(Self::release),
        proc_poll: if T::HAS_POLL { Some(Self::poll) } else { None },
        // SAFETY: All-zero is a valid value for the remaining (optional) callbacks.
        ..unsafe { core::mem::zeroed() }
    };

    /// # Safety
    ///
    /// Called by procfs with a valid inode of a file created by [`ProcDir::create`] (so
    /// `i_private` holds the pointer of the directory's `Arc<T::Shared>`) and a valid file
    /// being opened.
    unsafe extern "C" fn open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `proc_create_data` stored `Arc::as_ptr` of the directory's shared data; the
        // directory holds that `Arc` until after procfs has stopped calling us.
        let shared = unsafe { ArcBorrow::from_raw((*inode).i_private.cast::<T::Shared>()) };
        from_result(|| {
            // SAFETY: `file` is valid for the duration of this call.
            let file_ref = unsafe { File::from_raw_file(file) };
            let private = T::open(shared, file_ref)?;
            // SAFETY: `nonseekable_open` only clears mode flags of the file being opened.
            to_result(unsafe { bindings::nonseekable_open(inode, file) })?;
            // SAFETY: The pinned box is turned back into a `Pin<KBox<T>>` only in `release`
            // and is never moved meanwhile.
            let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(private) });
            // SAFETY: `file` is valid and its private data is ours to set.
            unsafe { (*file).private_data = raw.cast() };
            Ok(0)
        })
    }

    /// The open file's `T` and the file, for a read, write or poll callback.
    ///
    /// # Safety
    ///
    /// `file` must be a valid file opened by [`Self::open`], not yet released, and the
    /// references must not outlive the callback.
    unsafe fn private<'a>(file: *mut bindings::file) -> (&'a T, &'a LocalFile) {
        // SAFETY:
        // - `open` stored a valid `T` in `private_data`, freed only by `release`, which procfs
        //   calls after every other callback of the file has returned.
        // - `file` is valid for the duration of the callback. `LocalFile` (not `File`) because
        //   read and write run inside `fdget_pos()` without `f_pos_lock`.
        unsafe {
            (
                &*(*file).private_data.cast::<T>(),
                LocalFile::from_raw_file(file),
            )
        }
    }

    /// # Safety
    ///
    /// Called by procfs on a file opened by [`Self::open`], with a user buffer of `len` bytes.
    unsafe extern "C" fn read(
        file: *mut bindings::file,
        buf: *mut c_char,
        len: usize,
        ppos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: procfs calls this on a file opened by `open`, during the read.
        let (this, file_ref) = unsafe { Self::private(file) };
        let out = UserSlice::new(UserPtr::from_ptr(buf.cast()), len).writer();
        let mut no_pos = 0;
        // SAFETY: `ppos` is null or valid for the duration of the call.
        let pos = unsafe { ppos.as_mut() }.unwrap_or(&mut no_pos);
        match this.read(file_ref, out, pos) {
            // CAST: a read returns at most `len` bytes, which fits an isize.
            Ok(n) => n as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// Called by procfs on a file opened by [`Self::open`], with a user buffer of `len` bytes.
    unsafe extern "C" fn write(
        file: *mut bindings::file,
        buf: *const c_char,
        len: usize,
        _ppos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: procfs calls this on a file opened by `open`, during the write.
        let (this, file_ref) = unsafe { Self::private(file) };
        let input = UserSlice::new(UserPtr::from_ptr(buf.cast_mut().cast()), len).reader();
        match this.write(file_ref, input) {
            // CAST: a write consumes at most `len` bytes, which fits an isize.
            Ok(n) => n as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// Called by procfs on a file opened by [`Self::open`] with a valid or null poll table.
    unsafe extern "C" fn poll(
        file: *mut bindings::file,
        table: *mut bindings::poll_table_struct,
    ) -> bindings::__poll_t {
        // SAFETY: procfs calls this on a file opened by `open`, during the poll.
        let (this, file_ref) = unsafe { Self::private(file) };
        // INVARIANT: procfs passes a table that is null or valid during the call, which
        // outlives the `PollTableRef`.
        let table = PollTableRef {
            table,
            _lifetime: PhantomData,
        };
        this.poll(file_ref, &table)
    }

    /// # Safety
    ///
    /// Called by procfs once per file opened by [`Self::open`], after its last use.
    unsafe extern "C" fn release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `open` stored a `KBox<T>` made with `into_raw`; this is the last use.
        drop(unsafe { KBox::from_raw((*file).private_data.cast::<T>()) });
        0
    }
}

/// A directory under `/proc`, with the files created in it.
///
/// # Invariants
///
/// `dir` is a valid proc entry created by `proc_mkdir`, removed (with its files) on drop;
/// every file's `i_private` is `Arc::as_ptr(&shared)`.
pub(crate) struct ProcDir<S: Send + Sync + 'static> {
    dir: *mut bindings::proc_dir_entry,
    shared: Arc<S>,
}

// SAFETY: The proc entry pointer is only used to create files and to remove the directory,
// which procfs allows from any thread; `S` is `Send + Sync`.
unsafe impl<S: Send + Sync> Send for ProcDir<S> {}
// SAFETY: As above; `&ProcDir` only allows creating files.
unsafe impl<S: Send + Sync> Sync for ProcDir<S> {}

impl<S: Send + Sync + 'static> ProcDir<S> {
    /// Creates `/proc/<name>`; its files will share `shared`.
    pub(crate) fn new(name: &'static CStr, shared: Arc<S>) -> Result<Self> {
        // SAFETY: `name` is a valid C string; a null parent means `/proc`.
        let dir = unsafe { bindings::proc_mkdir(name.as_char_ptr(), core::ptr::null_mut()) };
        if dir.is_null() {
            pr_err!("cannot create /proc/{}\n", name);
            return Err(EEXIST);
        }
        Ok(Self { dir, shared })
    }

    /// Creates the file `name` with permissions `mode`, behaving as `T`.
    pub(crate) fn create<T: ProcFile<Shared = S>>(&self, name: &'static CStr, mode: u16) -> Result {
        let ops: &'static bindings::proc_ops = &Ops::<T>::OPS;
        // SAFETY: `name` and `ops` are valid for the module's lifetime, `self.dir` is valid by
        // the type invariants, and `self.shared` outlives the file (removed before it drops).
        let entry = unsafe {
            bindings::proc_create_data(
                name.as_char_ptr(),
                mode,
                self.dir,
                ops,
                Arc::as_ptr(&self.shared).cast_mut().cast(),
            )
        };
        if entry.is_null() {
            pr_err!("cannot create /proc file {}\n", name);
            return Err(ENOMEM);
        }
        Ok(())
    }
}

impl<S: Send + Sync + 'static> Drop for ProcDir<S> {
    fn drop(&mut self) {
        // SAFETY: `self.dir` is valid by the type invariants; `proc_remove` removes the whole
        // subtree, waits for callbacks in flight and releases files still open.
        unsafe { bindings::proc_remove(self.dir) };
    }
}
