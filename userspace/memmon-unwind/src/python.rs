//! CPython: recognising an interpreter among a process's objects (the executable
//! `python3.N`, or `libpython3.N.so`), and the description of its frames the module walks
//! (`SET_PYTHON`, docs/unwind.md), from the object's symbols and its struct offsets: those
//! the interpreter publishes at the start of `_PyRuntime` (`_Py_DebugOffsets`, 3.13 and
//! later), else a per-version table.

use object::{Object, ObjectSection, ObjectSymbol};

use crate::protocol::{PythonDescription, ThreadList, ThreadState, NO_OFFSET};

/// The layout of one CPython version's structures that memmon reads: the module's walk
/// (thread state, frames) and the recorder's reading of code objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `(3, minor)`.
    pub version: (u8, u8),
    /// Offset of `interpreters.head` in `_PyRuntime`.
    pub runtime_interpreters_head: u16,
    /// `PyInterpreterState`: `next`, `threads.head`.
    pub interp_next: u16,
    pub interp_threads_head: u16,
    /// `PyThreadState`: `next`, `native_thread_id` (`gettid()`).
    pub tstate_next: u16,
    pub tstate_native_thread_id: u16,
    /// `PyThreadState.cframe` (3.11), then `_PyCFrame.current_frame`; or
    /// `PyThreadState.current_frame` (3.12 and later) and [`NO_OFFSET`].
    pub tstate_frame_link: u16,
    pub frame_link2: u16,
    /// `_PyInterpreterFrame`: `f_code` (3.13: `f_executable`), `previous`, `prev_instr`
    /// (3.13: `instr_ptr`), `owner`, `is_entry` ([`NO_OFFSET`] from 3.12 on: entry frames
    /// are owned by the C stack instead).
    pub frame_code: u16,
    pub frame_previous: u16,
    pub frame_instr: u16,
    pub frame_owner: u16,
    pub frame_is_entry: u16,
    /// Bytes of a frame the walker reads.
    pub frame_bytes: u16,
    /// `PyCodeObject`: `co_code_adaptive`, `co_qualname`, `co_filename`,
    /// `co_firstlineno`, `co_linetable`.
    pub code_start: u16,
    pub code_qualname: u16,
    pub code_filename: u16,
    pub code_firstlineno: u16,
    pub code_linetable: u16,
    /// `str`: bytes before a compact ASCII string's characters (`sizeof(PyASCIIObject)`),
    /// and before another compact string's (`sizeof(PyCompactUnicodeObject)`).
    pub str_ascii_data: u16,
    pub str_compact_data: u16,
}

/// CPython 3.11 on x86_64 (Debian bookworm's 3.11.2: offsets from its headers,
/// `Include/internal/pycore_frame.h`, `pycore_runtime.h`, `cpython/code.h`).
pub const LAYOUT_3_11: Layout = Layout {
    version: (3, 11),
    runtime_interpreters_head: 40,
    interp_next: 0,
    interp_threads_head: 16,
    tstate_next: 8,
    tstate_native_thread_id: 160,
    tstate_frame_link: 56,
    frame_link2: 8,
    frame_code: 32,
    frame_previous: 48,
    frame_instr: 56,
    frame_owner: 69,
    frame_is_entry: 68,
    frame_bytes: 72,
    code_start: 184,
    code_qualname: 128,
    code_filename: 112,
    code_firstlineno: 72,
    code_linetable: 136,
    str_ascii_data: 48,
    str_compact_data: 72,
};

/// CPython 3.13 on x86_64 (Debian trixie's 3.13.5: the `_Py_DebugOffsets` its `_PyRuntime`
/// starts with), for an interpreter whose own offsets cannot be read.
pub const LAYOUT_3_13: Layout = Layout {
    version: (3, 13),
    runtime_interpreters_head: 632,
    interp_next: 7264,
    interp_threads_head: 7344,
    tstate_next: 8,
    tstate_native_thread_id: 160,
    tstate_frame_link: 72,
    frame_link2: NO_OFFSET,
    frame_code: 0,
    frame_previous: 8,
    frame_instr: 56,
    frame_owner: 70,
    frame_is_entry: NO_OFFSET,
    frame_bytes: 72,
    code_start: 200,
    code_qualname: 128,
    code_filename: 112,
    code_firstlineno: 68,
    code_linetable: 136,
    str_ascii_data: 40,
    str_compact_data: 56,
};

/// The layouts known, by version.
pub const LAYOUTS: &[Layout] = &[LAYOUT_3_11, LAYOUT_3_13];

/// The CPython version an object's file name says it is: `python3.11`, `python3.11d`,
/// `libpython3.11.so.1.0`, `libpython3.11d.so`.
pub fn version_of_path(path: &str) -> Option<(u8, u8)> {
    let name = path.rsplit('/').next()?;
    let rest = name
        .strip_prefix("libpython3.")
        .or_else(|| name.strip_prefix("python3."))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = &rest[digits.len()..];
    let tail_ok = if name.starts_with("lib") {
        after.trim_start_matches('d').starts_with(".so")
    } else {
        after.is_empty() || after == "d"
    };
    if digits.is_empty() || !tail_ok {
        return None;
    }
    Some((3, digits.parse().ok()?))
}

/// What an interpreter object's symbols say, object addresses (before the load bias), and
/// the layout of its structures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonSymbols {
    pub version: (u8, u8),
    /// `_PyRuntime`.
    pub runtime: u64,
    /// `PyCode_Type`.
    pub code_type: u64,
    /// `_PyEval_EvalFrameDefault`: start and end.
    pub eval: (u64, u64),
    /// The offsets of its structures: its own `_Py_DebugOffsets`, else its version's table.
    pub layout: Layout,
    /// Whether `layout` is the interpreter's own (`_Py_DebugOffsets`).
    pub own_offsets: bool,
}

/// Why an interpreter is not described.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PythonError {
    /// A version without a layout.
    #[error(
        "Python {0}.{1}: memmon reads the frames of 3.11 and 3.13 only; its stacks stay native"
    )]
    Version(u8, u8),
    /// A symbol missing.
    #[error("Python {0}.{1}: no symbol {2} in the interpreter; its stacks stay native")]
    Symbol(u8, u8, &'static str),
    /// `_Py_DebugOffsets` that are not those of a Python memmon walks, or not sane.
    #[error("Python {0}.{1}: its _Py_DebugOffsets are refused ({2}); its stacks stay native")]
    DebugOffsets(u8, u8, String),
}

/// `_Py_DebugOffsets`' first bytes.
const DEBUG_COOKIE: &[u8; 8] = b"xdebugpy";
/// Bytes of 3.13's `_Py_DebugOffsets` read.
const DEBUG_OFFSETS_3_13_BYTES: usize = 584;

/// The layout the `_Py_DebugOffsets` at the start of `_PyRuntime` (`bytes`) give, for an
/// interpreter of version `version`: `None` without the cookie (before 3.13), else the
/// layout or why it is refused. Every offset is checked against its structure's size, its
/// alignment, and what the module and the recorder read.
pub fn debug_offsets_layout(version: (u8, u8), bytes: &[u8]) -> Option<Result<Layout, String>> {
    if bytes.get(..8)? != DEBUG_COOKIE {
        return None;
    }
    let word = |at: usize| -> u64 {
        bytes
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(u64::MAX, u64::from_le_bytes)
    };
    let hex = word(8);
    // PY_VERSION_HEX: 0x030d05f0 is 3.13.5 final.
    let own = ((hex >> 24) & 0xff, (hex >> 16) & 0xff);
    if own != (u64::from(version.0), u64::from(version.1)) {
        return Some(Err(format!(
            "they are of version {}.{}, the file's name says {}.{}",
            own.0, own.1, version.0, version.1
        )));
    }
    if version != (3, 13) {
        return Some(Err(format!(
            "memmon reads those of 3.13 only, not {}.{}'s",
            version.0, version.1
        )));
    }
    if bytes.len() < DEBUG_OFFSETS_3_13_BYTES {
        return Some(Err("_PyRuntime is shorter than them".into()));
    }
    if word(16) != 0 {
        return Some(Err("a free-threaded build".into()));
    }
    Some(layout_3_13(&word))
}

/// 3.13's `_Py_DebugOffsets` (`Include/internal/pycore_runtime.h`) read by `word`, checked.
fn layout_3_13(word: &dyn Fn(usize) -> u64) -> Result<Layout, String> {
    // A field of a structure of `size` bytes, `width` bytes wide, `align`-aligned, below
    // `max` (what the format can carry).
    let field = |name: &str, at: usize, size: u64, width: u64, align: u64, max: u64| {
        let offset = word(at);
        if !offset.is_multiple_of(align) || offset.saturating_add(width) > size || offset > max {
            return Err(format!(
                "{name} at {offset}: not {align}-aligned within {size} bytes, or past {max}"
            ));
        }
        u16::try_from(offset).map_err(|_| format!("{name} at {offset}: too far"))
    };
    let exact = |name: &str, at: usize, want: u64| {
        let offset = word(at);
        if offset == want {
            Ok(())
        } else {
            Err(format!("{name} at {offset}, not {want}"))
        }
    };
    let (runtime_size, interp_size, tstate_size) = (word(24), word(48), word(152));
    let (frame_size, code_size) = (word(224), word(272));
    let frame_max = u64::from(crate::protocol::PYTHON_FRAME_MAX);
    // Pointers of each structure, within what the format carries.
    let runtime = |name, at| field(name, at, runtime_size, 8, 8, 65528);
    let interp = |name, at| field(name, at, interp_size, 8, 8, 65528);
    let tstate = |name, at| field(name, at, tstate_size, 8, 8, 4088);
    let frame = |name, at| field(name, at, frame_size, 8, 8, frame_max - 8);
    let code = |name, at| field(name, at, code_size, 8, 8, 4088);
    let runtime_interpreters_head = runtime("runtime's interpreters.head", 40)?;
    let interp_next = interp("interpreter's next", 64)?;
    let interp_threads_head = interp("interpreter's threads.head", 72)?;
    let tstate_next = tstate("thread state's next", 168)?;
    let tstate_frame_link = tstate("thread state's current_frame", 184)?;
    let tstate_native_thread_id = tstate("thread state's native_thread_id", 200)?;
    let frame_previous = frame("frame's previous", 232)?;
    let frame_code = frame("frame's executable", 240)?;
    let frame_instr = frame("frame's instr_ptr", 248)?;
    let frame_owner = field("frame's owner", 264, frame_size, 1, 1, frame_max - 1)?;
    let code_filename = code("code's co_filename", 280)?;
    let code_qualname = code("code's co_qualname", 296)?;
    let code_linetable = code("code's co_linetable", 304)?;
    let code_firstlineno = field("code's co_firstlineno", 312, code_size, 4, 4, 4088)?;
    let code_start = field("code's co_code_adaptive", 344, code_size, 0, 2, 4096)?;
    // What the walker and the recorder read at fixed places: an object's type, a bytes
    // object's size and data, a str's length and state.
    exact("an object's ob_type", 360, 8)?;
    exact("a bytes object's ob_size", 520, 16)?;
    exact("a bytes object's ob_sval", 528, 32)?;
    exact("a str's state", 544, 32)?;
    exact("a str's length", 552, 16)?;
    let str_ascii_data = field("a str's data", 560, 256, 0, 8, 248)?;
    let fields_end = [frame_previous, frame_code, frame_instr]
        .iter()
        .map(|&at| at + 8)
        .chain([frame_owner + 1])
        .max()
        .unwrap_or(8);
    Ok(Layout {
        version: (3, 13),
        runtime_interpreters_head,
        interp_next,
        interp_threads_head,
        tstate_next,
        tstate_native_thread_id,
        tstate_frame_link,
        frame_link2: NO_OFFSET,
        frame_code,
        frame_previous,
        frame_instr,
        frame_owner,
        frame_is_entry: NO_OFFSET,
        // The fields read, rounded up to words: at most 128 (each field is below it).
        frame_bytes: fields_end.div_ceil(8) * 8,
        code_start,
        code_qualname,
        code_filename,
        code_firstlineno,
        code_linetable,
        str_ascii_data,
        // `PyCompactUnicodeObject`: the ASCII header, `utf8_length` and `utf8` (3.12 on).
        str_compact_data: str_ascii_data + 16,
    })
}

/// The symbols of the interpreter whose file is `path` and bytes `data`; `None` when the
/// path names no CPython.
pub fn symbols(path: &str, data: &[u8]) -> Option<Result<PythonSymbols, PythonError>> {
    let version = version_of_path(path)?;
    let Some(table) = layout(version) else {
        return Some(Err(PythonError::Version(version.0, version.1)));
    };
    let file = match object::File::parse(data) {
        Ok(file) => file,
        Err(_) => return Some(Err(PythonError::Symbol(version.0, version.1, "(no ELF)"))),
    };
    let find = |name: &'static str| {
        file.dynamic_symbols()
            .chain(file.symbols())
            .find(|symbol| symbol.name() == Ok(name) && symbol.address() != 0)
            .map(|symbol| (symbol.address(), symbol.size()))
            .ok_or(PythonError::Symbol(version.0, version.1, name))
    };
    let found = (|| {
        let (runtime, runtime_size) = find("_PyRuntime")?;
        let code_type = find("PyCode_Type")?.0;
        let (eval, size) = find("_PyEval_EvalFrameDefault")?;
        // `_PyRuntime`'s initial bytes, where its section has them in the file (`.data`).
        let want = runtime_size.min(DEBUG_OFFSETS_3_13_BYTES as u64);
        // Only sections loaded at an address (not a `.debug_*` one at 0).
        let start = file
            .sections()
            .filter(|section| section.address() != 0)
            .find_map(|section| section.data_range(runtime, want).ok().flatten())
            .unwrap_or(&[]);
        let (layout, own_offsets) = match debug_offsets_layout(version, start) {
            // Every 3.13 and later publishes its offsets: a file without them is not what
            // it says, and the table's layout could be wrong for it.
            None if version >= (3, 13) => {
                return Err(PythonError::DebugOffsets(
                    version.0,
                    version.1,
                    "no _Py_DebugOffsets cookie in _PyRuntime".to_owned(),
                ));
            }
            None => (*table, false),
            Some(Ok(layout)) => (layout, true),
            Some(Err(why)) => {
                return Err(PythonError::DebugOffsets(version.0, version.1, why));
            }
        };
        Ok(PythonSymbols {
            version,
            runtime,
            code_type,
            eval: (eval, eval.saturating_add(size.max(1))),
            layout,
            own_offsets,
        })
    })();
    Some(found)
}

/// The table's layout of a version, if known.
pub fn layout(version: (u8, u8)) -> Option<&'static Layout> {
    LAYOUTS.iter().find(|layout| layout.version == version)
}

/// The description of the interpreter of `symbols` loaded with bias `bias`: its thread
/// states found in its thread lists by native thread id (kind 3), so that a thread running C
/// code with the GIL released still gets its Python frames.
pub fn describe(symbols: &PythonSymbols, bias: u64) -> Option<PythonDescription> {
    let layout = &symbols.layout;
    Some(PythonDescription {
        version: (u16::from(layout.version.0) << 8) | u16::from(layout.version.1),
        thread_state: ThreadState::List(ThreadList {
            head: symbols
                .runtime
                .wrapping_add(bias)
                .wrapping_add(u64::from(layout.runtime_interpreters_head)),
            interp_next: layout.interp_next,
            interp_threads: layout.interp_threads_head,
            thread_next: layout.tstate_next,
            thread_native_id: layout.tstate_native_thread_id,
        }),
        code_type: symbols.code_type.wrapping_add(bias),
        thread_id: NO_OFFSET,
        frame_link: layout.tstate_frame_link,
        frame_link2: layout.frame_link2,
        frame_code: layout.frame_code,
        frame_previous: layout.frame_previous,
        frame_instr: layout.frame_instr,
        frame_owner: layout.frame_owner,
        frame_is_entry: layout.frame_is_entry,
        code_start: layout.code_start,
        owner_cstack: if layout.frame_is_entry == NO_OFFSET {
            3
        } else {
            0xff
        },
        frame_bytes: layout.frame_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_of_paths() {
        assert_eq!(version_of_path("/usr/bin/python3.11"), Some((3, 11)));
        assert_eq!(version_of_path("/usr/bin/python3.13d"), Some((3, 13)));
        assert_eq!(
            version_of_path("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"),
            Some((3, 11))
        );
        assert_eq!(version_of_path("/usr/bin/python3"), None);
        assert_eq!(version_of_path("/usr/bin/python3.11-config"), None);
        assert_eq!(version_of_path("/usr/lib/libpython3.so"), None);
    }

    /// `_Py_DebugOffsets` of Debian trixie's python3.13 (3.13.5), after the cookie: the
    /// 72 words its `_PyRuntime` starts with (`/usr/bin/python3.13`, file offset 0x63e408).
    const TRIXIE_3_13_5: [u64; 72] = [
        51185136, 0, 283376, 608, 632, 194976, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16, 7752,
        0, 7768, 7760, 304, 0, 8, 16, 72, 152, 160, 232, 32, 80, 8, 0, 56, 72, 70, 208, 112, 120,
        128, 136, 68, 52, 96, 104, 200, 16, 8, 416, 24, 88, 168, 32, 24, 16, 40, 24, 16, 48, 32,
        40, 24, 16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40, 240, 200,
    ];

    fn trixie_bytes() -> Vec<u8> {
        let mut bytes = DEBUG_COOKIE.to_vec();
        for word in TRIXIE_3_13_5 {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    #[test]
    fn debug_offsets_of_trixie_3_13_are_its_table() {
        assert_eq!(
            debug_offsets_layout((3, 13), &trixie_bytes()),
            Some(Ok(LAYOUT_3_13))
        );
        // No cookie: the table.
        assert_eq!(debug_offsets_layout((3, 11), &[0u8; 584]), None);
    }

    #[test]
    fn debug_offsets_not_sane_are_refused() {
        let with = |at: usize, value: u64| {
            let mut bytes = trixie_bytes();
            bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
            debug_offsets_layout((3, 13), &bytes)
        };
        // native_thread_id past the thread state's 304 bytes, unaligned, a frame's
        // instruction pointer past the bytes the module reads, a free-threaded build,
        // another version, a str whose length is elsewhere.
        for (at, value) in [
            (200, 400),
            (200, 161),
            (248, 128),
            (16, 1),
            (8, 0x030c_05f0),
            (552, 24),
            (72, 200_000),
        ] {
            let refused = with(at, value);
            assert!(
                matches!(refused, Some(Err(_))),
                "word at {at} = {value}: {refused:?}"
            );
        }
        assert!(matches!(
            debug_offsets_layout((3, 13), &trixie_bytes()[..300]),
            Some(Err(_))
        ));
    }
}
