//! Control of the module through `/proc/memmon` (watch-pids, stats, marker, events) and
//! its parameters in `/sys/module/memmon`. Every /proc and /sys path memmon uses is here:
//! the module's files ([`ProcInterface`], rooted at `--proc-root`), its parameters and
//! version ([`ModuleParams`], `MEMMON_PARAMS_DIR`), and the files of a process
//! ([`process_path`]).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Default location of the module's /proc directory.
pub const DEFAULT_PROC_ROOT: &str = "/proc/memmon";

/// Default directory of the module's parameters (`stack_depth`, `sample_ms`, `buflen`...).
pub const DEFAULT_PARAMS_DIR: &str = "/sys/module/memmon/parameters";

/// The environment variable that replaces [`DEFAULT_PARAMS_DIR`] (tests).
pub const PARAMS_DIR_VAR: &str = "MEMMON_PARAMS_DIR";

/// Where processes are: `/proc`.
const PROC: &str = "/proc";

/// `/proc/PID/NAME`: a file of a process (`maps`, `status`, `comm`, `map_files/...`).
pub fn process_path(pid: u32, name: &str) -> PathBuf {
    Path::new(PROC).join(pid.to_string()).join(name)
}

/// The module's directory in sysfs: its parameters, and its `version` beside them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleParams {
    dir: PathBuf,
}

impl Default for ModuleParams {
    /// `MEMMON_PARAMS_DIR`, else `/sys/module/memmon/parameters`.
    fn default() -> Self {
        ModuleParams::new(
            std::env::var_os(PARAMS_DIR_VAR)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_PARAMS_DIR)),
        )
    }
}

impl ModuleParams {
    /// The parameters in `dir` (normally `/sys/module/memmon/parameters`).
    pub fn new(dir: impl Into<PathBuf>) -> ModuleParams {
        ModuleParams { dir: dir.into() }
    }

    /// The parameter directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of parameter `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The module's `version` file: beside the parameter directory
    /// (`/sys/module/memmon/version`).
    pub fn version_path(&self) -> PathBuf {
        self.dir.parent().unwrap_or(&self.dir).join("version")
    }

    /// The value of parameter `name`, trimmed; `None` when unreadable or empty.
    pub fn get(&self, name: &str) -> Option<String> {
        read_trimmed(&self.path(name))
    }

    /// The module's version, trimmed; `None` when unreadable or empty.
    pub fn version(&self) -> Option<String> {
        read_trimmed(&self.version_path())
    }
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}

/// An error talking to the module, saying what went wrong in terms of the module.
#[derive(Debug, Error)]
pub enum ControlError {
    /// The module's /proc directory does not exist.
    #[error("memmon module not loaded ({} does not exist)", root.display())]
    ModuleNotLoaded {
        /// The proc root looked at.
        root: PathBuf,
    },
    /// Opening or writing a file was refused (EACCES/EPERM): not root.
    #[error("permission denied on {} (memmon needs root)", path.display())]
    PermissionDenied {
        /// The file.
        path: PathBuf,
    },
    /// The module rejected a pid that names no process (ESRCH).
    #[error("no such process: {}", join_pids(pids))]
    NoSuchProcess {
        /// The pids of the request that have no /proc entry (all of them if unknown).
        pids: Vec<i64>,
    },
    /// The module rejected the request as malformed (EINVAL).
    #[error("the module rejected {request:?} as invalid input")]
    InvalidInput {
        /// What was written.
        request: String,
    },
    /// The module refused a cgroup of a `c:PATH` or `-c:PATH` item.
    #[error("{refusal}")]
    CgroupRefused {
        /// Why, from the errno of the write.
        refusal: CgroupRefusal,
    },
    /// A file of the module does not have the expected content.
    #[error("unexpected content in {}: {detail}", path.display())]
    BadContent {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// Any other I/O error.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

/// Why the module refused a cgroup path (docs/events.md, `watch-pids` write form), told by
/// the errno of the write.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CgroupRefusal {
    /// ENAMETOOLONG, the whole path: longer than [`CGROUP_PATH_MAX`].
    #[error("cgroup path too long ({len} > {} bytes)", CGROUP_PATH_MAX)]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// ENAMETOOLONG for a path within the limit: a name on it is too long.
    #[error("a name in the cgroup path {} is too long", path.display())]
    NameTooLong {
        /// The path.
        path: PathBuf,
    },
    /// ENOENT for a directory that exists: its cgroup is outside the writer's cgroup
    /// namespace (or was removed as it was looked up).
    #[error("cgroup {} is outside this process's cgroup namespace", path.display())]
    OutsideNamespace {
        /// The path.
        path: PathBuf,
    },
    /// ENOENT for a path that names nothing.
    #[error("no such cgroup: {}", path.display())]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// ENOTDIR.
    #[error("not a cgroup directory: {} (not a directory)", path.display())]
    NotDirectory {
        /// The path.
        path: PathBuf,
    },
    /// EMEDIUMTYPE.
    #[error("not a cgroup v2 directory: {} (not in a cgroup2 file system)", path.display())]
    NotCgroup2 {
        /// The path.
        path: PathBuf,
    },
    /// ELOOP.
    #[error("too many symbolic links in the cgroup path {}", path.display())]
    SymlinkLoop {
        /// The path.
        path: PathBuf,
    },
    /// ENOSPC.
    #[error("cannot watch cgroup {}: {} cgroups are watched already (the module's limit)", path.display(), CGROUPS_MAX)]
    TooMany {
        /// The path.
        path: PathBuf,
    },
    /// EINVAL: not an absolute path, or a NUL byte in it.
    #[error("the module refused the cgroup path {} (not absolute, or a NUL byte in it)", path.display())]
    Invalid {
        /// The path.
        path: PathBuf,
    },
}

/// Longest cgroup path the module looks up, in bytes: `PATH_MAX` with its NUL.
pub const CGROUP_PATH_MAX: usize = 4095;

/// Most cgroups the module watches at once.
pub const CGROUPS_MAX: usize = 64;

impl CgroupRefusal {
    /// Why the module refused `path` with `errno`; `None` for an errno that says nothing
    /// about the path.
    pub fn from_errno(path: &Path, errno: i32) -> Option<CgroupRefusal> {
        let path_buf = path.to_owned();
        Some(match errno {
            ENAMETOOLONG if path.as_os_str().len() > CGROUP_PATH_MAX => CgroupRefusal::TooLong {
                len: path.as_os_str().len(),
            },
            ENAMETOOLONG => CgroupRefusal::NameTooLong { path: path_buf },
            ENOENT if path.is_dir() => CgroupRefusal::OutsideNamespace { path: path_buf },
            ENOENT => CgroupRefusal::Missing { path: path_buf },
            ENOTDIR => CgroupRefusal::NotDirectory { path: path_buf },
            EMEDIUMTYPE => CgroupRefusal::NotCgroup2 { path: path_buf },
            ELOOP => CgroupRefusal::SymlinkLoop { path: path_buf },
            ENOSPC => CgroupRefusal::TooMany { path: path_buf },
            EINVAL => CgroupRefusal::Invalid { path: path_buf },
            _ => return None,
        })
    }
}

fn join_pids(pids: &[i64]) -> String {
    pids.iter()
        .map(|pid| pid.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A request to change the watch set, as written to `watch-pids`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchChange {
    /// `N`: watch process N.
    Add(u32),
    /// `+N`: watch process N and its future children.
    AddFollowing(u32),
    /// `-N`: stop watching N.
    Remove(u32),
    /// `0`: stop watching everything.
    Clear,
}

impl fmt::Display for WatchChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchChange::Add(pid) => write!(f, "{pid}"),
            WatchChange::AddFollowing(pid) => write!(f, "+{pid}"),
            WatchChange::Remove(pid) => write!(f, "-{pid}"),
            WatchChange::Clear => f.write_str("0"),
        }
    }
}

/// Parses the ranged pid list of `watch-pids` (`3000,3005-3007`, or empty) into sorted pids.
pub fn parse_pid_ranges(text: &str) -> Result<Vec<u32>, String> {
    let text = text.trim();
    let mut pids = Vec::new();
    if text.is_empty() {
        return Ok(pids);
    }
    for part in text.split(',') {
        let number = |s: &str| -> Result<u32, String> {
            crate::stream::lex::parse_dec(s)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("{s:?} is not a pid"))
        };
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (number(first)?, number(last)?);
                if first > last {
                    return Err(format!("range {part:?} is backwards"));
                }
                pids.extend(first..=last);
            }
            None => pids.push(number(part)?),
        }
    }
    pids.sort_unstable();
    pids.dedup();
    Ok(pids)
}

/// Formats pids in the ranged form of `watch-pids` (`3000,3005-3007`).
pub fn format_pid_ranges(pids: &[u32]) -> String {
    let mut sorted = pids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    format_ranges(sorted.into_iter().map(u64::from))
}

/// Formats ascending numbers with runs as ranges: `1-3,5,7-8` (the form of `watch-pids`,
/// also used for the generations of the access report).
pub fn format_ranges(sorted: impl IntoIterator<Item = u64>) -> String {
    let mut parts = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    let range = |(first, last): (u64, u64)| {
        if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        }
    };
    for value in sorted {
        run = match run {
            Some((first, last)) if last.checked_add(1) == Some(value) => Some((first, value)),
            Some(done) => {
                parts.push(range(done));
                Some((value, value))
            }
            None => Some((value, value)),
        };
    }
    parts.extend(run.map(range));
    parts.join(",")
}

/// The module's counters from `stats`: `key value` lines, kept in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Every `key value` pair.
    pub entries: Vec<(String, String)>,
}

impl Stats {
    /// Parses `key value` lines; blank lines are skipped, a line without a value is an error.
    pub fn parse(text: &str) -> Result<Stats, String> {
        let mut entries = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let (key, value) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| format!("line {line:?} is not `key value`"))?;
            entries.push((key.to_owned(), value.trim().to_owned()));
        }
        Ok(Stats { entries })
    }

    /// The value of `key`, as text.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }

    /// The value of `key` as a number.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|value| value.parse().ok())
    }
}

/// The module's /proc interface, rooted at a configurable directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInterface {
    root: PathBuf,
}

impl Default for ProcInterface {
    fn default() -> Self {
        ProcInterface::new(DEFAULT_PROC_ROOT)
    }
}

impl ProcInterface {
    /// The interface under `root` (normally `/proc/memmon`).
    pub fn new(root: impl Into<PathBuf>) -> ProcInterface {
        ProcInterface { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of one of the module's files (`events`, `watch-pids`, `stats`, `marker`).
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Turns an I/O error on `path` into the most telling [`ControlError`].
    fn classify(&self, path: &Path, source: io::Error) -> ControlError {
        if source.kind() == io::ErrorKind::NotFound && !self.root.exists() {
            return ControlError::ModuleNotLoaded {
                root: self.root.clone(),
            };
        }
        match source.raw_os_error() {
            Some(code) if code == EACCES || code == EPERM => ControlError::PermissionDenied {
                path: path.to_owned(),
            },
            _ => ControlError::Io {
                path: path.to_owned(),
                source,
            },
        }
    }

    fn open(&self, name: &str, options: &OpenOptions) -> Result<File, ControlError> {
        let path = self.path(name);
        options
            .open(&path)
            .map_err(|source| self.classify(&path, source))
    }

    fn read_to_string(&self, name: &str) -> Result<String, ControlError> {
        let path = self.path(name);
        let mut text = String::new();
        self.open(name, OpenOptions::new().read(true))?
            .read_to_string(&mut text)
            .map_err(|source| self.classify(&path, source))?;
        Ok(text)
    }

    /// Opens `events` with extra open(2) flags (e.g. `O_NONBLOCK`).
    pub fn open_events_with_flags(&self, flags: i32) -> Result<File, ControlError> {
        use std::os::unix::fs::OpenOptionsExt;
        self.open("events", OpenOptions::new().read(true).custom_flags(flags))
    }

    /// Applies watch-set changes in one write (the module applies all or none).
    pub fn change_watch(&self, changes: &[WatchChange]) -> Result<(), ControlError> {
        let request = changes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ");
        self.write_watch(request, |errno, request| match errno {
            ESRCH => Some(ControlError::NoSuchProcess {
                pids: missing_pids(changes),
            }),
            EINVAL => Some(ControlError::InvalidInput {
                request: request.to_owned(),
            }),
            _ => None,
        })
    }

    /// Watches every process of the cgroup v2 directory `path` and below it (`c:PATH`;
    /// check it first with [`crate::capture::cgroup::validate`]).
    pub fn watch_cgroup(&self, path: &Path) -> Result<(), ControlError> {
        self.write_cgroup_item("c:", path)
    }

    /// Stops watching the cgroup at `path` (`-c:PATH`).
    pub fn unwatch_cgroup(&self, path: &Path) -> Result<(), ControlError> {
        self.write_cgroup_item("-c:", path)
    }

    /// Writes the item `PREFIX PATH`; a refusal of the path says why ([`CgroupRefusal`]).
    fn write_cgroup_item(&self, prefix: &str, path: &Path) -> Result<(), ControlError> {
        self.write_watch(format!("{prefix}{}", path.display()), |errno, _| {
            CgroupRefusal::from_errno(path, errno)
                .map(|refusal| ControlError::CgroupRefused { refusal })
        })
    }

    /// Writes `request` to `watch-pids` in one write; `refused` turns the errno of a refused
    /// write into the error that says why (`None`: the errno's own error).
    fn write_watch(
        &self,
        request: String,
        refused: impl FnOnce(i32, &str) -> Option<ControlError>,
    ) -> Result<(), ControlError> {
        let path = self.path("watch-pids");
        let mut file = self.open("watch-pids", OpenOptions::new().write(true))?;
        let line = format!("{request}\n");
        match file.write(line.as_bytes()) {
            Ok(written) if written == line.len() => Ok(()),
            Ok(written) => Err(ControlError::BadContent {
                path,
                detail: format!("short write ({written} of {} bytes)", line.len()),
            }),
            Err(source) => Err(source
                .raw_os_error()
                .and_then(|errno| refused(errno, &request))
                .unwrap_or_else(|| self.classify(&path, source))),
        }
    }

    /// Watches `pids`.
    pub fn watch(&self, pids: &[u32]) -> Result<(), ControlError> {
        let changes: Vec<_> = pids.iter().map(|&pid| WatchChange::Add(pid)).collect();
        self.change_watch(&changes)
    }

    /// Watches `pids` and their future children.
    pub fn watch_following(&self, pids: &[u32]) -> Result<(), ControlError> {
        let changes: Vec<_> = pids
            .iter()
            .map(|&pid| WatchChange::AddFollowing(pid))
            .collect();
        self.change_watch(&changes)
    }

    /// Stops watching `pids`.
    pub fn unwatch(&self, pids: &[u32]) -> Result<(), ControlError> {
        let changes: Vec<_> = pids.iter().map(|&pid| WatchChange::Remove(pid)).collect();
        self.change_watch(&changes)
    }

    /// Stops watching every process.
    pub fn clear(&self) -> Result<(), ControlError> {
        self.change_watch(&[WatchChange::Clear])
    }

    /// The watched pids, sorted.
    pub fn watched(&self) -> Result<Vec<u32>, ControlError> {
        let text = self.read_to_string("watch-pids")?;
        // The first line is the pids; `c:PATH` lines (watched cgroups) follow.
        let pid_line = text.lines().next().unwrap_or("");
        parse_pid_ranges(pid_line).map_err(|detail| ControlError::BadContent {
            path: self.path("watch-pids"),
            detail,
        })
    }

    /// The watched cgroups (the `c:PATH` lines of `watch-pids`), in the order added.
    pub fn watched_cgroups(&self) -> Result<Vec<PathBuf>, ControlError> {
        let text = self.read_to_string("watch-pids")?;
        Ok(text
            .lines()
            .filter_map(|line| line.strip_prefix("c:"))
            .map(PathBuf::from)
            .collect())
    }

    /// The module's counters.
    pub fn stats(&self) -> Result<Stats, ControlError> {
        let text = self.read_to_string("stats")?;
        Stats::parse(&text).map_err(|detail| ControlError::BadContent {
            path: self.path("stats"),
            detail,
        })
    }

    /// Writes a marker line (appears as a `mark` event). Newlines are replaced by spaces.
    pub fn mark(&self, text: &str) -> Result<(), ControlError> {
        let path = self.path("marker");
        let mut file = self.open("marker", OpenOptions::new().write(true))?;
        file.write_all(format!("{}\n", text.replace('\n', " ")).as_bytes())
            .map_err(|source| self.classify(&path, source))
    }
}

/// The size of each per-CPU ring that `record`, `run`, `attach`, `top` and the agent ask
/// for when they start ([`ProcInterface::grow_rings`]): 1 MiB, the module's default since
/// issue 50.
pub const RING_TARGET_BYTES: u64 = 1 << 20;

/// What [`ProcInterface::grow_rings`] found and did.
#[derive(Debug)]
pub enum RingGrowth {
    /// `stats` could not be read or has no `rings`/`ring_bytes`: nothing was done.
    Unknown,
    /// Every ring is already at least the size asked for.
    LargeEnough {
        /// Bytes per CPU ring.
        ring_bytes: u64,
    },
    /// The rings were grown through `buflen`.
    Grown {
        /// Bytes per CPU ring before.
        from: u64,
        /// Bytes per CPU ring after, as `stats` says (the size asked for if it says nothing).
        to: u64,
        /// What was written to `buflen` (total bytes of all rings).
        written: u64,
    },
    /// The module has no `buflen` file (an older module): its rings are as loaded.
    NoBuflen {
        /// Bytes per CPU ring.
        ring_bytes: u64,
        /// Number of rings.
        rings: u64,
    },
    /// Writing `buflen` failed.
    Failed {
        /// Bytes per CPU ring.
        ring_bytes: u64,
        /// What was written.
        written: u64,
        /// Why.
        error: io::Error,
    },
}

impl RingGrowth {
    /// What to say of it, if anything: whether it is a warning, and the sentence (without
    /// the speaker's prefix); `reader` names who could be outrun ("memmon", "the agent"),
    /// `buflen` the file written.
    pub fn describe(&self, buflen: &std::path::Path, reader: &str) -> Option<(bool, String)> {
        let buflen = buflen.display();
        Some(match self {
            RingGrowth::Unknown | RingGrowth::LargeEnough { .. } => return None,
            RingGrowth::Grown { from, to, written } if to > from => (
                false,
                format!(
                    "grew the module's event rings from {from} to {to} bytes per CPU \
                     (wrote {written} to {buflen})"
                ),
            ),
            RingGrowth::Grown { from, written, .. } => (
                true,
                format!(
                    "wrote {written} to {buflen} but the module's event rings are still {from} \
                     bytes per CPU"
                ),
            ),
            RingGrowth::NoBuflen { ring_bytes, rings } => (
                true,
                format!(
                    "the module's {rings} event rings are {ring_bytes} bytes per CPU and a burst \
                     of faults can outrun {reader}; this module cannot grow them ({buflen} does \
                     not exist): load it with a larger buflen (insmod memmon.ko buflen={})",
                    rings.max(&1).saturating_mul(RING_TARGET_BYTES)
                ),
            ),
            RingGrowth::Failed {
                ring_bytes,
                written,
                error,
            } => (
                true,
                format!(
                    "cannot grow the module's event rings from {ring_bytes} bytes per CPU \
                     (writing {written} to {buflen}): {}",
                    match error.raw_os_error() {
                        Some(code) =>
                            format!("{} (os error {code})", nix::errno::Errno::from_raw(code)),
                        None => error.to_string(),
                    }
                ),
            ),
        })
    }
}

impl ProcInterface {
    /// Grows every per-CPU ring to at least `per_ring` bytes when `stats` says one is
    /// smaller (`ring_bytes` below it): writes `rings * per_ring` to `buflen`, which the
    /// module divides among its rings (rounded down to a power of two) and never shrinks.
    pub fn grow_rings(&self, per_ring: u64) -> RingGrowth {
        let Ok(stats) = self.stats() else {
            return RingGrowth::Unknown;
        };
        let (Some(rings), Some(ring_bytes)) = (stats.get_u64("rings"), stats.get_u64("ring_bytes"))
        else {
            return RingGrowth::Unknown;
        };
        if ring_bytes >= per_ring {
            return RingGrowth::LargeEnough { ring_bytes };
        }
        let path = self.path("buflen");
        if !path.exists() {
            return RingGrowth::NoBuflen { ring_bytes, rings };
        }
        let written = rings.max(1).saturating_mul(per_ring);
        let result = OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut file| file.write_all(format!("{written}\n").as_bytes()));
        if let Err(error) = result {
            return RingGrowth::Failed {
                ring_bytes,
                written,
                error,
            };
        }
        let to = self
            .stats()
            .ok()
            .and_then(|stats| stats.get_u64("ring_bytes"))
            .unwrap_or(per_ring);
        RingGrowth::Grown {
            from: ring_bytes,
            to,
            written,
        }
    }
}

const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const ESRCH: i32 = 3;
const EACCES: i32 = 13;
const ENOTDIR: i32 = 20;
const EINVAL: i32 = 22;
const ENOSPC: i32 = 28;
const ENAMETOOLONG: i32 = 36;
const ELOOP: i32 = 40;
const EMEDIUMTYPE: i32 = 124;

/// The pids of a request that have no /proc entry; all of them when each seems alive.
fn missing_pids(changes: &[WatchChange]) -> Vec<i64> {
    let pids: Vec<i64> = changes
        .iter()
        .filter_map(|change| match change {
            WatchChange::Add(pid) | WatchChange::AddFollowing(pid) => Some(i64::from(*pid)),
            WatchChange::Remove(pid) => Some(-i64::from(*pid)),
            WatchChange::Clear => None,
        })
        .collect();
    let missing: Vec<i64> = pids
        .iter()
        .copied()
        .filter(|pid| {
            let pid = u32::try_from(pid.unsigned_abs()).unwrap_or(u32::MAX);
            !process_path(pid, "").exists()
        })
        .collect();
    if missing.is_empty() {
        pids
    } else {
        missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_refusals_say_why() {
        let said = |path: &str, errno: i32| {
            CgroupRefusal::from_errno(Path::new(path), errno).map(|refusal| refusal.to_string())
        };
        let long = format!("/sys/fs/cgroup/{}", "a/".repeat(2100));
        assert_eq!(
            said(&long, ENAMETOOLONG).as_deref(),
            Some("cgroup path too long (4215 > 4095 bytes)")
        );
        assert_eq!(
            said("/sys/fs/cgroup/x", ENAMETOOLONG).as_deref(),
            Some("a name in the cgroup path /sys/fs/cgroup/x is too long")
        );
        let missing = "/nonexistent/memmon-cgroup";
        assert_eq!(
            said(missing, ENOENT).as_deref(),
            Some("no such cgroup: /nonexistent/memmon-cgroup")
        );
        // A directory that exists and that the module does not find: outside the namespace.
        let dir = std::env::temp_dir();
        assert_eq!(
            said(dir.to_str().unwrap(), ENOENT),
            Some(format!(
                "cgroup {} is outside this process's cgroup namespace",
                dir.display()
            ))
        );
        assert_eq!(
            said("/tmp", ENOSPC).as_deref(),
            Some("cannot watch cgroup /tmp: 64 cgroups are watched already (the module's limit)")
        );
        assert_eq!(
            said("/proc", EMEDIUMTYPE).as_deref(),
            Some("not a cgroup v2 directory: /proc (not in a cgroup2 file system)")
        );
        assert_eq!(
            said("/x/cgroup.procs", ENOTDIR).as_deref(),
            Some("not a cgroup directory: /x/cgroup.procs (not a directory)")
        );
        assert_eq!(
            said("/x", ELOOP).as_deref(),
            Some("too many symbolic links in the cgroup path /x")
        );
        assert!(said("/x", EINVAL).is_some());
        // Not about the path: the errno's own error.
        assert_eq!(said("/x", EACCES), None);
        assert_eq!(said("/x", EPERM), None);
    }

    #[test]
    fn pid_ranges_parse() {
        assert_eq!(parse_pid_ranges("\n").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_pid_ranges("").unwrap(), Vec::<u32>::new());
        assert_eq!(
            parse_pid_ranges("3000,3005-3007\n").unwrap(),
            vec![3000, 3005, 3006, 3007]
        );
        assert_eq!(parse_pid_ranges("7").unwrap(), vec![7]);
        assert_eq!(parse_pid_ranges("5-5").unwrap(), vec![5]);
        assert_eq!(parse_pid_ranges("9,1-2").unwrap(), vec![1, 2, 9]);
        for bad in [
            "a",
            "1,",
            ",1",
            "1-",
            "-1",
            "3-1",
            "1 2",
            "1--2",
            "+1",
            "99999999999",
        ] {
            assert!(parse_pid_ranges(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pid_ranges_format() {
        assert_eq!(format_pid_ranges(&[]), "");
        assert_eq!(
            format_pid_ranges(&[3007, 3000, 3005, 3006]),
            "3000,3005-3007"
        );
        assert_eq!(format_pid_ranges(&[1, 2, 3, 5, 7, 8]), "1-3,5,7-8");
        let pids = vec![1, 2, 4, 10, 11, 12, u32::MAX];
        assert_eq!(parse_pid_ranges(&format_pid_ranges(&pids)).unwrap(), pids);
    }

    #[test]
    fn stats_parse() {
        let stats = Stats::parse("produced 123\ndelivered 120\nfault 100\n\n").unwrap();
        assert_eq!(stats.get_u64("produced"), Some(123));
        assert_eq!(stats.get("fault"), Some("100"));
        assert_eq!(stats.get("nope"), None);
        assert_eq!(stats.entries.len(), 3);
        assert!(Stats::parse("lonely\n").is_err());
    }

    #[test]
    fn watch_changes_format() {
        let changes = [
            WatchChange::Add(1),
            WatchChange::AddFollowing(2),
            WatchChange::Remove(3),
            WatchChange::Clear,
        ];
        let text: Vec<String> = changes.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["1", "+2", "-3", "0"]);
    }

    fn temp_root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("memmon-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        root
    }

    #[test]
    fn missing_module_is_reported() {
        let proc = ProcInterface::new("/nonexistent/memmon");
        let error = proc.watched().unwrap_err();
        assert!(
            matches!(error, ControlError::ModuleNotLoaded { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("not loaded"));
        assert!(matches!(
            proc.stats(),
            Err(ControlError::ModuleNotLoaded { .. })
        ));
        assert!(matches!(
            proc.watch(&[1]),
            Err(ControlError::ModuleNotLoaded { .. })
        ));
    }

    #[test]
    fn fake_root_round_trip() {
        let root = temp_root("fake");
        std::fs::write(root.join("watch-pids"), "").unwrap();
        std::fs::write(root.join("stats"), "produced 5\nwatched 2\n").unwrap();
        std::fs::write(root.join("marker"), "").unwrap();
        let proc = ProcInterface::new(&root);
        proc.watch_following(&[42, 43]).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("watch-pids")).unwrap(),
            "+42 +43\n"
        );
        std::fs::write(root.join("watch-pids"), "42-43\n").unwrap();
        assert_eq!(proc.watched().unwrap(), vec![42, 43]);
        assert_eq!(proc.stats().unwrap().get_u64("watched"), Some(2));
        proc.mark("hello\nthere").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("marker")).unwrap(),
            "hello there\n"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn grow_rings_writes_buflen_only_when_small() {
        let root = temp_root("grow");
        let proc = ProcInterface::new(&root);
        // No stats: nothing known, nothing written.
        assert!(matches!(
            proc.grow_rings(RING_TARGET_BYTES),
            RingGrowth::Unknown
        ));
        // An older module: 4 rings of 16 KiB, no buflen file.
        std::fs::write(root.join("stats"), "rings 4\nring_bytes 16384\n").unwrap();
        assert!(matches!(
            proc.grow_rings(RING_TARGET_BYTES),
            RingGrowth::NoBuflen {
                ring_bytes: 16384,
                rings: 4
            }
        ));
        // With buflen: 4 MiB is written for 4 rings; stats (a plain file here) still says
        // 16 KiB, which is what is reported as the size after.
        std::fs::write(root.join("buflen"), "65536\n").unwrap();
        match proc.grow_rings(RING_TARGET_BYTES) {
            RingGrowth::Grown { from, to, written } => {
                assert_eq!((from, to, written), (16384, 16384, 4194304));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(root.join("buflen")).unwrap(),
            "4194304\n"
        );
        // Already 1 MiB per ring: nothing written.
        std::fs::write(root.join("stats"), "rings 2\nring_bytes 1048576\n").unwrap();
        std::fs::write(root.join("buflen"), "x").unwrap();
        assert!(matches!(
            proc.grow_rings(RING_TARGET_BYTES),
            RingGrowth::LargeEnough {
                ring_bytes: 1048576
            }
        ));
        assert_eq!(std::fs::read_to_string(root.join("buflen")).unwrap(), "x");
        // A buflen that cannot be written (a directory here): Failed, with the error.
        std::fs::write(root.join("stats"), "rings 2\nring_bytes 8192\n").unwrap();
        std::fs::remove_file(root.join("buflen")).unwrap();
        std::fs::create_dir(root.join("buflen")).unwrap();
        match proc.grow_rings(RING_TARGET_BYTES) {
            RingGrowth::Failed {
                ring_bytes,
                written,
                error,
            } => {
                assert_eq!((ring_bytes, written), (8192, 2097152));
                assert_eq!(error.raw_os_error(), Some(21)); // EISDIR
            }
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&root);
    }
}
