//! `memmon tail`: the live stream, or a capture file or stdin, decoded.

use std::fs::File;
use std::io::{self, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use memmon::{parse_line, CaptureReader, EventKind, ProcInterface};

use crate::commands::follow::{probe_missed, report_lost, report_missed, POLL_MS};
use crate::live::{catch_interrupts, interrupted, LiveEvents};
use crate::output::{self, Filter, Printer};

/// `tail --input`: decode a capture file or stdin.
pub fn tail_input(
    path: &PathBuf,
    filter: output::Filter,
    mut printer: Printer,
) -> Result<ExitCode> {
    let input: Box<dyn io::BufRead> = if path.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        Box::new(BufReader::new(file))
    };
    let name = path.display().to_string();
    let mut reader = CaptureReader::new(input);
    let mut lost = 0u64;
    let mut bad_lines = 0u64;
    while let Some(item) = reader.next_event() {
        match item {
            Ok((_, event)) => {
                if let memmon::EventKind::Lost { count } = event.kind {
                    lost += count;
                }
                if filter.accepts(&event) && !printer.print(&event)? {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            Err(memmon::ReadError::Io { source, .. }) => {
                bail!("cannot read {name}: {source}")
            }
            Err(error) => {
                bad_lines += 1;
                eprintln!("memmon: warning: {name}: {error}");
            }
        }
    }
    printer.flush()?;
    if lost > 0 {
        eprintln!("memmon: {lost} events were lost (overwritten before they were read)");
    }
    if bad_lines > 0 {
        bail!("{name}: {bad_lines} lines could not be decoded");
    }
    Ok(ExitCode::SUCCESS)
}

/// `tail`: print the live stream until Ctrl-C.
pub fn tail_live(
    proc: &ProcInterface,
    filter: Filter,
    mut printer: Printer,
    cgroup: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let cgroup = cgroup.map(memmon::capture::cgroup::validate).transpose()?;
    let mut events = LiveEvents::open(proc)?;
    let missed_before = probe_missed(proc);
    catch_interrupts()?;
    if let Some(path) = &cgroup {
        proc.watch_cgroup(path)?;
    }
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
    if let Some(path) = &cgroup {
        if let Err(error) = proc.unwatch_cgroup(path) {
            eprintln!(
                "memmon: warning: cannot stop watching {}: {error}",
                path.display()
            );
        }
    }
    if interrupted() {
        eprintln!("memmon: interrupted");
    }
    report_lost(proc, lost);
    report_missed(proc, missed_before);
    Ok(ExitCode::SUCCESS)
}
