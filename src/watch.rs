// SPDX-License-Identifier: GPL-2.0

//! The set of watched processes.
//!
//! One bit per possible pid (up to `PID_MAX_LIMIT`), indexed by thread-group id in the initial
//! pid namespace, so that the question asked on every page fault and probed syscall, "is the
//! current process watched?", is one relaxed atomic load: O(1) and lock-free. A second bitmap
//! marks processes whose children are watched too (follow-children).
//!
//! Updates from `/proc/memmon/watch-pids` are serialised by a mutex so that a write is all or
//! nothing; exits and forks update single bits atomically from probe context.

use crate::bindings;
use crate::kernel_ext::task::current_ids;
use core::{fmt::Write, ptr::NonNull};
use kernel::{
    alloc::flags::GFP_KERNEL,
    alloc::{KVec, VVec},
    new_mutex,
    prelude::*,
    str::BStr,
    sync::{
        atomic::{Atomic, Full, Relaxed, Release},
        Mutex,
    },
};

/// Highest pid the kernel can hand out, plus one (`PID_MAX_LIMIT` on 64-bit).
pub(crate) const PID_LIMIT: usize = 4 * 1024 * 1024;

const WORD_BITS: usize = 64;
const WORDS: usize = PID_LIMIT / WORD_BITS;

/// A bitmap over pids whose bits can be read and changed from any context.
///
/// A summary bitmap has a bit per word that may be non-zero, so that walking the set bits
/// reads 1024 summary words and the used words rather than all 65536.
struct PidBitmap {
    words: VVec<Atomic<u64>>,
    /// Bit `i % 64` of word `i / 64` is set once word `i` has had a bit set (cleared only
    /// by [`PidBitmap::clear_all`]).
    used: VVec<Atomic<u64>>,
}

impl PidBitmap {
    fn new() -> Result<Self> {
        let mut words = VVec::with_capacity(WORDS, GFP_KERNEL)?;
        for _ in 0..WORDS {
            words.push(Atomic::new(0), GFP_KERNEL)?;
        }
        let mut used = VVec::with_capacity(WORDS / WORD_BITS, GFP_KERNEL)?;
        for _ in 0..WORDS / WORD_BITS {
            used.push(Atomic::new(0), GFP_KERNEL)?;
        }
        Ok(Self { words, used })
    }

    /// Notes that word `index` may have bits set.
    fn mark_used(&self, index: usize) {
        if let Some(summary) = self.used.get(index / WORD_BITS) {
            let bit = 1u64 << (index % WORD_BITS);
            if summary.load(Relaxed) & bit == 0 {
                let mut old = summary.load(Relaxed);
                while let Err(current) = summary.cmpxchg(old, old | bit, Full) {
                    old = current;
                }
            }
        }
    }

    #[inline]
    fn word(&self, pid: i32) -> Option<(&Atomic<u64>, u64)> {
        let pid = usize::try_from(pid).ok()?;
        let word = self.words.get(pid / WORD_BITS)?;
        Some((word, 1 << (pid % WORD_BITS)))
    }

    #[inline]
    fn contains(&self, pid: i32) -> bool {
        self.word(pid)
            .is_some_and(|(word, bit)| word.load(Relaxed) & bit != 0)
    }

    /// Sets or clears the bit of `pid`, fully ordered; returns whether it was set before.
    fn update(&self, pid: i32, set: bool) -> bool {
        let Some((word, bit)) = self.word(pid) else {
            return false;
        };
        let mut old = word.load(Relaxed);
        let was_set = loop {
            let new = if set { old | bit } else { old & !bit };
            if new == old {
                break old & bit != 0;
            }
            match word.cmpxchg(old, new, Full) {
                Ok(_) => break old & bit != 0,
                Err(current) => old = current,
            }
        };
        // After the bit: a `clear_all` in between (which clears the summary first) leaves the
        // summary set, never a set bit under a clear summary.
        if set {
            // CAST: `word` succeeded, so `pid` is a valid non-negative index.
            self.mark_used(pid as usize / WORD_BITS);
        }
        was_set
    }

    /// Clears every bit; returns how many it cleared (each bit set before or meanwhile is
    /// cleared and counted once, by this or by an `update` that clears it first). Updates of
    /// single bits may run meanwhile (from probes): the summaries are cleared before the
    /// words, and `update` marks a word used after setting its bit, so a bit set meanwhile is
    /// always found by `for_each`. Walks every word (the summaries are gone by then): a rare
    /// request, under the writers' mutex.
    fn clear_all(&self) -> u32 {
        for summary in self.used.iter() {
            summary.store(0, Release);
        }
        let mut cleared = 0;
        for word in self.words.iter() {
            if word.load(Relaxed) != 0 {
                cleared += word.xchg(0, Full).count_ones();
            }
        }
        cleared
    }

    fn for_each_used(&self, mut f: impl FnMut(usize, &Atomic<u64>)) {
        for (summary_index, summary) in self.used.iter().enumerate() {
            let mut used = summary.load(Relaxed);
            while used != 0 {
                // CAST: trailing_zeros of a u64 is below 64.
                let index = summary_index * WORD_BITS + used.trailing_zeros() as usize;
                if let Some(word) = self.words.get(index) {
                    f(index, word);
                }
                used &= used - 1;
            }
        }
    }

    /// Calls `f` for every set pid, in increasing order.
    fn for_each(&self, mut f: impl FnMut(usize)) {
        self.for_each_used(|index, word| {
            let mut bits = word.load(Relaxed);
            while bits != 0 {
                // CAST: trailing_zeros of a u64 is below 64.
                let bit = bits.trailing_zeros() as usize;
                f(index * WORD_BITS + bit);
                bits &= bits - 1;
            }
        });
    }
}

/// One parsed request of a `watch-pids` write.
enum Request {
    /// `N` (follow = false) or `+N` (follow = true), N resolved to the process it names.
    Add { process: Process, follow: bool },
    /// `-N`, N resolved to a global tgid; `None` when there is nothing to remove.
    Remove { tgid: Option<i32> },
    /// `0`.
    Clear,
}

/// A process named in a `watch-pids` write: its global thread-group id, and a reference to
/// its thread-group `struct pid`, which is its identity: a later process that is given the
/// same number has another one.
///
/// # Invariants
///
/// `group` holds a reference to a `struct pid`, dropped with `put_pid()` in `drop`.
struct Process {
    tgid: i32,
    group: NonNull<bindings::pid>,
}

impl Process {
    /// The process that task `nr` of the caller's pid namespace belongs to, if it has a live
    /// thread; `ESRCH` otherwise.
    fn resolve(nr: i32) -> Result<Self> {
        // SAFETY: `current` is valid and its active pid namespace lives as long as it does.
        let ns = unsafe { bindings::task_active_pid_ns(kernel::task::Task::current_raw()) };
        let _rcu = kernel::sync::rcu::read_lock();
        // SAFETY: `find_pid_ns` and `pid_task` need the RCU read lock, held by `_rcu`; `ns` is
        // the current task's namespace.
        let task = unsafe {
            let pid = bindings::find_pid_ns(nr, ns);
            if pid.is_null() {
                return Err(ESRCH);
            }
            bindings::pid_task(pid, bindings::pid_type_PIDTYPE_PID)
        };
        // SAFETY: `task` is null or valid while the RCU read lock is held.
        if !unsafe { group_alive(task) } {
            return Err(ESRCH);
        }
        // SAFETY: `task` is valid under the RCU read lock (and not null: its group is alive);
        // `get_task_pid` returns its thread-group pid with a reference taken, or null.
        let (tgid, group) = unsafe {
            (
                (*task).tgid,
                bindings::get_task_pid(task, bindings::pid_type_PIDTYPE_TGID),
            )
        };
        let group = NonNull::new(group).ok_or(ESRCH)?;
        // INVARIANT: `get_task_pid` took a reference on `group`.
        Ok(Self { tgid, group })
    }

    /// Whether this very process (not a later one with its number) still has a live thread.
    fn alive(&self) -> bool {
        let _rcu = kernel::sync::rcu::read_lock();
        // SAFETY: `group` is referenced (type invariants); `pid_task` needs the RCU read lock,
        // held by `_rcu`, and returns null once the group's leader is released.
        let task =
            unsafe { bindings::pid_task(self.group.as_ptr(), bindings::pid_type_PIDTYPE_TGID) };
        // SAFETY: `task` is null or valid while the RCU read lock is held.
        unsafe { group_alive(task) }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // SAFETY: `group` holds a reference (type invariants), dropped once, here.
        unsafe { bindings::put_pid(self.group.as_ptr()) };
    }
}

/// The watched processes.
#[pin_data]
pub(crate) struct WatchSet {
    watched: PidBitmap,
    follow: PidBitmap,
    /// Watched processes whose last thread has started to exit (`sched_process_exit`), until
    /// the exit probe takes them out of the set. A bit still set when a new process is given
    /// the number means that probe was missed: the number is not the new process's.
    exited: PidBitmap,
    /// Forks between looking whether their parent is watched and adding the child
    /// ([`Self::fork`]): while one is, [`Self::if_empty`] does not count the set as empty.
    forks_in_progress: Atomic<i32>,
    /// Never less than the number of watched processes, and equal to it whenever no change
    /// is in progress: raised before a bit is set, lowered after one is cleared. While it is
    /// 0, no process is watched, and the handlers ask nothing else ([`Self::any_watched`]).
    watched_bound: Atomic<i64>,
    /// Serialises writers so that each write applies as a whole.
    #[pin]
    update: Mutex<()>,
}

impl WatchSet {
    /// An empty set.
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let watched = PidBitmap::new()?;
        let follow = PidBitmap::new()?;
        let exited = PidBitmap::new()?;
        Ok(try_pin_init!(Self {
            watched,
            follow,
            exited,
            forks_in_progress: Atomic::new(0),
            watched_bound: Atomic::new(0),
            update <- new_mutex!(()),
        }))
    }

    /// Whether process `tgid` is watched. Lock-free; callable in any context.
    #[inline]
    pub(crate) fn contains(&self, tgid: i32) -> bool {
        self.watched.contains(tgid)
    }

    /// Whether any process may be watched: false only while none is. One load, inline, with
    /// no call, so that a handler can return before it saves a register.
    #[inline(always)]
    pub(crate) fn any_watched(&self) -> bool {
        // FIXME(read_once): Replace with `read_once` when available on the Rust side.
        //
        // This `read_volatile` is intended to correspond to a READ_ONCE call, as in
        // `kernel::fs::File::flags`: `Atomic::load` calls an out-of-line C helper, and that
        // call made every fault of every process save and restore six registers.
        //
        // SAFETY: The pointer is `watched_bound`'s own, valid and aligned for `i64`. Every
        // store to it is an atomic operation, so this marked (READ_ONCE) load is no data race
        // under the LKMM; on x86_64 it is one aligned 8-byte load, as `atomic64_read()` is.
        unsafe { self.watched_bound.as_ptr().read_volatile() > 0 }
    }

    /// Whether the current process is watched. While no process is watched, one load.
    #[inline]
    pub(crate) fn contains_current(&self) -> bool {
        // The bound is raised before a bit is set: whoever sees the bit set (the process
        // itself after the write that added it, a child forked after it) sees it non-zero.
        self.any_watched() && self.contains(current_ids().0)
    }

    /// Sets or clears the watched bit of `tgid`, keeping [`Self::watched_bound`]; returns
    /// whether it was set.
    fn update_watched(&self, tgid: i32, set: bool) -> bool {
        if set {
            self.watched_bound.fetch_add(1, Full);
        }
        let was_set = self.watched.update(tgid, set);
        if was_set {
            // Set before: taken back after the bit was set again (nothing to count) or
            // cleared.
            self.watched_bound.fetch_add(-1, Full);
        }
        was_set
    }

    /// Whether the children of `tgid` are watched too.
    pub(crate) fn follows(&self, tgid: i32) -> bool {
        self.follow.contains(tgid)
    }

    /// Watches `tgid`, following its children if `follow`.
    pub(crate) fn add(&self, tgid: i32, follow: bool) {
        self.exited.update(tgid, false);
        self.follow.update(tgid, follow);
        self.update_watched(tgid, true);
    }

    /// Stops watching `tgid`; returns whether it was watched.
    pub(crate) fn remove(&self, tgid: i32) -> bool {
        self.follow.update(tgid, false);
        let was_watched = self.update_watched(tgid, false);
        self.exited.update(tgid, false);
        was_watched
    }

    /// Process `parent` forked process `child`: if the parent is watched and followed, the
    /// child is watched too. Returns `None` if the parent is not watched, else whether the
    /// child was added.
    pub(crate) fn fork(&self, parent: i32, child: i32) -> Option<bool> {
        // Fully ordered before the look at the parent's bit, against `if_empty`, which reads
        // the bits and then this count: either it sees this fork in progress, or this fork
        // sees the parent's bit as it was when the set was found empty (clear, since
        // `if_empty` found no bit set).
        self.forks_in_progress.fetch_add(1, Full);
        let watched = self.contains(parent);
        let follow = watched && self.follows(parent);
        if follow {
            self.add(child, true);
        }
        // After the child's bit (`add` sets it fully ordered).
        self.forks_in_progress.fetch_add(-1, Full);
        watched.then_some(follow)
    }

    /// Notes that the last thread of watched process `tgid` has started to exit.
    pub(crate) fn exiting(&self, tgid: i32) {
        self.exited.update(tgid, true);
    }

    /// A new process was given the number `tgid`: if a process that had it exited watched
    /// and its exit probe was missed, its bit is stale; take it out so that the new process
    /// is not watched by accident. A `watch-pids` write naming the new process already
    /// (between its creation and this call) cleared the mark when it set the bit.
    pub(crate) fn new_process(&self, tgid: i32) {
        if self.exited.contains(tgid) {
            self.remove(tgid);
        }
    }

    /// Calls `f` with every watched process, in increasing order.
    pub(crate) fn for_each_watched(&self, mut f: impl FnMut(i32)) {
        self.watched.for_each(|pid| {
            if let Ok(pid) = i32::try_from(pid) {
                f(pid);
            }
        });
    }

    /// Bytes of the three bitmaps (fixed: allocated at load for every possible pid).
    pub(crate) fn bytes(&self) -> usize {
        3 * (self.watched.words.len() + self.watched.used.len()) * size_of::<u64>()
    }

    /// Runs `f` if no process is watched and none can be added until `f` returns: no
    /// `watch-pids` write runs meanwhile (they are serialised with this), and no fork is
    /// between looking at its parent and adding its child ([`Self::fork`]); a later fork
    /// finds its parent not watched. Returns what `f` returned, or `None` if a process is
    /// watched or may be being added.
    pub(crate) fn if_empty<T>(&self, f: impl FnOnce() -> T) -> Option<T> {
        let _guard = self.update.lock();
        if self.count() != 0 {
            return None;
        }
        // A fully ordered read, after the bits were read: see `fork`.
        if self.forks_in_progress.fetch_add(0, Full) != 0 {
            return None;
        }
        Some(f())
    }

    /// Number of watched processes.
    pub(crate) fn count(&self) -> usize {
        let mut count = 0;
        self.watched.for_each(|_| count += 1);
        count
    }

    /// Applies a `watch-pids` write: whitespace-separated `N`, `+N`, `-N` or `0`.
    ///
    /// All or nothing: every item is checked before any is applied. Fails with `EINVAL` for
    /// text that is not such a list or a pid out of range, `ESRCH` for a process that does not
    /// exist, or with the error of `before_adding`, which runs (once every item is checked)
    /// before a write that adds a process applies, and sees no concurrent [`Self::if_empty`].
    pub(crate) fn apply(&self, input: &[u8], before_adding: impl FnOnce() -> Result) -> Result {
        // Held from resolving the numbers to applying them, so that each write applies as a
        // whole and in the order writes were made.
        let _guard = self.update.lock();
        let mut requests = KVec::new();
        for token in input
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
        {
            let request = parse_request(token).inspect_err(|e| {
                let why = if *e == ESRCH {
                    "no such process"
                } else {
                    "not a pid (N, +N, -N or 0)"
                };
                let shown = &token[..token.len().min(32)];
                pr_info!(
                    "watch-pids: rejected '{}': {}\n",
                    BStr::from_bytes(shown),
                    why
                );
            })?;
            requests.push(request, GFP_KERNEL)?;
        }
        if requests.is_empty() {
            pr_info!("watch-pids: rejected an empty write\n");
            return Err(EINVAL);
        }
        if requests
            .iter()
            .any(|request| matches!(request, Request::Add { .. }))
        {
            before_adding()?;
        }
        for request in requests.iter() {
            match request {
                Request::Add { process, follow } => {
                    self.add(process.tgid, *follow);
                    // The process may have exited since it was looked up, and its number may
                    // even name a newer process by now: then nothing would ever clear the bit,
                    // or it would watch a stranger. The bit is set with a full barrier, the
                    // exit decrements `signal->live` with one: either the exit probes see the
                    // bit or this sees the group dead (through its own `struct pid`, not its
                    // number).
                    if !process.alive() {
                        self.remove(process.tgid);
                    }
                }
                Request::Remove { tgid: Some(tgid) } => {
                    self.remove(*tgid);
                }
                Request::Remove { tgid: None } => {}
                Request::Clear => {
                    let cleared = self.watched.clear_all();
                    self.watched_bound.fetch_add(-i64::from(cleared), Full);
                    self.follow.clear_all();
                    self.exited.clear_all();
                }
            }
        }
        Ok(())
    }

    /// The watched set as text: sorted, consecutive pids as ranges, `3000,3005-3007\n`.
    pub(crate) fn format(&self) -> Result<KVec<u8>> {
        let mut out = ByteWriter(KVec::new());
        let mut range: Option<(usize, usize)> = None;
        let mut result = Ok(());
        self.watched.for_each(|pid| {
            range = match range {
                Some((first, last)) if last + 1 == pid => Some((first, pid)),
                Some(done) => {
                    result = result.and(write_range(&mut out, done));
                    Some((pid, pid))
                }
                None => Some((pid, pid)),
            };
        });
        if let Some(done) = range {
            result = result.and(write_range(&mut out, done));
        }
        result
            .and(out.0.push(b'\n', GFP_KERNEL).map_err(|_| core::fmt::Error))
            .map_err(|_| ENOMEM)?;
        Ok(out.0)
    }
}

fn write_range(out: &mut ByteWriter, (first, last): (usize, usize)) -> core::fmt::Result {
    if !out.0.is_empty() {
        out.write_str(",")?;
    }
    if first == last {
        write!(out, "{first}")
    } else {
        write!(out, "{first}-{last}")
    }
}

/// `core::fmt::Write` into a growable byte vector.
pub(crate) struct ByteWriter(pub(crate) KVec<u8>);

impl Write for ByteWriter {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0
            .extend_from_slice(s.as_bytes(), GFP_KERNEL)
            .map_err(|_| core::fmt::Error)
    }
}

fn parse_decimal(digits: &[u8]) -> Result<i32> {
    if digits.is_empty() || digits.len() > 10 {
        return Err(EINVAL);
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(EINVAL);
        }
        value = value * 10 + i64::from(d - b'0');
    }
    // CAST: PID_LIMIT is 2^22.
    if value >= PID_LIMIT as i64 {
        return Err(EINVAL);
    }
    i32::try_from(value).map_err(|_| EINVAL)
}

fn parse_request(token: &[u8]) -> Result<Request> {
    match token {
        [b'+', digits @ ..] => {
            let nr = parse_decimal(digits)?;
            if nr == 0 {
                return Err(EINVAL);
            }
            Ok(Request::Add {
                process: Process::resolve(nr)?,
                follow: true,
            })
        }
        [b'-', digits @ ..] => {
            let nr = parse_decimal(digits)?;
            if nr == 0 {
                return Err(EINVAL);
            }
            // A process that is gone has left the set already. Its number still names a watched
            // pid only when the writer sees global pids; from a child namespace it names none.
            let tgid = match Process::resolve(nr) {
                Ok(process) => Some(process.tgid),
                Err(_) if writer_sees_global_pids() => Some(nr),
                Err(_) => None,
            };
            Ok(Request::Remove { tgid })
        }
        digits => match parse_decimal(digits)? {
            0 => Ok(Request::Clear),
            nr => Ok(Request::Add {
                process: Process::resolve(nr)?,
                follow: false,
            }),
        },
    }
}

/// Whether the current task's pid namespace is the initial one.
fn writer_sees_global_pids() -> bool {
    // SAFETY: `current` is valid; its active pid namespace lives at least as long as it does,
    // and `init_pid_ns` is static: only the addresses are compared.
    unsafe {
        bindings::task_active_pid_ns(kernel::task::Task::current_raw())
            == &raw mut bindings::init_pid_ns
    }
}

/// Whether `task`'s thread group has a live thread: `signal->live`, which `do_exit()`
/// decrements (a fully ordered atomic) before it reports the exit of the last thread.
///
/// # Safety
///
/// `task` must be null or valid for reads, e.g. found under the RCU read lock, still held.
unsafe fn group_alive(task: *const bindings::task_struct) -> bool {
    if task.is_null() {
        return false;
    }
    // SAFETY: `task` is valid (see above) and so is its `signal`, freed with the last task of
    // the group; `live` is read once, racily, as `atomic_read()` does.
    let live = unsafe { core::ptr::addr_of!((*(*task).signal).live.counter).read_volatile() };
    live > 0
}
