//! Capture-file headers (kernel, module) and /proc/PID snapshots.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use memmon::capture::control::process_path;
use memmon::capture::file::{write_header, write_snapshot, CAPTURE_VERSION};
use memmon::capture::resident::start_snapshots;
use memmon::report::model::maps::MapsLine;
use memmon::report::model::picture::PageSize;
use memmon::{ModuleParams, ProcInterface, Snapshot, SnapshotSource};
use memmon_objects::elf::build_id;

use crate::live::monotonic_now;

/// Writes the header lines of a capture file, asking the module under `proc` and `params`.
pub fn write_capture_header(
    out: &mut impl Write,
    proc: &ProcInterface,
    params: &ModuleParams,
    what: (&str, &str),
) -> io::Result<()> {
    write_header(out, "memmon-capture", &CAPTURE_VERSION.to_string())?;
    let kernel = nix::sys::utsname::uname()
        .map(|uts| uts.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    write_header(out, "kernel", &kernel)?;
    if let Some(build) = kernel_build() {
        write_header(out, "kernel-build", &build)?;
    }
    // The kernel's page size: every page count of the capture is in these (16 KiB on
    // Debian's arm64-16k kernel).
    write_header(out, "page-size", &PageSize::of_this_machine().to_string())?;
    let version = params.version().unwrap_or_else(|| "unknown".to_owned());
    write_header(out, "module-version", &version)?;
    // The module reports its buflen in its stats; a sysfs parameter file, where a kernel
    // exposes one, says the same.
    let buflen = proc
        .stats()
        .ok()
        .and_then(|stats| stats.get("buflen").map(str::to_owned))
        .or_else(|| params.get("buflen"));
    if let Some(buflen) = buflen {
        write_header(out, "buflen", &buflen)?;
    }
    // Which fault source the module chose on this kernel (docs/events.md, "Fault sources").
    if let Some(source) = proc
        .stats()
        .ok()
        .and_then(|stats| stats.get("fault_source").map(str::to_owned))
    {
        write_header(out, "fault-source", &source)?;
    }
    // Access sampling: the period and the per-generation page budget, so the
    // report can tell generations that hit the budget.
    for (key, name) in [("sample-ms", "sample_ms"), ("sample-pages", "sample_pages")] {
        if let Some(value) = params.get(name) {
            write_header(out, key, &value)?;
        }
    }
    write_header(out, "start", &monotonic_now().to_string())?;
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    write_header(
        out,
        "start-unix",
        &format!("{}.{:09}", wall.as_secs(), wall.subsec_nanos()),
    )?;
    write_header(out, what.0, what.1)
}

/// When process `pid` started, in nanoseconds since the epoch (at the clock tick's
/// resolution): `/proc/PID/stat`'s `starttime` (clock ticks since boot, on CLOCK_BOOTTIME)
/// put on the wall clock through the two clocks read now.
pub fn process_start_unix_ns(pid: u32) -> Option<i64> {
    use nix::time::{clock_gettime, ClockId};
    let stat = std::fs::read_to_string(process_path(pid, "stat")).ok()?;
    // After the command's closing parenthesis: field 3 (state) on; starttime is field 22.
    let (_, rest) = stat.rsplit_once(')')?;
    let ticks: u64 = rest.split_ascii_whitespace().nth(19)?.parse().ok()?;
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|hz| u64::try_from(hz).ok())
        .filter(|&hz| hz > 0)?;
    let nanos = |time: nix::sys::time::TimeSpec| {
        i128::from(time.tv_sec()) * 1_000_000_000 + i128::from(time.tv_nsec())
    };
    let boot_now = nanos(clock_gettime(ClockId::CLOCK_BOOTTIME).ok()?);
    let wall_now = nanos(clock_gettime(ClockId::CLOCK_REALTIME).ok()?);
    let started = i128::from(ticks) * 1_000_000_000 / i128::from(per_second);
    i64::try_from(wall_now - (boot_now - started)).ok()
}

/// The running kernel's build (`uname -v`: its build number, and on Debian the package
/// version, e.g. `#1 SMP PREEMPT_DYNAMIC Debian 7.3.4-1~bpo13+1 (2026-11-20)`).
pub fn kernel_build() -> Option<String> {
    nix::sys::utsname::uname()
        .ok()
        .map(|uts| uts.version().to_string_lossy().into_owned())
}

/// Writes snapshots of `/proc/PID/maps` and of the `Vm*`/`Rss*` lines of
/// `/proc/PID/status`, with a note when the process has no address space left.
pub fn write_snapshots(out: &mut impl Write, pid: u32, reason: &str) -> io::Result<()> {
    let time = monotonic_now();
    let maps = std::fs::read_to_string(process_path(pid, "maps"));
    if let Ok(text) = &maps {
        write_build_ids(out, pid, text.lines())?;
    }
    let (maps_note, maps_lines) = snapshot_lines(&maps, |_| true);
    write_snapshot(
        out,
        SnapshotSource::Maps,
        pid,
        time,
        reason,
        maps_note.as_deref(),
        maps_lines,
    )?;
    write_status_snapshot(out, pid, time, reason)
}

/// Writes the start snapshots of a process that was running before memmon watched it
/// (`record -p`, a process `record --cgroup` finds): its maps and the pages they held, of
/// one read ([`memmon::capture::resident`]), then its status. Returns the maps and pages
/// snapshots written, for a model kept meanwhile; `None` when the process could not be
/// read (then the snapshots say why, as [`write_snapshots`] writes them).
pub fn write_start_snapshots(out: &mut impl Write, pid: u32) -> io::Result<Option<[Snapshot; 2]>> {
    let time = monotonic_now();
    let Some(snapshots) = start_snapshots(pid, time) else {
        write_snapshots(out, pid, "start")?;
        return Ok(None);
    };
    // When it started: the fleet's lifetime at each snapshot (`memmon export`).
    if let Some(start) = process_start_unix_ns(pid) {
        write_header(out, "process-start", &format!("{pid} {start}"))?;
    }
    write_build_ids(out, pid, snapshots[0].lines.iter().map(String::as_str))?;
    for snapshot in &snapshots {
        write_snapshot(
            out,
            snapshot.source,
            pid,
            snapshot.time,
            &snapshot.reason,
            snapshot.note.as_deref(),
            snapshot.lines.iter().map(String::as_str),
        )?;
    }
    write_status_snapshot(out, pid, time, "start")?;
    Ok(Some(snapshots))
}

/// Writes a snapshot of the `Vm*`/`Rss*` lines of `/proc/PID/status`.
fn write_status_snapshot(
    out: &mut impl Write,
    pid: u32,
    time: memmon::Timestamp,
    reason: &str,
) -> io::Result<()> {
    let status = std::fs::read_to_string(process_path(pid, "status"));
    let (status_note, status_lines) = snapshot_lines(&status, |line| {
        line.starts_with("Vm") || line.starts_with("Rss")
    });
    write_snapshot(
        out,
        SnapshotSource::Status,
        pid,
        time,
        reason,
        status_note.as_deref(),
        status_lines,
    )
}

/// The perf map a process writes for the code it generates (the convention of perf,
/// followed by Node's --perf-basic-prof, the JVM's perf-map-agent, Python's -X perf,
/// LuaJIT and .NET).
pub fn perf_map_path(pid: u32) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/tmp/perf-{pid}.map"))
}

/// Writes a `perf-map` snapshot of the process's perf map, when it has one (and, with
/// `not_before`, it was written since then).
pub fn write_perf_map(
    out: &mut impl Write,
    pid: u32,
    not_before: Option<SystemTime>,
) -> io::Result<()> {
    let path = perf_map_path(pid);
    if let Some(not_before) = not_before {
        let written = std::fs::metadata(&path).and_then(|m| m.modified());
        match written {
            Ok(time) if time >= not_before => {}
            _ => return Ok(()),
        }
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    write_snapshot(
        out,
        SnapshotSource::PerfMap,
        pid,
        monotonic_now(),
        "end",
        None,
        lines,
    )
}

/// Writes `# buildid HEX PATH` for each mapped file not named before in this capture
/// (read through /proc/PID/map_files when possible, so a file replaced since is not
/// mistaken for the mapped one), so that `memmon report` can match binaries by build ID.
fn write_build_ids<'l>(
    out: &mut impl Write,
    pid: u32,
    maps: impl IntoIterator<Item = &'l str>,
) -> io::Result<()> {
    static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let Ok(mut seen) = SEEN.lock() else {
        return Ok(());
    };
    for line in maps {
        let Some(entry) = MapsLine::parse(line) else {
            continue;
        };
        if !entry.path.starts_with('/') || entry.inode == 0 || seen.contains(&entry.path) {
            continue;
        }
        seen.insert(entry.path.clone());
        let by_fd = process_path(pid, &format!("map_files/{:x}-{:x}", entry.start, entry.end));
        let id = build_id(&by_fd).or_else(|| build_id(Path::new(&entry.path)));
        if let Some(id) = id {
            writeln!(out, "# buildid {id} {}", entry.path)?;
        }
    }
    Ok(())
}

fn snapshot_lines(
    text: &io::Result<String>,
    keep: impl Fn(&str) -> bool,
) -> (Option<String>, Vec<&str>) {
    match text {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().filter(|line| keep(line)).collect();
            let note = lines
                .is_empty()
                .then(|| "empty: the process has no address space (it has exited)".to_owned());
            (note, lines)
        }
        Err(error) => (Some(format!("unavailable: {error}")), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall_now_ns() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as i64)
    }

    /// A child started between two readings of the wall clock started between them, to the
    /// clock tick (10 ms at 100 Hz) and the two clocks' reading apart.
    #[test]
    fn a_process_started_now_started_now() {
        let before = wall_now_ns();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let after = wall_now_ns();
        let start = process_start_unix_ns(child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        let start = start.unwrap();
        let tick = 1_000_000_000
            / nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
                .unwrap()
                .unwrap();
        assert!(
            start >= before - tick - 1_000_000 && start <= after + 1_000_000,
            "{before} <= {start} <= {after} (tick {tick} ns)"
        );
        assert_eq!(process_start_unix_ns(u32::MAX), None);
    }
}
