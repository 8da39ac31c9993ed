// SPDX-License-Identifier: GPL-2.0

//! The event rings: one per CPU, each a power-of-two byte ring of [`crate::record`]s under its
//! own spinlock, overwritten oldest-first, read by any number of readers each at its own
//! position and merged by time.
//!
//! A producer writes to the ring of the CPU it runs on and stamps the record's time while it
//! holds that ring's lock, so each ring is in time order and CPUs do not contend. A reader
//! keeps, per ring, the sequence number and byte position of the next record it wants; when
//! that record has been overwritten, it is told exactly how many records it missed.
//!
//! Readers are woken only when one waits (it sets [`Readers::waiting`] before it sleeps) and
//! not for every event: a producer that sees a waiter wakes it at once when its ring is an
//! eighth full, and otherwise arms a timer that wakes it [`WAKE_DELAY_NS`] later, so a lone
//! event reaches a sleeping reader within a millisecond or so.

use crate::event::{now_ns, Event, Kind};
use crate::pollqueue::{PollQueue, ALL_EVENTS};
use crate::procfs::PollTableRef;
use crate::record::{self, BODY_MAX, RECORD_MAX};
use crate::stack::STACK_MAX;
use crate::timer::{OneShotTimer, TimerHandler};
use kernel::{
    alloc::flags::GFP_KERNEL,
    alloc::{KVec, VVec},
    bindings,
    fs::LocalFile,
    new_spinlock,
    prelude::*,
    static_lock_class,
    sync::{
        atomic::{Atomic, Full, Relaxed, Release},
        SpinLock,
    },
};

/// How long a lone event may wait in a ring before a sleeping reader is woken for it.
pub(crate) const WAKE_DELAY_NS: u64 = 500_000;

/// A waiting reader is woken at once when a ring is filled to 1/this of its size.
const WAKE_FILL_DIVISOR: u64 = 8;

/// Smallest ring of one CPU, in bytes (room for many of the largest records).
const CPU_RING_MIN: usize = 4096;

/// The counters of `/proc/memmon/stats` that the rings keep.
#[derive(Clone, Copy)]
pub(crate) struct Stats {
    /// Events written.
    pub(crate) produced: u64,
    /// Events pushed out of the rings by newer ones (read or not).
    pub(crate) overwritten: u64,
    /// Events copied to readers (a reader counts each event it reads).
    pub(crate) delivered: u64,
    /// Events reported to readers as lost.
    pub(crate) reported_lost: u64,
    /// Events written, by kind.
    pub(crate) per_kind: [u64; Kind::COUNT],
    /// Number of rings (one per possible CPU).
    pub(crate) rings: usize,
    /// Bytes of each ring.
    pub(crate) ring_bytes: usize,
}

/// One CPU's ring.
///
/// # Invariants
///
/// `buf.len()` is a power of two, at least [`RECORD_MAX`]; the records with sequence numbers
/// `tail_seq..head_seq` lie back to back from byte position `tail` to `head` (positions are
/// taken modulo `buf.len()`), and `head - tail <= buf.len()`.
struct CpuRing {
    buf: VVec<u8>,
    head: u64,
    tail: u64,
    head_seq: u64,
    tail_seq: u64,
    per_kind: [u64; Kind::COUNT],
}

impl CpuRing {
    fn new(bytes: usize) -> Result<Self> {
        let mut buf = VVec::with_capacity(bytes, GFP_KERNEL)?;
        buf.extend_with(bytes, 0, GFP_KERNEL)?;
        // INVARIANT: callers pass a power of two of at least `CPU_RING_MIN >= RECORD_MAX`
        // bytes; the ring is empty.
        Ok(Self {
            buf,
            head: 0,
            tail: 0,
            head_seq: 0,
            tail_seq: 0,
            per_kind: [0; Kind::COUNT],
        })
    }

    fn size(&self) -> u64 {
        // CAST: usize fits in u64 on every supported architecture.
        self.buf.len() as u64
    }

    /// Index of byte position `pos` in `buf`.
    fn index(&self, pos: u64) -> usize {
        // CAST: the result is below `buf.len()`, a usize.
        (pos & (self.size() - 1)) as usize
    }

    fn write(&mut self, pos: u64, bytes: &[u8]) {
        let start = self.index(pos);
        let first = bytes.len().min(self.buf.len() - start);
        self.buf[start..start + first].copy_from_slice(&bytes[..first]);
        self.buf[..bytes.len() - first].copy_from_slice(&bytes[first..]);
    }

    fn read(&self, pos: u64, out: &mut [u8]) {
        let start = self.index(pos);
        let first = out.len().min(self.buf.len() - start);
        let len = out.len();
        out[..first].copy_from_slice(&self.buf[start..start + first]);
        out[first..].copy_from_slice(&self.buf[..len - first]);
    }

    /// Size of the record at byte position `pos`.
    fn record_size(&self, pos: u64) -> u64 {
        let mut bytes = [0u8; size_of::<record::Header>()];
        self.read(pos, &mut bytes);
        // A record is never smaller than its header; the bound keeps a corrupted size from
        // stalling the ring.
        record::header(&bytes)
            .map_or(0, |h| u64::from(h.size))
            .max(bytes.len() as u64)
    }

    /// Appends the record made of `body` and the stack entries `stack` (at most
    /// [`RECORD_MAX`] bytes in all), dropping the oldest records to make room.
    fn push(&mut self, body: &[u8], stack: &[u64], kind: Kind) {
        // CAST: a record is at most RECORD_MAX bytes.
        let len = (body.len() + 8 * stack.len()) as u64;
        while self.head + len - self.tail > self.size() {
            self.tail += self.record_size(self.tail);
            self.tail_seq += 1;
        }
        // INVARIANT: the oldest records were dropped until the record fits after `head`.
        self.write(self.head, body);
        let mut at = self.head + body.len() as u64;
        for entry in stack {
            self.write(at, &entry.to_ne_bytes());
            at += 8;
        }
        self.head += len;
        self.head_seq += 1;
        self.per_kind[kind as usize] += 1;
    }
}

/// A reader's position in one ring.
#[derive(Clone, Copy, Default)]
pub(crate) struct Cursor {
    /// Sequence number of the next record to read.
    pub(crate) seq: u64,
    /// Its byte position.
    pos: u64,
}

/// What [`Ring::fetch`] found.
pub(crate) struct Fetched {
    /// Records that were overwritten before the reader got to them.
    pub(crate) lost: u64,
    /// Bytes of the whole records copied out.
    pub(crate) bytes: usize,
}

/// What a reader may do next.
pub(crate) enum Readiness {
    /// There is something to read.
    Ready,
    /// Nothing yet.
    Empty,
    /// The module is unloading: end of file.
    Closed,
}

/// The readers' side of the rings: the wait queue that blocked readers and pollers sleep on.
#[pin_data]
pub(crate) struct Readers {
    #[pin]
    queue: PollQueue,
    /// A reader or poller is about to sleep or sleeps: producers must see that it is woken.
    waiting: Atomic<bool>,
}

impl Readers {
    /// Wakes the waiting readers and pollers, if any.
    fn wake(&self) {
        if self.waiting.load(Relaxed) && self.waiting.xchg(false, Full) {
            self.queue.wake(bindings::POLLIN | bindings::POLLRDNORM);
        }
    }
}

impl TimerHandler for Readers {
    fn expired(&self) {
        self.wake();
    }
}

/// The event rings.
#[pin_data]
pub(crate) struct Ring {
    cpus: KVec<Pin<KBox<SpinLock<CpuRing>>>>,
    ring_bytes: usize,
    /// Set at unload: readers get end of file, nothing more is written.
    closed: Atomic<bool>,
    delivered: Atomic<u64>,
    reported_lost: Atomic<u64>,
    #[pin]
    readers: OneShotTimer<Readers>,
}

impl Ring {
    /// Rings for every possible CPU, `buflen` bytes in all: each gets `buflen` divided by the
    /// number of CPUs, rounded down to a power of two, and at least 4096 bytes.
    pub(crate) fn new(buflen: usize) -> Result<impl PinInit<Self, Error>> {
        let ncpus = kernel::cpu::nr_cpu_ids() as usize;
        let ring_bytes = buflen.checked_div(ncpus).ok_or(EINVAL)?;
        let ring_bytes = match ring_bytes.checked_ilog2() {
            Some(log) => (1usize << log).max(CPU_RING_MIN),
            None => CPU_RING_MIN,
        };
        let mut cpus = KVec::with_capacity(ncpus, GFP_KERNEL)?;
        for _ in 0..ncpus {
            cpus.push(
                KBox::pin_init(
                    new_spinlock!(CpuRing::new(ring_bytes)?, "memmon_cpu_ring"),
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
        }
        Ok(try_pin_init!(Self {
            cpus,
            ring_bytes,
            closed: Atomic::new(false),
            delivered: Atomic::new(0),
            reported_lost: Atomic::new(0),
            readers <- OneShotTimer::new(pin_init!(Readers {
                queue <- PollQueue::new(c"memmon_readers", static_lock_class!()),
                waiting: Atomic::new(false),
            })),
        }? Error))
    }

    /// Number of rings: readers keep one cursor for each.
    pub(crate) fn count(&self) -> usize {
        self.cpus.len()
    }

    /// Appends `event` to the ring of the current CPU, overwriting the oldest records when
    /// full, and stamps it with the time. Callable in atomic context, not from NMI.
    pub(crate) fn push(&self, event: &Event) {
        self.push_with_stack(event, &[]);
    }

    /// [`Ring::push`] of `event` with its user call stack.
    pub(crate) fn push_with_stack(&self, event: &Event, stack: &[u64]) {
        if self.closed.load(Relaxed) {
            return;
        }
        let stack = &stack[..stack.len().min(STACK_MAX)];
        let mut body = [0u8; BODY_MAX];
        let (body_size, _) = record::encode(event, stack.len(), &mut body);
        // A migration after this only means another CPU's ring is used, which its lock
        // protects.
        let cpu = kernel::cpu::CpuId::current().as_u32() as usize;
        let Some(ring) = self.cpus.get(cpu) else {
            return;
        };
        let readers = self.readers.handler();
        let (waiting, fill) = {
            let mut ring = ring.lock();
            // Stamped under the lock: each ring is in time order, and a reader that took
            // `now` before looking at the rings has seen every record stamped before it.
            record::stamp(&mut body, now_ns());
            ring.push(&body[..body_size], stack, event.kind);
            // Read under the lock: a reader sets `waiting` before it looks at the rings.
            (readers.waiting.load(Relaxed), ring.head - ring.tail)
        };
        if waiting {
            // CAST: usize fits in u64.
            if fill >= self.ring_bytes as u64 / WAKE_FILL_DIVISOR {
                readers.wake();
            } else {
                self.readers.arm(WAKE_DELAY_NS, WAKE_DELAY_NS / 4);
            }
        }
    }

    /// Sets `cursors` to where a reader that starts now begins: at the oldest records held.
    pub(crate) fn start_cursors(&self, cursors: &mut [Cursor]) {
        for (ring, cursor) in self.cpus.iter().zip(cursors.iter_mut()) {
            let ring = ring.lock();
            *cursor = Cursor {
                seq: ring.tail_seq,
                pos: ring.tail,
            };
        }
    }

    /// Copies the records from `cursor` in ring `cpu` that were stamped at or before
    /// `until_ns` into `out`, as many whole ones as fit, and moves the cursor past them; first
    /// moves a cursor whose records were overwritten to the oldest record held, and says how
    /// many it missed.
    pub(crate) fn fetch(
        &self,
        cpu: usize,
        cursor: &mut Cursor,
        until_ns: u64,
        out: &mut [u8],
    ) -> Fetched {
        let mut fetched = Fetched { lost: 0, bytes: 0 };
        let Some(ring) = self.cpus.get(cpu) else {
            return fetched;
        };
        let ring = ring.lock();
        if cursor.seq < ring.tail_seq {
            fetched.lost = ring.tail_seq - cursor.seq;
            *cursor = Cursor {
                seq: ring.tail_seq,
                pos: ring.tail,
            };
        }
        while cursor.seq < ring.head_seq {
            // CAST: record sizes are at most RECORD_MAX.
            let size = (ring.record_size(cursor.pos) as usize).min(RECORD_MAX);
            let Some(dst) = out.get_mut(fetched.bytes..fetched.bytes + size) else {
                break;
            };
            ring.read(cursor.pos, dst);
            if record::header(dst).is_none_or(|h| h.time_ns > until_ns) {
                break;
            }
            cursor.seq += 1;
            cursor.pos += size as u64;
            fetched.bytes += size;
        }
        fetched
    }

    /// Whether a reader at `cursors` has records to read in any ring.
    fn has_unread(&self, cursors: &[Cursor]) -> bool {
        self.cpus
            .iter()
            .zip(cursors)
            .any(|(ring, cursor)| cursor.seq < ring.lock().head_seq)
    }

    /// Whether a reader at `cursors` (with `pending` records or a lost count held back) has
    /// something to read, without waiting. Marks the reader as waiting first, so that a
    /// record written after this found nothing wakes it.
    pub(crate) fn readiness(&self, cursors: &[Cursor], pending: bool) -> Readiness {
        if self.closed.load(Relaxed) {
            return Readiness::Closed;
        }
        if pending {
            return Readiness::Ready;
        }
        self.readers.handler().waiting.xchg(true, Full);
        if self.has_unread(cursors) {
            Readiness::Ready
        } else {
            Readiness::Empty
        }
    }

    /// Waits until `state()` (see [`Ring::readiness`]) says there is something to read or
    /// the rings closed, and returns what it said last. Returns `ERESTARTSYS` if a signal
    /// arrived.
    pub(crate) fn wait_readable(&self, mut state: impl FnMut() -> Readiness) -> Result<Readiness> {
        let mut last = Readiness::Empty;
        self.readers.handler().queue.wait_interruptible(|| {
            last = state();
            !matches!(last, Readiness::Empty)
        })?;
        Ok(last)
    }

    /// Records that a reader delivered `events` events and reported `lost` lost ones.
    pub(crate) fn consumed(&self, events: u64, lost: u64) {
        if events > 0 {
            self.delivered.fetch_add(events, Relaxed);
        }
        if lost > 0 {
            self.reported_lost.fetch_add(lost, Relaxed);
        }
    }

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> Stats {
        let mut stats = Stats {
            produced: 0,
            overwritten: 0,
            delivered: self.delivered.load(Relaxed),
            reported_lost: self.reported_lost.load(Relaxed),
            per_kind: [0; Kind::COUNT],
            rings: self.cpus.len(),
            ring_bytes: self.ring_bytes,
        };
        for ring in self.cpus.iter() {
            let ring = ring.lock();
            stats.produced += ring.head_seq;
            stats.overwritten += ring.tail_seq;
            for (sum, n) in stats.per_kind.iter_mut().zip(ring.per_kind.iter()) {
                *sum += n;
            }
        }
        stats
    }

    /// Closes the rings: pending and future reads return end of file; readers and pollers are
    /// woken with every event bit, and this waits until they have left the wait queue (epoll
    /// entries are removed). Sleeps.
    pub(crate) fn close(&self) {
        self.closed.store(true, Release);
        self.readers.handler().queue.drain();
    }

    /// Registers a poll, select or epoll call on new events.
    pub(crate) fn register_poller(&self, file: &LocalFile, table: &PollTableRef<'_>) {
        self.readers.handler().queue.register(file, table);
    }
}

/// The poll mask of a reader in `readiness`.
pub(crate) fn poll_mask(readiness: Readiness) -> u32 {
    match readiness {
        Readiness::Ready => bindings::POLLIN | bindings::POLLRDNORM,
        // Every bit, so that whatever a poll or select caller waits for, it returns.
        Readiness::Closed => ALL_EVENTS,
        Readiness::Empty => 0,
    }
}
