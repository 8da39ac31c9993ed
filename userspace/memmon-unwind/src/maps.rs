//! `/proc/PID/maps`: the executable file mappings of a process, the objects they map, and
//! each mapping's load bias (run-time address minus ELF virtual address).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use object::elf::{FileHeader64, PF_X, PT_LOAD};
use object::read::elf::{FileHeader, ProgramHeader};
use object::LittleEndian;

/// The default root of the proc file system.
pub const DEFAULT_PROC_ROOT: &str = "/proc";

/// Page size of x86-64: mappings start at page-aligned file offsets.
const PAGE: u64 = 4096;

pub use memmon_objects::procfs::{parse_maps, read_maps, MapsEntry, MapsError};

/// The executable file mappings of process `pid`, in address order.
pub fn executable_file_mappings(proc_root: &Path, pid: u32) -> io::Result<Vec<MapsEntry>> {
    let mut entries = read_maps(proc_root, pid)?;
    entries.retain(MapsEntry::is_executable_file);
    Ok(entries)
}

/// A loadable segment of an ELF object (`PT_LOAD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment {
    /// `p_offset`.
    pub offset: u64,
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_filesz`.
    pub filesz: u64,
    /// Whether it is executable (`PF_X`).
    pub executable: bool,
}

/// The `PT_LOAD` segments of the 64-bit little-endian ELF object in `data`; `None` if it is
/// not one.
pub fn load_segments(data: &[u8]) -> Option<Vec<LoadSegment>> {
    let endian = LittleEndian;
    let header = FileHeader64::<LittleEndian>::parse(data).ok()?;
    let headers = header.program_headers(endian, data).ok()?;
    Some(
        headers
            .iter()
            .filter(|ph| ph.p_type(endian) == PT_LOAD)
            .map(|ph| LoadSegment {
                offset: ph.p_offset(endian),
                vaddr: ph.p_vaddr(endian),
                filesz: ph.p_filesz(endian),
                executable: ph.p_flags(endian).0 & PF_X.0 != 0,
            })
            .collect(),
    )
}

/// The load bias of a mapping that starts at run-time address `start` and maps the file
/// from `offset`: run-time address minus object address, wrapping. The segment is the
/// `PT_LOAD` whose file range holds `offset` (the kernel maps it from its page-aligned
/// `p_offset`), an executable one first. `None` if no segment holds it.
pub fn load_bias(segments: &[LoadSegment], offset: u64, start: u64) -> Option<u64> {
    let holds = |s: &&LoadSegment| {
        s.offset & !(PAGE - 1) <= offset && offset < s.offset.saturating_add(s.filesz)
    };
    let segment = segments
        .iter()
        .filter(|s| s.executable)
        .find(holds)
        .or_else(|| segments.iter().find(holds))?;
    let address = segment
        .vaddr
        .wrapping_add(offset.wrapping_sub(segment.offset));
    Some(start.wrapping_sub(address))
}

/// An object read for a mapping.
#[derive(Debug)]
pub struct OpenedObject {
    /// The path it was read through.
    pub path: PathBuf,
    /// Its bytes.
    pub data: Vec<u8>,
    /// Its size and modification time, which tell a file replaced in place.
    pub stamp: FileStamp,
}

/// Size and modification time of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileStamp {
    /// Size in bytes.
    pub len: u64,
    /// Modification time, if the file system has one.
    pub modified: Option<SystemTime>,
}

/// The paths the object of `entry`, a mapping of process `pid`, may be read through, in
/// the order they are tried: `PROC_ROOT/PID/map_files/START-END` (the very file mapped,
/// even deleted or in another mount namespace; readable by root), `PROC_ROOT/PID/root/PATH`
/// (the path in the process's root), then `PATH`.
pub fn object_paths(proc_root: &Path, pid: u32, entry: &MapsEntry) -> Vec<PathBuf> {
    let process = proc_root.join(pid.to_string());
    let relative = entry.path.trim_start_matches('/');
    vec![
        process
            .join("map_files")
            .join(format!("{:x}-{:x}", entry.start, entry.end)),
        process.join("root").join(relative),
        PathBuf::from(&entry.path),
    ]
}

/// Opens a file and tells its stamp.
pub fn stat_object(path: &Path) -> io::Result<(File, FileStamp)> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    let stamp = FileStamp {
        len: meta.len(),
        modified: meta.modified().ok(),
    };
    Ok((file, stamp))
}

/// Reads the object of `entry`, a mapping of process `pid`, through the first of
/// [`object_paths`] that opens. The error is the last path's.
pub fn open_object(proc_root: &Path, pid: u32, entry: &MapsEntry) -> io::Result<OpenedObject> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no path to the object");
    for path in object_paths(proc_root, pid, entry) {
        match stat_object(&path) {
            Ok((mut file, stamp)) => {
                let mut data = Vec::new();
                match file.read_to_end(&mut data) {
                    Ok(_) => return Ok(OpenedObject { path, data, stamp }),
                    Err(error) => last = error,
                }
            }
            Err(error) => last = error,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bias_of_segments() {
        let segments = [
            LoadSegment {
                offset: 0,
                vaddr: 0,
                filesz: 0x6a8,
                executable: false,
            },
            LoadSegment {
                offset: 0x6b0,
                vaddr: 0x16b0,
                filesz: 0x200,
                executable: true,
            },
            LoadSegment {
                offset: 0x2000,
                vaddr: 0x3000,
                filesz: 0x100,
                executable: false,
            },
        ];
        // The executable segment shares the first page: it is mapped from offset 0.
        assert_eq!(
            load_bias(&segments, 0, 0x7000_0000_1000),
            Some(0x7000_0000_0000)
        );
        assert_eq!(
            load_bias(&segments, 0x2000, 0x7000_0000_3000),
            Some(0x7000_0000_0000)
        );
        assert_eq!(load_bias(&segments, 0x9000, 0x7000_0000_3000), None);
        // A non-PIE executable at its link address: bias 0.
        let fixed = [LoadSegment {
            offset: 0x1000,
            vaddr: 0x401000,
            filesz: 0x1000,
            executable: true,
        }];
        assert_eq!(load_bias(&fixed, 0x1000, 0x401000), Some(0));
    }

    #[test]
    fn own_maps() {
        let pid = std::process::id();
        let entries = executable_file_mappings(Path::new(DEFAULT_PROC_ROOT), pid).expect("maps");
        let exe = std::fs::read_link("/proc/self/exe").expect("exe");
        let main = entries
            .iter()
            .find(|e| Path::new(&e.path) == exe)
            .expect("the test binary is mapped");
        let object = open_object(Path::new(DEFAULT_PROC_ROOT), pid, main).expect("readable");
        let segments = load_segments(&object.data).expect("ELF");
        let bias = load_bias(&segments, main.offset, main.start).expect("bias");
        // The function's run-time address minus the bias is its address in the object.
        let f = own_maps as *const () as u64;
        let address = f.wrapping_sub(bias);
        let file = object::File::parse(&*object.data).expect("ELF");
        use object::{Object, ObjectSection};
        let text = file.section_by_name(".text").expect(".text");
        assert!(text.address() <= address && address < text.address() + text.size());
    }
}
