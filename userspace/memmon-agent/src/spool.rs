//! The spool: snapshot files in one directory under a size cap. Before a file is written,
//! the oldest files (by name, which starts with the time) are removed until the new one
//! fits. A write that fails for want of space (ENOSPC, EDQUOT) stops the spooling: the
//! snapshot is dropped and counted, one log line says so, and later snapshots are dropped
//! without a try until the next interval's (one try per interval); when one fits again,
//! one log line says that too.

use std::io;
use std::path::PathBuf;

/// Where spool files go: a directory, or (tests) memory.
pub trait Store {
    /// The spool's files, with their sizes.
    fn list(&self) -> io::Result<Vec<(String, u64)>>;
    /// Writes a whole file (complete or not there at all).
    fn write(&mut self, name: &str, bytes: &[u8]) -> io::Result<()>;
    /// Removes a file.
    fn remove(&mut self, name: &str) -> io::Result<()>;
}

/// The spool's files end so.
pub const SUFFIX: &str = ".pb.gz";

/// A directory: files written as `.NAME.tmp` and renamed, so that a reader (a fleet's
/// collector) never sees half a file.
#[derive(Debug, Clone)]
pub struct DirStore {
    dir: PathBuf,
}

impl DirStore {
    /// The directory, created if missing.
    pub fn new(dir: PathBuf) -> io::Result<DirStore> {
        std::fs::create_dir_all(&dir)?;
        Ok(DirStore { dir })
    }
}

impl Store for DirStore {
    fn list(&self) -> io::Result<Vec<(String, u64)>> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(SUFFIX) && !name.starts_with('.') {
                files.push((name, entry.metadata()?.len()));
            }
        }
        Ok(files)
    }

    fn write(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let temporary = self.dir.join(format!(".{name}.tmp"));
        let result = std::fs::write(&temporary, bytes)
            .and_then(|()| std::fs::rename(&temporary, self.dir.join(name)));
        if result.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        result
    }

    fn remove(&mut self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.dir.join(name))
    }
}

/// What became of one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Written (after removing this many old files).
    Written {
        /// Old files removed to make room.
        rotated: usize,
    },
    /// Dropped: the spool is full.
    Dropped,
}

/// The spool and its counts.
pub struct Spool<S: Store> {
    store: S,
    max_bytes: u64,
    /// Stopped by a full disk.
    full: bool,
    /// Files written, dropped, rotated out.
    pub written: u64,
    /// Snapshots dropped (disk full, or one larger than the cap).
    pub dropped: u64,
    /// Old files removed under the cap.
    pub rotated: u64,
}

/// Whether an error means "no room".
fn no_space(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(nix::libc::ENOSPC) | Some(nix::libc::EDQUOT)
    ) || error.kind() == io::ErrorKind::StorageFull
}

impl<S: Store> Spool<S> {
    /// A spool in `store` holding at most `max_bytes`.
    pub fn new(store: S, max_bytes: u64) -> Spool<S> {
        Spool {
            store,
            max_bytes,
            full: false,
            written: 0,
            dropped: 0,
            rotated: 0,
        }
    }

    /// Whether a full disk stopped the spooling.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Bytes in the spool now.
    pub fn bytes(&self) -> u64 {
        self.store
            .list()
            .map(|files| files.iter().map(|(_, size)| size).sum())
            .unwrap_or(0)
    }

    /// Writes one file under the cap. `retry`: try even though the disk was full (once per
    /// interval). An error other than no room is returned (the snapshot is counted
    /// dropped).
    pub fn put(&mut self, name: &str, bytes: &[u8], retry: bool) -> io::Result<Outcome> {
        let size = bytes.len() as u64;
        if size > self.max_bytes {
            self.dropped += 1;
            return Err(io::Error::other(format!(
                "{name}: {size} bytes, more than the spool's cap of {} bytes",
                self.max_bytes
            )));
        }
        if self.full && !retry {
            self.dropped += 1;
            return Ok(Outcome::Dropped);
        }
        let mut files = match self.store.list() {
            Ok(files) => files,
            Err(error) => {
                self.dropped += 1;
                return Err(error);
            }
        };
        files.sort();
        let mut total: u64 = files.iter().map(|(_, size)| size).sum();
        let mut rotated = 0;
        for (old, old_size) in &files {
            if total + size <= self.max_bytes {
                break;
            }
            if self.store.remove(old).is_ok() {
                total -= old_size;
                rotated += 1;
            }
        }
        self.rotated += rotated as u64;
        match self.store.write(name, bytes) {
            Ok(()) => {
                if self.full {
                    self.full = false;
                    eprintln!("memmon agent: the spool takes snapshots again");
                }
                self.written += 1;
                Ok(Outcome::Written {
                    rotated: rotated as usize,
                })
            }
            Err(error) if no_space(&error) => {
                if !self.full {
                    self.full = true;
                    eprintln!(
                        "memmon agent: the spool's disk is full ({error}): snapshots are \
                         dropped until one fits (memmon_spool_full, \
                         memmon_snapshots_dropped_total)"
                    );
                }
                self.dropped += 1;
                Ok(Outcome::Dropped)
            }
            Err(error) => {
                self.dropped += 1;
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A store in memory with a disk of `disk` bytes.
    struct MemStore {
        files: BTreeMap<String, u64>,
        disk: u64,
    }

    impl Store for MemStore {
        fn list(&self) -> io::Result<Vec<(String, u64)>> {
            Ok(self.files.iter().map(|(n, s)| (n.clone(), *s)).collect())
        }
        fn write(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
            let used: u64 = self.files.values().sum();
            if used + bytes.len() as u64 > self.disk {
                return Err(io::Error::from_raw_os_error(nix::libc::ENOSPC));
            }
            self.files.insert(name.to_owned(), bytes.len() as u64);
            Ok(())
        }
        fn remove(&mut self, name: &str) -> io::Result<()> {
            self.files.remove(name);
            Ok(())
        }
    }

    fn names(spool: &Spool<MemStore>) -> Vec<String> {
        spool.store.files.keys().cloned().collect()
    }

    /// Cap 1000: files of 300 bytes; the fourth removes the oldest, a fifth the next.
    #[test]
    fn rotates_under_the_cap() {
        let mut spool = Spool::new(
            MemStore {
                files: BTreeMap::new(),
                disk: 1 << 20,
            },
            1000,
        );
        for n in 1..=3 {
            let outcome = spool.put(&format!("{n}.pb.gz"), &[0; 300], false).unwrap();
            assert_eq!(outcome, Outcome::Written { rotated: 0 });
        }
        assert_eq!(
            spool.put("4.pb.gz", &[0; 300], false).unwrap(),
            Outcome::Written { rotated: 1 }
        );
        assert_eq!(names(&spool), ["2.pb.gz", "3.pb.gz", "4.pb.gz"]);
        assert_eq!(
            spool.put("5.pb.gz", &[0; 700], false).unwrap(),
            Outcome::Written { rotated: 2 }
        );
        assert_eq!(names(&spool), ["4.pb.gz", "5.pb.gz"]);
        assert_eq!(spool.bytes(), 1000);
        assert_eq!((spool.written, spool.dropped, spool.rotated), (5, 0, 3));
        // Larger than the cap: refused, counted.
        assert!(spool.put("6.pb.gz", &[0; 1001], false).is_err());
        assert_eq!(spool.dropped, 1);
    }

    /// A disk of 1000 bytes under a cap of 4000: the fourth file of 300 does not fit; the
    /// spool stops, drops the next without trying, tries again when told to (fails), and
    /// takes files again once room was made.
    #[test]
    fn full_disk_stops_the_spool() {
        let mut spool = Spool::new(
            MemStore {
                files: BTreeMap::new(),
                disk: 1000,
            },
            4000,
        );
        for n in 1..=3 {
            spool.put(&format!("{n}.pb.gz"), &[0; 300], false).unwrap();
        }
        assert!(!spool.is_full());
        assert_eq!(
            spool.put("4.pb.gz", &[0; 300], false).unwrap(),
            Outcome::Dropped
        );
        assert!(spool.is_full());
        assert_eq!(
            spool.put("5.pb.gz", &[0; 10], false).unwrap(),
            Outcome::Dropped
        );
        assert_eq!(
            spool.put("6.pb.gz", &[0; 300], true).unwrap(),
            Outcome::Dropped
        );
        assert_eq!((spool.written, spool.dropped), (3, 3));
        spool.store.files.remove("1.pb.gz");
        assert_eq!(
            spool.put("7.pb.gz", &[0; 300], true).unwrap(),
            Outcome::Written { rotated: 0 }
        );
        assert!(!spool.is_full());
        assert_eq!(names(&spool), ["2.pb.gz", "3.pb.gz", "7.pb.gz"]);
        assert_eq!((spool.written, spool.dropped), (4, 3));
    }

    /// The directory store: whole files, no temporary left, others' files not listed.
    #[test]
    fn directory_store() {
        let dir = std::env::temp_dir().join(format!("memmon-agent-spool-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut store = DirStore::new(dir.clone()).unwrap();
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        store.write("a.pb.gz", b"12345").unwrap();
        assert_eq!(store.list().unwrap(), [("a.pb.gz".to_owned(), 5)]);
        assert!(!dir.join(".a.pb.gz.tmp").exists());
        store.remove("a.pb.gz").unwrap();
        assert!(store.list().unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
