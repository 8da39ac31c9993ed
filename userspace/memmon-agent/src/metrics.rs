//! The Prometheus metrics (`prometheus-client`), served on `/metrics` by a small HTTP
//! server (`tiny_http`, its own thread: it answers while the agent's loop is busy) and
//! optionally written to a file. The list is in docs/agent.md.
//!
//! The per-cgroup families are set afresh at every refresh from the models (a cgroup no
//! longer watched has no series left); the agent-wide counters count as things happen.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::model::CgroupModel;

/// Label pairs of a series.
pub type Labels = Vec<(String, String)>;

/// Every metric of the agent.
pub struct Metrics {
    registry: Registry,
    resident: Family<Labels, Gauge>,
    faults: Family<Labels, Counter>,
    calls: Family<Labels, Counter>,
    site_resident: Family<Labels, Gauge>,
    processes: Family<Labels, Gauge>,
    sites: Family<Labels, Gauge>,
    sites_dropped: Family<Labels, Counter>,
    faults_dropped: Family<Labels, Counter>,
    stacks_shed: Family<Labels, Counter>,
    processes_adopted: Family<Labels, Counter>,
    adopted_resident: Family<Labels, Gauge>,
    /// Faults the module did not record of processes it could not keep apart (`0/0
    /// dropped faults=N`: no process, no cgroup).
    pub faults_dropped_unattributed: Counter,
    /// Events read from the module.
    pub events: Counter,
    /// Events the module overwrote before the agent read them (`lost` lines).
    pub events_lost: Counter,
    /// Calls and faults the module's probes missed (`probe_missed` of its stats, summed
    /// over module loads).
    pub probes_missed: Counter,
    /// Snapshots written, by reason.
    pub snapshots_written: Family<Labels, Counter>,
    /// Snapshots dropped (spool full, or a write error).
    pub snapshots_dropped: Counter,
    /// Old snapshot files removed under the spool's cap.
    pub snapshots_rotated: Counter,
    /// 1 while a full disk stops the spool.
    pub spool_full: Gauge,
    /// Bytes in the spool.
    pub spool_bytes: Gauge,
    /// Times the module went away (rmmod) while the agent ran.
    pub module_gaps: Counter,
    /// Seconds without the module, summed.
    pub module_gap_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    /// 1 while the module is there and the agent reads it.
    pub module_up: Gauge,
    /// Cgroups watched.
    pub watched_cgroups: Gauge,
    /// The agent's resident memory (VmRSS).
    pub agent_resident: Gauge,
    /// The agent's CPU time (user + system).
    pub agent_cpu: Counter<f64, std::sync::atomic::AtomicU64>,
    /// The agent's CPU time at the last refresh.
    cpu_before: f64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

impl Metrics {
    /// The metrics, registered.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let metrics = Metrics {
            registry: Registry::default(),
            resident: Family::default(),
            faults: Family::default(),
            calls: Family::default(),
            site_resident: Family::default(),
            processes: Family::default(),
            sites: Family::default(),
            sites_dropped: Family::default(),
            faults_dropped: Family::default(),
            stacks_shed: Family::default(),
            processes_adopted: Family::default(),
            adopted_resident: Family::default(),
            faults_dropped_unattributed: Counter::default(),
            events: Counter::default(),
            events_lost: Counter::default(),
            probes_missed: Counter::default(),
            snapshots_written: Family::default(),
            snapshots_dropped: Counter::default(),
            snapshots_rotated: Counter::default(),
            spool_full: Gauge::default(),
            spool_bytes: Gauge::default(),
            module_gaps: Counter::default(),
            module_gap_seconds: Counter::default(),
            module_up: Gauge::default(),
            watched_cgroups: Gauge::default(),
            agent_resident: Gauge::default(),
            agent_cpu: Counter::default(),
            cpu_before: 0.0,
        };
        let m = &metrics;
        registry.register(
            "memmon_resident_bytes",
            "Resident bytes of the cgroup's processes by mapping class, as memmon's model has them",
            m.resident.clone(),
        );
        registry.register(
            "memmon_faults",
            "Page faults of the cgroup's processes by type since the agent watched it",
            m.faults.clone(),
        );
        registry.register(
            "memmon_mm_calls",
            "mm system calls of the cgroup's processes by call since the agent watched it",
            m.calls.clone(),
        );
        registry.register(
            "memmon_site_resident_bytes",
            "Resident bytes of the cgroup's largest own-code sites (rank 1 the largest)",
            m.site_resident.clone(),
        );
        registry.register(
            "memmon_processes",
            "Live processes of the cgroup in the model",
            m.processes.clone(),
        );
        registry.register(
            "memmon_model_sites",
            "Sites (call stacks) the cgroup's model holds",
            m.sites.clone(),
        );
        registry.register(
            "memmon_sites_dropped",
            "Sites the cgroup's model dropped at its cap, least recently used first",
            m.sites_dropped.clone(),
        );
        registry.register(
            "memmon_faults_dropped",
            "Faults of the cgroup's processes the module did not record while its ring was nearly full (dropped lines)",
            m.faults_dropped.clone(),
        );
        registry.register(
            "memmon_faults_dropped_unattributed",
            "Faults the module did not record of processes it could not keep apart (0/0 dropped lines)",
            m.faults_dropped_unattributed.clone(),
        );
        registry.register(
            "memmon_stacks_shed",
            "Events of the cgroup's processes whose call stack the module cut short or did not walk (stack_end=shed)",
            m.stacks_shed.clone(),
        );
        registry.register(
            "memmon_processes_adopted",
            "Processes of the cgroup found already running (at the agent's start, the cgroup's discovery, a move into it, the module's return): their faults before were not seen",
            m.processes_adopted.clone(),
        );
        registry.register(
            "memmon_adopted_resident_bytes",
            "Resident bytes the cgroup's live adopted processes held when the agent found them (their status' RssAnon + RssFile + RssShmem then)",
            m.adopted_resident.clone(),
        );
        registry.register(
            "memmon_events",
            "Events read from the module",
            m.events.clone(),
        );
        registry.register(
            "memmon_events_lost",
            "Events the module overwrote before the agent read them",
            m.events_lost.clone(),
        );
        registry.register(
            "memmon_probes_missed",
            "Calls and faults the module's probes missed (its probe_missed)",
            m.probes_missed.clone(),
        );
        registry.register(
            "memmon_snapshots_written",
            "Snapshot files written to the spool, by reason",
            m.snapshots_written.clone(),
        );
        registry.register(
            "memmon_snapshots_dropped",
            "Snapshots not written (spool full or a write error)",
            m.snapshots_dropped.clone(),
        );
        registry.register(
            "memmon_snapshots_rotated",
            "Old snapshot files removed under the spool's size cap",
            m.snapshots_rotated.clone(),
        );
        registry.register(
            "memmon_spool_full",
            "1 while a full disk stops the spool",
            m.spool_full.clone(),
        );
        registry.register(
            "memmon_spool_bytes",
            "Bytes in the spool",
            m.spool_bytes.clone(),
        );
        registry.register(
            "memmon_module_gaps",
            "Times the memmon module went away while the agent ran",
            m.module_gaps.clone(),
        );
        registry.register(
            "memmon_module_gap_seconds",
            "Seconds the agent ran without the module",
            m.module_gap_seconds.clone(),
        );
        registry.register(
            "memmon_module_up",
            "1 while the module is loaded and read",
            m.module_up.clone(),
        );
        registry.register(
            "memmon_watched_cgroups",
            "Cgroups the agent watches",
            m.watched_cgroups.clone(),
        );
        registry.register(
            "memmon_agent_resident_bytes",
            "The agent's own resident memory",
            m.agent_resident.clone(),
        );
        registry.register(
            "memmon_agent_cpu_seconds",
            "The agent's own CPU time, user and system",
            m.agent_cpu.clone(),
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// Sets the per-cgroup series from the models; `cgroup` labels are the cgroups' names
    /// as in `/proc/PID/cgroup`.
    pub fn refresh_cgroups<'m>(&self, models: impl Iterator<Item = &'m CgroupModel>) {
        for family in [
            &self.resident,
            &self.site_resident,
            &self.processes,
            &self.sites,
        ] {
            family.clear();
        }
        self.faults.clear();
        self.calls.clear();
        self.sites_dropped.clear();
        self.faults_dropped.clear();
        self.stacks_shed.clear();
        let mut count = 0;
        for model in models {
            count += 1;
            let cgroup = model.name.as_str();
            let picture = model.picture();
            for (class, bytes) in model.resident_by_class(&picture) {
                self.resident
                    .get_or_create(&labels(&[("cgroup", cgroup), ("class", class)]))
                    .set(i64::try_from(bytes).unwrap_or(i64::MAX));
            }
            for (fault_type, count) in memmon::FaultType::ALL.iter().zip(model.faults) {
                self.faults
                    .get_or_create(&labels(&[
                        ("cgroup", cgroup),
                        ("type", fault_type.as_str()),
                    ]))
                    .inc_by(count);
            }
            for (call, count) in &model.calls {
                self.calls
                    .get_or_create(&labels(&[("cgroup", cgroup), ("call", call)]))
                    .inc_by(*count);
            }
            for (rank, site) in model.top_sites.iter().enumerate() {
                let rank = (rank + 1).to_string();
                self.site_resident
                    .get_or_create(&labels(&[
                        ("cgroup", cgroup),
                        ("rank", &rank),
                        ("site", &site.name),
                    ]))
                    .set(i64::try_from(site.resident).unwrap_or(i64::MAX));
            }
            let label = labels(&[("cgroup", cgroup)]);
            self.processes
                .get_or_create(&label)
                .set(model.processes() as i64);
            let (kept, dropped) = model.sites();
            self.sites.get_or_create(&label).set(kept as i64);
            self.sites_dropped.get_or_create(&label).inc_by(dropped);
            self.faults_dropped
                .get_or_create(&label)
                .inc_by(model.faults_dropped);
            self.stacks_shed
                .get_or_create(&label)
                .inc_by(model.stacks_shed);
        }
        self.watched_cgroups.set(count);
    }

    /// Sets the per-cgroup series of adopted processes from `(cgroup, processes adopted so
    /// far, resident bytes its live adopted processes held when adopted)`.
    pub fn refresh_adoptions<'c>(&self, rows: impl Iterator<Item = (&'c str, u64, u64)>) {
        self.processes_adopted.clear();
        self.adopted_resident.clear();
        for (cgroup, count, bytes) in rows {
            let label = labels(&[("cgroup", cgroup)]);
            self.processes_adopted.get_or_create(&label).inc_by(count);
            self.adopted_resident
                .get_or_create(&label)
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }

    /// Reads the agent's own RSS and CPU time.
    pub fn refresh_self(&mut self) {
        if let Some(bytes) = self_resident() {
            self.agent_resident.set(bytes as i64);
        }
        if let Some(seconds) = self_cpu_seconds() {
            if seconds > self.cpu_before {
                self.agent_cpu.inc_by(seconds - self.cpu_before);
                self.cpu_before = seconds;
            }
        }
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// The agent's VmRSS in bytes.
pub fn self_resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The agent's user + system CPU seconds.
pub fn self_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name's closing parenthesis: fields 3 on; utime and stime are 14
    // and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100);
    Some(ticks as f64 / per_second as f64)
}

/// The metrics as the HTTP thread and the loop share them.
pub type Shared = Arc<Mutex<Metrics>>;

/// Serves `GET /metrics` on `address` from a thread of its own; other paths get 404.
pub fn serve(address: SocketAddr, metrics: Shared) -> Result<Arc<tiny_http::Server>> {
    let server = Arc::new(
        tiny_http::Server::http(address)
            .map_err(|error| anyhow!("cannot listen on {address}: {error}"))?,
    );
    let serving = Arc::clone(&server);
    std::thread::Builder::new()
        .name("memmon-metrics".to_owned())
        .spawn(move || {
            for request in serving.incoming_requests() {
                let path = request.url().split('?').next().unwrap_or("");
                let response = if path == "/metrics" {
                    let text = match metrics.lock() {
                        Ok(metrics) => metrics.encode(),
                        Err(poisoned) => poisoned.into_inner().encode(),
                    };
                    let header = tiny_http::Header::from_bytes(
                        &b"Content-Type"[..],
                        &b"application/openmetrics-text; version=1.0.0; charset=utf-8"[..],
                    );
                    let response = tiny_http::Response::from_string(text);
                    match header {
                        Ok(header) => response.with_header(header),
                        Err(()) => response,
                    }
                } else {
                    tiny_http::Response::from_string("memmon agent: see /metrics\n")
                        .with_status_code(404)
                };
                // A client that went away: nothing to do.
                let _ = request.respond(response);
            }
        })?;
    Ok(server)
}

/// Writes the metrics text to `path` (through a temporary file and a rename).
pub fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}
