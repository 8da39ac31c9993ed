//! Unwind tables for `record`, `run` and `attach` (the library's
//! [`memmon::capture::unwind::UnwindTables`]), whether they are on, and `memmon unwind`.

use anyhow::{Context, Result};
pub use memmon::capture::unwind::UnwindTables;
use memmon::ProcInterface;
use memmon_unwind::loader::{Loader, UnwindFile};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether `record`, `run` and `attach` load tables (`--no-unwind-tables` turns it off).
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns table loading on or off for this run of memmon.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether table loading is on.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// `memmon unwind PID...`: loads the tables of processes watched by hand, once (or, with
/// `forget`, takes their ranges away).
pub fn unwind_command(proc: &ProcInterface, pids: &[u32], forget: bool) -> Result<()> {
    let path = proc.path("unwind");
    let file =
        UnwindFile::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut loader = Loader::with_proc_root(file, Path::new("/proc"));
    for &pid in pids {
        if forget {
            loader
                .forget_process(pid)
                .with_context(|| format!("cannot forget the ranges of {pid}"))?;
            println!("{pid}: ranges forgotten");
            continue;
        }
        let report = loader
            .sync_process(pid)
            .with_context(|| format!("cannot load the unwind tables of {pid}"))?;
        println!(
            "{pid}: {} ranges, {} tables loaded",
            report.ranges,
            report.added.len()
        );
        for warning in report.warnings {
            eprintln!("memmon: warning: {pid}: {warning}");
        }
    }
    Ok(())
}
