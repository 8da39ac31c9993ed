//! Mapping classes (where memory lives) and page kinds (how the kernel counts it).

use serde::Serialize;

/// What kind of mapping a region is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "class", content = "path", rename_all = "snake_case")]
pub enum Class {
    /// The brk heap.
    Heap,
    /// Anonymous private mmap.
    AnonMmap,
    /// The main stack and thread stacks (MAP_STACK / MAP_GROWSDOWN).
    Stack,
    /// A file mapping, by path.
    File(String),
    /// Shared memory: MAP_SHARED|MAP_ANONYMOUS, SysV shm, /dev/shm, memfd.
    Shmem(String),
    /// Kernel-provided mappings (`[vdso]`, `[vvar]`, ...).
    Special(String),
    /// A region the capture never showed (mapped before watching, no snapshot).
    Unknown,
}

impl Class {
    /// The class of a `/proc/PID/maps` path.
    pub fn from_maps(path: &str, shared: bool, inode: u64) -> Class {
        match path {
            "" if shared => Class::Shmem("[anon shared]".to_owned()),
            "" => Class::AnonMmap,
            "[heap]" => Class::Heap,
            "[stack]" => Class::Stack,
            _ if path.starts_with("[stack:") => Class::Stack,
            _ if path.starts_with("[anon") => Class::AnonMmap,
            _ if path.starts_with('[') => Class::Special(path.to_owned()),
            _ if is_shmem_path(path) || (shared && inode == 0) => Class::Shmem(path.to_owned()),
            _ => Class::File(path.to_owned()),
        }
    }

    /// The group of the RSS tree this class belongs to when its pages are of `kind`.
    pub fn label(&self) -> String {
        match self {
            Class::Heap => "heap (brk)".to_owned(),
            Class::AnonMmap => "anonymous mmap".to_owned(),
            Class::Stack => "stacks".to_owned(),
            Class::File(path) => path.clone(),
            Class::Shmem(path) => path.clone(),
            Class::Special(name) => name.clone(),
            Class::Unknown => "[unknown region]".to_owned(),
        }
    }

    /// True for classes whose pages the kernel counts as RssShmem.
    pub fn is_shmem(&self) -> bool {
        matches!(self, Class::Shmem(_))
    }

    /// True for file-backed classes.
    pub fn is_file(&self) -> bool {
        matches!(self, Class::File(_))
    }
}

fn is_shmem_path(path: &str) -> bool {
    path.starts_with("/dev/shm/")
        || path.starts_with("/SYSV")
        || path.starts_with("/memfd:")
        || path.starts_with("/dev/zero")
}

/// How the kernel counts a resident page (RssAnon, RssFile, RssShmem).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PageKind {
    /// Anonymous (incl. copy-on-write copies of private file pages).
    Anon,
    /// Page cache of a file.
    File,
    /// Shared memory.
    Shmem,
}

impl PageKind {
    /// `anon`, `file`, `shmem`.
    pub fn as_str(self) -> &'static str {
        match self {
            PageKind::Anon => "anon",
            PageKind::File => "file",
            PageKind::Shmem => "shmem",
        }
    }

    /// All kinds, in report order.
    pub const ALL: [PageKind; 3] = [PageKind::Anon, PageKind::File, PageKind::Shmem];

    /// Index into per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}
