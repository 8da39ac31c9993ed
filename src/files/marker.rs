// SPDX-License-Identifier: GPL-2.0

//! `/proc/memmon/marker`: each write becomes a `mark` event in the stream.

use super::{pin_box, read_small_write, MARKER_WRITE_MAX};
use crate::kernel_ext::kcrate::{
    fs::{File, LocalFile},
    sync::{Arc, ArcBorrow},
    uaccess::UserSliceReader,
};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::procfs::ProcFile;
use crate::monitor::Monitor;
use crate::record::event::Kind;

/// An open `/proc/memmon/marker`: each write becomes a `mark` event.
pub(crate) struct MarkerFile {
    monitor: Arc<Monitor>,
}

#[vtable]
impl ProcFile for MarkerFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        pin_box(Self {
            monitor: monitor.into(),
        })
    }

    fn write(&self, _file: &LocalFile, input: UserSliceReader) -> Result<usize> {
        let len = input.len();
        let text = read_small_write(input, "marker", MARKER_WRITE_MAX)?;
        let text = text.strip_suffix(b"\n").unwrap_or(&text);
        let mut event = crate::probes::current_event(Kind::Mark);
        event.set_text(text);
        self.monitor.state.ring.push(&event);
        crate::probes::rss::mark_all(&self.monitor.state);
        Ok(len)
    }
}
