//! One watched cgroup's model: the report's replay (through `memmon top`'s
//! [`TopModel`], which names sites by own code) with its sites capped, the least recently
//! used dropped, and its exited processes forgotten at every snapshot; and the counts the
//! metrics give (faults by type, mm calls by call).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use memmon::capture::control::process_path;
use memmon::capture::live::monotonic_now;
use memmon::capture::resident::start_snapshots;
use memmon::report::model::class::Class;
use memmon::report::model::maps::MapsLine;
use memmon::report::model::picture::{Picture, PAGE};
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
        // read may be older, even of the program before an exec read later.
        match start_snapshots(pid, monotonic_now()) {
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
    /// are the new program's, even those older than this read of its maps).
    pub fn exec(&mut self, pid: u32) {
        if let Some(snapshot) = self.maps_snapshot(pid, "exec") {
            self.top.snapshot_now(snapshot);
        }
    }

    /// The maps of `pid` now, and the build IDs of its files.
    fn maps_snapshot(&mut self, pid: u32, reason: &str) -> Option<Snapshot> {
        let maps = std::fs::read_to_string(process_path(pid, "maps")).ok()?;
        self.note_build_ids(pid, maps.lines());
        Some(Snapshot {
            source: SnapshotSource::Maps,
            pid,
            time: monotonic_now(),
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
        for (_, picture) in self.top.replay().live_pictures() {
            total.merge(picture);
        }
        total
    }

    /// Resident bytes by coarse class ([`CLASS_LABELS`]; every one, zero or not).
    pub fn resident_by_class(&self, picture: &Picture) -> BTreeMap<&'static str, u64> {
        let classes = self.top.replay().classes();
        let mut bytes: BTreeMap<&'static str, u64> =
            CLASS_LABELS.iter().map(|label| (*label, 0)).collect();
        for (&(_, class), &pages) in &picture.class_resident {
            let label = classes.get(class as usize).map_or("unknown", class_label);
            *bytes.entry(label).or_insert(0) += pages * PAGE;
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

    use super::*;

    /// A process already running when its cgroup is found counts what it holds: this test
    /// process, with 8 MiB written in a mapping of its own.
    #[test]
    fn an_adopted_process_counts_what_it_held() {
        let held = vec![1u8; 8 << 20];
        let mut model = CgroupModel::new("/test", 1000);
        model.adopt(std::process::id());
        model.sample(1.0, 10);
        let picture = model.picture();
        let resident = picture.kind_bytes().resident();
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
