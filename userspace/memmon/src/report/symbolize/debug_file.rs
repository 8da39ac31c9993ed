//! Where the debug info of an object is: in the object itself, or in a split debug file
//! found by build ID (`DIR/.build-id/xx/rest.debug`) or by the object's `.gnu_debuglink`
//! (beside the object, in its `.debug/` directory, under the debug directories), or
//! downloaded from debuginfod servers ([`super::debuginfod`]).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The GNU build ID of an ELF file, as lowercase hex.
pub fn build_id(path: &Path) -> Option<String> {
    let id = blazesym::helper::read_elf_build_id(&path).ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// A section of an ELF file: name, type, file offset and size.
struct Section {
    name: String,
    kind: u32,
    offset: u64,
    size: u64,
}

const SHT_NOBITS: u32 = 8;

fn read_at(file: &mut File, offset: u64, buf: &mut [u8]) -> Option<()> {
    file.seek(SeekFrom::Start(offset)).ok()?;
    file.read_exact(buf).ok()
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The sections of a 64-bit little-endian ELF file (the only kind memmon records);
/// `None` for anything else.
fn sections(path: &Path) -> Option<Vec<Section>> {
    let mut file = File::open(path).ok()?;
    let mut header = [0u8; 64];
    read_at(&mut file, 0, &mut header)?;
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let shoff = u64_at(&header, 0x28);
    let shentsize = u16_at(&header, 0x3a) as u64;
    let mut shnum = u16_at(&header, 0x3c) as u64;
    let mut shstrndx = u16_at(&header, 0x3e) as u64;
    if shoff == 0 || shentsize < 64 {
        return None;
    }
    let mut entry = [0u8; 64];
    if shnum == 0 || shstrndx == 0xffff {
        // Extended numbering: the counts are in section 0.
        read_at(&mut file, shoff, &mut entry)?;
        if shnum == 0 {
            shnum = u64_at(&entry, 32);
        }
        if shstrndx == 0xffff {
            shstrndx = u32_at(&entry, 40) as u64;
        }
    }
    if shnum > 65536 || shstrndx >= shnum {
        return None;
    }
    let mut raw = Vec::with_capacity(shnum as usize);
    for index in 0..shnum {
        read_at(&mut file, shoff + index * shentsize, &mut entry)?;
        raw.push((
            u32_at(&entry, 0),
            u32_at(&entry, 4),
            u64_at(&entry, 24),
            u64_at(&entry, 32),
        ));
    }
    let (_, _, str_offset, str_size) = raw[shstrndx as usize];
    if str_size > 1 << 24 {
        return None;
    }
    let mut names = vec![0u8; str_size as usize];
    read_at(&mut file, str_offset, &mut names)?;
    Some(
        raw.into_iter()
            .map(|(name, kind, offset, size)| {
                let start = (name as usize).min(names.len());
                let end = names[start..]
                    .iter()
                    .position(|&b| b == 0)
                    .map_or(names.len(), |n| start + n);
                Section {
                    name: String::from_utf8_lossy(&names[start..end]).into_owned(),
                    kind,
                    offset,
                    size,
                }
            })
            .collect(),
    )
}

/// The file has DWARF line and function info of its own (`.debug_info` with contents).
pub fn has_dwarf(path: &Path) -> bool {
    sections(path).is_some_and(|sections| {
        sections.iter().any(|s| {
            (s.name == ".debug_info" || s.name == ".zdebug_info")
                && s.kind != SHT_NOBITS
                && s.size > 0
        })
    })
}

/// The file name and CRC-32 of the file's `.gnu_debuglink`.
pub fn debuglink(path: &Path) -> Option<(String, u32)> {
    let sections = sections(path)?;
    let section = sections
        .iter()
        .find(|s| s.name == ".gnu_debuglink" && s.kind != SHT_NOBITS)?;
    if section.size < 8 || section.size > 4096 {
        return None;
    }
    let mut data = vec![0u8; section.size as usize];
    read_at(&mut File::open(path).ok()?, section.offset, &mut data)?;
    let end = data.iter().position(|&b| b == 0)?;
    let name = std::str::from_utf8(&data[..end]).ok()?.to_owned();
    let crc_at = (end + 1).div_ceil(4) * 4;
    if name.is_empty() || name.contains('/') || crc_at + 4 > data.len() {
        return None;
    }
    Some((name, u32_at(&data, crc_at)))
}

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
