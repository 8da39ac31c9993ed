//! The agent's own CPU per event, on this machine (not a VM's emulated CPU): the report
//! benchmark's generated 1 M-event capture (94 faults with 8-frame stacks, 2 mmap,
//! 2 munmap, 1 madvise and 1 brk in every 100 events) through what the agent does with
//! each line it reads (`Agent::handle`: the line decoded in the read buffer and applied to
//! its cgroup's capped model), and what it does every 10 s of a stream of
//! 10 000 events per second (every 100 000 events here): a sample of the top sites, a
//! pprof snapshot encoded, the metrics refreshed and encoded (the agent snapshots every
//! `interval`, 600 s by default: this is 60 times more often). Prints the process CPU
//! time per event and what it makes at 10 000 events per second, for the best and the
//! median of 5 runs. Not a test: `cargo bench -p memmon-agent --bench agent_cpu`, run by
//! `make bench`.

#[path = "../../memmon/benches/support/generate.rs"]
mod generate;

use std::collections::BTreeMap;
use std::time::Duration;

use memmon::parse_line;
use memmon_agent::metrics::Metrics;
use memmon_agent::model::CgroupModel;
use memmon_agent::profile::{self, SnapshotInfo};
use nix::time::{clock_gettime, ClockId};

/// Events between two samples: 10 s at 10 000 events per second.
const SAMPLE_EVENTS: usize = 100_000;

fn cpu_now() -> Duration {
    clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).map_or(Duration::ZERO, Duration::from)
}

/// One run over the capture's lines: CPU time per event.
fn run(lines: &[&str], snapshot_lines: &[String]) -> f64 {
    let mut model = CgroupModel::new("/system.slice/bench.service", 4096);
    let metrics = Metrics::new();
    let labels = BTreeMap::from([("host".to_owned(), "bench".to_owned())]);
    let start = cpu_now();
    // The start snapshot of the process's maps, as the agent takes it when it adopts one.
    let snapshot_text = snapshot_lines.join("\n");
    let mut reader = memmon::CaptureReader::new(snapshot_text.as_bytes());
    while let Some(Ok((_, record))) = reader.next_record() {
        model.record(&record);
    }
    let mut events = 0;
    let mut snapshot_bytes = 0;
    for chunk in lines.chunks(SAMPLE_EVENTS) {
        for line in chunk {
            if let Ok(event) = parse_line(line) {
                model.event(&event);
                events += 1;
            }
        }
        model.sample(10.0, 10);
        let profile = profile::build(
            model.replay(),
            &SnapshotInfo {
                labels: &labels,
                time_nanos: 0,
            },
        );
        snapshot_bytes += profile::encode(&profile).map_or(0, |bytes| bytes.len());
        metrics.refresh_cgroups(std::iter::once(&model));
        snapshot_bytes += metrics.encode().len();
    }
    let cpu = cpu_now().saturating_sub(start);
    assert!(events > 0 && snapshot_bytes > 0);
    cpu.as_nanos() as f64 / events as f64
}

fn main() {
    let capture = generate::generate_capture();
    let (snapshot, events): (Vec<&str>, Vec<&str>) =
        capture.lines().partition(|line| line.starts_with('#'));
    let snapshot: Vec<String> = snapshot.into_iter().map(str::to_owned).collect();
    let mut per_event: Vec<f64> = (0..5).map(|_| run(&events, &snapshot)).collect();
    per_event.sort_by(f64::total_cmp);
    let core_at = |ns: f64| ns * 10_000.0 / 1e9 * 100.0;
    println!(
        "agent CPU per event ({} events, 5 runs): best {:.0} ns, median {:.0} ns; at 10 000 \
         events/s: {:.2} % of a core (best), {:.2} % (median)",
        events.len(),
        per_event[0],
        per_event[2],
        core_at(per_event[0]),
        core_at(per_event[2])
    );
}
