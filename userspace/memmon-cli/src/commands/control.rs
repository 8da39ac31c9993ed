//! The control commands: `attach`, `detach`, `list`, `stats` and `mark`.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;
use memmon::capture::control::process_path;
use memmon::ProcInterface;

use crate::output::ignore_broken_pipe;
use crate::unwind;

/// `attach`: watch `pids` (and, with `follow`, their future children), with their
/// unwind tables.
pub fn attach(
    proc: &ProcInterface,
    pids: &[u32],
    follow: bool,
    cgroup: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let cgroup = cgroup.map(memmon::capture::cgroup::validate).transpose()?;
    crate::params::grow_rings(proc);
    if let Some(path) = cgroup {
        proc.watch_cgroup(&path)?;
        if pids.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    if follow {
        proc.watch_following(pids)?;
    } else {
        proc.watch(pids)?;
    }
    let mut tables = unwind::UnwindTables::open(proc, unwind::enabled());
    for &pid in pids {
        tables.sync(pid);
    }
    Ok(ExitCode::SUCCESS)
}

/// `detach`: stop watching `pids`, or every process.
pub fn detach(
    proc: &ProcInterface,
    pids: &[u32],
    all: bool,
    cgroup: Option<&std::path::Path>,
) -> Result<ExitCode> {
    if let Some(path) = cgroup {
        proc.unwatch_cgroup(&memmon::capture::cgroup::unwatch_path(path))?;
        if pids.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    if all {
        proc.clear()?;
    } else {
        proc.unwatch(pids)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `list`: the watched processes, pid and command name.
pub fn list(proc: &ProcInterface) -> Result<ExitCode> {
    let mut out = io::stdout().lock();
    for pid in proc.watched()? {
        let comm = std::fs::read_to_string(process_path(pid, "comm"))
            .map(|name| name.trim_end().to_owned())
            .unwrap_or_else(|_| "?".to_owned());
        ignore_broken_pipe(writeln!(out, "{pid} {comm}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `stats`: the module's counters, aligned.
pub fn stats(proc: &ProcInterface) -> Result<ExitCode> {
    let stats = proc.stats()?;
    let width = stats
        .entries
        .iter()
        .map(|(key, _)| key.len())
        .max()
        .unwrap_or(0);
    let mut out = io::stdout().lock();
    // The kernel memmon runs on, before the module's own figures (among them fault_source).
    let kernel = nix::sys::utsname::uname()
        .map(|uts| {
            format!(
                "{} {}",
                uts.release().to_string_lossy(),
                uts.version().to_string_lossy()
            )
        })
        .unwrap_or_else(|_| "unknown".to_owned());
    let width = width.max("kernel".len());
    ignore_broken_pipe(writeln!(out, "{:width$}  {kernel}", "kernel"))?;
    for (key, value) in &stats.entries {
        ignore_broken_pipe(writeln!(out, "{key:width$}  {value}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `mark`: the words joined by spaces as a marker line.
pub fn mark(proc: &ProcInterface, text: &[String]) -> Result<ExitCode> {
    proc.mark(&text.join(" "))?;
    Ok(ExitCode::SUCCESS)
}
