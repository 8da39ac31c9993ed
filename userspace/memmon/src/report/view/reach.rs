//! Where the stacks of resident memory end: at the program's `main`, at a thread's start,
//! in the start-up before `main` or the exit after it, or short of any of them.

use serde::Serialize;

use crate::report::model::sites::{Frame, ObjectId, SiteTable};
use crate::report::symbolize::symbols::{basename, is_unnamed, name, FrameInfo};
use crate::report::view::own_code::is_dynamic_loader;

/// Where one site's stack ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A frame is the program's entry (C's `main`, Rust's `crate::main`, Go's `main.main`:
    /// [`crate::report::symbolize::symbols::name::is_entry`]), or the chain
    /// goes from the C library's start into code the C library called as `main`
    /// ([`called_as_main`]: a stripped program's `main`, or what `main` tail-called).
    Main,
    /// The outermost frame is a thread's start (`start_thread`, `clone`, `clone3`; Go's
    /// `runtime.goexit` under every goroutine and `runtime.mstart` under a thread's
    /// scheduler stack), or the two outermost frames are a stripped C library's
    /// ([`started_by_unnamed_c_library`]).
    ThreadStart,
    /// Before `main`: the outermost frame is in the dynamic loader (relocation,
    /// constructors run by `_dl_init`), or the chain goes through `_start` to the C
    /// library's start-up without reaching `main` (Go: the runtime's `rt0_go`).
    StartUp,
    /// After `main`: through `exit`, its handlers or the loader's destructors.
    Exit,
    /// A pseudo-site: memory the capture cannot tie to code (mapped before watching,
    /// mapped by the exec, taken by the kernel without a stack).
    NoStack,
    /// None of these: a stack that ended early (see `stack_end=`), or code no path
    /// from `main` or a thread start leads to.
    Other,
}

/// Functions of the exit path, after `main` returned or called `exit`.
const EXIT_FUNCTIONS: &[&str] = &["exit", "__run_exit_handlers", "_dl_fini", "_exit"];
/// Functions of the C library's start-up, before `main`.
const START_FUNCTIONS: &[&str] = &[
    "_start",
    "__libc_start_main",
    "__libc_start_main_impl",
    "__libc_start_main_alias_2",
    "call_init",
    "__libc_csu_init",
    "runtime.rt0_go",
    "_rt0_amd64",
    "_rt0_amd64_linux",
];
/// The C library's start-up function that calls `main` (glibc's names).
const START_MAIN_FUNCTIONS: &[&str] = &[
    "__libc_start_main",
    "__libc_start_main_impl",
    "__libc_start_main_alias_2",
];
/// Functions a thread's stack starts at.
const THREAD_FUNCTIONS: &[&str] = &[
    "start_thread",
    "clone",
    "__clone",
    "clone3",
    "__clone3",
    "runtime.goexit",
    "runtime.mstart",
    "runtime.mstart0",
];

/// Classifies a site by its frames (innermost first) and their symbolised names (for each
/// frame, its function and the functions inlined into it, innermost first).
pub fn classify(sites: &SiteTable, frames: &[Frame], names: &[Vec<FrameInfo>]) -> Reach {
    if frames.iter().all(|f| matches!(f, Frame::Label(_))) {
        return Reach::NoStack;
    }
    let functions = || names.iter().flatten().map(|f| f.function.as_str());
    let named = |list: &[&str]| functions().any(|f| list.contains(&f));
    if functions().any(name::is_entry) {
        return Reach::Main;
    }
    if named(EXIT_FUNCTIONS) {
        return Reach::Exit;
    }
    if called_as_main(sites, frames, names) {
        return Reach::Main;
    }
    let outermost = names.last().and_then(|infos| infos.last());
    if outermost.is_some_and(|f| THREAD_FUNCTIONS.contains(&f.function.as_str()))
        || started_by_unnamed_c_library(sites, frames, names)
    {
        return Reach::ThreadStart;
    }
    let outermost_in_loader = frames
        .iter()
        .rev()
        .find_map(|f| Some(is_dynamic_loader(sites.object_path(code_object(f)?))));
    if outermost_in_loader == Some(true) || named(START_FUNCTIONS) {
        return Reach::StartUp;
    }
    Reach::Other
}

/// The object of a code frame (`None` for a label).
fn code_object(frame: &Frame) -> Option<ObjectId> {
    match frame {
        Frame::Code { object, .. } => Some(*object),
        _ => None,
    }
}

/// Whether a thread's stack starts in a C library without symbols for its start (Debian's
/// stripped libc: `start_thread` and `clone3` are local symbols): the two outermost frames
/// are unnamed frames of the C library, and the next frame inward is another object's code
/// (the thread's function). The main thread's stack ends in the program's `_start`.
fn started_by_unnamed_c_library(
    sites: &SiteTable,
    frames: &[Frame],
    names: &[Vec<FrameInfo>],
) -> bool {
    // Outermost first.
    let mut chain = frames.iter().zip(names).rev();
    let (Some(outer), Some(start), Some(inner)) = (chain.next(), chain.next(), chain.next()) else {
        return false;
    };
    let (Some(libc), Some(start_object), Some(inner_object)) = (
        code_object(outer.0),
        code_object(start.0),
        code_object(inner.0),
    ) else {
        return false;
    };
    let path = sites.object_path(libc);
    let base = basename(path);
    let unnamed = |infos: &Vec<FrameInfo>| infos.iter().all(|f| is_unnamed(&f.function, path));
    (base.starts_with("libc.so") || base.starts_with("libc-"))
        && start_object == libc
        && inner_object != libc
        && unnamed(outer.1)
        && unnamed(start.1)
}

/// The C library's function between `__libc_start_main` and `main` (glibc 2.34 on; a
/// local symbol, so without a name in a stripped libc).
const CALL_MAIN_FUNCTION: &str = "__libc_start_call_main";

/// Whether the chain goes from the C library's `__libc_start_main` through its
/// `__libc_start_call_main` (named, or a frame of the C library without a name) into
/// another object's code: what the C library calls as `main`, named or not (a stripped
/// program), or the function `main` tail-called (python3.11's `main` jumps to
/// `Py_BytesMain`). The program's constructors, which `__libc_start_main` calls itself
/// (glibc's `call_init`, inlined) or through `call_init` or `__libc_csu_init`, and code a
/// named function of the C library calls (`__cxa_atexit` calling a replaced `calloc`), do
/// not count. Nor does a static program (one object) whose `main` has no name.
fn called_as_main(sites: &SiteTable, frames: &[Frame], names: &[Vec<FrameInfo>]) -> bool {
    let is_one_of = |infos: &Vec<FrameInfo>, list: &[&str]| {
        infos.iter().any(|f| list.contains(&f.function.as_str()))
    };
    // Outermost first.
    let mut chain = frames.iter().zip(names).rev();
    let Some((start, _)) = chain
        .by_ref()
        .find(|(_, infos)| is_one_of(infos, START_MAIN_FUNCTIONS))
    else {
        return false;
    };
    let Some(libc) = code_object(start) else {
        return false;
    };
    let libc_path = sites.object_path(libc);
    let mut through_call_main = false;
    for (frame, infos) in chain {
        match code_object(frame) {
            Some(o) if o == libc => {
                let call_main = infos.iter().all(|f| {
                    f.function == CALL_MAIN_FUNCTION || is_unnamed(&f.function, libc_path)
                });
                if !call_main {
                    return false;
                }
                through_call_main = true;
            }
            Some(_) => return through_call_main,
            None => return false,
        }
    }
    false
}

/// Resident bytes by where their stacks end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StackReach {
    /// Reaching `main`.
    pub main: u64,
    /// Reaching a thread's start function without `main`.
    pub thread_start: u64,
    /// Start-up before `main` (the dynamic loader, the C library's start-up).
    pub start_up: u64,
    /// The exit path after `main`.
    pub exit: u64,
    /// Memory without a stack (pseudo-sites).
    pub no_stack: u64,
    /// Stacks that reach none of these.
    pub other: u64,
}

impl StackReach {
    /// Adds `bytes` of a site that ends at `reach`.
    pub fn add(&mut self, reach: Reach, bytes: u64) {
        let slot = match reach {
            Reach::Main => &mut self.main,
            Reach::ThreadStart => &mut self.thread_start,
            Reach::StartUp => &mut self.start_up,
            Reach::Exit => &mut self.exit,
            Reach::NoStack => &mut self.no_stack,
            Reach::Other => &mut self.other,
        };
        *slot = slot.saturating_add(bytes);
    }

    /// All bytes counted.
    pub fn total(&self) -> u64 {
        [
            self.main,
            self.thread_start,
            self.start_up,
            self.exit,
            self.no_stack,
            self.other,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> FrameInfo {
        FrameInfo {
            function: name.to_owned(),
            file: None,
            line: None,
            inlined: false,
        }
    }

    fn site(table: &mut SiteTable, objects: &[&str]) -> Vec<Frame> {
        objects
            .iter()
            .enumerate()
            .map(|(i, path)| Frame::Code {
                object: table.object(path),
                offset: i as u64 * 16,
                ret: i > 0,
            })
            .collect()
    }

    #[test]
    fn classifies_each_end() {
        let mut table = SiteTable::default();
        let exe = "/usr/bin/prog";
        let libc = "/lib/x86_64-linux-gnu/libc.so.6";
        let ld = "/lib64/ld-linux-x86-64.so.2";
        let jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
        let cases: &[(&[&str], &[&str], Reach)] = &[
            (
                &[libc, exe, exe, libc],
                &["_int_malloc", "load_rows", "main", "__libc_start_call_main"],
                Reach::Main,
            ),
            (
                &[exe, exe],
                &["rust_vec::grow_vec", "rust_vec::main"],
                Reach::Main,
            ),
            (
                &[exe, libc, libc],
                &["thread_main", "start_thread", "__clone3"],
                Reach::ThreadStart,
            ),
            (
                &[ld, ld, ld],
                &["_dl_relocate_object", "_dl_start_final", "_dl_start"],
                Reach::StartUp,
            ),
            (
                &[exe, libc, exe],
                &["init_table", "__libc_start_main_impl", "_start"],
                Reach::StartUp,
            ),
            (
                &[exe, libc, libc, exe],
                &["cleanup", "__run_exit_handlers", "exit", "_start"],
                Reach::Exit,
            ),
            // A stripped program: its main has no name, but libc called it.
            (
                &[libc, exe, exe, libc, libc, exe],
                &[
                    "malloc",
                    "prog+0x1180",
                    "prog+0x1040",
                    "libc.so.6+0x2724a",
                    "__libc_start_main",
                    "prog+0x1060",
                ],
                Reach::Main,
            ),
            // python3.11: main tail-calls Py_BytesMain, so no frame is main.
            (
                &[exe, exe, libc, libc, exe],
                &[
                    "_PyEval_EvalFrameDefault",
                    "Py_BytesMain",
                    "libc.so.6+0x2724a",
                    "__libc_start_main",
                    "_start",
                ],
                Reach::Main,
            ),
            // A constructor of the program, called by __libc_start_main itself or
            // through call_init: start-up.
            (
                &[exe, libc, libc, exe],
                &[
                    "init_table",
                    "call_init",
                    "__libc_start_main_impl",
                    "_start",
                ],
                Reach::StartUp,
            ),
            // A replaced allocator called by a named libc function under
            // __libc_start_main: not main.
            (
                &[jemalloc, libc, libc, exe],
                &["calloc", "__cxa_atexit", "__libc_start_main", "_start"],
                Reach::StartUp,
            ),
            // Through __libc_start_call_main by name, as with libc's debug symbols.
            (
                &[exe, libc, libc, exe],
                &[
                    "run",
                    "__libc_start_call_main",
                    "__libc_start_main_impl",
                    "_start",
                ],
                Reach::Main,
            ),
            (&[libc], &["_int_malloc"], Reach::Other),
            (&[libc, libc], &["memset", "start_thread_x"], Reach::Other),
            // A stripped libc's thread start: start_thread and clone3 unnamed.
            (
                &[libc, exe, libc, libc],
                &[
                    "malloc",
                    "worker",
                    "libc.so.6+0x891f5",
                    "libc.so.6+0x1253c0",
                ],
                Reach::ThreadStart,
            ),
            // Not from unnamed libc frames alone, nor named ones, nor another library's.
            (
                &[libc, libc, libc],
                &["memset", "libc.so.6+0x891f5", "libc.so.6+0x1253c0"],
                Reach::Other,
            ),
            (
                &[libc, exe, libc, libc],
                &["malloc", "worker", "qsort", "libc.so.6+0x1253c0"],
                Reach::Other,
            ),
            (
                &[exe, jemalloc, jemalloc],
                &["run", "libjemalloc.so.2+0x10", "libjemalloc.so.2+0x20"],
                Reach::Other,
            ),
        ];
        for (objects, names, want) in cases {
            let frames = site(&mut table, objects);
            let names: Vec<Vec<FrameInfo>> = names.iter().map(|n| vec![info(n)]).collect();
            assert_eq!(classify(&table, &frames, &names), *want, "{names:?}");
        }
        let label = [Frame::Label(crate::report::model::sites::LABEL_BEFORE)];
        assert_eq!(classify(&table, &label, &[vec![info("x")]]), Reach::NoStack);
    }

    #[test]
    fn sums_by_reach() {
        let mut reach = StackReach::default();
        reach.add(Reach::Main, 4096);
        reach.add(Reach::Main, 8192);
        reach.add(Reach::StartUp, 4096);
        reach.add(Reach::Other, u64::MAX);
        assert_eq!(reach.main, 12288);
        assert_eq!(reach.start_up, 4096);
        assert_eq!(reach.total(), u64::MAX);
    }
}
