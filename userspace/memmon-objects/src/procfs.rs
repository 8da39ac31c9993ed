//! Facts of `/proc`: the lines of `/proc/PID/maps`.

use std::io;
use std::path::Path;

/// The file identity of a mapping: its device (major, minor) and inode.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FileId {
    /// Device major number.
    pub major: u32,
    /// Device minor number.
    pub minor: u32,
    /// Inode number.
    pub inode: u64,
}

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapsEntry {
    /// First address.
    pub start: u64,
    /// End (exclusive).
    pub end: u64,
    /// The permissions, e.g. `r-xp`.
    pub perms: String,
    /// Offset in the file of the first byte mapped.
    pub offset: u64,
    /// The file's device and inode (0, 0, 0 for anonymous memory).
    pub file: FileId,
    /// The path or pseudo-name (`[vdso]`, `[stack]`, ...), without a ` (deleted)` suffix;
    /// empty for anonymous memory.
    pub path: String,
    /// Whether the kernel marked the file ` (deleted)`.
    pub deleted: bool,
}

impl MapsEntry {
    /// Whether the mapping is executable.
    pub fn is_executable(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }

    /// Whether this is an executable mapping of a file (not `[vdso]`, `[vsyscall]` or
    /// anonymous memory): one a table can describe.
    pub fn is_executable_file(&self) -> bool {
        self.is_executable() && self.file.inode != 0 && self.path.starts_with('/')
    }

    /// Parses `start-end perms offset major:minor inode [path]`; `None` if malformed.
    pub fn parse(line: &str) -> Option<MapsEntry> {
        let mut rest = line;
        let mut field = || -> Option<&str> {
            let trimmed = rest.trim_start_matches(' ');
            let end = trimmed.find(' ').unwrap_or(trimmed.len());
            let (word, tail) = trimmed.split_at(end);
            rest = tail;
            (!word.is_empty()).then_some(word)
        };
        let range = field()?;
        let perms = field()?.to_string();
        let offset = u64::from_str_radix(field()?, 16).ok()?;
        let dev = field()?;
        let inode: u64 = field()?.parse().ok()?;
        let (start, end) = range.split_once('-')?;
        let start = u64::from_str_radix(start, 16).ok()?;
        let end = u64::from_str_radix(end, 16).ok()?;
        let (major, minor) = dev.split_once(':')?;
        let major = u32::from_str_radix(major, 16).ok()?;
        let minor = u32::from_str_radix(minor, 16).ok()?;
        let mut path = rest.trim_start_matches(' ').to_string();
        let deleted = path.ends_with(" (deleted)");
        if deleted {
            path.truncate(path.len() - " (deleted)".len());
        }
        if perms.len() != 4 || start >= end {
            return None;
        }
        Some(MapsEntry {
            start,
            end,
            perms,
            offset,
            file: FileId {
                major,
                minor,
                inode,
            },
            path,
            deleted,
        })
    }
}

/// A line of `/proc/PID/maps` that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("maps line {line}: {text:?}")]
pub struct MapsError {
    /// Line number, from 1.
    pub line: usize,
    /// The line.
    pub text: String,
}

/// Parses the text of `/proc/PID/maps`.
pub fn parse_maps(text: &str) -> Result<Vec<MapsEntry>, MapsError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            MapsEntry::parse(line).ok_or_else(|| MapsError {
                line: i + 1,
                text: line.to_string(),
            })
        })
        .collect()
}

/// Reads and parses `PROC_ROOT/PID/maps`.
pub fn read_maps(proc_root: &Path, pid: u32) -> io::Result<Vec<MapsEntry>> {
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("maps"))?;
    parse_maps(&text).map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1048601                    /usr/bin/cat
55d0c0a02000-55d0c0a07000 r-xp 00002000 fd:01 1048601                    /usr/bin/cat
55d0c1d34000-55d0c1d55000 rw-p 00000000 00:00 0                          [heap]
7f0b1c000000-7f0b1c022000 r-xp 00000000 103:02 77 /tmp/with space/lib.so (deleted)
7ffd5e5f0000-7ffd5e611000 rw-p 00000000 00:00 0                          [stack]
7ffd5e7c4000-7ffd5e7c6000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
7f0b1d000000-7f0b1d001000 r-xp 00000000 00:00 0 
";

    #[test]
    fn parses_maps() {
        let entries = parse_maps(MAPS).expect("valid maps");
        assert_eq!(entries.len(), 8);
        let cat = &entries[1];
        assert_eq!(cat.start, 0x55d0c0a02000);
        assert_eq!(cat.offset, 0x2000);
        assert_eq!(
            cat.file,
            FileId {
                major: 0xfd,
                minor: 1,
                inode: 1048601
            }
        );
        assert_eq!(cat.path, "/usr/bin/cat");
        let deleted = &entries[3];
        assert_eq!(deleted.path, "/tmp/with space/lib.so");
        assert!(deleted.deleted);
        assert_eq!(deleted.file.major, 0x103);
        let exec: Vec<&str> = entries
            .iter()
            .filter(|e| e.is_executable_file())
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(exec, ["/usr/bin/cat", "/tmp/with space/lib.so"]);
        assert!(parse_maps("garbage\n").is_err());
    }
}
