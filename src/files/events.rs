// SPDX-License-Identifier: GPL-2.0

//! `/proc/memmon/events`: the records of every CPU's ring, merged in time order, as text lines.

use crate::kernel_ext::kcrate::{
    alloc::{KVec, VVec},
    fs::{file::flags::O_NONBLOCK, File, LocalFile},
    new_mutex,
    sync::{atomic::Relaxed, Arc, ArcBorrow, Mutex},
    uaccess::UserSliceWriter,
};
use crate::kernel_ext::killable::lock_killable;
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::procfs::{PollTableRef, ProcFile};
use crate::kernel_ext::task::now_ns;
use crate::monitor::Monitor;
use crate::record::copy::copy_bytes;
use crate::record::event::Event;
use crate::record::event::STACK_MAX;
use crate::record::packed;
use crate::record::text::{format_event, format_lost, Line};
use crate::ring::{poll_mask, Cursor, Readiness, Ring, BLOCK_BYTES};

/// The packed records a reader copied out of one ring and has not decoded yet: they lie at
/// `start..end` of the ring's part of [`ReadState::stage`].
#[derive(Clone, Copy, Default)]
struct Staged {
    start: usize,
    end: usize,
    /// How many records they are.
    records: u64,
}

/// Where a reader of `/proc/memmon/events` is: kept per open file, not on the kernel stack.
struct ReadState {
    /// Per ring: the next record to fetch, and the coding state of the staged records.
    cursors: VVec<Cursor>,
    /// Per ring, [`BLOCK_BYTES`] each: packed records fetched and not yet decoded.
    stage: VVec<u8>,
    staged: KVec<Staged>,
    /// Records missed and not yet reported with a `lost` line.
    lost: u64,
    /// `line` holds an event's line that did not fit the last read.
    held: bool,
    event: Event,
    stack: [u64; STACK_MAX],
    line: Line,
    /// [`CHUNK_BYTES`] bytes, on the heap.
    chunk: KVec<u8>,
}

/// Bytes of lines a reader copies out at once.
const CHUNK_BYTES: usize = 8192;

/// Lines on their way to the reader's buffer, gathered in a chunk and copied out when it is
/// full and at the end of the read.
struct Output<'a> {
    user: &'a mut UserSliceWriter,
    chunk: &'a mut [u8],
    len: usize,
    /// In the chunk: event lines, and the events its `lost` lines report.
    events: u64,
    lost: u64,
    /// Copied out: bytes, event lines, and events reported lost.
    written: usize,
    delivered: u64,
    lost_reported: u64,
}

impl<'a> Output<'a> {
    /// Nothing gathered yet, for `user`, in `chunk`.
    fn new(user: &'a mut UserSliceWriter, chunk: &'a mut [u8]) -> Self {
        Self {
            user,
            chunk,
            len: 0,
            events: 0,
            lost: 0,
            written: 0,
            delivered: 0,
            lost_reported: 0,
        }
    }

    /// Adds `line` (for `events` events, or reporting `lost` lost ones) if the reader's
    /// buffer has room for it. `Ok(false)`: it has not.
    fn push(&mut self, line: &Line, events: u64, lost: u64) -> Result<bool> {
        let bytes = line.as_bytes();
        if bytes.len() > self.user.len().saturating_sub(self.len) {
            return Ok(false);
        }
        if self.len + bytes.len() > self.chunk.len() {
            self.flush()?;
        }
        let Some(dst) = self.chunk.get_mut(self.len..self.len + bytes.len()) else {
            return Ok(false);
        };
        copy_bytes(dst, bytes);
        self.len += bytes.len();
        self.events += events;
        self.lost += lost;
        Ok(true)
    }

    /// Copies the chunk out.
    fn flush(&mut self) -> Result {
        if self.len == 0 {
            return Ok(());
        }
        self.user
            .write_slice(self.chunk.get(..self.len).unwrap_or(&[]))?;
        self.written += self.len;
        self.delivered += self.events;
        self.lost_reported += self.lost;
        self.len = 0;
        self.events = 0;
        self.lost = 0;
        Ok(())
    }
}

impl ReadState {
    /// Whether something is held back: a fetched record, a line or a lost count.
    fn pending(&self) -> bool {
        self.held || self.lost > 0 || self.staged.iter().any(|s| s.start < s.end)
    }
}

/// Bytes an open `events` file holds, for `rings` rings, whatever is read through it.
pub(crate) fn reader_bytes(rings: usize) -> usize {
    size_of::<EventsFile>()
        + rings * (BLOCK_BYTES + size_of::<Cursor>() + size_of::<Staged>())
        + CHUNK_BYTES
}

/// Counts an open `events` file in [`Monitor::readers`] while it lives, and holds its
/// tracked reader slot in the rings ([`Ring::attach_reader`]), if it got one.
struct OpenReader {
    monitor: Arc<Monitor>,
    slot: Option<usize>,
}

impl OpenReader {
    /// Starts `cursors` where a new reader begins.
    fn new(monitor: Arc<Monitor>, cursors: &mut [Cursor]) -> Self {
        monitor.readers.fetch_add(1, Relaxed);
        let slot = monitor.state.ring.attach_reader(cursors);
        Self { monitor, slot }
    }
}

impl Drop for OpenReader {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            self.monitor.state.ring.detach_reader(slot);
        }
        self.monitor.readers.fetch_sub(1, Relaxed);
    }
}

/// An open `/proc/memmon/events`: a reader with its own position in the stream.
#[pin_data]
pub(crate) struct EventsFile {
    monitor: Arc<Monitor>,
    open: OpenReader,
    /// Serialises read(2) on this open file. Never held while waiting for events, so a
    /// signal always interrupts a waiting reader.
    #[pin]
    reading: Mutex<ReadState>,
}

impl EventsFile {
    /// Whether this reader has something to read (see [`Ring::readiness`], also for
    /// `will_wait`). Without waiting for another reader of the same file: if one is reading,
    /// it reports ready.
    fn readiness(&self, will_wait: bool) -> Readiness {
        let ring = &self.monitor.state.ring;
        match self.reading.try_lock() {
            Some(state) => ring.readiness(&state.cursors, state.pending(), will_wait),
            None => ring.readiness(&[], true, will_wait),
        }
    }

    /// Copies whole lines, in time order across the rings, to `out`. Returns the bytes
    /// written: 0 if there was nothing to read yet; `EINVAL` if the next line is longer than
    /// `out`.
    fn fill(&self, state: &mut ReadState, out: &mut UserSliceWriter) -> Result<usize> {
        let ring = &self.monitor.state.ring;
        let ReadState {
            cursors,
            stage,
            staged,
            lost,
            held,
            event,
            stack,
            line,
            chunk,
        } = state;
        // Every record stamped up to now is in a ring already: merging those by time gives
        // a stream in time order. Later ones wait for the next read.
        let until = now_ns();
        let mut output = Output::new(out, chunk.as_mut_slice());
        let mut too_long = false;
        let result = 'fill: {
            if *held {
                match output.push(line, 1, 0) {
                    Ok(true) => *held = false,
                    Ok(false) => {
                        too_long = true;
                        break 'fill Ok(());
                    }
                    Err(e) => break 'fill Err(e),
                }
            }
            loop {
                let next = earliest_ring(ring, self.open.slot, cursors, stage, staged, lost, until);
                if *lost > 0 {
                    format_lost(line, now_ns(), *lost);
                    match output.push(line, 0, *lost) {
                        Ok(true) => *lost = 0,
                        Ok(false) => {
                            too_long = output.len == 0;
                            break 'fill Ok(());
                        }
                        Err(e) => break 'fill Err(e),
                    }
                }
                let Some(cpu) = next else {
                    break 'fill Ok(());
                };
                let (Some(cursor), Some(part)) = (cursors.get_mut(cpu), staged.get_mut(cpu)) else {
                    break 'fill Ok(());
                };
                let decoded = stage
                    .get(cpu * BLOCK_BYTES + part.start..cpu * BLOCK_BYTES + part.end)
                    .and_then(|bytes| packed::decode(bytes, &mut cursor.state, event, stack));
                let Some((size, stack_len)) = decoded else {
                    drop_staged(cursor, part, lost);
                    continue;
                };
                part.start += size;
                part.records = part.records.saturating_sub(1);
                format_event(line, event, stack.get(..stack_len).unwrap_or(&[]));
                match output.push(line, 1, 0) {
                    Ok(true) => {}
                    Ok(false) => {
                        *held = true;
                        too_long = output.len == 0;
                        break 'fill Ok(());
                    }
                    Err(e) => {
                        *held = true;
                        break 'fill Err(e);
                    }
                }
            }
        };
        let result = result.and_then(|()| output.flush());
        // Lines that could not be copied out are lost to this reader, and reported so.
        *lost += output.events + output.lost;
        ring.consumed(output.delivered, output.lost_reported);
        match result {
            Err(e) if output.written == 0 => Err(e),
            Ok(()) if output.written == 0 && too_long => Err(EINVAL),
            _ => Ok(output.written),
        }
    }
}

/// Fetches more records from each ring whose staged ones ran out (as the tracked reader of
/// `slot`, if any), and returns the ring whose
/// next staged record is the earliest of those stamped up to `until`, if any. Records that do
/// not decode, or are stamped later than now, are dropped and counted in `lost`.
fn earliest_ring(
    ring: &Ring,
    slot: Option<usize>,
    cursors: &mut [Cursor],
    stage: &mut [u8],
    staged: &mut [Staged],
    lost: &mut u64,
    until: u64,
) -> Option<usize> {
    let mut next: Option<(u64, usize)> = None;
    for (cpu, (cursor, part)) in cursors.iter_mut().zip(staged.iter_mut()).enumerate() {
        let Some(bytes) = stage.get_mut(cpu * BLOCK_BYTES..(cpu + 1) * BLOCK_BYTES) else {
            continue;
        };
        if part.start == part.end {
            // Whatever was not decoded of the last fetch (it cannot happen).
            *lost += part.records;
            let fetched = ring.fetch(cpu, cursor, bytes, slot);
            *lost += fetched.lost;
            *part = Staged {
                start: 0,
                end: fetched.bytes,
                records: fetched.records,
            };
        }
        if part.start == part.end {
            continue;
        }
        match bytes
            .get(part.start..part.end)
            .and_then(|bytes| packed::time(bytes, &cursor.state))
        {
            // Newer than this read; but a time later than now cannot have been
            // stamped (it cannot happen): dropped, or it would never be read.
            Some(time) if time > until => {
                if time > now_ns() {
                    drop_staged(cursor, part, lost);
                }
            }
            Some(time) => {
                if next.is_none_or(|(first, _)| time < first) {
                    next = Some((time, cpu));
                }
            }
            None => drop_staged(cursor, part, lost),
        }
    }
    next.map(|(_, cpu)| cpu)
}

/// Drops the records staged in `part`, which do not decode (it cannot happen), as lost, and
/// the rest of their block with them.
fn drop_staged(cursor: &mut Cursor, part: &mut Staged, lost: &mut u64) {
    *lost += part.records;
    *part = Staged::default();
    cursor.skip_block();
}

#[vtable]
impl ProcFile for EventsFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        let ring = &monitor.state.ring;
        let mut cursors = VVec::with_capacity(ring.count(), GFP_KERNEL)?;
        let mut staged = KVec::with_capacity(ring.count(), GFP_KERNEL)?;
        for _ in 0..ring.count() {
            cursors.push(Cursor::default(), GFP_KERNEL)?;
            staged.push(Staged::default(), GFP_KERNEL)?;
        }
        let mut chunk = KVec::with_capacity(CHUNK_BYTES, GFP_KERNEL)?;
        chunk.extend_with(CHUNK_BYTES, 0, GFP_KERNEL)?;
        let mut stage = VVec::with_capacity(ring.count() * BLOCK_BYTES, GFP_KERNEL)?;
        stage.extend_with(ring.count() * BLOCK_BYTES, 0, GFP_KERNEL)?;
        let open = OpenReader::new(monitor.into(), &mut cursors);
        KBox::try_pin_init(
            try_pin_init!(Self {
                monitor: monitor.into(),
                open,
                reading <- new_mutex!(ReadState {
                    cursors,
                    stage,
                    staged,
                    lost: 0,
                    held: false,
                    event: Event::zeroed(),
                    stack: [0; STACK_MAX],
                    line: Line::new(),
                    chunk,
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
                self.readiness(false)
            } else {
                ring.wait_readable(|| self.readiness(true))?
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
                lock_killable(&self.reading)?
            };
            let written = self.fill(&mut state, &mut out)?;
            if written > 0 {
                return Ok(written);
            }
            // Another reader of this open file took what there was, or the records are
            // newer than this read: wait again.
        }
    }

    fn poll(&self, file: &LocalFile, table: &PollTableRef<'_>) -> u32 {
        self.monitor.state.ring.register_poller(file, table);
        poll_mask(self.readiness(true))
    }
}
