//! The live loops: `run`, `record` and `tail`.
//!
//! `run` and `record` follow a set of processes: the started command (or the pids given),
//! plus, with `--follow`, every child a followed process forks (`fork ... watched=1`).
//! Events older than the moment memmon added the processes to the watch set are skipped
//! (they belong to an earlier process with a reused pid), and so are other processes'
//! events, except `mark` (a marker written from anywhere is part of the trace) and `lost`.

use std::collections::{BTreeSet, VecDeque};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use memmon::report::model::replay::{Replay, ReplayOptions};
use memmon::{parse_line, Event, EventKind, ProcInterface, Snapshot, SnapshotSource, Timestamp};
use nix::sys::signal::Signal;

use crate::child::HeldChild;
use crate::live::{catch_interrupts, interrupt_count, interrupted, monotonic_now, LiveEvents};
use crate::output::{Filter, Printer};
use crate::sysinfo::{write_capture_header, write_snapshots};

/// Poll timeout: how often the loops look at the child and at Ctrl-C.
const POLL_MS: u16 = 100;
/// How long to wait for the command's `exit` event after reaping it.
const EXIT_EVENT_GRACE: Duration = Duration::from_secs(1);
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

/// Time and pid of a `fault` line that [`parse_line`] accepts, found without building
/// the event (no allocation); None for other kinds and for lines `parse_line` would
/// reject or that need its full work (left to it, which also gives the warning).
fn fault_frame(line: &str) -> Option<(Timestamp, u32)> {
    // As `parse_line`'s `splitn(4, ' ')`, on bytes (the frame is ASCII).
    let bytes = line.as_bytes();
    let time_end = bytes.iter().position(|&byte| byte == b' ')?;
    let ids_end = time_end
        + 1
        + bytes[time_end + 1..]
            .iter()
            .position(|&byte| byte == b' ')?;
    let rest = line[ids_end + 1..].strip_prefix("fault")?;
    let rest = match rest.as_bytes().first() {
        None => rest,
        Some(b' ') => &rest[1..],
        Some(_) => return None,
    };
    let (pid, tid) = line[time_end + 1..ids_end].split_once('/')?;
    parse_u32(tid)?;
    let frame = (Timestamp::parse(&line[..time_end])?, parse_u32(pid)?);
    fault_fields_valid(rest).then_some(frame)
}

/// Whether `parse_line` accepts these fields of a fault line: every field `key=value`,
/// among the first 16 (the parser keeps no more; the first occurrence of a key counts)
/// `type`, `access`, `addr` and `ip` present and well-formed, `user`/`huge`/`major`/
/// `retry` 0 or 1, `pages` and `gen` decimal and `stack` hex addresses joined by `,` when
/// present.
fn fault_fields_valid(rest: &str) -> bool {
    let mut values: [Option<&str>; 11] = [None; 11];
    for (index, token) in rest.split_ascii_whitespace().enumerate() {
        let Some(equals) = token.bytes().position(|byte| byte == b'=') else {
            return false;
        };
        if index < 16 {
            let key = &token[..equals];
            let slot = match key {
                "type" => 0,
                "access" => 1,
                "addr" => 2,
                "ip" => 3,
                "user" => 4,
                "huge" => 5,
                "major" => 6,
                "retry" => 7,
                "pages" => 8,
                "stack" => 9,
                "gen" => 10,
                _ => continue,
            };
            values[slot].get_or_insert(&token[equals + 1..]);
        }
    }
    let [fault_type, access, addr, ip, user, huge, major, retry, pages, stack, gen] = values;
    let switch = |value: Option<&str>| matches!(value, None | Some("0") | Some("1"));
    fault_type.and_then(memmon::FaultType::parse).is_some()
        && matches!(access, Some("R" | "W" | "X"))
        && addr.is_some_and(is_hex)
        && ip.is_some_and(is_hex)
        && switch(user)
        && switch(huge)
        && switch(major)
        && switch(retry)
        && pages.is_none_or(|pages| parse_dec(pages).is_some())
        && gen.is_none_or(|gen| parse_dec(gen).is_some())
        && stack.is_none_or(is_stack)
}

/// `0x` and 1 to 16 hex digits (the parser's hex value).
fn is_hex(text: &str) -> bool {
    text.strip_prefix("0x").is_some_and(|digits| {
        (1..=16).contains(&digits.len()) && digits.bytes().all(|byte| byte.is_ascii_hexdigit())
    })
}

/// Empty, or hex values joined by `,` (the parser's stack), in one pass over the bytes.
fn is_stack(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes.get(at..at + 2) != Some(b"0x") {
            return false;
        }
        at += 2;
        let digits = bytes[at..]
            .iter()
            .position(|&byte| !byte.is_ascii_hexdigit())
            .unwrap_or(bytes.len() - at);
        if !(1..=16).contains(&digits) {
            return false;
        }
        at += digits;
        match bytes.get(at) {
            None => return true,
            Some(b',') if at + 1 < bytes.len() => at += 1,
            Some(_) => return false,
        }
    }
    true
}

/// A decimal u64: digits only, no sign (like the parser's).
fn parse_dec(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A decimal u32: digits only, no sign (like the parser's).
fn parse_u32(text: &str) -> Option<u32> {
    u32::try_from(parse_dec(text)?).ok()
}

/// Follows a set of processes on the live stream.
struct Monitor {
    sink: Sink,
    /// Processes whose events are kept and that have not exited yet.
    followed: BTreeSet<u32>,
    /// Events before this time predate the watch.
    since: Timestamp,
    /// Events of unknown pids, in case they turn out to be followed children.
    orphans: VecDeque<(u32, String)>,
    lost: u64,
    /// The started command, if any, and whether its `exit` event was seen.
    root: Option<u32>,
    root_exit_seen: bool,
    output_gone: bool,
    /// The model behind the end-of-run summary (None with --quiet).
    summary: Option<Box<Replay>>,
}

impl Monitor {
    fn new(sink: Sink, since: Timestamp, summary: bool) -> Monitor {
        Monitor {
            sink,
            followed: BTreeSet::new(),
            since,
            orphans: VecDeque::new(),
            lost: 0,
            root: None,
            root_exit_seen: false,
            output_gone: false,
            summary: summary.then(|| Box::new(Replay::new(ReplayOptions::default()))),
        }
    }

    /// Snapshots `pid` into the capture (if any) and its maps into the summary's model.
    fn snapshot(&mut self, pid: u32, reason: &str) -> Result<()> {
        self.sink.snapshot(pid, reason)?;
        if let Some(replay) = &mut self.summary {
            if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
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

    /// Prints the summary to stderr.
    fn print_summary(&mut self) {
        if let Some(mut replay) = self.summary.take() {
            replay.end_live();
            eprint!(
                "{}",
                memmon::report::output::summary::summary(&replay.finish())
            );
        }
    }

    /// Reads what is available (waiting up to the poll timeout) and handles it.
    fn pump(&mut self, events: &mut LiveEvents) -> Result<()> {
        events.poll_lines(POLL_MS, |line| self.handle(line))?;
        if !self.sink.flush()? {
            self.output_gone = true;
        }
        Ok(())
    }

    fn emit(&mut self, line: &str, event: &Event) -> Result<()> {
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
        if self.summary.is_none() {
            if let Sink::Capture(out) = &mut self.sink {
                if let Some((time, pid)) = fault_frame(line) {
                    if time < self.since {
                        return Ok(());
                    }
                    if !self.followed.contains(&pid) {
                        self.orphan(pid, line);
                        return Ok(());
                    }
                    if !self.output_gone {
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
                self.lost += count;
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
            self.orphan(event.pid, line);
            return Ok(());
        }
        self.emit(line, &event)?;
        match event.kind {
            EventKind::Fork {
                child,
                watched: true,
            } => {
                self.followed.insert(child);
                let (early, others): (VecDeque<_>, VecDeque<_>) =
                    self.orphans.drain(..).partition(|(pid, _)| *pid == child);
                self.orphans = others;
                for (_, line) in early {
                    self.handle(&line)?;
                }
            }
            EventKind::Exec { .. } => self.snapshot(event.pid, "exec")?,
            EventKind::Exit { .. } => {
                self.followed.remove(&event.pid);
                if self.root == Some(event.pid) {
                    self.root_exit_seen = true;
                }
            }
            _ => {}
        }
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

/// Says how many events a live reader lost, and how to lose none: a larger `buflen`.
fn report_lost(proc: &ProcInterface, lost: u64) {
    if lost == 0 {
        return;
    }
    let advice = match proc.stats().ok().and_then(|stats| stats.get_u64("buflen")) {
        Some(buflen) => format!(
            ": the module's buffer is buflen={buflen} bytes; load it with a larger one (insmod \
             memmon.ko buflen=4194304) to keep up with this workload"
        ),
        None => String::new(),
    };
    eprintln!("memmon: {lost} events were lost (overwritten before memmon read them){advice}");
}

/// `run`: start `command` watched and print its events until it exits.
pub fn run_command(
    proc: &ProcInterface,
    command: &[String],
    follow: bool,
    printer: Printer,
    summary: bool,
) -> Result<ExitCode> {
    follow_command(proc, command, follow, Sink::Print(printer), summary)
}

/// `record -- CMD`: like `run`, into a capture file with snapshots.
pub fn record_command(
    proc: &ProcInterface,
    command: &[String],
    follow: bool,
    mut out: Box<dyn Write>,
) -> Result<ExitCode> {
    write_capture_header(&mut out, ("command", &command.join(" ")))
        .context("cannot write the capture file")?;
    follow_command(proc, command, follow, Sink::Capture(out), false)
}

fn follow_command(
    proc: &ProcInterface,
    command: &[String],
    follow: bool,
    sink: Sink,
    summary: bool,
) -> Result<ExitCode> {
    // Open the stream before the command can run, so none of its events are missed.
    let mut events = LiveEvents::open(proc)?;
    catch_interrupts()?;
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
    let mut monitor = Monitor::new(sink, since, summary);
    if let Some(replay) = &mut monitor.summary {
        replay.header("command", &command.join(" "));
    }
    monitor.followed.insert(pid);
    monitor.root = Some(pid);
    // The stub has not exec'd yet: this is the process's initial state.
    monitor.snapshot(pid, "start")?;
    if let Err(error) = child.release() {
        let _ = proc.unwatch(&[pid]);
        return Err(error);
    }

    let mut exit_code = None;
    let mut reaped_at = None;
    let mut interrupts_forwarded = 0;
    loop {
        monitor.pump(&mut events)?;
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
            reaped_at = Some(Instant::now());
        }
        if let Some(reaped_at) = reaped_at {
            if monitor.root_exit_seen || reaped_at.elapsed() > EXIT_EVENT_GRACE {
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
    monitor.unwatch_remaining(proc);
    if let Sink::Capture(out) = &mut monitor.sink {
        memmon::capture::file::write_header(out, "end", &monotonic_now().to_string())?;
    }
    monitor.sink.flush()?;
    report_lost(proc, monitor.lost);
    monitor.print_summary();
    let code = exit_code.unwrap_or(1);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// `record -p PID...`: record running processes until they exit or Ctrl-C.
pub fn record_pids(
    proc: &ProcInterface,
    pids: &[u32],
    follow: bool,
    mut out: Box<dyn Write>,
) -> Result<ExitCode> {
    let pid_list: Vec<String> = pids.iter().map(u32::to_string).collect();
    write_capture_header(&mut out, ("pids", &pid_list.join(" ")))
        .context("cannot write the capture file")?;
    let mut events = LiveEvents::open(proc)?;
    catch_interrupts()?;
    let since = monotonic_now();
    if follow {
        proc.watch_following(pids)?;
    } else {
        proc.watch(pids)?;
    }
    let mut monitor = Monitor::new(Sink::Capture(out), since, false);
    monitor.followed.extend(pids);
    for &pid in pids {
        monitor.snapshot(pid, "start")?;
    }
    while !interrupted() && !monitor.followed.is_empty() {
        monitor.pump(&mut events)?;
    }
    let still_running: Vec<u32> = monitor.followed.iter().copied().collect();
    for pid in still_running {
        monitor.snapshot(pid, "end")?;
    }
    monitor.unwatch_remaining(proc);
    if let Sink::Capture(out) = &mut monitor.sink {
        memmon::capture::file::write_header(out, "end", &monotonic_now().to_string())?;
    }
    monitor.sink.flush()?;
    if interrupted() {
        eprintln!("memmon: interrupted, recording stopped");
    }
    report_lost(proc, monitor.lost);
    monitor.print_summary();
    Ok(ExitCode::SUCCESS)
}

/// `tail`: print the live stream until Ctrl-C.
pub fn tail_live(proc: &ProcInterface, filter: Filter, mut printer: Printer) -> Result<ExitCode> {
    let mut events = LiveEvents::open(proc)?;
    catch_interrupts()?;
    let mut lost = 0u64;
    let mut gone = false;
    while !interrupted() && !gone {
        events.poll_lines(POLL_MS, |line| {
            if gone {
                return Ok(());
            }
            let event = match parse_line(line) {
                Ok(event) => event,
                Err(error) => {
                    eprintln!("memmon: warning: skipping undecodable event ({error}): {line}");
                    return Ok(());
                }
            };
            if let EventKind::Lost { count } = event.kind {
                lost += count;
            }
            if filter.accepts(&event) && !printer.print(&event)? {
                gone = true;
            }
            Ok(())
        })?;
        if gone || !printer.flush()? {
            break;
        }
    }
    if interrupted() {
        eprintln!("memmon: interrupted");
    }
    report_lost(proc, lost);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path takes exactly the fault lines `parse_line` accepts, with its time and pid.
    #[test]
    fn fault_frame_agrees_with_parse_line() {
        let stack = "stack=0x55d000401005,0x7f12a0001000,0xffffffffffffffff";
        let good = [
            "5.103901002 212/213 fault type=anon access=W addr=0x7f5a2c1e4010 ip=0x401d2f",
            "5.103901002 212/212 fault type=file access=R addr=0x400000 ip=0x0 user=0 huge=1 major=1 retry=0 pages=512",
            "5.103901002 212/212 fault type=other access=X addr=0xABCdef ip=0x1 pages=0 stack=",
            "5.103901002 212/212 fault type=wp access=W addr=0x1 ip=0x2 unknown=x",
            "5.103901002 212/212 fault type=wp access=W addr=0x1 ip=0x2 type=bogus",
            "5.103901002 212/212 fault   type=wp  access=W\taddr=0x1 ip=0x2",
            "5.103901002 212/212 fault type=access access=R addr=0x7f0000001000 ip=0x401d2f gen=3",
            "5.103901002 212/212 fault type=access access=W addr=0x7f0000200000 ip=0x401d2f huge=1 gen=18446744073709551615",
        ];
        let mut lines: Vec<String> = good.iter().map(|line| line.to_string()).collect();
        lines.extend(good.iter().map(|line| format!("{line} {stack}")));
        let base = "7.000000001 4000/4001 fault type=swap access=R addr=0x7f0000001000 ip=0x401005";
        for (from, to) in [
            ("type=swap", "type=bogus"),
            ("type=swap", "type="),
            ("access=R", "access=r"),
            ("access=R ", ""),
            ("addr=0x7f0000001000", "addr=7f0000001000"),
            ("addr=0x7f0000001000", "addr=0x"),
            ("addr=0x7f0000001000", "addr=0x00007f00000010000"),
            ("ip=0x401005", "ip=0xg"),
            ("ip=0x401005", "ip"),
            ("7.000000001", "7.00000001"),
            ("7.000000001", "+7.000000001"),
            ("4000/4001", "4000"),
            ("4000/4001", "4000/+4001"),
            ("4000/4001", "4000/4294967296"),
            ("4000/4001", "-1/4001"),
            (" fault", " faults"),
            ("7.0", " 7.0"),
        ] {
            lines.push(base.replacen(from, to, 1));
        }
        for suffix in [
            " user=2",
            " huge=yes",
            " major=",
            " retry=11",
            " pages=-1",
            " pages=18446744073709551616",
            " pages=18446744073709551615",
            " gen=",
            " gen=-1",
            " gen=0x3",
            " gen=18446744073709551616",
            " gen=7",
            " stack=0x1,",
            " stack=,0x1",
            " stack=0x1,0x2",
            " stack=1",
            " stack=0x",
            " stack=0x1,,0x2",
            " stack=0x1,0x",
            " stack=0x00000000000000001",
            " stack=0x0000000000000001,0xfFfF",
            " stack=0x1;0x2",
            " bare",
            " a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 l=12 user=7",
            " a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 user=7",
            " a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 l=12 m",
            " user=1 user=x",
            " user=x user=1",
        ] {
            lines.push(format!("{base}{suffix}"));
        }
        for line in &lines {
            let parsed = parse_line(line).ok().map(|event| (event.time, event.pid));
            if line.starts_with(' ') {
                // Left to the full parse, which trims leading spaces.
                assert_eq!(fault_frame(line), None, "{line}");
            } else {
                assert_eq!(fault_frame(line), parsed, "{line}");
            }
        }
        assert!(
            lines
                .iter()
                .filter(|line| fault_frame(line).is_some())
                .count()
                > 12
        );
    }
}
