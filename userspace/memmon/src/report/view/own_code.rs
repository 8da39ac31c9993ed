//! Own code and system code: which frames of a stack are the program's and which the
//! system's libraries', so that a site can be named by the innermost frame of the
//! program's own code (the function that asked, `load_rows`) rather than by the allocator
//! that brought the page in (`malloc`), with the library part summarised after it.
//!
//! System code is what the distribution installs in its library directories
//! ([`SYSTEM_LIBRARY_DIRS`]: `/lib`, `/usr/lib` and their 32/64-bit variants, with the
//! multiarch directories below them), the dynamic loader wherever it is, and the code the
//! kernel maps (`[vdso]`, `[vsyscall]`). Everything else is own code: the main executable
//! wherever it is (see [`OwnCode::add_executable`]), libraries under `/usr/local`, `/opt`,
//! a home or build directory, and generated code outside any file (a JIT's, named by its
//! perf map). Pseudo-frames (labels) are neither.

use std::collections::BTreeSet;

use crate::report::model::sites::{Frame, SiteTable};
use crate::report::symbolize::symbols::{basename, is_unnamed, FrameInfo};

/// The distribution's library directories: an object below one of them is system code.
/// `/usr/local/lib` is not one (it is the machine owner's).
pub const SYSTEM_LIBRARY_DIRS: &[&str] = &[
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libx32",
];

/// Whose code an object (or a frame) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The program's own: its executable, its own libraries, its generated code.
    Own,
    /// The system's: the distribution's libraries, the dynamic loader, the vDSO.
    System,
}

/// Whose code the object at `path` (as the capture names it: `/usr/lib/x86_64-linux-
/// gnu/libc.so.6`, `[vdso]`) is, by its path alone. The main executable is own code
/// wherever it is; this cannot tell it from a library in a system directory (a program
/// installed in `/usr/lib/NAME/`): [`OwnCode`] can.
pub fn owner(path: &str) -> Owner {
    let name = basename(path);
    let kernel = matches!(path, "[vdso]" | "[vsyscall]");
    let loader =
        name.starts_with("ld-linux") || name.starts_with("ld-musl") || name.starts_with("ld.so");
    let in_system_dir = SYSTEM_LIBRARY_DIRS.iter().any(|dir| {
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    });
    if kernel || loader || in_system_dir {
        Owner::System
    } else {
        Owner::Own
    }
}

/// The classification with the main executables known: they are own code even in a
/// system directory.
#[derive(Debug, Clone, Default)]
pub struct OwnCode {
    executables: BTreeSet<String>,
}

impl OwnCode {
    /// Counts the object at `path` (an executed program, absolute) as own code.
    pub fn add_executable(&mut self, path: &str) {
        if path.starts_with('/') {
            self.executables.insert(path.to_owned());
        }
    }

    /// Whose code the object at `path` is.
    pub fn owner(&self, path: &str) -> Owner {
        if self.executables.contains(path) {
            Owner::Own
        } else {
            owner(path)
        }
    }

    /// Whose code a frame is: a code frame by its object, an address outside any file
    /// (generated code) own; `None` for a pseudo-frame (a label), which is no code.
    pub fn frame_owner(&self, sites: &SiteTable, frame: &Frame) -> Option<Owner> {
        match frame {
            Frame::Code { object, .. } => Some(self.owner(sites.object_path(*object))),
            Frame::Address { .. } => Some(Owner::Own),
            Frame::Label(_) => None,
        }
    }

    /// The index in `frames` (a stack, innermost first) of the innermost frame of own code;
    /// `None` when the stack has none (all of it is the system's, or it is a label).
    pub fn innermost_own(&self, sites: &SiteTable, frames: &[Frame]) -> Option<usize> {
        frames
            .iter()
            .position(|frame| self.frame_owner(sites, frame) == Some(Owner::Own))
    }
}

/// The system part of a stack summarised: `[libsqlite3.so.0: sqlite3_step … malloc]`, the
/// function own code called (the outermost system frame) and the innermost one, each after
/// its object's name when it is not the previous one's (`[libsqlite3.so.0: sqlite3_step …
/// libc.so.6: malloc]`), or only one when they are the same frame. `system` is the frames
/// innermost of the own one, innermost first, each as its object's path and its symbolised
/// functions (innermost first, inlined ones before the one they were inlined into).
/// `None` when there are no such frames.
pub fn system_summary(system: &[(&str, &[FrameInfo])]) -> Option<String> {
    let innermost = system.first()?;
    let outermost = system.last()?;
    // The function own code called is the one the frame's code belongs to (the last of
    // its inlined chain); the innermost frame is named by its innermost function.
    let function = |infos: &[FrameInfo], entered: bool| {
        let info = if entered { infos.last() } else { infos.first() };
        info.map_or("?".to_owned(), |f| f.function.clone())
    };
    // `object: function`, or only `object+0xoffset` when nothing named the code.
    let in_object = |path: &str, function: String| {
        if is_unnamed(&function, path) {
            function
        } else {
            format!("{}: {function}", basename(path))
        }
    };
    let called = in_object(outermost.0, function(outermost.1, true));
    if system.len() == 1 && outermost.1.len() <= 1 {
        return Some(format!("[{called}]"));
    }
    let inner_function = function(innermost.1, false);
    let inner = if innermost.0 == outermost.0 {
        inner_function
    } else {
        in_object(innermost.0, inner_function)
    };
    Some(format!("[{called} … {inner}]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_and_own_objects() {
        for path in [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0",
            "/lib64/ld-linux-x86-64.so.2",
            "/usr/lib64/libstdc++.so.6",
            "/usr/lib32/libc.so.6",
            "/opt/sdk/lib/ld-linux-x86-64.so.2",
            "/lib/ld-musl-x86_64.so.1",
            "[vdso]",
            "[vsyscall]",
        ] {
            assert_eq!(owner(path), Owner::System, "{path}");
        }
        for path in [
            "/progs/sqlite_rows",
            "/usr/bin/python3.11",
            "/usr/local/lib/libfoo.so",
            "/usr/libexec/helper",
            "/library/libfoo.so",
            "/usr/lib",
            "/home/me/build/libfoo.so",
            "/opt/app/lib/libapp.so",
            "[anon:jit]",
        ] {
            assert_eq!(owner(path), Owner::Own, "{path}");
        }
    }

    #[test]
    fn main_executable_is_own_anywhere() {
        let mut own = OwnCode::default();
        let exe = "/usr/lib/firefox/firefox";
        assert_eq!(own.owner(exe), Owner::System);
        own.add_executable(exe);
        own.add_executable("./relative");
        assert_eq!(own.owner(exe), Owner::Own);
        assert_eq!(
            own.owner("/usr/lib/firefox/libxul.so"),
            Owner::System,
            "only the executable itself"
        );
        assert_eq!(own.executables.len(), 1, "relative paths name no object");
    }

    #[test]
    fn innermost_own_frame() {
        let mut table = SiteTable::default();
        let code = |table: &mut SiteTable, path: &str, offset: u64| Frame::Code {
            object: table.object(path),
            offset,
            ret: offset > 0,
        };
        let malloc = code(&mut table, "/lib/x86_64-linux-gnu/libc.so.6", 0);
        let sqlite = code(&mut table, "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", 16);
        let load = code(&mut table, "/progs/sqlite_rows", 32);
        let main = code(&mut table, "/progs/sqlite_rows", 48);
        let own = OwnCode::default();
        assert_eq!(
            own.innermost_own(&table, &[malloc, sqlite, load, main]),
            Some(2)
        );
        assert_eq!(own.innermost_own(&table, &[load, main]), Some(0));
        assert_eq!(own.innermost_own(&table, &[malloc, sqlite]), None);
        let jit = Frame::Address {
            addr: 0x7000_0000,
            space: table.new_space(None),
        };
        assert_eq!(own.innermost_own(&table, &[malloc, jit, main]), Some(1));
        assert_eq!(
            own.innermost_own(&table, &[Frame::Label("[kernel, for the process]")]),
            None
        );
        assert_eq!(own.innermost_own(&table, &[]), None);
    }

    fn infos(names: &[&str]) -> Vec<FrameInfo> {
        names
            .iter()
            .map(|name| FrameInfo {
                function: (*name).to_owned(),
                file: None,
                line: None,
                inlined: false,
            })
            .collect()
    }

    #[test]
    fn summaries() {
        let libc = "/lib/x86_64-linux-gnu/libc.so.6";
        let sqlite = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";
        let malloc = infos(&["_int_malloc", "malloc"]);
        let step = infos(&["sqlite3_step"]);
        let exec = infos(&["sqlite3VdbeExec"]);
        assert_eq!(system_summary(&[]), None);
        assert_eq!(
            system_summary(&[(sqlite, &step)]).as_deref(),
            Some("[libsqlite3.so.0: sqlite3_step]")
        );
        assert_eq!(
            system_summary(&[(sqlite, &exec), (sqlite, &step)]).as_deref(),
            Some("[libsqlite3.so.0: sqlite3_step … sqlite3VdbeExec]")
        );
        assert_eq!(
            system_summary(&[(libc, &malloc), (sqlite, &exec), (sqlite, &step)]).as_deref(),
            Some("[libsqlite3.so.0: sqlite3_step … libc.so.6: _int_malloc]")
        );
        // One frame with a function inlined into it: the one called, then the inlined one.
        assert_eq!(
            system_summary(&[(libc, &malloc)]).as_deref(),
            Some("[libc.so.6: malloc … _int_malloc]")
        );
        // Unnamed code shows what there is: object+offset.
        let unnamed = infos(&["libfoo.so+0x1234"]);
        assert_eq!(
            system_summary(&[(libc, &malloc), ("/usr/lib/libfoo.so", &unnamed)]).as_deref(),
            Some("[libfoo.so+0x1234 … libc.so.6: _int_malloc]")
        );
    }
}
