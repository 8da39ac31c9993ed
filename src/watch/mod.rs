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
//!
//! - [`bitmap`]: the bitmap over every possible pid;
//! - [`request`]: the items of a `watch-pids` write, parsed and resolved ([`rejected`]: why
//!   one is refused);
//! - [`cgroup`]: the watched cgroups: the lookup of a `c:PATH` item, the writers' and the
//!   probes' lists.

mod bitmap;
mod cgroup;
mod rejected;
mod request;

use crate::kernel_ext::kcrate::{
    alloc::flags::GFP_KERNEL,
    alloc::{allocator::KVmalloc, KVVec, KVec},
    new_mutex, new_spinlock,
    str::BStr,
    sync::{
        atomic::{Atomic, Full, Relaxed, Release},
        Mutex, SpinLock,
    },
    task::Task,
};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::{
    atomic::{read_once, smp_mb_full},
    byte_writer::ByteWriter,
    cgroup::{for_each_process, Cgroup},
    task::{current_ids, task_tgid, TaskExt},
};
use bitmap::PidBitmap;
use cgroup::{cgroup_key, Membership, WatchedCgroup, CGROUPS_MAX};
use core::fmt::Write;
use request::{parse_request, plan, Request};

/// Whether a look at a process's cgroup ([`WatchSet::refresh`]) found it in a watched cgroup,
/// and whether it was watched as a member of one before.
#[derive(Clone, Copy, Default)]
pub(crate) struct CgroupMember {
    pub(crate) before: bool,
    pub(crate) now: bool,
}

impl CgroupMember {
    /// Whether the process became watched by cgroup: its `cgroup` line is due.
    pub(crate) fn joined(self) -> bool {
        self.now && !self.before
    }
}

/// What a fork did to the watch set ([`WatchSet::fork`]).
#[derive(Clone, Copy)]
pub(crate) struct Forked {
    /// Whether the parent is watched (its `fork` line is due).
    pub(crate) parent_watched: bool,
    /// Whether the child is watched.
    pub(crate) child_watched: bool,
    /// Whether the child is in a watched cgroup (its `cgroup` line is due).
    pub(crate) child_in_cgroup: bool,
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
    /// Returns whether the process was and is watched as a member of a watched cgroup.
    fn refresh(&self, task: &Task) -> CgroupMember {
        // Kernel threads (in the root cgroup) have no user memory to watch.
        if task.is_kernel_thread() || !task.group_alive() {
            return CgroupMember::default();
        }
        let tgid = task_tgid(task);
        let (was_watched, watched, member) = {
            let membership = self.membership.lock();
            let now = membership.has_process(task);
            let before = self.by_cgroup.update(tgid, now);
            let watched = now || self.by_pid.contains(tgid);
            (
                self.update_watched(tgid, watched),
                watched,
                CgroupMember { before, now },
            )
        };
        // As for a write that adds a process: it may have exited meanwhile (a fully ordered
        // decrement of `signal->live`; the bit was set with a full barrier), and then its
        // exit probe may have missed the bit.
        if !was_watched && watched && !task.group_alive() {
            self.remove(tgid);
            return CgroupMember::default();
        }
        member
    }

    /// A process was moved to another cgroup (`cgroup_attach_task`, fired after the move):
    /// it is watched by cgroup from now on if that is a watched one or below one, and no
    /// longer if it is not. Returns whether it is in a watched cgroup after the move.
    pub(crate) fn moved(&self, task: &Task) -> bool {
        // After the move, against a write adding a cgroup (its count, then its walk): either
        // this sees the count, or the walk sees the process where it was moved to.
        smp_mb_full();
        self.cgroups_watched() && self.refresh(task).now
    }

    /// At exec (`begin_new_exec`): whether the current process is watched, by cgroup too;
    /// and whether it just became watched as a member of a watched cgroup.
    pub(crate) fn exec_current(&self) -> (bool, bool) {
        if self.contains_current() {
            return (true, false);
        }
        if !self.cgroups_watched() {
            return (false, false);
        }
        let member = self.refresh(kernel::current!());
        (self.contains_current(), member.joined())
    }

    /// Process `parent` forked the new process `child`: if the parent is watched and
    /// followed, the child is watched too, and so it is if it is in a watched cgroup (its
    /// parent's, or the one `clone3(CLONE_INTO_CGROUP)` put it in). `child` is the new task
    /// of the `sched_process_fork` tracepoint, a thread group leader.
    pub(crate) fn fork(&self, parent: i32, child: &Task) -> Forked {
        // Fully ordered before the look at the parent's bit, against `if_empty`, which reads
        // the bits and then this count: either it sees this fork in progress, or this fork
        // sees the parent's bit as it was when the set was found empty (clear, since
        // `if_empty` found no bit set). And after the child was put in its cgroup, against a
        // write adding a cgroup: either this sees its count, or its walk sees the child.
        self.forks_in_progress.fetch_add(1, Full);
        let child_tgid = task_tgid(child);
        let watched = self.contains(parent);
        let follow = watched && self.follows(parent);
        if follow {
            self.add(child_tgid, true);
        }
        let member = if self.cgroups_watched() {
            self.refresh(child)
        } else {
            CgroupMember::default()
        };
        let child_watched = self.contains(child_tgid);
        // After the child's bit (`add` sets it fully ordered, `refresh` under the lock).
        self.forks_in_progress.fetch_add(-1, Full);
        Forked {
            parent_watched: watched,
            child_watched,
            child_in_cgroup: member.now,
        }
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
        let bitmaps = 5 * self.watched.bytes();
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
    /// then watches every process in it or below it, calling `joined` with each one that
    /// became watched as a member of a watched cgroup (under the RCU read lock: it must not
    /// sleep).
    fn add_cgroup(&self, cgroup: Cgroup, joined: &mut impl FnMut(&Task)) {
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
            if cgroup.has_process(task) && self.refresh(task).joined() {
                joined(task);
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
            if self.by_cgroup.contains(task_tgid(task)) {
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
    /// [`Self::if_empty`]. `joined` is called with every process that a cgroup added
    /// makes watched as its member (under the RCU read lock: it must not sleep).
    pub(crate) fn apply(
        &self,
        input: &[u8],
        before_adding: impl FnOnce(bool) -> Result,
        mut joined: impl FnMut(&Task),
    ) -> Result {
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
            self.apply_request(&mut cgroups, request, &mut joined);
        }
        Ok(())
    }

    /// Applies one checked item of a write; `cgroups` is the writers' list, its lock held.
    fn apply_request(
        &self,
        cgroups: &mut KVec<WatchedCgroup>,
        request: Request,
        joined: &mut impl FnMut(&Task),
    ) {
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
                    return;
                }
                let watched = WatchedCgroup {
                    cgroup: cgroup.clone(),
                    path,
                };
                // Room for it: `plan` kept the list within its capacity.
                if cgroups.push_within_capacity(watched).is_ok() {
                    self.add_cgroup(cgroup, joined);
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

    /// The watched set as text: a line of the watched processes, sorted, consecutive pids as
    /// ranges, `3000,3005-3007\n` (by pid or by cgroup), then a line `c:PATH` for each
    /// watched cgroup, in the order they were added.
    /// The text is in a [`KVVec`]: 64 cgroup paths of up to 4 095 bytes make 256 KiB, more
    /// than a contiguous allocation should be asked for.
    pub(crate) fn format(&self) -> Result<KVVec<u8>> {
        let mut cgroups = self.update.lock();
        self.prune(&mut cgroups);
        let mut out = ByteWriter(KVVec::new());
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

fn write_range(out: &mut ByteWriter<KVmalloc>, (first, last): (usize, usize)) -> core::fmt::Result {
    if !out.0.is_empty() {
        out.write_str(",")?;
    }
    if first == last {
        write!(out, "{first}")
    } else {
        write!(out, "{first}-{last}")
    }
}
