// SPDX-License-Identifier: GPL-2.0

//! A wait queue for blocking reads, poll(2), select(2) and epoll that can be freed while
//! pollers are on it.
//!
//! Blocking callers wait with [`PollQueue::wait_interruptible`] for a condition, as
//! `wait_event_interruptible()` does; poll, select and epoll register with
//! [`PollQueue::register`]. poll and select leave an entry on the queue of every file they
//! wait on until the syscall returns; epoll leaves one for as long as the file is registered.
//! [`PollQueue::drain`] (and drop) removes the epoll entries (a `POLLFREE` wake-up, as
//! `__wake_up_pollfree()` does) and waits until the woken poll and select callers have taken
//! theirs off. The kernel crate's `PollCondVar` does the first but not the second.

use crate::bindings;
use crate::kernel_ext::kcrate::{fs::LocalFile, sync::LockClassKey, types::Opaque};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::procfs::PollTableRef;

/// Every poll event bit: a wake-up with this key reaches every poller, whatever it waits for.
pub(crate) const ALL_EVENTS: u32 = bindings::POLLIN
    | bindings::POLLPRI
    | bindings::POLLOUT
    | bindings::POLLERR
    | bindings::POLLHUP
    | bindings::POLLRDNORM
    | bindings::POLLRDBAND
    | bindings::POLLWRNORM
    | bindings::POLLWRBAND
    | bindings::POLLMSG
    | bindings::POLLRDHUP;

/// Waits for an RCU grace period (`synchronize_rcu()`): may sleep.
#[cfg(memmon_kernel_7_3)]
fn synchronize_rcu() {
    crate::kernel_ext::kcrate::sync::rcu::synchronize_rcu();
}

/// Waits for an RCU grace period (`synchronize_rcu()`): may sleep.
///
/// FIXME(7.2): `kernel::sync::rcu::synchronize_rcu` from 7.3 on; 7.2's `kernel` crate lacks
/// it.
#[cfg(not(memmon_kernel_7_3))]
fn synchronize_rcu() {
    // SAFETY: `synchronize_rcu()` has no precondition but a context that may sleep, which
    // this function requires of its callers as the kernel crate's wrapper of it does (the
    // one caller is a pinned drop, in process context).
    unsafe { bindings::synchronize_rcu() };
}

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

    /// Waits until `done()` returns true, or a signal arrives (`ERESTARTSYS`).
    ///
    /// `done` is called with the caller already queued and its task state set, so a wake-up
    /// issued after `done` saw nothing (and after whatever it set before looking) is not
    /// lost; it runs with the task state not running, so it must not sleep.
    pub(crate) fn wait_interruptible(&self, mut done: impl FnMut() -> bool) -> Result {
        let entry = Opaque::<bindings::wait_queue_entry>::uninit();
        // SAFETY: `entry` is valid for writes and stays in place until `finish_wait` below.
        unsafe { bindings::init_wait_entry(entry.get(), 0) };
        let result = loop {
            // SAFETY: `wq` is initialised; `entry` is initialised and not on another queue.
            let ret = unsafe {
                bindings::prepare_to_wait_event(
                    self.wq.get(),
                    entry.get(),
                    // CAST: task states are small constants.
                    bindings::TASK_INTERRUPTIBLE as i32,
                )
            };
            if done() {
                break Ok(());
            }
            if ret != 0 {
                break Err(ERESTARTSYS);
            }
            // SAFETY: Sleeping is allowed: callers wait in process context, holding no lock.
            unsafe { bindings::schedule() };
        };
        // SAFETY: `entry` was set up by `init_wait_entry`; `finish_wait` takes it off the
        // queue if it is still on it and sets the task running.
        unsafe { bindings::finish_wait(self.wq.get(), entry.get()) };
        result
    }

    /// Wakes every waiter with every event bit and removes the epoll entries, until the queue
    /// is empty: the poll and select callers have left, and no entry registered meanwhile
    /// stays. Sleeps.
    pub(crate) fn drain(&self) {
        loop {
            self.wake(ALL_EVENTS);
            // epoll removes its entries on POLLFREE; poll and select are woken.
            self.wake(bindings::POLLHUP | POLLFREE);
            // The woken poll, select and blocked callers take their entries off when they
            // return; an entry that an epoll_ctl() added since is removed on the next round.
            if self.is_empty() {
                break;
            }
            // SAFETY: Sleeping is allowed: draining happens in process context.
            unsafe { bindings::msleep(1) };
        }
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
        self.drain();
        // epoll frees its side under RCU.
        synchronize_rcu();
    }
}
