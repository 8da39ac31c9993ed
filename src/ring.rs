// SPDX-License-Identifier: GPL-2.0

//! The event ring: fixed-size records, overwritten oldest-first, read by any number of readers
//! each at its own position.
//!
//! Every event gets a sequence number; the ring holds the last `capacity` of them. A reader
//! keeps the sequence number of the next event it wants. When that event has been overwritten,
//! the reader is told exactly how many it missed and continues at the oldest one still held.

use crate::event::{Event, Kind};
use crate::pollqueue::PollQueue;
use crate::procfs::PollTableRef;
use kernel::{
    alloc::flags::GFP_KERNEL,
    alloc::VVec,
    bindings,
    fs::LocalFile,
    new_condvar, new_spinlock,
    prelude::*,
    static_lock_class,
    sync::{CondVar, SpinLock},
};

/// The counters of `/proc/memmon/stats` that the ring keeps.
#[derive(Clone, Copy)]
pub(crate) struct Stats {
    /// Events written.
    pub(crate) produced: u64,
    /// Events pushed out of the ring by newer ones (read or not).
    pub(crate) overwritten: u64,
    /// Events copied to readers (a reader counts each event it reads).
    pub(crate) delivered: u64,
    /// Events reported to readers as lost.
    pub(crate) reported_lost: u64,
    /// Events written, by kind.
    pub(crate) per_kind: [u64; Kind::COUNT],
    /// Slots in the ring.
    pub(crate) capacity: u64,
}

/// State protected by the ring's lock.
///
/// # Invariants
///
/// `slots.len()` is the capacity and is not zero; the events with sequence numbers
/// `head - min(head, capacity) .. head` are in `slots[seq % capacity]`.
struct RingInner {
    slots: VVec<Event>,
    /// Sequence number of the next event to be written (= events produced so far).
    head: u64,
    /// Set at unload: readers get end of file, nothing more is written.
    closed: bool,
    delivered: u64,
    reported_lost: u64,
    per_kind: [u64; Kind::COUNT],
}

impl RingInner {
    fn capacity(&self) -> u64 {
        // CAST: usize fits in u64 on every supported architecture.
        self.slots.len() as u64
    }

    /// Sequence number of the oldest event still held.
    fn oldest(&self) -> u64 {
        self.head.saturating_sub(self.capacity())
    }
}

/// A reader's position in the stream.
#[derive(Clone, Copy, Default)]
pub(crate) struct Cursor {
    /// Sequence number of the next event to read.
    pub(crate) next: u64,
    /// Events missed and not yet reported with a `lost` line.
    pub(crate) lost: u64,
}

/// What a reader may do next.
pub(crate) enum Readiness {
    /// There is something to read (a `lost` line or events).
    Ready,
    /// Nothing yet.
    Empty,
    /// The module is unloading: end of file.
    Closed,
}

/// The event ring buffer.
#[pin_data]
pub(crate) struct Ring {
    #[pin]
    inner: SpinLock<RingInner>,
    /// Signalled on every new event and at close; blocked readers sleep on it.
    #[pin]
    readable: CondVar,
    /// Woken on every new event and at close; poll, select and epoll wait on it.
    #[pin]
    pollers: PollQueue,
}

impl Ring {
    /// A ring of `capacity` events (at least one).
    pub(crate) fn new(capacity: usize) -> Result<impl PinInit<Self, Error>> {
        if capacity == 0 {
            return Err(EINVAL);
        }
        let mut slots = VVec::with_capacity(capacity, GFP_KERNEL)?;
        slots.extend_with(capacity, Event::zeroed(), GFP_KERNEL)?;
        Ok(try_pin_init!(Self {
            inner <- new_spinlock!(RingInner {
                slots,
                head: 0,
                closed: false,
                delivered: 0,
                reported_lost: 0,
                per_kind: [0; Kind::COUNT],
            }, "memmon_ring"),
            readable <- new_condvar!("memmon_ring_readable"),
            pollers <- PollQueue::new(c"memmon_ring_pollers", static_lock_class!()),
        }))
    }

    /// Appends `event`, overwriting the oldest one when full. Callable in atomic context.
    pub(crate) fn push(&self, event: &Event) {
        {
            let mut inner = self.inner.lock();
            if inner.closed {
                return;
            }
            let capacity = inner.capacity();
            // CAST: the remainder is below the capacity, which is a usize.
            let slot = (inner.head % capacity) as usize;
            if let Some(dst) = inner.slots.get_mut(slot) {
                *dst = *event;
            }
            inner.head += 1;
            inner.per_kind[event.kind as usize] += 1;
        }
        self.readable.notify_all();
        self.pollers.wake(bindings::POLLIN | bindings::POLLRDNORM);
    }

    /// The cursor of a reader that starts now: at the oldest event held.
    pub(crate) fn start_cursor(&self) -> Cursor {
        Cursor {
            next: self.inner.lock().oldest(),
            lost: 0,
        }
    }

    fn readiness_locked(inner: &RingInner, cursor: &Cursor) -> Readiness {
        if inner.closed {
            Readiness::Closed
        } else if cursor.lost > 0 || cursor.next < inner.head {
            Readiness::Ready
        } else {
            Readiness::Empty
        }
    }

    /// Whether `cursor` has something to read, without waiting.
    pub(crate) fn readiness(&self, cursor: &Cursor) -> Readiness {
        Self::readiness_locked(&self.inner.lock(), cursor)
    }

    /// Waits until `cursor()` has something to read or the ring closes.
    ///
    /// Returns `ERESTARTSYS` if a signal arrived. `cursor()` is called under the ring's lock
    /// after every wake-up, so that it can return where another thread reading the same file
    /// has moved the position to.
    pub(crate) fn wait_readable(&self, cursor: impl Fn() -> Cursor) -> Result<Readiness> {
        let mut inner = self.inner.lock();
        loop {
            match Self::readiness_locked(&inner, &cursor()) {
                Readiness::Empty => {}
                ready => return Ok(ready),
            }
            if self.readable.wait_interruptible(&mut inner) {
                return Err(ERESTARTSYS);
            }
        }
    }

    /// Copies up to `out.len()` events at `cursor` into `out`, accounting events the cursor
    /// missed into `cursor.lost`. Returns how many were copied; the cursor is not advanced
    /// past them (see [`Ring::consumed`]).
    pub(crate) fn fetch(&self, cursor: &mut Cursor, out: &mut [Event]) -> usize {
        let inner = self.inner.lock();
        let oldest = inner.oldest();
        if cursor.next < oldest {
            cursor.lost += oldest - cursor.next;
            cursor.next = oldest;
        }
        let capacity = inner.capacity();
        let mut copied = 0;
        let mut seq = cursor.next;
        while seq < inner.head && copied < out.len() {
            // CAST: the remainder is below the capacity, which is a usize.
            if let (Some(dst), Some(src)) = (
                out.get_mut(copied),
                inner.slots.get((seq % capacity) as usize),
            ) {
                *dst = *src;
            }
            copied += 1;
            seq += 1;
        }
        copied
    }

    /// Records that a reader delivered `events` events and reported `lost` lost ones.
    pub(crate) fn consumed(&self, events: u64, lost: u64) {
        let mut inner = self.inner.lock();
        inner.delivered += events;
        inner.reported_lost += lost;
    }

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> Stats {
        let inner = self.inner.lock();
        Stats {
            produced: inner.head,
            overwritten: inner.oldest(),
            delivered: inner.delivered,
            reported_lost: inner.reported_lost,
            per_kind: inner.per_kind,
            capacity: inner.capacity(),
        }
    }

    /// Closes the ring: pending and future reads return end of file, pollers wake up.
    pub(crate) fn close(&self) {
        self.inner.lock().closed = true;
        self.readable.notify_all();
        self.pollers
            .wake(bindings::POLLIN | bindings::POLLRDNORM | bindings::POLLHUP);
    }

    /// Registers a poll, select or epoll call on new events.
    pub(crate) fn register_poller(&self, file: &LocalFile, table: &PollTableRef<'_>) {
        self.pollers.register(file, table);
    }
}
