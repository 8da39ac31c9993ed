// SPDX-License-Identifier: GPL-2.0

//! A wait queue for poll(2), select(2) and epoll that can be freed while pollers are on it.
//!
//! poll and select leave an entry on the queue of every file they wait on until the syscall
//! returns; epoll leaves one for as long as the file is registered. Before the queue's memory
//! goes away, [`PollQueue`] removes the epoll entries (a `POLLFREE` wake-up, as
//! `__wake_up_pollfree()` does) and waits until the woken poll and select callers have taken
//! theirs off. The kernel crate's `PollCondVar` does the first but not the second.

use crate::procfs::PollTableRef;
use kernel::{
    bindings,
    fs::LocalFile,
    prelude::*,
    str::CStr,
    sync::{rcu::synchronize_rcu, LockClassKey},
    types::Opaque,
};

/// `POLLFREE` of `uapi/asm-generic/poll.h`: the queue is going away, drop your entry.
const POLLFREE: u32 = 0x4000;

/// The poll key of a wake-up: the events that happened (`poll_to_key()`).
fn poll_key(events: u32) -> *mut c_void {
    // CAST: the key is the event mask, passed as a pointer-sized integer.
    events as usize as *mut c_void
}

/// A wait queue pollers register on.
///
/// # Invariants
///
/// `wq` is an initialised wait queue head; it is not freed while an entry is on it.
#[pin_data(PinnedDrop)]
pub(crate) struct PollQueue {
    #[pin]
    wq: Opaque<bindings::wait_queue_head>,
}

// SAFETY: A wait queue head is used from any thread, under its own lock.
unsafe impl Send for PollQueue {}
// SAFETY: As above.
unsafe impl Sync for PollQueue {}

impl PollQueue {
    /// An empty queue.
    pub(crate) fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            wq <- Opaque::ffi_init(move |slot: *mut bindings::wait_queue_head| {
                // SAFETY: `slot` is valid for writes; `name` and `key` live forever.
                unsafe { bindings::__init_waitqueue_head(slot, name.as_char_ptr(), key.as_ptr()) }
            }),
        })
    }

    /// Registers the poll, select or epoll call that `table` belongs to.
    pub(crate) fn register(&self, file: &LocalFile, table: &PollTableRef<'_>) {
        // SAFETY: `file` is valid for the call; `table.as_ptr()` is null or valid for the
        // call; the queue stays valid until every entry is gone (see `PinnedDrop`).
        unsafe { bindings::poll_wait(file.as_ptr(), self.wq.get(), table.as_ptr()) }
    }

    /// Wakes the pollers: `events` happened.
    pub(crate) fn wake(&self, events: u32) {
        // SAFETY: `wq` is an initialised wait queue head by the type invariants.
        unsafe { bindings::__wake_up(self.wq.get(), bindings::TASK_NORMAL, 0, poll_key(events)) };
    }

    fn is_empty(&self) -> bool {
        // SAFETY: `wq` is initialised; the list head is read racily, as `list_empty_careful()`
        // would, and re-read until it stays empty.
        unsafe {
            let head = &raw mut (*self.wq.get()).head;
            core::ptr::addr_of!((*head).next).read_volatile() == head
        }
    }
}

#[pinned_drop]
impl PinnedDrop for PollQueue {
    fn drop(self: Pin<&mut Self>) {
        // epoll removes its entries on POLLFREE; poll and select are woken.
        self.wake(bindings::POLLHUP | POLLFREE);
        // The woken poll and select callers take their entries off when they return.
        while !self.is_empty() {
            // SAFETY: Sleeping is allowed: the queue is dropped in process context.
            unsafe { bindings::msleep(1) };
        }
        // epoll frees its side under RCU.
        synchronize_rcu();
    }
}
