//! CPython: recognising an interpreter among a process's objects (the executable
//! `python3.N`, or `libpython3.N.so`), and the description of its frames the module walks
//! (`SET_PYTHON`, docs/unwind.md), from the object's symbols and a per-version table of
//! struct offsets.

use object::{Object, ObjectSymbol};

use crate::protocol::{PythonDescription, ThreadState, NO_OFFSET};

/// The layout of one CPython version's structures that memmon reads: the module's walk
/// (thread state, frames) and the recorder's reading of code objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `(3, minor)`.
    pub version: (u8, u8),
    /// Offset of `gilstate.tstate_current` in `_PyRuntime` (3.11).
    pub runtime_tstate_current: u16,
    /// `PyThreadState.thread_id` (`pthread_self()`).
    pub tstate_thread_id: u16,
    /// `PyThreadState.cframe` (3.11), then `_PyCFrame.current_frame`.
    pub tstate_frame_link: u16,
    pub frame_link2: u16,
    /// `_PyInterpreterFrame`: `f_code`, `previous`, `prev_instr`, `owner`, `is_entry`.
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
}

/// CPython 3.11 on x86_64 (Debian bookworm's 3.11.2: offsets from its headers,
/// `Include/internal/pycore_frame.h`, `pycore_runtime.h`, `cpython/code.h`).
pub const LAYOUT_3_11: Layout = Layout {
    version: (3, 11),
    runtime_tstate_current: 576,
    tstate_thread_id: 152,
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
};

/// The layouts known, by version.
pub const LAYOUTS: &[Layout] = &[LAYOUT_3_11];

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

/// What an interpreter object's symbols say, object addresses (before the load bias).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonSymbols {
    pub version: (u8, u8),
    /// `_PyRuntime`.
    pub runtime: u64,
    /// `PyCode_Type`.
    pub code_type: u64,
    /// `_PyEval_EvalFrameDefault`: start and end.
    pub eval: (u64, u64),
}

/// Why an interpreter is not described.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PythonError {
    /// A version without a layout.
    #[error("Python {0}.{1}: no table of its structures (3.11 only); its stacks stay native")]
    Version(u8, u8),
    /// A symbol missing.
    #[error("Python {0}.{1}: no symbol {2} in the interpreter; its stacks stay native")]
    Symbol(u8, u8, &'static str),
}

/// The symbols of the interpreter whose file is `path` and bytes `data`; `None` when the
/// path names no CPython.
pub fn symbols(path: &str, data: &[u8]) -> Option<Result<PythonSymbols, PythonError>> {
    let version = version_of_path(path)?;
    if !LAYOUTS.iter().any(|layout| layout.version == version) {
        return Some(Err(PythonError::Version(version.0, version.1)));
    }
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
        let runtime = find("_PyRuntime")?.0;
        let code_type = find("PyCode_Type")?.0;
        let (eval, size) = find("_PyEval_EvalFrameDefault")?;
        Ok(PythonSymbols {
            version,
            runtime,
            code_type,
            eval: (eval, eval + size.max(1)),
        })
    })();
    Some(found)
}

/// The layout of a version, if known.
pub fn layout(version: (u8, u8)) -> Option<&'static Layout> {
    LAYOUTS.iter().find(|layout| layout.version == version)
}

/// The description of the interpreter of `symbols` loaded with bias `bias`.
pub fn describe(symbols: &PythonSymbols, bias: u64) -> Option<PythonDescription> {
    let layout = layout(symbols.version)?;
    Some(PythonDescription {
        version: (u16::from(layout.version.0) << 8) | u16::from(layout.version.1),
        thread_state: ThreadState::Global(
            symbols
                .runtime
                .wrapping_add(bias)
                .wrapping_add(u64::from(layout.runtime_tstate_current)),
        ),
        code_type: symbols.code_type.wrapping_add(bias),
        thread_id: layout.tstate_thread_id,
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
}
