//! One watched cgroup's model: the report's replay (through `memmon top`'s
//! [`TopModel`], which names sites by own code) with its sites capped, the least recently
//! used dropped, and its exited processes forgotten at every snapshot; and the counts the
//! metrics give (faults by type, mm calls by call).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use memmon::capture::control::process_path;
use memmon::capture::live::monotonic_now;
use memmon::capture::resident::{start_snapshots, wait_for_image};
use memmon::report::model::class::Class;
use memmon::report::model::maps::MapsLine;
use memmon::report::model::picture::{PageSize, Picture};
use memmon::report::symbolize::symbols::SymbolOptions;
use memmon::top::{SiteGrowthRow, SiteOrder, TopModel};
use memmon::{Event, EventKind, FaultType, Snapshot, SnapshotSource};

/// The coarse class of a mapping class, as the metrics label it (a bounded set).
pub fn class_label(class: &Class) -> &'static str {
    match class {
        Class::Heap => "heap",
        Class::AnonMmap => "anon_mmap",
        Class::Stack => "stack",
        Class::File(_) => "file",
        Class::Shmem(_) => "shmem",
        Class::Special(_) => "special",
        Class::Unknown => "unknown",
    }
}

/// The coarse classes, in the metrics' order.
pub const CLASS_LABELS: [&str; 7] = [
    "heap",
    "anon_mmap",
    "stack",
    "file",
    "shmem",
    "special",
    "unknown",
];

/// A watched cgroup's model.
pub struct CgroupModel {
    /// Its name (`/system.slice/foo.service`).
    pub name: String,
    top: TopModel,
    /// Faults by type, in [`FaultType::ALL`] order, since the agent started watching it.
    pub faults: [u64; 9],
    /// mm system calls by name.
    pub calls: BTreeMap<&'static str, u64>,
    /// Faults the module did not record (`dropped faults=N` lines of its processes) since
    /// the agent started watching it.
    pub faults_dropped: u64,
    /// Events whose stack the module cut short or did not walk (`stack_end=shed`).
    pub stacks_shed: u64,
    /// Files whose build IDs the model has (`buildid` headers given).
    build_ids_known: HashSet<String>,
    /// Build IDs of the executables and libraries seen, by path.
    pub build_ids: BTreeMap<String, String>,
    /// Sites dropped by models replaced since (module reloads).
    dropped_before: u64,
    max_sites: usize,
    /// The last sample's own-code sites, by resident bytes.
    pub top_sites: Vec<SiteGrowthRow>,
    /// The programs executed (their exec lines), the first 16.
    executables: BTreeSet<String>,
}

impl CgroupModel {
    /// An empty model of cgroup `name` keeping at most `max_sites` sites.
    pub fn new(name: &str, max_sites: usize) -> CgroupModel {
        CgroupModel {
            name: name.to_owned(),
            top: new_top(max_sites),
            faults: [0; 9],
            calls: BTreeMap::new(),
            faults_dropped: 0,
            stacks_shed: 0,
            build_ids_known: HashSet::new(),
            build_ids: BTreeMap::new(),
            dropped_before: 0,
            max_sites,
            top_sites: Vec::new(),
            executables: BTreeSet::new(),
        }
    }

    /// Starts a new replay, keeping the counts (after a module reload: the processes'
    /// state in the gap is unknown; they are adopted again from their maps).
    pub fn restart(&mut self) {
        self.dropped_before += self.top.replay().sites().dropped();
        self.top = new_top(self.max_sites);
        self.build_ids_known.clear();
    }

    /// Applies one event of a process of this cgroup.
    pub fn event(&mut self, event: &Event<'_>) {
        if event
            .stack
            .as_ref()
            .is_some_and(|stack| stack.1 == memmon::StackEnd::Shed)
        {
            self.stacks_shed += 1;
        }
        match &event.kind {
            EventKind::Dropped { faults } => self.faults_dropped += faults,
            EventKind::Fault { fault_type, .. } => {
                if let Some(index) = FaultType::ALL.iter().position(|t| t == fault_type) {
                    self.faults[index] += 1;
                }
            }
            EventKind::Exec { filename, .. } if self.executables.len() < 16 => {
                self.executables.insert(filename.to_string_lossy());
            }
            kind if kind.is_syscall() => {
                *self.calls.entry(kind.name()).or_insert(0) += 1;
            }
            _ => {}
        }
        self.top.event(event);
    }

    /// A process first seen: its maps (so that what it mapped before is known), the pages
    /// it holds (resident and swapped, as the site `[resident before memmon started]`: the
    /// metrics and snapshots count what it had before the agent watched it) and the build
    /// IDs of its files.
    pub fn adopt(&mut self, pid: u32) {
        if let Ok(comm) = std::fs::read_to_string(process_path(pid, "comm")) {
            self.top.name(pid, comm.trim_end());
        }
        // Applied once the stream reaches its time: the events of the process already
        // read may be older, even of the program before an exec read later. The time is
        // taken before start_snapshots' wait for an exec's image: a read stamped after the exec event is
        // of the loaded image (see [`CgroupModel::exec`]); one stamped before it is applied
        // before the exec, which releases it whatever it read.
        let time = monotonic_now();
        match start_snapshots(pid, time) {
            Some(snapshots) => {
                self.note_build_ids(pid, snapshots[0].lines.iter().map(String::as_str));
                for snapshot in snapshots {
                    self.top.snapshot(snapshot);
                }
            }
            None => {
                if let Some(snapshot) = self.maps_snapshot(pid, "start") {
                    self.top.snapshot(snapshot);
                }
            }
        }
    }

    /// After an exec event: the new program's maps (its exec mapped them without an mmap
    /// call), as `memmon record` takes them, applied at once (the events after the exec's
    /// are the new program's, even those older than this read of its maps). The exec event
    /// is stamped when the new mm is installed, before the loader maps anything: the maps
    /// are read once the image is loaded ([`wait_for_image`]), or its `.bss` and segments
    /// would be no region of the model, and its stack one at the wrong place.
    pub fn exec(&mut self, pid: u32) {
        if let Some(snapshot) = self.maps_snapshot(pid, "exec") {
            self.top.snapshot_now(snapshot);
        }
    }

    /// The maps of `pid` now (once an exec in progress has loaded its image), and the
    /// build IDs of its files.
    fn maps_snapshot(&mut self, pid: u32, reason: &str) -> Option<Snapshot> {
        let time = monotonic_now();
        wait_for_image(pid);
        let maps = std::fs::read_to_string(process_path(pid, "maps")).ok()?;
        self.note_build_ids(pid, maps.lines());
        Some(Snapshot {
            source: SnapshotSource::Maps,
            pid,
            time,
            reason: reason.to_owned(),
            note: None,
            lines: maps.lines().map(str::to_owned).collect(),
        })
    }

    /// The stream has been read up to `time`: the snapshots taken by then (a process's
    /// adoption, [`CgroupModel::adopt`]) count now, in the metrics and snapshots, rather
    /// than at its next event or the next sample.
    pub fn stream_reached(&mut self, time: memmon::Timestamp) {
        self.top.stream_reached(time);
    }

    /// A header of the stream (`# python`, `# pycode`: the agent reads Python code objects
    /// as record does).
    pub fn header(&mut self, key: &str, value: &str) {
        self.top.replay_mut().header(key, value);
    }

    /// Applies a record of a capture (tests and replays of saved streams: the live agent
    /// takes snapshots itself, [`CgroupModel::adopt`]).
    pub fn record(&mut self, record: &memmon::Record<'_>) {
        match record {
            memmon::Record::Event(event) => self.event(event),
            // A capture's snapshots are at their place in the stream already.
            memmon::Record::Snapshot(_) => self.top.record(record),
            memmon::Record::Header { key, value } => self.header(key, value),
        }
    }

    /// After an exec or a new code mapping: the build IDs of files not seen before.
    pub fn refresh_build_ids(&mut self, pid: u32) {
        if let Ok(maps) = std::fs::read_to_string(process_path(pid, "maps")) {
            self.note_build_ids(pid, maps.lines());
        }
    }

    fn note_build_ids<'l>(&mut self, pid: u32, maps: impl IntoIterator<Item = &'l str>) {
        for line in maps {
            let Some(entry) = MapsLine::parse(line) else {
                continue;
            };
            if !entry.path.starts_with('/')
                || entry.inode == 0
                || self.build_ids_known.contains(&entry.path)
            {
                continue;
            }
            self.build_ids_known.insert(entry.path.clone());
            // Through map_files: the file mapped, even if the path was replaced since.
            let by_fd = process_path(pid, &format!("map_files/{:x}-{:x}", entry.start, entry.end));
            let id = memmon_objects::elf::build_id(&by_fd)
                .or_else(|| memmon_objects::elf::build_id(std::path::Path::new(&entry.path)));
            if let Some(id) = id {
                self.top
                    .replay_mut()
                    .header("buildid", &format!("{id} {}", entry.path));
                if self.build_ids.len() < 1024 {
                    self.build_ids.insert(entry.path.clone(), id);
                }
            }
        }
    }

    /// `PATH=BUILD_ID` of the programs executed whose build IDs are known.
    pub fn executables(&self) -> Vec<String> {
        self.executables
            .iter()
            .filter_map(|path| Some(format!("{path}={}", self.build_ids.get(path)?)))
            .collect()
    }

    /// What the live processes hold now, together.
    pub fn picture(&self) -> Picture {
        let mut total = Picture::default();
        let page = self.page_size();
        for (_, picture) in self.top.replay().live_pictures() {
            total.merge(picture, page);
        }
        total
    }

    /// The size of the pages the model counts (this machine's).
    pub fn page_size(&self) -> PageSize {
        self.top.replay().page_size()
    }

    /// Resident bytes by coarse class ([`CLASS_LABELS`]; every one, zero or not).
    pub fn resident_by_class(&self, picture: &Picture) -> BTreeMap<&'static str, u64> {
        let classes = self.top.replay().classes();
        let page = self.page_size();
        let mut bytes: BTreeMap<&'static str, u64> =
            CLASS_LABELS.iter().map(|label| (*label, 0)).collect();
        for (&(_, class), &pages) in &picture.class_resident {
            let label = classes.get(class as usize).map_or("unknown", class_label);
            *bytes.entry(label).or_insert(0) += page.of(pages);
        }
        bytes
    }

    /// Live processes in the model.
    pub fn processes(&self) -> usize {
        self.top.replay().live_pictures().count()
    }

    /// Sites the table holds now, and dropped so far.
    pub fn sites(&self) -> (usize, u64) {
        let table = self.top.replay().sites();
        (table.kept(), self.dropped_before + table.dropped())
    }

    /// Takes a sample (own-code sites named as in `memmon top`), keeps its `count` largest
    /// sites by resident bytes, and forgets the processes that exited.
    pub fn sample(&mut self, seconds: f64, count: usize) {
        let mut sample = self.top.sample(seconds);
        sample.sort_sites(SiteOrder::Resident);
        sample.sites.retain(|site| site.resident > 0);
        sample.sites.truncate(count);
        self.top_sites = sample.sites;
        self.top.replay_mut().forget_exited();
    }

    /// The replay (for the snapshot's profile).
    pub fn replay(&self) -> &memmon::report::model::replay::Replay {
        self.top.replay()
    }

    /// The pids of live processes.
    pub fn pids(&self) -> BTreeSet<u32> {
        self.top
            .replay()
            .live_pictures()
            .map(|((_, pid), _)| pid)
            .collect()
    }
}

fn new_top(max_sites: usize) -> TopModel {
    // Names from the machine's own files: no debuginfod downloads from a service.
    // The timeline cut at marks only: a model that runs for ever keeps no interval per
    // second.
    let mut top = TopModel::with_replay_options(
        SymbolOptions::default(),
        memmon::report::model::replay::ReplayOptions {
            slicing: memmon::report::model::timeline::Slicing::Marks,
            at_time: None,
        },
    );
    top.replay_mut().set_site_capacity(max_sites);
    top
}

#[cfg(test)]
mod tests {
    use memmon::report::model::sites::LABEL_RESIDENT_BEFORE;
    use memmon::{parse_line, Timestamp};

    use super::*;

    /// This machine's page size, which the live model counts in.
    fn page_bytes() -> u64 {
        PageSize::of_this_machine().bytes()
    }

    /// A process of the cgroup as vm-53's holder b lives it: `sh` moved into the cgroup
    /// (its `cgroup` line at 1.0 s, where the agent adopts it), one fault of its own, then
    /// `exec /progs/hold` (static) at 2.0 s, stamped when the new mm is installed; the
    /// loader's own fault zeroing the end of the data segment's last page (2.1 s), the
    /// image loaded at 2.15 s; the program's two `.bss` pages, its mmap of 4 pages and
    /// their faults. The kernel's anonymous Rss of its unnamed regions at the end: the 2
    /// `.bss` pages and the 4 pages (6), as vm-53's `anon_of` counts it.
    const PID: u32 = 500;
    const LOADED: f64 = 2.15;
    const EVENTS: [&str; 10] = [
        "1.100000000 500/500 fault type=anon access=W addr=0x555500100010 ip=0x555500000100",
        "2.000000000 500/500 exec comm=hold filename=/progs/hold",
        "2.100000000 500/500 fault type=file access=W addr=0x401f00 ip=0x0 user=0",
        "2.200000000 500/500 fault type=anon access=W addr=0x402010 ip=0x400100",
        "2.300000000 500/500 fault type=anon access=W addr=0x403010 ip=0x400100",
        "2.400000000 500/500 mmap addr=0x0 len=16384 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000",
        "2.500000000 500/500 fault type=anon access=W addr=0x7f0000000000 ip=0x400200",
        "2.600000000 500/500 fault type=anon access=W addr=0x7f0000001000 ip=0x400200",
        "2.700000000 500/500 fault type=anon access=W addr=0x7f0000002000 ip=0x400200",
        "2.800000000 500/500 fault type=anon access=W addr=0x7f0000003000 ip=0x400200",
    ];

    fn at(seconds: f64) -> Timestamp {
        let nanos = (seconds * 1e9).round() as u64;
        Timestamp {
            secs: nanos / 1_000_000_000,
            nanos: (nanos % 1_000_000_000) as u32,
        }
    }

    fn time_of(line: &str) -> f64 {
        line.split(' ').next().unwrap().parse().unwrap()
    }

    /// What the kernel shows of the process at `seconds` (its maps, and its pages as
    /// `pages` runs), with the image as the exec leaves it at `seconds` (`half_built`: the
    /// exec's window before the loader is done, whatever the time).
    fn kernel_state(seconds: f64, half_built: bool) -> (Vec<String>, Vec<String>) {
        let done = |line: usize| time_of(EVENTS[line]) <= seconds;
        let mut maps = Vec::new();
        let mut pages = Vec::new();
        if seconds < 2.0 {
            maps.push("555500000000-555500010000 r-xp 00000000 08:01 10 /bin/sh".to_owned());
            maps.push("555500100000-555500104000 rw-p 00000000 00:00 0 ".to_owned());
            maps.push("7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]".to_owned());
            pages.push("555500101000-555500102000 anon".to_owned());
            if done(0) {
                pages.push("555500100000-555500101000 anon".to_owned());
            }
            pages.push("7ffd00020000-7ffd00021000 anon".to_owned());
            return (maps, pages);
        }
        if half_built {
            // Between begin_new_exec and setup_arg_pages: the stack where bprm_mm_init
            // put it, not moved yet and not named (mm->start_stack is 0), holding the
            // arguments' page; no segment mapped yet.
            maps.push("7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 ".to_owned());
            pages.push("7fffffffe000-7ffffffff000 anon".to_owned());
            return (maps, pages);
        }
        maps.push("00400000-00401000 r-xp 00000000 00:02 20 /progs/hold".to_owned());
        maps.push("00401000-00402000 rw-p 00001000 00:02 20 /progs/hold".to_owned());
        maps.push("00402000-00404000 rw-p 00000000 00:00 0 ".to_owned());
        if done(5) {
            maps.push("7f0000000000-7f0000004000 rw-p 00000000 00:00 0 ".to_owned());
        }
        maps.push("7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]".to_owned());
        pages.push("401000-402000 anon".to_owned());
        for (line, page) in [(3, 0x402000u64), (4, 0x403000)]
            .into_iter()
            .chain((6..10).map(|line| (line, 0x7f0000000000 + (line as u64 - 6) * page_bytes())))
        {
            if done(line) {
                pages.push(format!("{page:x}-{:x} anon", page + page_bytes()));
            }
        }
        pages.push("7ffc00020000-7ffc00021000 anon".to_owned());
        (maps, pages)
    }

    fn snapshot(source: SnapshotSource, time: f64, reason: &str, lines: Vec<String>) -> Snapshot {
        Snapshot {
            source,
            pid: PID,
            time: at(time),
            reason: reason.to_owned(),
            note: None,
            lines,
        }
    }

    /// One interleaving, as the agent meets it: the adoption's read stamped at `seed_at`
    /// (taken before the read, as [`CgroupModel::adopt`] does) seeing the process as it
    /// is at `seen_at` (later: faults stamped after the stamp are in it), half-built or
    /// not; the stream read after it, the `exec` line handled at `exec_read_at`, its maps
    /// seeing the process at `exec_seen_at`; `batches`: the stream read in batches, each
    /// ended by [`CgroupModel::stream_reached`], or in one. Returns the resident bytes by
    /// class at the end.
    fn replay(
        seed_at: f64,
        seen_at: f64,
        seed_half_built: bool,
        exec_read_at: f64,
        exec_seen_at: f64,
        exec_half_built: bool,
        batches: bool,
    ) -> BTreeMap<&'static str, u64> {
        let mut model = CgroupModel::new("/work/job-b", 1000);
        let (maps, pages) = kernel_state(seen_at, seed_half_built);
        model
            .top
            .snapshot(snapshot(SnapshotSource::Maps, seed_at, "start", maps));
        model
            .top
            .snapshot(snapshot(SnapshotSource::Pages, seed_at, "start", pages));
        for (index, line) in EVENTS.iter().enumerate() {
            let event = parse_line(line).unwrap();
            model.event(&event);
            if let EventKind::Exec { .. } = event.kind {
                let (maps, _) = kernel_state(exec_seen_at, exec_half_built);
                model
                    .top
                    .snapshot_now(snapshot(SnapshotSource::Maps, exec_read_at, "exec", maps));
            }
            let next = EVENTS.get(index + 1).map_or(10.0, |line| time_of(line));
            if batches {
                model.stream_reached(at((time_of(line) + next) / 2.0));
            }
        }
        model.stream_reached(at(10.0));
        model.sample(1.0, 10);
        let picture = model.picture();
        model.resident_by_class(&picture)
    }

    /// vm-53's holder b, every interleaving of its adoption (the seed read before the
    /// exec, during it, after it; the faults of the same pages before and after the
    /// seed's stamp, in the seed or not) with its exec and faults, the images read
    /// loaded ([`wait_for_image`]): its anonymous mappings hold exactly its 2 `.bss` pages
    /// and its 4 pages, nothing is of no region, and the data segment's page the loader
    /// wrote is in the file class.
    #[test]
    fn every_interleaving_of_an_adoption_and_an_exec_is_exact() {
        let mut cases = 0;
        for seed_at in [1.05f64, 1.5, 1.95, 2.05, 2.25, 2.45, 2.55, 2.65, 3.0] {
            // The read sees the process as it is then, or a little later (faults stamped
            // after the stamp are in it): a seed stamped before the exec may even see the
            // new image, whole or half-built (it is applied before the exec, which
            // releases it).
            for (seen_at, half_built) in [
                (seed_at, false),
                (seed_at + 0.1, false),
                (seed_at + 0.1, true),
            ] {
                let half_built = half_built && seen_at >= 2.0 && seed_at < 2.0;
                if seed_at >= 2.0 && !half_built && seen_at < LOADED {
                    // Read after the exec's stamp: the agent waits for the image.
                    continue;
                }
                let seen_at = if seed_at >= 2.0 {
                    seen_at.max(LOADED)
                } else {
                    seen_at
                };
                // The exec line is handled after the cgroup line: its maps are read later
                // than the seed, once the image is loaded, maybe after the mmap too.
                for exec_read_at in [2.01f64, 2.35, 2.45, 3.0] {
                    let exec_read_at = exec_read_at.max(seed_at);
                    for batches in [false, true] {
                        let classes = replay(
                            seed_at,
                            seen_at,
                            half_built,
                            exec_read_at,
                            exec_read_at.max(LOADED),
                            false,
                            batches,
                        );
                        let case = format!(
                            "seed stamped {seed_at} seeing {seen_at} (half-built {half_built}), \
                             exec maps at {exec_read_at}, batches {batches}: {classes:?}"
                        );
                        assert_eq!(classes["anon_mmap"], 6 * page_bytes(), "{case}");
                        assert_eq!(classes["unknown"], 0, "{case}");
                        assert_eq!(classes["heap"], 0, "{case}");
                        assert_eq!(classes["file"], page_bytes(), "{case}");
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 26 * 4 * 2);
    }

    /// The defect [`wait_for_image`] removes (vm-53, job-b: 8 400 896 bytes, one page more
    /// than the kernel's 8 396 800, in one run; the `.bss` pages in another class in 2 of
    /// 4): the exec event is stamped when the new mm is installed, before the loader
    /// maps anything, and the agent read the process there. A seed read after the stamp
    /// but before `setup_arg_pages` holds the stack at its first place, an unnamed
    /// (anonymous) region with the arguments' page, which the kernel then moves without an
    /// event: one page too many in `anon_mmap`, for ever. Exec maps read before the loader
    /// mapped the segments and `.bss`: their faults fall in no region (`unknown`).
    #[test]
    fn images_read_half_built_were_the_defect() {
        let classes = replay(2.05, 2.05, true, 2.05, 2.05, false, true);
        assert_eq!(classes["anon_mmap"], 7 * page_bytes(), "{classes:?}");
        let classes = replay(1.05, 1.05, false, 2.01, 2.01, true, true);
        assert_eq!(classes["anon_mmap"], 4 * page_bytes(), "{classes:?}");
        assert_eq!(classes["unknown"], 3 * page_bytes(), "{classes:?}");
    }

    /// A process already running when its cgroup is found counts what it holds: this test
    /// process, with 8 MiB written in a mapping of its own.
    #[test]
    fn an_adopted_process_counts_what_it_held() {
        let held = vec![1u8; 8 << 20];
        let mut model = CgroupModel::new("/test", 1000);
        model.adopt(std::process::id());
        model.sample(1.0, 10);
        let picture = model.picture();
        let resident = picture.kind_bytes(model.page_size()).resident();
        assert!(
            model.resident_by_class(&picture)["anon_mmap"] >= held.len() as u64,
            "{:?}",
            model.resident_by_class(&picture)
        );
        // All of it is the site of what was there before the agent watched it.
        let before = &model.top_sites[0];
        assert_eq!(before.function, LABEL_RESIDENT_BEFORE);
        assert_eq!(before.resident, resident);
        drop(held);
    }
}
