//! The live loops: `run`, `record` and `tail`.
//!
//! `run` and `record` follow a set of processes: the started command (or the pids given),
//! plus every child a followed process forks (`fork ... watched=1`): the default for a
//! command, `--no-follow` to watch it alone; with `-p`, only with `--follow`.
//! Events older than the moment memmon added the processes to the watch set are skipped
//! (they belong to an earlier process with a reused pid), and so are other processes'
//! events, except `mark` (a marker written from anywhere is part of the trace) and `lost`.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use memmon::capture::control::process_path;
use memmon::capture::file::{exec_image_missing, write_header};
use memmon::capture::python_codes::PythonCodes;
use memmon::capture::resident::{start_snapshots, wait_for_image};
use memmon::report::model::replay::{Replay, ReplayOptions};
use memmon::{
    fault_frame, parse_line, Event, EventKind, ModuleParams, ProcInterface, Snapshot,
    SnapshotSource, StackEnd, Timestamp,
};
use nix::sys::signal::Signal;

use crate::child::{HeldChild, Stop};
use crate::live::{catch_interrupts, interrupt_count, interrupted, monotonic_now, LiveEvents};
use crate::output::Printer;
use crate::sysinfo::{
    write_capture_header, write_perf_map, write_snapshots, write_start_snapshots,
};
use crate::unwind::UnwindTables;
use memmon::report::output::summary::summary;

/// Poll timeout: how often the loops look at the child and at Ctrl-C.
pub const POLL_MS: u16 = 100;
/// How long to wait for the command's `exit` event after reaping it, with nothing made
/// before the reap left to read.
const EXIT_EVENT_GRACE: Duration = Duration::from_secs(1);
/// How long the last reads after Ctrl-C wait for more events.
const DRAIN_POLL_MS: u16 = 20;
/// Events of not-yet-known pids kept in case a `fork ... watched=1` names them later
/// (a forked child can run, and fault, before its parent's fork event is recorded).
const ORPHAN_LIMIT: usize = 4096;

/// Where the followed processes' events go.
enum Sink {
    /// Printed (human, JSON or raw).
    Print(Printer),
    /// Written to a capture file with snapshots.
    Capture(Box<dyn Write>),
}

impl Sink {
    /// Writes an event; false when the output went away.
    fn event(&mut self, line: &str, event: &Event) -> Result<bool> {
        match self {
            Sink::Print(printer) => printer.print(event),
            Sink::Capture(out) => {
                write_line(out, line)?;
                Ok(true)
            }
        }
    }

    fn snapshot(&mut self, pid: u32, reason: &str) -> Result<()> {
        if let Sink::Capture(out) = self {
            write_snapshots(out, pid, reason).context("cannot write the capture file")?;
        }
        Ok(())
    }

    /// The start snapshots of a process that was running before memmon watched it, with
    /// the pages it held ([`write_start_snapshots`]); the maps and pages snapshots when
    /// written.
    fn start_snapshots(&mut self, pid: u32) -> Result<Option<[Snapshot; 2]>> {
        match self {
            Sink::Capture(out) => {
                write_start_snapshots(out, pid).context("cannot write the capture file")
            }
            Sink::Print(_) => Ok(None),
        }
    }

    fn flush(&mut self) -> Result<bool> {
        match self {
            Sink::Print(printer) => printer.flush(),
            Sink::Capture(out) => {
                out.flush().context("cannot write the capture file")?;
                Ok(true)
            }
        }
    }
}

/// Writes one raw event line to a capture file.
fn write_line(out: &mut dyn Write, line: &str) -> Result<()> {
    out.write_all(line.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .context("cannot write the capture file")
}

/// The summary printed at the end, which counts the lost, dropped and shed events itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndSummary {
    /// None (`--quiet`).
    None,
    /// From a model kept while following (`run`).
    Live,
    /// From the capture file, by the caller, once it is written (`record`).
    FromCapture,
}

/// What the module could not give a recording (issue 50), counted as the stream says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Losses {
    /// Events overwritten before memmon read them (`lost count=N`: any kind, no process).
    pub lost: u64,
    /// Faults the module did not record, by process (`PID/PID dropped faults=N`).
    pub dropped: BTreeMap<u32, u64>,
    /// Faults not recorded of processes the module could not keep apart (`0/0 dropped`).
    pub dropped_unattributed: u64,
    /// Events whose stack the module cut short or did not walk (`stack_end=shed`).
    pub shed: u64,
    /// Children forked by followed processes that memmon did not watch (`fork child=N
    /// watched=0`), by parent.
    pub unwatched_children: BTreeMap<u32, u64>,
    /// Why those were not watched, as the summary says it (`--no-follow`).
    pub not_followed: &'static str,
}

impl Default for Losses {
    fn default() -> Losses {
        Losses {
            lost: 0,
            dropped: BTreeMap::new(),
            dropped_unattributed: 0,
            shed: 0,
            unwatched_children: BTreeMap::new(),
            not_followed: "--no-follow",
        }
    }
}

impl Losses {
    /// The end-of-record lines (each `memmon: ...`), naming processes by `comm` where
    /// known; `advice` follows the lost events' line. With `summarised`, the summary that
    /// follows counts the lost, dropped and shed events itself (its `incomplete:` line):
    /// only the advice and the children not watched are said here.
    pub fn lines(
        &self,
        comm: &dyn Fn(u32) -> Option<String>,
        advice: &str,
        summarised: bool,
    ) -> Vec<String> {
        let named = |pid: u32| match comm(pid) {
            Some(name) => format!("{pid} ({name})"),
            None => pid.to_string(),
        };
        let mut lines = Vec::new();
        if summarised {
            if self.lost > 0 && !advice.is_empty() {
                lines.push(format!("memmon: events were lost{advice}",));
            }
        } else {
            self.loss_lines(&named, advice, &mut lines);
        }
        for (&pid, &children) in &self.unwatched_children {
            lines.push(format!(
                "memmon: {} forked {children} {} memmon did not watch ({})",
                named(pid),
                if children == 1 { "child" } else { "children" },
                self.not_followed
            ));
        }
        lines
    }

    /// The lost, dropped and shed events' lines.
    fn loss_lines(&self, named: &dyn Fn(u32) -> String, advice: &str, lines: &mut Vec<String>) {
        if self.lost > 0 {
            lines.push(format!(
                "memmon: {} events were lost (overwritten before memmon read them){advice}",
                self.lost
            ));
        }
        let dropped: u64 = self.dropped.values().sum::<u64>() + self.dropped_unattributed;
        if dropped > 0 {
            let mut by: Vec<String> = self
                .dropped
                .iter()
                .map(|(&pid, &faults)| format!("{} {faults}", named(pid)))
                .collect();
            if self.dropped_unattributed > 0 {
                by.push(format!(
                    "processes it could not keep apart {}",
                    self.dropped_unattributed
                ));
            }
            lines.push(format!(
                "memmon: {dropped} faults were not recorded (the module dropped them while its \
                 ring was nearly full): {}",
                by.join(", ")
            ));
        }
        if self.shed > 0 {
            lines.push(format!(
                "memmon: {} call stacks were cut short or not walked (stack_end=shed): their \
                 events are whole, their sites shorter",
                self.shed
            ));
        }
    }
}

/// Follows a set of processes on the live stream.
struct Monitor {
    sink: Sink,
    /// Processes whose events are kept and that have not exited yet.
    followed: BTreeSet<u32>,
    /// Every process followed so far (their perf maps go into the capture at the end).
    ever_followed: BTreeSet<u32>,
    /// Events before this time predate the watch.
    since: Timestamp,
    /// Events of unknown pids, in case they turn out to be followed children.
    orphans: VecDeque<(u32, String)>,
    /// The started command, if any, and whether its `exit` event was seen.
    root: Option<u32>,
    root_exit_seen: bool,
    output_gone: bool,
    /// The model behind the end-of-run summary (None with --quiet, or when the summary is
    /// made from the capture file).
    summary: Option<Box<Replay>>,
    /// Which summary follows the end's lines.
    end_summary: EndSummary,
    /// The unwind tables of the followed processes.
    tables: UnwindTables,
    /// The Python code objects named in the capture.
    python_codes: PythonCodes,
    /// `record --cgroup`: every process in the stream is followed from its first event.
    follow_any: bool,
    /// Processes whose cgroup is in the capture (`# cgroup PID PATH`).
    cgroup_noted: BTreeSet<u32>,
    /// The started command's snapshots, taken while it was stopped at each of its execs,
    /// to go into the capture after its `exec` events, in order (instead of ones taken
    /// then: late, or after it exited).
    exec_snapshots: VecDeque<(u32, Vec<u8>)>,
    /// What the module could not give.
    losses: Losses,
    /// Command names of the processes seen (from `exec`, else /proc/PID/comm when first
    /// needed).
    comms: HashMap<u32, String>,
    /// Processes whose exec snapshot showed the new image not mapped yet: it is taken again
    /// before their next event.
    exec_pending: BTreeSet<u32>,
}

impl Monitor {
    /// Copies the perf maps (`/tmp/perf-PID.map`) of the followed processes into the
    /// capture, for the report to name the code they generated; with `not_before`, not
    /// a file last written before then (a stale map of an earlier process of that pid).
    fn perf_maps(&mut self, not_before: Option<SystemTime>) -> Result<()> {
        if let Sink::Capture(out) = &mut self.sink {
            for &pid in &self.ever_followed {
                write_perf_map(out, pid, not_before).context("cannot write the capture file")?;
            }
        }
        Ok(())
    }

    fn new(sink: Sink, since: Timestamp, end_summary: EndSummary) -> Monitor {
        Monitor {
            sink,
            followed: BTreeSet::new(),
            ever_followed: BTreeSet::new(),
            since,
            orphans: VecDeque::new(),
            root: None,
            root_exit_seen: false,
            output_gone: false,
            summary: (end_summary == EndSummary::Live)
                .then(|| Box::new(Replay::new(ReplayOptions::default()))),
            end_summary,
            tables: UnwindTables::off(),
            python_codes: Default::default(),
            follow_any: false,
            cgroup_noted: BTreeSet::new(),
            exec_snapshots: VecDeque::new(),
            losses: Losses::default(),
            comms: HashMap::new(),
            exec_pending: BTreeSet::new(),
        }
    }

    /// Writes the cgroup of `pid` (`# cgroup PID PATH`, from /proc/PID/cgroup) into the
    /// capture, once per process, when it first appears.
    fn note_cgroup(&mut self, pid: u32) -> Result<()> {
        if let Sink::Capture(out) = &mut self.sink {
            if self.cgroup_noted.insert(pid) {
                if let Some(path) = memmon::capture::cgroup::process_cgroup(pid) {
                    let value = format!("{pid} {path}");
                    write_header(out, memmon::capture::cgroup::CGROUP_HEADER, &value)
                        .context("cannot write the capture file")?;
                }
            }
        }
        Ok(())
    }

    /// Snapshots `pid` into the capture (if any) and its maps into the summary's model.
    fn snapshot(&mut self, pid: u32, reason: &str) -> Result<()> {
        self.note_cgroup(pid)?;
        self.sink.snapshot(pid, reason)?;
        if let Some(replay) = &mut self.summary {
            if let Ok(maps) = std::fs::read_to_string(process_path(pid, "maps")) {
                replay.snapshot(&Snapshot {
                    source: SnapshotSource::Maps,
                    pid,
                    time: monotonic_now(),
                    reason: reason.to_owned(),
                    note: None,
                    lines: maps.lines().map(str::to_owned).collect(),
                });
            }
        }
        Ok(())
    }

    /// The start of a process that was running before memmon watched it (`record -p`, a
    /// process of the cgroup): its maps and the pages they held, into the capture (if any)
    /// and the summary's model; its status into the capture.
    fn start_snapshot(&mut self, pid: u32) -> Result<()> {
        self.note_cgroup(pid)?;
        let written = self.sink.start_snapshots(pid)?;
        if let Some(replay) = &mut self.summary {
            let taken = written.or_else(|| start_snapshots(pid, monotonic_now()));
            for snapshot in taken.iter().flatten() {
                replay.snapshot(snapshot);
            }
        }
        Ok(())
    }

    /// The exec snapshot of `pid`: taken now, unless its maps show the new image not mapped
    /// yet ([`exec_image_missing`]), then before its next event.
    fn exec_snapshot(&mut self, pid: u32) -> Result<()> {
        // The exec event is stamped when the new mm is installed; the loader then moves the
        // stack and maps the segments and the .bss: read the maps once it has.
        wait_for_image(pid);
        let maps = std::fs::read_to_string(process_path(pid, "maps")).unwrap_or_default();
        if exec_image_missing(&maps) {
            self.exec_pending.insert(pid);
            return Ok(());
        }
        self.exec_pending.remove(&pid);
        self.snapshot(pid, "exec")
    }

    /// Before an event of `pid` other than its exec: the exec snapshot put off.
    fn exec_retry(&mut self, pid: u32) -> Result<()> {
        if self.exec_pending.remove(&pid) {
            self.snapshot(pid, "exec")?;
        }
        Ok(())
    }

    /// The command name of `pid`: from its exec, else from /proc now.
    fn comm(&mut self, pid: u32) -> Option<String> {
        if let Some(name) = self.comms.get(&pid) {
            return Some(name.clone());
        }
        let name = std::fs::read_to_string(process_path(pid, "comm")).ok()?;
        let name = name.trim_end().to_owned();
        self.comms.insert(pid, name.clone());
        Some(name)
    }

    /// Prints what the module could not give (lost events, dropped faults, shed stacks,
    /// children not watched).
    fn report_losses(&mut self, proc: &ProcInterface) {
        let pids: Vec<u32> = self
            .losses
            .dropped
            .keys()
            .chain(self.losses.unwatched_children.keys())
            .copied()
            .collect();
        for pid in pids {
            self.comm(pid);
        }
        let advice = lost_advice(proc);
        let comms = &self.comms;
        let summarised = self.end_summary != EndSummary::None;
        for line in self
            .losses
            .lines(&|pid| comms.get(&pid).cloned(), &advice, summarised)
        {
            eprintln!("{line}");
        }
    }

    /// Prints the summary to stderr.
    fn print_summary(&mut self) {
        if let Some(mut replay) = self.summary.take() {
            replay.end_live();
            eprint!("{}", summary(&replay.finish()));
        }
    }

    /// Reads what is available (waiting up to `timeout_ms`) and handles it; returns how
    /// many of the lines read were stamped before `before` (all of them without it).
    fn pump(
        &mut self,
        events: &mut LiveEvents,
        timeout_ms: u16,
        before: Option<Timestamp>,
    ) -> Result<usize> {
        let mut lines = 0usize;
        events.poll_lines(timeout_ms, |line| {
            if before.is_none_or(|before| line_time(line).is_some_and(|time| time < before)) {
                lines += 1;
            }
            self.handle(line)
        })?;
        self.tables.flush();
        self.python_codes.new_batch();
        if !self.sink.flush()? {
            self.output_gone = true;
        }
        Ok(lines)
    }

    /// After the watch ended (Ctrl-C): reads what the module still holds of the events made
    /// before `until` (when the processes were unwatched), until a poll brings none of them,
    /// or another Ctrl-C; the stream may go on with other watchers' events. A child whose
    /// fork was still unread is followed here and unwatched. With `--cgroup` nothing is
    /// unwatched by pid: the cgroup's processes stopped being watched with it, and a process
    /// first seen here is one that someone else watches (by hand, say).
    fn drain(
        &mut self,
        events: &mut LiveEvents,
        proc: &ProcInterface,
        until: Timestamp,
    ) -> Result<()> {
        let interrupts = interrupt_count();
        let mut known = self.followed.clone();
        // A lone event reaches readers a wake-up delay (about 1 ms) after it was made.
        while self.pump(events, DRAIN_POLL_MS, Some(until))? > 0 && interrupt_count() == interrupts
        {
            if !self.follow_any {
                for &pid in self.followed.difference(&known) {
                    let _ = proc.unwatch(&[pid]);
                }
            }
            known = self.followed.clone();
        }
        Ok(())
    }

    fn emit(&mut self, line: &str, event: &Event) -> Result<()> {
        if let (Sink::Capture(out), Some(_), false) =
            (&mut self.sink, &event.python, self.output_gone)
        {
            self.python_codes.before_line(
                event.pid,
                line,
                self.tables.python(event.pid),
                &mut |key, value| write_header(out, key, value),
            )?;
        }
        if !self.output_gone && !self.sink.event(line, event)? {
            self.output_gone = true;
        }
        if let Some(replay) = &mut self.summary {
            replay.event(event);
        }
        Ok(())
    }

    fn handle(&mut self, line: &str) -> Result<()> {
        // Fast path for faults (most of the stream) into a capture file, which takes the
        // raw line: faults drive no decision, so time and pid are all that is needed.
        // (Not with --cgroup, where a fault can be a new process's first event.)
        if self.summary.is_none() && !self.follow_any {
            if let (Sink::Capture(out), Some((time, pid))) = (&mut self.sink, fault_frame(line)) {
                if time < self.since {
                    return Ok(());
                }
                if !self.followed.contains(&pid) {
                    self.orphan(pid, line);
                    return Ok(());
                }
                // A process whose exec snapshot was put off takes the slow path below,
                // which takes it first.
                if !self.exec_pending.contains(&pid) {
                    if line.contains("stack_end=shed") {
                        self.losses.shed += 1;
                    }
                    if !self.output_gone {
                        self.python_codes.before_line(
                            pid,
                            line,
                            self.tables.python(pid),
                            &mut |key, value| write_header(out, key, value),
                        )?;
                        write_line(out.as_mut(), line)?;
                    }
                    return Ok(());
                }
            }
        }
        let event = match parse_line(line) {
            Ok(event) => event,
            Err(error) => {
                eprintln!("memmon: warning: skipping undecodable event ({error}): {line}");
                return Ok(());
            }
        };
        match event.kind {
            EventKind::Lost { count } => {
                self.losses.lost += count;
                return self.emit(line, &event);
            }
            // Faults of processes the module could not keep apart: like `lost`, always.
            EventKind::Dropped { faults } if event.pid == 0 => {
                self.losses.dropped_unattributed += faults;
                return self.emit(line, &event);
            }
            _ if event.time < self.since => return Ok(()),
            EventKind::Mark { .. } => {
                self.emit(line, &event)?;
                let followed: Vec<u32> = self.followed.iter().copied().collect();
                for pid in followed {
                    self.snapshot(pid, "mark")?;
                }
                return Ok(());
            }
            _ => {}
        }
        if !self.followed.contains(&event.pid) {
            if self.follow_any && event.pid != 0 {
                self.adopt(event.pid)?;
            } else {
                self.orphan(event.pid, line);
                return Ok(());
            }
        }
        if !self.exec_pending.is_empty() && !matches!(event.kind, EventKind::Exec { .. }) {
            self.exec_retry(event.pid)?;
        }
        self.emit(line, &event)?;
        self.tables.note(&event);
        if event
            .stack
            .as_ref()
            .is_some_and(|stack| stack.1 == StackEnd::Shed)
        {
            self.losses.shed += 1;
        }
        match &event.kind {
            EventKind::Exec { comm, .. } => {
                self.python_codes.forget(event.pid);
                self.comms.insert(event.pid, comm.to_string_lossy());
            }
            EventKind::Dropped { faults } => {
                *self.losses.dropped.entry(event.pid).or_insert(0) += faults;
            }
            EventKind::Fork { watched: false, .. } => {
                *self.losses.unwatched_children.entry(event.pid).or_insert(0) += 1;
                self.comm(event.pid);
            }
            _ => {}
        }
        match event.kind {
            EventKind::Fork {
                child,
                watched: true,
            } => {
                self.followed.insert(child);
                self.ever_followed.insert(child);
                self.note_cgroup(child)?;
                let (early, others): (VecDeque<_>, VecDeque<_>) =
                    self.orphans.drain(..).partition(|(pid, _)| *pid == child);
                self.orphans = others;
                for (_, line) in early {
                    self.handle(&line)?;
                }
            }
            EventKind::Exec { .. }
                if self
                    .exec_snapshots
                    .front()
                    .is_some_and(|(pid, _)| *pid == event.pid) =>
            {
                if let (Some((_, bytes)), Sink::Capture(out)) =
                    (self.exec_snapshots.pop_front(), &mut self.sink)
                {
                    out.write_all(&bytes)
                        .context("cannot write the capture file")?;
                }
            }
            EventKind::Exec { .. } => {
                // A child's new program (cc1plus under g++) waits while its tables and its
                // libraries' load: its start-up's faults are unwound from the first.
                // Not the command memmon started: its own child, whose exit is memmon's to
                // take (HeldChild), and which it stops at its first exec already.
                if self.tables.loads() && self.root != Some(event.pid) {
                    let tables = &mut self.tables;
                    crate::child::while_stopped(event.pid, || tables.sync_at_exec(event.pid));
                }
                self.exec_snapshot(event.pid)?
            }
            EventKind::Exit { .. } => {
                // Put off and never taken: the process is gone, and so is its image.
                self.exec_pending.remove(&event.pid);
                self.python_codes.forget(event.pid);
                self.followed.remove(&event.pid);
                if self.root == Some(event.pid) {
                    self.root_exit_seen = true;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `record --cgroup`: a process of the watched cgroup seen for the first time is
    /// followed from now on, with its cgroup, maps and the pages it holds in the capture.
    fn adopt(&mut self, pid: u32) -> Result<()> {
        self.followed.insert(pid);
        self.ever_followed.insert(pid);
        self.start_snapshot(pid)?;
        self.tables.sync(pid);
        Ok(())
    }

    /// Keeps an event of a pid not (yet) followed.
    fn orphan(&mut self, pid: u32, line: &str) {
        if self.orphans.len() == ORPHAN_LIMIT {
            self.orphans.pop_front();
        }
        self.orphans.push_back((pid, line.to_owned()));
    }

    /// Stops watching the processes still followed; says so for followed children.
    fn unwatch_remaining(&self, proc: &ProcInterface) {
        let remaining: Vec<u32> = self.followed.iter().copied().collect();
        if remaining.is_empty() {
            return;
        }
        let others: Vec<String> = remaining
            .iter()
            .filter(|pid| Some(**pid) != self.root)
            .map(u32::to_string)
            .collect();
        if !others.is_empty() {
            eprintln!(
                "memmon: note: no longer watching {} (still running)",
                others.join(", ")
            );
        }
        for pid in remaining {
            // One at a time: a process that exited meanwhile (ESRCH) must not block the rest.
            let _ = proc.unwatch(&[pid]);
        }
    }
}

/// The time stamp a line of the stream starts with.
fn line_time(line: &str) -> Option<Timestamp> {
    Timestamp::parse(line.trim_start_matches(' ').split(' ').next()?)
}

/// The module's count of calls and faults its probes missed (`probe_missed`), if it has one.
pub fn probe_missed(proc: &ProcInterface) -> Option<u64> {
    proc.stats()
        .ok()
        .and_then(|stats| stats.get_u64("probe_missed"))
}

/// Says how many calls and faults the module's probes missed since `before` (a count of
/// `probe_missed`): they are in no event and in no `lost` line, so they are said here.
pub fn report_missed(proc: &ProcInterface, before: Option<u64>) {
    let (Some(before), Some(now)) = (before, probe_missed(proc)) else {
        return;
    };
    let missed = now.saturating_sub(before);
    if missed > 0 {
        eprintln!(
            "memmon: {missed} calls or faults of watched or other processes were not recorded \
             meanwhile: the module's probes missed them (probe_missed in /proc/memmon/stats; \
             docs/events.md)"
        );
    }
}

/// Says how many events a live reader lost, and how to lose none: larger rings.
pub fn report_lost(proc: &ProcInterface, lost: u64) {
    if lost == 0 {
        return;
    }
    let advice = lost_advice(proc);
    eprintln!("memmon: {lost} events were lost (overwritten before memmon read them){advice}");
}

/// What to do about lost events, from the module's stats: the rings' size and how to grow
/// them (`buflen`), or, from an older module, its `buflen` and the load option.
pub fn lost_advice(proc: &ProcInterface) -> String {
    let Ok(stats) = proc.stats() else {
        return String::new();
    };
    let buflen = proc.path("buflen");
    match (stats.get_u64("ring_bytes"), stats.get_u64("rings")) {
        (Some(ring_bytes), Some(rings)) if buflen.exists() => format!(
            ": the module's rings are {ring_bytes} bytes per CPU; grow them (echo {} > {}) to \
             keep up with this workload",
            rings
                .max(1)
                .saturating_mul(ring_bytes.max(1 << 20).saturating_mul(4)),
            buflen.display()
        ),
        _ => match stats.get_u64("buflen") {
            Some(buflen) => format!(
                ": the module's buffer is buflen={buflen} bytes; load it with a larger one \
                 (insmod memmon.ko buflen=4194304) to keep up with this workload"
            ),
            None => String::new(),
        },
    }
}

/// `run`: start `command` watched and print its events until it exits.
pub fn run_command(
    proc: &ProcInterface,
    command: &[String],
    follow: bool,
    printer: Printer,
    summary: bool,
) -> Result<ExitCode> {
    let end = if summary {
        EndSummary::Live
    } else {
        EndSummary::None
    };
    follow_command(proc, command, follow, Sink::Print(printer), end)
}

/// `record -- CMD`: like `run`, into a capture file with snapshots.
pub fn record_command(
    proc: &ProcInterface,
    params: &ModuleParams,
    command: &[String],
    follow: bool,
    mut out: Box<dyn Write>,
    end: EndSummary,
) -> Result<ExitCode> {
    write_capture_header(&mut out, proc, params, ("command", &command.join(" ")))
        .context("cannot write the capture file")?;
    follow_command(proc, command, follow, Sink::Capture(out), end)
}

fn follow_command(
    proc: &ProcInterface,
    command: &[String],
    follow: bool,
    sink: Sink,
    end: EndSummary,
) -> Result<ExitCode> {
    // Open the stream before the command can run, so none of its events are missed.
    let mut events = LiveEvents::open(proc)?;
    let missed_before = probe_missed(proc);
    catch_interrupts()?;
    // A second early: file times come from the coarse clock.
    let started = SystemTime::now() - Duration::from_secs(1);
    let mut child = HeldChild::spawn(command)?;
    let pid = child.pid_u32();
    let since = monotonic_now();
    let watched = if follow {
        proc.watch_following(&[pid])
    } else {
        proc.watch(&[pid])
    };
    if let Err(error) = watched {
        child.abandon();
        return Err(error.into());
    }
    let mut monitor = Monitor::new(sink, since, end);
    if let Some(replay) = &mut monitor.summary {
        replay.header("command", &command.join(" "));
    }
    monitor.followed.insert(pid);
    monitor.ever_followed.insert(pid);
    monitor.root = Some(pid);
    // The stub has not exec'd yet: this is the process's initial state. Its tables are
    // loaded at its exec.
    monitor.snapshot(pid, "start")?;
    monitor.tables = UnwindTables::open(proc, crate::unwind::enabled());
    // The program's maps are snapshotted and its tables loaded while it is stopped at its
    // exec, so that its first faults are unwound with them, and a short program's maps are
    // not lost to its exit; the ranges of the libraries it needs are given while it is
    // stopped in the dynamic loader once they are mapped (before their constructors run)
    // and again at its entry point, so that their code and its own are unwound from their
    // first fault.
    let released = child.release_at_exec(|stop| match stop {
        Stop::Exec => {
            if matches!(monitor.sink, Sink::Capture(_)) {
                let mut bytes = Vec::new();
                if write_snapshots(&mut bytes, pid, "exec").is_ok() {
                    monitor.exec_snapshots.push_back((pid, bytes));
                }
            }
            monitor.tables.sync_at_exec(pid);
        }
        Stop::Loader | Stop::Entry => monitor.tables.sync(pid),
    });
    if let Err(error) = released {
        let _ = proc.unwatch(&[pid]);
        return Err(error);
    }

    let mut exit_code = None;
    // When the command was reaped (the stream's clock), and since when nothing made before
    // that was read.
    let mut reaped: Option<(Timestamp, Instant)> = None;
    let mut interrupts_forwarded = 0;
    loop {
        let behind = monitor.pump(&mut events, POLL_MS, reaped.map(|(time, _)| time))?;
        if let Some((_, idle_since)) = &mut reaped {
            if behind > 0 {
                // Still reading what was made before the command exited: its exit event is
                // behind that, however long a slow machine takes to get there.
                *idle_since = Instant::now();
            }
            if interrupt_count() > interrupts_forwarded {
                // A Ctrl-C after the command ended: stop waiting.
                break;
            }
        }
        let interrupts = interrupt_count();
        if interrupts > interrupts_forwarded && exit_code.is_none() {
            // The terminal's Ctrl-C usually reached the command too; forward it in case
            // memmon alone was signalled, then keep draining until it exits. A second
            // one kills a command that ignores SIGINT.
            let signal = if interrupts == 1 {
                Signal::SIGINT
            } else {
                Signal::SIGKILL
            };
            child.signal(signal);
            interrupts_forwarded = interrupts;
        }
        if exit_code.is_none() && child.has_exited()? {
            // Before reaping: the pid cannot be reused while memmon reads /proc/PID.
            monitor.sink.snapshot(pid, "end")?;
            exit_code = Some(child.reap()?);
            reaped = Some((monotonic_now(), Instant::now()));
        }
        if let Some((_, idle_since)) = reaped {
            if monitor.root_exit_seen || idle_since.elapsed() > EXIT_EVENT_GRACE {
                break;
            }
        }
    }
    if !monitor.root_exit_seen {
        eprintln!("memmon: warning: the command's exit event did not arrive");
    }
    if interrupted() {
        eprintln!("memmon: interrupted");
    }
    monitor.tables.finish();
    monitor.unwatch_remaining(proc);
    monitor.perf_maps(Some(started))?;
    if let Sink::Capture(out) = &mut monitor.sink {
        memmon::capture::file::write_header(out, "end", &monotonic_now().to_string())?;
    }
    monitor.sink.flush()?;
    monitor.report_losses(proc);
    report_missed(proc, missed_before);
    monitor.print_summary();
    let code = exit_code.unwrap_or(1);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// `record -p PID...`: record running processes until they exit or Ctrl-C.
pub fn record_pids(
    proc: &ProcInterface,
    params: &ModuleParams,
    pids: &[u32],
    follow: bool,
    mut out: Box<dyn Write>,
    end: EndSummary,
) -> Result<ExitCode> {
    let pid_list: Vec<String> = pids.iter().map(u32::to_string).collect();
    write_capture_header(&mut out, proc, params, ("pids", &pid_list.join(" ")))
        .context("cannot write the capture file")?;
    let mut events = LiveEvents::open(proc)?;
    let missed_before = probe_missed(proc);
    catch_interrupts()?;
    let since = monotonic_now();
    if follow {
        proc.watch_following(pids)?;
    } else {
        proc.watch(pids)?;
    }
    let mut monitor = Monitor::new(Sink::Capture(out), since, end);
    monitor.losses.not_followed = "record -p without --follow";
    monitor.followed.extend(pids);
    monitor.ever_followed.extend(pids);
    monitor.tables = UnwindTables::open(proc, crate::unwind::enabled());
    for &pid in pids {
        monitor.start_snapshot(pid)?;
        monitor.tables.sync(pid);
    }
    while !interrupted() && !monitor.followed.is_empty() {
        monitor.pump(&mut events, POLL_MS, None)?;
    }
    monitor.tables.finish();
    monitor.unwatch_remaining(proc);
    // Interrupted: the events made before the processes were unwatched.
    monitor.drain(&mut events, proc, monotonic_now())?;
    let still_running: Vec<u32> = monitor.followed.iter().copied().collect();
    for pid in still_running {
        monitor.snapshot(pid, "end")?;
    }
    // Processes recorded by pid may have written their maps before the recording.
    monitor.perf_maps(None)?;
    if let Sink::Capture(out) = &mut monitor.sink {
        memmon::capture::file::write_header(out, "end", &monotonic_now().to_string())?;
    }
    monitor.sink.flush()?;
    if interrupted() {
        eprintln!("memmon: interrupted, recording stopped");
    }
    monitor.report_losses(proc);
    report_missed(proc, missed_before);
    monitor.print_summary();
    Ok(ExitCode::SUCCESS)
}

/// `record --cgroup PATH`: record every process of the cgroup (and below it), those in it
/// now and those that start in it or move into it, until Ctrl-C; the cgroup is unwatched
/// at the end.
pub fn record_cgroup(
    proc: &ProcInterface,
    params: &ModuleParams,
    cgroup: &Path,
    mut out: Box<dyn Write>,
    end: EndSummary,
) -> Result<ExitCode> {
    let shown = cgroup.display().to_string();
    write_capture_header(&mut out, proc, params, ("cgroup-watched", &shown))
        .context("cannot write the capture file")?;
    follow_cgroup(proc, cgroup, Sink::Capture(out), end)?;
    eprintln!("memmon: interrupted, recording stopped");
    Ok(ExitCode::SUCCESS)
}

/// `run --cgroup PATH`: print the events of every process of the cgroup (and below it)
/// until Ctrl-C, then the summary; the cgroup is unwatched at the end.
pub fn run_cgroup(
    proc: &ProcInterface,
    cgroup: &Path,
    printer: Printer,
    summary: bool,
) -> Result<ExitCode> {
    let end = if summary {
        EndSummary::Live
    } else {
        EndSummary::None
    };
    follow_cgroup(proc, cgroup, Sink::Print(printer), end)?;
    eprintln!("memmon: interrupted");
    Ok(ExitCode::SUCCESS)
}

/// Follows every process of `cgroup` on the live stream into `sink` until Ctrl-C.
fn follow_cgroup(proc: &ProcInterface, cgroup: &Path, sink: Sink, end: EndSummary) -> Result<()> {
    let shown = cgroup.display().to_string();
    let mut events = LiveEvents::open(proc)?;
    let missed_before = probe_missed(proc);
    catch_interrupts()?;
    let since = monotonic_now();
    proc.watch_cgroup(cgroup)?;
    let mut monitor = Monitor::new(sink, since, end);
    if let Some(replay) = &mut monitor.summary {
        replay.header("cgroup-watched", &shown);
    }
    monitor.follow_any = true;
    monitor.tables = UnwindTables::open(proc, crate::unwind::enabled());
    while !interrupted() {
        monitor.pump(&mut events, POLL_MS, None)?;
    }
    monitor.tables.finish();
    if let Err(error) = proc.unwatch_cgroup(cgroup) {
        eprintln!("memmon: warning: cannot stop watching {shown}: {error}");
    }
    // The events made before the cgroup was unwatched.
    monitor.drain(&mut events, proc, monotonic_now())?;
    let still_running: Vec<u32> = monitor.followed.iter().copied().collect();
    for pid in still_running {
        monitor.snapshot(pid, "end")?;
    }
    monitor.perf_maps(None)?;
    if let Sink::Capture(out) = &mut monitor.sink {
        memmon::capture::file::write_header(out, "end", &monotonic_now().to_string())?;
    }
    monitor.sink.flush()?;
    monitor.report_losses(proc);
    report_missed(proc, missed_before);
    monitor.print_summary();
    Ok(())
}

/// Creates an output file, buffered.
pub fn create_file(path: &Path) -> Result<Box<dyn Write>> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    // Large: the live loops write whole reads at once and flush after each.
    Ok(Box::new(io::BufWriter::with_capacity(1 << 20, file)))
}

/// What `record` was asked.
pub struct Recording {
    /// The capture file.
    pub output: PathBuf,
    /// Also the children (the default with a command; with pids, `--follow`).
    pub follow: bool,
    /// No summary.
    pub quiet: bool,
    /// `--stacks N`.
    pub stacks: Option<u32>,
    /// `--sample MS`.
    pub sample: Option<u32>,
    /// `--symbolize`: name the frames here and store the names in the capture.
    pub symbolize: bool,
    /// `-p PID...`.
    pub pids: Vec<u32>,
    /// `--cgroup PATH` (checked).
    pub cgroup: Option<PathBuf>,
    /// The command, when no pids.
    pub command: Vec<String>,
}

/// `record`: the capture of the pids or of the command, with `stack_depth` and
/// `sample_ms` set for its duration, then the summary (from the file).
pub fn record(proc: &ProcInterface, params: &ModuleParams, asked: Recording) -> Result<ExitCode> {
    let cgroup = asked
        .cgroup
        .as_deref()
        .map(memmon::capture::cgroup::validate)
        .transpose()?;
    let file = create_file(&asked.output)?;
    crate::params::grow_rings(proc);
    let stacks = crate::params::stack_depth(
        params,
        asked.stacks.unwrap_or(crate::params::DEFAULT_STACK_DEPTH),
        asked.stacks.is_some(),
    );
    let sample = crate::params::sample_period(params, proc, asked.sample)?;
    let end = if asked.quiet {
        EndSummary::None
    } else {
        EndSummary::FromCapture
    };
    let code = if let Some(cgroup) = &cgroup {
        record_cgroup(proc, params, cgroup, file, end)
    } else if asked.command.is_empty() {
        record_pids(proc, params, &asked.pids, asked.follow, file, end)
    } else {
        record_command(proc, params, &asked.command, asked.follow, file, end)
    }?;
    drop(sample);
    drop(stacks);
    if asked.symbolize {
        let options = memmon::report::symbolize::symbols::SymbolOptions {
            debuginfod: memmon::report::symbolize::debuginfod::DebuginfodOptions::from_env(None),
            ..Default::default()
        };
        match memmon::report::symbolize_capture(&asked.output, &options) {
            Ok(count) => eprintln!(
                "memmon: {count} frames symbolised into {}",
                asked.output.display()
            ),
            Err(error) => eprintln!("memmon: warning: no symbols stored: {error}"),
        }
    }
    if !asked.quiet {
        // From the file, after recording: the summary costs the recording nothing.
        match memmon::report::analyze(&[asked.output], ReplayOptions::default()) {
            Ok(analysis) => eprint!("{}", summary(&analysis)),
            Err(error) => eprintln!("memmon: warning: no summary: {error}"),
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;

    /// A capture file in memory, readable after the monitor has written it.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn recording(pids: &[u32]) -> (Monitor, Shared) {
        let capture = Shared::default();
        let mut monitor = Monitor::new(
            Sink::Capture(Box::new(capture.clone())),
            Timestamp::parse("1.000000000").unwrap(),
            EndSummary::None,
        );
        monitor.followed.extend(pids);
        monitor.ever_followed.extend(pids);
        (monitor, capture)
    }

    #[test]
    fn losses_are_counted_by_kind_and_process() {
        // Pids far above pid_max: /proc has no such process, so names come from execs.
        let (mut monitor, capture) = recording(&[4_000_100]);
        for line in [
            "2.000000000 4000100/4000100 exec comm=cc1plus filename=/usr/lib/gcc/cc1plus",
            "2.100000000 4000100/4000100 fault type=anon access=W addr=0x7f0000000000 ip=0x400100 stack=0x400100,0x400200",
            "2.100000001 4000100/4000100 fault type=anon access=W addr=0x7f0000001000 ip=0x400100 stack=0x400100 stack_end=shed",
            "2.100000002 4000100/4000100 fault type=anon access=W addr=0x7f0000002000 ip=0x400100 stack_end=shed",
            "2.100000003 4000100/4000100 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000200000 stack_end=shed",
            "2.200000000 4000100/4000100 dropped faults=3733",
            "2.300000000 4000100/4000100 dropped faults=1000",
            "2.300000001 0/0 dropped faults=12",
            "2.400000000 0/0 lost count=250",
            "2.400000001 0/0 lost count=5",
            "2.500000000 4000100/4000100 fork child=4000101 watched=0",
            "2.500000001 4000100/4000100 fork child=4000102 watched=0",
            // Another process's drop, not followed: not counted.
            "2.600000000 4000200/4000200 dropped faults=99",
        ] {
            monitor.handle(line).unwrap();
        }
        let losses = &monitor.losses;
        assert_eq!(losses.lost, 255);
        assert_eq!(losses.dropped, BTreeMap::from([(4_000_100, 4733)]));
        assert_eq!(losses.dropped_unattributed, 12);
        assert_eq!(losses.shed, 3);
        assert_eq!(losses.unwatched_children, BTreeMap::from([(4_000_100, 2)]));
        let comms = monitor.comms.clone();
        let lines = losses.lines(&|pid| comms.get(&pid).cloned(), ": grow them", false);
        assert_eq!(
            lines,
            [
                "memmon: 255 events were lost (overwritten before memmon read them): grow them",
                "memmon: 4745 faults were not recorded (the module dropped them while its ring \
                 was nearly full): 4000100 (cc1plus) 4733, processes it could not keep apart 12",
                "memmon: 3 call stacks were cut short or not walked (stack_end=shed): their \
                 events are whole, their sites shorter",
                "memmon: 4000100 (cc1plus) forked 2 children memmon did not watch (--no-follow)",
            ]
        );
        // With the summary, which counts them itself: the advice and the children only.
        assert_eq!(
            losses.lines(&|pid| comms.get(&pid).cloned(), ": grow them", true),
            [
                "memmon: events were lost: grow them",
                "memmon: 4000100 (cc1plus) forked 2 children memmon did not watch (--no-follow)",
            ]
        );
        // Every line of the followed process went into the capture, the drops and losses
        // too; the stranger's did not.
        monitor.sink.flush().unwrap();
        let text = String::from_utf8(capture.0.borrow().clone()).unwrap();
        assert_eq!(
            text.lines()
                .filter(|l| l.contains("stack_end=shed"))
                .count(),
            3
        );
        assert_eq!(text.lines().filter(|l| l.contains(" dropped ")).count(), 3);
        assert!(!text.contains("4000200"));
    }

    #[test]
    fn no_losses_no_lines() {
        assert!(Losses::default().lines(&|_| None, "", false).is_empty());
    }

    #[test]
    fn exec_snapshot_put_off_is_taken_before_the_next_event() {
        // This test's own process stands for a child whose exec snapshot showed no image.
        let pid = std::process::id();
        let (mut monitor, capture) = recording(&[pid]);
        monitor.exec_pending.insert(pid);
        let fault = format!(
            "2.000000000 {pid}/{pid} fault type=anon access=W addr=0x7f0000000000 ip=0x400100"
        );
        monitor.handle(&fault).unwrap();
        monitor.handle(&fault).unwrap();
        assert!(monitor.exec_pending.is_empty());
        let text = String::from_utf8(capture.0.borrow().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let snapshot = lines
            .iter()
            .position(|l| l.starts_with(&format!("# snapshot maps {pid} ")) && l.ends_with(" exec"))
            .expect("an exec snapshot");
        let first_fault = lines.iter().position(|l| *l == fault).unwrap();
        assert!(snapshot < first_fault, "{text}");
        // Taken once, both faults written.
        assert_eq!(lines.iter().filter(|l| l.ends_with(" exec")).count(), 2); // maps, status
        assert_eq!(lines.iter().filter(|l| **l == fault).count(), 2);
        // The snapshot names this test's own executable: the image is mapped.
        let own = std::env::current_exe().unwrap();
        assert!(text.contains(own.to_str().unwrap()), "{text}");
    }
}
