// SPDX-License-Identifier: GPL-2.0

//! `/proc/memmon/buflen`: the bytes of all the event rings, and a write that grows them.
//!
//! Reading gives the rings' bytes in all (`rings * ring_bytes` of `stats`). Root writes a
//! number of bytes, 8192 to 268435456 (the `buflen` load parameter's range, without its 0
//! for the default): every CPU's
//! ring grows to that share of it, rounded down to a power of two, keeping the records it
//! holds and its readers' positions. A size no larger than the rings' changes nothing: the
//! rings never shrink while the module is loaded, so a tool that asks for at least some size
//! never takes room from another. The new rings are allocated before any is changed (a
//! failure changes nothing); each ring's records are copied into its new one under its lock,
//! which its CPU's producers wait for (about a millisecond per MiB held).

use super::{check_writer, pin_box, read_generated, read_small_write};
use crate::kernel_ext::byte_writer::ByteWriter;
use crate::kernel_ext::kcrate::{
    alloc::KVec,
    fs::{File, LocalFile},
    sync::{Arc, ArcBorrow},
    uaccess::{UserSliceReader, UserSliceWriter},
};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::procfs::ProcFile;
use crate::monitor::Monitor;
use core::fmt::Write;

/// Longest write taken: a number of bytes and a newline.
const BUFLEN_WRITE_MAX: usize = 32;

/// An open `/proc/memmon/buflen`.
pub(crate) struct BuflenFile {
    monitor: Arc<Monitor>,
}

/// The number of bytes in a write to `buflen`, or `None`.
fn parse_bytes(text: &[u8]) -> Option<usize> {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    if text.is_empty() || text.len() > 20 {
        return None;
    }
    text.iter().try_fold(0usize, |value, digit| {
        let digit = digit.checked_sub(b'0').filter(|d| *d < 10)?;
        value.checked_mul(10)?.checked_add(usize::from(digit))
    })
}

#[vtable]
impl ProcFile for BuflenFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        pin_box(Self {
            monitor: monitor.into(),
        })
    }

    fn read(&self, _file: &LocalFile, out: UserSliceWriter, pos: &mut i64) -> Result<usize> {
        let stats = self.monitor.state.ring.stats();
        let mut text = ByteWriter(KVec::new());
        writeln!(text, "{}", stats.rings * stats.ring_bytes).map_err(|_| ENOMEM)?;
        read_generated(&text.0, out, pos)
    }

    fn write(&self, file: &LocalFile, input: UserSliceReader) -> Result<usize> {
        check_writer(file, "buflen")?;
        let len = input.len();
        let text = read_small_write(input, "buflen", BUFLEN_WRITE_MAX)?;
        let min = crate::BUFLEN_MIN as usize;
        let max = crate::BUFLEN_MAX as usize;
        let Some(bytes) = parse_bytes(&text).filter(|bytes| (min..=max).contains(bytes)) else {
            pr_info!(
                "buflen: refused a write: it takes a number of bytes from {} to {}\n",
                min,
                max
            );
            return Err(EINVAL);
        };
        let ring = &self.monitor.state.ring;
        let before = ring.stats().ring_bytes;
        let after = ring.grow(bytes)?;
        if after > before {
            pr_info!(
                "buflen: rings grown from {} to {} bytes per CPU ({} rings)\n",
                before,
                after,
                ring.count()
            );
        }
        Ok(len)
    }
}
