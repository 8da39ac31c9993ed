// SPDX-License-Identifier: GPL-2.0

//! The set of watched processes.
//!
//! One bit per possible pid (up to `PID_MAX_LIMIT`), indexed by thread-group id in the initial
//! pid namespace, so that the question asked on every page fault and probed syscall, "is the
//! current process watched?", is one relaxed atomic load: O(1) and lock-free. A second bitmap
//! marks processes whose children are watched too (follow-children).
//!
//! A process is watched for two reasons, each with a bitmap of its own: by pid (named in a
//! write, or forked by a followed process) and by cgroup (in a watched cgroup v2 or below
//! it); the bitmap the handlers read is their union. Cgroup membership is turned into bits
//! where it changes: when a `c:PATH` write adds the cgroup (a walk over every process), at
//! fork, at exec, and when a process is moved (`cgroup_attach_task`), so that the fault
//! path still reads one bit.
//!
//! Updates from `/proc/memmon/watch-pids` are serialised by a mutex so that a write is all or
//! nothing; exits and forks update single bits from probe context, under a spinlock that
//! keeps the union exact.

use crate::kernel_ext::{
    atomic::read_once,
    cgroup::{for_each_process, Cgroup},
    pid::{current_in_initial_pid_ns, ProcessPid},
    task::{current_ids, TaskExt},
};
use core::fmt::Write;
use kernel::{
    alloc::flags::GFP_KERNEL,
    alloc::{KVec, VVec},
    new_mutex, new_spinlock,
    prelude::*,
    str::{BStr, CStr},
    sync::{
        atomic::{Atomic, Full, Relaxed, Release},
        barrier::smp_mb,
        Mutex, SpinLock,
    },
    task::Task,
};

/// Most cgroups watched at once.
pub(crate) const CGROUPS_MAX: usize = 64;

/// Longest path of a `c:PATH` item, in bytes.
pub(crate) const CGROUP_PATH_MAX: usize = 1024;

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

    /// Clears every bit, walking only the words marked used; returns how many it cleared.
    /// Only for a bitmap whose bits are all set and cleared under one lock, held.
    fn clear_used(&self) -> u32 {
        let mut cleared = 0;
        self.for_each_used(|_, word| {
            if word.load(Relaxed) != 0 {
                cleared += word.xchg(0, Full).count_ones();
            }
        });
        for summary in self.used.iter() {
            summary.store(0, Release);
        }
        cleared
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
    Add { process: ProcessPid, follow: bool },
    /// `-N`, N resolved to a global tgid; `None` when there is nothing to remove.
    Remove { tgid: Option<i32> },
    /// `0`.
    Clear,
    /// `c:PATH`: the cgroup, and PATH as written.
    AddCgroup { cgroup: Cgroup, path: KVec<u8> },
    /// `-c:PATH`: the key ([`cgroup_key`]) of the watched cgroup it names; `None` when it
    /// names a cgroup that is not watched.
    RemoveCgroup { key: Option<usize> },
}

/// A watched cgroup, as the writers see it: the reference, and the path it was first written
/// with (how `watch-pids` lists it, and a name `-c:` accepts once the path leads elsewhere).
struct WatchedCgroup {
    cgroup: Cgroup,
    path: KVec<u8>,
}

/// What identifies a cgroup while a reference to it is held: its address.
fn cgroup_key(cgroup: &Cgroup) -> usize {
    // CAST: an address, only compared.
    cgroup.as_ptr() as usize
}

/// What the membership lock guards: the watched cgroups as the probes see them (the same as
/// the writers' list, each with a reference of its own), and with the lock held, the right to
/// change the `watched`, `by_pid` and `by_cgroup` bitmaps.
struct Membership {
    /// Allocated for [`CGROUPS_MAX`] at load: adding one never allocates under the lock.
    cgroups: KVec<Cgroup>,
}

impl Membership {
    /// Whether the process of `task` is in a watched cgroup (not removed) or below one.
    fn has_process(&self, task: &Task) -> bool {
        self.cgroups
            .iter()
            .any(|cgroup| !cgroup.is_dead() && cgroup.has_process(task))
    }
}

/// The watched processes.
#[pin_data]
pub(crate) struct WatchSet {
    /// The union of `by_pid` and `by_cgroup`, the bits the handlers read. Changed only with
    /// `membership` held, as those two are.
    watched: PidBitmap,
    /// Processes watched by pid: named in a write, or forked by a followed process.
    by_pid: PidBitmap,
    /// Processes watched as members of a watched cgroup.
    by_cgroup: PidBitmap,
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
    /// Entries of the probes' list of watched cgroups ([`Membership::cgroups`]), read
    /// without the lock: while it is 0, the fork, exec and move probes look no further.
    cgroup_count: Atomic<usize>,
    /// Taken by every change of `watched`, `by_pid` and `by_cgroup`, in probes too (process
    /// context only: the fork, exit and exec probes, the move tracepoint, which runs with
    /// interrupts off; never in an interrupt).
    #[pin]
    membership: SpinLock<Membership>,
    /// Serialises writers so that each write applies as a whole; holds the writers' list of
    /// watched cgroups, allocated for [`CGROUPS_MAX`] at load.
    #[pin]
    update: Mutex<KVec<WatchedCgroup>>,
}

impl WatchSet {
    /// An empty set.
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let watched = PidBitmap::new()?;
        let by_pid = PidBitmap::new()?;
        let by_cgroup = PidBitmap::new()?;
        let follow = PidBitmap::new()?;
        let exited = PidBitmap::new()?;
        let membership = Membership {
            cgroups: KVec::with_capacity(CGROUPS_MAX, GFP_KERNEL)?,
        };
        let writers_cgroups = KVec::with_capacity(CGROUPS_MAX, GFP_KERNEL)?;
        Ok(try_pin_init!(Self {
            watched,
            by_pid,
            by_cgroup,
            follow,
            exited,
            forks_in_progress: Atomic::new(0),
            watched_bound: Atomic::new(0),
            cgroup_count: Atomic::new(0),
            membership <- new_spinlock!(membership, "memmon_watch_membership"),
            update <- new_mutex!(writers_cgroups, "memmon_watch_update"),
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
        // Not `Atomic::load`, which calls an out-of-line C helper: that call made every fault
        // of every process save and restore six registers.
        read_once(&self.watched_bound) > 0
    }

    /// Whether the current process is watched. While no process is watched, one load.
    #[inline]
    pub(crate) fn contains_current(&self) -> bool {
        // The bound is raised before a bit is set: whoever sees the bit set (the process
        // itself after the write that added it, a child forked after it) sees it non-zero.
        self.any_watched() && self.contains(current_ids().0)
    }

    /// Sets or clears the watched bit of `tgid`, keeping [`Self::watched_bound`]; returns
    /// whether it was set. Called with `membership` held (its guard is not needed here).
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

    /// Watches `tgid` by pid, following its children if `follow`.
    pub(crate) fn add(&self, tgid: i32, follow: bool) {
        let _membership = self.membership.lock();
        self.exited.update(tgid, false);
        self.follow.update(tgid, follow);
        self.by_pid.update(tgid, true);
        self.update_watched(tgid, true);
    }

    /// Stops watching `tgid`, for any reason (its exit); returns whether it was watched.
    pub(crate) fn remove(&self, tgid: i32) -> bool {
        let _membership = self.membership.lock();
        self.follow.update(tgid, false);
        self.by_pid.update(tgid, false);
        self.by_cgroup.update(tgid, false);
        let was_watched = self.update_watched(tgid, false);
        self.exited.update(tgid, false);
        was_watched
    }

    /// Stops watching `tgid` by pid (`-N`): it stays watched while it is in a watched cgroup.
    fn remove_by_pid(&self, tgid: i32) {
        let _membership = self.membership.lock();
        self.follow.update(tgid, false);
        self.by_pid.update(tgid, false);
        if !self.by_cgroup.contains(tgid) {
            self.update_watched(tgid, false);
            self.exited.update(tgid, false);
        }
    }

    /// Whether a cgroup is watched (or was, until its removal is noticed). Read without a
    /// lock: a probe that must see a cgroup added before it looked orders this read after
    /// the change it reports (a move, a fork) with a full barrier; the writer adds the
    /// cgroup with one before its walk.
    fn cgroups_watched(&self) -> bool {
        self.cgroup_count.load(Relaxed) != 0
    }

    /// Makes the cgroup bit of the process of `task` say whether it is in a watched cgroup,
    /// and its watched bit follow. Serialised with every other change by `membership`, so
    /// that the last look at the process's cgroup decides: a move's probe runs after the
    /// move, so it looks after it, or, if it ran first, this looks after the move.
    fn refresh(&self, task: &Task) {
        // Kernel threads (in the root cgroup) have no user memory to watch.
        if task.is_kernel_thread() || !task.group_alive() {
            return;
        }
        let tgid = task.tgid();
        let (was_watched, watched) = {
            let membership = self.membership.lock();
            let member = membership.has_process(task);
            self.by_cgroup.update(tgid, member);
            let watched = member || self.by_pid.contains(tgid);
            (self.update_watched(tgid, watched), watched)
        };
        // As for a write that adds a process: it may have exited meanwhile (a fully ordered
        // decrement of `signal->live`; the bit was set with a full barrier), and then its
        // exit probe may have missed the bit.
        if !was_watched && watched && !task.group_alive() {
            self.remove(tgid);
        }
    }

    /// A process was moved to another cgroup (`cgroup_attach_task`, fired after the move):
    /// it is watched by cgroup from now on if that is a watched one or below one, and no
    /// longer if it is not.
    pub(crate) fn moved(&self, task: &Task) {
        // After the move, against a write adding a cgroup (its count, then its walk): either
        // this sees the count, or the walk sees the process where it was moved to.
        smp_mb(Full);
        if self.cgroups_watched() {
            self.refresh(task);
        }
    }

    /// At exec (`begin_new_exec`): whether the current process is watched, by cgroup too.
    pub(crate) fn exec_current(&self) -> bool {
        if self.contains_current() {
            return true;
        }
        if !self.cgroups_watched() {
            return false;
        }
        self.refresh(kernel::current!());
        self.contains_current()
    }

    /// Process `parent` forked the new process `child`: if the parent is watched and
    /// followed, the child is watched too, and so it is if it is in a watched cgroup (its
    /// parent's, or the one `clone3(CLONE_INTO_CGROUP)` put it in). Returns `None` if the
    /// parent is not watched, else whether the child is watched. `child` is the new task of
    /// the `sched_process_fork` tracepoint, a thread group leader.
    pub(crate) fn fork(&self, parent: i32, child: &Task) -> Option<bool> {
        // Fully ordered before the look at the parent's bit, against `if_empty`, which reads
        // the bits and then this count: either it sees this fork in progress, or this fork
        // sees the parent's bit as it was when the set was found empty (clear, since
        // `if_empty` found no bit set). And after the child was put in its cgroup, against a
        // write adding a cgroup: either this sees its count, or its walk sees the child.
        self.forks_in_progress.fetch_add(1, Full);
        let child_tgid = child.tgid();
        let watched = self.contains(parent);
        let follow = watched && self.follows(parent);
        if follow {
            self.add(child_tgid, true);
        }
        if self.cgroups_watched() {
            self.refresh(child);
        }
        let child_watched = self.contains(child_tgid);
        // After the child's bit (`add` sets it fully ordered, `refresh` under the lock).
        self.forks_in_progress.fetch_add(-1, Full);
        watched.then_some(child_watched)
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

    /// Bytes of the five bitmaps (fixed: allocated at load for every possible pid) and of
    /// the two lists of watched cgroups (allocated at load too) with their paths.
    pub(crate) fn bytes(&self) -> usize {
        let bitmaps = 5 * (self.watched.words.len() + self.watched.used.len()) * size_of::<u64>();
        let lists = CGROUPS_MAX * (size_of::<WatchedCgroup>() + size_of::<Cgroup>());
        let paths: usize = self.update.lock().iter().map(|c| c.path.len()).sum();
        bitmaps + lists + paths
    }

    /// Forgets the watched cgroups that were removed: no process is in them, none can enter
    /// them. Called with the writers' mutex held (`cgroups` is its list).
    fn prune(&self, cgroups: &mut KVec<WatchedCgroup>) {
        if !cgroups.iter().any(|c| c.cgroup.is_dead()) {
            return;
        }
        cgroups.retain(|c| !c.cgroup.is_dead());
        let mut membership = self.membership.lock();
        membership.cgroups.retain(|c| !c.is_dead());
        self.cgroup_count.store(membership.cgroups.len(), Release);
    }

    /// Number of watched cgroups (those removed since are forgotten first).
    pub(crate) fn cgroup_count(&self) -> usize {
        let mut cgroups = self.update.lock();
        self.prune(&mut cgroups);
        cgroups.len()
    }

    /// Watches `cgroup` (as the writers' `cgroups` already do): adds it to the probes' list,
    /// then watches every process in it or below it.
    fn add_cgroup(&self, cgroup: Cgroup) {
        {
            let mut membership = self.membership.lock();
            // Room for it: a write adds no more than `CGROUPS_MAX` (checked as it is parsed).
            if membership
                .cgroups
                .push_within_capacity(cgroup.clone())
                .is_err()
            {
                return;
            }
            // Fully ordered before the walk's first look at a process: see `moved`, `fork`.
            self.cgroup_count.fetch_add(1, Full);
        }
        for_each_process(|task| {
            if cgroup.has_process(task) {
                self.refresh(task);
            }
        });
    }

    /// Stops watching the cgroup of key `key` (the writers' list has dropped it already):
    /// takes it off the probes' list, then looks again at every process watched by cgroup.
    fn remove_cgroup(&self, key: usize) {
        {
            let mut membership = self.membership.lock();
            membership.cgroups.retain(|c| cgroup_key(c) != key);
            self.cgroup_count.store(membership.cgroups.len(), Release);
        }
        for_each_process(|task| {
            if self.by_cgroup.contains(task.tgid()) {
                self.refresh(task);
            }
        });
    }

    /// Stops watching every process and every cgroup (`0`).
    fn clear(&self) {
        {
            let mut membership = self.membership.lock();
            membership.cgroups.clear();
            self.cgroup_count.store(0, Release);
            // Every bit of these three changes with the lock held: only the used words.
            let cleared = self.watched.clear_used();
            self.watched_bound.fetch_add(-i64::from(cleared), Full);
            self.by_pid.clear_used();
            self.by_cgroup.clear_used();
        }
        // These change without the lock (a followed fork, an exit): every word.
        self.follow.clear_all();
        self.exited.clear_all();
    }

    /// Runs `f` if no process is watched and none can be added until `f` returns: no
    /// `watch-pids` write runs meanwhile (they are serialised with this), and no fork is
    /// between looking at its parent and adding its child ([`Self::fork`]); a later fork
    /// finds its parent not watched. Returns what `f` returned, or `None` if a process is
    /// watched or may be being added.
    pub(crate) fn if_empty<T>(&self, f: impl FnOnce() -> T) -> Option<T> {
        let mut cgroups = self.update.lock();
        // A watched cgroup can have a process moved into it at any time.
        self.prune(&mut cgroups);
        if !cgroups.is_empty() || self.count() != 0 {
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

    /// Applies a `watch-pids` write: whitespace-separated `N`, `+N`, `-N`, `0`, `c:PATH` or
    /// `-c:PATH`.
    ///
    /// All or nothing: every item is checked before any is applied. Fails with `EINVAL` for
    /// text that is not such a list, a pid out of range or a path that is not a cgroup v2
    /// directory, `ESRCH` for a process that does not exist, `ENOENT` for a path that does
    /// not exist, `ENOSPC` for a cgroup beyond [`CGROUPS_MAX`], or with the error of
    /// `before_adding`, which runs (once every item is checked) before a write that adds a
    /// process or a cgroup applies (told whether it adds a cgroup), and sees no concurrent
    /// [`Self::if_empty`].
    pub(crate) fn apply(&self, input: &[u8], before_adding: impl FnOnce(bool) -> Result) -> Result {
        // Held from resolving the numbers to applying them, so that each write applies as a
        // whole and in the order writes were made.
        let mut cgroups = self.update.lock();
        self.prune(&mut cgroups);
        // The keys of the watched cgroups as they will be after each item, for the limit.
        let mut planned = KVec::with_capacity(CGROUPS_MAX, GFP_KERNEL)?;
        for cgroup in cgroups.iter() {
            planned.push(cgroup_key(&cgroup.cgroup), GFP_KERNEL)?;
        }
        let mut requests = KVec::new();
        for token in input
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
        {
            let request = parse_request(token, &cgroups)
                .and_then(|request| plan(&mut planned, request))
                .map_err(|rejected| {
                    let shown = &token[..token.len().min(SHOWN_MAX)];
                    pr_info!(
                        "watch-pids: rejected '{}': {}\n",
                        BStr::from_bytes(shown),
                        rejected.why
                    );
                    rejected.error
                })?;
            requests.push(request, GFP_KERNEL)?;
        }
        if requests.is_empty() {
            pr_info!("watch-pids: rejected an empty write\n");
            return Err(EINVAL);
        }
        let adds_cgroup = requests
            .iter()
            .any(|request| matches!(request, Request::AddCgroup { .. }));
        if adds_cgroup
            || requests
                .iter()
                .any(|request| matches!(request, Request::Add { .. }))
        {
            before_adding(adds_cgroup)?;
        }
        for request in requests {
            match request {
                Request::Add { process, follow } => {
                    self.add(process.tgid(), follow);
                    // The process may have exited since it was looked up, and its number may
                    // even name a newer process by now: then nothing would ever clear the bit,
                    // or it would watch a stranger. The bit is set with a full barrier, the
                    // exit decrements `signal->live` with one: either the exit probes see the
                    // bit or this sees the group dead (through its own `struct pid`, not its
                    // number).
                    if !process.is_alive() {
                        self.remove(process.tgid());
                    }
                }
                Request::Remove { tgid: Some(tgid) } => self.remove_by_pid(tgid),
                Request::Remove { tgid: None } | Request::RemoveCgroup { key: None } => {}
                Request::Clear => {
                    cgroups.clear();
                    self.clear();
                }
                Request::AddCgroup { cgroup, path } => {
                    if cgroups.iter().any(|c| c.cgroup.is(&cgroup)) {
                        continue;
                    }
                    let watched = WatchedCgroup {
                        cgroup: cgroup.clone(),
                        path,
                    };
                    // Room for it: `plan` kept the list within its capacity.
                    if cgroups.push_within_capacity(watched).is_ok() {
                        self.add_cgroup(cgroup);
                    }
                }
                Request::RemoveCgroup { key: Some(key) } => {
                    let before = cgroups.len();
                    cgroups.retain(|c| cgroup_key(&c.cgroup) != key);
                    if cgroups.len() != before {
                        self.remove_cgroup(key);
                    }
                }
            }
        }
        Ok(())
    }

    /// The watched set as text: a line of the watched processes, sorted, consecutive pids as
    /// ranges, `3000,3005-3007\n` (by pid or by cgroup), then a line `c:PATH` for each
    /// watched cgroup, in the order they were added.
    pub(crate) fn format(&self) -> Result<KVec<u8>> {
        let mut cgroups = self.update.lock();
        self.prune(&mut cgroups);
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
        result.map_err(|_| ENOMEM)?;
        out.0.push(b'\n', GFP_KERNEL)?;
        for cgroup in cgroups.iter() {
            out.0.extend_from_slice(b"c:", GFP_KERNEL)?;
            out.0.extend_from_slice(&cgroup.path, GFP_KERNEL)?;
            out.0.push(b'\n', GFP_KERNEL)?;
        }
        Ok(out.0)
    }
}

/// Most bytes of a rejected item the kernel log shows.
const SHOWN_MAX: usize = 64;

/// Why an item of a write was refused: the error the write fails with, and the reason the
/// kernel log gives.
struct Rejected {
    error: Error,
    why: &'static str,
}

impl From<Error> for Rejected {
    fn from(error: Error) -> Self {
        let why = if error == ESRCH {
            "no such process"
        } else if error == ENOMEM {
            "out of memory"
        } else {
            "not a pid (N, +N, -N, 0) nor a cgroup (c:PATH, -c:PATH)"
        };
        Self { error, why }
    }
}

impl From<kernel::alloc::AllocError> for Rejected {
    fn from(_: kernel::alloc::AllocError) -> Self {
        ENOMEM.into()
    }
}

/// Keeps `planned`, the keys of the cgroups watched once the items so far apply, up to date
/// with `request`; refuses a cgroup beyond [`CGROUPS_MAX`].
fn plan(planned: &mut KVec<usize>, request: Request) -> Result<Request, Rejected> {
    match &request {
        Request::Clear => planned.clear(),
        Request::AddCgroup { cgroup, .. } => {
            let key = cgroup_key(cgroup);
            if !planned.contains(&key) {
                planned.push_within_capacity(key).map_err(|_| Rejected {
                    error: ENOSPC,
                    why: "as many cgroups as can be are watched (64)",
                })?;
            }
        }
        Request::RemoveCgroup { key: Some(key) } => planned.retain(|k| k != key),
        _ => {}
    }
    Ok(request)
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

fn parse_request(token: &[u8], cgroups: &[WatchedCgroup]) -> Result<Request, Rejected> {
    match token {
        [b'c', b':', path @ ..] => {
            let cgroup = resolve_cgroup(path)?;
            let mut written = KVec::with_capacity(path.len(), GFP_KERNEL)?;
            written.extend_from_slice(path, GFP_KERNEL)?;
            Ok(Request::AddCgroup {
                cgroup,
                path: written,
            })
        }
        [b'-', b'c', b':', path @ ..] => {
            let key = match resolve_cgroup(path) {
                // Also one that an earlier item of the same write adds (`plan` and the apply
                // step look the key up in what is watched by then); the address of a cgroup
                // that is neither watched nor added names nothing.
                Ok(cgroup) => Some(cgroup_key(&cgroup)),
                // The path no longer resolves in the writer's mount namespace (cgroup2 has no
                // rename, but the mount may have changed): the path it is listed with still
                // names it. Else the error stands (a mistyped path is not taken for a removed
                // cgroup).
                Err(rejected) => Some(
                    cgroups
                        .iter()
                        .find(|c| c.path.as_slice() == path)
                        .map(|c| cgroup_key(&c.cgroup))
                        .ok_or(rejected)?,
                ),
            };
            Ok(Request::RemoveCgroup { key })
        }
        [b'+', digits @ ..] => {
            let nr = parse_decimal(digits)?;
            if nr == 0 {
                return Err(EINVAL.into());
            }
            Ok(Request::Add {
                process: ProcessPid::find_in_current_ns(nr)?,
                follow: true,
            })
        }
        [b'-', digits @ ..] => {
            let nr = parse_decimal(digits)?;
            if nr == 0 {
                return Err(EINVAL.into());
            }
            // A process that is gone has left the set already. Its number still names a watched
            // pid only when the writer sees global pids; from a child namespace it names none.
            let tgid = match ProcessPid::find_in_current_ns(nr) {
                Ok(process) => Some(process.tgid()),
                Err(_) if current_in_initial_pid_ns() => Some(nr),
                Err(_) => None,
            };
            Ok(Request::Remove { tgid })
        }
        digits => match parse_decimal(digits)? {
            0 => Ok(Request::Clear),
            nr => Ok(Request::Add {
                process: ProcessPid::find_in_current_ns(nr)?,
                follow: false,
            }),
        },
    }
}

/// The cgroup v2 directory at `path` (the PATH of `c:PATH`, in the writer's mount
/// namespace), with a reference taken.
fn resolve_cgroup(path: &[u8]) -> Result<Cgroup, Rejected> {
    let invalid = |why| Rejected { error: EINVAL, why };
    if path.first() != Some(&b'/') {
        return Err(invalid("not an absolute path (c:/sys/fs/cgroup/...)"));
    }
    if path.len() > CGROUP_PATH_MAX {
        return Err(invalid("a path longer than 1024 bytes"));
    }
    if path.contains(&0) {
        return Err(invalid("a NUL byte in the path"));
    }
    let mut bytes = KVec::with_capacity(path.len() + 1, GFP_KERNEL)?;
    bytes.extend_from_slice(path, GFP_KERNEL)?;
    bytes.push(0, GFP_KERNEL)?;
    let path = CStr::from_bytes_with_nul(&bytes).map_err(|_| invalid("a NUL byte in the path"))?;
    Cgroup::from_dir(path).map_err(|error| {
        if error == ENOENT {
            Rejected {
                error,
                why: "no such directory (or a cgroup outside the writer's cgroup namespace)",
            }
        } else if error == ENOTDIR {
            invalid("not a directory")
        } else if error == EMEDIUMTYPE {
            invalid("not a cgroup v2 directory (not in a cgroup2 file system)")
        } else if error == ELOOP || error == ENAMETOOLONG {
            invalid("too many symbolic links, or a name too long")
        } else {
            Rejected {
                error,
                why: "the path cannot be looked up",
            }
        }
    })
}
