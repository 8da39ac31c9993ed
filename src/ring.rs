// SPDX-License-Identifier: GPL-2.0

//! The event rings: one per CPU, each a power-of-two number of 2 KiB blocks of
//! [`crate::record::packed`] records under its own spinlock, overwritten oldest block first, read by
//! any number of readers each at its own position and merged by time.
//!
//! A producer writes to the ring of the CPU it runs on and stamps the record's time while it
//! holds that ring's lock, so each ring is in time order and CPUs do not contend. A record is
//! coded against the one before it in its block (a fault takes about 8 bytes), and every
//! block can be decoded on its own. A reader keeps, per ring, the sequence number, block and
//! offset of the next record it wants; when that record's block has been overwritten, it is
//! told exactly how many records it missed.
//!
//! A reader that opened `events` while fewer than [`TRACKED_READERS`] others had it open is
//! tracked: each ring knows the block it reads. As the unread part of a ring grows, the
//! producers shed detail before anything is overwritten ([`Pressure`]): stacks are cut short,
//! then left out, then faults are not recorded (counted per process, and reported to every
//! reader as `dropped` lines once there is room again), while the calls, execs, forks, exits
//! and `rss` lines that the address-space model needs are still written. Only a ring that
//! fills all the same overwrites its oldest block.
//!
//! Readers are woken only when one waits (it sets [`Readers::waiting`] before it sleeps) and
//! not for every event: a producer that sees a waiter wakes it at once when a quarter of its
//! ring ([`WAKE_FILL_DIVISOR`]: before any shedding starts, at half) has been written since
//! the last wake-up, and otherwise arms a timer that wakes it
//! [`WAKE_DELAY_NS`] (1 ms) later, so a lone event reaches a sleeping reader within a few
//! milliseconds. (Measured under TCG: waking at half a ring and after 1 or 2 ms costs a
//! 2-thread fault storm 10 to 25 % less than at an eighth and after 0.5 ms, with no event lost
//! behind `cat`; 1 ms keeps a lone event's latency well under 10 ms on a loaded host.)

use crate::bindings;
use crate::kernel_ext::hrtimer::{OneShotTimer, TimerHandler};
use crate::kernel_ext::kcrate::{
    alloc::flags::GFP_KERNEL,
    alloc::{KVec, VVec},
    fs::LocalFile,
    new_mutex, new_spinlock, static_lock_class,
    sync::{
        atomic::{Acquire, Atomic, Full, Relaxed, Release},
        Mutex, SpinLock,
    },
};
use crate::kernel_ext::pollqueue::{PollQueue, ALL_EVENTS};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::procfs::PollTableRef;
use crate::kernel_ext::task::now_ns;
use crate::record::copy::copy_bytes;
use crate::record::event::{Event, Kind, StackEnd};
use crate::record::packed::{self, State, PACKED_MAX};

/// How long a lone event may wait in a ring before a sleeping reader is woken for it.
pub(crate) const WAKE_DELAY_NS: u64 = 1_000_000;

/// A waiting reader is woken at once when a ring is filled to 1/this of its size: before
/// [`Pressure::Shallow`] (half a ring unread) starts shedding.
const WAKE_FILL_DIVISOR: usize = 4;

/// Readers whose position the rings track (and so whose lag makes the producers shed); a
/// reader that opens `events` while this many are open reads as the others, but the
/// producers do not wait for it: records it has not read yet may be overwritten.
pub(crate) const TRACKED_READERS: usize = 8;

const _: () = assert!(TRACKED_READERS <= u8::BITS as usize);

/// A tracked reader slot that no reader holds.
const NO_READER: u64 = u64::MAX;

/// Processes whose faults not recorded one ring counts apart until it reports them; the
/// faults of others are counted together, under pid 0.
const DROPPED_PROCESSES: usize = 4;

/// How long faults may be dropped in a row, for want of a reader that reads, before that
/// reader is given up on: far longer than a busy machine keeps a reader waiting for a CPU.
const DROP_PATIENCE_NS: u64 = 5_000_000_000;

/// The most stack entries written under [`Pressure::Shallow`].
pub(crate) const SHALLOW_DEPTH: usize = 16;

/// How far behind the slowest tracked reader is in a ring, and so what the producers shed
/// there.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[repr(u32)]
pub(crate) enum Pressure {
    /// Less than half the ring unread: everything is written whole.
    None = 0,
    /// Half or more: stacks are cut to [`SHALLOW_DEPTH`] entries (`stack_end=shed`).
    Shallow = 1,
    /// Three quarters or more: no stacks are walked (`stack_end=shed`).
    NoStacks = 2,
    /// Seven eighths or more: faults are not recorded, only counted per process.
    DropFaults = 3,
}

impl Pressure {
    /// The pressure of a ring of `blocks` blocks of which `unread` are not read yet.
    fn of(unread: u64, blocks: u64) -> Self {
        if unread * 8 >= blocks * 7 {
            Self::DropFaults
        } else if unread * 4 >= blocks * 3 {
            Self::NoStacks
        } else if unread * 2 >= blocks {
            Self::Shallow
        } else {
            Self::None
        }
    }

    fn from_u32(value: u32) -> Self {
        match value {
            1 => Self::Shallow,
            2 => Self::NoStacks,
            3 => Self::DropFaults,
            _ => Self::None,
        }
    }

    /// How many of `depth` stack entries to walk under this pressure.
    pub(crate) fn depth(self, depth: usize) -> usize {
        match self {
            Self::None => depth,
            Self::Shallow => depth.min(SHALLOW_DEPTH),
            Self::NoStacks | Self::DropFaults => 0,
        }
    }
}

/// Smallest ring of one CPU, in bytes: two blocks, room for two of the largest records and
/// for hundreds of faults.
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
    /// Records whose stack was cut short or left out under pressure.
    pub(crate) shed_stacks: u64,
    /// Faults not recorded under pressure.
    pub(crate) dropped_faults: u64,
}

/// Bytes of a block: the unit in which a ring is written and overwritten, and the most a
/// reader copies out of a ring at once. Room for the largest record, one of 127 stack
/// entries ([`PACKED_MAX`]: 1 509 bytes).
pub(crate) const BLOCK_BYTES: usize = 2048;
const _: () = assert!(
    PACKED_MAX <= BLOCK_BYTES && CPU_RING_MIN % BLOCK_BYTES == 0 && CPU_RING_MIN / BLOCK_BYTES >= 2
);

/// What a ring knows of one of its blocks.
#[derive(Clone, Copy, Default)]
struct Block {
    /// Sequence number of its first record.
    first_seq: u64,
    /// Records in it.
    count: u64,
    /// Bytes of them.
    used: usize,
}

/// One CPU's ring: blocks of [`BLOCK_BYTES`] of [`crate::record::packed`] records, each block coded
/// on its own, written in turn; when all are in use, the oldest block is overwritten whole.
///
/// # Invariants
///
/// `blocks.len()` is a power of two, at least 2, and `buf.len() == blocks.len() *
/// BLOCK_BYTES`. Blocks are numbered from 0 on as they are started; block number `n` lies in
/// slot `n % blocks.len()`. The blocks held are `tail_block..=head_block`, with
/// `head_block - tail_block < blocks.len()`; they hold the records with sequence numbers
/// `tail_seq..head_seq` in order, `tail_seq` being the first of block `tail_block`, and
/// `state` is the coding state after the last record of block `head_block`. `readers[i]` is
/// [`NO_READER`] for a free slot, else a block number at most `head_block` that only grows;
/// `pressure` is [`Pressure::of`] the blocks after the lowest of them that is at least
/// `tail_block` and not `abandoned` ([`Pressure::None`] when there is none), as of the last
/// change to them.
struct CpuRing {
    buf: VVec<u8>,
    blocks: VVec<Block>,
    head_block: u64,
    tail_block: u64,
    head_seq: u64,
    tail_seq: u64,
    state: State,
    /// Bytes written since the readers were last woken, while one waits.
    unwoken: usize,
    per_kind: [u64; Kind::COUNT],
    /// Per tracked reader slot: the block its cursor is in, or the block that was the head
    /// when it opened while it reads what the ring held before ([`NO_READER`]: none).
    readers: [u64; TRACKED_READERS],
    /// Tracked readers given up on until they read again, one bit per slot.
    abandoned: u8,
    /// What the slowest tracked reader's lag makes the producers shed.
    pressure: Pressure,
    /// When the first fault was dropped since the ring last left [`Pressure::DropFaults`]
    /// (0: none since).
    dropping_since: u64,
    /// Faults not recorded and not yet reported, per process (pid 0: a free entry) ...
    dropped: [(i32, u64); DROPPED_PROCESSES],
    /// ... and of the processes that found no entry.
    dropped_others: u64,
    shed_stacks: u64,
    dropped_faults: u64,
}

impl CpuRing {
    fn new(bytes: usize) -> Result<Self> {
        let count = bytes / BLOCK_BYTES;
        let mut buf = VVec::with_capacity(bytes, GFP_KERNEL)?;
        buf.extend_with(bytes, 0, GFP_KERNEL)?;
        // Up to 256 MiB / 2 KiB blocks on one CPU: more than kmalloc gives at once.
        let mut blocks = VVec::with_capacity(count, GFP_KERNEL)?;
        blocks.extend_with(count, Block::default(), GFP_KERNEL)?;
        // INVARIANT: callers pass a power of two of at least `CPU_RING_MIN`, a multiple of
        // `BLOCK_BYTES`; block 0 is started, empty.
        Ok(Self {
            buf,
            blocks,
            head_block: 0,
            tail_block: 0,
            head_seq: 0,
            tail_seq: 0,
            state: State::ZERO,
            unwoken: 0,
            per_kind: [0; Kind::COUNT],
            readers: [NO_READER; TRACKED_READERS],
            abandoned: 0,
            pressure: Pressure::None,
            dropping_since: 0,
            dropped: [(0, 0); DROPPED_PROCESSES],
            dropped_others: 0,
            shed_stacks: 0,
            dropped_faults: 0,
        })
    }

    /// The tracked readers the producers wait for, as (slot, block): those whose block is
    /// still held and that were not given up on.
    fn counted_readers(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let tail = self.tail_block;
        self.readers
            .iter()
            .copied()
            .enumerate()
            .filter(move |(slot, block)| {
                *block != NO_READER && self.abandoned & (1 << slot) == 0 && *block >= tail
            })
    }

    /// Recomputes [`CpuRing::pressure`] from the slowest counted reader's block
    /// ([`CpuRing::counted_readers`]).
    fn update_pressure(&mut self) -> Pressure {
        let oldest = self.counted_readers().map(|(_, block)| block).min();
        // INVARIANT: `pressure` is that of the slowest reader counted, `None` without one.
        self.pressure = match oldest {
            // The blocks after its own (which it may have read to its end).
            // CAST: usize fits in u64.
            Some(oldest) => Pressure::of(
                self.head_block.saturating_sub(oldest),
                self.blocks.len() as u64,
            ),
            None => Pressure::None,
        };
        if self.pressure != Pressure::DropFaults {
            self.dropping_since = 0;
        }
        self.pressure
    }

    /// Counts a fault of process `pid`, at `time_ns`, that is not recorded. A reader that let
    /// faults be dropped for [`DROP_PATIENCE_NS`] in a row without reading is given up on: it
    /// no longer holds the others to calls, and may lose records (`lost`) until it reads
    /// again.
    fn count_dropped(&mut self, pid: i32, time_ns: u64) {
        self.dropped_faults += 1;
        if self.dropping_since == 0 {
            self.dropping_since = time_ns;
        }
        if time_ns.saturating_sub(self.dropping_since) > DROP_PATIENCE_NS {
            let slowest = self
                .counted_readers()
                .min_by_key(|(_, block)| *block)
                .map(|(slot, _)| slot);
            if let Some(slot) = slowest {
                self.abandoned |= 1 << slot;
            }
            // The next slowest, if faults are still dropped for it, gets its own patience.
            self.dropping_since = time_ns;
            self.update_pressure();
        }
        let entry = self
            .dropped
            .iter()
            .position(|(p, n)| *p == pid && *n > 0)
            .or_else(|| self.dropped.iter().position(|(_, n)| *n == 0));
        match entry.and_then(|i| self.dropped.get_mut(i)) {
            Some(entry) => *entry = (pid, entry.1 + 1),
            None => self.dropped_others += 1,
        }
    }

    /// Whether it counts faults not recorded of some process that it has not reported yet.
    fn holds_dropped(&self) -> bool {
        self.dropped.iter().any(|(_, faults)| *faults > 0)
    }

    /// Takes the count of faults not recorded of process `pid` that it has not reported.
    fn take_dropped_of(&mut self, pid: i32) -> u64 {
        match self
            .dropped
            .iter_mut()
            .find(|(p, faults)| *p == pid && *faults > 0)
        {
            Some(entry) => core::mem::take(entry).1,
            None => 0,
        }
    }

    /// Writes a `dropped` record for each process whose faults were not recorded since the
    /// last, stamped `time_ns`, unless faults are still being dropped.
    /// Returns whether it wrote any.
    fn report_dropped(&mut self, time_ns: u64) -> bool {
        if self.pressure == Pressure::DropFaults {
            return false;
        }
        let others = (0, core::mem::take(&mut self.dropped_others));
        let entries = core::mem::replace(&mut self.dropped, [(0, 0); DROPPED_PROCESSES]);
        let mut wrote = false;
        for (pid, faults) in Iterator::chain(entries.into_iter(), core::iter::once(others)) {
            if faults > 0 {
                let mut event = Event::new(Kind::Dropped, pid, pid);
                event.args[0] = faults;
                self.push(&event, time_ns, &[]);
                wrote = true;
            }
        }
        wrote
    }

    /// Slot of block number `block`.
    fn slot(&self, block: u64) -> usize {
        // CAST: the result is below `blocks.len()`, a usize.
        (block & (self.blocks.len() as u64 - 1)) as usize
    }

    fn block(&self, block: u64) -> Block {
        self.blocks
            .get(self.slot(block))
            .copied()
            .unwrap_or_default()
    }

    /// The bytes of block number `block` (all of them, used or not).
    fn block_bytes(&self, block: u64) -> &[u8] {
        let start = self.slot(block) * BLOCK_BYTES;
        self.buf.get(start..start + BLOCK_BYTES).unwrap_or(&[])
    }

    /// Starts the next block, overwriting the oldest when all are in use.
    fn next_block(&mut self) {
        // CAST: usize fits in u64.
        if self.head_block + 1 - self.tail_block >= self.blocks.len() as u64 {
            self.tail_seq += self.block(self.tail_block).count;
            self.tail_block += 1;
        }
        self.head_block += 1;
        let slot = self.slot(self.head_block);
        if let Some(block) = self.blocks.get_mut(slot) {
            *block = Block {
                first_seq: self.head_seq,
                count: 0,
                used: 0,
            };
        }
        // INVARIANT: the oldest block was dropped if the new one took its slot; the new block
        // is empty and coded from the start.
        self.state.reset();
        self.update_pressure();
    }

    /// Appends the record of `event`, stamped `time_ns`, with the stack entries `stack`;
    /// returns its size in bytes.
    fn push(&mut self, event: &Event, time_ns: u64, stack: &[u64]) -> usize {
        for _ in 0..2 {
            let head = self.block(self.head_block);
            let start = self.slot(self.head_block) * BLOCK_BYTES + head.used;
            let end = self.slot(self.head_block) * BLOCK_BYTES + BLOCK_BYTES;
            let Some(out) = self.buf.get_mut(start..end) else {
                return 0;
            };
            match packed::encode(event, time_ns, stack, &mut self.state, out) {
                Some(size) => {
                    let slot = self.slot(self.head_block);
                    if let Some(block) = self.blocks.get_mut(slot) {
                        block.count += 1;
                        block.used += size;
                    }
                    self.head_seq += 1;
                    self.per_kind[event.kind as usize] += 1;
                    return size;
                }
                // It does not fit after the block's last record: it fits in an empty block,
                // as `PACKED_MAX <= BLOCK_BYTES`.
                None if head.used > 0 => self.next_block(),
                None => {
                    // It does not fit an empty block (it cannot happen): `encode` may have
                    // moved the coding state on, the block's first record is still to come.
                    self.state.reset();
                    break;
                }
            }
        }
        0
    }

    /// Moves what the ring holds into `grown`, a new ring at least as large, and takes its
    /// place: the blocks held keep their numbers (in their slots of the larger ring), and
    /// the readers their positions. `grown` is left with the old buffers.
    fn move_into(&mut self, grown: &mut CpuRing) {
        for block in self.tail_block..=self.head_block {
            let from = self.slot(block);
            let to = grown.slot(block);
            let meta = self.block(block);
            if let (Some(dst), Some(src)) = (
                grown.buf.get_mut(to * BLOCK_BYTES..(to + 1) * BLOCK_BYTES),
                self.buf.get(from * BLOCK_BYTES..(from + 1) * BLOCK_BYTES),
            ) {
                copy_bytes(dst, src);
            }
            if let Some(slot) = grown.blocks.get_mut(to) {
                *slot = meta;
            }
        }
        // INVARIANT: `head_block - tail_block` is below the old number of blocks, so below
        // the new one, and each block held was copied to its slot in `grown`.
        grown.head_block = self.head_block;
        grown.tail_block = self.tail_block;
        grown.head_seq = self.head_seq;
        grown.tail_seq = self.tail_seq;
        grown.state = self.state;
        grown.unwoken = self.unwoken;
        grown.per_kind = self.per_kind;
        grown.readers = self.readers;
        grown.abandoned = self.abandoned;
        grown.dropping_since = self.dropping_since;
        grown.dropped = self.dropped;
        grown.dropped_others = self.dropped_others;
        grown.shed_stacks = self.shed_stacks;
        grown.dropped_faults = self.dropped_faults;
        grown.update_pressure();
        core::mem::swap(self, grown);
    }

    /// Moves a cursor whose block was overwritten to the oldest record held; returns how
    /// many records it missed: those written since its reader opened (what the ring held
    /// before is read as far as it is still there).
    fn catch_up(&self, cursor: &mut Cursor) -> u64 {
        if cursor.block >= self.tail_block {
            return 0;
        }
        let lost = self.tail_seq.saturating_sub(cursor.seq.max(cursor.since));
        self.rewind(cursor);
        lost
    }

    /// Moves `cursor` to the oldest record held.
    fn rewind(&self, cursor: &mut Cursor) {
        cursor.seq = self.tail_seq;
        cursor.block = self.tail_block;
        cursor.offset = 0;
        cursor.state.reset();
    }
}

/// A reader's position in one ring.
#[derive(Clone, Copy)]
pub(crate) struct Cursor {
    /// Sequence number of the next record to read.
    pub(crate) seq: u64,
    /// Sequence number of the first record written after the reader opened: the ones before
    /// it that are overwritten unread are not lost to it.
    since: u64,
    /// Its block and byte offset in it.
    block: u64,
    offset: usize,
    /// The coding state at `offset`: the one the records [`Ring::fetch`] copied out are coded
    /// against, until the reader has decoded them.
    pub(crate) state: State,
}

impl Cursor {
    /// Makes the next fetch skip the rest of the cursor's block, records written to it later
    /// included; they are counted as lost when the reader moves to the next block.
    pub(crate) fn skip_block(&mut self) {
        self.offset = BLOCK_BYTES;
    }
}

impl Default for Cursor {
    fn default() -> Self {
        Self {
            seq: 0,
            since: 0,
            block: 0,
            offset: 0,
            state: State::ZERO,
        }
    }
}

/// What [`Ring::fetch`] found.
pub(crate) struct Fetched {
    /// Records that were overwritten before the reader got to them.
    pub(crate) lost: u64,
    /// Bytes of the records copied out.
    pub(crate) bytes: usize,
    /// How many records they are.
    pub(crate) records: u64,
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
    /// Per CPU: its ring's [`Pressure`], read without the lock before a stack is walked.
    pressure: KVec<Atomic<u32>>,
    /// Per CPU: whether its ring counts faults not recorded that it has not reported
    /// ([`CpuRing::holds_dropped`]), read without the lock at a process's exit.
    holds_dropped: KVec<Atomic<bool>>,
    /// Bytes of each ring; grows ([`Ring::grow`]), never shrinks.
    ring_bytes: Atomic<usize>,
    /// Serialises [`Ring::grow`].
    #[pin]
    growing: Mutex<()>,
    /// The tracked reader slots in use, one bit each.
    reader_slots: Atomic<u32>,
    /// Set at unload: readers get end of file, nothing more is written.
    closed: Atomic<bool>,
    delivered: Atomic<u64>,
    reported_lost: Atomic<u64>,
    #[pin]
    readers: OneShotTimer<Readers>,
}

impl Ring {
    /// Bytes of each ring when `buflen` bytes are shared by them all: `buflen` divided by the
    /// number of rings (one per possible CPU), rounded down to a power of two, and at least
    /// 4096 bytes.
    pub(crate) fn ring_bytes_for(buflen: usize) -> usize {
        let ring_bytes = buflen / (crate::kernel_ext::kcrate::cpu::nr_cpu_ids() as usize).max(1);
        match ring_bytes.checked_ilog2() {
            Some(log) => (1usize << log).max(CPU_RING_MIN),
            None => CPU_RING_MIN,
        }
    }

    /// Rings for every possible CPU, `buflen` bytes in all ([`Ring::ring_bytes_for`]).
    pub(crate) fn new(buflen: usize) -> Result<impl PinInit<Self, Error>> {
        let ncpus = crate::kernel_ext::kcrate::cpu::nr_cpu_ids() as usize;
        let ring_bytes = Self::ring_bytes_for(buflen);
        let mut cpus = KVec::with_capacity(ncpus, GFP_KERNEL)?;
        let mut pressure = KVec::with_capacity(ncpus, GFP_KERNEL)?;
        let mut holds_dropped = KVec::with_capacity(ncpus, GFP_KERNEL)?;
        for _ in 0..ncpus {
            cpus.push(
                KBox::pin_init(
                    new_spinlock!(CpuRing::new(ring_bytes)?, "memmon_cpu_ring"),
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
            pressure.push(Atomic::new(Pressure::None as u32), GFP_KERNEL)?;
            holds_dropped.push(Atomic::new(false), GFP_KERNEL)?;
        }
        Ok(try_pin_init!(Self {
            cpus,
            pressure,
            holds_dropped,
            ring_bytes: Atomic::new(ring_bytes),
            growing <- new_mutex!((), "memmon_ring_growing"),
            reader_slots: Atomic::new(0),
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
        // A migration after this only means another CPU's ring is used, which its lock
        // protects.
        let cpu = crate::kernel_ext::kcrate::cpu::CpuId::current().as_u32() as usize;
        let Some(ring) = self.cpus.get(cpu) else {
            return;
        };
        let readers = self.readers.handler();
        let wake = {
            let mut ring = ring.lock();
            if event.kind == Kind::Fault && ring.pressure == Pressure::DropFaults {
                // Room kept for the calls, execs, forks and exits.
                ring.count_dropped(event.pid, now_ns());
                self.publish(cpu, &ring);
                return;
            }
            if event.stack_end == StackEnd::Shed {
                ring.shed_stacks += 1;
            }
            // Stamped under the lock: each ring is in time order, and a reader that took
            // `now` before looking at the rings has seen every record stamped before it.
            let size = ring.push(event, now_ns(), stack);
            self.publish_pressure(cpu, &ring);
            // Read under the lock: a reader sets `waiting` before it looks at the rings.
            if readers.waiting.load(Relaxed) {
                ring.unwoken += size;
                if ring.unwoken >= ring.buf.len() / WAKE_FILL_DIVISOR {
                    ring.unwoken = 0;
                    Some(true)
                } else {
                    Some(false)
                }
            } else {
                ring.unwoken = 0;
                None
            }
        };
        match wake {
            Some(true) => readers.wake(),
            Some(false) => self.readers.arm(WAKE_DELAY_NS, WAKE_DELAY_NS / 4),
            None => {}
        }
    }

    /// The [`Pressure`] on the current CPU's ring, for a producer about to walk a stack
    /// (read without its lock: the ring checks again as it writes).
    pub(crate) fn pressure(&self) -> Pressure {
        let cpu = crate::kernel_ext::kcrate::cpu::CpuId::current().as_u32() as usize;
        self.pressure.get(cpu).map_or(Pressure::None, |level| {
            Pressure::from_u32(level.load(Relaxed))
        })
    }

    /// Makes ring `cpu`'s pressure, computed under its lock, visible to producers.
    fn publish_pressure(&self, cpu: usize, ring: &CpuRing) {
        if let Some(level) = self.pressure.get(cpu) {
            let pressure = ring.pressure as u32;
            if level.load(Relaxed) != pressure {
                level.store(pressure, Relaxed);
            }
        }
    }

    /// [`Ring::publish_pressure`], and whether ring `cpu` holds faults not reported, for
    /// [`Ring::report_dropped_of`]: after a change to its counts of faults not recorded
    /// (not after every record written, which leaves them as they are).
    fn publish(&self, cpu: usize, ring: &CpuRing) {
        self.publish_pressure(cpu, ring);
        if let Some(holds) = self.holds_dropped.get(cpu) {
            let now = ring.holds_dropped();
            if holds.load(Relaxed) != now {
                holds.store(now, Release);
            }
        }
    }

    /// Writes to the current CPU's ring one `dropped` record of the faults of process `pid`
    /// that the rings counted and have not reported yet, whatever the pressure. Called as
    /// the process exits, before its `exit` record: readers learn of its faults not recorded
    /// while they still know the process.
    pub(crate) fn report_dropped_of(&self, pid: i32) {
        let mut faults = 0u64;
        for (cpu, ring) in self.cpus.iter().enumerate() {
            // A flag set as this thread dropped a fault on another CPU is seen: it migrated
            // since, through the scheduler's barriers. Other threads' drops are ordered
            // before their exit (the fully ordered decrement of `signal->live`). A flag
            // missed all the same only delays the report to the next reader's read.
            if !self
                .holds_dropped
                .get(cpu)
                .is_some_and(|holds| holds.load(Acquire))
            {
                continue;
            }
            let mut ring = ring.lock();
            faults = faults.saturating_add(ring.take_dropped_of(pid));
            self.publish(cpu, &ring);
        }
        if faults > 0 {
            let mut event = Event::new(Kind::Dropped, pid, pid);
            event.args[0] = faults;
            self.push(&event);
        }
    }

    /// Sets `cursors` to where a reader that starts now begins, at the oldest records held,
    /// and tracks the reader if a slot is free: returns its slot, for [`Ring::fetch`] and
    /// [`Ring::detach_reader`].
    pub(crate) fn attach_reader(&self, cursors: &mut [Cursor]) -> Option<usize> {
        let mut slots = self.reader_slots.load(Relaxed);
        let slot = loop {
            // CAST: at most TRACKED_READERS (8) bits.
            let free = (!slots).trailing_zeros() as usize;
            if free >= TRACKED_READERS {
                break None;
            }
            match self.reader_slots.cmpxchg(slots, slots | (1 << free), Full) {
                Ok(_) => break Some(free),
                Err(now) => slots = now,
            }
        };
        for (cpu, (ring, cursor)) in self.cpus.iter().zip(cursors.iter_mut()).enumerate() {
            let mut ring = ring.lock();
            ring.rewind(cursor);
            // What the ring held before the reader came is not waited for, nor a loss when
            // it is overwritten: only what is written from now on makes the producers shed.
            cursor.since = ring.head_seq;
            let head = ring.head_block;
            if let Some(position) = slot.and_then(|slot| ring.readers.get_mut(slot)) {
                // INVARIANT: the slot was free; its reader starts counting at the head.
                *position = head;
                ring.update_pressure();
                self.publish_pressure(cpu, &ring);
            }
        }
        slot
    }

    /// Stops tracking the reader of `slot` (from [`Ring::attach_reader`]), which is closed.
    pub(crate) fn detach_reader(&self, slot: usize) {
        let mut reported = false;
        for (cpu, ring) in self.cpus.iter().enumerate() {
            let mut ring = ring.lock();
            if let Some(position) = ring.readers.get_mut(slot) {
                // INVARIANT: a free slot holds no position and is not given up on.
                *position = NO_READER;
            }
            ring.abandoned &= !(1 << slot);
            ring.update_pressure();
            reported |= ring.report_dropped(now_ns());
            self.publish(cpu, &ring);
        }
        if reported {
            self.readers.handler().wake();
        }
        let mut slots = self.reader_slots.load(Relaxed);
        while let Err(now) = self
            .reader_slots
            .cmpxchg(slots, slots & !(1u32 << slot), Full)
        {
            slots = now;
        }
    }

    /// Grows every ring to the size `buflen` gives ([`Ring::ring_bytes_for`]), keeping the
    /// records they hold and the readers' positions; a size no larger than the rings' is
    /// left as it is. Returns the bytes of each ring. Sleeps (allocates).
    pub(crate) fn grow(&self, buflen: usize) -> Result<usize> {
        let _growing = self.growing.lock();
        let ring_bytes = Self::ring_bytes_for(buflen);
        if ring_bytes <= self.ring_bytes.load(Relaxed) {
            return Ok(self.ring_bytes.load(Relaxed));
        }
        // All allocated first, outside the locks: a failure changes no ring.
        let mut grown = KVec::with_capacity(self.cpus.len(), GFP_KERNEL)?;
        for _ in self.cpus.iter() {
            grown.push(CpuRing::new(ring_bytes)?, GFP_KERNEL)?;
        }
        let mut reported = false;
        for (cpu, (ring, larger)) in self.cpus.iter().zip(grown.iter_mut()).enumerate() {
            let mut ring = ring.lock();
            // The copy of what the ring holds (at most its old size) is made under its lock.
            ring.move_into(larger);
            reported |= ring.report_dropped(now_ns());
            self.publish(cpu, &ring);
        }
        // The old buffers, freed outside the locks.
        drop(grown);
        self.ring_bytes.store(ring_bytes, Relaxed);
        if reported {
            self.readers.handler().wake();
        }
        Ok(ring_bytes)
    }

    /// Copies, as they are, the packed records that follow `cursor` in its block of ring
    /// `cpu` to the start of `out`, and moves the cursor past them: first to the oldest
    /// record held if its block was overwritten, and on to the next block if its own was read
    /// to its end. The lock is held only for the copy; the caller decodes the records with
    /// the cursor's [`Cursor::state`], which leaves it as the next fetch needs it, and
    /// fetches again only when it has decoded them all.
    /// A tracked reader (its `slot`) moves its position in the ring with it, which eases the
    /// ring's pressure, and reports the faults not recorded once there is room again.
    pub(crate) fn fetch(
        &self,
        cpu: usize,
        cursor: &mut Cursor,
        out: &mut [u8],
        slot: Option<usize>,
    ) -> Fetched {
        let mut fetched = Fetched {
            lost: 0,
            bytes: 0,
            records: 0,
        };
        let Some(ring) = self.cpus.get(cpu) else {
            return fetched;
        };
        let mut ring = ring.lock();
        fetched.lost = ring.catch_up(cursor);
        loop {
            let block = ring.block(cursor.block);
            let end = block.first_seq + block.count;
            if cursor.offset >= block.used {
                // The block is read to its end, or the rest of it was skipped: records
                // written to it since a skip are lost to this reader.
                fetched.lost += end.saturating_sub(cursor.seq);
                cursor.seq = cursor.seq.max(end);
                if cursor.block >= ring.head_block {
                    break;
                }
                // Later records are in the next block.
                cursor.block += 1;
                cursor.offset = 0;
                cursor.state.reset();
                continue;
            }
            let bytes = ring
                .block_bytes(cursor.block)
                .get(cursor.offset..block.used)
                .unwrap_or(&[]);
            fetched.bytes = copy_bytes(out, bytes);
            if fetched.bytes < bytes.len() {
                // `out` is smaller than a block (it cannot happen): skip the rest.
                fetched.lost += end.saturating_sub(cursor.seq.max(cursor.since));
                fetched.bytes = 0;
                cursor.seq = end;
                cursor.offset = BLOCK_BYTES;
                break;
            }
            fetched.records = end.saturating_sub(cursor.seq);
            cursor.seq = end;
            cursor.offset = block.used;
            break;
        }
        let mut reported = false;
        if let Some(slot) = slot {
            let slowest = ring.counted_readers().map(|(_, block)| block).min();
            if let Some(position) = ring.readers.get_mut(slot) {
                let was = *position;
                // INVARIANT: a reader's position only moves on, and counts again once it
                // reads.
                *position = was.max(cursor.block);
                let moved = *position > was;
                ring.abandoned &= !(1 << slot);
                if moved && slowest == Some(was) {
                    // The slowest reader reads: faults dropped from now on are not "in a row
                    // without reading" (DROP_PATIENCE_NS) with those before.
                    ring.dropping_since = 0;
                }
                ring.update_pressure();
                // Stamped after every record this reader has fetched: it reads them next.
                reported = ring.report_dropped(now_ns());
                self.publish(cpu, &ring);
            }
        }
        drop(ring);
        if reported {
            // For the other readers, who may be waiting.
            self.readers.handler().wake();
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
    /// something to read, without waiting. A reader that will wait if it finds nothing
    /// (`will_wait`: a blocking read, a poll) is marked as waiting first, so that a record
    /// written after this found nothing wakes it; a non-blocking read is not, so that
    /// producers arm no wake-up for it.
    pub(crate) fn readiness(
        &self,
        cursors: &[Cursor],
        pending: bool,
        will_wait: bool,
    ) -> Readiness {
        if self.closed.load(Relaxed) {
            return Readiness::Closed;
        }
        if pending {
            return Readiness::Ready;
        }
        if will_wait {
            self.readers.handler().waiting.xchg(true, Full);
        }
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
            ring_bytes: self.ring_bytes.load(Relaxed),
            shed_stacks: 0,
            dropped_faults: 0,
        };
        for ring in self.cpus.iter() {
            let ring = ring.lock();
            stats.produced += ring.head_seq;
            stats.overwritten += ring.tail_seq;
            stats.shed_stacks += ring.shed_stacks;
            stats.dropped_faults += ring.dropped_faults;
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

    /// Registers a poll, select or epoll call on new events, unless the rings are closed
    /// (the caller's poll then returns every event bit, and a registration would only keep
    /// unload waiting until the next round of [`PollQueue::drain`]).
    pub(crate) fn register_poller(&self, file: &LocalFile, table: &PollTableRef<'_>) {
        if self.closed.load(Acquire) {
            return;
        }
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
