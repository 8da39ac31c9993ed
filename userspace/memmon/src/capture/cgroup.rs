//! Watching by cgroup: the `c:PATH` / `-c:PATH` items of `watch-pids`; where a cgroup
//! path as a user types it is (the cgroup2 mount's own path, `/sys/fs/cgroup/NAME`, or a
//! path below its root, `NAME` or `/NAME`: [`place`]), the check of PATH before it is
//! written (a directory in a cgroup2 file system: [`validate`]), the processes of a cgroup
//! ([`cgroup_processes`]), and the cgroup a process belongs to (`/proc/PID/cgroup`), which
//! captures record.

use std::path::{Component, Path, PathBuf};

use thiserror::Error;

/// Why a `--cgroup PATH` (or a glob of the agent's) is refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CgroupError {
    /// Nothing there: the path as given, and the directory looked at.
    #[error("--cgroup {}: no such cgroup ({} does not exist)", .0, .1.display())]
    Missing(String, PathBuf),
    /// Something that is not a directory.
    #[error("--cgroup {0}: not a directory")]
    NotDirectory(String),
    /// Longer than the module looks up.
    #[error("--cgroup: cgroup path too long ({0} > {max} bytes)", max = crate::capture::control::CGROUP_PATH_MAX)]
    TooLong(usize),
    /// A path of the file system outside every cgroup2 mount.
    #[error("--cgroup {0}: not in a cgroup v2 file system (cgroup2 mounts: {1})")]
    NotCgroup2(String, String),
    /// A `..` component: a path below the root is asked for.
    #[error("--cgroup {}: \"..\" is not allowed (give a path below the cgroup2 mount {})", .0, .1.display())]
    Parent(String, PathBuf),
    /// No cgroup2 file system to place a path relative to its root in.
    #[error("--cgroup {0}: no cgroup v2 file system is mounted (none in /proc/self/mountinfo)")]
    NoCgroup2(String),
}

/// This process's mount table, `/proc/self/mountinfo` (empty if unreadable).
pub fn mountinfo() -> String {
    std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default()
}

/// The cgroup2 mount points of a `/proc/self/mountinfo` text (octal escapes decoded):
/// those that show the whole hierarchy (their root `/`) first, each group in the table's
/// order.
pub fn cgroup2_mounts(mountinfo: &str) -> Vec<PathBuf> {
    let mut whole = Vec::new();
    let mut parts = Vec::new();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let Some(separator) = fields.iter().position(|field| *field == "-") else {
            continue;
        };
        if separator < 5 || fields.get(separator + 1) != Some(&"cgroup2") {
            continue;
        }
        let point = PathBuf::from(unescape_mount(fields[4]));
        if fields[3] == "/" {
            whole.push(point);
        } else {
            parts.push(point);
        }
    }
    whole.extend(parts);
    whole
}

/// The cgroup2 mount that paths relative to the hierarchy's root are below: the first of
/// [`cgroup2_mounts`].
pub fn cgroup2_root(mountinfo: &str) -> Option<PathBuf> {
    cgroup2_mounts(mountinfo).into_iter().next()
}

/// `\040` and the other octal escapes of /proc/self/mountinfo.
fn unescape_mount(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            if let Some(code) = std::str::from_utf8(&bytes[i + 1..i + 4])
                .ok()
                .and_then(|digits| u8::from_str_radix(digits, 8).ok())
            {
                out.push(code);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A cgroup path or glob placed under a cgroup2 mount ([`place`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The cgroup2 mount.
    pub mount: PathBuf,
    /// The path or glob below it, its components joined by `/`, no leading `/` (`""`:
    /// the mount's own cgroup).
    pub relative: String,
}

impl Placed {
    /// The directory (or glob) in the file system: the mount joined with the relative part.
    pub fn path(&self) -> PathBuf {
        if self.relative.is_empty() {
            self.mount.clone()
        } else {
            self.mount.join(&self.relative)
        }
    }
}

/// Whether a path component holds a glob's special characters (`*`, `?`, `[`).
pub fn is_glob(component: &str) -> bool {
    component.contains(['*', '?', '['])
}

/// Places `given`, a cgroup path or glob as a user types it, under a cgroup2 mount:
///
/// - at or below one of `mounts` (`/sys/fs/cgroup/system.slice/foo.service`,
///   `/sys/fs/cgroup/w*`; also through symbolic links to one, resolved in the part before
///   the first glob component): that mount, and the rest;
/// - an absolute path whose first component is a directory of the file system (`/tmp/x`,
///   `/sys/fs/cgroup/memory/x` of a cgroup v1 hierarchy), unless `root` has a cgroup of
///   that name: refused, [`CgroupError::NotCgroup2`];
/// - anything else (`system.slice/*.service`, `/work/job-1`): relative to `root`, the
///   cgroup2 mount paths are given below (as `/proc/PID/cgroup` names cgroups).
///
/// `.` and empty components are dropped; `..` is refused. `root` is one of the mounts, or
/// the agent's `cgroup_root`.
pub fn place(given: &str, mounts: &[PathBuf], root: &Path) -> Result<Placed, CgroupError> {
    let path = Path::new(given);
    // The longest first: a mount below another one is the one a path below it is in.
    let mut by_length: Vec<PathBuf> = mounts.to_vec();
    if !mounts.iter().any(|mount| mount == root) {
        by_length.push(root.to_owned());
    }
    by_length.sort_by_key(|mount| std::cmp::Reverse(mount.as_os_str().len()));
    let relative_to = |mount: &Path, path: &Path| -> Result<Placed, CgroupError> {
        let mut parts = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
                Component::ParentDir => {
                    return Err(CgroupError::Parent(given.to_owned(), mount.to_owned()))
                }
                _ => {}
            }
        }
        Ok(Placed {
            mount: mount.to_owned(),
            relative: parts.join("/"),
        })
    };
    fn under<'p>(mounts: &'p [PathBuf], path: &'p Path) -> Option<(&'p Path, &'p Path)> {
        mounts
            .iter()
            .find_map(|mount| Some((mount.as_path(), path.strip_prefix(mount).ok()?)))
    }
    if path.is_absolute() {
        if let Some((mount, rest)) = under(&by_length, path) {
            return relative_to(mount, rest);
        }
        // Through symbolic links: the part before the first glob component, resolved.
        let literal: PathBuf = path
            .components()
            .take_while(|c| !is_glob(&c.as_os_str().to_string_lossy()))
            .collect();
        if let Ok(real) = std::fs::canonicalize(&literal) {
            let rest = path.strip_prefix(&literal).unwrap_or(Path::new(""));
            if let Some((mount, below)) = under(&by_length, &real) {
                return relative_to(mount, &below.join(rest));
            }
        }
        let first = path.components().find_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        });
        if let Some(first) = first {
            let first_text = first.to_string_lossy();
            let outside = !is_glob(&first_text)
                && Path::new("/").join(first).is_dir()
                && !root.join(first).is_dir();
            if outside {
                // The mounts in the table's order, and the root if it is none of them.
                let list: Vec<String> = mounts
                    .iter()
                    .chain((!mounts.iter().any(|m| m == root)).then_some(&root.to_path_buf()))
                    .map(|m| m.display().to_string())
                    .collect();
                return Err(CgroupError::NotCgroup2(
                    given.to_owned(),
                    if list.is_empty() {
                        "none".to_owned()
                    } else {
                        list.join(", ")
                    },
                ));
            }
        }
    }
    relative_to(root, path)
}

/// Checks a `--cgroup PATH` against the cgroup2 mounts of `mountinfo` (a
/// `/proc/self/mountinfo` text): placed ([`place`]: the mount's own path or one relative
/// to the first mount's root), it exists, is a directory, is a mount point or below one,
/// and is at most 4095 bytes long. Returns it with symbolic links resolved (the path
/// written to the module).
pub fn validate_with_mounts(path: &Path, mountinfo: &str) -> Result<PathBuf, CgroupError> {
    let shown = path.display().to_string();
    let too_long = |path: &Path| {
        let len = path.as_os_str().len();
        (len > crate::capture::control::CGROUP_PATH_MAX).then_some(CgroupError::TooLong(len))
    };
    // Too long as given: said so before anything is looked up.
    if let Some(error) = too_long(path) {
        return Err(error);
    }
    let mounts = cgroup2_mounts(mountinfo);
    let path = match (path.to_str(), mounts.first()) {
        (Some(text), Some(root)) => place(text, &mounts, root)?.path(),
        // Not UTF-8: as given.
        (None, _) if path.is_absolute() => path.to_owned(),
        _ if path.is_absolute() => {
            return Err(CgroupError::NotCgroup2(shown, "none".to_owned()));
        }
        _ => return Err(CgroupError::NoCgroup2(shown)),
    };
    if let Some(error) = too_long(&path) {
        return Err(error);
    }
    let metadata =
        std::fs::metadata(&path).map_err(|_| CgroupError::Missing(shown.clone(), path.clone()))?;
    if !metadata.is_dir() {
        return Err(CgroupError::NotDirectory(shown));
    }
    let resolved = std::fs::canonicalize(&path)
        .map_err(|_| CgroupError::Missing(shown.clone(), path.clone()))?;
    if let Some(error) = too_long(&resolved) {
        return Err(error);
    }
    if mounts.iter().any(|point| resolved.starts_with(point)) {
        Ok(resolved)
    } else {
        let list: Vec<String> = mounts.iter().map(|p| p.display().to_string()).collect();
        Err(CgroupError::NotCgroup2(
            shown,
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.join(", ")
            },
        ))
    }
}

/// [`validate_with_mounts`] with this process's `/proc/self/mountinfo`.
pub fn validate(path: &Path) -> Result<PathBuf, CgroupError> {
    validate_with_mounts(path, &mountinfo())
}

/// The path to write in `-c:PATH` for a `--cgroup PATH` as a user typed it: placed
/// ([`place`]) but not checked, since the module also takes the path a removed cgroup was
/// watched with. As given when there is no cgroup2 mount or it cannot be placed.
pub fn unwatch_path(path: &Path) -> PathBuf {
    let mounts = cgroup2_mounts(&mountinfo());
    match (path.to_str(), mounts.first()) {
        (Some(text), Some(root)) => place(text, &mounts, root)
            .map(|placed| placed.path())
            .unwrap_or_else(|_| path.to_owned()),
        _ => path.to_owned(),
    }
}

/// The processes of the cgroup directory `dir` and of the cgroups below it (their
/// `cgroup.procs`), at most `max_directories` directories looked at: the processes a
/// `c:PATH` write watches. Unreadable directories are skipped.
pub fn cgroup_processes(dir: &Path, max_directories: usize) -> Vec<u32> {
    let mut pids = Vec::new();
    let mut stack = vec![dir.to_owned()];
    let mut visited = 0;
    while let Some(dir) = stack.pop() {
        visited += 1;
        if visited > max_directories {
            break;
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
            pids.extend(
                text.lines()
                    .filter_map(|line| line.trim().parse::<u32>().ok()),
            );
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The cgroup v2 path of a `/proc/PID/cgroup` text: its `0::PATH` line (relative to the
/// cgroup2 root, e.g. `/system.slice/foo.service`).
pub fn unified_cgroup(proc_pid_cgroup: &str) -> Option<&str> {
    proc_pid_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::trim_end)
}

/// The cgroup v2 path of process `pid`, read from `/proc/PID/cgroup`.
pub fn process_cgroup(pid: u32) -> Option<String> {
    let text =
        std::fs::read_to_string(crate::capture::control::process_path(pid, "cgroup")).ok()?;
    unified_cgroup(&text).map(str::to_owned)
}

/// The `# cgroup PID PATH` capture header: which cgroup a recorded process belonged to
/// when it first appeared.
pub const CGROUP_HEADER: &str = "cgroup";

/// Parses the value of a `# cgroup` header: `PID PATH`.
pub fn parse_cgroup_header(value: &str) -> Option<(u32, &str)> {
    let (pid, path) = value.split_once(' ')?;
    Some((pid.parse().ok()?, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
50 31 0:38 /ctr /srv/ctr rw,relatime shared:9 - cgroup2 cgroup2 rw
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:7 - cgroup2 cgroup2 rw
42 31 0:38 / /tmp/with\\040space rw master:1 - cgroup2 none rw
";

    /// A fake mountinfo with one cgroup2 mount at `point`.
    fn mountinfo_at(point: &Path) -> String {
        format!(
            "31 23 0:28 / /run rw - tmpfs tmpfs rw\n41 31 0:38 / {} rw,relatime - cgroup2 cgroup2 rw\n",
            point.display()
        )
    }

    #[test]
    fn mounts() {
        assert_eq!(
            cgroup2_mounts(MOUNTINFO),
            [
                PathBuf::from("/sys/fs/cgroup/unified"),
                PathBuf::from("/tmp/with space"),
                PathBuf::from("/srv/ctr"),
            ]
        );
        assert_eq!(
            cgroup2_root(MOUNTINFO),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            cgroup2_root("31 23 0:28 / /run rw - tmpfs tmpfs rw\n"),
            None
        );
        assert_eq!(cgroup2_root("garbage\n- cgroup2\n"), None);
    }

    /// Paths and globs as users type them: the mount's own (`/sys/fs/cgroup/w*`), relative
    /// to its root (`w*`, `/w*`), or elsewhere in the file system (refused).
    #[test]
    fn placing() {
        let root = PathBuf::from("/sys/fs/cgroup/unified");
        let mounts = cgroup2_mounts(MOUNTINFO);
        let placed = |given: &str| place(given, &mounts, &root).map(|p| p.relative);
        for (given, relative) in [
            ("/sys/fs/cgroup/unified/w*", "w*"),
            (
                "/sys/fs/cgroup/unified/system.slice/foo.service",
                "system.slice/foo.service",
            ),
            ("/sys/fs/cgroup/unified/", ""),
            ("w*", "w*"),
            ("/w*", "w*"),
            ("/wa", "wa"),
            ("system.slice/*.service", "system.slice/*.service"),
            ("/system.slice//./*.service/", "system.slice/*.service"),
            ("/", ""),
            ("**/app", "**/app"),
        ] {
            assert_eq!(placed(given), Ok(relative.to_owned()), "{given}");
        }
        // Below another mount: that one.
        assert_eq!(
            place("/srv/ctr/app", &mounts, &root),
            Ok(Placed {
                mount: PathBuf::from("/srv/ctr"),
                relative: "app".to_owned()
            })
        );
        assert_eq!(
            place("wa", &mounts, &root).unwrap().path(),
            PathBuf::from("/sys/fs/cgroup/unified/wa")
        );
        let listed = "/sys/fs/cgroup/unified, /tmp/with space, /srv/ctr".to_owned();
        // /sys, /proc and /tmp are directories of the file system, not cgroups.
        for given in [
            "/sys/fs/cgroup/w*",
            "/sys/fs/cgroup/memory/x",
            "/proc",
            "/tmp/x*",
        ] {
            assert_eq!(
                placed(given),
                Err(CgroupError::NotCgroup2(given.to_owned(), listed.clone())),
                "{given}"
            );
        }
        assert_eq!(
            placed("a/../../x"),
            Err(CgroupError::Parent("a/../../x".to_owned(), root.clone()))
        );
        assert_eq!(
            CgroupError::NotCgroup2("/tmp/x*".to_owned(), "/sys/fs/cgroup".to_owned()).to_string(),
            "--cgroup /tmp/x*: not in a cgroup v2 file system (cgroup2 mounts: /sys/fs/cgroup)"
        );
    }

    /// A cgroup named like a directory of the file system is the cgroup when it exists.
    #[test]
    fn placing_prefers_an_existing_cgroup() {
        let dir = std::env::temp_dir().join(format!("memmon-cgroup-place-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("tmp/job")).unwrap();
        let mounts = vec![dir.clone()];
        assert_eq!(
            place("/tmp/job", &mounts, &dir).map(|p| p.relative),
            Ok("tmp/job".to_owned())
        );
        // Through a symbolic link to the mount.
        let link = std::env::temp_dir().join(format!("memmon-cgroup-link-{}", std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let given = format!("{}/tmp/j*", link.display());
        assert_eq!(
            place(&given, &mounts, &dir).map(|p| p.relative),
            Ok("tmp/j*".to_owned())
        );
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn validation() {
        let dir = std::env::temp_dir().join(format!("memmon-cgroup-{}", std::process::id()));
        let inside = dir.join("cg2/foo.service");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(dir.join("cg2/file"), "").unwrap();
        let dir = std::fs::canonicalize(&dir).unwrap();
        let mounts = mountinfo_at(&dir.join("cg2"));
        let ok = Ok(dir.join("cg2/foo.service"));
        // The mount's own path, and paths relative to its root: the same directory.
        assert_eq!(
            validate_with_mounts(&dir.join("cg2/foo.service"), &mounts),
            ok
        );
        assert_eq!(validate_with_mounts(Path::new("foo.service"), &mounts), ok);
        assert_eq!(validate_with_mounts(Path::new("/foo.service"), &mounts), ok);
        assert_eq!(
            validate_with_mounts(&dir.join("cg2"), &mounts),
            Ok(dir.join("cg2"))
        );
        let shown = |p: &Path| p.display().to_string();
        assert_eq!(
            validate_with_mounts(Path::new("cg2"), &mounts),
            Err(CgroupError::Missing("cg2".to_owned(), dir.join("cg2/cg2")))
        );
        assert_eq!(
            validate_with_mounts(&dir.join("cg2/nothing"), &mounts),
            Err(CgroupError::Missing(
                shown(&dir.join("cg2/nothing")),
                dir.join("cg2/nothing")
            ))
        );
        assert_eq!(
            CgroupError::Missing("wa".to_owned(), PathBuf::from("/sys/fs/cgroup/wa")).to_string(),
            "--cgroup wa: no such cgroup (/sys/fs/cgroup/wa does not exist)"
        );
        assert_eq!(
            validate_with_mounts(&dir.join("cg2/file"), &mounts),
            Err(CgroupError::NotDirectory(shown(&dir.join("cg2/file"))))
        );
        // The temporary directory is a directory of the file system, outside the mount.
        assert_eq!(
            validate_with_mounts(&dir, &mounts),
            Err(CgroupError::NotCgroup2(
                shown(&dir),
                shown(&dir.join("cg2"))
            ))
        );
        assert_eq!(
            validate_with_mounts(&dir, ""),
            Err(CgroupError::NotCgroup2(shown(&dir), "none".to_owned()))
        );
        assert_eq!(
            validate_with_mounts(Path::new("foo.service"), ""),
            Err(CgroupError::NoCgroup2("foo.service".to_owned()))
        );
        // A 2 000-byte path of nested directories is a path like any other; one over the
        // module's limit is refused before anything is looked up.
        let mut deep = dir.join("cg2");
        while deep.as_os_str().len() < 2000 {
            deep.push("n".repeat(200));
        }
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(validate_with_mounts(&deep, &mounts), Ok(deep.clone()));
        let too_long = format!("/{}", "a".repeat(4200));
        assert_eq!(
            validate_with_mounts(Path::new(&too_long), &mounts),
            Err(CgroupError::TooLong(4201))
        );
        assert_eq!(
            CgroupError::TooLong(4201).to_string(),
            "--cgroup: cgroup path too long (4201 > 4095 bytes)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The processes of a cgroup and below it, from their `cgroup.procs`.
    #[test]
    fn processes_of_a_tree() {
        let dir = std::env::temp_dir().join(format!("memmon-cgroup-procs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::create_dir_all(dir.join("c")).unwrap();
        std::fs::write(dir.join("cgroup.procs"), "7\n3\n").unwrap();
        std::fs::write(dir.join("a/cgroup.procs"), "").unwrap();
        std::fs::write(dir.join("a/b/cgroup.procs"), "12\n3\n").unwrap();
        assert_eq!(cgroup_processes(&dir, 100), [3, 7, 12]);
        assert_eq!(cgroup_processes(&dir.join("a"), 100), [3, 12]);
        assert_eq!(
            cgroup_processes(&dir.join("nothing"), 100),
            Vec::<u32>::new()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn proc_pid_cgroup() {
        assert_eq!(
            unified_cgroup("12:pids:/user.slice\n0::/system.slice/foo.service\n"),
            Some("/system.slice/foo.service")
        );
        assert_eq!(unified_cgroup("12:pids:/x\n"), None);
        assert_eq!(parse_cgroup_header("212 /a b"), Some((212, "/a b")));
        assert_eq!(parse_cgroup_header("x /a"), None);
    }
}
