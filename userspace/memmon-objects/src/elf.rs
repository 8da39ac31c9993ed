//! Facts of ELF files, read with the `object` crate: the GNU build ID, the
//! `.gnu_debuglink`, and whether a file has DWARF of its own. A file is read in the parts
//! asked for, not whole.

use std::fs::File;
use std::path::Path;

use object::elf::SHT_NOBITS;
use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
use object::read::ReadCache;
use object::{LittleEndian, Object, ObjectKind};

/// The GNU build ID of the ELF object in `data` (from its `.note.gnu.build-id` note, or the
/// `PT_NOTE` segment), if it has one. `None` as well when `data` is no ELF object.
pub fn build_id_of_data(data: &[u8]) -> Option<Vec<u8>> {
    let file = object::File::parse(data).ok()?;
    if file.kind() == ObjectKind::Unknown {
        return None;
    }
    match file.build_id() {
        Ok(Some(id)) if !id.is_empty() => Some(id.to_vec()),
        _ => None,
    }
}

/// The GNU build ID of the ELF file at `path`, as lowercase hex.
pub fn build_id(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let object = object::File::parse(&cache).ok()?;
    let id = object.build_id().ok()??;
    if id.is_empty() {
        return None;
    }
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// A section of an ELF file.
struct Section {
    /// Not `SHT_NOBITS`: its contents are in the file.
    stored: bool,
    /// `sh_size`.
    size: u64,
    /// The contents, when stored and at most the size asked for.
    data: Option<Vec<u8>>,
}

/// The sections whose name `keep` wants of the 64-bit little-endian ELF file at `path`
/// (the only kind memmon records), with the contents of those up to `max_size` bytes.
fn sections_with(path: &Path, keep: impl Fn(&[u8]) -> bool, max_size: u64) -> Option<Vec<Section>> {
    let file = File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let elf = ElfFile64::<LittleEndian, _>::parse(&cache).ok()?;
    let endian = elf.endian();
    let header = elf.elf_header();
    let sections = header.sections(endian, &cache).ok()?;
    let mut out = Vec::new();
    for section in sections.iter() {
        let Ok(name) = sections.section_name(endian, section) else {
            continue;
        };
        if !keep(name) {
            continue;
        }
        let stored = section.sh_type(endian) != SHT_NOBITS;
        let size = section.sh_size(endian);
        let data = (stored && size <= max_size)
            .then(|| section.data(endian, &cache).ok().map(<[u8]>::to_vec))
            .flatten();
        out.push(Section { stored, size, data });
    }
    Some(out)
}

/// The file has DWARF line and function info of its own (`.debug_info` with contents).
pub fn has_dwarf(path: &Path) -> bool {
    sections_with(
        path,
        |name| name == b".debug_info" || name == b".zdebug_info",
        0,
    )
    .is_some_and(|sections| {
        sections
            .iter()
            .any(|section| section.stored && section.size > 0)
    })
}

/// The file name and CRC-32 of the file's `.gnu_debuglink`.
pub fn debuglink(path: &Path) -> Option<(String, u32)> {
    let sections = sections_with(path, |name| name == b".gnu_debuglink", 4096)?;
    let section = sections.into_iter().find(|section| section.stored)?;
    if !(8..=4096).contains(&section.size) {
        return None;
    }
    let data = section.data?;
    let end = data.iter().position(|&b| b == 0)?;
    let name = std::str::from_utf8(&data[..end]).ok()?.to_owned();
    let crc_at = (end + 1).div_ceil(4) * 4;
    if name.is_empty() || name.contains('/') || crc_at + 4 > data.len() {
        return None;
    }
    let crc = u32::from_le_bytes(data[crc_at..crc_at + 4].try_into().ok()?);
    Some((name, crc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_has_a_build_id() {
        let path = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let Ok(data) = std::fs::read(path) else {
            return;
        };
        let id = build_id_of_data(&data).expect("Debian's libc has a build ID");
        assert_eq!(id.len(), 20);
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(build_id(path), Some(hex));
    }
}
