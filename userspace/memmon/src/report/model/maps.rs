//! Lines of `/proc/PID/maps` and of the `Vm*`/`Rss*` part of `/proc/PID/status`, as
//! capture snapshots hold them.

use memmon_objects::procfs::MapsEntry;

use crate::stream::lex::parse_dec;

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapsLine {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Executable.
    pub exec: bool,
    /// Shared (`s`) rather than private (`p`).
    pub shared: bool,
    /// File offset of `start`.
    pub offset: u64,
    /// Inode (0 for anonymous mappings).
    pub inode: u64,
    /// Path or pseudo-name (`[heap]`, `[stack]`, ...); empty for anonymous memory.
    pub path: String,
}

impl MapsLine {
    /// Parses `start-end perms offset dev inode [path]` (with the one parser of
    /// `/proc/PID/maps`, [`memmon_objects::procfs`]); `None` if malformed. The path keeps
    /// a ` (deleted)` mark, as the capture has it.
    pub fn parse(line: &str) -> Option<MapsLine> {
        let entry = MapsEntry::parse(line)?;
        let perms = entry.perms.as_bytes();
        let mut path = entry.path;
        if entry.deleted {
            path.push_str(" (deleted)");
        }
        Some(MapsLine {
            start: entry.start,
            end: entry.end,
            read: perms[0] == b'r',
            write: perms[1] == b'w',
            exec: perms[2] == b'x',
            shared: perms[3] == b's',
            offset: entry.offset,
            inode: entry.file.inode,
            path: path.trim().to_owned(),
        })
    }
}

/// The memory counters of `/proc/PID/status` (or of an `rss` line), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Counters {
    /// RssAnon.
    pub anon: u64,
    /// RssFile.
    pub file: u64,
    /// RssShmem.
    pub shmem: u64,
    /// VmSwap.
    pub swap: u64,
}

impl Counters {
    /// Resident bytes: anon + file + shmem.
    pub fn resident(&self) -> u64 {
        self.anon
            .saturating_add(self.file)
            .saturating_add(self.shmem)
    }

    /// Reads `RssAnon:`, `RssFile:`, `RssShmem:`, `VmSwap:` lines (values in kB); `None`
    /// when there is no `RssAnon` line (an empty snapshot).
    pub fn from_status<'l>(lines: impl IntoIterator<Item = &'l str>) -> Option<Counters> {
        let mut counters = Counters::default();
        let mut seen = false;
        for line in lines {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let kib = value
                .split_ascii_whitespace()
                .next()
                .and_then(parse_dec)
                .unwrap_or(0);
            let bytes = kib.saturating_mul(1024);
            match key.trim() {
                "RssAnon" => {
                    counters.anon = bytes;
                    seen = true;
                }
                "RssFile" => counters.file = bytes,
                "RssShmem" => counters.shmem = bytes,
                "VmSwap" => counters.swap = bytes,
                _ => {}
            }
        }
        seen.then_some(counters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let line =
            MapsLine::parse("00401000-00499000 r-xp 00001000 00:02 17 /host/alloc sites").unwrap();
        assert_eq!(
            (line.start, line.end, line.offset),
            (0x401000, 0x499000, 0x1000)
        );
        assert!(line.exec && !line.write && !line.shared);
        assert_eq!(line.path, "/host/alloc sites");
        let anon = MapsLine::parse("7f0000000000-7f0000021000 rw-s 00000000 00:00 0 ").unwrap();
        assert!(anon.shared);
        assert_eq!(anon.path, "");
        assert!(MapsLine::parse("garbage").is_none());
    }

    #[test]
    fn status_lines() {
        let counters =
            Counters::from_status(["VmRSS:\t  100 kB", "RssAnon:\t  12 kB", "RssFile:\t 8 kB"])
                .unwrap();
        assert_eq!(counters.anon, 12 * 1024);
        assert_eq!(counters.file, 8 * 1024);
        assert!(Counters::from_status(["VmRSS: 1 kB"]).is_none());
    }
}
