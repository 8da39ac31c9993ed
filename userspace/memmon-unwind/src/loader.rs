//! The [`Loader`]: compiles the table of each object a watched process maps (each object
//! once), loads into the module the tables it lacks, and gives the module the process's
//! ranges.
//!
//! Every command goes to an [`UnwindSink`] as one `write()` of the whole buffer:
//! [`UnwindFile`] writes `/proc/memmon/unwind`; [`KernelModel`] takes the writes the way the
//! module does (tests).

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::compile::{compile, Table};
use crate::key::{key_for_object, FileId, Key};
use crate::maps::{
    executable_file_mappings, load_bias, load_segments, object_paths, open_object, stat_object,
    FileStamp, LoadSegment, MapsEntry, DEFAULT_PROC_ROOT,
};
use crate::protocol::{
    encode_add_table, encode_drop_table, encode_set_maps, encode_set_python, libc_errno,
    KernelModel, PythonDescription, Range, RANGES_MAX,
};
use crate::python::{self, PythonError, PythonSymbols};

/// The path of the module's unwind file.
pub const UNWIND_FILE: &str = "/proc/memmon/unwind";

/// Where the commands go: each call is one whole command, to be written in one `write()`.
pub trait UnwindSink {
    /// Writes one command. An error from the module carries its errno
    /// ([`io::Error::raw_os_error`]).
    fn write_command(&mut self, bytes: &[u8]) -> io::Result<()>;
}

impl<T: UnwindSink + ?Sized> UnwindSink for &mut T {
    fn write_command(&mut self, bytes: &[u8]) -> io::Result<()> {
        (**self).write_command(bytes)
    }
}

/// `/proc/memmon/unwind`, open for writing. A command the module refuses with `EAGAIN`
/// (other writes being copied in hold the memory it needs) is written again, for 5 s at
/// most.
#[derive(Debug)]
pub struct UnwindFile {
    file: File,
}

impl UnwindFile {
    /// Opens the unwind file at `path` (normally [`UNWIND_FILE`]) for writing.
    pub fn open(path: &Path) -> io::Result<UnwindFile> {
        let file = OpenOptions::new().write(true).open(path)?;
        Ok(UnwindFile { file })
    }
}

/// How long a write the module refuses with `EAGAIN` (other writes hold the memory it would
/// be copied into: docs/unwind.md) is tried again, every [`RETRY_EVERY`].
const RETRY_FOR: Duration = Duration::from_secs(5);
/// See [`RETRY_FOR`].
const RETRY_EVERY: Duration = Duration::from_millis(10);

impl UnwindSink for UnwindFile {
    fn write_command(&mut self, bytes: &[u8]) -> io::Result<()> {
        let start = Instant::now();
        let written = loop {
            match self.file.write(bytes) {
                Err(error)
                    if error.raw_os_error() == Some(libc_errno::EAGAIN)
                        && start.elapsed() < RETRY_FOR =>
                {
                    std::thread::sleep(RETRY_EVERY)
                }
                result => break result?,
            }
        };
        if written != bytes.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!(
                    "short write to the unwind file: {written} of {}",
                    bytes.len()
                ),
            ));
        }
        Ok(())
    }
}

impl UnwindSink for KernelModel {
    fn write_command(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.apply(bytes)
            .map(|_| ())
            .map_err(|reject| io::Error::from_raw_os_error(reject.errno()))
    }
}

/// Something a sync left out, for the process to fall back to frame pointers there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// The object could not be read through any path.
    Open {
        /// Its path in the maps.
        path: String,
        /// The last error.
        error: String,
    },
    /// The object could not be compiled (no CFI, neither x86-64 nor arm64, addresses beyond
    /// 32 bits...).
    Compile {
        /// Its path.
        path: String,
        /// Why.
        error: String,
    },
    /// The object has neither a build ID nor a device and inode to key it by.
    NoKey {
        /// Its path.
        path: String,
    },
    /// No `PT_LOAD` segment holds the mapping's file offset.
    NoBias {
        /// Its path.
        path: String,
        /// The mapping's start.
        start: u64,
    },
    /// The module refused the table for its memory bound (`ENOSPC`, `unwind_max_kb`).
    NoSpace {
        /// Its path.
        path: String,
        /// The table's key.
        key: Key,
        /// Its rows.
        rows: usize,
    },
    /// More ranges than a process may have: the ones past the limit were left out.
    TooManyRanges {
        /// How many were left out.
        dropped: usize,
    },
    /// A CPython interpreter that is not described to the module.
    Python {
        /// Its path.
        path: String,
        /// Why.
        error: String,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::Open { path, error } => write!(f, "{path}: cannot read: {error}"),
            Warning::Python { path, error } => write!(f, "{path}: {error}"),
            Warning::Compile { path, error } => write!(f, "{path}: no table: {error}"),
            Warning::NoKey { path } => write!(f, "{path}: no build ID and no inode"),
            Warning::NoBias { path, start } => {
                write!(f, "{path}: no segment for the mapping at {start:#x}")
            }
            Warning::NoSpace { path, key, rows } => write!(
                f,
                "{path}: table {key} of {rows} rows refused: unwind_max_kb is reached"
            ),
            Warning::TooManyRanges { dropped } => {
                write!(
                    f,
                    "{dropped} ranges past the limit of {RANGES_MAX} left out"
                )
            }
        }
    }
}

/// Why a sync failed.
#[derive(Debug, thiserror::Error)]
pub enum LoaderError {
    /// The process's maps could not be read (it may have exited).
    #[error("reading the maps of process {pid}: {error}")]
    Maps {
        /// The process.
        pid: u32,
        /// The error.
        error: io::Error,
    },
    /// The module refused a command for another reason than its memory bound.
    #[error("{command}: {error}")]
    Write {
        /// The command (`ADD_TABLE <key>`, `SET_MAPS <pid>`...).
        command: String,
        /// The error, with the module's errno.
        error: io::Error,
    },
}

/// What a sync did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Ranges given to the module.
    pub ranges: usize,
    /// Tables written with `ADD_TABLE`.
    pub added: Vec<Key>,
    /// What was left out.
    pub warnings: Vec<Warning>,
    /// Whether a CPython interpreter was described to the module now.
    pub python: bool,
}

/// An object compiled, or found not to have a table.
#[derive(Clone, Debug)]
struct Object {
    stamp: FileStamp,
    path: String,
    segments: Vec<LoadSegment>,
    table: Result<(Key, Arc<Table>), Warning>,
    /// When it is a CPython interpreter: its symbols.
    python: Option<Result<PythonSymbols, PythonError>>,
}

/// A process's CPython, as described to the module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonProcess {
    /// The interpreter's path.
    pub path: String,
    /// Its symbols (object addresses).
    pub symbols: PythonSymbols,
    /// Its load bias.
    pub bias: u64,
    /// What the module was given.
    pub description: PythonDescription,
}

/// Keeps the compiled tables by key, knows which the module has, and loads the tables
/// and ranges of processes.
#[derive(Debug)]
pub struct Loader<W: UnwindSink> {
    sink: W,
    proc_root: PathBuf,
    objects: HashMap<FileId, Object>,
    loaded: HashSet<Key>,
    processes: HashMap<u32, Vec<Range>>,
    pythons: HashMap<u32, PythonProcess>,
}

impl<W: UnwindSink> Loader<W> {
    /// A loader writing to `sink`, reading processes under `/proc`.
    pub fn new(sink: W) -> Loader<W> {
        Loader::with_proc_root(sink, Path::new(DEFAULT_PROC_ROOT))
    }

    /// A loader writing to `sink`, reading processes under `proc_root`.
    pub fn with_proc_root(sink: W, proc_root: &Path) -> Loader<W> {
        Loader {
            sink,
            proc_root: proc_root.to_path_buf(),
            objects: HashMap::new(),
            loaded: HashSet::new(),
            processes: HashMap::new(),
            pythons: HashMap::new(),
        }
    }

    /// The sink.
    pub fn sink(&self) -> &W {
        &self.sink
    }

    /// The sink, to change.
    pub fn sink_mut(&mut self) -> &mut W {
        &mut self.sink
    }

    /// The keys this loader believes the module has loaded.
    pub fn loaded(&self) -> &HashSet<Key> {
        &self.loaded
    }

    /// The ranges last given for process `pid`.
    pub fn ranges(&self, pid: u32) -> Option<&[Range]> {
        self.processes.get(&pid).map(Vec::as_slice)
    }

    /// Forgets process `pid`, which exited: its ranges and interpreter (the module dropped
    /// them at its exit; nothing is written).
    pub fn exited(&mut self, pid: u32) {
        self.processes.remove(&pid);
        self.pythons.remove(&pid);
    }

    /// Forgets what was described of process `pid`'s interpreter, at its exec (the module
    /// forgets it then too).
    pub fn forget_python(&mut self, pid: u32) {
        self.pythons.remove(&pid);
    }

    /// The CPython of process `pid`, when it was described to the module.
    pub fn python(&self, pid: u32) -> Option<&PythonProcess> {
        self.pythons.get(&pid)
    }

    /// The compiled table of `key`, if this loader compiled it.
    pub fn table(&self, key: &Key) -> Option<Arc<Table>> {
        self.objects.values().find_map(|o| match &o.table {
            Ok((k, table)) if k == key => Some(table.clone()),
            _ => None,
        })
    }

    /// Takes the module's own list of loaded tables (from reading the unwind file): after a
    /// module reload, or when another writer loaded tables.
    pub fn set_loaded_from_status(&mut self, status: &Status) {
        self.loaded = status.tables.iter().map(|t| t.key).collect();
    }

    /// The compiled object mapped by `entry`, compiling it if it is new or changed.
    fn object(&mut self, pid: u32, entry: &MapsEntry) -> Result<&Object, Warning> {
        let stamp = object_paths(&self.proc_root, pid, entry)
            .iter()
            .find_map(|path| stat_object(path).ok().map(|(_, stamp)| stamp));
        let fresh = match (self.objects.get(&entry.file), stamp) {
            (Some(object), Some(stamp)) => object.stamp == stamp,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !fresh {
            let opened =
                open_object(&self.proc_root, pid, entry).map_err(|error| Warning::Open {
                    path: entry.path.clone(),
                    error: error.to_string(),
                })?;
            let segments = load_segments(&opened.data).unwrap_or_default();
            let table = match compile(&opened.data) {
                Ok(table) => match key_for_object(&opened.data, Some(entry.file)) {
                    Some(key) => Ok((key, Arc::new(table))),
                    None => Err(Warning::NoKey {
                        path: entry.path.clone(),
                    }),
                },
                Err(error) => Err(Warning::Compile {
                    path: entry.path.clone(),
                    error: error.to_string(),
                }),
            };
            let object = Object {
                stamp: opened.stamp,
                path: entry.path.clone(),
                segments,
                table,
                python: python::symbols(&entry.path, &opened.data),
            };
            self.objects.insert(entry.file, object);
        }
        self.objects.get(&entry.file).ok_or(Warning::NoKey {
            path: entry.path.clone(),
        })
    }

    /// Compiles the tables of the libraries the program of process `pid` needs and loads
    /// them into the module, before ld.so maps them: called while the process is stopped at
    /// its exec, so that a later [`Loader::sync_process`] (at their `mmap`) only gives
    /// ranges. Returns what it left out; never fails.
    pub fn preload_needed(&mut self, pid: u32) -> Vec<Warning> {
        let mut warnings = Vec::new();
        let exe = self.proc_root.join(pid.to_string()).join("exe");
        let Ok(data) = std::fs::read(&exe) else {
            return warnings;
        };
        // Its own path, for `$ORIGIN` in its run paths.
        let path = std::fs::read_link(&exe)
            .map(|p| PathBuf::from(p.to_string_lossy().trim_end_matches(" (deleted)")))
            .unwrap_or(exe);
        for path in crate::needed::needed_libraries(&path, &data) {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            use std::os::unix::fs::MetadataExt;
            let dev = meta.dev();
            // As glibc's major() and minor() split a dev_t.
            let file = FileId {
                major: (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32,
                minor: ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
                inode: meta.ino(),
            };
            let entry = MapsEntry {
                start: 0,
                end: 0,
                perms: "r-xp".to_owned(),
                offset: 0,
                file,
                path: path.to_string_lossy().into_owned(),
                deleted: false,
            };
            let (key, table) = match self.object(pid, &entry).map(|o| o.table.clone()) {
                Ok(Ok(found)) => found,
                Ok(Err(warning)) | Err(warning) => {
                    warnings.push(warning);
                    continue;
                }
            };
            if self.loaded.contains(&key) {
                continue;
            }
            match self
                .sink
                .write_command(&encode_add_table(&key, table.arch, &table.rows))
            {
                Ok(()) => {
                    self.loaded.insert(key);
                }
                Err(error) if error.raw_os_error() == Some(libc_errno::ENOSPC) => {
                    warnings.push(Warning::NoSpace {
                        path: entry.path.clone(),
                        key,
                        rows: table.len(),
                    })
                }
                // Given again with the ranges, at the library's mmap, where it is reported.
                Err(_) => {}
            }
        }
        warnings
    }

    /// Loads the tables of process `pid` and gives the module its ranges: reads its maps,
    /// compiles the objects not yet compiled, writes an `ADD_TABLE` for each table the
    /// module lacks, then one `SET_MAPS`. An object whose table the module refuses for its
    /// memory bound (`ENOSPC`) is left out, with a warning (the process falls back to frame
    /// pointers there), and so is an object without a table. Any other refusal is an error.
    pub fn sync_process(&mut self, pid: u32) -> Result<SyncReport, LoaderError> {
        let mappings = executable_file_mappings(&self.proc_root, pid)
            .map_err(|error| LoaderError::Maps { pid, error })?;
        let mut report = SyncReport::default();
        let mut wanted: Vec<(Range, String)> = Vec::new();
        let mut tables: HashMap<Key, (Arc<Table>, String)> = HashMap::new();
        let mut warned: HashSet<FileId> = HashSet::new();
        let mut interpreter: Option<PythonProcess> = None;
        for entry in &mappings {
            let object = match self.object(pid, entry) {
                Ok(object) => object,
                Err(warning) => {
                    if warned.insert(entry.file) {
                        report.warnings.push(warning);
                    }
                    continue;
                }
            };
            let (key, table) = match &object.table {
                Ok(found) => found.clone(),
                Err(warning) => {
                    if warned.insert(entry.file) {
                        report.warnings.push(warning.clone());
                    }
                    continue;
                }
            };
            let Some(bias) = load_bias(&object.segments, entry.offset, entry.start) else {
                report.warnings.push(Warning::NoBias {
                    path: object.path.clone(),
                    start: entry.start,
                });
                continue;
            };
            match &object.python {
                Some(Ok(symbols)) if interpreter.is_none() => {
                    interpreter =
                        python::describe(symbols, bias).map(|description| PythonProcess {
                            path: object.path.clone(),
                            symbols: symbols.clone(),
                            bias,
                            description,
                        });
                }
                Some(Err(error)) if warned.insert(entry.file) => {
                    report.warnings.push(Warning::Python {
                        path: object.path.clone(),
                        error: error.to_string(),
                    });
                }
                _ => {}
            }
            tables.insert(key, (table, object.path.clone()));
            let range = Range {
                start: entry.start,
                end: entry.end,
                bias,
                key,
            };
            wanted.push((range, object.path.clone()));
        }
        let mut retried = false;
        loop {
            let mut refused: HashSet<Key> = HashSet::new();
            let mut keys: Vec<&Key> = tables.keys().collect();
            keys.sort();
            for key in keys {
                if self.loaded.contains(key) {
                    continue;
                }
                let Some((table, path)) = tables.get(key) else {
                    continue;
                };
                match self
                    .sink
                    .write_command(&encode_add_table(key, table.arch, &table.rows))
                {
                    Ok(()) => {
                        self.loaded.insert(*key);
                        report.added.push(*key);
                    }
                    Err(error) if error.raw_os_error() == Some(libc_errno::ENOSPC) => {
                        refused.insert(*key);
                        report.warnings.push(Warning::NoSpace {
                            path: path.clone(),
                            key: *key,
                            rows: table.len(),
                        });
                    }
                    Err(error) => {
                        return Err(LoaderError::Write {
                            command: format!("ADD_TABLE {key} ({path})"),
                            error,
                        })
                    }
                }
            }
            let mut ranges: Vec<Range> = wanted
                .iter()
                .map(|(range, _)| *range)
                .filter(|range| !refused.contains(&range.key))
                .collect();
            if ranges.len() > RANGES_MAX {
                report.warnings.push(Warning::TooManyRanges {
                    dropped: ranges.len() - RANGES_MAX,
                });
                ranges.truncate(RANGES_MAX);
            }
            match self.sink.write_command(&encode_set_maps(pid, &ranges)) {
                Ok(()) => {
                    report.ranges = ranges.len();
                    self.processes.insert(pid, ranges);
                    self.describe_python(pid, interpreter, &mut report)?;
                    return Ok(report);
                }
                // A table this loader wrote is gone (the module was reloaded, or another
                // writer dropped it): load them again, once.
                Err(error) if error.raw_os_error() == Some(libc_errno::ENOENT) && !retried => {
                    retried = true;
                    for range in &ranges {
                        self.loaded.remove(&range.key);
                    }
                }
                Err(error) => {
                    return Err(LoaderError::Write {
                        command: format!("SET_MAPS {pid}"),
                        error,
                    })
                }
            }
        }
    }

    /// Gives the module the description of process `pid`'s interpreter, once per
    /// interpreter (its ranges, given again, keep it).
    fn describe_python(
        &mut self,
        pid: u32,
        interpreter: Option<PythonProcess>,
        report: &mut SyncReport,
    ) -> Result<(), LoaderError> {
        let Some(interpreter) = interpreter else {
            self.pythons.remove(&pid);
            return Ok(());
        };
        if self.pythons.get(&pid) == Some(&interpreter) {
            return Ok(());
        }
        match self
            .sink
            .write_command(&encode_set_python(pid, Some(&interpreter.description)))
        {
            Ok(()) => {
                report.python = true;
                self.pythons.insert(pid, interpreter);
                Ok(())
            }
            Err(error) => Err(LoaderError::Write {
                command: format!("SET_PYTHON {pid} ({})", interpreter.path),
                error,
            }),
        }
    }

    /// Forgets the ranges of process `pid` (a `SET_MAPS` of 0 ranges). A process the module
    /// no longer watches (`ESRCH`) has none left: that is no error.
    pub fn forget_process(&mut self, pid: u32) -> Result<(), LoaderError> {
        self.processes.remove(&pid);
        self.pythons.remove(&pid);
        match self.sink.write_command(&encode_set_maps(pid, &[])) {
            Ok(()) => Ok(()),
            Err(error) if error.raw_os_error() == Some(libc_errno::ESRCH) => Ok(()),
            Err(error) => Err(LoaderError::Write {
                command: format!("SET_MAPS {pid} (forget)"),
                error,
            }),
        }
    }

    /// Drops the table `key` from the module (`DROP_TABLE`). A table the module does not
    /// have (`ENOENT`) is no error.
    pub fn drop_table(&mut self, key: &Key) -> Result<(), LoaderError> {
        match self.sink.write_command(&encode_drop_table(key)) {
            Ok(()) => {
                self.loaded.remove(key);
                Ok(())
            }
            Err(error) if error.raw_os_error() == Some(libc_errno::ENOENT) => {
                self.loaded.remove(key);
                Ok(())
            }
            Err(error) => Err(LoaderError::Write {
                command: format!("DROP_TABLE {key}"),
                error,
            }),
        }
    }
}

/// A table line of the unwind file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableStatus {
    /// Its key.
    pub key: Key,
    /// Its rows.
    pub rows: u64,
    /// The memory it takes.
    pub bytes: u64,
    /// How many ranges use it.
    pub ranges: u64,
}

/// A process line of the unwind file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessStatus {
    /// The process.
    pub pid: u32,
    /// Its ranges.
    pub ranges: u64,
    /// The distinct tables they use.
    pub tables: u64,
}

/// What the unwind file lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// The tables loaded.
    pub tables: Vec<TableStatus>,
    /// The processes with ranges.
    pub processes: Vec<ProcessStatus>,
    /// Memory in use, in bytes.
    pub total_bytes: u64,
    /// The bound, in bytes.
    pub max_bytes: u64,
}

/// A line of the unwind file that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("unwind file line {line}: {text:?}")]
pub struct StatusError {
    /// Line number, from 1.
    pub line: usize,
    /// The line.
    pub text: String,
}

/// The `name=value` fields of a line, by name.
fn fields<'a>(words: impl Iterator<Item = &'a str>) -> Option<HashMap<&'a str, u64>> {
    words
        .map(|word| {
            let (name, value) = word.split_once('=')?;
            Some((name, value.parse().ok()?))
        })
        .collect()
}

/// Parses what reading the unwind file gives: `table KEY rows=.. bytes=.. ranges=..`,
/// `process PID ranges=.. tables=..` and `total bytes=.. max=..` lines.
pub fn parse_status(text: &str) -> Result<Status, StatusError> {
    let mut status = Status::default();
    for (i, line) in text.lines().enumerate() {
        let bad = || StatusError {
            line: i + 1,
            text: line.to_string(),
        };
        let mut words = line.split_whitespace();
        match words.next() {
            None => {}
            Some("table") => {
                let key = words.next().and_then(Key::from_hex).ok_or_else(bad)?;
                let f = fields(words).ok_or_else(bad)?;
                status.tables.push(TableStatus {
                    key,
                    rows: *f.get("rows").ok_or_else(bad)?,
                    bytes: *f.get("bytes").ok_or_else(bad)?,
                    ranges: *f.get("ranges").ok_or_else(bad)?,
                });
            }
            Some("process") => {
                let pid = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                let f = fields(words).ok_or_else(bad)?;
                status.processes.push(ProcessStatus {
                    pid,
                    ranges: *f.get("ranges").ok_or_else(bad)?,
                    tables: *f.get("tables").ok_or_else(bad)?,
                });
            }
            Some("total") => {
                let f = fields(words).ok_or_else(bad)?;
                status.total_bytes = *f.get("bytes").ok_or_else(bad)?;
                status.max_bytes = *f.get("max").ok_or_else(bad)?;
            }
            Some(_) => return Err(bad()),
        }
    }
    Ok(status)
}

/// Reads and parses the unwind file at `path`.
pub fn read_status(path: &Path) -> io::Result<Status> {
    let text = std::fs::read_to_string(path)?;
    parse_status(&text).map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status() {
        let text = "table 0123456789abcdef0123456789abcdef rows=31245 bytes=250024 ranges=3\n\
                    process 1234 ranges=14 tables=14\n\
                    total bytes=250024 max=33554432\n";
        let status = parse_status(text).expect("valid");
        assert_eq!(status.tables.len(), 1);
        assert_eq!(
            status.tables[0].key.to_hex(),
            "0123456789abcdef0123456789abcdef"
        );
        assert_eq!(status.tables[0].rows, 31245);
        assert_eq!(
            status.processes,
            [ProcessStatus {
                pid: 1234,
                ranges: 14,
                tables: 14
            }]
        );
        assert_eq!((status.total_bytes, status.max_bytes), (250024, 33554432));
        assert!(parse_status("table xyz rows=1\n").is_err());
        assert!(parse_status("process 1 ranges=a tables=1\n").is_err());
    }
}
