// SPDX-License-Identifier: GPL-2.0

//! `/proc/memmon/watch-pids`: which processes are watched.

use super::{check_writer, pin_box, read_generated, read_small_write, WATCH_WRITE_MAX};
use crate::kernel_ext::kcrate::{
    fs::{File, LocalFile},
    sync::{Arc, ArcBorrow},
    uaccess::{UserSliceReader, UserSliceWriter},
};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::procfs::ProcFile;
use crate::monitor::Monitor;

/// An open `/proc/memmon/watch-pids`.
pub(crate) struct WatchPidsFile {
    monitor: Arc<Monitor>,
}

#[vtable]
impl ProcFile for WatchPidsFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        pin_box(Self {
            monitor: monitor.into(),
        })
    }

    fn read(&self, _file: &LocalFile, out: UserSliceWriter, pos: &mut i64) -> Result<usize> {
        let content = self.monitor.watch_format()?;
        read_generated(&content, out, pos)
    }

    fn write(&self, file: &LocalFile, input: UserSliceReader) -> Result<usize> {
        check_writer(file, "watch-pids")?;
        let len = input.len();
        let request = read_small_write(input, "watch-pids", WATCH_WRITE_MAX)?;
        self.monitor.apply_watch_write(&request)?;
        Ok(len)
    }
}
