// SPDX-License-Identifier: GPL-2.0

//! The files of `/proc/memmon/`: `events`, `watch-pids`, `stats` and `marker`.

use crate::event::{now_ns, Event, Kind};
use crate::procfs::{PollTableRef, ProcFile};
use crate::ring::{Cursor, Readiness};
use crate::text::{format_event, format_lost, Line};
use crate::watch::ByteWriter;
use crate::Monitor;
use core::fmt::Write;
use kernel::{
    alloc::KVec,
    bindings,
    fs::{file::flags::O_NONBLOCK, File, LocalFile},
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex, SpinLock},
    uaccess::{UserSliceReader, UserSliceWriter},
};

/// Largest write accepted by `watch-pids` and `marker`.
const WRITE_MAX: usize = 4096;

/// Events copied out of the ring per lock acquisition while reading.
const READ_BATCH: usize = 8;

/// `value` in a pinned box, for [`ProcFile::open`].
fn pin_box<T>(value: T) -> Result<Pin<KBox<T>>> {
    Ok(KBox::pin(value, GFP_KERNEL)?)
}

/// Reads all of a small write, refusing one over [`WRITE_MAX`] bytes.
fn read_small_write(input: UserSliceReader, file: &str) -> Result<KVec<u8>> {
    if input.len() > WRITE_MAX {
        pr_info!(
            "{}: rejected a write of {} bytes (at most {})\n",
            file,
            input.len(),
            WRITE_MAX
        );
        return Err(EINVAL);
    }
    let mut buf = KVec::new();
    input.read_all(&mut buf, GFP_KERNEL)?;
    Ok(buf)
}

/// Serves `content` from position `pos`, as a regular file would.
fn read_generated(content: &[u8], mut out: UserSliceWriter, pos: &mut i64) -> Result<usize> {
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

/// What one read of `/proc/memmon/events` works in, kept per open file rather than on the
/// kernel stack.
struct ReadBuffers {
    batch: [Event; READ_BATCH],
    line: Line,
}

/// An open `/proc/memmon/events`: a reader with its own position in the stream.
#[pin_data]
pub(crate) struct EventsFile {
    monitor: Arc<Monitor>,
    /// Where this reader is. Changed only with `reading` held; taken inside the ring's lock
    /// by [`Ring::wait_readable`](crate::ring::Ring::wait_readable), never the other way.
    #[pin]
    cursor: SpinLock<Cursor>,
    /// Serialises the copying part of read(2) on this open file. Never held while waiting
    /// for events, so a signal always interrupts a waiting reader.
    #[pin]
    reading: Mutex<ReadBuffers>,
}

impl EventsFile {
    fn cursor(&self) -> Cursor {
        *self.cursor.lock()
    }

    /// Copies `line` to `out` if it fits. `Ok(false)`: it does not fit, or copying failed after
    /// something was written already (the caller returns what it has).
    fn emit(out: &mut UserSliceWriter, line: &Line, written: &mut usize) -> Result<bool> {
        let bytes = line.as_bytes();
        if bytes.len() > out.len() {
            return Ok(false);
        }
        match out.write_slice(bytes) {
            Ok(()) => {
                *written += bytes.len();
                Ok(true)
            }
            Err(e) if *written == 0 => Err(e),
            Err(_) => Ok(false),
        }
    }

    /// Copies whole lines from this reader's position to `out` and moves the position past
    /// them. Returns the bytes written: 0 if there was nothing to read or the first line did
    /// not fit.
    fn fill(&self, buffers: &mut ReadBuffers, out: &mut UserSliceWriter) -> Result<usize> {
        let ring = &self.monitor.state.ring;
        let ReadBuffers { batch, line } = buffers;
        let mut cursor = self.cursor();
        let mut written = 0;
        let mut delivered = 0;
        let mut lost_reported = 0;
        'fill: loop {
            let fetched = ring.fetch(&mut cursor, batch);
            if cursor.lost > 0 {
                format_lost(line, now_ns(), cursor.lost);
                if !Self::emit(out, line, &mut written)? {
                    break;
                }
                lost_reported += cursor.lost;
                cursor.lost = 0;
            }
            if fetched == 0 {
                break;
            }
            for event in &batch[..fetched] {
                format_event(line, event);
                if !Self::emit(out, line, &mut written)? {
                    break 'fill;
                }
                cursor.next += 1;
                delivered += 1;
            }
        }
        *self.cursor.lock() = cursor;
        ring.consumed(delivered, lost_reported);
        Ok(written)
    }
}

#[vtable]
impl ProcFile for EventsFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        let start = monitor.state.ring.start_cursor();
        KBox::try_pin_init(
            try_pin_init!(Self {
                monitor: monitor.into(),
                cursor <- new_spinlock!(start, "memmon_events_cursor"),
                reading <- new_mutex!(ReadBuffers {
                    batch: [Event::zeroed(); READ_BATCH],
                    line: Line::new(),
                }, "memmon_events_reading"),
            }),
            GFP_KERNEL,
        )
    }

    fn read(&self, file: &LocalFile, mut out: UserSliceWriter, _pos: &mut i64) -> Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let ring = &self.monitor.state.ring;
        let nonblock = file.flags() & O_NONBLOCK != 0;
        loop {
            let readiness = if nonblock {
                ring.readiness(&self.cursor())
            } else {
                ring.wait_readable(|| self.cursor())?
            };
            match readiness {
                Readiness::Closed => return Ok(0),
                Readiness::Empty => return Err(EAGAIN),
                Readiness::Ready => {}
            }
            let mut buffers = if nonblock {
                self.reading.try_lock().ok_or(EAGAIN)?
            } else {
                self.reading.lock()
            };
            let written = self.fill(&mut buffers, &mut out)?;
            if written > 0 {
                return Ok(written);
            }
            if let Readiness::Ready = ring.readiness(&self.cursor()) {
                // Something to read, but not even one line fits the caller's buffer.
                return Err(EINVAL);
            }
            // Another reader of this open file took what there was: wait again.
        }
    }

    fn poll(&self, file: &LocalFile, table: &PollTableRef<'_>) -> u32 {
        let ring = &self.monitor.state.ring;
        ring.register_poller(file, table);
        match ring.readiness(&self.cursor()) {
            Readiness::Ready => bindings::POLLIN | bindings::POLLRDNORM,
            Readiness::Closed => bindings::POLLIN | bindings::POLLRDNORM | bindings::POLLHUP,
            Readiness::Empty => 0,
        }
    }
}

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
        let content = self.monitor.state.watch.format()?;
        read_generated(&content, out, pos)
    }

    fn write(&self, _file: &LocalFile, input: UserSliceReader) -> Result<usize> {
        let len = input.len();
        let request = read_small_write(input, "watch-pids")?;
        self.monitor.state.watch.apply(&request)?;
        Ok(len)
    }
}

/// An open `/proc/memmon/stats`.
pub(crate) struct StatsFile {
    monitor: Arc<Monitor>,
}

impl StatsFile {
    fn format(&self) -> Result<KVec<u8>> {
        let state = &self.monitor.state;
        let stats = state.ring.stats();
        let mut out = ByteWriter(KVec::new());
        (|| -> core::fmt::Result {
            writeln!(out, "produced {}", stats.produced)?;
            writeln!(out, "delivered {}", stats.delivered)?;
            writeln!(out, "overwritten {}", stats.overwritten)?;
            writeln!(out, "lost_reported {}", stats.reported_lost)?;
            writeln!(out, "probe_missed {}", self.monitor.probes_missed())?;
            writeln!(out, "watched {}", state.watch.count())?;
            writeln!(out, "capacity {}", stats.capacity)?;
            writeln!(out, "buflen {}", state.buflen)?;
            writeln!(out, "record_size {}", core::mem::size_of::<Event>())?;
            for kind in Kind::ALL {
                writeln!(out, "{} {}", kind.name(), stats.per_kind[kind as usize])?;
            }
            Ok(())
        })()
        .map_err(|_| ENOMEM)?;
        Ok(out.0)
    }
}

#[vtable]
impl ProcFile for StatsFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        pin_box(Self {
            monitor: monitor.into(),
        })
    }

    fn read(&self, _file: &LocalFile, out: UserSliceWriter, pos: &mut i64) -> Result<usize> {
        read_generated(&self.format()?, out, pos)
    }
}

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
        let text = read_small_write(input, "marker")?;
        let text = text.strip_suffix(b"\n").unwrap_or(&text);
        let mut event = Event::new(Kind::Mark);
        event.set_text(text);
        self.monitor.state.ring.push(&event);
        Ok(len)
    }
}
