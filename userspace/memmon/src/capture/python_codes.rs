//! The names of the Python code objects that stacks name (`pystack=`), read from the
//! process's memory while it lives, as headers: `# python PID {...}` once per interpreter
//! described, `# pycode PID 0xADDR {...}` once per code object (again when the address holds
//! another one), before the first event that names it (docs/events.md). `memmon record`
//! writes them into the capture, so that the report is offline; `memmon agent` gives them to
//! its models.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use memmon_unwind::loader::PythonProcess;
use memmon_unwind::python::Layout;

use crate::parse_python_frames;
use crate::report::python::{decode_line_table, CodeInfo};

/// Most characters of a name or file kept.
const TEXT_MAX: u64 = 1024;
/// Most bytes of a line table read.
const LINETABLE_MAX: u64 = 1 << 20;

/// What tells one code object from another at the same address: its name, file, line
/// table objects and first line.
type Identity = [u64; 4];

/// The code objects of the processes recorded.
#[derive(Default)]
pub struct PythonCodes {
    /// Processes whose `# python` header was written, with the interpreter's version.
    described: HashMap<u32, (u8, u8)>,
    /// Code objects named, by process and address.
    known: HashMap<(u32, u64), Identity>,
    /// Those checked since the last [`PythonCodes::new_batch`].
    checked: HashSet<(u32, u64)>,
    /// `/proc/PID/mem`, open.
    memory: HashMap<u32, File>,
}

impl PythonCodes {
    /// A new batch of events: each code object named is checked once per batch (another
    /// object may have taken its address).
    pub fn new_batch(&mut self) {
        self.checked.clear();
    }

    /// Forgets a process (at its exit or exec).
    pub fn forget(&mut self, pid: u32) {
        self.described.remove(&pid);
        self.known.retain(|(p, _), _| *p != pid);
        self.checked.retain(|(p, _)| *p != pid);
        self.memory.remove(&pid);
    }

    /// Gives `header` (its key and value) the headers that the event `line` of process
    /// `pid` needs: its interpreter's, and those of the code objects its `pystack=` names
    /// that were not named yet, or that changed.
    pub fn before_line(
        &mut self,
        pid: u32,
        line: &str,
        python: Option<&PythonProcess>,
        header: &mut dyn FnMut(&str, &str) -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(text) = pystack(line) else {
            return Ok(());
        };
        let Some(python) = python else {
            return Ok(());
        };
        let layout = &python.symbols.layout;
        if self.described.get(&pid) != Some(&layout.version) {
            let (start, end) = python.symbols.eval;
            let value = serde_json::json!({
                "version": format!("{}.{}", layout.version.0, layout.version.1),
                "eval": [[start.wrapping_add(python.bias), end.wrapping_add(python.bias)]],
            });
            header("python", &format!("{pid} {value}"))?;
            self.described.insert(pid, layout.version);
        }
        let Some(frames) = parse_python_frames(text) else {
            return Ok(());
        };
        if let std::collections::hash_map::Entry::Vacant(e) = self.memory.entry(pid) {
            let Ok(file) = File::open(format!("/proc/{pid}/mem")) else {
                return Ok(());
            };
            e.insert(file);
        }
        let Some(memory) = self.memory.get(&pid) else {
            return Ok(());
        };
        let code_type = python.symbols.code_type.wrapping_add(python.bias);
        for frame in frames {
            let key = (pid, frame.code);
            if !self.checked.insert(key) {
                continue;
            }
            let Some(identity) = identity(memory, layout, frame.code, code_type) else {
                continue;
            };
            if self.known.get(&key) == Some(&identity) {
                continue;
            }
            let Some(info) = read_code(memory, layout, frame.code, &identity) else {
                continue;
            };
            let json = serde_json::to_string(&info).unwrap_or_default();
            header("pycode", &format!("{pid} {:#x} {json}", frame.code))?;
            self.known.insert(key, identity);
        }
        Ok(())
    }
}

/// The `pystack=` value of a line.
fn pystack(line: &str) -> Option<&str> {
    let at = line.find(" pystack=")?;
    let rest = &line[at + " pystack=".len()..];
    Some(rest.split(' ').next().unwrap_or(rest))
}

fn read_bytes(memory: &File, addr: u64, len: u64) -> Option<Vec<u8>> {
    let mut out = vec![0u8; usize::try_from(len).ok()?];
    memory.read_exact_at(&mut out, addr).ok()?;
    Some(out)
}

fn read_u64(memory: &File, addr: u64) -> Option<u64> {
    let bytes = read_bytes(memory, addr, 8)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// The fields that tell the code object at `code` from another; `None` if it is no code
/// object (its type, at 8, is not `code_type`, the process's `PyCode_Type`): the module
/// checks only the first frame's, and the object may have been freed since.
fn identity(memory: &File, layout: &Layout, code: u64, code_type: u64) -> Option<Identity> {
    if read_u64(memory, code + 8)? != code_type {
        return None;
    }
    let field = |offset: u16| read_u64(memory, code + u64::from(offset));
    Some([
        field(layout.code_qualname)?,
        field(layout.code_filename)?,
        field(layout.code_linetable)?,
        field(layout.code_firstlineno)? & 0xffff_ffff,
    ])
}

/// Reads a compact `str` object: ASCII data after `layout.str_ascii_data` bytes (3.11: 48,
/// 3.13: 40), other kinds after `layout.str_compact_data` (72, 56), 1, 2 or 4 bytes a
/// character; its length at 16, its state at 32.
fn read_str(memory: &File, layout: &Layout, addr: u64) -> Option<String> {
    let header = read_bytes(memory, addr, 40)?;
    let length = u64::from_le_bytes(header.get(16..24)?.try_into().ok()?).min(TEXT_MAX);
    let state = u32::from_le_bytes(header.get(32..36)?.try_into().ok()?);
    let kind = (state >> 2) & 7;
    let compact = state & (1 << 5) != 0;
    let ascii = state & (1 << 6) != 0;
    if !compact {
        return None;
    }
    if ascii {
        let data = read_bytes(memory, addr + u64::from(layout.str_ascii_data), length)?;
        return Some(String::from_utf8_lossy(&data).into_owned());
    }
    let data = read_bytes(
        memory,
        addr + u64::from(layout.str_compact_data),
        length * u64::from(kind),
    )?;
    let chars: Vec<u32> = match kind {
        1 => data.iter().map(|&b| u32::from(b)).collect(),
        2 => data
            .chunks_exact(2)
            .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
        4 => data
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        _ => return None,
    };
    Some(
        chars
            .into_iter()
            .map(|c| char::from_u32(c).unwrap_or('\u{fffd}'))
            .collect(),
    )
}

/// Reads a `bytes` object: its size at 16, its data at 32.
fn read_bytes_object(memory: &File, addr: u64) -> Option<Vec<u8>> {
    let size = read_u64(memory, addr + 16)?;
    if size > LINETABLE_MAX {
        return None;
    }
    read_bytes(memory, addr + 32, size)
}

fn read_code(memory: &File, layout: &Layout, code: u64, identity: &Identity) -> Option<CodeInfo> {
    let [qualname, filename, linetable, firstlineno] = *identity;
    let name = read_str(memory, layout, qualname)?;
    let file = read_str(memory, layout, filename)?;
    // CAST: an int field, its low 32 bits.
    let line = firstlineno as u32;
    let table = read_bytes_object(memory, linetable).unwrap_or_default();
    let _ = code;
    Some(CodeInfo {
        lines: decode_line_table(&table, line),
        name,
        file,
        line,
    })
}
