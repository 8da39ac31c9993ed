//! Watching by cgroup: the `c:PATH` / `-c:PATH` items of `watch-pids`, the
//! check of PATH before it is written (an absolute directory in a cgroup2 file system),
//! and the cgroup a process belongs to (`/proc/PID/cgroup`), which captures record.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// Why a `--cgroup PATH` is refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CgroupError {
    /// Not an absolute path.
    #[error("--cgroup {0}: not an absolute path (give the cgroup2 directory, e.g. /sys/fs/cgroup/system.slice/foo.service)")]
    NotAbsolute(String),
    /// Nothing there.
    #[error("--cgroup {0}: no such directory")]
    Missing(String),
    /// Something that is not a directory.
    #[error("--cgroup {0}: not a directory")]
    NotDirectory(String),
    /// Longer than the module looks up.
    #[error("--cgroup: cgroup path too long ({0} > {max} bytes)", max = crate::capture::control::CGROUP_PATH_MAX)]
    TooLong(usize),
    /// A directory outside every cgroup2 mount.
    #[error("--cgroup {0}: not in a cgroup v2 file system (cgroup2 mounts: {1})")]
    NotCgroup2(String, String),
}

/// The cgroup2 mount points of a `/proc/self/mounts` text (octal escapes decoded).
pub fn cgroup2_mounts(mounts: &str) -> Vec<PathBuf> {
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, point, fstype) = (fields.next()?, fields.next()?, fields.next()?);
            (fstype == "cgroup2").then(|| PathBuf::from(unescape_mount(point)))
        })
        .collect()
}

/// `\040` and the other octal escapes of /proc/mounts.
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

/// Checks `path` against the cgroup2 mounts of `mounts` (a `/proc/self/mounts` text): it
/// is absolute, exists, is a directory, and is a mount point or below one. Returns it with
/// symbolic links resolved (the path written to the module).
pub fn validate_with_mounts(path: &Path, mounts: &str) -> Result<PathBuf, CgroupError> {
    let shown = path.display().to_string();
    if !path.is_absolute() {
        return Err(CgroupError::NotAbsolute(shown));
    }
    let too_long = |path: &Path| {
        let len = path.as_os_str().len();
        (len > crate::capture::control::CGROUP_PATH_MAX).then_some(CgroupError::TooLong(len))
    };
    if let Some(error) = too_long(path) {
        return Err(error);
    }
    let metadata = std::fs::metadata(path).map_err(|_| CgroupError::Missing(shown.clone()))?;
    if !metadata.is_dir() {
        return Err(CgroupError::NotDirectory(shown));
    }
    let resolved = std::fs::canonicalize(path).map_err(|_| CgroupError::Missing(shown.clone()))?;
    if let Some(error) = too_long(&resolved) {
        return Err(error);
    }
    let points = cgroup2_mounts(mounts);
    if points.iter().any(|point| resolved.starts_with(point)) {
        Ok(resolved)
    } else {
        let list: Vec<String> = points.iter().map(|p| p.display().to_string()).collect();
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

/// [`validate_with_mounts`] with this process's `/proc/self/mounts`.
pub fn validate(path: &Path) -> Result<PathBuf, CgroupError> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    validate_with_mounts(path, &mounts)
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

    const MOUNTS: &str = "\
tmpfs /sys/fs/cgroup tmpfs rw,relatime 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
cgroup2 /tmp/with\\040space cgroup2 rw 0 0
";

    #[test]
    fn mounts() {
        assert_eq!(
            cgroup2_mounts(MOUNTS),
            [
                PathBuf::from("/sys/fs/cgroup/unified"),
                PathBuf::from("/tmp/with space")
            ]
        );
    }

    #[test]
    fn validation() {
        let dir = std::env::temp_dir().join(format!("memmon-cgroup-{}", std::process::id()));
        let inside = dir.join("cg2/foo.service");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(dir.join("cg2/file"), "").unwrap();
        let dir = std::fs::canonicalize(&dir).unwrap();
        let mounts = format!("cgroup2 {} cgroup2 rw 0 0\n", dir.join("cg2").display());
        assert_eq!(
            validate_with_mounts(&dir.join("cg2/foo.service"), &mounts),
            Ok(dir.join("cg2/foo.service"))
        );
        assert_eq!(
            validate_with_mounts(&dir.join("cg2"), &mounts),
            Ok(dir.join("cg2"))
        );
        let shown = |p: &Path| p.display().to_string();
        assert_eq!(
            validate_with_mounts(Path::new("cg2"), &mounts),
            Err(CgroupError::NotAbsolute("cg2".to_owned()))
        );
        assert_eq!(
            validate_with_mounts(&dir.join("cg2/nothing"), &mounts),
            Err(CgroupError::Missing(shown(&dir.join("cg2/nothing"))))
        );
        assert_eq!(
            validate_with_mounts(&dir.join("cg2/file"), &mounts),
            Err(CgroupError::NotDirectory(shown(&dir.join("cg2/file"))))
        );
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
