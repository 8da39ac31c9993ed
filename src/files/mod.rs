// SPDX-License-Identifier: GPL-2.0

//! The files of `/proc/memmon/`: `events`, `watch-pids`, `stats`, `marker`, `unwind` and
//! `buflen`.

use crate::kernel_ext::capability::Capability;
use crate::kernel_ext::kcrate::{
    alloc::KVec,
    fs::LocalFile,
    uaccess::{UserSliceReader, UserSliceWriter},
};
use crate::kernel_ext::prelude::*;

mod buflen;
mod events;
mod marker;
mod stats;
mod unwind;
mod watch_pids;

pub(crate) use buflen::BuflenFile;
use events::reader_bytes;
pub(crate) use events::EventsFile;
pub(crate) use marker::MarkerFile;
pub(crate) use stats::StatsFile;
pub(crate) use unwind::UnwindFile;
pub(crate) use watch_pids::WatchPidsFile;

/// Largest write accepted by `marker`.
pub(crate) const MARKER_WRITE_MAX: usize = 4096;

/// Largest write accepted by `watch-pids`: room for an item of the longest cgroup path
/// (`-c:` and 4095 bytes), twice.
pub(crate) const WATCH_WRITE_MAX: usize = 8192;

/// `value` in a pinned box, for [`ProcFile::open`].
pub(crate) fn pin_box<T>(value: T) -> Result<Pin<KBox<T>>> {
    Ok(KBox::pin(value, GFP_KERNEL)?)
}

/// Refuses a write to `file` (the `watch-pids` or `unwind` file, `name`) with `EPERM` unless
/// both the writer and the task that opened the file hold `CAP_SYS_ADMIN`: a root process
/// that opened it and then dropped its privileges, or passed the open file to a process
/// without them, cannot write through it (the file's mode, 0600 root, is checked at open
/// only). The opener's credentials are those of the open (`file->f_cred`), as the kernel's
/// own privileged files check them (`/proc/PID/uid_map`).
pub(crate) fn check_writer(file: &LocalFile, name: &str) -> Result {
    let writer = Capability::SYS_ADMIN.held_by_current();
    let opener = Capability::SYS_ADMIN.held_by_opener(file);
    if writer && opener {
        return Ok(());
    }
    let why = match (writer, opener) {
        (false, false) => {
            "neither the writer nor the process that opened the file has CAP_SYS_ADMIN"
        }
        (false, true) => {
            "the writer has no CAP_SYS_ADMIN (the process that opened the file had it)"
        }
        _ => "the process that opened the file had no CAP_SYS_ADMIN",
    };
    pr_info!("{}: refused a write: {}\n", name, why);
    Err(EPERM)
}

/// Reads all of a small write to `file`, refusing one over `max` bytes.
pub(crate) fn read_small_write(input: UserSliceReader, file: &str, max: usize) -> Result<KVec<u8>> {
    if input.len() > max {
        pr_info!(
            "{}: rejected a write of {} bytes (at most {})\n",
            file,
            input.len(),
            max
        );
        return Err(EINVAL);
    }
    let mut buf = KVec::new();
    input.read_all(&mut buf, GFP_KERNEL)?;
    Ok(buf)
}

/// Serves `content` from position `pos`, as a regular file would.
pub(crate) fn read_generated(
    content: &[u8],
    mut out: UserSliceWriter,
    pos: &mut i64,
) -> Result<usize> {
    let start = usize::try_from(*pos).map_err(|_| EINVAL)?;
    let Some(rest) = content.get(start..) else {
        return Ok(0);
    };
    let n = rest.len().min(out.len());
    out.write_slice(&rest[..n])?;
    // CAST: `n` is at most the content's length.
    *pos += n as i64;
    Ok(n)
}
