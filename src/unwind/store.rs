// SPDX-License-Identifier: GPL-2.0

//! The unwind tables loaded and the ranges of each process that use them.
//!
//! Writers (the `unwind` file) take a mutex, build a new [`Snapshot`] of every process's
//! ranges and publish it with one pointer store; the walker reads the pointer under the RCU
//! read lock, so it takes no lock and never sleeps. The old snapshot is freed after a grace
//! period. Tables are immutable once loaded and held by reference count.
//!
//! Reading the `unwind` file lists the store a few lines at a time ([`ListingCursor`]): a
//! reader holds the mutex for at most [`LISTING_LINES`] lines, each found by a binary search
//! and formatted from counts kept up to date by the writers, so a writer waits behind a
//! reader for that long at most, whatever the number of tables and ranges.
//!
//! A write is copied in whole before it is parsed; the store bounds what writes in flight
//! may copy in together ([`UnwindStore::stage`]), and refuses a table that cannot fit before
//! its rows are copied.

use super::format::{
    Key, PythonSpec, Ranges, Row, Rows, ThreadStateAt, INDEX_ENTRY_BYTES, KEY_BYTES,
    SET_MAPS_WRITE_MAX,
};
use crate::bindings;
use crate::kernel_ext::kcrate::{
    alloc::{KVVec, KVec},
    new_mutex,
    sync::{Arc, Mutex},
};
use crate::kernel_ext::pid::find_task_in_current_ns;
use crate::kernel_ext::prelude::*;
use crate::watch::WatchSet;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Memory a table costs beyond its rows.
const TABLE_OVERHEAD: usize = 64;
/// Memory a process's ranges cost beyond the ranges themselves.
const PROCESS_OVERHEAD: usize = 64;
/// Most lines of the listing formatted under the mutex at a time ([`UnwindStore::list`]).
pub(crate) const LISTING_LINES: usize = 32;
/// Most bytes of one line of the listing (a table line of 20-digit counts is 120).
pub(crate) const LISTING_LINE_MAX: usize = 128;
/// Writes in flight may hold at least this much copied in together, whatever
/// `unwind_max_kb` is: 256 KiB, and more than the largest `SET_MAPS` ([`SET_MAPS_WRITE_MAX`]).
const STAGING_MIN: usize = if SET_MAPS_WRITE_MAX < 256 * 1024 {
    256 * 1024
} else {
    SET_MAPS_WRITE_MAX + 1
};

/// One object's rows, sorted by `pc`, the last one the end of the table.
pub(crate) struct Table {
    key: Key,
    rows: KVVec<Row>,
    /// The first row's pc.
    first: u32,
    /// `index[b]` is the first row whose pc is at least `first + (b << shift)`
    /// ([`super::format::index_shape`]): the rows a lookup searches lie between two entries.
    index: KVVec<u32>,
    /// At most 32.
    shift: u32,
    /// How many ranges of the published snapshot use it: changed by writers only, under the
    /// store's mutex, when a process's ranges enter or leave the snapshot.
    ranges: AtomicUsize,
}

impl Table {
    /// A table of `rows` (validated: at least one, sorted by `pc`), with its index of the
    /// shape `rows.index_shape()` gives (`shift`, `len`).
    fn new(key: Key, rows: Rows<'_>, (shift, len): (u32, usize)) -> Result<Table> {
        let mut stored = KVVec::with_capacity(rows.len(), GFP_KERNEL)?;
        for row in rows.iter() {
            stored.push(row, GFP_KERNEL)?;
        }
        let first = stored.first().ok_or(EINVAL)?.pc;
        let mut index = KVVec::with_capacity(len, GFP_KERNEL)?;
        let mut at = 0;
        for bucket in 0..len {
            // CAST: usize to u64 is lossless on 64-bit; `bucket << shift` is at most the span
            // of the pcs, below 2^32.
            let start = u64::from(first) + ((bucket as u64) << shift);
            while stored.get(at).is_some_and(|row| u64::from(row.pc) < start) {
                at += 1;
            }
            index.push(u32::try_from(at)?, GFP_KERNEL)?;
        }
        Ok(Table {
            key,
            rows: stored,
            first,
            index,
            shift,
            ranges: AtomicUsize::new(0),
        })
    }

    /// The row that covers object address `pc`, if any. Past the last row (the end marker,
    /// [`super::format::Rule::NoInfo`]) nothing is covered; the end marker itself may be returned for an
    /// address in its bucket, and says the same.
    pub(crate) fn row(&self, pc: u64) -> Option<Row> {
        let pc = u32::try_from(pc).ok()?;
        // The bucket `pc` lies in; past the last entry's, `pc` is past the last row.
        // `shift` is at most 32: the wrapping shift is the plain one, without a check.
        let bucket = u64::from(pc.checked_sub(self.first)?).wrapping_shr(self.shift);
        // CAST: below 2^32, lossless in a usize on 64-bit.
        let bucket = bucket as usize;
        // CAST: u32 to usize is lossless on 64-bit.
        let from = *self.index.get(bucket)? as usize;
        // CAST: u32 to usize is lossless on 64-bit.
        let to = self
            .index
            .get(bucket + 1)
            .map_or(self.rows.len(), |&at| at as usize);
        // The rows at or below `pc`: all those before the bucket's first row, and those of the
        // bucket at or below it (the rows from the next bucket's first on are above).
        let after = from + self.rows.get(from..to)?.partition_point(|row| row.pc <= pc);
        self.rows.get(after.checked_sub(1)?).copied()
    }

    /// Memory it takes.
    fn bytes(&self) -> usize {
        table_bytes(self.rows.len(), self.index.len())
    }
}

/// Memory a table of `rows` rows and `index` index entries takes.
fn table_bytes(rows: usize, index: usize) -> usize {
    TABLE_OVERHEAD + rows * core::mem::size_of::<Row>() + index * INDEX_ENTRY_BYTES
}

/// One executable mapping and the table of the object mapped there.
struct Range {
    start: u64,
    end: u64,
    bias: u64,
    table: Arc<Table>,
}

/// The ranges of one address space, sorted by start and not overlapping.
pub(crate) struct ProcessRanges {
    tgid: i32,
    /// The address space they were given for: compared, never dereferenced.
    mm: usize,
    /// The start time of its thread-group leader, against a reused pid with a reused `mm`.
    start_time: u64,
    /// Its exec count (`self_exec_id`), against a later program whose `mm` reuses the
    /// address of this one's.
    exec_id: u64,
    ranges: KVVec<Range>,
    /// How many distinct tables its ranges use, for the listing: ranges of one object are
    /// next to each other, so the number of places where the table changes, plus one.
    tables: usize,
    /// Its Python interpreter, when userspace described one (`SET_PYTHON`).
    python: Option<PythonSpec>,
}

impl ProcessRanges {
    /// The row that covers run-time address `pc`, if a range and its table cover it.
    /// `near` is the index of the range to try first (a walk's previous frame's, which is
    /// most often the same object's); it is set to the range found.
    pub(crate) fn row(&self, pc: u64, near: &mut usize) -> Option<Row> {
        let range = match self.ranges.get(*near) {
            Some(range) if range.start <= pc && pc < range.end => range,
            _ => {
                let after = self.ranges.partition_point(|range| range.start <= pc);
                *near = after.checked_sub(1)?;
                let range = self.ranges.get(*near)?;
                if pc >= range.end {
                    return None;
                }
                range
            }
        };
        range.table.row(pc.wrapping_sub(range.bias))
    }

    /// Its Python interpreter's description, if it has one.
    pub(crate) fn python(&self) -> Option<&PythonSpec> {
        self.python.as_ref()
    }

    /// What names the address space the ranges were given for.
    fn identity(&self) -> (usize, u64, u64) {
        (self.mm, self.start_time, self.exec_id)
    }

    fn bytes(&self) -> usize {
        PROCESS_OVERHEAD + self.ranges.len() * core::mem::size_of::<Range>()
    }

    fn uses(&self, table: &Arc<Table>) -> bool {
        self.ranges.iter().any(|r| Arc::ptr_eq(&r.table, table))
    }

    /// Counts its ranges in (`true`) or out of their tables' [`Table::ranges`], as it enters
    /// or leaves the published snapshot; for a writer (which holds the store's mutex, as
    /// `_inner` shows).
    fn count_in_tables(&self, _inner: &Inner, entering: bool) {
        for range in self.ranges.iter() {
            if entering {
                range.table.ranges.fetch_add(1, Ordering::Relaxed);
            } else {
                range.table.ranges.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// Where a listing of the store is: what its next line is. A listing read in several
/// parts, while writers change the store, lists each table and process present throughout
/// exactly once, in order (tables by key, processes by id), each line as it was when
/// formatted; one added or removed meanwhile is listed or not, depending on where the
/// listing was.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ListingCursor {
    /// The first table whose key is above `after` (none: the first table).
    Tables { after: Option<Key> },
    /// The first process whose id is above `after`.
    Processes { after: i32 },
    /// The total line.
    Total,
    /// Nothing more.
    Done,
}

impl ListingCursor {
    /// The start of a listing.
    pub(crate) const START: Self = Self::Tables { after: None };
}

/// Every process's ranges, sorted by thread-group id: what the walker reads.
struct Snapshot {
    processes: KVec<Arc<ProcessRanges>>,
}

/// What only writers touch, under the mutex.
struct Inner {
    /// Sorted by key.
    tables: KVec<Arc<Table>>,
}

impl Inner {
    /// The table of `key`: `Ok(index)` if loaded, else `Err(where it would go)`.
    fn find(&self, key: &Key) -> core::result::Result<usize, usize> {
        self.tables.binary_search_by(|t| t.key.cmp(key))
    }
}

/// The tables and ranges, with the memory they take bounded by `max_bytes`.
///
/// # Invariants
///
/// `current` is null or a pointer from `KBox::into_raw` of a [`Snapshot`], replaced only
/// under `inner` and freed only after an RCU grace period that followed its replacement.
#[pin_data(PinnedDrop)]
pub(crate) struct UnwindStore {
    current: AtomicPtr<Snapshot>,
    #[pin]
    inner: Mutex<Inner>,
    /// Memory the tables and ranges take now.
    bytes: AtomicUsize,
    /// Tables loaded and processes with ranges, for `stats` (which takes no lock).
    tables: AtomicUsize,
    processes: AtomicUsize,
    max_bytes: usize,
    /// Bytes that writes in flight have copied in, or are copying in ([`Self::stage`]).
    staged: AtomicUsize,
    /// The most `staged` may be: `max_bytes`, or [`STAGING_MIN`] if larger.
    staging_max: usize,
    /// Whether an `EAGAIN` of [`Self::stage`] was logged since `staged` was last zero: one
    /// line per busy spell, not one per retry.
    busy_logged: AtomicBool,
}

/// A write's bytes counted in [`UnwindStore::stage`]d memory, until this is dropped.
pub(crate) struct Staged<'a> {
    store: &'a UnwindStore,
    bytes: usize,
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        if self.store.staged.fetch_sub(self.bytes, Ordering::Relaxed) == self.bytes {
            self.store.busy_logged.store(false, Ordering::Relaxed);
        }
    }
}

/// What a write's first bytes said it is ([`super::format::parse_prefix`]), as far as the
/// memory it takes goes.
pub(crate) enum Staging {
    /// An `ADD_TABLE` of `rows` rows of table `key`.
    Table { key: Key, rows: usize },
    /// Any other command.
    Other,
}

/// What a write that changes nothing gets.
pub(crate) struct Refused {
    pub(crate) error: Error,
}

impl UnwindStore {
    /// An empty store that takes at most `max_bytes`.
    pub(crate) fn new(max_bytes: usize) -> impl PinInit<Self, Error> {
        let staging_max = max_bytes.max(STAGING_MIN);
        // INVARIANT: `current` is null.
        try_pin_init!(Self {
            current: AtomicPtr::new(core::ptr::null_mut()),
            inner <- new_mutex!(Inner { tables: KVec::new() }),
            bytes: AtomicUsize::new(0),
            tables: AtomicUsize::new(0),
            processes: AtomicUsize::new(0),
            max_bytes,
            staged: AtomicUsize::new(0),
            staging_max,
            busy_logged: AtomicBool::new(false),
        })
    }

    /// Counts a write of `len` bytes in the memory writes in flight hold, before it is
    /// copied in; the count goes down when the returned guard is dropped, once the write is
    /// done with. Refuses it, before anything is copied:
    /// - with `ENOSPC` if it is an `ADD_TABLE` of a table not loaded that cannot fit in
    ///   `unwind_max_kb` now, even with the smallest index its rows can have (one entry);
    /// - with `ENOSPC` if it is larger than the staging bound (`unwind_max_kb`, or 256 KiB
    ///   if larger): it could never be copied in;
    /// - with `EAGAIN` if the writes in flight hold too much for it now.
    ///
    /// So the writes in flight hold at most the staging bound together.
    pub(crate) fn stage(&self, len: usize, what: Staging) -> Result<Staged<'_>, Refused> {
        if let Staging::Table { key, rows } = what {
            let least = table_bytes(rows, 1);
            // Whether the table is loaded is asked (under the mutex) only of a table that
            // does not fit now.
            let fits = |now: usize| now.saturating_add(least) <= self.max_bytes;
            if !fits(self.bytes.load(Ordering::Relaxed)) {
                let inner = self.inner.lock();
                let now = self.bytes.load(Ordering::Relaxed);
                if !fits(now) && inner.find(&key).is_err() {
                    pr_err!(
                        "unwind: an ADD_TABLE of {} rows needs {} bytes or more, which would \
                         pass unwind_max_kb={} ({} bytes in use): refused before its rows \
                         were read; load memmon with a larger unwind_max_kb\n",
                        rows,
                        least,
                        self.max_bytes / 1024,
                        now
                    );
                    return Err(Refused { error: ENOSPC });
                }
            }
        }
        if len > self.staging_max {
            pr_info!(
                "unwind: refused: a write of {} bytes, more than writes may hold copied in \
                 ({} bytes: unwind_max_kb={}, or 256 KiB if more)\n",
                len,
                self.staging_max,
                self.max_bytes / 1024
            );
            return Err(Refused { error: ENOSPC });
        }
        let mut now = self.staged.load(Ordering::Relaxed);
        loop {
            if now.saturating_add(len) > self.staging_max {
                // Logged once per busy spell: the writer's retries (the loader's, every 10 ms
                // for up to 5 s) would flood the log; the errno says it to each.
                if !self.busy_logged.swap(true, Ordering::Relaxed) {
                    pr_info!(
                        "unwind: refused: a write of {} bytes while other writes hold {} bytes \
                         being copied in (at most {}): try again\n",
                        len,
                        now,
                        self.staging_max
                    );
                }
                return Err(Refused { error: EAGAIN });
            }
            match self.staged.compare_exchange_weak(
                now,
                now + len,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Ok(Staged {
                        store: self,
                        bytes: len,
                    })
                }
                Err(seen) => now = seen,
            }
        }
    }

    /// Memory the tables and ranges take now, and the most they may take.
    pub(crate) fn memory(&self) -> (usize, usize) {
        (self.bytes.load(Ordering::Relaxed), self.max_bytes)
    }

    /// Calls `f` with the current process's ranges, if it has any for its address space now;
    /// in any context (under the RCU read lock, taken here).
    pub(crate) fn with_current<R>(&self, f: impl FnOnce(Option<&ProcessRanges>) -> R) -> R {
        // Nothing loaded: no RCU read lock (an out-of-line call) either.
        if self.current.load(Ordering::Relaxed).is_null() {
            return f(None);
        }
        let _rcu = crate::kernel_ext::kcrate::sync::rcu::read_lock();
        let snapshot = self.current.load(Ordering::Acquire);
        // SAFETY: By the type invariants `snapshot` is null or a live `Snapshot`, which stays
        // alive while the RCU read lock is held.
        let Some(snapshot) = (unsafe { snapshot.as_ref() }) else {
            return f(None);
        };
        let task = kernel::task::Task::current_raw();
        // SAFETY: `current` is valid; its `tgid` and `mm` change only in its own context, and
        // its group leader lives as long as the group does.
        let (tgid, mm, start_time, exec_id) = unsafe {
            (
                (*task).tgid,
                (*task).mm as usize,
                (*(*task).group_leader).start_time,
                (*task).self_exec_id,
            )
        };
        let Ok(at) = snapshot.processes.binary_search_by_key(&tgid, |p| p.tgid) else {
            return f(None);
        };
        let process = snapshot.processes.get(at).map(|p| &**p);
        f(process.filter(|p| p.identity() == (mm, start_time, exec_id)))
    }

    /// Loads a table; a table of that key already loaded stays as it is.
    pub(crate) fn add_table(&self, key: Key, rows: Rows<'_>) -> Result<(), Refused> {
        let mut inner = self.inner.lock();
        let Err(at) = inner.find(&key) else {
            return Ok(());
        };
        // `parse` refuses a table of no rows.
        let shape = rows
            .index_shape()
            .ok_or_else(|| refused(EINVAL, "an ADD_TABLE of no rows"))?;
        let bytes = table_bytes(rows.len(), shape.1);
        self.reserve(&inner, bytes)?;
        let added = (|| -> Result {
            let table = Arc::new(Table::new(key, rows, shape)?, GFP_KERNEL)?;
            inner.tables.reserve(1, GFP_KERNEL)?;
            inner
                .tables
                .insert_within_capacity(at, table)
                .map_err(|_| ENOMEM)?;
            Ok(())
        })();
        match added {
            Ok(()) => {
                self.tables.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(error) => {
                self.bytes.fetch_sub(bytes, Ordering::Relaxed);
                Err(refused(error, "out of memory for a table"))
            }
        }
    }

    /// Removes a table that no process's ranges use.
    pub(crate) fn drop_table(&self, key: Key, watch: &WatchSet) -> Result<(), Refused> {
        let mut inner = self.inner.lock();
        let Ok(at) = inner.find(&key) else {
            return Err(refused(ENOENT, "DROP_TABLE of a table not loaded"));
        };
        let Some(table) = inner.tables.get(at).cloned() else {
            return Err(refused(ENOENT, "DROP_TABLE of a table not loaded"));
        };
        let (used, stale) = self.with_snapshot(&inner, |processes| {
            let used = |p: &&Arc<ProcessRanges>| p.uses(&table);
            (
                processes
                    .iter()
                    .filter(used)
                    .any(|p| watch.contains(p.tgid)),
                processes.iter().any(|p| !watch.contains(p.tgid)),
            )
        });
        if used {
            return Err(refused(EBUSY, "DROP_TABLE of a table that ranges use"));
        }
        // Ranges of processes no longer watched go first: they may be what holds it.
        if stale {
            self.publish(&mut inner, watch, None, 0)?;
        }
        let bytes = table.bytes();
        drop(inner.tables.remove(at));
        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.tables.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }

    /// Replaces the ranges of process `nr` (of the caller's pid namespace).
    pub(crate) fn set_maps(
        &self,
        nr: u32,
        ranges: Ranges<'_>,
        watch: &WatchSet,
    ) -> Result<(), Refused> {
        let mut inner = self.inner.lock();
        // Under the mutex, so that of two writes for one process the later one wins.
        let (tgid, mm, start_time, exec_id) = resolve(nr, "SET_MAPS")?;
        if !watch.contains(tgid) {
            return Err(refused(ESRCH, "SET_MAPS of a process that is not watched"));
        }
        let process = if ranges.len() == 0 {
            None
        } else {
            let mut stored = KVVec::with_capacity(ranges.len(), GFP_KERNEL).map_err(oom)?;
            for spec in ranges.iter() {
                let Some(table) = inner
                    .find(&spec.key)
                    .ok()
                    .and_then(|at| inner.tables.get(at))
                else {
                    return Err(refused(ENOENT, "SET_MAPS names a table not loaded"));
                };
                let range = Range {
                    start: spec.start,
                    end: spec.end,
                    bias: spec.bias,
                    table: table.clone(),
                };
                stored.push(range, GFP_KERNEL).map_err(oom)?;
            }
            let tables = stored
                .windows(2)
                .filter(|pair| matches!(pair, [a, b] if !Arc::ptr_eq(&a.table, &b.table)))
                .count()
                + 1;
            // The interpreter described for this address space stays described.
            let python = self.with_snapshot(&inner, |processes| {
                processes
                    .iter()
                    .find(|p| p.tgid == tgid && p.identity() == (mm, start_time, exec_id))
                    .and_then(|p| p.python)
            });
            let process = ProcessRanges {
                tgid,
                mm,
                start_time,
                exec_id,
                ranges: stored,
                tables,
                python,
            };
            Some(Arc::new(process, GFP_KERNEL).map_err(oom)?)
        };
        self.publish(&mut inner, watch, process, tgid)
    }

    /// Describes the Python interpreter of process `nr` (of the caller's pid namespace), or
    /// forgets it (`None`); its ranges stay as they are.
    pub(crate) fn set_python(
        &self,
        nr: u32,
        python: Option<PythonSpec>,
        watch: &WatchSet,
    ) -> Result<(), Refused> {
        let mut inner = self.inner.lock();
        let (tgid, mm, start_time, exec_id) = resolve(nr, "SET_PYTHON")?;
        if !watch.contains(tgid) {
            return Err(refused(
                ESRCH,
                "SET_PYTHON of a process that is not watched",
            ));
        }
        let identity = (mm, start_time, exec_id);
        // Its ranges, if given for this address space, are kept: copied with their tables.
        let mut ranges = KVVec::new();
        let mut tables = 0;
        let copied = self.with_snapshot(&inner, |processes| -> Result<(), Refused> {
            let Some(old) = processes
                .iter()
                .find(|p| p.tgid == tgid && p.identity() == identity)
            else {
                return Ok(());
            };
            ranges.reserve(old.ranges.len(), GFP_KERNEL).map_err(oom)?;
            for range in old.ranges.iter() {
                let copy = Range {
                    start: range.start,
                    end: range.end,
                    bias: range.bias,
                    table: range.table.clone(),
                };
                ranges.push(copy, GFP_KERNEL).map_err(oom)?;
            }
            tables = old.tables;
            Ok(())
        });
        copied?;
        let process = if ranges.is_empty() && python.is_none() {
            None
        } else {
            let process = ProcessRanges {
                tgid,
                mm,
                start_time,
                exec_id,
                ranges,
                tables,
                python,
            };
            Some(Arc::new(process, GFP_KERNEL).map_err(oom)?)
        };
        self.publish(&mut inner, watch, process, tgid)
    }

    /// Calls `f` with the processes of the current snapshot, for a writer (which holds
    /// `inner`, as `_inner` shows).
    fn with_snapshot<R>(&self, _inner: &Inner, f: impl FnOnce(&[Arc<ProcessRanges>]) -> R) -> R {
        let snapshot = self.current.load(Ordering::Acquire);
        // SAFETY: The caller holds `inner`, under which alone the snapshot is replaced and
        // freed: it stays alive during the call.
        match unsafe { snapshot.as_ref() } {
            Some(snapshot) => f(&snapshot.processes),
            None => f(&[]),
        }
    }

    /// Publishes a snapshot with the ranges of process `tgid` replaced by `process` (none:
    /// forgotten; `tgid` 0: only pruning), without the processes no longer watched, then
    /// frees the old one after a grace period.
    fn publish(
        &self,
        inner: &mut Inner,
        watch: &WatchSet,
        process: Option<Arc<ProcessRanges>>,
        tgid: i32,
    ) -> Result<(), Refused> {
        // A process that left the watch set since it was resolved is not added.
        let process = process.filter(|p| watch.contains(p.tgid));
        let added = process.clone();
        let added_bytes = process.as_ref().map_or(0, |p| p.bytes());
        let mut freed = 0;
        let mut processes = KVec::new();
        self.with_snapshot(inner, |old| -> Result<(), Refused> {
            processes.reserve(old.len() + 1, GFP_KERNEL).map_err(oom)?;
            for p in old {
                if p.tgid == tgid || !watch.contains(p.tgid) {
                    freed += p.bytes();
                } else {
                    processes.push(p.clone(), GFP_KERNEL).map_err(oom)?;
                }
            }
            Ok(())
        })?;
        if let Some(process) = process {
            let at = processes
                .binary_search_by_key(&process.tgid, |p| p.tgid)
                .unwrap_or_else(|at| at);
            processes
                .insert_within_capacity(at, process)
                .map_err(|_| Refused { error: ENOMEM })?;
        }
        let new = if processes.is_empty() {
            None
        } else {
            Some(KBox::new(Snapshot { processes }, GFP_KERNEL).map_err(oom)?)
        };
        if added_bytes > freed {
            self.reserve(inner, added_bytes - freed)?;
        } else {
            self.bytes.fetch_sub(freed - added_bytes, Ordering::Relaxed);
        }
        let count = new.as_ref().map_or(0, |s| s.processes.len());
        self.processes.store(count, Ordering::Relaxed);
        let new = new.map_or(core::ptr::null_mut(), KBox::into_raw);
        // INVARIANT: replaced under `inner` (held by the caller, as `inner` shows).
        let old = self.current.swap(new, Ordering::AcqRel);
        // The tables' range counts follow: the processes of the old snapshot not in the new
        // one go out of them, the one added comes in.
        // SAFETY: `old` and `new` are null or live snapshots: only writers, which hold
        // `inner` as this one does, replace and free them, and `old` is freed below.
        let (old_ref, new_ref) = unsafe { (old.as_ref(), new.as_ref()) };
        let kept = |p: &Arc<ProcessRanges>| {
            new_ref.is_some_and(|new| {
                new.processes
                    .binary_search_by_key(&p.tgid, |q| q.tgid)
                    .ok()
                    .and_then(|at| new.processes.get(at))
                    .is_some_and(|q| Arc::ptr_eq(p, q))
            })
        };
        for p in old_ref.iter().flat_map(|old| old.processes.iter()) {
            if !kept(p) {
                p.count_in_tables(inner, false);
            }
        }
        if let Some(p) = added {
            p.count_in_tables(inner, true);
        }
        if !old.is_null() {
            // SAFETY: Sleeping is allowed here (a write to the file, process context): it
            // returns once every walker that may have read `old` is done.
            unsafe { bindings::synchronize_rcu() };
            // SAFETY: `old` came from `KBox::into_raw`, is no longer published, and no walker
            // reads it any more.
            drop(unsafe { KBox::from_raw(old) });
        }
        Ok(())
    }

    /// Counts `bytes` more, or refuses them if that would pass the bound; for a writer
    /// (which holds `inner`, as `_inner` shows: only writers change the count).
    fn reserve(&self, _inner: &Inner, bytes: usize) -> Result<(), Refused> {
        let now = self.bytes.load(Ordering::Relaxed);
        if now.saturating_add(bytes) > self.max_bytes {
            pr_err!(
                "unwind: {} bytes more would pass unwind_max_kb={} ({} bytes in use): \
                 load memmon with a larger unwind_max_kb\n",
                bytes,
                self.max_bytes / 1024,
                now
            );
            return Err(Refused { error: ENOSPC });
        }
        // Only writers, under `inner`, change the count.
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Lines of the `unwind` file's listing from `cursor` on: the tables by key, the
    /// processes by id, then the total. Formats at most `lines` lines (at most
    /// [`LISTING_LINES`]) into `out` and moves `cursor` past them. Holds the mutex for just
    /// that: each line is found by a binary search and made of counts kept up to date, so
    /// the time a writer can wait behind a reader does not grow with the tables and ranges
    /// loaded. `out` should have room for `lines` lines of [`LISTING_LINE_MAX`] bytes, so
    /// that nothing is allocated under the mutex.
    pub(crate) fn list(
        &self,
        cursor: &mut ListingCursor,
        out: &mut impl Write,
        lines: usize,
    ) -> core::fmt::Result {
        let inner = self.inner.lock();
        self.with_snapshot(&inner, |processes| {
            for _ in 0..lines.min(LISTING_LINES) {
                match *cursor {
                    ListingCursor::Tables { after } => {
                        let at = after
                            .map_or(0, |after| inner.tables.partition_point(|t| t.key <= after));
                        let Some(table) = inner.tables.get(at) else {
                            *cursor = ListingCursor::Processes { after: 0 };
                            continue;
                        };
                        out.write_str("table ")?;
                        out.write_str(key_hex(&table.key, &mut [0; 2 * KEY_BYTES]))?;
                        writeln!(
                            out,
                            " rows={} bytes={} ranges={}",
                            table.rows.len(),
                            table.bytes(),
                            table.ranges.load(Ordering::Relaxed)
                        )?;
                        *cursor = ListingCursor::Tables {
                            after: Some(table.key),
                        };
                    }
                    ListingCursor::Processes { after } => {
                        let at = processes.partition_point(|p| p.tgid <= after);
                        let Some(p) = processes.get(at) else {
                            *cursor = ListingCursor::Total;
                            continue;
                        };
                        write!(
                            out,
                            "process {} ranges={} tables={}",
                            p.tgid,
                            p.ranges.len(),
                            p.tables
                        )?;
                        if let Some(python) = &p.python {
                            write!(
                                out,
                                " python={}.{} ",
                                python.version >> 8,
                                python.version & 0xff
                            )?;
                            match python.thread_state {
                                ThreadStateAt::Global(at) => write!(out, "threads=global@{at:#x}")?,
                                ThreadStateAt::ThreadLocal(offset) => {
                                    // Below the thread pointer: negative, as the format checked.
                                    write!(out, "threads=tls-{:#x}", offset.unsigned_abs())?
                                }
                                ThreadStateAt::List(list) => {
                                    write!(out, "threads=list@{:#x}", list.head)?
                                }
                            }
                        }
                        out.write_str("\n")?;
                        *cursor = ListingCursor::Processes { after: p.tgid };
                    }
                    ListingCursor::Total => {
                        let (bytes, max) = self.memory();
                        writeln!(out, "total bytes={bytes} max={max}")?;
                        *cursor = ListingCursor::Done;
                    }
                    ListingCursor::Done => break,
                }
            }
            Ok(())
        })
    }

    /// How many tables, and how many processes have ranges.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (
            self.tables.load(Ordering::Relaxed),
            self.processes.load(Ordering::Relaxed),
        )
    }
}

#[pinned_drop]
impl PinnedDrop for UnwindStore {
    fn drop(self: Pin<&mut Self>) {
        let old = self.current.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: `old` came from `KBox::into_raw`; the store is dropped once every probe
            // that walks stacks has been detached and waited for, so no walker reads it.
            drop(unsafe { KBox::from_raw(old) });
        }
    }
}

/// `key` in lowercase hexadecimal, written into `out`: without `core::fmt`'s machinery for
/// each byte, as the listing makes many (the time a reader holds the mutex).
fn key_hex<'a>(key: &Key, out: &'a mut [u8; 2 * KEY_BYTES]) -> &'a str {
    let digit = |nibble: u8| match nibble {
        0..=9 => b'0' + nibble,
        _ => b'a' + (nibble - 10),
    };
    let nibbles = key.iter().flat_map(|byte| [byte >> 4, byte & 0xf]);
    for (at, nibble) in nibbles.enumerate() {
        if let Some(slot) = out.get_mut(at) {
            *slot = digit(nibble);
        }
    }
    // Only ASCII digits were written.
    core::str::from_utf8(out).unwrap_or("")
}

fn refused(error: Error, why: &str) -> Refused {
    pr_info!("unwind: refused: {}\n", why);
    Refused { error }
}

fn refused_command(error: Error, command: &str, why: &str) -> Refused {
    pr_info!("unwind: refused: {} {}\n", command, why);
    Refused { error }
}

fn oom(_: impl Into<Error>) -> Refused {
    Refused { error: ENOMEM }
}

/// The thread-group id (initial namespace), address space, leader start time and exec count
/// of the process of task `nr` of the caller's pid namespace; `ESRCH` if there is none.
fn resolve(nr: u32, command: &str) -> Result<(i32, usize, u64, u64), Refused> {
    let nr =
        i32::try_from(nr).map_err(|_| refused_command(ESRCH, command, "of no such process"))?;
    let rcu = crate::kernel_ext::kcrate::sync::rcu::read_lock();
    let task = find_task_in_current_ns(nr, &rcu)
        .ok_or_else(|| refused_command(ESRCH, command, "of no such process"))?
        .as_ptr();
    // SAFETY: `task` and its group leader are valid while the RCU read lock is held. The task
    // may be changing these fields in exec meanwhile: they are read once each, as READ_ONCE
    // does (marked, so no data race), and `mm` only as a value to compare, never dereferenced.
    // A value from just before an exec names the old program, whose ranges the walker then
    // ignores.
    let ids = unsafe {
        (
            core::ptr::read_volatile(&raw const (*task).tgid),
            core::ptr::read_volatile(&raw const (*task).mm) as usize,
            core::ptr::read_volatile(&raw const (*(*task).group_leader).start_time),
            core::ptr::read_volatile(&raw const (*task).self_exec_id),
        )
    };
    if ids.1 == 0 {
        return Err(refused_command(
            ESRCH,
            command,
            "of a process without an address space",
        ));
    }
    Ok(ids)
}
