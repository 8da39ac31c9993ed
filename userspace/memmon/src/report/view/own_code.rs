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
//! perf map). Pseudo-frames (labels) are neither. A language runtime's executable (`node`,
//! `java`, `python3.12`: [`runtimes::is_runtime_executable`]) is the system's: the program
//! it runs is the script, whose functions its JIT names ([`runtimes::generated_code_owner`]).
//!
//! A stack whose pages a garbage collector or the loader touched first is their work
//! ([`RuntimeWork`]), counted apart from the program's functions.
//!
//! Within an object of own code, the language's runtime and standard library that a
//! static link or the toolchain put there are the system's too ([`is_runtime_function`]):
//! Rust's `std`, `core`, `alloc` and its crates from the registry, Go's runtime and
//! standard packages, and a static C library (code without source lines in a program
//! that has them). `--own GLOB` and `--lib GLOB` ([`OwnCode::add_own`], [`OwnCode::add_lib`])
//! say it for objects by path.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::report::model::sites::{Frame, ObjectId, SiteTable};
use crate::report::symbolize::short_name::{scope_tail, Naming};
use crate::report::symbolize::symbols::{basename, is_unnamed, name, FrameInfo, Symbols};
use crate::report::view::reach::{classify, Reach};
use crate::report::view::runtimes::{self, collector_of, RuntimeWork};

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
/// installed in `/usr/lib/NAME/`): [`OwnCode`] can. A runtime's executable (`node`) is
/// the system's wherever it is.
pub fn owner(path: &str) -> Owner {
    let kernel = matches!(path, "[vdso]" | "[vsyscall]");
    let in_system_dir = SYSTEM_LIBRARY_DIRS.iter().any(|dir| {
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    });
    if kernel || is_dynamic_loader(path) || in_system_dir || runtimes::is_runtime_executable(path) {
        Owner::System
    } else {
        Owner::Own
    }
}

/// Whether `path` names a dynamic loader (`ld-linux-x86-64.so.2`, `ld.so`, `ld-musl-*`).
pub fn is_dynamic_loader(path: &str) -> bool {
    let name = basename(path);
    name.starts_with("ld-linux") || name.starts_with("ld-musl") || name.starts_with("ld.so")
}

/// Where the toolchains keep the sources of what they link into a program: Rust's standard
/// library (`/rustc/HASH/library/`, its dependencies in `/rust/deps/`), system headers, and
/// Debian's Go (`/usr/lib/go-1.N/src`).
const SYSTEM_SOURCE_DIRS: &[&str] = &["/rustc/", "/rust/deps/", "/usr/include/", "/usr/lib/"];
/// Where toolchains and package managers keep sources of what a program links in: rustup's
/// copy of Rust's standard library, Cargo's registry and git checkouts, Go's module cache.
const DEPENDENCY_SOURCE_DIRS: &[&str] = &[
    "/lib/rustlib/src/rust/library/",
    "/.cargo/registry/",
    "/.cargo/git/",
    "/go/pkg/mod/",
];
/// Functions of Rust's standard library and its allocator shims, by name.
const RUST_RUNTIME_PREFIXES: &[&str] = &[
    "std::",
    "core::",
    "alloc::",
    "hashbrown::",
    "__rust_",
    "__rdl_",
    "__rg_",
];

/// Whether source `file` is a toolchain's, a system header or a dependency's
/// ([`SYSTEM_SOURCE_DIRS`], [`DEPENDENCY_SOURCE_DIRS`]), not the program's own.
fn is_toolchain_source(file: &str) -> bool {
    SYSTEM_SOURCE_DIRS.iter().any(|dir| file.starts_with(dir))
        || DEPENDENCY_SOURCE_DIRS.iter().any(|dir| file.contains(dir))
}

/// The package of a Go function (`PACKAGE.NAME`, `PACKAGE.(*TYPE).NAME`, `a/b/pkg.F`).
fn go_package(function: &str) -> Option<&str> {
    let after_path = function.rfind('/').map_or(0, |slash| slash + 1);
    let dot = function[after_path..].find('.')?;
    Some(&function[..after_path + dot])
}

/// Whether a Go function, whose code is in `file`, is of Go's runtime or standard library:
/// its source is in a Go installation's `src/PACKAGE/` and its package's first path element
/// has no dot (a module's packages are where the module is, `myapp/store` included), or it
/// is a wrapper the compiler generated for the runtime's packages.
fn is_go_runtime(function: &str, file: &str) -> bool {
    let Some(package) = go_package(function) else {
        return false;
    };
    let standard = package != "main" && !package.split('/').next().unwrap_or("").contains('.');
    if file.ends_with("<autogenerated>") {
        return package == "runtime"
            || package.starts_with("runtime/")
            || package.starts_with("internal/");
    }
    standard && file.ends_with(".go") && file.contains(&format!("/src/{package}/"))
}

/// The entry points of memory allocators and of the C library's memory functions, by name:
/// where a program links one in (jemalloc, tcmalloc, mimalloc, a static glibc), the
/// allocator's code is everything from the leaf up to its entry.
const ALLOCATOR_ENTRIES: &[&str] = &[
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "free",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "__libc_malloc",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_memalign",
    "__malloc",
    "__calloc",
    "__realloc",
    "__posix_memalign",
    "je_malloc",
    "je_calloc",
    "je_realloc",
    "je_mallocx",
    "je_rallocx",
    "je_posix_memalign",
    "je_aligned_alloc",
    "mallocx",
    "rallocx",
    "tc_malloc",
    "tc_calloc",
    "tc_realloc",
    "tc_new",
    "tc_newarray",
    "mi_malloc",
    "mi_calloc",
    "mi_realloc",
    "mi_zalloc",
    "mi_new",
];

/// Whether `info` is an allocator's entry point ([`ALLOCATOR_ENTRIES`], or C++'s `operator
/// new`).
fn is_allocator_entry(info: &FrameInfo) -> bool {
    let function = info.function.as_str();
    ALLOCATOR_ENTRIES.contains(&function) || function.starts_with("operator new")
}

/// Whether a symbolised function in an object of own code is the language's runtime or
/// standard library rather than the program's own code: its source is in a toolchain's or
/// package manager's directory, its name is Rust's standard library's or Go's standard
/// packages', or it has no source line while other code of its object has
/// (`object_has_lines`: a static C library or runtime, built without debug info, in a
/// program built with it).
pub fn is_runtime_function(info: &FrameInfo, object_has_lines: bool) -> bool {
    let function = info.function.as_str();
    // `<alloc::vec::Vec<T>>::push`, `<[hashbrown::Tag] as Ext>::fill`, `<&mut std::X as Y>::z`:
    // the type the method is of.
    let type_path = function.trim_start_matches(['<', '[', '&', '*', '(']);
    let type_path = ["mut ", "const ", "dyn "]
        .iter()
        .fold(type_path, |path, word| path.trim_start_matches(word));
    if RUST_RUNTIME_PREFIXES
        .iter()
        .any(|p| type_path.starts_with(p))
    {
        return true;
    }
    match info.file.as_deref() {
        Some(file) => is_toolchain_source(file) || is_go_runtime(function, file),
        None => object_has_lines,
    }
}

/// The system's functions of `functions` (a stack's innermost part, each as its object's
/// path, object, function and owner), summarised by object ([`system_summary`]), named
/// by `naming`.
fn library_part(
    functions: &[(&str, Option<ObjectId>, &FrameInfo, Option<Owner>)],
    naming: Naming,
) -> Option<String> {
    let mut parts: Vec<(&str, Vec<FrameInfo>)> = Vec::new();
    for &(path, _, info, owner) in functions {
        if owner != Some(Owner::System) {
            continue;
        }
        match parts.last_mut() {
            Some((last, infos)) if *last == path => infos.push(info.clone()),
            _ => parts.push((path, vec![info.clone()])),
        }
    }
    let parts: Vec<(&str, &[FrameInfo])> = parts
        .iter()
        .map(|(path, infos)| (*path, infos.as_slice()))
        .collect();
    system_summary(&parts, naming)
}

/// The most characters of a site's name: past it, the name loses callers from its chain,
/// then its location's directories, then its end (the tables' widest columns before the
/// name are 60 characters: a row stays within 200).
const SITE_NAME_WIDTH: usize = 130;

/// A site as a person reads it, by the program's own code: `chain (file:line)` from the
/// innermost function of own code (`own`: the indexes of own functions in `frames`, a
/// stack's functions innermost first, as the view names them), then the library part it
/// called, summarised (`load_rows < main (rows.c:35) → [libsqlite3.so.0: sqlite3_step …
/// malloc]`); the whole stack's chain without own code. A name of long names keeps fewer
/// callers (down to the function alone), then the location's file without its
/// directories, then is cut with `…`, to stay within [`SITE_NAME_WIDTH`] characters.
pub fn own_site_name(frames: &[FrameInfo], own: &[usize], library: Option<&str>) -> String {
    let first = own.first().copied().unwrap_or(0);
    let own_frames = frames.get(first..).unwrap_or_default();
    let library = library
        .map(|library| format!(" → {library}"))
        .unwrap_or_default();
    let fits = |name: &str| name.chars().count() + library.chars().count() <= SITE_NAME_WIDTH;
    for depth in (1..=4).rev() {
        let own_name = name::site_of_depth(own_frames, depth);
        if fits(&own_name) {
            return format!("{own_name}{library}");
        }
    }
    let chain = name::chain(own_frames, 1);
    let own_name = match own_frames.first().and_then(|frame| {
        let file = frame.file.as_deref()?;
        let file = file.rsplit('/').next().unwrap_or(file);
        Some(match frame.line {
            Some(line) => format!("{chain} ({file}:{line})"),
            None => format!("{chain} ({file})"),
        })
    }) {
        Some(short) => short,
        None => chain,
    };
    let name = format!("{own_name}{library}");
    if name.chars().count() <= SITE_NAME_WIDTH {
        return name;
    }
    let mut cut: String = name.chars().take(SITE_NAME_WIDTH - 1).collect();
    cut.push('…');
    cut
}

/// The objects with source lines for code of their own (not for what a toolchain's
/// sources, headers or a package manager's dependencies gave them): in such an object, a
/// function without lines was linked in from elsewhere (a static C library). A Rust
/// program built without `-g` has lines only for its standard library, which does not
/// count.
pub fn objects_with_own_lines(symbols: &Symbols) -> BTreeSet<ObjectId> {
    symbols
        .code_frames()
        .filter(|(_, infos)| {
            infos.iter().any(|info| {
                info.file
                    .as_deref()
                    .is_some_and(|file| !is_toolchain_source(file))
            })
        })
        .map(|(object, _)| object)
        .collect()
}

/// The classification with the main executables known: they are own code even in a
/// system directory.
#[derive(Debug, Clone, Default)]
pub struct OwnCode {
    executables: BTreeSet<String>,
    /// `--own GLOB`: objects that are own code wherever they are.
    own: Vec<glob::Pattern>,
    /// `--lib GLOB`: objects that are library code wherever they are (wins over `own`).
    lib: Vec<glob::Pattern>,
}

impl OwnCode {
    /// Counts the object at `path` (an executed program, absolute) as own code.
    pub fn add_executable(&mut self, path: &str) {
        if path.starts_with('/') {
            self.executables.insert(path.to_owned());
        }
    }

    /// Counts every program a capture executed (`executables`, absolute) as own code, and
    /// the file each names when it is a link (`/usr/bin/g++` runs
    /// `/usr/bin/x86_64-linux-gnu-g++-14`, which its mappings name).
    pub fn add_executables<'a>(&mut self, executables: impl IntoIterator<Item = &'a String>) {
        for executable in executables {
            self.add_executable(executable);
            if let Ok(target) = std::fs::canonicalize(executable) {
                self.add_executable(&target.to_string_lossy());
            }
        }
    }

    /// Counts the objects whose path matches `pattern` (a shell glob: `/opt/app/*`,
    /// `*/libmine.so*`) as own code.
    pub fn add_own(&mut self, pattern: &str) -> Result<(), glob::PatternError> {
        self.own.push(glob::Pattern::new(pattern)?);
        Ok(())
    }

    /// Counts the objects whose path matches `pattern` as library code, even the
    /// executable.
    pub fn add_lib(&mut self, pattern: &str) -> Result<(), glob::PatternError> {
        self.lib.push(glob::Pattern::new(pattern)?);
        Ok(())
    }

    /// Whose code the object at `path` is: `--lib`, then `--own`, then a runtime's
    /// executable is the system's, then the executables are own code, then [`owner`].
    pub fn owner(&self, path: &str) -> Owner {
        if self.lib.iter().any(|p| p.matches(path)) {
            Owner::System
        } else if self.own.iter().any(|p| p.matches(path)) {
            Owner::Own
        } else if runtimes::is_runtime_executable(path) {
            Owner::System
        } else if self.executables.contains(path) {
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
            Frame::Address { .. } | Frame::Python { .. } => Some(Owner::Own),
            Frame::Label(_) => None,
        }
    }

    /// A stack's symbolised functions sorted into own code and the system's: `frames`
    /// innermost first, `names` each frame's functions (inlined ones first), as
    /// [`crate::report::symbolize::symbols::Symbols::frame_infos`] gives them. Functions
    /// count by their object ([`OwnCode::owner`]) and, in own objects, by
    /// [`is_runtime_function`].
    /// `with_lines` are the objects with source lines for some of their code
    /// ([`crate::report::symbolize::symbols::Symbols::objects_with_lines`]). The library
    /// part is named by `naming`.
    pub fn split(
        &self,
        sites: &SiteTable,
        frames: &[Frame],
        names: &[Vec<FrameInfo>],
        with_lines: &BTreeSet<ObjectId>,
        naming: Naming,
    ) -> Split {
        // Each function of the stack, innermost first: its object's path (generated code's:
        // its script, when its name gives one), whether that is a file, and its owner
        // (`None`: no known code).
        let mut functions: Vec<(&str, Option<ObjectId>, &FrameInfo, Option<Owner>)> = Vec::new();
        for (frame, infos) in frames.iter().zip(names) {
            let object = match frame {
                Frame::Code { object, .. } => Some(*object),
                _ => None,
            };
            let has_lines = object.is_some_and(|o| with_lines.contains(&o));
            let frame_owner = self.frame_owner(sites, frame);
            let generated = matches!(frame, Frame::Address { .. });
            let python = matches!(frame, Frame::Python { .. });
            for info in infos {
                let path = match object {
                    Some(object) => sites.object_path(object),
                    None => info.file.as_deref().unwrap_or("[jit]"),
                };
                let owner = match frame_owner {
                    Some(Owner::Own) if python => Some(runtimes::python_code_owner(info)),
                    // Generated code: the script's, the runtime's, or (no perf map names
                    // it) nobody's known code.
                    Some(Owner::Own) if generated => runtimes::generated_code_owner(info),
                    Some(Owner::Own)
                        if object.is_some() && is_runtime_function(info, has_lines) =>
                    {
                        Some(Owner::System)
                    }
                    other => other,
                };
                functions.push((path, object, info, owner));
            }
        }
        // An allocator linked into the program (jemalloc, a static glibc): its entry and all
        // it called are the system's, whatever their names.
        if let Some(entry) = functions
            .iter()
            .rposition(|(_, _, info, owner)| *owner == Some(Owner::Own) && is_allocator_entry(info))
        {
            for function in &mut functions[..=entry] {
                if function.3 == Some(Owner::Own) {
                    function.3 = Some(Owner::System);
                }
            }
        }
        let whose = functions
            .iter()
            .map(|&(path, object, _, owner)| match owner {
                Some(Owner::Own) if object.is_some() && is_shared_library(path) => {
                    Whose::OwnLibrary
                }
                Some(Owner::Own) => Whose::Program,
                Some(Owner::System) => Whose::System,
                None => Whose::Unknown,
            })
            .collect();
        let own: Vec<usize> = (0..functions.len())
            .filter(|&index| functions[index].3 == Some(Owner::Own))
            .collect();
        let library = own
            .first()
            .and_then(|&first| library_part(&functions[..first], naming));
        // A collector's function innermost of the program's code (or anywhere in a stack
        // without it): the pages are the collector's. The loader's mapping and relocating
        // before `main`, in a stack without own code: the loader's.
        let innermost_own = own.first().copied().unwrap_or(functions.len());
        let collector = functions[..innermost_own]
            .iter()
            .find_map(|(_, _, info, _)| collector_of(&info.function))
            .map(RuntimeWork::Collector);
        // (By the loader's code, named or not: Debian's ld.so has no symbols without its
        // debug file. A constructor the loader runs is the library's code.)
        let loader = own.is_empty()
            && functions
                .iter()
                .find(|(_, object, ..)| object.is_some())
                .is_some_and(|(path, ..)| is_dynamic_loader(path))
            && classify(sites, frames, names) == Reach::StartUp;
        Split {
            whose,
            objects: functions.iter().map(|function| function.1).collect(),
            own,
            library,
            work: collector.or(loader.then_some(RuntimeWork::Loader)),
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

/// Whose one function of a stack is, as the flame graph colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Whose {
    /// The program's own code, in its executable (or code outside files a perf map names).
    Program,
    /// Own code in a library of the program's (an own object that is a shared library).
    OwnLibrary,
    /// The system's: the distribution's libraries, the loader, the language's runtime.
    System,
    /// Not known: code outside any file that nothing names, pseudo-frames.
    Unknown,
}

impl Whose {
    /// Whether this is own code.
    pub fn is_own(self) -> bool {
        matches!(self, Whose::Program | Whose::OwnLibrary)
    }

    /// Its name (in the page's legend and as the flame graph's class).
    pub fn as_str(self) -> &'static str {
        match self {
            Whose::Program => "program",
            Whose::OwnLibrary => "own-library",
            Whose::System => "system",
            Whose::Unknown => "unknown",
        }
    }
}

/// Whether the object at `path` is a shared library by its name (`libfoo.so`,
/// `libfoo.so.1.2`).
fn is_shared_library(path: &str) -> bool {
    let name = basename(path);
    name.ends_with(".so") || name.contains(".so.")
}

/// A stack sorted into own code and the system's ([`OwnCode::split`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// Whose each of the stack's symbolised functions is (innermost first, inlined ones
    /// expanded).
    pub whose: Vec<Whose>,
    /// The object of each of them (`None` outside files).
    pub objects: Vec<Option<ObjectId>>,
    /// The indexes of the functions of own code in the stack's symbolised functions
    /// (innermost first, inlined ones expanded): the first is the site's own function.
    pub own: Vec<usize>,
    /// The system part innermost of the first own function, summarised
    /// ([`system_summary`]); `None` without own code or without such a part.
    pub library: Option<String>,
    /// The runtime's or the loader's work, when the stack is theirs: counted apart from
    /// the program's functions.
    pub work: Option<RuntimeWork>,
}

/// The system part of a stack summarised: `[libsqlite3.so.0: sqlite3_step … malloc]`, the
/// function own code called (the outermost system frame) and the innermost one, each after
/// its object's name when it is not the previous one's (`[libsqlite3.so.0: sqlite3_step …
/// libc.so.6: malloc]`), or only one when they are the same frame. `system` is the frames
/// innermost of the own one, innermost first, each as its object's path and its symbolised
/// functions (innermost first, inlined ones before the one they were inlined into), each
/// named by `naming`. `None` when there are no such frames.
pub fn system_summary(system: &[(&str, &[FrameInfo])], naming: Naming) -> Option<String> {
    let innermost = system.first()?;
    let outermost = system.last()?;
    // The function own code called is the one the frame's code belongs to (the last of
    // its inlined chain); the innermost frame is named by its innermost function.
    // Short, a function keeps its class and its name (`FactoryBase<…>::NewFixedArray`):
    // its object is named before it.
    let function = |infos: &[FrameInfo], entered: bool| {
        let info = if entered { infos.last() } else { infos.first() };
        info.map_or("?".to_owned(), |f| match naming {
            Naming::Short => scope_tail(&naming.name(&f.function), 2).to_owned(),
            Naming::Full => f.function.clone(),
        })
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
    use crate::report::view::runtimes::Runtime;

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
            // Runtimes: the program is the script they run.
            "/usr/bin/python3.11",
            "/usr/bin/node",
        ] {
            assert_eq!(owner(path), Owner::System, "{path}");
        }
        for path in [
            "/progs/sqlite_rows",
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
    fn runtimes_linked_into_the_program_are_the_systems() {
        let info = |function: &str, file: Option<&str>| FrameInfo {
            function: function.to_owned(),
            file: file.map(str::to_owned),
            line: Some(1),
            inlined: false,
        };
        let std_src = "/rustc/5980761/library/alloc/src/alloc.rs";
        let rustup = "/root/.rustup/toolchains/stable/lib/rustlib/src/rust/library/core/src/ptr.rs";
        let go_root = "/usr/lib/go-1.19/src/runtime/malloc.go";
        for (function, file, has_lines) in [
            ("alloc::alloc::alloc", Some(std_src), true),
            ("<alloc::vec::Vec<T>>::push", Some("/src/app.rs"), true),
            (
                "<[hashbrown::Tag] as hashbrown::TagSliceExt>::fill",
                None,
                false,
            ),
            ("core::ptr::write", Some(rustup), true),
            (
                "hashbrown::raw::RawTable<T>::reserve",
                Some("/rust/deps/hashbrown-0.16/src/raw.rs"),
                true,
            ),
            (
                "serde::de::Deserialize",
                Some("/home/me/.cargo/registry/src/x/serde/de.rs"),
                true,
            ),
            ("runtime.mallocgc", Some(go_root), true),
            ("runtime.newproc", Some("./<autogenerated>"), true),
            ("fmt.Sprintf", Some("/usr/local/go/src/fmt/print.go"), true),
            ("sync.(*Pool).Get", Some("/opt/go/src/sync/pool.go"), true),
            (
                "internal/bytealg.IndexByte",
                Some("/usr/local/go/src/internal/bytealg/x.go"),
                true,
            ),
            ("_int_malloc", None, true),
        ] {
            assert!(
                is_runtime_function(&info(function, file), has_lines),
                "{function}"
            );
        }
        for (function, file, has_lines) in [
            ("app::fill_cache", Some("/src/app.rs"), true),
            (
                "<app::Cache as core::ops::Drop>::drop",
                Some("/src/app.rs"),
                true,
            ),
            ("main.fillCache", Some("/src/app/main.go"), true),
            (
                "github.com/me/app/store.(*DB).Put",
                Some("/src/store/db.go"),
                true,
            ),
            // A module without a dot in its path (`go mod init myapp`).
            (
                "myapp/store.(*DB).Put",
                Some("/home/me/myapp/store/db.go"),
                true,
            ),
            ("store.Open", Some("/home/me/myapp/store/open.go"), true),
            // A program under /usr/src (Docker's WORKDIR) is its own.
            ("app::serve", Some("/usr/src/app/src/main.rs"), true),
            ("load_rows", Some("/src/rows.c"), true),
            ("clear_arena.constprop.0", Some("/src/fill.c"), true),
            // A program without debug info: its functions are its own.
            ("load_rows", None, false),
        ] {
            assert!(
                !is_runtime_function(&info(function, file), has_lines),
                "{function}"
            );
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

    #[test]
    fn an_allocator_linked_in_is_the_systems() {
        // A stripped server with jemalloc linked in: no function has a line.
        let mut table = SiteTable::default();
        let server = table.object("/usr/bin/server");
        let frames: Vec<Frame> = (0..5u64)
            .map(|i| Frame::Code {
                object: server,
                offset: 0x1000 * (i + 1),
                ret: i > 0,
            })
            .collect();
        let names: Vec<Vec<FrameInfo>> = [
            "je_extent_alloc_wrapper",
            "je_arena_malloc_hard",
            "je_malloc",
            "store_value",
            "main",
        ]
        .iter()
        .map(|name| infos(&[name]))
        .collect();
        let split =
            OwnCode::default().split(&table, &frames, &names, &BTreeSet::new(), Naming::Short);
        assert_eq!(split.own, [3, 4]);
        assert_eq!(
            split.whose,
            [
                Whose::System,
                Whose::System,
                Whose::System,
                Whose::Program,
                Whose::Program
            ]
        );
        assert_eq!(
            split.library.as_deref(),
            Some("[server: je_malloc … je_extent_alloc_wrapper]")
        );
        // Without an allocator's entry on the stack, the program's functions are its own.
        let split = OwnCode::default().split(
            &table,
            &frames[3..],
            &names[3..],
            &BTreeSet::new(),
            Naming::Short,
        );
        assert_eq!(split.own, [0, 1]);
        assert_eq!(split.library, None);
    }

    #[test]
    fn a_scripts_functions_and_the_runtimes_work() {
        let mut table = SiteTable::default();
        let node = table.object("/usr/bin/node");
        let libc = table.object("/lib/x86_64-linux-gnu/libc.so.6");
        let code = |object, offset: u64| Frame::Code {
            object,
            offset,
            ret: offset > 0x100,
        };
        let space = table.new_space(None);
        let jit = |addr: u64| Frame::Address { addr, space };
        let mut own = OwnCode::default();
        own.add_executable("/usr/bin/node");
        // Generated code's frames have the script their perf-map name gives, as
        // `Symbols` names them.
        let split = |frames: &[Frame], names: &[&str]| {
            let names: Vec<Vec<FrameInfo>> = names
                .iter()
                .map(|name| {
                    let jit = crate::report::symbolize::jit_names::JitName::parse(name);
                    vec![FrameInfo {
                        function: (*name).to_owned(),
                        file: jit.as_ref().and_then(|jit| jit.file.clone()),
                        line: jit.and_then(|jit| jit.line),
                        inlined: false,
                    }]
                })
                .collect();
            own.split(&table, frames, &names, &BTreeSet::new(), Naming::Short)
        };
        // A buffer filled for the script: the script's function is the site's, node's C++
        // and its own modules are the system's.
        let filled = split(
            &[
                code(libc, 0x100),
                code(node, 0x200),
                jit(0x7000),
                jit(0x8000),
                code(node, 0x300),
            ],
            &[
                "memset",
                "node::Buffer::Fill(v8::FunctionCallbackInfo<v8::Value> const&)",
                "JS:*fill node:buffer:1021:14",
                "JS:*holdBuffers /app/main.js:9:21",
                "main",
            ],
        );
        assert_eq!(filled.own, [3]);
        assert_eq!(
            filled.whose,
            [
                Whose::System,
                Whose::System,
                Whose::System,
                Whose::Program,
                Whose::System
            ]
        );
        assert_eq!(
            filled.library.as_deref(),
            Some("[node:buffer: fill … libc.so.6: memset]")
        );
        assert_eq!(filled.work, None);
        // The scavenger copying the script's objects: V8's work.
        let scavenged = split(
            &[code(libc, 0x100), code(node, 0x400), code(node, 0x500), jit(0x8000)],
            &[
                "__memmove_avx_unaligned_erms",
                "v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)",
                "v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags)",
                "JS:*holdRecords /app/main.js:3:21",
            ],
        );
        assert_eq!(scavenged.own, [3]);
        assert_eq!(scavenged.work, Some(RuntimeWork::Collector(Runtime::V8)));
        // Unnamed generated code is nobody's.
        let unnamed = split(&[code(libc, 0x100), jit(0x9000)], &["memset", "[0x9000]"]);
        assert_eq!(unnamed.own, Vec::<usize>::new());
        assert_eq!(unnamed.whose, [Whose::System, Whose::Unknown]);
    }

    #[test]
    fn the_loaders_start_up() {
        let mut table = SiteTable::default();
        let ld = table.object("/lib64/ld-linux-x86-64.so.2");
        let libc = table.object("/lib/x86_64-linux-gnu/libc.so.6");
        let exe = table.object("/progs/app");
        let code = |object, offset: u64| Frame::Code {
            object,
            offset,
            ret: offset > 0x100,
        };
        let own = OwnCode::default();
        let split = |frames: &[Frame], names: &[&str]| {
            let names: Vec<Vec<FrameInfo>> = names.iter().map(|name| infos(&[name])).collect();
            own.split(&table, frames, &names, &BTreeSet::new(), Naming::Short)
        };
        let relocating = split(
            &[code(ld, 0x100), code(ld, 0x200), code(ld, 0x300)],
            &["_dl_relocate_object", "_dl_start_final", "_dl_start"],
        );
        assert_eq!(relocating.work, Some(RuntimeWork::Loader));
        // A library's constructor run by the loader is no relocation.
        let constructor = split(
            &[code(libc, 0x100), code(ld, 0x200), code(ld, 0x300)],
            &["__libc_early_init", "_dl_init", "_dl_start_user"],
        );
        assert_eq!(constructor.work, None);
        // dlopen from the program's code: the program's.
        let opened = split(
            &[
                code(ld, 0x100),
                code(libc, 0x200),
                code(exe, 0x300),
                code(exe, 0x400),
            ],
            &["_dl_relocate_object", "dlopen", "load_plugin", "main"],
        );
        assert_eq!(opened.own, [2, 3]);
        assert_eq!(opened.work, None);
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
    fn long_chains_keep_fewer_callers() {
        let frames: Vec<FrameInfo> = (0..5)
            .map(|i| FrameInfo {
                function: format!(
                    "app::module::function_with_a_long_name_{i}_{}",
                    "x".repeat(20)
                ),
                file: Some("/home/me/src/app/src/module.rs".to_owned()),
                line: Some(10),
                inlined: false,
            })
            .collect();
        let own = [0, 1, 2, 3, 4];
        let name = own_site_name(&frames, &own, Some("[libc.so.6: malloc]"));
        assert!(name.chars().count() <= SITE_NAME_WIDTH, "{name}");
        assert_eq!(
            name,
            format!(
                "app::module::function_with_a_long_name_0_{} < ... (/home/me/src/app/src/module.rs:10) → [libc.so.6: malloc]",
                "x".repeat(20)
            )
        );
        // Then the location's directories go, then the end.
        let long_library = format!("[libfoo.so: {} … libc.so.6: malloc]", "y".repeat(40));
        let name = own_site_name(&frames, &own, Some(&long_library));
        assert!(name.contains(" (module.rs:10) → [libfoo.so: "), "{name}");
        assert!(name.chars().count() <= SITE_NAME_WIDTH, "{name}");
        let longer_library = format!("[libfoo.so: {} … libc.so.6: malloc]", "y".repeat(90));
        let name = own_site_name(&frames, &own, Some(&longer_library));
        assert_eq!(name.chars().count(), SITE_NAME_WIDTH, "{name}");
        assert!(name.ends_with('…'), "{name}");
        // Short chains keep four functions.
        let short: Vec<FrameInfo> = ["load", "run", "serve", "start", "main"]
            .iter()
            .map(|name| infos(&[name]).remove(0))
            .collect();
        assert_eq!(
            own_site_name(&short, &own, None),
            "load < run < serve < start < ..."
        );
    }

    #[test]
    fn summaries() {
        let libc = "/lib/x86_64-linux-gnu/libc.so.6";
        let sqlite = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";
        let malloc = infos(&["_int_malloc", "malloc"]);
        let step = infos(&["sqlite3_step"]);
        let exec = infos(&["sqlite3VdbeExec"]);
        assert_eq!(system_summary(&[], Naming::Short), None);
        assert_eq!(
            system_summary(&[(sqlite, &step)], Naming::Short).as_deref(),
            Some("[libsqlite3.so.0: sqlite3_step]")
        );
        assert_eq!(
            system_summary(&[(sqlite, &exec), (sqlite, &step)], Naming::Short).as_deref(),
            Some("[libsqlite3.so.0: sqlite3_step … sqlite3VdbeExec]")
        );
        assert_eq!(
            system_summary(
                &[(libc, &malloc), (sqlite, &exec), (sqlite, &step)],
                Naming::Short
            )
            .as_deref(),
            Some("[libsqlite3.so.0: sqlite3_step … libc.so.6: _int_malloc]")
        );
        // One frame with a function inlined into it: the one called, then the inlined one.
        assert_eq!(
            system_summary(&[(libc, &malloc)], Naming::Short).as_deref(),
            Some("[libc.so.6: malloc … _int_malloc]")
        );
        // Unnamed code shows what there is: object+offset.
        let unnamed = infos(&["libfoo.so+0x1234"]);
        assert_eq!(
            system_summary(
                &[(libc, &malloc), ("/usr/lib/libfoo.so", &unnamed)],
                Naming::Short
            )
            .as_deref(),
            Some("[libfoo.so+0x1234 … libc.so.6: _int_malloc]")
        );
    }
}
