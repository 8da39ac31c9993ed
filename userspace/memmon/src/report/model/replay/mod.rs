//! Replays captures into address-space models: the core of `memmon report`.

use std::collections::HashMap;
use std::io::BufRead;

use serde::Serialize;

use crate::capture::file::{CaptureReader, ReadError, Record, Snapshot, SnapshotSource};
use crate::report::model::access::AccessLog;
use crate::report::model::class::{Class, PageKind};
use crate::report::model::maps::{Counters, MapsLine};
use crate::report::model::picture::{ClassId, KindBytes, Picture, PAGE};
use crate::report::model::sites::{
    Frame, SiteId, SiteTable, SpaceId, LABEL_BEFORE, LABEL_EXEC, LABEL_KERNEL, LABEL_NO_STACK,
};
use crate::report::model::space::{Ctx, Leave, Page, PageState, Space, Vma};
use crate::report::model::stats::{FaultClass, StatsTable};
use crate::report::model::timeline::{Interval, Point, Slicing, TimelineBuilder};
use crate::report::model::ProcessKey;
use crate::stream::event::{Access, Event, EventKind, FaultType, RssAt, Stack, Timestamp};
use crate::stream::flags::{MmapFlags, MremapFlags};
use rustc_hash::FxHashMap;

/// The most pages one fault can map (a PUD-level mapping: 1 GiB).
const MAX_PAGES_PER_FAULT: u64 = 262_144;

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
}

/// The state at a mark.
#[derive(Debug, Clone)]
pub struct MarkState {
    /// The mark's text.
    pub text: String,
    /// When.
    pub time: Timestamp,
    /// All live processes together.
    pub picture: Picture,
    /// Each live process's totals.
    pub per_process: HashMap<ProcessKey, KindBytes>,
}

#[derive(Debug, Default)]
struct Process {
    space: Space,
    raw_sites: FxHashMap<Vec<u64>, SiteId>,
    raw_epoch: u64,
    /// The totals when the address space was last released (exit/exec).
    released: Option<KindBytes>,
    exited: bool,
    /// The image before the first exec is memmon's own stub (`record -- CMD`), whose
    /// pages were faulted before watching began: its `rss at=exec` is not compared.
    stub: bool,
}

/// Options of the replay.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// How the timeline is cut.
    pub slicing: Slicing,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            slicing: Slicing::Every(1_000_000_000),
        }
    }
}

/// The result of replaying captures.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Sites and objects.
    pub sites: SiteTable,
    /// Classes by id.
    pub classes: Vec<Class>,
    /// Cumulative per-site statistics.
    pub stats: StatsTable,
    /// The end: each process's last state before it released its memory, summed.
    pub end: Picture,
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
    /// Lines that did not parse (skipped).
    pub bad_lines: u64,
    /// Any fault or call carried `stack=`.
    pub has_stacks: bool,
    /// Events with a stack, by why it ends ([`crate::stream::event::StackEnd`] order: whole
    /// first).
    pub stack_ends: [u64; 5],
    /// Any fault carried `pages=`.
    pub has_pages: bool,
    /// First and last event times.
    pub span: Option<(Timestamp, Timestamp)>,
    /// Processes seen (pid of each).
    pub pids: Vec<u32>,
    /// Paths of mapped files by object id, as the capture names them.
    pub commands: Vec<String>,
    /// Access sampling: generations and sampled accesses.
    pub access: AccessLog,
    /// Each process's last state before it released its memory (what [`Analysis::end`]
    /// sums), in the order the processes appeared: for `--group-by`.
    pub process_end: Vec<(ProcessKey, Picture)>,
    /// The cgroup of each process (`# cgroup PID PATH` headers; a forked child without
    /// one is in its parent's).
    pub cgroups: HashMap<ProcessKey, String>,
}

/// Replays one or more captures.
pub struct Replay {
    sites: SiteTable,
    classes: Vec<Class>,
    class_ids: HashMap<Class, ClassId>,
    stats: StatsTable,
    timeline: TimelineBuilder,
    processes: HashMap<ProcessKey, Process>,
    /// Each process's current address space in the site table (frames outside files
    /// and the perf map belong to it): made on first use, a fork's linked to its
    /// parent's, a new one after exec.
    spaces: HashMap<ProcessKey, SpaceId>,
    order: Vec<ProcessKey>,
    finished: Picture,
    marks: Vec<MarkState>,
    comparisons: Vec<Comparison>,
    start_counters: HashMap<ProcessKey, Counters>,
    capture: usize,
    command_capture: bool,
    build_ids: HashMap<String, String>,
    events: u64,
    lost: u64,
    bad_lines: u64,
    has_stacks: bool,
    stack_ends: [u64; 5],
    has_pages: bool,
    span: Option<(Timestamp, Timestamp)>,
    commands: Vec<String>,
    access: AccessLog,
    process_end: Vec<(ProcessKey, Picture)>,
    cgroups: HashMap<ProcessKey, String>,
}

fn page_up(addr: u64) -> u64 {
    addr.saturating_add(PAGE - 1) & !(PAGE - 1)
}

impl Replay {
    /// An empty replay.
    pub fn new(options: ReplayOptions) -> Replay {
        Replay {
            sites: SiteTable::default(),
            classes: Vec::new(),
            class_ids: HashMap::new(),
            stats: StatsTable::default(),
            timeline: TimelineBuilder::new(options.slicing),
            processes: HashMap::new(),
            spaces: HashMap::new(),
            order: Vec::new(),
            finished: Picture::default(),
            marks: Vec::new(),
            comparisons: Vec::new(),
            start_counters: HashMap::new(),
            capture: 0,
            command_capture: false,
            build_ids: HashMap::new(),
            events: 0,
            lost: 0,
            bad_lines: 0,
            has_stacks: false,
            stack_ends: [0; 5],
            has_pages: false,
            span: None,
            commands: Vec::new(),
            access: AccessLog::default(),
            process_end: Vec::new(),
            cgroups: HashMap::new(),
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

    /// Applies a capture header (`command`: memmon started the process, so the image
    /// before its first exec is memmon's own).
    pub fn header(&mut self, key: &str, value: &str) {
        if key == "command" {
            self.command_capture = true;
        }
        if key == "command" || key == "pids" {
            self.commands.push(value.to_owned());
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
            SnapshotSource::Maps => {
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
                    let object = (maps.path.starts_with('/') && !class.is_shmem())
                        .then(|| self.object(&maps.path));
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
                let (stats, timeline) = (&mut self.stats, &mut self.timeline);
                let new = !self.processes.contains_key(&key);
                let process = self.processes.entry(key).or_default();
                if new && snapshot.reason == "start" && self.command_capture {
                    process.stub = true;
                }
                if !self.order.contains(&key) {
                    self.order.push(key);
                }
                let mut ctx = Ctx { stats, timeline };
                for (start, vma, heap) in regions {
                    process.space.fill(&mut ctx, start, vma);
                    if let Some((heap_start, heap_end)) = heap {
                        if process.space.brk_start.is_none() {
                            process.space.brk_start = Some(heap_start);
                            process.space.brk = Some(heap_end);
                        }
                    }
                }
            }
            SnapshotSource::PerfMap => {
                // `/tmp/perf-PID.map` names the code of that process only.
                let space = self.space_of(key);
                self.sites
                    .add_perf_map(space, snapshot.lines.iter().map(String::as_str));
            }
            SnapshotSource::Status => {
                let Some(counters) =
                    Counters::from_status(snapshot.lines.iter().map(String::as_str))
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
        }
    }

    fn model_of(&self, key: ProcessKey) -> KindBytes {
        match self.processes.get(&key) {
            Some(process) if process.exited => process.released.unwrap_or_default(),
            Some(process) => process.space.picture.kind_bytes(),
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
        self.comparisons.push(Comparison {
            label,
            time,
            pid: key.1,
            model,
            counters,
            source,
            at_start,
        });
    }

    /// Counters of `key` after the last mark.
    fn mark_counters(&mut self, key: ProcessKey, counters: Counters, source: CounterSource) {
        let Some(mark) = self.marks.last() else {
            return;
        };
        let label = format!("mark {:?}", mark.text);
        let time = mark.time;
        let model = mark.per_process.get(&key).copied().unwrap_or_default();
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

    /// Applies one event.
    pub fn event(&mut self, event: &Event) {
        self.events += 1;
        self.timeline.advance(event.time);
        self.span = Some(match self.span {
            None => (event.time, event.time),
            Some((first, last)) => (first.min(event.time), last.max(event.time)),
        });
        if let Some(stack) = &event.stack {
            self.has_stacks = true;
            self.stack_ends[stack.1 as usize] += 1;
        }
        let key = (self.capture, event.pid);
        match &event.kind {
            EventKind::Lost { count } => self.lost += count,
            EventKind::Fault {
                fault_type,
                access,
                addr,
                ip,
                user,
                huge,
                pages,
                gen,
                ..
            } => {
                if *pages != 1 {
                    self.has_pages = true;
                }
                // At most a PUD (1 GiB) per fault, whatever the line says.
                // pages=0: the fault added nothing to RSS (a lost race, the zero page). A
                // write-protect fault always concerns its page: a copy-on-write replaces
                // it (pages=0, RSS unchanged) and may change its kind (a private file page
                // becomes anonymous), so it is applied to that page.
                let count = if *pages == 0 && *fault_type != FaultType::Wp {
                    0
                } else if *pages > 1 {
                    (*pages).min(MAX_PAGES_PER_FAULT)
                } else if *huge {
                    512
                } else {
                    1
                };
                let ip = if *user { *ip } else { 0 };
                let site = self.site(key, ip, event.stack.as_ref(), LABEL_KERNEL);
                self.fault(key, *fault_type, *access, *addr, count, site, event.time);
                if *fault_type == FaultType::Access {
                    // A sampled first access: nothing enters RSS (count is ignored above).
                    let (first, pages) = if *huge {
                        ((addr / PAGE) & !511, 512)
                    } else {
                        (addr / PAGE, 1)
                    };
                    self.access.touch(key, *gen, first, pages, site);
                }
            }
            EventKind::Gen { n, armed } => {
                let stack = self.class_ids.get(&Class::Stack).copied();
                let process = self.processes.entry(key).or_default();
                let resident = process
                    .space
                    .pages_in(0, u64::MAX)
                    .filter(|(_, page)| {
                        page.state == PageState::Resident && Some(page.class) != stack
                    })
                    .map(|(vpn, _)| vpn);
                self.access
                    .generation(key, *n, *armed, event.time, resident);
            }
            EventKind::Mmap {
                len,
                prot,
                flags,
                off,
                ret: Ok(start),
                file,
                ..
            } => {
                let site = self.site(key, 0, event.stack.as_ref(), LABEL_NO_STACK);
                let shared = flags.intersects(MmapFlags::SHARED);
                let path = file.as_ref().map(|f| f.to_string_lossy());
                let class = match &path {
                    None if shared => Class::Shmem("[anon shared]".to_owned()),
                    None if flags.intersects(MmapFlags::STACK | MmapFlags::GROWSDOWN) => {
                        Class::Stack
                    }
                    None => Class::AnonMmap,
                    Some(path) => Class::from_maps(path, shared, 1),
                };
                let object = match &path {
                    Some(path) if !class.is_shmem() => Some(self.object(path)),
                    _ => None,
                };
                let shmem = class.is_shmem();
                let class = self.class(class);
                let vma = Vma {
                    end: start.saturating_add(*len),
                    class,
                    site,
                    offset: u64::try_from(*off).unwrap_or(0),
                    object,
                    shared,
                    shmem,
                    exec: prot.contains(crate::stream::flags::Prot::EXEC),
                };
                self.map(key, *start, vma);
            }
            EventKind::Munmap {
                addr,
                len,
                ret: Ok(_),
            } => self.with_space(key, |space, ctx| {
                space.unmap(ctx, *addr, addr.saturating_add(*len), Leave::Freed)
            }),
            EventKind::Mremap {
                old,
                old_len,
                new_len,
                flags,
                ret: Ok(new),
                ..
            } => {
                let keep = flags.contains(MremapFlags::DONTUNMAP);
                self.with_space(key, |space, ctx| {
                    space.remap(ctx, *old, *old_len, *new, *new_len, keep)
                });
            }
            EventKind::Brk { ret, .. } => self.brk(key, *ret, event.stack.as_ref()),
            EventKind::Madvise {
                addr,
                len,
                advice,
                ret: Ok(_),
            } => {
                let leave = match advice.0 {
                    4 | 8 | 9 => Leave::Freed,
                    21 => Leave::PagedOut,
                    _ => return,
                };
                self.with_space(key, |space, ctx| {
                    space.drop_pages(ctx, *addr, addr.saturating_add(*len), leave)
                });
            }
            EventKind::Exec { .. } => {
                self.access.exec(key);
                // A new image: its generated code is not the old one's.
                self.spaces.remove(&key);
                self.release(key, RssAt::Exec);
                if let Some(process) = self.processes.get_mut(&key) {
                    process.exited = false;
                }
            }
            EventKind::Exit { .. } => {
                if let Some(process) = self.processes.get(&key) {
                    let picture = process.space.picture.clone();
                    self.finished.merge(&picture);
                    self.process_end.push((key, picture));
                }
                self.release(key, RssAt::Exit);
            }
            EventKind::Fork {
                child,
                watched: true,
            } => {
                let child_key = (self.capture, *child);
                if self.processes.contains_key(&key) && !self.spaces.contains_key(&child_key) {
                    let parent = self.space_of(key);
                    let space = self.sites.new_space(Some(parent));
                    self.spaces.insert(child_key, space);
                }
                if let Some(parent) = self.processes.get(&key) {
                    let space = parent.space.clone();
                    let process = self.processes.entry(child_key).or_default();
                    if process.space.is_empty() {
                        process.space = space;
                    }
                    if !self.order.contains(&child_key) {
                        self.order.push(child_key);
                    }
                    self.access.fork(key, child_key);
                    if let Some(cgroup) = self.cgroups.get(&key).cloned() {
                        self.cgroups.entry(child_key).or_insert(cgroup);
                    }
                }
            }
            EventKind::Mark { text } => {
                let text = text.to_string_lossy();
                self.timeline.mark(event.time, &text);
                let mut picture = Picture::default();
                let mut per_process = HashMap::new();
                for (&k, process) in &self.processes {
                    if k.0 == self.capture && !process.exited {
                        picture.merge(&process.space.picture);
                        per_process.insert(k, process.space.picture.kind_bytes());
                    }
                }
                self.marks.push(MarkState {
                    text,
                    time: event.time,
                    picture,
                    per_process,
                });
            }
            EventKind::Rss {
                anon,
                file,
                shmem,
                swap,
                at,
                ..
            } => {
                let counters = Counters {
                    anon: *anon,
                    file: *file,
                    shmem: *shmem,
                    swap: *swap,
                };
                match at {
                    RssAt::Mark => self.mark_counters(key, counters, CounterSource::RssLine),
                    RssAt::Exec
                        if self
                            .processes
                            .get_mut(&key)
                            .is_some_and(|p| std::mem::replace(&mut p.stub, false)) => {}
                    RssAt::Exit | RssAt::Exec => {
                        let model = match self.processes.get(&key) {
                            Some(p) if p.space.is_empty() => p.released.unwrap_or_default(),
                            Some(p) => p.space.picture.kind_bytes(),
                            None => KindBytes::default(),
                        };
                        self.compare(
                            format!("{} of {}", at.as_str(), event.pid),
                            event.time,
                            key,
                            model,
                            counters,
                            CounterSource::RssLine,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn with_space(&mut self, key: ProcessKey, f: impl FnOnce(&mut Space, &mut Ctx)) {
        if !self.processes.contains_key(&key) {
            self.order.push(key);
        }
        let process = self.processes.entry(key).or_default();
        let mut ctx = Ctx {
            stats: &mut self.stats,
            timeline: &mut self.timeline,
        };
        f(&mut process.space, &mut ctx);
    }

    fn release(&mut self, key: ProcessKey, at: RssAt) {
        let Some(process) = self.processes.get_mut(&key) else {
            return;
        };
        process.released = Some(process.space.picture.kind_bytes());
        process.exited = at == RssAt::Exit;
        process.raw_sites.clear();
        let mut ctx = Ctx {
            stats: &mut self.stats,
            timeline: &mut self.timeline,
        };
        process.space.release(&mut ctx);
    }

    /// The id of the process's current address space, made on first use.
    fn space_of(&mut self, key: ProcessKey) -> SpaceId {
        *self
            .spaces
            .entry(key)
            .or_insert_with(|| self.sites.new_space(None))
    }

    /// The site of an event: its stack (with the ip first), else its ip, else `label`.
    fn site(
        &mut self,
        key: ProcessKey,
        ip: u64,
        stack: Option<&Stack>,
        label: &'static str,
    ) -> SiteId {
        let exact_first = ip != 0;
        let joined: Vec<u64>;
        let raw: &[u64] = match stack {
            Some(stack) if !stack.0.is_empty() => {
                if ip != 0 && stack.0[0] != ip {
                    joined = std::iter::once(ip).chain(stack.0.iter().copied()).collect();
                    &joined
                } else {
                    &stack.0
                }
            }
            _ if ip != 0 => std::slice::from_ref(&ip),
            _ => return self.sites.label(label),
        };
        let space = self.space_of(key);
        let process = self.processes.entry(key).or_default();
        if process.raw_epoch != process.space.code_epoch {
            process.raw_sites.clear();
            process.raw_epoch = process.space.code_epoch;
        }
        if let Some(&site) = process.raw_sites.get(raw) {
            return site;
        }
        // A frame-pointer walk through code without frame pointers can read data as a
        // return address: the chain stops at the first caller that is not code.
        let known = !process.space.is_empty();
        let frames: Vec<Frame> = raw
            .iter()
            .enumerate()
            .take_while(|&(index, &addr)| {
                index == 0
                    || match process.space.is_code(addr) {
                        Some(code) => code,
                        None => !known,
                    }
            })
            .map(|(index, &addr)| process.space.frame(addr, index > 0 || !exact_first, space))
            .collect();
        let site = self.sites.intern(frames);
        let process = self.processes.entry(key).or_default();
        process.raw_sites.insert(raw.to_vec(), site);
        site
    }

    #[allow(clippy::too_many_arguments)]
    fn fault(
        &mut self,
        key: ProcessKey,
        fault_type: FaultType,
        access: Access,
        addr: u64,
        count: u64,
        site: SiteId,
        time: Timestamp,
    ) {
        let class = FaultClass::of(fault_type);
        self.stats.site(site).faults[class.index()] += 1;
        self.timeline.fault(class);
        if count == 0
            || matches!(
                fault_type,
                FaultType::Spurious
                    | FaultType::Numa
                    | FaultType::Access
                    | FaultType::Hugetlb
                    | FaultType::Other
            )
        {
            return;
        }
        let unknown = self.class(Class::Unknown);
        let process = self.processes.entry(key).or_default();
        let space = &mut process.space;
        let (region, class_id, shared, shmem) = match space.find(addr) {
            Some((start, vma)) => (Some((start, vma.end)), vma.class, vma.shared, vma.shmem),
            None => (None, unknown, false, false),
        };
        let kind = match fault_type {
            FaultType::File if shmem => PageKind::Shmem,
            FaultType::File if !shared && access == Access::Write => PageKind::Anon,
            FaultType::File => PageKind::File,
            FaultType::Swap if shmem => PageKind::Shmem,
            FaultType::Wp if shmem => PageKind::Shmem,
            FaultType::Wp if shared => PageKind::File,
            _ => PageKind::Anon,
        };
        let state = if fault_type == FaultType::Anon && access == Access::Read {
            PageState::Zero
        } else {
            PageState::Resident
        };
        let first = addr / PAGE;
        let targets = target_pages(space, first, count, region);
        let mut ctx = Ctx {
            stats: &mut self.stats,
            timeline: &mut self.timeline,
        };
        let mut brought = 0;
        for vpn in targets {
            let page = match space.page(vpn) {
                // A copy-on-write keeps the page's first site; it only changes its kind.
                Some(old) if fault_type == FaultType::Wp && old.state == PageState::Resident => {
                    Page { kind, ..*old }
                }
                _ => Page {
                    site,
                    class: class_id,
                    kind,
                    state,
                },
            };
            if space.set_page(&mut ctx, vpn, page) {
                brought += 1;
                self.access.resident(key, vpn);
            }
        }
        let stats = self.stats.site(site);
        stats.pages_in += brought;
        if fault_type == FaultType::Swap {
            stats.swapped_in += brought;
            stats.first_swapin.get_or_insert(time);
            stats.last_swapin = Some(time);
        }
    }

    /// mmap: pages already faulted in the new range by the call itself (MAP_POPULATE,
    /// whose faults precede the call's line) take the new region's class and site.
    fn map(&mut self, key: ProcessKey, start: u64, vma: Vma) {
        let unknown = self.class(Class::Unknown);
        let kernel = self.sites.label(LABEL_KERNEL);
        self.with_space(key, |space, ctx| {
            let first = start / PAGE;
            let last = page_up(vma.end) / PAGE;
            let early: Vec<(u64, Page)> = space
                .pages_in(first, last)
                .filter(|(_, p)| p.class == unknown)
                .collect();
            space.map(ctx, start, vma);
            for (vpn, page) in early {
                let site = if page.site == kernel {
                    vma.site
                } else {
                    page.site
                };
                let kind = if vma.shmem {
                    PageKind::Shmem
                } else if vma.shared && vma.object.is_some() {
                    PageKind::File
                } else {
                    page.kind
                };
                space.set_page(
                    ctx,
                    vpn,
                    Page {
                        site,
                        class: vma.class,
                        kind,
                        ..page
                    },
                );
            }
        });
    }

    fn brk(&mut self, key: ProcessKey, ret: u64, stack: Option<&Stack>) {
        let site = self.site(key, 0, stack, LABEL_NO_STACK);
        let heap = self.class(Class::Heap);
        self.with_space(key, |space, ctx| {
            let Some(current) = space.brk else {
                space.brk_start = Some(ret);
                space.brk = Some(ret);
                return;
            };
            if page_up(ret) > page_up(current) {
                let vma = Vma {
                    end: page_up(ret),
                    class: heap,
                    site,
                    offset: 0,
                    object: None,
                    shared: false,
                    shmem: false,
                    exec: false,
                };
                space.map(ctx, page_up(current), vma);
            } else if page_up(ret) < page_up(current) {
                space.unmap(ctx, page_up(ret), page_up(current), Leave::Freed);
            }
            space.brk = Some(ret);
        });
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

    /// Events replayed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events lost so far (`lost` lines).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Ends a capture fed through [`Replay::event`] and [`Replay::snapshot`]: the
    /// processes still alive count with their current state.
    pub fn end_live(&mut self) {
        self.end_capture();
        self.capture += 1;
    }

    fn end_capture(&mut self) {
        let capture = self.capture;
        let keys: Vec<ProcessKey> = self
            .order
            .iter()
            .copied()
            .filter(|k| k.0 == capture)
            .collect();
        for key in keys {
            if let Some(process) = self.processes.get(&key) {
                if !process.exited {
                    let picture = process.space.picture.clone();
                    self.finished.merge(&picture);
                    self.process_end.push((key, picture));
                }
            }
        }
    }

    /// The analysis of everything replayed.
    pub fn finish(self) -> Analysis {
        let (timeline, series) = self.timeline.finish();
        Analysis {
            timeline,
            series,
            sites: self.sites,
            classes: self.classes,
            stats: self.stats,
            end: self.finished,
            marks: self.marks,
            comparisons: self.comparisons,
            events: self.events,
            lost: self.lost,
            bad_lines: self.bad_lines,
            has_stacks: self.has_stacks,
            stack_ends: self.stack_ends,
            has_pages: self.has_pages,
            span: self.span,
            pids: {
                let mut pids: Vec<u32> = self.order.iter().map(|k| k.1).collect();
                pids.dedup();
                pids
            },
            commands: self.commands,
            access: self.access,
            process_end: self.process_end,
            cgroups: self.cgroups,
        }
    }
}

/// The pages a fault of `count` pages at page `first` maps: the faulting page, then the
/// not-yet-resident pages of its aligned window (fault-around, mTHP, PMD THP), within the
/// region.
fn target_pages(space: &Space, first: u64, count: u64, region: Option<(u64, u64)>) -> Vec<u64> {
    if count <= 1 {
        return vec![first];
    }
    let (low, high) = match region {
        Some((start, end)) => (start / PAGE, page_up(end) / PAGE),
        None => (first.saturating_sub(count), first.saturating_add(count)),
    };
    let window = count.next_power_of_two().max(16);
    let base = (first / window * window).max(low);
    let mut targets = vec![first];
    let resident = |vpn: u64| {
        space
            .page(vpn)
            .is_some_and(|p| p.state == PageState::Resident)
    };
    let mut vpn = base;
    while (targets.len() as u64) < count && vpn < high {
        if vpn != first && !resident(vpn) {
            targets.push(vpn);
        }
        vpn += 1;
    }
    let mut vpn = base;
    while (targets.len() as u64) < count && vpn > low {
        vpn -= 1;
        if !resident(vpn) {
            targets.push(vpn);
        }
    }
    targets
}
