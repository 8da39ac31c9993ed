//! Where the debug info of an object is: in the object itself, or in a split debug file
//! found by build ID (`DIR/.build-id/xx/rest.debug`) or by the object's `.gnu_debuglink`
//! (beside the object, in its `.debug/` directory, under the debug directories), or
//! downloaded from debuginfod servers ([`super::debuginfod`]).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use memmon_objects::elf::{build_id, debuglink, has_dwarf};

fn crc32(path: &Path) -> Option<u32> {
    let mut file = File::open(path).ok()?;
    let mut crc = flate2::Crc::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            return Some(crc.sum());
        }
        crc.update(&buf[..n]);
    }
}

/// `DIR/.build-id/xx/rest.debug` of the first directory that has the file, with that
/// build ID.
pub fn by_build_id(id: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    if id.len() < 4 {
        return None;
    }
    dirs.iter()
        .map(|dir| {
            dir.join(".build-id")
                .join(&id[..2])
                .join(format!("{}.debug", &id[2..]))
        })
        .find(|file| file.is_file() && build_id(file).as_deref() == Some(id))
}

/// The debug file that `binary`'s `.gnu_debuglink` names, as gdb looks for it: beside
/// the binary, in its `.debug/` directory, then under each debug directory at the
/// binary's directory as the capture names it (`path`) and at the top. A candidate is
/// taken when its build ID is the binary's (or, without build IDs, its CRC the link's).
pub fn by_debuglink(binary: &Path, path: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    let (name, crc) = debuglink(binary)?;
    let beside = binary.parent().unwrap_or(Path::new("/"));
    let capture_dir = Path::new(path)
        .parent()
        .unwrap_or(Path::new("/"))
        .strip_prefix("/")
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let mut candidates = vec![beside.join(&name), beside.join(".debug").join(&name)];
    for dir in dirs {
        candidates.push(dir.join(&capture_dir).join(&name));
        candidates.push(dir.join(&name));
    }
    let own = build_id(binary);
    candidates.into_iter().find(|file| {
        file.is_file()
            && file != binary
            && match (&own, build_id(file)) {
                (Some(own), Some(theirs)) => *own == theirs,
                _ => crc32(file) == Some(crc),
            }
    })
}
