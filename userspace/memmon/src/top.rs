//! `memmon top`: the model behind the live view. Events (live, or replayed from a capture)
//! go into the report's own [`Replay`]; every refresh takes a [`TopSample`] of it: per
//! process what is resident now and its growth since the last refresh, faults per second
//! by class, swap-ins; the sites by resident growth in the last interval and since the
//! start (the model's creation, when nothing was resident in it); and the events lost.
//! [`render_plain`] is the table printed when stdout is not a terminal.
//!
//! A site is named by its own code ([`OwnCode`]): the innermost frame that is not in a
//! system library, with the callers of 4 frames from it, then the library part summarised
//! (`load_rows < main (rows.c:33) → [libsqlite3.so.0: sqlite3_step … libc.so.6: malloc]`);
//! sites with the same name are one row. A process that exited since the previous sample is
//! in that sample once more, as it was when it exited (its row marked `[exited]`, its pages
//! in its sites' figures): the table taken when the watched command has ended shows what
//! the command had, not what is left after it.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write;

use rustc_hash::FxHashMap;

use crate::capture::file::Record;
use crate::report::model::loss::grouped;
use crate::report::model::picture::{KindBytes, PageSize, Picture};
use crate::report::model::replay::{Replay, ReplayOptions};
use crate::report::model::sites::{ObjectId, SiteId, SiteTable};
use crate::report::model::stats::FaultClass;
use crate::report::output::text::size;
use crate::report::symbolize::short_name::Naming;
use crate::report::symbolize::symbols::{name, FrameInfo, SymbolOptions, Symbols};
use crate::report::view::own_code::{objects_with_own_lines, own_site_name, OwnCode};
use crate::stream::event::{Event, EventKind, FaultType};

/// One process of a sample.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRow {
    /// Process id.
    pub pid: u32,
    /// Command name (its last `exec`), `?` when unknown.
    pub command: String,
    /// Resident (and swapped-out) bytes now, as the model has them.
    pub resident: KindBytes,
    /// Resident bytes gained (negative: lost) since the previous sample.
    pub growth: i64,
    /// Faults per second over the interval, by [`FaultClass`] (report order).
    pub faults_per_second: [f64; 5],
    /// Swap-ins (`type=swap` faults) since the start.
    pub swap_ins: u64,
    /// The process exited since the previous sample: the row is what it had then.
    pub exited: bool,
}

/// One site of a sample: the sites of one function chain merged, as in the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteGrowthRow {
    /// From the innermost frame of own code: its function chain (`f < caller < caller`,
    /// at most 4) and its source location when known, then the system frames innermost of
    /// it summarised (` → [libc.so.6: malloc]`); without own code, the whole stack's chain.
    pub name: String,
    /// The innermost function of own code (else the innermost function).
    pub function: String,
    /// Resident bytes now.
    pub resident: u64,
    /// Resident bytes gained in the last interval.
    pub interval_growth: i64,
    /// Resident bytes gained since the start (the first sample).
    pub start_growth: i64,
}

/// What one refresh shows.
#[derive(Debug, Clone, PartialEq)]
pub struct TopSample {
    /// Seconds of stream time the interval covered.
    pub seconds: f64,
    /// Events so far.
    pub events: u64,
    /// Events lost so far (overwritten before they were read).
    pub lost: u64,
    /// Of those, lost in the interval.
    pub lost_in_interval: u64,
    /// Faults the module did not record so far (`dropped` lines), all processes.
    pub dropped: u64,
    /// Stacks the module shed so far (`stack_end=shed`), all processes.
    pub shed: u64,
    /// The live processes.
    pub processes: Vec<ProcessRow>,
    /// Sites with resident memory or growth, by `sort`.
    pub sites: Vec<SiteGrowthRow>,
}

/// How the processes are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProcessOrder {
    /// Largest resident first.
    #[default]
    Resident,
    /// Fastest growing first.
    Growth,
    /// Most faults per second first.
    Faults,
}

impl ProcessOrder {
    /// The next order (the `s` key).
    pub fn next(self) -> ProcessOrder {
        match self {
            ProcessOrder::Resident => ProcessOrder::Growth,
            ProcessOrder::Growth => ProcessOrder::Faults,
            ProcessOrder::Faults => ProcessOrder::Resident,
        }
    }

    /// Column name.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessOrder::Resident => "resident",
            ProcessOrder::Growth => "growth",
            ProcessOrder::Faults => "faults/s",
        }
    }
}

/// How the sites are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SiteOrder {
    /// Largest growth in the last interval first (then since the start).
    #[default]
    IntervalGrowth,
    /// Largest growth since the start first.
    StartGrowth,
    /// Largest resident first.
    Resident,
}

impl SiteOrder {
    /// The next order (the `s` key).
    pub fn next(self) -> SiteOrder {
        match self {
            SiteOrder::IntervalGrowth => SiteOrder::StartGrowth,
            SiteOrder::StartGrowth => SiteOrder::Resident,
            SiteOrder::Resident => SiteOrder::IntervalGrowth,
        }
    }

    /// Column name.
    pub fn as_str(self) -> &'static str {
        match self {
            SiteOrder::IntervalGrowth => "interval growth",
            SiteOrder::StartGrowth => "growth since start",
            SiteOrder::Resident => "resident",
        }
    }
}

impl TopSample {
    /// Orders the processes (ties by pid).
    pub fn sort_processes(&mut self, order: ProcessOrder) {
        let faults = |row: &ProcessRow| row.faults_per_second.iter().sum::<f64>();
        self.processes.sort_by(|a, b| {
            let by = match order {
                ProcessOrder::Resident => b.resident.resident().cmp(&a.resident.resident()),
                ProcessOrder::Growth => b.growth.cmp(&a.growth),
                ProcessOrder::Faults => faults(b).total_cmp(&faults(a)),
            };
            by.then(a.pid.cmp(&b.pid))
        });
    }

    /// Orders the sites (ties by the other columns, then by name).
    pub fn sort_sites(&mut self, order: SiteOrder) {
        self.sites.sort_by(|a, b| {
            let key = |row: &SiteGrowthRow| match order {
                SiteOrder::IntervalGrowth => (row.interval_growth, row.start_growth),
                SiteOrder::StartGrowth => (row.start_growth, row.interval_growth),
                SiteOrder::Resident => (row.resident as i64, row.start_growth),
            };
            key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name))
        });
    }
}

/// Per-process counts the replay does not keep: command, faults by class.
#[derive(Debug, Default, Clone)]
struct Activity {
    /// What it had resident when it exited (since the previous sample).
    exited: Option<Picture>,
    command: Option<String>,
    faults: [u64; 5],
    faults_before: [u64; 5],
    swap_ins: u64,
    resident_before: u64,
}

/// The replay and the state of the previous sample.
pub struct TopModel {
    replay: Replay,
    activity: BTreeMap<u32, Activity>,
    symbol_options: SymbolOptions,
    /// The symbols, how many sites the table had made when they were made, and the objects with
    /// lines of their own ([`objects_with_own_lines`]).
    symbols: Option<(Symbols, u64, BTreeSet<ObjectId>)>,
    /// Which code is the system's; the executed programs are own code.
    own_code: OwnCode,
    /// Each site's row name and function, made with the current symbols.
    site_names: FxHashMap<SiteId, (String, String)>,
    /// Resident pages by site at the previous sample (none before the first).
    previous_sites: FxHashMap<SiteId, u64>,
    lost_before: u64,
    /// Snapshots taken live, each applied once the stream reaches its time: the events
    /// read after it may be older (the exec that a `/proc/PID/maps` read at the exec stop
    /// follows), and applied after the snapshot they would undo it. In the order taken,
    /// which is their time's.
    pending_snapshots: VecDeque<crate::capture::file::Snapshot>,
}

impl TopModel {
    /// An empty model; sites are named with `symbol_options` (as `memmon report`'s).
    pub fn new(symbol_options: SymbolOptions) -> TopModel {
        TopModel::with_replay_options(symbol_options, ReplayOptions::default())
    }

    /// An empty model whose replay has `options` (`memmon agent`, which runs for ever, cuts
    /// its timeline at marks only, not every second).
    pub fn with_replay_options(symbol_options: SymbolOptions, options: ReplayOptions) -> TopModel {
        // Live: this machine's pages (a capture's `# page-size` header says otherwise).
        let mut replay = Replay::new(options);
        replay.set_page_size(PageSize::of_this_machine());
        TopModel {
            replay,
            activity: BTreeMap::new(),
            symbol_options,
            symbols: None,
            own_code: OwnCode::default(),
            site_names: FxHashMap::default(),
            previous_sites: FxHashMap::default(),
            lost_before: 0,
            pending_snapshots: VecDeque::new(),
        }
    }

    /// Applies one record of a capture (an event, a snapshot or a header).
    pub fn record(&mut self, record: &Record<'_>) {
        match record {
            Record::Event(event) => self.event(event),
            Record::Snapshot(snapshot) => {
                self.replay.snapshot(snapshot);
                self.apply_recycled();
            }
            Record::Header { key, value } => self.replay.header(key, value),
        }
    }

    /// Applies a snapshot taken live after the event that called for it was applied (the
    /// maps after an exec event): at once, after the pending ones of its time, as
    /// `memmon record` writes it at that event's place in the capture. The events read
    /// after it are the exec'd program's, even those older than the read of its maps.
    pub fn snapshot_now(&mut self, snapshot: crate::capture::file::Snapshot) {
        self.apply_snapshots(Some(snapshot.time));
        self.replay.snapshot(&snapshot);
        self.apply_recycled();
    }

    /// Applies a snapshot taken live (`/proc/PID/maps` when a process first appears) in
    /// the stream's order: before the first event later than it, or at the next sample.
    pub fn snapshot(&mut self, snapshot: crate::capture::file::Snapshot) {
        self.pending_snapshots.push_back(snapshot);
    }

    /// The stream has been read up to `time` (every event older is applied): the pending
    /// live snapshots taken by then are applied now, not at the next event of their
    /// processes, which an idle process may never have (`memmon agent` calls it after
    /// each read of the stream that emptied it).
    pub fn stream_reached(&mut self, time: crate::stream::event::Timestamp) {
        self.apply_snapshots(Some(time));
    }

    /// Applies the pending live snapshots taken before `time` (all of them with `None`).
    fn apply_snapshots(&mut self, time: Option<crate::stream::event::Timestamp>) {
        while let Some(snapshot) = self
            .pending_snapshots
            .pop_front_if(|snapshot| time.is_none_or(|time| snapshot.time <= time))
        {
            self.replay.snapshot(&snapshot);
            self.apply_recycled();
        }
    }

    /// The replay's recycles of dropped sites ([`Replay::take_recycled`]), applied to the
    /// site ids held here before a freed id names a new site.
    fn apply_recycled(&mut self) {
        for remap in self.replay.take_recycled() {
            for activity in self.activity.values_mut() {
                if let Some(picture) = &mut activity.exited {
                    picture.remap_sites(&remap);
                }
            }
            remap.map(&mut self.previous_sites);
            for id in &remap.dropped {
                self.site_names.remove(id);
            }
        }
    }

    /// Names a process (live: its /proc/PID/comm) until it execs.
    pub fn name(&mut self, pid: u32, command: &str) {
        self.activity.entry(pid).or_default().command = Some(command.to_owned());
    }

    /// Applies one event.
    pub fn event(&mut self, event: &Event<'_>) {
        self.apply_snapshots(Some(event.time));
        match &event.kind {
            EventKind::Fault { fault_type, .. } => {
                let activity = self.activity.entry(event.pid).or_default();
                activity.faults[FaultClass::of(*fault_type).index()] += 1;
                if *fault_type == FaultType::Swap {
                    activity.swap_ins += 1;
                }
            }
            EventKind::Exec { comm, filename } => {
                self.activity.entry(event.pid).or_default().command = Some(comm.to_string_lossy());
                self.executable(&filename.to_string_lossy());
            }
            EventKind::Exit { .. } => {
                // What it had, for the next sample: the replay forgets it at its exit.
                let picture = self
                    .replay
                    .live_pictures()
                    .find(|((_, pid), _)| *pid == event.pid)
                    .map(|(_, picture)| picture.clone());
                if let Some(picture) = picture {
                    self.activity.entry(event.pid).or_default().exited = Some(picture);
                }
            }
            EventKind::Fork { child, .. } => {
                let command = self
                    .activity
                    .get(&event.pid)
                    .and_then(|a| a.command.clone());
                self.activity.entry(*child).or_default().command = command;
            }
            _ => {}
        }
        self.replay.event(event);
        self.apply_recycled();
    }

    /// Counts the program at `path` (absolute, as its mappings name it) as own code even in
    /// a system directory: the executed programs are (their `exec` events add them).
    pub fn executable(&mut self, path: &str) {
        let before = self.own_code.clone();
        self.own_code.add_executable(path);
        if before.owner(path) != self.own_code.owner(path) {
            self.site_names.clear();
        }
    }

    /// The replay behind the samples (`memmon agent` snapshots it).
    pub fn replay(&self) -> &Replay {
        &self.replay
    }

    /// The replay, to cap or trim it ([`Replay::set_site_capacity`],
    /// [`Replay::forget_exited`]).
    pub fn replay_mut(&mut self) -> &mut Replay {
        &mut self.replay
    }

    /// Whether any process has been seen.
    pub fn is_empty(&self) -> bool {
        self.replay.live_pictures().next().is_none() && self.pending_snapshots.is_empty()
    }

    /// The sample of now; `seconds` of stream time passed since the previous one.
    pub fn sample(&mut self, seconds: f64) -> TopSample {
        self.apply_snapshots(None);
        let per_second = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        let mut site_pages: FxHashMap<SiteId, u64> = FxHashMap::default();
        let mut processes = Vec::new();
        let page = self.replay.page_size();
        let mut add = |pid: u32, picture: &Picture, activity: &mut Activity, exited: bool| {
            for (&site, &pages) in &picture.site_resident {
                *site_pages.entry(site).or_insert(0) += pages;
            }
            let resident = picture.kind_bytes(page);
            let mut faults_per_second = [0.0; 5];
            for (i, rate) in faults_per_second.iter_mut().enumerate() {
                *rate = per_second(activity.faults[i] - activity.faults_before[i]);
            }
            processes.push(ProcessRow {
                pid,
                command: activity.command.clone().unwrap_or_else(|| "?".to_owned()),
                resident,
                growth: resident.resident() as i64 - activity.resident_before as i64,
                faults_per_second,
                swap_ins: activity.swap_ins,
                exited,
            });
            activity.faults_before = activity.faults;
            activity.resident_before = resident.resident();
        };
        for ((_, pid), picture) in self.replay.live_pictures() {
            add(pid, picture, self.activity.entry(pid).or_default(), false);
        }
        // Those that exited since the previous sample, once, as they were then; then
        // forgotten (a new process of the same pid starts afresh).
        let exited: Vec<u32> = self
            .activity
            .iter()
            .filter(|(_, a)| a.exited.is_some())
            .map(|(&pid, _)| pid)
            .collect();
        for pid in exited {
            let Some(mut activity) = self.activity.remove(&pid) else {
                continue;
            };
            if let Some(picture) = activity.exited.take() {
                add(pid, &picture, &mut activity, true);
            }
        }
        let sites = self.site_rows(&site_pages);
        self.previous_sites = site_pages;
        let loss = self.replay.loss();
        let lost = loss.lost;
        let sample = TopSample {
            seconds,
            events: self.replay.events(),
            lost,
            lost_in_interval: lost - self.lost_before,
            dropped: loss.dropped,
            shed: loss.shed,
            processes,
            sites,
        };
        self.lost_before = lost;
        sample
    }

    fn site_rows(&mut self, now: &FxHashMap<SiteId, u64>) -> Vec<SiteGrowthRow> {
        let page = self.replay.page_size();
        let table = self.replay.sites();
        if self
            .symbols
            .as_ref()
            .is_none_or(|(_, n, _)| *n != table.created())
        {
            let symbols = Symbols::new(table, &self.symbol_options);
            let with_lines = objects_with_own_lines(&symbols);
            self.symbols = Some((symbols, table.created(), with_lines));
            self.site_names.clear();
        }
        let Some((symbols, _, with_lines)) = &self.symbols else {
            return Vec::new();
        };
        let previous = &self.previous_sites;
        let mut ids: Vec<SiteId> = now.keys().chain(previous.keys()).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        // Merged by name: sites that differ only past what the name shows are one row.
        let mut rows: HashMap<String, SiteGrowthRow> = HashMap::new();
        for id in ids {
            let pages = |map: &FxHashMap<SiteId, u64>| map.get(&id).copied().unwrap_or(0) as i64;
            let resident = pages(now);
            let (name, function) = self
                .site_names
                .entry(id)
                .or_insert_with(|| site_name(table, symbols, with_lines, &self.own_code, id));
            let row = rows.entry(name.clone()).or_insert_with(|| SiteGrowthRow {
                name: name.clone(),
                function: function.clone(),
                resident: 0,
                interval_growth: 0,
                start_growth: 0,
            });
            row.resident += page.of(resident as u64);
            row.interval_growth += page.of_signed(resident - pages(previous));
            // The start is the model's creation: nothing was resident in it then.
            row.start_growth += page.of_signed(resident);
        }
        let mut rows: Vec<SiteGrowthRow> = rows
            .into_values()
            .filter(|r| r.resident > 0 || r.interval_growth != 0 || r.start_growth != 0)
            .collect();
        rows.sort_by(|a, b| {
            (b.interval_growth, b.start_growth)
                .cmp(&(a.interval_growth, a.start_growth))
                .then_with(|| a.name.cmp(&b.name))
        });
        rows
    }
}

/// A site's row name and function ([`SiteGrowthRow`]): from its innermost function of own
/// code ([`OwnCode::split`], as the report's), the system part innermost of it summarised
/// after.
fn site_name(
    table: &SiteTable,
    symbols: &Symbols,
    with_lines: &BTreeSet<ObjectId>,
    own_code: &OwnCode,
    id: SiteId,
) -> (String, String) {
    let frames = table.frames(id);
    let infos: Vec<Vec<FrameInfo>> = frames
        .iter()
        .map(|frame| symbols.frame_infos(table, frame))
        .collect();
    let split = own_code.split(table, frames, &infos, with_lines, Naming::Short);
    if let Some(work) = split.work {
        // The runtime's work is one row, as in the report.
        let label = format!("[{}]", work.label());
        return (label.clone(), label);
    }
    let all: Vec<FrameInfo> = Naming::Short.frames(&infos.concat());
    let site = own_site_name(&all, &split.own, split.library.as_deref());
    let first = split.own.first().copied().unwrap_or(0);
    let function = name::function(all.get(first..).unwrap_or_default());
    (site, function.to_owned())
}

/// `+1.5 MiB`, `-4.0 KiB`, `0`.
pub fn signed_size(bytes: i64) -> String {
    match bytes {
        0 => "0".to_owned(),
        b if b > 0 => format!("+{}", size(b.unsigned_abs())),
        b => format!("-{}", size(b.unsigned_abs())),
    }
}

/// The header of the process table, and each row's cells, shared by the terminal view
/// and the plain table.
pub const PROCESS_COLUMNS: [&str; 11] = [
    "PID",
    "COMMAND",
    "ANON",
    "FILE",
    "SHMEM",
    "GROWTH",
    "1ST-TOUCH/s",
    "FILE/s",
    "COW/s",
    "OTHER/s",
    "SWAP-INS",
];

/// The cells of a process row, in [`PROCESS_COLUMNS`] order.
pub fn process_cells(row: &ProcessRow) -> [String; 11] {
    let rate = |class: FaultClass| format!("{:.0}", row.faults_per_second[class.index()]);
    [
        row.pid.to_string(),
        if row.exited {
            format!("{} [exited]", row.command)
        } else {
            row.command.clone()
        },
        size(row.resident.anon),
        size(row.resident.file),
        size(row.resident.shmem),
        signed_size(row.growth),
        rate(FaultClass::FirstTouch),
        rate(FaultClass::File),
        rate(FaultClass::CopyOnWrite),
        rate(FaultClass::Other),
        row.swap_ins.to_string(),
    ]
}

/// The header of the site table.
pub const SITE_COLUMNS: [&str; 4] = ["INTERVAL", "SINCE START", "RESIDENT", "SITE"];

/// The cells of a site row, in [`SITE_COLUMNS`] order.
pub fn site_cells(row: &SiteGrowthRow) -> [String; 4] {
    [
        signed_size(row.interval_growth),
        signed_size(row.start_growth),
        size(row.resident),
        row.name.clone(),
    ]
}

/// The one-line status: events, lost (never hidden), the interval, and the faults not
/// recorded and the stacks shed while any were.
pub fn status_line(sample: &TopSample) -> String {
    let mut line = format!(
        "events {}  lost {} ({} in the last {:.1} s)",
        sample.events, sample.lost, sample.lost_in_interval, sample.seconds
    );
    if sample.dropped > 0 {
        let _ = write!(line, "  faults not recorded {}", grouped(sample.dropped));
    }
    if sample.shed > 0 {
        let _ = write!(line, "  stacks shed {}", grouped(sample.shed));
    }
    line
}

/// The plain periodic table (stdout not a terminal): the status line, the processes,
/// the top `top` sites, then an empty line.
pub fn render_plain(sample: &TopSample, top: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "memmon top: {}", status_line(sample));
    let table = |out: &mut String, header: &[&str], rows: Vec<Vec<String>>, left: &[usize]| {
        let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: Vec<String>| {
            let mut text = String::new();
            let last = cells.len() - 1;
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i == last && left.contains(&i) {
                    text.push_str(cell);
                } else if left.contains(&i) {
                    let _ = write!(text, "{cell:<w$}  ");
                } else {
                    let _ = write!(text, "{cell:>w$}  ");
                }
            }
            text.trim_end().to_owned()
        };
        let _ = writeln!(
            out,
            "{}",
            line(header.iter().map(|h| h.to_string()).collect())
        );
        for row in rows {
            let _ = writeln!(out, "{}", line(row));
        }
    };
    let processes = sample
        .processes
        .iter()
        .map(|r| process_cells(r).to_vec())
        .collect();
    table(&mut out, &PROCESS_COLUMNS, processes, &[1]);
    let sites = sample
        .sites
        .iter()
        .take(top)
        .map(|r| site_cells(r).to_vec())
        .collect();
    table(&mut out, &SITE_COLUMNS, sites, &[3]);
    out.push('\n');
    out
}
