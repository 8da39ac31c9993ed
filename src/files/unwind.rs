// SPDX-License-Identifier: GPL-2.0

//! `/proc/memmon/unwind`: unwind tables and the ranges that use them, one binary command per
//! write (docs/unwind.md); reading it lists what is loaded.
//!
//! A read lists the store a few lines at a time ([`UnwindStore::list`]: at most
//! [`LISTING_LINES`] lines under the store's mutex, then released while they are copied
//! out), resuming where the previous read of the open file stopped. A write is refused from
//! its first bytes when it can be (a bad header or counts, a table that cannot fit, more
//! than writes may copy in) before the rest is copied in.

use super::check_writer;
use crate::arch;
use crate::kernel_ext::byte_writer::ByteWriter;
use crate::kernel_ext::kcrate::{
    alloc::{KVVec, KVec},
    fs::{File, LocalFile},
    new_mutex,
    sync::{Arc, ArcBorrow, Mutex},
    uaccess::{UserSliceReader, UserSliceWriter},
};
use crate::kernel_ext::killable::lock_killable;
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::procfs::ProcFile;
use crate::monitor::Monitor;
use crate::unwind::format::{self, Command, Prefix, PREFIX_BYTES, WRITE_MAX};
use crate::unwind::store::{ListingCursor, Staging, UnwindStore, LISTING_LINES, LISTING_LINE_MAX};

/// Bytes the listing's lines of one turn under the store's mutex can take.
const LISTING_CHUNK: usize = LISTING_LINES * LISTING_LINE_MAX;

/// Where an open file's listing is.
struct Listing {
    /// Lines formatted, not all read yet: those from `sent` on.
    text: KVec<u8>,
    sent: usize,
    /// The next lines to format.
    cursor: ListingCursor,
}

/// An open `/proc/memmon/unwind`.
#[pin_data]
pub(crate) struct UnwindFile {
    monitor: Arc<Monitor>,
    /// Its reads, one at a time (taken before the store's mutex, which a read takes to
    /// format lines).
    #[pin]
    listing: Mutex<Listing>,
}

impl UnwindFile {
    fn store(&self) -> &UnwindStore {
        &self.monitor.state.unwind
    }
}

#[vtable]
impl ProcFile for UnwindFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        let text = KVec::with_capacity(LISTING_CHUNK, GFP_KERNEL)?;
        KBox::try_pin_init(
            try_pin_init!(Self {
                monitor: monitor.into(),
                listing <- new_mutex!(Listing {
                    text,
                    sent: 0,
                    cursor: ListingCursor::START,
                }),
            }),
            GFP_KERNEL,
        )
    }

    fn read(&self, _file: &LocalFile, mut out: UserSliceWriter, pos: &mut i64) -> Result<usize> {
        // Killable: another read of the open file may be stuck copying out to a buffer
        // whose pages do not come (userfaultfd), holding it.
        let mut listing = lock_killable(&self.listing)?;
        let mut copied = 0;
        while !out.is_empty() {
            let listing = &mut *listing;
            if listing.sent == listing.text.len() {
                if listing.cursor == ListingCursor::Done {
                    break;
                }
                // Formatted into room made here, so that nothing is allocated under the
                // store's mutex; copied out once it is released.
                listing.text.clear();
                listing.sent = 0;
                if let Err(error) = listing.text.reserve(LISTING_CHUNK, GFP_KERNEL) {
                    if copied == 0 {
                        return Err(error.into());
                    }
                    break;
                }
                let mut text = ByteWriter(core::mem::take(&mut listing.text));
                let listed = self
                    .store()
                    .list(&mut listing.cursor, &mut text, LISTING_LINES);
                listing.text = text.0;
                if listed.is_err() {
                    // Out of memory for a line (none is longer than the room made): the
                    // lines before it are whole, and the cursor is past them only.
                    let whole = listing.text.iter().rposition(|&byte| byte == b'\n');
                    listing.text.truncate(whole.map_or(0, |at| at + 1));
                    if listing.text.is_empty() {
                        if copied == 0 {
                            return Err(ENOMEM);
                        }
                        break;
                    }
                }
                continue;
            }
            let rest = listing.text.get(listing.sent..).unwrap_or(&[]);
            let n = rest.len().min(out.len());
            if let Err(error) = out.write_slice(rest.get(..n).unwrap_or(&[])) {
                if copied == 0 {
                    return Err(error);
                }
                break;
            }
            listing.sent += n;
            copied += n;
        }
        // CAST: at most the reader's buffer, which fits an i64.
        *pos += copied as i64;
        Ok(copied)
    }

    fn write(&self, file: &LocalFile, input: UserSliceReader) -> Result<usize> {
        check_writer(file, "unwind")?;
        let len = input.len();
        if len > WRITE_MAX {
            pr_info!(
                "unwind: refused: a write of {} bytes (at most {})\n",
                len,
                WRITE_MAX
            );
            return Err(EINVAL);
        }
        // The header and counts first, with a small copy: a write they refuse, and one that
        // cannot fit, is refused before the rest is copied in.
        let mut prefix = [0u8; PREFIX_BYTES];
        let prefix = prefix.get_mut(..len.min(PREFIX_BYTES)).ok_or(EINVAL)?;
        input.clone_reader().read_slice(prefix)?;
        let staging = match format::parse_prefix(prefix, len, arch::UNWIND_ARCH) {
            Ok(Prefix::AddTable { key, rows }) => Staging::Table { key, rows },
            Ok(Prefix::SetMaps | Prefix::DropTable | Prefix::SetPython) => Staging::Other,
            Err(why) => {
                pr_info!("unwind: refused: {}\n", why);
                return Err(EINVAL);
            }
        };
        let store = self.store();
        let _staged = store.stage(len, staging).map_err(|refused| refused.error)?;
        let mut bytes = KVVec::with_capacity(len, GFP_KERNEL)?;
        crate::kernel_ext::kcrate::read_all_into(input, &mut bytes)?;
        // Parsed whole again: the buffer may have changed since its prefix was read.
        let command = format::parse(&bytes, arch::UNWIND_ARCH).map_err(|why| {
            pr_info!("unwind: refused: {}\n", why);
            EINVAL
        })?;
        let state = &self.monitor.state;
        match command {
            Command::AddTable { key, rows } => store.add_table(key, rows),
            Command::SetMaps { pid, ranges } => store.set_maps(pid, ranges, &state.watch),
            Command::DropTable { key } => store.drop_table(key, &state.watch),
            Command::SetPython { pid, python } => store.set_python(pid, python, &state.watch),
        }
        .map_err(|refused| refused.error)?;
        Ok(len)
    }
}
