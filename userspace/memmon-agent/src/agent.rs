//! The agent's loop: reads the module's stream, hands each event to its cgroup's model,
//! keeps the watched cgroups current, takes the snapshots, refreshes the metrics, and
//! answers SIGHUP (reload), SIGTERM and SIGINT (a last snapshot, unwatch, exit). It
//! outlives the module: after `rmmod` it waits for it, and when it is back, watches again
//! and says how long the gap was.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use memmon::capture::cgroup::{cgroup_processes, process_cgroup};
use memmon::capture::control::{process_path, RingGrowth, RING_TARGET_BYTES};
use memmon::capture::live::{monotonic_now, LiveEvents};
use memmon::capture::python_codes::PythonCodes;
use memmon::capture::unwind::UnwindTables;
use memmon::{parse_line, EventKind, ModuleParams, ProcInterface};

use crate::cgroups::{memory_use, owner, unit, Matcher, UnmatchedGlobs, MAX_DIRECTORIES};
use crate::config::{Config, Overrides};
use crate::metrics::{self, Metrics, Shared};
use crate::model::CgroupModel;
use crate::profile::{self, SnapshotInfo};
use crate::spool::{DirStore, Outcome, Spool};

/// How long a poll of the stream waits for events.
const POLL_MS: u16 = 100;
/// How often the cgroup tree is walked, the module looked for and the cheap metrics set.
const TICK: Duration = Duration::from_secs(1);
/// How often memory.current is compared with memory.max.
const NEAR_LIMIT_CHECK: Duration = Duration::from_millis(200);
/// How often the own-code sites of the metrics are named and ranked, and exited
/// processes forgotten.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// What started the agent: the config file and the flags, kept for reloads.
pub struct Start {
    /// `--config FILE`.
    pub config_path: Option<PathBuf>,
    /// The flags that win over the file.
    pub flags: Overrides,
    /// The module's /proc directory.
    pub proc_root: PathBuf,
    /// Load unwind tables (not with `--no-unwind-tables`).
    pub unwind_tables: bool,
}

/// The host's name (the `host` label unless the config gives one).
pub fn host_name() -> String {
    nix::sys::utsname::uname()
        .map(|uts| uts.nodename().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Reads and merges the configuration as [`run`] would, and says what it gives, in one
/// line (`memmon agent --check-config`); an error says what is wrong, as at a start.
pub fn check_config(start: &Start) -> Result<String> {
    let config = Config::load(start.config_path.as_deref(), &start.flags, &host_name())?;
    Ok(config_summary(&config))
}

/// The configuration in one line, as the agent logs it.
fn config_summary(config: &Config) -> String {
    let listen = config
        .listen
        .map_or_else(|| "nowhere".to_owned(), |a| a.to_string());
    format!(
        "cgroups {:?} under {}, snapshots every {} s into {} (cap {} bytes), metrics on {listen}",
        config.cgroups,
        config.cgroup_root.display(),
        config.interval,
        config.spool_dir.display(),
        config.spool_max_bytes
    )
}

/// Runs the agent until SIGTERM or SIGINT.
pub fn run(start: Start) -> Result<()> {
    let config = Config::load(start.config_path.as_deref(), &start.flags, &host_name())?;
    let terminate = Arc::new(AtomicBool::new(false));
    let reload = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&terminate))
            .context("cannot install a signal handler")?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reload))
        .context("cannot install a signal handler")?;
    let mut agent = Agent::new(start, config)?;
    agent.log_config("started");
    let result = agent.run(&terminate, &reload);
    agent.finish();
    result
}

struct Agent {
    start: Start,
    config: Config,
    proc: ProcInterface,
    params: ModuleParams,
    metrics: Shared,
    server: Option<(SocketAddr, Arc<tiny_http::Server>)>,
    spool: Spool<DirStore>,
    matcher: Matcher,
    /// The cgroups watched through the module, with their models.
    models: BTreeMap<String, CgroupModel>,
    /// The watched cgroup of each process seen (shared names: looked up at every event).
    pids: HashMap<u32, Rc<str>>,
    /// Pids not in a watched cgroup (someone else's watch), so as not to look again.
    strangers: HashMap<u32, ()>,
    /// The live processes adopted (found running: their earlier faults not seen), with
    /// the resident bytes they held then.
    adopted: HashMap<u32, u64>,
    /// Processes adopted so far, per watched cgroup.
    adopted_count: BTreeMap<String, u64>,
    /// The globs said to match nothing.
    unmatched: UnmatchedGlobs,
    /// The lost events counted at the last look for processes whose lines were lost.
    lost_seen: u64,
    events: Option<LiveEvents>,
    /// When `events` was opened: a new reader first gets what the module's rings still hold
    /// from before (docs/events.md), a previous reader's events (the agent's own before a
    /// restart). The processes they are of are adopted with their state read after this;
    /// applied, those events would come before that state, their pages outside any region
    /// the model knows yet, in class `unknown` for good.
    events_since: memmon::Timestamp,
    tables: UnwindTables,
    /// Processes whose build IDs to read once the events read are handled.
    new_code: BTreeSet<u32>,
    /// The Python code objects the stacks name, read from the processes' memory.
    python_codes: PythonCodes,
    /// The module's probe_missed at the last look.
    probe_missed: Option<u64>,
    /// Since when the module has been away (None: it is there); `ever_attached`: it was
    /// there once (a gap counts only after that).
    gap_since: Option<Instant>,
    ever_attached: bool,
    /// The last near-the-limit snapshot of each cgroup.
    last_near: HashMap<String, Instant>,
    /// Cgroups whose watch failed, said once each.
    watch_failed: BTreeSet<String>,
    last_tick: Instant,
    last_near_check: Instant,
    last_sample: Instant,
    last_snapshot: Instant,
    /// Whether the last interval's snapshots may retry a full spool.
    spool_retry: bool,
}

impl Agent {
    fn new(start: Start, config: Config) -> Result<Agent> {
        let metrics: Shared = Arc::new(Mutex::new(Metrics::new()));
        let spool = Spool::new(
            DirStore::new(config.spool_dir.clone())
                .with_context(|| format!("cannot create {}", config.spool_dir.display()))?,
            config.spool_max_bytes,
        );
        let server = match config.listen {
            Some(address) => Some((address, metrics::serve(address, Arc::clone(&metrics))?)),
            None => None,
        };
        let now = Instant::now();
        Ok(Agent {
            proc: ProcInterface::new(&start.proc_root),
            params: ModuleParams::default(),
            matcher: Matcher::new(&config.cgroups),
            start,
            config,
            metrics,
            server,
            spool,
            models: BTreeMap::new(),
            pids: HashMap::new(),
            strangers: HashMap::new(),
            adopted: HashMap::new(),
            adopted_count: BTreeMap::new(),
            unmatched: UnmatchedGlobs::default(),
            lost_seen: 0,
            events: None,
            events_since: memmon::Timestamp::default(),
            tables: UnwindTables::off(),
            new_code: BTreeSet::new(),
            python_codes: PythonCodes::default(),
            probe_missed: None,
            gap_since: Some(now),
            ever_attached: false,
            last_near: HashMap::new(),
            watch_failed: BTreeSet::new(),
            last_tick: now - TICK,
            last_near_check: now,
            last_sample: now,
            last_snapshot: now,
            spool_retry: true,
        })
    }

    fn log_config(&self, what: &str) {
        eprintln!("memmon agent: {what}: {}", config_summary(&self.config));
    }

    fn metrics(&self) -> std::sync::MutexGuard<'_, Metrics> {
        match self.metrics.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn run(&mut self, terminate: &AtomicBool, reload: &AtomicBool) -> Result<()> {
        while !terminate.load(Ordering::Relaxed) {
            if reload.swap(false, Ordering::Relaxed) {
                self.reload();
            }
            if self.last_tick.elapsed() >= TICK {
                self.last_tick = Instant::now();
                self.tick();
            }
            match self.events.take() {
                Some(mut events) => {
                    // Every event older than this has been read once the poll returns.
                    let read_from = monotonic_now();
                    // Each line handled where it was read, not copied out first.
                    let mut count = 0;
                    let polled = events.poll_lines(POLL_MS, |line| {
                        count += 1;
                        self.handle(line);
                        Ok(())
                    });
                    self.events = Some(events);
                    self.metrics().events.inc_by(count);
                    match polled {
                        Ok(()) => {
                            for model in self.models.values_mut() {
                                model.stream_reached(read_from);
                            }
                        }
                        Err(error) => {
                            eprintln!("memmon agent: {error:#}");
                            self.module_gone();
                        }
                    }
                    self.tables.flush();
                    self.python_codes.new_batch();
                    for pid in std::mem::take(&mut self.new_code) {
                        if let Some(model) =
                            self.pids.get(&pid).and_then(|c| self.models.get_mut(&**c))
                        {
                            model.refresh_build_ids(pid);
                        }
                    }
                }
                None => std::thread::sleep(Duration::from_millis(POLL_MS.into())),
            }
            if self.last_near_check.elapsed() >= NEAR_LIMIT_CHECK {
                self.last_near_check = Instant::now();
                self.check_limits();
            }
            if self.last_sample.elapsed() >= SAMPLE_EVERY {
                self.sample_all();
            }
            if self.last_snapshot.elapsed() >= Duration::from_secs(self.config.interval) {
                self.last_snapshot = Instant::now();
                self.spool_retry = true;
                self.snapshot_all("interval");
            }
        }
        Ok(())
    }

    /// SIGTERM: a last snapshot of every cgroup, then nothing is watched any more.
    fn finish(&mut self) {
        eprintln!("memmon agent: stopping: last snapshots, unwatching");
        if let Some(events) = self.events.as_mut() {
            let mut lines = Vec::new();
            let _ = events.poll_lines(0, |line| {
                lines.push(line.to_owned());
                Ok(())
            });
            for line in &lines {
                self.handle(line);
            }
        }
        self.spool_retry = true;
        self.snapshot_all("exit");
        self.tables.finish();
        let names: Vec<String> = self.models.keys().cloned().collect();
        for name in names {
            self.unwatch(&name);
        }
        self.sample_all();
        self.write_metrics_file();
        if let Some((_, server)) = &self.server {
            server.unblock();
        }
    }

    /// SIGHUP: the config again; new globs watched, dropped ones unwatched.
    fn reload(&mut self) {
        let config = match Config::load(
            self.start.config_path.as_deref(),
            &self.start.flags,
            &host_name(),
        ) {
            Ok(config) => config,
            Err(error) => {
                eprintln!("memmon agent: reload refused, the config in effect stays: {error:#}");
                return;
            }
        };
        if config.listen != self.config.listen {
            if let Some((_, server)) = self.server.take() {
                server.unblock();
            }
            if let Some(address) = config.listen {
                match metrics::serve(address, Arc::clone(&self.metrics)) {
                    Ok(server) => self.server = Some((address, server)),
                    Err(error) => eprintln!("memmon agent: {error:#}"),
                }
            }
        }
        if config.spool_dir != self.config.spool_dir
            || config.spool_max_bytes != self.config.spool_max_bytes
        {
            match DirStore::new(config.spool_dir.clone()) {
                Ok(store) => self.spool = Spool::new(store, config.spool_max_bytes),
                Err(error) => eprintln!(
                    "memmon agent: cannot create {}: {error}; the spool stays {}",
                    config.spool_dir.display(),
                    self.config.spool_dir.display()
                ),
            }
        }
        self.matcher = Matcher::new(&config.cgroups);
        self.config = config;
        self.watch_failed.clear();
        self.unmatched.clear();
        self.log_config("reloaded");
        self.sync_cgroups();
    }

    /// Every second: the module, the cgroups, the cheap metrics.
    fn tick(&mut self) {
        let module_there = self.proc.stats().is_ok();
        match (self.events.is_some(), module_there) {
            (true, false) => self.module_gone(),
            (false, true) => self.module_back(),
            _ => {}
        }
        if self.events.is_some() {
            self.sync_cgroups();
            self.adopt_after_losses();
            if let Some(missed) = self
                .proc
                .stats()
                .ok()
                .and_then(|s| s.get_u64("probe_missed"))
            {
                let before = self.probe_missed.replace(missed).unwrap_or(missed);
                self.metrics()
                    .probes_missed
                    .inc_by(missed.saturating_sub(before));
            }
        }
        self.refresh_metrics();
    }

    fn refresh_metrics(&mut self) {
        let spool_bytes = self.spool.bytes();
        let full = self.spool.is_full();
        let mut metrics = match self.metrics.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        metrics.refresh_cgroups(self.models.values());
        let adopted_bytes = self.adopted_bytes();
        metrics.refresh_adoptions(self.models.keys().map(|name| {
            let count = self.adopted_count.get(name).copied().unwrap_or(0);
            let bytes = adopted_bytes.get(name.as_str()).copied().unwrap_or(0);
            (name.as_str(), count, bytes)
        }));
        metrics.refresh_self();
        metrics.spool_bytes.set(spool_bytes as i64);
        metrics.spool_full.set(i64::from(full));
        metrics.module_up.set(i64::from(self.events.is_some()));
        let text = self.config.metrics_file.as_ref().map(|_| metrics.encode());
        drop(metrics);
        if let (Some(path), Some(text)) = (&self.config.metrics_file, text) {
            if let Err(error) = metrics::write_file(path, &text) {
                eprintln!("memmon agent: cannot write {}: {error}", path.display());
            }
        }
    }

    fn write_metrics_file(&mut self) {
        self.refresh_metrics();
    }

    fn module_gone(&mut self) {
        if self.events.take().is_none() {
            return;
        }
        self.tables = UnwindTables::off();
        self.gap_since = Some(Instant::now());
        self.probe_missed = None;
        self.metrics().module_gaps.inc();
        eprintln!(
            "memmon agent: the memmon module is gone: nothing is recorded until it is loaded \
             again (memmon_module_up 0)"
        );
    }

    fn module_back(&mut self) {
        let since = monotonic_now();
        let events = match LiveEvents::open(&self.proc) {
            Ok(events) => events,
            Err(error) => {
                eprintln!("memmon agent: {error:#}");
                return;
            }
        };
        grow_rings(&self.proc);
        let path = self.params.path("stack_depth");
        if let Err(error) = std::fs::write(&path, self.config.stack_depth.to_string()) {
            eprintln!(
                "memmon agent: cannot set {} to {}: {error}",
                path.display(),
                self.config.stack_depth
            );
        }
        self.events = Some(events);
        self.events_since = since;
        self.tables = UnwindTables::open(&self.proc, self.start.unwind_tables);
        let gap = self.gap_since.take().map(|since| since.elapsed());
        if self.ever_attached {
            let seconds = gap.map_or(0.0, |gap| gap.as_secs_f64());
            self.metrics().module_gap_seconds.inc_by(seconds);
            eprintln!(
                "memmon agent: the memmon module is back after {seconds:.1} s: watching again \
                 (the models start afresh; what happened in the gap is not in them)"
            );
            // The module forgot the watches; the models start again from the processes'
            // state when watched again.
            self.pids.clear();
            self.strangers.clear();
            self.adopted.clear();
            // The new models have none of the Python headers given to the old ones.
            self.python_codes = PythonCodes::default();
            let names: Vec<String> = self.models.keys().cloned().collect();
            for name in &names {
                if let Some(model) = self.models.get_mut(name) {
                    model.restart();
                }
                self.start_watching(name);
            }
        } else {
            eprintln!(
                "memmon agent: reading {}",
                self.proc.path("events").display()
            );
        }
        self.ever_attached = true;
        self.sync_cgroups();
    }

    /// Watches the cgroups the globs match now and unwatches those they do not.
    fn sync_cgroups(&mut self) {
        if self.events.is_none() {
            return;
        }
        let found = self.matcher.discover(&self.config.cgroup_root);
        for line in self
            .unmatched
            .lines(&self.matcher, &found, &self.config.cgroup_root)
        {
            eprintln!("memmon agent: {line}");
        }
        let gone: Vec<String> = self
            .models
            .keys()
            .filter(|name| !found.contains(*name))
            .cloned()
            .collect();
        for name in gone {
            let exists = self
                .config
                .cgroup_root
                .join(name.trim_start_matches('/'))
                .is_dir();
            if exists && self.matcher.matches(&name) {
                // Still there and matched: a walk cut short (its bounds, a directory it
                // could not read) is no reason to drop a model.
                continue;
            }
            if exists {
                eprintln!("memmon agent: {name}: no longer matched: last snapshot, unwatched");
                self.snapshot(&name, "unwatched");
            } else {
                eprintln!("memmon agent: {name}: removed: its model and series are dropped");
            }
            self.unwatch(&name);
        }
        for name in found {
            if !self.models.contains_key(&name) && self.start_watching(&name) {
                eprintln!("memmon agent: {name}: watched");
            }
        }
    }

    /// Watches cgroup `name` (its model made if there is none), then adopts every process
    /// in it: watched first, so that the module records their faults from then on, then
    /// their state read ([`Agent::join`]), so that nothing falls in between. Their `cgroup`
    /// lines, read later, find them adopted.
    fn start_watching(&mut self, name: &str) -> bool {
        if !self.watch(name) {
            return false;
        }
        if !self.models.contains_key(name) {
            self.models.insert(
                name.to_owned(),
                CgroupModel::new(name, self.config.max_sites),
            );
        }
        self.adopt_members(name);
        true
    }

    /// Adopts the processes of cgroup `name` (and below it) not known yet.
    fn adopt_members(&mut self, name: &str) {
        let dir = self.config.cgroup_root.join(name.trim_start_matches('/'));
        for pid in cgroup_processes(&dir, MAX_DIRECTORIES) {
            if pid != std::process::id() {
                self.join(pid, name);
            }
        }
    }

    /// After lost events: the processes whose `fork` or `cgroup` lines were lost, and that
    /// have had no event since, are adopted from the watched cgroups' members.
    fn adopt_after_losses(&mut self) {
        let lost = self.metrics().events_lost.get();
        if lost == self.lost_seen {
            return;
        }
        self.lost_seen = lost;
        let names: Vec<String> = self.models.keys().cloned().collect();
        for name in &names {
            self.adopt_members(name);
        }
    }

    /// The resident bytes the live adopted processes of each cgroup held when adopted.
    fn adopted_bytes(&self) -> HashMap<&str, u64> {
        let mut bytes: HashMap<&str, u64> = HashMap::new();
        for (pid, held) in &self.adopted {
            if let Some(name) = self.pids.get(pid) {
                *bytes.entry(&**name).or_insert(0) += held;
            }
        }
        bytes
    }

    fn watch(&mut self, name: &str) -> bool {
        let path = self.config.cgroup_root.join(name.trim_start_matches('/'));
        match self.proc.watch_cgroup(&path) {
            Ok(()) => {
                self.watch_failed.remove(name);
                true
            }
            Err(error) => {
                if self.watch_failed.insert(name.to_owned()) {
                    eprintln!("memmon agent: {name}: cannot watch: {error}");
                }
                false
            }
        }
    }

    fn unwatch(&mut self, name: &str) {
        let path = self.config.cgroup_root.join(name.trim_start_matches('/'));
        // A removed cgroup is forgotten by the module already.
        let _ = self.proc.unwatch_cgroup(&path);
        self.models.remove(name);
        self.last_near.remove(name);
        self.adopted_count.remove(name);
        let python_codes = &mut self.python_codes;
        let adopted = &mut self.adopted;
        self.pids.retain(|&pid, cgroup| {
            let keep = &**cgroup != name;
            if !keep {
                python_codes.forget(pid);
                adopted.remove(&pid);
            }
            keep
        });
    }

    /// The watched cgroup of `pid`, learnt from its `cgroup` line or /proc/PID/cgroup.
    fn cgroup_of(&mut self, pid: u32) -> Option<Rc<str>> {
        if let Some(name) = self.pids.get(&pid) {
            return Some(name.clone());
        }
        if pid == 0 || self.strangers.contains_key(&pid) {
            return None;
        }
        let watched: BTreeSet<String> = self.models.keys().cloned().collect();
        match process_cgroup(pid).and_then(|path| owner(&watched, &path).cloned()) {
            Some(name) => {
                self.join(pid, &name);
                self.pids.get(&pid).cloned()
            }
            None => {
                if self.strangers.len() > 65536 {
                    self.strangers.clear();
                }
                self.strangers.insert(pid, ());
                None
            }
        }
    }

    /// `pid` is a member of cgroup `name` from now on: a process whose start the model did
    /// not see (there at the watch, moved in, or its lines lost), adopted with its state
    /// now ([`CgroupModel::adopt`]; every adoption goes through here).
    fn join(&mut self, pid: u32, name: &str) {
        self.strangers.remove(&pid);
        if self.pids.get(&pid).map(|c| &**c) == Some(name) {
            return;
        }
        // Its Python headers go to its new model (given again at its next Python event).
        if self.pids.insert(pid, Rc::from(name)).is_some() {
            self.python_codes.forget(pid);
        }
        if let Some(model) = self.models.get_mut(name) {
            // Its status first, the closest to the watch: the pages it faults between the
            // two reads count in both (seen, and held when adopted).
            self.adopted.insert(pid, resident_now(pid));
            model.adopt(pid);
            *self.adopted_count.entry(name.to_owned()).or_insert(0) += 1;
        }
        self.tables.sync(pid);
    }

    fn handle(&mut self, line: &str) {
        let event = match parse_line(line) {
            Ok(event) => event,
            Err(error) => {
                eprintln!("memmon agent: skipping undecodable event ({error}): {line}");
                return;
            }
        };
        if event.time < self.events_since {
            // Recorded before the agent opened `events` (what the rings still held).
            return;
        }
        match &event.kind {
            EventKind::Lost { count } => {
                self.metrics().events_lost.inc_by(*count);
                return;
            }
            EventKind::Dropped { faults } if event.pid == 0 => {
                self.metrics().faults_dropped_unattributed.inc_by(*faults);
                return;
            }
            EventKind::Cgroup { path, .. } => {
                let path = path.to_string_lossy();
                let watched: BTreeSet<String> = self.models.keys().cloned().collect();
                match owner(&watched, &path) {
                    Some(name) => self.join(event.pid, name),
                    None => {
                        self.pids.remove(&event.pid);
                        self.adopted.remove(&event.pid);
                        self.python_codes.forget(event.pid);
                    }
                }
                return;
            }
            _ => {}
        }
        let Some(name) = self.cgroup_of(event.pid) else {
            return;
        };
        self.tables.note(&event);
        match &event.kind {
            EventKind::Fork {
                child,
                watched: true,
            } => {
                // Seen from its start: not adopted.
                self.pids.insert(*child, name.clone());
                self.strangers.remove(child);
                self.adopted.remove(child);
            }
            EventKind::Mmap { prot, .. } if prot.contains(memmon::Prot::EXEC) => {
                self.new_code.insert(event.pid);
            }
            _ => {}
        }
        if let Some(model) = self.models.get_mut(&*name) {
            if event.python.is_some() {
                // The interpreter and the code objects the Python frames name, read now
                // while the process lives (its model names the frames by them).
                let python = self.tables.python(event.pid);
                let _ =
                    self.python_codes
                        .before_line(event.pid, line, python, &mut |key, value| {
                            model.header(key, value);
                            Ok(())
                        });
            }
            model.event(&event);
            if let EventKind::Exec { .. } = event.kind {
                model.exec(event.pid);
            }
        }
        match event.kind {
            EventKind::Exit { .. } => {
                self.pids.remove(&event.pid);
                self.adopted.remove(&event.pid);
                self.new_code.remove(&event.pid);
                self.python_codes.forget(event.pid);
            }
            EventKind::Exec { .. } => self.python_codes.forget(event.pid),
            _ => {}
        }
    }

    /// Snapshots the cgroups at or above `near_limit` of their memory.max (at most one per
    /// cgroup every `near_limit_every` seconds).
    fn check_limits(&mut self) {
        let names: Vec<String> = self.models.keys().cloned().collect();
        for name in names {
            let Some((current, Some(max))) = memory_use(&self.config.cgroup_root, &name) else {
                continue;
            };
            if max == 0 || (current as f64) < self.config.near_limit * max as f64 {
                continue;
            }
            let every = Duration::from_secs(self.config.near_limit_every);
            if self
                .last_near
                .get(&name)
                .is_some_and(|last| last.elapsed() < every)
            {
                continue;
            }
            self.last_near.insert(name.clone(), Instant::now());
            eprintln!(
                "memmon agent: {name}: memory.current {current} is {:.0} % of memory.max {max}: \
                 snapshot",
                current as f64 * 100.0 / max as f64
            );
            self.snapshot(&name, "near-limit");
        }
    }

    fn sample_all(&mut self) {
        let seconds = self.last_sample.elapsed().as_secs_f64();
        self.last_sample = Instant::now();
        let top = self.config.top_sites;
        for model in self.models.values_mut() {
            model.sample(seconds, top);
        }
    }

    fn snapshot_all(&mut self, reason: &str) {
        let names: Vec<String> = self.models.keys().cloned().collect();
        for name in names {
            self.snapshot(&name, reason);
        }
        self.spool_retry = false;
    }

    /// Writes one snapshot of cgroup `name` into the spool.
    fn snapshot(&mut self, name: &str, reason: &str) {
        let Some(model) = self.models.get(name) else {
            return;
        };
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mut labels = self.config.labels.clone();
        labels.insert("cgroup".to_owned(), name.to_owned());
        labels.insert("unit".to_owned(), unit(name).to_owned());
        labels.insert("reason".to_owned(), reason.to_owned());
        // What the model misses (since the agent watched the cgroup; lost events since the
        // agent started, of no process): a reader of the snapshot can tell a partial one.
        labels.insert(
            "events_lost".to_owned(),
            self.metrics().events_lost.get().to_string(),
        );
        labels.insert(
            "faults_dropped".to_owned(),
            model.faults_dropped.to_string(),
        );
        labels.insert("stacks_shed".to_owned(), model.stacks_shed.to_string());
        // Processes found running (their earlier faults not seen), and what they held then.
        let adopted = self.adopted_count.get(name).copied().unwrap_or(0);
        let adopted_bytes = self.adopted_bytes().get(name).copied().unwrap_or(0);
        labels.insert("processes_adopted".to_owned(), adopted.to_string());
        labels.insert(
            "adopted_resident_bytes".to_owned(),
            adopted_bytes.to_string(),
        );
        let executables = model.executables();
        if !executables.is_empty() {
            labels.insert("build_id".to_owned(), executables.join(","));
        }
        let profile = profile::build(
            model.replay(),
            &SnapshotInfo {
                labels: &labels,
                time_nanos: i64::try_from(wall.as_nanos()).unwrap_or(i64::MAX),
            },
        );
        let file_name = profile::file_name(wall, name, reason);
        let outcome = profile::encode(&profile)
            .map_err(std::io::Error::other)
            .and_then(|bytes| self.spool.put(&file_name, &bytes, self.spool_retry));
        let metrics = self.metrics();
        match outcome {
            Ok(Outcome::Written { rotated }) => {
                metrics
                    .snapshots_written
                    .get_or_create(&vec![("reason".to_owned(), reason.to_owned())])
                    .inc();
                metrics.snapshots_rotated.inc_by(rotated as u64);
            }
            Ok(Outcome::Dropped) => {
                metrics.snapshots_dropped.inc();
            }
            Err(error) => {
                metrics.snapshots_dropped.inc();
                eprintln!("memmon agent: {name}: snapshot not written: {error}");
            }
        }
    }
}

/// The resident bytes of process `pid` now (RssAnon + RssFile + RssShmem of its status; 0
/// if it is gone).
fn resident_now(pid: u32) -> u64 {
    std::fs::read_to_string(process_path(pid, "status"))
        .ok()
        .and_then(|status| memmon::report::model::maps::Counters::from_status(status.lines()))
        .map_or(0, |counters| counters.resident())
}

/// Grows the module's per-CPU rings to 1 MiB each when they are smaller (at start, and
/// when the module is back after an rmmod), and says so in the log: what
/// `memmon record` does ([`ProcInterface::grow_rings`]).
pub fn grow_rings(proc: &ProcInterface) -> RingGrowth {
    let growth = proc.grow_rings(RING_TARGET_BYTES);
    if let Some(line) = ring_growth_line(&growth, &proc.path("buflen")) {
        eprintln!("{line}");
    }
    growth
}

/// The log line of [`grow_rings`], if any.
pub fn ring_growth_line(growth: &RingGrowth, buflen: &std::path::Path) -> Option<String> {
    let (_, text) = growth.describe(buflen, "the agent")?;
    Some(format!("memmon agent: {text}"))
}
