//! `memmon export --format parquet`: captures, agent snapshots and heap profiles as three
//! columnar tables (schema: [`schema`], docs/fleet.md), for `memmon fleet` and any other
//! query engine.
//!
//! - **snapshots**: one row per snapshot (a process of a capture at its peak, one agent
//!   snapshot, or one heap profile): its id, labels, time, resident bytes by kind and by
//!   class, allocated bytes;
//! - **samples**: one row per (snapshot, stack): resident bytes, mapped bytes, faults by
//!   type, allocated bytes;
//! - **stacks**: one row per frame of each stack: the object's build ID and the file offset
//!   of the instruction (a return address minus one), so that the same code has the same
//!   stack id on every machine, wherever ASLR loaded it.
//!
//! [`capture::snapshots`], [`pprof::snapshot`] and [`heap_profile`] read the inputs into
//! [`SnapshotData`]; [`write::DatasetWriter`] appends them to a dataset directory as parquet
//! files.

pub mod capture;
pub mod heap_profile;
pub mod pprof;
pub mod schema;
pub mod write;

use std::collections::BTreeMap;

/// One frame of a stack, innermost first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StackFrame {
    /// Code in a file: its object's build ID (lowercase hex), the file offset of the
    /// instruction (for a return address, the byte before it: inside the call), and the
    /// object's path on the machine it ran on (to find the binary; not part of the
    /// identity).
    Code {
        /// Build ID, lowercase hex.
        build_id: String,
        /// File offset of the instruction.
        file_offset: u64,
        /// The object's path where it ran.
        object: String,
    },
    /// A pseudo-frame (`[kernel, for the process]`, code outside files, a Python
    /// function): its name.
    Label(String),
}

/// One stack's values in one snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackSample {
    /// The frames, innermost first.
    pub frames: Vec<StackFrame>,
    /// Resident bytes.
    pub resident: u64,
    /// Mapped bytes (by the site of the mapping call).
    pub mapped: u64,
    /// Faults by type: anon (first touch), file, swap-in, write-protect (copy-on-write),
    /// other ([`FAULT_COLUMNS`] order).
    pub faults: [u64; 5],
    /// Allocated bytes in use (a heap profile's unbiased estimate; 0 for other sources).
    pub allocated: u64,
}

/// The samples table's fault columns, in [`StackSample::faults`] order (the agent's
/// sample types).
pub const FAULT_COLUMNS: [&str; 5] = [
    "faults_anon",
    "faults_file",
    "faults_swap",
    "faults_wp",
    "faults_other",
];

/// One snapshot: a process of a capture at its peak, or one agent snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotData {
    /// Its id: a hash of the source's bytes and the process (see [`snapshot_id`]).
    pub id: i64,
    /// Where it came from (`FILE` or `FILE#PID`).
    pub source: String,
    /// Labels (`model=`, `version=`, `group=`, the agent's `host`, `cgroup`...).
    pub labels: BTreeMap<String, String>,
    /// Wall-clock time, nanoseconds since the epoch (0: unknown).
    pub time_unix_ns: i64,
    /// Whether the source has resident figures (a capture, an agent snapshot); a heap
    /// profile has none: its resident columns are null.
    pub resident_known: bool,
    /// Resident bytes by kind: anonymous, file, shared memory.
    pub anon: u64,
    /// File-backed resident bytes.
    pub file: u64,
    /// Shared-memory resident bytes.
    pub shmem: u64,
    /// Allocated bytes in use, unbiased (a heap profile); `None` for the other sources.
    pub allocated: Option<u64>,
    /// When its process started, nanoseconds since the epoch, where the source says (a
    /// capture: the command memmon started, a child it saw forked, a process it began to
    /// watch running); `None` elsewhere. Its lifetime at the snapshot is `time_unix_ns`
    /// minus this.
    pub process_start_unix_ns: Option<i64>,
    /// Resident bytes by coarse class (`heap`, `anon_mmap`, `stack`, `file`, `shmem`,
    /// `special`, `unknown`).
    pub class_bytes: BTreeMap<String, u64>,
    /// Its stacks.
    pub samples: Vec<StackSample>,
}

impl SnapshotData {
    /// Resident bytes (anon + file + shmem).
    pub fn resident(&self) -> u64 {
        self.anon
            .saturating_add(self.file)
            .saturating_add(self.shmem)
    }
}

/// FNV-1a, 64 bits: stable across machines and versions (the ids are stored).
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The hash, as the tables store it (an i64 of the same bits).
    pub fn finish(self) -> i64 {
        self.0 as i64
    }
}

/// The id of a stack: a hash of its frames' build IDs and offsets (code) or names
/// (pseudo-frames); the objects' paths are left out, so the same code matches across
/// machines.
pub fn stack_id(frames: &[StackFrame]) -> i64 {
    let mut hash = Fnv::default();
    for frame in frames {
        match frame {
            StackFrame::Code {
                build_id,
                file_offset,
                ..
            } => {
                hash.write(b"C");
                hash.write(build_id.as_bytes());
                hash.write(&file_offset.to_le_bytes());
            }
            StackFrame::Label(name) => {
                hash.write(b"L");
                hash.write(name.as_bytes());
                hash.write(&[0]);
            }
        }
    }
    hash.finish()
}

/// The id of a snapshot: a hash of its source's bytes and the process in it (0 for an
/// agent snapshot): exporting the same file twice gives the same ids.
pub fn snapshot_id(bytes: &[u8], capture: usize, pid: u32) -> i64 {
    let mut hash = Fnv::default();
    hash.write(bytes);
    hash.write(&(capture as u64).to_le_bytes());
    hash.write(&pid.to_le_bytes());
    hash.finish()
}

/// Why one input was skipped: one line naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct BadInput {
    /// The input.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// Reads a capture, an agent snapshot or a heap profile: its snapshots, with `labels`
/// added (over the snapshot's own). Told apart by their contents: a gzipped profile.proto
/// is an agent snapshot, or a Go heap profile when its sample types are Go's
/// (`inuse_space`); a text file starting `heap_v2/` or `heap profile:`, gzipped or not, is
/// jemalloc's or gperftools' heap profile; anything else is read as a capture. A heap profile's
/// objects' build IDs are read from the binaries (under `sysroot`), and its time is the
/// file's modification time.
pub fn read_input(
    path: &std::path::Path,
    labels: &BTreeMap<String, String>,
    sysroot: Option<&std::path::Path>,
) -> Result<Vec<SnapshotData>, BadInput> {
    let name = path.display().to_string();
    let bad = |reason: String| BadInput {
        path: name.clone(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    let mut build_ids = heap_profile::BuildIds::new(sysroot);
    let raw = if bytes.starts_with(&[0x1f, 0x8b]) {
        Some(pprof::gunzip(&bytes).map_err(bad)?)
    } else {
        None
    };
    let mut snapshots =
        if let Some(raw) = raw.as_ref().filter(|raw| heap_profile::is_text_dump(raw)) {
            // A gzipped text dump: its id is the compressed file's, as for the others.
            let heap = heap_profile::parse_text(raw).map_err(|e| bad(e.to_string()))?;
            vec![heap
                .snapshot(&bytes, &name, &mut |object| build_ids.of(object))
                .map_err(|e| bad(e.to_string()))?]
        } else if let Some(raw) = &raw {
            let profile = pprof::decode_raw(raw).map_err(bad)?;
            if heap_profile::is_go_heap(&profile) {
                let heap = heap_profile::parse_go(&profile).map_err(|e| bad(e.to_string()))?;
                vec![heap
                    .snapshot(&bytes, &name, &mut |object| build_ids.of(object))
                    .map_err(|e| bad(e.to_string()))?]
            } else {
                vec![pprof::snapshot_of(&profile, &bytes, &name).map_err(bad)?]
            }
        } else if heap_profile::is_text_dump(&bytes) {
            let heap = heap_profile::parse_text(&bytes).map_err(|e| bad(e.to_string()))?;
            vec![heap
                .snapshot(&bytes, &name, &mut |object| build_ids.of(object))
                .map_err(|e| bad(e.to_string()))?]
        } else {
            capture::snapshots(&bytes, &name, sysroot).map_err(bad)?
        };
    let modified = || -> Option<i64> {
        let time = std::fs::metadata(path).ok()?.modified().ok()?;
        let since = time.duration_since(std::time::UNIX_EPOCH).ok()?;
        i64::try_from(since.as_nanos()).ok()
    };
    for snapshot in &mut snapshots {
        if snapshot.allocated.is_some() && snapshot.time_unix_ns == 0 {
            snapshot.time_unix_ns = modified().unwrap_or(0);
        }
        for (key, value) in labels {
            snapshot.labels.insert(key.clone(), value.clone());
        }
    }
    Ok(snapshots)
}
