// SPDX-License-Identifier: GPL-2.0

//! `/proc/memmon/unwind`: unwind tables and the ranges that use them, one binary command per
//! write (docs/unwind.md); reading it lists what is loaded.

use super::{pin_box, read_generated};
use crate::kernel_ext::byte_writer::ByteWriter;
use crate::kernel_ext::procfs::ProcFile;
use crate::monitor::Monitor;
use crate::unwind::format::{self, Command, WRITE_MAX};
use kernel::{
    alloc::{KVVec, KVec},
    fs::{File, LocalFile},
    prelude::*,
    sync::{Arc, ArcBorrow},
    uaccess::{UserSliceReader, UserSliceWriter},
};

/// An open `/proc/memmon/unwind`.
pub(crate) struct UnwindFile {
    monitor: Arc<Monitor>,
}

#[vtable]
impl ProcFile for UnwindFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        pin_box(Self {
            monitor: monitor.into(),
        })
    }

    fn read(&self, _file: &LocalFile, out: UserSliceWriter, pos: &mut i64) -> Result<usize> {
        let mut text = ByteWriter(KVec::new());
        self.monitor
            .state
            .unwind
            .format(&mut text)
            .map_err(|_| ENOMEM)?;
        read_generated(&text.0, out, pos)
    }

    fn write(&self, _file: &LocalFile, input: UserSliceReader) -> Result<usize> {
        let len = input.len();
        if len > WRITE_MAX {
            pr_info!(
                "unwind: refused: a write of {} bytes (at most {})\n",
                len,
                WRITE_MAX
            );
            return Err(EINVAL);
        }
        let mut bytes = KVVec::with_capacity(len, GFP_KERNEL)?;
        input.read_all(&mut bytes, GFP_KERNEL)?;
        let command = format::parse(&bytes).map_err(|why| {
            pr_info!("unwind: refused: {}\n", why);
            EINVAL
        })?;
        let state = &self.monitor.state;
        match command {
            Command::AddTable { key, rows } => state.unwind.add_table(key, rows),
            Command::SetMaps { pid, ranges } => state.unwind.set_maps(pid, ranges, &state.watch),
            Command::DropTable { key } => state.unwind.drop_table(key, &state.watch),
        }
        .map_err(|refused| refused.error)?;
        Ok(len)
    }
}
