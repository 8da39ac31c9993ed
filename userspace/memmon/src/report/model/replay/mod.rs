//! Replays captures into address-space models: the core of `memmon report`. The events
//! themselves are applied in [`event`].

mod event;

use std::collections::HashMap;
use std::io::BufRead;

use serde::Serialize;

use crate::capture::file::{CaptureReader, ReadError, Record, Snapshot, SnapshotSource};
use crate::capture::resident::{PageRun, PageRunKind};
use crate::report::model::access::AccessLog;
use crate::report::model::class::Class;
use crate::report::model::class::PageKind;
use crate::report::model::loss::{Loss, LossCounter};
use crate::report::model::maps::{Counters, MapsLine};
use crate::report::model::moment::{after, since, Holdings, MomentState, TimeState, When};
use crate::report::model::peak::PeakTracker;
use crate::report::model::picture::{ClassId, KindBytes, PageSize, Picture};
use crate::report::model::sites::{
    ObjectId, SiteId, SiteRemap, SiteTable, SpaceId, LABEL_BEFORE, LABEL_EXEC,
    LABEL_RESIDENT_BEFORE,
};
use crate::report::model::space::{Ctx, Page, PageState, Space, Vma};
use crate::report::model::stats::StatsTable;
use crate::report::model::timeline::{Interval, Point, Slicing, TimelineBuilder};
use crate::report::model::ProcessKey;
use crate::stream::event::{StackEnd, Timestamp};
use rustc_hash::FxHashMap;

/// How many reasons a stack can end for ([`StackEnd::ALL`]).
pub const STACK_ENDS: usize = StackEnd::ALL.len();

/// Where a counter value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterSource {
    /// An `rss` line of the stream.
    RssLine,
    /// A `# snapshot status` block of the capture.
    StatusSnapshot,
}

/// One comparison of the model with the process's own counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// What moment: `end of 212 (exit)`, `mark "x" (212)`.
    pub label: String,
    /// When the counters were taken.
    pub time: Timestamp,
    /// The process.
    pub pid: u32,
    /// The model's totals.
    pub model: KindBytes,
    /// The kernel's counters.
    pub counters: Counters,
    /// Where the counters came from.
    pub source: CounterSource,
    /// The kernel's counters when the capture started (record -p), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_start: Option<Counters>,
    /// The pages the process held when the capture started were read (its `pages`
    /// snapshot) and are in the model: none of its pages predates what the model knows.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub start_pages: bool,
}

/// The state at a mark.
#[derive(Debug, Clone)]
pub struct MarkState {
    /// The mark's text.
    pub text: String,
    /// When.
    pub when: When,
    /// What the capture's live processes held.
    pub holdings: Holdings,
}

#[derive(Debug, Default)]
pub(crate) struct Process {
    space: Space,
    raw_sites: FxHashMap<Vec<u64>, SiteId>,
    raw_epoch: u64,
    /// The site table's drops when `raw_sites` was filled.
    raw_drops: u64,
    /// The totals when the address space was last released (exit/exec).
    released: Option<KindBytes>,
    exited: bool,
    /// The image before the first exec is memmon's own stub (`record -- CMD`), whose
    /// pages were faulted before watching began: its `rss at=exec` is not compared.
    stub: bool,
    /// Exec'd, and no fault of the new image's user code yet: the kernel's faults (user=0)
    /// still carry the old image's user stack.
    exec_loading: bool,
    /// The objects of memmon's own image (the stub's start snapshot), until the exec.
    stub_objects: Vec<ObjectId>,
    /// Its Python interpreter (`# python` header): the eval loop's address ranges.
    python_eval: Vec<[u64; 2]>,
    /// Its Python code objects (`# pycode` headers) by address: the latest one at each.
    python_codes: HashMap<u64, u32>,
    /// The pages it held when watching began are in the model (a `pages` snapshot).
    start_pages: bool,
}

impl Process {
    /// A process first seen, on a kernel of pages of `page` bytes.
    fn new(page: PageSize) -> Process {
        Process {
            space: Space::new(page),
            ..Process::default()
        }
    }
}

/// Options of the replay.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// How the timeline is cut.
    pub slicing: Slicing,
    /// Keep the state at this many nanoseconds after each capture's start (`--at TIME`).
    pub at_time: Option<u64>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            slicing: Slicing::Every(1_000_000_000),
            at_time: None,
        }
    }
}

/// The result of replaying captures.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The size of the kernel's pages, which the analysis's page counts are in.
    pub page: PageSize,
    /// Sites and objects.
    pub sites: SiteTable,
    /// Classes by id.
    pub classes: Vec<Class>,
    /// Cumulative per-site statistics.
    pub stats: StatsTable,
    /// The end: each process's last state before it released its memory (in the order
    /// the processes appeared), and their sum.
    pub end: Holdings,
    /// The end as a moment, on the peak's measure (the capture's live processes
    /// together): resident bytes at each capture's last moment, or when its processes
    /// all exited, just before the last exit; summed over captures. Never above the
    /// peak; below `end` when the processes' last states were not held at once.
    pub end_moment: u64,
    /// The peak of each capture: the moment its live processes together held the most
    /// resident memory (the first such), and what they held then, summed over captures.
    pub peak: MomentState,
    /// The state at `ReplayOptions::at_time`, when asked.
    pub at_time: Option<TimeState>,
    /// The state at each mark.
    pub marks: Vec<MarkState>,
    /// Model against counters.
    pub comparisons: Vec<Comparison>,
    /// The intervals of the timeline.
    pub timeline: Vec<Interval>,
    /// Resident bytes by group over time (at most a few thousand points).
    pub series: Vec<Point>,
    /// Events replayed.
    pub events: u64,
    /// Events the reader lost (`lost` lines).
    pub lost: u64,
    /// What the stream did not record: lost events, dropped faults and shed stacks.
    pub loss: Loss,
    /// Lines that did not parse (skipped).
    pub bad_lines: u64,
    /// Any fault or call carried `stack=`.
    pub has_stacks: bool,
    /// Events with a stack, by why it ends ([`crate::stream::event::StackEnd`] order: whole
    /// first).
    pub stack_ends: [u64; STACK_ENDS],
    /// Any fault carried `pages=`.
    pub has_pages: bool,
    /// First and last event times.
    pub span: Option<(Timestamp, Timestamp)>,
    /// Each capture's start (its `# start` header, else its first event), in the order
    /// replayed: the clock the moments count from (`When::since_start_ns`).
    pub starts: Vec<Timestamp>,
    /// Processes seen (pid of each).
    pub pids: Vec<u32>,
    /// The commands of the captures (their `# command` or `# pids` headers).
    pub commands: Vec<String>,
    /// The programs the processes executed (absolute paths of their exec lines): own code
    /// wherever they are installed.
    pub executables: Vec<String>,
    /// Access sampling: generations and sampled accesses.
    pub access: AccessLog,
    /// The cgroup of each process (`# cgroup PID PATH` headers; a forked child without
    /// one is in its parent's).
    pub cgroups: HashMap<ProcessKey, String>,
}

/// Replays one or more captures.
pub struct Replay {
    /// The size of the kernel's pages (the captures' `# page-size`, else 4 KiB).
    page: PageSize,
    /// The Python frames of the event being replayed (`pystack=`).
    python: Option<crate::stream::event::PythonStack>,
    sites: SiteTable,
    classes: Vec<Class>,
    class_ids: HashMap<Class, ClassId>,
    stats: StatsTable,
    timeline: TimelineBuilder,
    processes: FxHashMap<ProcessKey, Process>,
    /// Each process's current address space in the site table (frames outside files
    /// and the perf map belong to it): made on first use, a fork's linked to its
    /// parent's, a new one after exec.
    spaces: FxHashMap<ProcessKey, SpaceId>,
    order: Vec<ProcessKey>,
    finished: Holdings,
    /// `Analysis::end_moment` of the captures replayed.
    end_moment: u64,
    /// Live resident pages of the capture being replayed just before its latest exit.
    before_last_exit: u64,
    /// The peak of the capture being replayed.
    peak_tracker: PeakTracker,
    /// The peaks of the captures replayed.
    peak: MomentState,
    /// The capture's start (its `# start` header, else its first event) and last event.
    start: Option<Timestamp>,
    last: Option<Timestamp>,
    /// `ReplayOptions::at_time`, and the state then once taken in this capture.
    at_time: Option<u64>,
    time_taken: bool,
    time_state: TimeState,
    marks: Vec<MarkState>,
    comparisons: Vec<Comparison>,
    start_counters: HashMap<ProcessKey, Counters>,
    capture: usize,
    command_capture: bool,
    build_ids: HashMap<String, String>,
    events: u64,
    loss: LossCounter,
    bad_lines: u64,
    has_stacks: bool,
    stack_ends: [u64; STACK_ENDS],
    has_pages: bool,
    span: Option<(Timestamp, Timestamp)>,
    starts: Vec<Timestamp>,
    commands: Vec<String>,
    /// The programs executed, as `Analysis::executables`.
    pub(super) executables: Vec<String>,
    access: AccessLog,
    cgroups: HashMap<ProcessKey, String>,
    /// Frames at unknown addresses share one space ([`Replay::set_site_capacity`]).
    shared_addresses: bool,
    /// Recycles of dropped sites not yet taken ([`Replay::take_recycled`]).
    recycled: Vec<SiteRemap>,
    /// The site of the pages resident before memmon started ([`LABEL_RESIDENT_BEFORE`]),
    /// once a pages snapshot made it.
    pub(super) resident_before: Option<SiteId>,
}

impl Replay {
    /// An empty replay.
    pub fn new(options: ReplayOptions) -> Replay {
        Replay {
            page: PageSize::DEFAULT,
            sites: SiteTable::default(),
            classes: Vec::new(),
            class_ids: HashMap::new(),
            stats: StatsTable::default(),
            timeline: TimelineBuilder::new(options.slicing),
            processes: FxHashMap::default(),
            spaces: FxHashMap::default(),
            order: Vec::new(),
            finished: Holdings::default(),
            end_moment: 0,
            before_last_exit: 0,
            peak_tracker: PeakTracker::default(),
            peak: MomentState::default(),
            start: None,
            last: None,
            at_time: options.at_time,
            time_taken: false,
            time_state: TimeState {
                asked: options.at_time.unwrap_or(0),
                ..TimeState::default()
            },
            marks: Vec::new(),
            comparisons: Vec::new(),
            start_counters: HashMap::new(),
            capture: 0,
            command_capture: false,
            build_ids: HashMap::new(),
            events: 0,
            loss: LossCounter::default(),
            bad_lines: 0,
            has_stacks: false,
            stack_ends: [0; STACK_ENDS],
            has_pages: false,
            span: None,
            starts: Vec::new(),
            commands: Vec::new(),
            executables: Vec::new(),
            access: AccessLog::default(),
            cgroups: HashMap::new(),
            shared_addresses: false,
            recycled: Vec::new(),
            python: None,
            resident_before: None,
        }
    }

    /// Replays a whole capture; captures given one after the other are merged.
    pub fn capture(&mut self, input: impl BufRead) -> Result<(), ReadError> {
        let mut reader = CaptureReader::new(input);
        while let Some(record) = reader.next_record() {
            let record = match record {
                Ok((_, record)) => record,
                Err(ReadError::Parse { .. } | ReadError::BadSnapshotHeader { .. }) => {
                    self.bad_lines += 1;
                    continue;
                }
                Err(error) => return Err(error),
            };
            match record {
                Record::Event(event) => self.event(&event),
                Record::Snapshot(snapshot) => self.snapshot(&snapshot),
                Record::Header { key, value } => self.header(&key, &value),
            }
        }
        self.end_capture();
        self.capture += 1;
        self.command_capture = false;
        self.build_ids.clear();
        Ok(())
    }

    /// Counts in pages of `page` bytes from now on: a capture's `# page-size` (before its
    /// first event), or the running kernel's for a live model.
    pub fn set_page_size(&mut self, page: PageSize) {
        self.page = page;
        self.timeline.set_page_size(page);
    }

    /// The size of the pages it counts.
    pub fn page_size(&self) -> PageSize {
        self.page
    }

    /// Applies a capture header (`command`: memmon started the process, so the image
    /// before its first exec is memmon's own).
    pub fn header(&mut self, key: &str, value: &str) {
        if key == "command" {
            self.command_capture = true;
        }
        if key == "command" || key == "pids" {
            self.commands.push(value.to_owned());
        }
        if key == "start" {
            self.start = Timestamp::parse(value.trim());
        }
        if key == "page-size" {
            // Before the capture's first event (a recorder writes its headers first).
            if let Some(page) = PageSize::parse(value) {
                self.set_page_size(page);
            }
        }
        if key == "sample-pages" {
            self.access.budget = value.trim().parse().ok();
        }
        if key == "buildid" {
            if let Some((id, path)) = value.split_once(' ') {
                self.build_ids.insert(path.to_owned(), id.to_owned());
            }
        }
        if key == "symbol" {
            self.recorded_symbol(value);
        }
        if key == "python" {
            if let Some((pid, interpreter)) = crate::report::python::parse_python_header(value) {
                let key = (self.capture, pid);
                self.register(key);
                let process = self
                    .processes
                    .entry(key)
                    .or_insert_with(|| Process::new(self.page));
                process.python_eval = interpreter.eval;
                process.raw_sites.clear();
            }
        }
        if key == "pycode" {
            if let Some((pid, addr, code)) = crate::report::python::parse_code_header(value) {
                let id = self.sites.intern_python_code(code);
                let key = (self.capture, pid);
                self.register(key);
                let process = self
                    .processes
                    .entry(key)
                    .or_insert_with(|| Process::new(self.page));
                process.python_codes.insert(addr, id);
                process.raw_sites.clear();
            }
        }
        if key == crate::capture::cgroup::CGROUP_HEADER {
            if let Some((pid, path)) = crate::capture::cgroup::parse_cgroup_header(value) {
                self.cgroups.insert((self.capture, pid), path.to_owned());
            }
        }
    }

    /// A `# symbol {"object":PATH,"offset":N,"ret":BOOL,"frames":[...]}` header
    /// (`record --symbolize`); a bad one is ignored.
    fn recorded_symbol(&mut self, value: &str) {
        let Ok(json) = serde_json::from_str::<serde_json::Value>(value) else {
            return;
        };
        let (Some(path), Some(offset), Some(ret), Some(frames)) = (
            json["object"].as_str(),
            json["offset"].as_u64(),
            json["ret"].as_bool(),
            json.get("frames").filter(|f| f.is_array()),
        ) else {
            return;
        };
        let frames = frames.to_string();
        let object = self.object(path);
        self.sites.add_recorded(
            crate::report::model::sites::Frame::Code {
                object,
                offset,
                ret,
            },
            frames,
        );
    }

    fn object(&mut self, path: &str) -> crate::report::model::sites::ObjectId {
        let build_id = self.build_ids.get(path).cloned();
        self.sites.object_with_build_id(path, build_id.as_deref())
    }

    fn class(&mut self, class: Class) -> ClassId {
        if let Some(&id) = self.class_ids.get(&class) {
            return id;
        }
        let id = ClassId::try_from(self.classes.len()).unwrap_or(ClassId::MAX);
        // Groups of the RSS series: heap, anonymous mmap, stacks, file, shmem.
        let anon = match class {
            Class::Heap => 0,
            Class::Stack => 2,
            _ => 1,
        };
        self.timeline.add_class([anon, 3, 4]);
        self.classes.push(class.clone());
        self.class_ids.insert(class, id);
        id
    }

    /// Applies a snapshot block (maps fill the model's gaps; status gives counters).
    pub fn snapshot(&mut self, snapshot: &Snapshot) {
        let key = (self.capture, snapshot.pid);
        match snapshot.source {
            SnapshotSource::Maps => self.maps_snapshot(key, snapshot),
            SnapshotSource::PerfMap => {
                // `/tmp/perf-PID.map` names the code of that process only.
                let space = self.space_of(key);
                self.sites
                    .add_perf_map(space, snapshot.lines.iter().map(String::as_str));
            }
            SnapshotSource::Status => self.status_snapshot(key, snapshot),
            SnapshotSource::Pages => self.pages_snapshot(key, snapshot),
        }
        self.recycle_dropped_sites();
    }

    /// A capped table's dropped sites ([`Replay::set_site_capacity`]): everything that
    /// names them now names the one [`LABEL_DROPPED`](crate::report::model::sites::LABEL_DROPPED) site, and their ids are freed for
    /// new sites. Without this a replay that runs for ever would keep every dropped id's
    /// statistics (about 150 bytes each). The remap is kept for
    /// [`Replay::take_recycled`].
    fn recycle_dropped_sites(&mut self) {
        let Some(remap) = self.sites.take_dropped() else {
            return;
        };
        self.stats.remap_sites(&remap);
        self.timeline.remap_sites(&remap);
        for process in self.processes.values_mut() {
            process.space.remap_sites(&remap);
            process.raw_sites.clear();
        }
        self.finished.remap_sites(&remap);
        self.peak_tracker.remap_sites(&remap);
        self.peak.holdings.remap_sites(&remap);
        self.time_state.state.holdings.remap_sites(&remap);
        for mark in &mut self.marks {
            mark.holdings.remap_sites(&remap);
        }
        self.access.remap_sites(&remap);
        self.sites.free(&remap);
        self.recycled.push(remap);
    }

    /// The recycles of dropped sites since the last call, in order: a holder of site ids
    /// outside the replay applies them before the next event (when the freed ids may
    /// name new sites). Only a capped replay recycles; its holder must call this after
    /// every event and snapshot.
    pub fn take_recycled(&mut self) -> Vec<SiteRemap> {
        std::mem::take(&mut self.recycled)
    }

    /// A maps snapshot: its regions fill the model's gaps (start and exec snapshots; the
    /// end's add nothing).
    fn maps_snapshot(&mut self, key: ProcessKey, snapshot: &Snapshot) {
        if snapshot.reason == "end" || snapshot.lines.is_empty() {
            return;
        }
        let label = if snapshot.reason == "start" {
            LABEL_BEFORE
        } else {
            LABEL_EXEC
        };
        let site = self.sites.label(label);
        let mut regions = Vec::new();
        for line in &snapshot.lines {
            let Some(maps) = MapsLine::parse(line) else {
                continue;
            };
            let class = Class::from_maps(&maps.path, maps.shared, maps.inode);
            // Files' code, and the kernel's code mappings, which ASLR places anywhere: as
            // objects, their frames are offsets that match across runs.
            let file = maps.path.starts_with('/') && !class.is_shmem();
            let kernel_code = matches!(maps.path.as_str(), "[vdso]" | "[vsyscall]");
            let object = (file || kernel_code).then(|| self.object(&maps.path));
            let shmem = class.is_shmem();
            let heap = (class == Class::Heap).then_some((maps.start, maps.end));
            let class = self.class(class);
            regions.push((
                maps.start,
                Vma {
                    end: maps.end,
                    class,
                    site,
                    offset: maps.offset,
                    object,
                    shared: maps.shared,
                    shmem,
                    exec: maps.exec,
                },
                heap,
            ));
        }
        let new = !self.processes.contains_key(&key);
        let process = self
            .processes
            .entry(key)
            .or_insert_with(|| Process::new(self.page));
        if new && snapshot.reason == "start" && self.command_capture {
            process.stub = true;
        }
        if !self.order.contains(&key) {
            self.order.push(key);
        }
        let mut ctx = Ctx {
            stats: &mut self.stats,
            timeline: &mut self.timeline,
            peak: &mut self.peak_tracker,
            process: key,
        };
        for (start, vma, heap) in regions {
            if process.stub {
                process.stub_objects.extend(vma.object);
            }
            process.space.fill(&mut ctx, start, vma);
            if let Some((heap_start, heap_end)) = heap {
                if process.space.brk_start.is_none() {
                    process.space.brk_start = Some(heap_start);
                    process.space.brk = Some(heap_end);
                }
            }
        }
    }

    /// A pages snapshot at the start (`record -p`, a process found running): each page
    /// resident or swapped then becomes one of the site [`LABEL_RESIDENT_BEFORE`], in its
    /// region's class, so that later unmaps, frees, swap-outs and the exit take it away as
    /// any other. A page the model already has as resident (a fault applied before the
    /// snapshot's place in the stream) stays its fault's; a page the model has in another
    /// state takes the snapshot's, keeping its site. Apply it after the maps snapshot of the
    /// same read, which gives the regions.
    fn pages_snapshot(&mut self, key: ProcessKey, snapshot: &Snapshot) {
        if snapshot.reason != "start" || snapshot.lines.is_empty() {
            return;
        }
        let site = self.sites.label(LABEL_RESIDENT_BEFORE);
        self.resident_before = Some(site);
        let unknown = self.class(Class::Unknown);
        self.register(key);
        let process = self
            .processes
            .entry(key)
            .or_insert_with(|| Process::new(self.page));
        process.start_pages = true;
        let mut ctx = Ctx {
            stats: &mut self.stats,
            timeline: &mut self.timeline,
            peak: &mut self.peak_tracker,
            process: key,
        };
        let space = &mut process.space;
        for run in snapshot
            .lines
            .iter()
            .filter_map(|line| PageRun::parse(line))
        {
            let mut addr = run.start;
            while addr < run.end {
                // The run's part in one region (or in none: a region mapped after the maps
                // were read).
                let (class, shmem, end) = match space.find(addr) {
                    Some((_, vma)) => (vma.class, vma.shmem, vma.end.min(run.end)),
                    None => (
                        unknown,
                        false,
                        space
                            .regions()
                            .map(|(start, _)| start)
                            .find(|&start| start > addr)
                            .unwrap_or(run.end)
                            .min(run.end),
                    ),
                };
                if run.kind == PageRunKind::Shmem && !shmem {
                    // A file on tmpfs: the kernel counts its pages as RssShmem, and so do
                    // the region's later faults.
                    if let Some((start, vma)) = space.find(addr) {
                        if vma.object.is_some() {
                            space.mark_shmem(start);
                        }
                    }
                }
                let (kind, state) = match run.kind {
                    PageRunKind::Anon => (PageKind::Anon, PageState::Resident),
                    PageRunKind::File => (PageKind::File, PageState::Resident),
                    PageRunKind::Shmem => (PageKind::Shmem, PageState::Resident),
                    PageRunKind::Zero => (PageKind::Anon, PageState::Zero),
                    PageRunKind::Swap if shmem => (PageKind::Shmem, PageState::Swapped),
                    PageRunKind::Swap => (PageKind::Anon, PageState::Swapped),
                };
                for vpn in self.page.number(addr)..self.page.number(end) {
                    let known = space.page(vpn).copied();
                    if known.is_some_and(|page| {
                        page.state == PageState::Resident && state == PageState::Resident
                    }) {
                        continue;
                    }
                    let page = Page {
                        site: known.map_or(site, |page| page.site),
                        class,
                        kind,
                        state,
                    };
                    space.set_page(&mut ctx, vpn, page);
                }
                addr = end;
            }
        }
        // What the process held then is a moment: the peak when it only frees later.
        self.peak_tracker.settle(snapshot.time);
    }

    /// A status snapshot: the process's counters at the start, a mark or the end.
    fn status_snapshot(&mut self, key: ProcessKey, snapshot: &Snapshot) {
        let Some(counters) = Counters::from_status(snapshot.lines.iter().map(String::as_str))
        else {
            return;
        };
        match snapshot.reason.as_str() {
            "start" => {
                self.start_counters.insert(key, counters);
            }
            "mark" => self.mark_counters(key, counters, CounterSource::StatusSnapshot),
            "end" => {
                let model = self.model_of(key);
                self.compare(
                    format!("end of {}", snapshot.pid),
                    snapshot.time,
                    key,
                    model,
                    counters,
                    CounterSource::StatusSnapshot,
                );
            }
            _ => {}
        }
    }

    fn model_of(&self, key: ProcessKey) -> KindBytes {
        match self.processes.get(&key) {
            Some(process) if process.exited => process.released.unwrap_or_default(),
            Some(process) => process.space.picture.kind_bytes(self.page),
            None => KindBytes::default(),
        }
    }

    fn compare(
        &mut self,
        label: String,
        time: Timestamp,
        key: ProcessKey,
        model: KindBytes,
        counters: Counters,
        source: CounterSource,
    ) {
        let at_start = self.start_counters.get(&key).copied();
        let start_pages = self
            .processes
            .get(&key)
            .is_some_and(|process| process.start_pages);
        self.comparisons.push(Comparison {
            label,
            time,
            pid: key.1,
            model,
            counters,
            source,
            at_start,
            start_pages,
        });
    }

    /// Counters of `key` after the last mark.
    fn mark_counters(&mut self, key: ProcessKey, counters: Counters, source: CounterSource) {
        let Some(mark) = self.marks.last() else {
            return;
        };
        let label = format!("mark {:?}", mark.text);
        let time = mark.when.time;
        let model = mark
            .holdings
            .process(key)
            .map(|picture| picture.kind_bytes(self.page))
            .unwrap_or_default();
        // An rss line wins over the status snapshot of the same mark.
        if let Some(existing) = self
            .comparisons
            .iter_mut()
            .find(|c| c.label == label && c.pid == key.1)
        {
            if source == CounterSource::RssLine {
                existing.counters = counters;
                existing.source = source;
            }
            return;
        }
        self.compare(label, time, key, model, counters, source);
    }

    /// The id of the process's current address space, made on first use.
    fn space_of(&mut self, key: ProcessKey) -> SpaceId {
        if self.shared_addresses {
            // One space for all ([`Replay::set_site_capacity`]): none made per process.
            return SpaceId::MAX;
        }
        *self
            .spaces
            .entry(key)
            .or_insert_with(|| self.sites.new_space(None))
    }

    /// The processes not exited yet (of every capture), with what they have resident
    /// and mapped now: what a live view (`memmon top`) samples between events.
    pub fn live_pictures(&self) -> impl Iterator<Item = (ProcessKey, &Picture)> {
        self.order.iter().filter_map(|key| {
            let process = self.processes.get(key)?;
            (!process.exited).then_some((*key, &process.space.picture))
        })
    }

    /// The sites and objects interned so far.
    pub fn sites(&self) -> &SiteTable {
        &self.sites
    }

    /// Caps the site table ([`SiteTable::set_capacity`]): a replay that runs for ever
    /// (`memmon agent`) keeps at most `capacity` stacks, the least recently used dropped.
    /// It also puts the frames at addresses outside any known file of every process in one
    /// address space ([`SpaceId::MAX`], which has no perf map): otherwise each short-lived
    /// process whose maps were not read in time made stacks of its own, which a dropped
    /// site's id still counts (about 8 KB a process in the agent's churn test); and no
    /// space is made per process (one entry each, for ever: its perf map, which a capped
    /// replay does not read).
    pub fn set_site_capacity(&mut self, capacity: usize) {
        self.sites.set_capacity(capacity);
        self.shared_addresses = true;
    }

    /// The mapping classes, by [`ClassId`].
    pub fn classes(&self) -> &[Class] {
        &self.classes
    }

    /// The cumulative per-site statistics (faults by class, pages in).
    pub fn stats(&self) -> &StatsTable {
        &self.stats
    }

    /// Processes the replay holds (live and exited ones not forgotten).
    pub fn process_count(&self) -> usize {
        self.processes.len()
    }

    /// Forgets the processes that exited, for a replay that runs for ever (`memmon
    /// agent`): their end states, the counters compared and the marks go, and with them
    /// what the end, the peak, the comparisons and the marks of [`Replay::finish`]
    /// would show of them. The live processes and every site stay.
    pub fn forget_exited(&mut self) {
        let gone: Vec<ProcessKey> = self
            .processes
            .iter()
            .filter(|(_, process)| process.exited)
            .map(|(key, _)| *key)
            .collect();
        for key in &gone {
            self.processes.remove(key);
            self.spaces.remove(key);
            self.cgroups.remove(key);
            self.start_counters.remove(key);
            self.peak_tracker.forget(*key);
        }
        let processes = &self.processes;
        self.order.retain(|key| processes.contains_key(key));
        self.finished = Holdings::default();
        self.comparisons.clear();
        self.marks.clear();
    }

    /// Events replayed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events lost so far (`lost` lines).
    pub fn lost(&self) -> u64 {
        self.loss.lost_events()
    }

    /// What the stream did not record so far: lost events, dropped faults and shed
    /// stacks, by process.
    pub fn loss(&self) -> Loss {
        self.loss.loss()
    }

    /// Ends a capture fed through [`Replay::event`] and [`Replay::snapshot`]: the
    /// processes still alive count with their current state.
    pub fn end_live(&mut self) {
        self.end_capture();
        self.capture += 1;
    }

    /// What the current capture's live processes hold now, in the order they appeared.
    fn live_holdings(&self) -> Holdings {
        let mut holdings = Holdings::default();
        for key in self.order.iter().filter(|k| k.0 == self.capture) {
            match self.processes.get(key) {
                Some(process) if !process.exited => {
                    holdings.add(*key, process.space.picture.clone(), self.page);
                }
                _ => {}
            }
        }
        holdings
    }

    /// Before an event at `time`: the first past `ReplayOptions::at_time` takes the state
    /// then (what the events before it made).
    fn before_event(&mut self, time: Timestamp) {
        let start = *self.start.get_or_insert(time);
        self.last = Some(self.last.map_or(time, |last| last.max(time)));
        match self.at_time {
            Some(at_time) if !self.time_taken && since(start, time) > at_time => {
                self.take_time_state(start, at_time);
            }
            _ => {}
        }
    }

    fn take_time_state(&mut self, start: Timestamp, at_time: u64) {
        self.time_taken = true;
        let holdings = self.live_holdings();
        let resident = holdings.total.kind_bytes(self.page).resident();
        let when = When::new(self.capture, after(start, at_time), start, resident);
        let state = &mut self.time_state.state;
        state.when.push(when);
        state.holdings.extend(holdings, self.page);
    }

    fn end_capture(&mut self) {
        let capture = self.capture;
        let keys: Vec<ProcessKey> = self
            .order
            .iter()
            .copied()
            .filter(|k| k.0 == capture)
            .collect();
        for &key in &keys {
            if let Some(process) = self.processes.get(&key) {
                if !process.exited {
                    self.finished
                        .add(key, process.space.picture.clone(), self.page);
                }
            }
        }
        // The end as a moment: the live processes now, or if none is, just before the last
        // exit.
        let live = keys.iter().any(|key| {
            self.processes
                .get(key)
                .is_some_and(|process| !process.exited)
        });
        let pages = if live {
            self.peak_tracker.live_pages()
        } else {
            self.before_last_exit
        };
        self.end_moment = self.end_moment.saturating_add(self.page.of(pages));
        self.before_last_exit = 0;
        self.peak_tracker
            .finish(capture, self.start, &keys, &mut self.peak, self.page);
        if let (Some(start), Some(last), Some(at_time)) = (self.start, self.last, self.at_time) {
            self.time_state.longest = self.time_state.longest.max(since(start, last));
            if !self.time_taken {
                self.take_time_state(start, at_time);
            }
        }
        if let Some(start) = self.start {
            self.starts.push(start);
        }
        self.start = None;
        self.last = None;
        self.time_taken = false;
    }

    /// The analysis of everything replayed.
    pub fn finish(self) -> Analysis {
        let (timeline, series) = self.timeline.finish();
        Analysis {
            page: self.page,
            timeline,
            series,
            sites: self.sites,
            classes: self.classes,
            stats: self.stats,
            end: self.finished,
            end_moment: self.end_moment,
            peak: self.peak,
            at_time: self.at_time.map(|_| self.time_state),
            marks: self.marks,
            comparisons: self.comparisons,
            events: self.events,
            lost: self.loss.lost_events(),
            loss: self.loss.loss(),
            bad_lines: self.bad_lines,
            has_stacks: self.has_stacks,
            stack_ends: self.stack_ends,
            has_pages: self.has_pages,
            span: self.span,
            starts: self.starts,
            pids: {
                let mut pids: Vec<u32> = self.order.iter().map(|k| k.1).collect();
                pids.dedup();
                pids
            },
            commands: self.commands,
            executables: self.executables,
            access: self.access,
            cgroups: self.cgroups,
        }
    }
}
