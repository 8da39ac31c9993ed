//! The unwind tables of the processes memmon watches: loaded into `/proc/memmon/unwind` at
//! the start and again when a process executes, forks or maps new code, so that the module
//! unwinds their stacks through code without frame pointers. Nothing here is fatal: a
//! table the module cannot take leaves that code to the frame-pointer walk, with one
//! warning on stderr.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use memmon_unwind::loader::{Loader, LoaderError, UnwindFile};

use crate::{Event, EventKind, ProcInterface};

/// The tables of the processes watched, kept current from their events.
pub struct UnwindTables {
    /// `None` when turned off or when the module has no `unwind` file.
    loader: Option<Loader<UnwindFile>>,
    /// Processes to load again once the events read so far are handled.
    pending: BTreeSet<u32>,
    /// Processes given ranges (forgotten at the end).
    synced: BTreeSet<u32>,
    /// Warnings already printed, so that each is printed once.
    warned: HashSet<String>,
    /// Why the `unwind` file could not be opened: said once, at the first process to load.
    open_error: Option<String>,
}

impl UnwindTables {
    /// No tables: before a process is watched, or with loading off.
    pub fn off() -> UnwindTables {
        UnwindTables {
            loader: None,
            pending: BTreeSet::new(),
            synced: BTreeSet::new(),
            warned: HashSet::new(),
            open_error: None,
        }
    }

    /// Tables loaded through `proc`'s `unwind` file, or none if `enabled` is false.
    pub fn open(proc: &ProcInterface, enabled: bool) -> UnwindTables {
        let path = proc.path("unwind");
        let mut tables = UnwindTables::off();
        if enabled {
            match UnwindFile::open(&path) {
                Ok(file) => tables.loader = Some(Loader::with_proc_root(file, Path::new("/proc"))),
                Err(error) => {
                    tables.open_error = Some(format!(
                        "memmon: warning: {}: {error}: stacks are walked by frame pointers only",
                        path.display()
                    ))
                }
            }
        }
        tables
    }

    /// Whether tables are loaded (on, and the module's `unwind` file open or still to try).
    pub fn loads(&self) -> bool {
        self.loader.is_some()
    }

    /// Loads the tables of `pid` and gives the module its ranges now (what was noted of it
    /// so far needs no load at the next [`UnwindTables::flush`]).
    pub fn sync(&mut self, pid: u32) {
        self.pending.remove(&pid);
        if let Some(error) = self.open_error.take() {
            eprintln!("{error}");
        }
        let Some(loader) = &mut self.loader else {
            return;
        };
        match loader.sync_process(pid) {
            Ok(report) => {
                self.synced.insert(pid);
                for warning in report.warnings {
                    let text = warning.to_string();
                    if self.warned.insert(text.clone()) {
                        eprintln!("memmon: warning: unwind tables: {text}");
                    }
                }
            }
            // Gone already (its exit is in the stream), or no longer watched: the module
            // refuses the SET_MAPS of a process it does not watch (an exited one still
            // has its /proc directory until it is reaped) with ESRCH.
            Err(_) if !Path::new(&format!("/proc/{pid}")).exists() => {}
            Err(LoaderError::Write { error, .. })
                if error.raw_os_error() == Some(nix::libc::ESRCH) => {}
            Err(error) => {
                if self.warned.insert(format!("{pid}")) {
                    eprintln!("memmon: warning: unwind tables of {pid}: {error}");
                }
            }
        }
    }

    /// At a program's exec, while it is stopped there: loads its tables and ranges, and the
    /// tables of the libraries it will load, so that its faults in them are unwound from
    /// the first (their ranges follow at their `mmap`).
    pub fn sync_at_exec(&mut self, pid: u32) {
        self.sync(pid);
        if let Some(loader) = &mut self.loader {
            for warning in loader.preload_needed(pid) {
                let text = warning.to_string();
                if self.warned.insert(text.clone()) {
                    eprintln!("memmon: warning: unwind tables: {text}");
                }
            }
        }
    }

    /// Notes what an event of a watched process changes: a new program, a new process, or
    /// new executable code.
    pub fn note(&mut self, event: &Event) {
        if self.loader.is_none() {
            return;
        }
        match &event.kind {
            EventKind::Exec { .. } => {
                self.pending.insert(event.pid);
                if let Some(loader) = &mut self.loader {
                    loader.forget_python(event.pid);
                }
            }
            EventKind::Fork {
                child,
                watched: true,
            } => {
                self.pending.insert(*child);
            }
            EventKind::Mmap { prot, .. }
            | EventKind::Mprotect { prot, .. }
            | EventKind::PkeyMprotect { prot, .. }
                if prot.contains(crate::stream::flags::Prot::EXEC) =>
            {
                self.pending.insert(event.pid);
            }
            // A move of one of the process's code ranges (most moves are of heap blocks,
            // which change no range), or a mapping without a protection to tell.
            EventKind::Mremap { old, .. } => {
                let moves_code = self.loader.as_ref().is_some_and(|loader| {
                    loader
                        .ranges(event.pid)
                        .is_some_and(|ranges| ranges.iter().any(|r| (r.start..r.end).contains(old)))
                });
                if moves_code {
                    self.pending.insert(event.pid);
                }
            }
            EventKind::Shmat { .. } => {
                self.pending.insert(event.pid);
            }
            EventKind::Exit { .. } => {
                self.synced.remove(&event.pid);
                self.pending.remove(&event.pid);
                if let Some(loader) = &mut self.loader {
                    loader.exited(event.pid);
                }
            }
            _ => {}
        }
    }

    /// The CPython of process `pid`, when it was described to the module.
    pub fn python(&self, pid: u32) -> Option<&memmon_unwind::loader::PythonProcess> {
        self.loader.as_ref()?.python(pid)
    }

    /// Loads the tables of the processes noted since the last call.
    pub fn flush(&mut self) {
        for pid in std::mem::take(&mut self.pending) {
            self.sync(pid);
        }
    }

    /// Forgets the ranges of the processes still running, at the end; loads nothing after.
    pub fn finish(&mut self) {
        if let Some(mut loader) = self.loader.take() {
            for pid in std::mem::take(&mut self.synced) {
                let _ = loader.forget_process(pid);
            }
        }
    }
}
