// SPDX-License-Identifier: GPL-2.0

//! The files of `/proc/memmon/`: `events`, `watch-pids`, `stats` and `marker`.

use crate::event::{now_ns, Event, Kind};
use crate::procfs::{PollTableRef, ProcFile};
use crate::record::{self, RECORD_MAX};
use crate::ring::{poll_mask, Cursor, Readiness};
use crate::stack::STACK_MAX;
use crate::text::{format_event, format_lost, Line};
use crate::watch::ByteWriter;
use crate::Monitor;
use core::fmt::Write;
use kernel::{
    alloc::KVec,
    fs::{file::flags::O_NONBLOCK, File, LocalFile},
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    uaccess::{UserSliceReader, UserSliceWriter},
};

/// Largest write accepted by `watch-pids` and `marker`.
const WRITE_MAX: usize = 4096;

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

/// A record fetched from a ring, decoded.
struct Staged {
    event: Event,
    stack: [u64; STACK_MAX],
    stack_len: usize,
}

/// Where a reader of `/proc/memmon/events` is: kept per open file, not on the kernel stack.
struct ReadState {
    /// Per ring: the next record to fetch.
    cursors: KVec<Cursor>,
    /// Per ring: the record fetched from it and not yet delivered.
    staged: KVec<Option<Staged>>,
    /// Records missed and not yet reported with a `lost` line.
    lost: u64,
    record: [u8; RECORD_MAX],
    line: Line,
}

impl ReadState {
    /// Whether something is held back: a fetched record or a lost count.
    fn pending(&self) -> bool {
        self.lost > 0 || self.staged.iter().any(Option::is_some)
    }
}

/// An open `/proc/memmon/events`: a reader with its own position in the stream.
#[pin_data]
pub(crate) struct EventsFile {
    monitor: Arc<Monitor>,
    /// Serialises read(2) on this open file. Never held while waiting for events, so a
    /// signal always interrupts a waiting reader.
    #[pin]
    reading: Mutex<ReadState>,
}

impl EventsFile {
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

    /// Whether this reader has something to read (see [`Ring::readiness`]). Without waiting
    /// for another reader of the same file: if one is reading, it reports ready.
    fn readiness(&self) -> Readiness {
        let ring = &self.monitor.state.ring;
        match self.reading.try_lock() {
            Some(state) => ring.readiness(&state.cursors, state.pending()),
            None => ring.readiness(&[], true),
        }
    }

    /// Copies whole lines, in time order across the rings, to `out`. Returns the bytes
    /// written: 0 if there was nothing to read or the first line did not fit.
    fn fill(&self, state: &mut ReadState, out: &mut UserSliceWriter) -> Result<usize> {
        let ring = &self.monitor.state.ring;
        let ReadState {
            cursors,
            staged,
            lost,
            record,
            line,
        } = state;
        // Every record stamped up to now is in a ring already: merging those by time gives
        // a stream in time order. Later ones wait for the next read.
        let until = now_ns();
        let mut written = 0;
        let mut delivered = 0;
        let mut lost_reported = 0;
        loop {
            for (cpu, (cursor, slot)) in cursors.iter_mut().zip(staged.iter_mut()).enumerate() {
                if slot.is_none() {
                    let fetched = ring.fetch(cpu, cursor, until, record);
                    *lost += fetched.lost;
                    if let Some(size) = fetched.record {
                        let mut stack = [0; STACK_MAX];
                        *slot = record::decode(&record[..size], &mut stack).map(
                            |(event, stack_len)| Staged {
                                event,
                                stack,
                                stack_len,
                            },
                        );
                    }
                }
            }
            if *lost > 0 {
                format_lost(line, now_ns(), *lost);
                if !Self::emit(out, line, &mut written)? {
                    break;
                }
                lost_reported += *lost;
                *lost = 0;
            }
            let next = staged
                .iter()
                .enumerate()
                .filter_map(|(cpu, slot)| slot.as_ref().map(|s| (s.event.time_ns, cpu)))
                .min();
            let Some((_, cpu)) = next else {
                break;
            };
            let Some(slot) = staged.get_mut(cpu) else {
                break;
            };
            if let Some(staged) = slot {
                format_event(line, &staged.event, &staged.stack[..staged.stack_len]);
                if !Self::emit(out, line, &mut written)? {
                    break;
                }
            }
            *slot = None;
            delivered += 1;
        }
        ring.consumed(delivered, lost_reported);
        Ok(written)
    }
}

#[vtable]
impl ProcFile for EventsFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        let ring = &monitor.state.ring;
        let mut cursors = KVec::with_capacity(ring.count(), GFP_KERNEL)?;
        let mut staged = KVec::with_capacity(ring.count(), GFP_KERNEL)?;
        for _ in 0..ring.count() {
            cursors.push(Cursor::default(), GFP_KERNEL)?;
            staged.push(None, GFP_KERNEL)?;
        }
        ring.start_cursors(&mut cursors);
        KBox::try_pin_init(
            try_pin_init!(Self {
                monitor: monitor.into(),
                reading <- new_mutex!(ReadState {
                    cursors,
                    staged,
                    lost: 0,
                    record: [0; RECORD_MAX],
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
                self.readiness()
            } else {
                ring.wait_readable(|_| self.readiness())?;
                self.readiness()
            };
            match readiness {
                Readiness::Closed => return Ok(0),
                Readiness::Empty if nonblock => return Err(EAGAIN),
                Readiness::Empty => continue,
                Readiness::Ready => {}
            }
            let mut state = if nonblock {
                self.reading.try_lock().ok_or(EAGAIN)?
            } else {
                self.reading.lock()
            };
            let written = self.fill(&mut state, &mut out)?;
            if written > 0 {
                return Ok(written);
            }
            if state.pending() {
                // Something to read, but not even one line fits the caller's buffer.
                return Err(EINVAL);
            }
            // Another reader of this open file took what there was, or the records are
            // newer than this read: wait again.
        }
    }

    fn poll(&self, file: &LocalFile, table: &PollTableRef<'_>) -> u32 {
        self.monitor.state.ring.register_poller(file, table);
        poll_mask(self.readiness())
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
            writeln!(out, "rings {}", stats.rings)?;
            writeln!(out, "ring_bytes {}", stats.ring_bytes)?;
            writeln!(out, "buflen {}", state.buflen)?;
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
        crate::rss::mark_all(&self.monitor.state);
        Ok(len)
    }
}
