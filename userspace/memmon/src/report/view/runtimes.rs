//! What memmon knows of language runtimes, so that a report names a program's memory by
//! the program's code rather than by the runtime's machinery:
//!
//! - **Runtimes' executables** ([`is_runtime_executable`]: `node`, `java`, `python3.12`...)
//!   are the system's code, not the program's: the program is the script, whose functions
//!   the runtime's JIT names in its perf map ([`generated_code_owner`]).
//! - **Collectors** ([`collector_of`]): pages a garbage collector touches first are the
//!   objects a moving collector copied (V8's scavenger and mark-compact evacuation, the
//!   JVM's G1 and Parallel collectors, .NET's `gc_heap`) or, for Go's non-moving collector,
//!   its marking's own memory. They are the runtime's work ([`RuntimeWork`]), one line of
//!   the report, not sites of their own.
//! - **The dynamic loader's work before `main`**: mapping and relocating the libraries.
//! - **The switches that make a JIT name its code** ([`JitSwitch`]), which `record` and
//!   `run` suggest or (`--jit-maps`) turn on, and the report names when frames are unnamed.

use serde::{Serialize, Serializer};

use crate::report::symbolize::jit_names::JitName;
use crate::report::symbolize::short_name::short_name;
use crate::report::symbolize::symbols::{basename, FrameInfo};
use crate::report::view::own_code::Owner;

/// A language runtime with a garbage collector memmon recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Runtime {
    /// V8 (Node.js, Chromium, Deno).
    V8,
    /// Go's runtime.
    Go,
    /// The JVM (HotSpot).
    Jvm,
    /// .NET's CoreCLR.
    DotNet,
}

impl Runtime {
    /// Its name in a sentence (`V8's garbage collector`, `the JVM's`).
    pub fn name(self) -> &'static str {
        match self {
            Runtime::V8 => "V8",
            Runtime::Go => "Go",
            Runtime::Jvm => "the JVM",
            Runtime::DotNet => ".NET",
        }
    }

    /// A key for JSON (`v8`, `go`, `jvm`, `dotnet`).
    pub fn key(self) -> &'static str {
        match self {
            Runtime::V8 => "v8",
            Runtime::Go => "go",
            Runtime::Jvm => "jvm",
            Runtime::DotNet => "dotnet",
        }
    }

    /// Whether its collector moves objects (copies live ones to new pages): Go's does not,
    /// the pages it touches first are its marking's.
    pub fn moves_objects(self) -> bool {
        !matches!(self, Runtime::Go)
    }
}

/// Work a runtime or the loader does on its own account: the pages it touches first are
/// counted apart from the program's functions, as one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuntimeWork {
    /// A garbage collector's: the objects it moved, or (Go) its marking's memory.
    Collector(Runtime),
    /// The dynamic loader's before `main`: mapping the libraries and relocating them.
    Loader,
}

impl RuntimeWork {
    /// The line's words: `moved by V8's garbage collector`, `touched by Go's garbage
    /// collector`, `start-up: loader`.
    pub fn label(self) -> String {
        match self {
            RuntimeWork::Collector(runtime) if runtime.moves_objects() => {
                format!("moved by {}'s garbage collector", runtime.name())
            }
            RuntimeWork::Collector(runtime) => {
                format!("touched by {}'s garbage collector", runtime.name())
            }
            RuntimeWork::Loader => "start-up: loader".to_owned(),
        }
    }

    /// Its key in JSON: `collector_v8`, `collector_go`, `loader`.
    pub fn key(self) -> String {
        match self {
            RuntimeWork::Collector(runtime) => format!("collector_{}", runtime.key()),
            RuntimeWork::Loader => "loader".to_owned(),
        }
    }
}

impl Serialize for RuntimeWork {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.key())
    }
}

/// V8's collectors, by the start of a function's short name: the scavenger, the
/// mark-compact and minor mark-compact collectors with their evacuation, the concurrent
/// and incremental marking, the sweepers, the heap's collection entries, and cppgc's (the
/// C++ heap's) marker, sweeper and compactor.
const V8_COLLECTOR: &[&str] = &[
    "v8::internal::Scavenge",
    "v8::internal::MarkCompactCollector::",
    "v8::internal::MinorMarkCompactCollector::",
    "v8::internal::MinorMarkSweepCollector::",
    "v8::internal::Evacuat",
    "v8::internal::FullEvacuator",
    "v8::internal::YoungGenerationEvacuator",
    "v8::internal::PageEvacuationJob",
    "v8::internal::ConcurrentMarking",
    "v8::internal::IncrementalMarking",
    "v8::internal::MarkingBarrier",
    "v8::internal::Sweeper",
    "v8::internal::ArrayBufferSweeper",
    "v8::internal::Heap::CollectGarbage",
    "v8::internal::Heap::CollectAllGarbage",
    "v8::internal::Heap::CollectAllAvailableGarbage",
    "v8::internal::Heap::PerformGarbageCollection",
    "v8::internal::Heap::Scavenge",
    "v8::internal::Heap::MarkCompact",
    "v8::internal::Heap::MinorMarkCompact",
    "v8::internal::Heap::EvacuateYoungGeneration",
    "cppgc::internal::Marker",
    "cppgc::internal::Sweeper",
    "cppgc::internal::Compactor",
];

/// Go's collector, by the start of a function's name: the mark workers and assists and
/// what they run, the sweepers, `runtime.GC` and the collection's start and end. Not the
/// write barrier's fast path, which (before Go 1.21) makes the program's own store.
const GO_COLLECTOR: &[&str] = &[
    "runtime.GC",
    "runtime.gcStart",
    "runtime.gcBgMarkWorker",
    "runtime.gcDrain",
    "runtime.gcMark",
    "runtime.gcAssistAlloc",
    "runtime.gcResetMarkState",
    "runtime.gcSweep",
    "runtime.gcFlushBgCredit",
    "runtime.markroot",
    "runtime.scanobject",
    "runtime.scanblock",
    "runtime.scanstack",
    "runtime.scanframeworker",
    "runtime.scanConservative",
    "runtime.greyobject",
    "runtime.bgsweep",
    "runtime.sweepone",
    "runtime.wbBufFlush",
    "runtime.newMarkBits",
    "runtime.newAllocBits",
    "runtime.(*gcWork).",
    "runtime.(*gcBits",
    "runtime.(*mspan).sweep",
    "runtime.(*sweepLocked).sweep",
];

/// HotSpot's collectors, by the start of a function's short name: G1's evacuation, young
/// and full collections and concurrent marking; Parallel's scavenge, promotion and
/// compaction; Serial's; ZGC's and Shenandoah's relocation and marking.
const JVM_COLLECTOR: &[&str] = &[
    "G1ParScanThreadState",
    "G1ParEvacuateFollowersClosure",
    "G1ParCopyClosure",
    "G1ScanEvacuatedObjClosure",
    "G1Evacuate",
    "G1YoungCollector",
    "G1FullCollector",
    "G1FullGC",
    "G1ConcurrentMark",
    "G1CMTask",
    "G1CollectedHeap::do_collection_pause",
    "G1CollectedHeap::do_full_collection",
    "PSPromotionManager",
    "PSScavenge",
    "PSParallelCompact",
    "ParallelCompactData",
    "PSMarkSweep",
    "DefNewGeneration",
    "SerialFullGC",
    "MarkSweep::",
    "GenMarkSweep",
    "ZRelocate",
    "ZMark",
    "ShenandoahHeap::evacuate",
    "ShenandoahEvacuate",
    "ShenandoahConcurrentGC",
    "ShenandoahFullGC",
    "ShenandoahMark",
];

/// The runtime whose garbage collector `function` (a symbolised name) is part of.
pub fn collector_of(function: &str) -> Option<Runtime> {
    // Go's names are their own short names: no need to shorten them.
    if function.starts_with("runtime.") {
        return GO_COLLECTOR
            .iter()
            .any(|prefix| function.starts_with(prefix))
            .then_some(Runtime::Go);
    }
    let short = short_name(function);
    let short = short.as_ref();
    if V8_COLLECTOR.iter().any(|prefix| short.starts_with(prefix)) {
        return Some(Runtime::V8);
    }
    if JVM_COLLECTOR.iter().any(|prefix| short.starts_with(prefix)) {
        return Some(Runtime::Jvm);
    }
    // CoreCLR: `WKS::gc_heap::plan_phase`, `SVR::gc_heap::relocate_phase`.
    if short.contains("gc_heap::") {
        return Some(Runtime::DotNet);
    }
    None
}

/// Whether the executable at `path` is a language runtime's (an interpreter or a
/// virtual machine), whose own code is the system's while the program it runs is the
/// script: `node`, `nodejs`, `bun`, `deno`, `java`, `dotnet`, `python3.12`, `pypy3`,
/// `ruby`, `perl`, `php8.2`, `lua5.4`, `luajit`, Erlang's `beam.smp`.
pub fn is_runtime_executable(path: &str) -> bool {
    let name = basename(path);
    let versioned = |stem: &str| {
        name.strip_prefix(stem)
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    matches!(
        name,
        "node" | "nodejs" | "bun" | "deno" | "java" | "dotnet" | "luajit" | "beam.smp"
    ) || ["python", "pypy", "ruby", "perl", "php", "php-fpm", "lua"]
        .iter()
        .any(|stem| versioned(stem))
}

/// Scripts and sources that are a runtime's or a dependency's, not the program's: Node's
/// own modules (`node:buffer`, `internal/...`), packages (`node_modules`, Python's
/// `site-packages` and `dist-packages`), and a Python installation's library.
fn is_runtime_script(file: &str) -> bool {
    file.starts_with("node:")
        || file.starts_with("internal/")
        || [
            "/node_modules/",
            "/site-packages/",
            "/dist-packages/",
            "/lib/python",
        ]
        .iter()
        .any(|dir| file.contains(dir))
        || file.starts_with("/usr/lib/")
}

/// Whose Python function a frame named `info` is: the interpreter's (the system's) for its
/// standard library, frozen modules and installed packages, else the program's.
pub fn python_code_owner(info: &FrameInfo) -> Owner {
    let file = info.file.as_deref().unwrap_or("");
    if file.starts_with("<frozen") || is_runtime_script(file) {
        Owner::System
    } else {
        Owner::Own
    }
}

/// Packages of the JVM's standard library, whose JIT-compiled methods are the runtime's.
const JAVA_RUNTIME_PACKAGES: &[&str] = &["java.", "javax.", "jdk.", "sun.", "com.sun."];

/// Whose generated code (outside any file) a frame named `info` is: `None` when no perf
/// map names it (`[0x...]`), the system's for the runtime's own code (V8's builtins and
/// stubs, Node's own modules, packages, the JVM's standard library), else the program's.
pub fn generated_code_owner(info: &FrameInfo) -> Option<Owner> {
    let function = info.function.as_str();
    if function.starts_with("[0x") {
        return None;
    }
    let runtime = match JitName::parse(function) {
        Some(jit) => jit.runtime_code || jit.file.as_deref().is_some_and(is_runtime_script),
        None => JAVA_RUNTIME_PACKAGES.iter().any(|package| {
            function.starts_with(package) || function.contains(&format!(" {package}"))
        }),
    };
    Some(if runtime { Owner::System } else { Owner::Own })
}

/// A runtime whose JIT names its code in a perf map when asked, and how to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitSwitch {
    /// The runtime as a person names it.
    pub runtime: &'static str,
    /// The command-line switch (after the executable).
    pub flags: &'static str,
    /// The environment variable that turns it on for every process of the runtime, and
    /// the value to add to it.
    pub variable: &'static str,
    /// The value to add.
    pub value: &'static str,
    /// Whether the variable's value is a list of options the value joins (with a space).
    pub appends: bool,
}

/// The runtimes whose JIT can write a perf map.
pub const JIT_SWITCHES: [JitSwitch; 3] = [
    JitSwitch {
        runtime: "node",
        // Interpreted functions run in a copy of the interpreter's entry of their own,
        // named in the map, rather than in the one shared by all (Builtins_Interpreter...).
        flags: "--perf-basic-prof --interpreted-frames-native-stack",
        variable: "NODE_OPTIONS",
        value: "--perf-basic-prof --interpreted-frames-native-stack",
        appends: true,
    },
    JitSwitch {
        runtime: "java",
        flags: "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit",
        variable: "JAVA_TOOL_OPTIONS",
        // An older JVM without the option runs on rather than refusing to start.
        value:
            "-XX:+UnlockDiagnosticVMOptions -XX:+IgnoreUnrecognizedVMOptions -XX:+DumpPerfMapAtExit",
        appends: true,
    },
    JitSwitch {
        runtime: "python3.12+",
        flags: "-X perf",
        variable: "PYTHONPERFSUPPORT",
        value: "1",
        appends: false,
    },
];

impl JitSwitch {
    /// The switch for the runtime whose executable is `program` (a path or a name:
    /// `node`, `/usr/bin/nodejs`, `java`, `python3.12`, `python3`).
    pub fn for_program(program: &str) -> Option<&'static JitSwitch> {
        let name = basename(program);
        let index = match name {
            "node" | "nodejs" => 0,
            "java" => 1,
            _ if name.starts_with("python3")
                && name[7..].chars().all(|c| c.is_ascii_digit() || c == '.') =>
            {
                2
            }
            _ => return None,
        };
        JIT_SWITCHES.get(index)
    }

    /// Whether `args` (the command after its executable) or `environment` (the variable's
    /// value, when set) already turn it on: every flag is in one or the other (Python:
    /// `-X perf`, or the variable set to other than 0).
    pub fn is_on(&self, args: &[String], environment: Option<&str>) -> bool {
        if !self.appends {
            let in_args = args
                .windows(2)
                .any(|pair| pair[0] == "-X" && pair[1] == "perf")
                || args.iter().any(|arg| arg == "-Xperf");
            return in_args || environment.is_some_and(|value| !value.is_empty() && value != "0");
        }
        let set: Vec<&str> = environment
            .unwrap_or("")
            .split_whitespace()
            .chain(args.iter().map(String::as_str))
            .collect();
        self.flags.split(' ').all(|flag| set.contains(&flag))
    }

    /// The variable's new value given its `current` one.
    pub fn environment_value(&self, current: Option<&str>) -> String {
        match current {
            Some(current) if self.appends && !current.trim().is_empty() => {
                format!("{current} {}", self.value)
            }
            _ => self.value.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectors() {
        for (function, runtime) in [
            (
                "v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)",
                Runtime::V8,
            ),
            (
                "v8::internal::ScavengerCollector::JobTask::Run(v8::JobDelegate*)",
                Runtime::V8,
            ),
            (
                "void v8::internal::EvacuateVisitorBase::RawMigrateObject<(v8::internal::EvacuateVisitorBase::MigrationMode)0>(v8::internal::EvacuateVisitorBase*, v8::internal::HeapObject, v8::internal::HeapObject, int, v8::internal::AllocationSpace)",
                Runtime::V8,
            ),
            (
                "v8::internal::EvacuateNewSpaceVisitor::Visit(v8::internal::HeapObject, int)",
                Runtime::V8,
            ),
            ("v8::internal::MarkCompactCollector::Evacuate()", Runtime::V8),
            (
                "v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags)",
                Runtime::V8,
            ),
            ("cppgc::internal::Compactor::CompactSpacesIfEnabled()", Runtime::V8),
            ("runtime.gcDrain", Runtime::Go),
            ("runtime.scanobject", Runtime::Go),
            ("runtime.gcBgMarkWorker.func2", Runtime::Go),
            ("runtime.(*gcWork).balance", Runtime::Go),
            ("runtime.GC", Runtime::Go),
            (
                "G1ParScanThreadState::do_copy_to_survivor_space(G1HeapRegionAttr, oopDesc*, markWord)",
                Runtime::Jvm,
            ),
            ("G1EvacuateRegionsTask::evacuate_live_objects(G1ParScanThreadState*, unsigned int)", Runtime::Jvm),
            ("PSPromotionManager::copy_unmarked_to_survivor_space<false>(oopDesc*, markWord)", Runtime::Jvm),
            ("PSScavenge::invoke()", Runtime::Jvm),
            ("WKS::gc_heap::relocate_phase(int, unsigned char*)", Runtime::DotNet),
            ("SVR::gc_heap::plan_phase(int)", Runtime::DotNet),
        ] {
            assert_eq!(collector_of(function), Some(runtime), "{function}");
        }
        for function in [
            "v8::internal::Heap::AllocateRaw(int, v8::internal::AllocationType, v8::internal::AllocationOrigin, v8::internal::AllocationAlignment)",
            "v8::internal::Factory::NewFixedArray(int, v8::internal::AllocationType)",
            "node::Buffer::Fill(v8::FunctionCallbackInfo<v8::Value> const&)",
            "runtime.mallocgc",
            "runtime.gcWriteBarrier2",
            "runtime.runfinq",
            "main.fillCache",
            "G1CollectedHeap::mem_allocate(unsigned long, bool*)",
            "malloc",
            "JS:*holdObjects /app/main.js:3:21",
        ] {
            assert_eq!(collector_of(function), None, "{function}");
        }
    }

    #[test]
    fn labels() {
        assert_eq!(
            RuntimeWork::Collector(Runtime::V8).label(),
            "moved by V8's garbage collector"
        );
        assert_eq!(
            RuntimeWork::Collector(Runtime::Jvm).label(),
            "moved by the JVM's garbage collector"
        );
        assert_eq!(
            RuntimeWork::Collector(Runtime::Go).label(),
            "touched by Go's garbage collector"
        );
        assert_eq!(RuntimeWork::Loader.label(), "start-up: loader");
        assert_eq!(RuntimeWork::Collector(Runtime::V8).key(), "collector_v8");
    }

    #[test]
    fn runtime_executables() {
        for path in [
            "/usr/bin/node",
            "/usr/local/bin/nodejs",
            "/usr/lib/jvm/java-17-openjdk-amd64/bin/java",
            "/usr/bin/python3.12",
            "/usr/bin/python3",
            "/opt/pypy/bin/pypy3.10",
            "/usr/bin/ruby3.1",
            "/usr/bin/php8.2",
            "/usr/bin/lua5.4",
        ] {
            assert!(is_runtime_executable(path), "{path}");
        }
        for path in [
            "/progs/glance/go_cache",
            "/usr/bin/nodemon",
            "/usr/bin/python3-config",
            "/usr/local/bin/app",
            "/home/me/build/node_exporter",
        ] {
            assert!(!is_runtime_executable(path), "{path}");
        }
    }

    #[test]
    fn generated_code_is_the_scripts() {
        let info = |function: &str| FrameInfo {
            function: function.to_owned(),
            file: None,
            line: None,
            inlined: false,
        };
        for (function, owner) in [
            ("JS:*holdObjects /app/main.js:3:21", Some(Owner::Own)),
            ("JS:~ /app/main.js:1:1", Some(Owner::Own)),
            ("JS:+load file:///srv/app/index.mjs:7:3", Some(Owner::Own)),
            ("JS:~fill node:buffer:1021:14", Some(Owner::System)),
            (
                "JS:~Module._compile node:internal/modules/cjs/loader:1100:37",
                Some(Owner::System),
            ),
            (
                "JS:*handle /srv/app/node_modules/express/lib/router/index.js:136:31",
                Some(Owner::System),
            ),
            ("Builtin:ArrayPrototypePush", Some(Owner::System)),
            ("py::load_rows:/srv/app/rows.py", Some(Owner::Own)),
            (
                "py::loads:/usr/lib/python3.12/json/__init__.py",
                Some(Owner::System),
            ),
            ("java.util.HashMap::resize", Some(Owner::System)),
            ("com.example.Store::put", Some(Owner::Own)),
            ("[0x7f0012345678]", None),
        ] {
            assert_eq!(generated_code_owner(&info(function)), owner, "{function}");
        }
    }

    #[test]
    fn jit_switches() {
        let node = JitSwitch::for_program("/usr/bin/node").unwrap();
        assert_eq!(node.variable, "NODE_OPTIONS");
        assert!(!node.is_on(&["app.js".to_owned()], None));
        assert!(node.is_on(
            &[
                "--perf-basic-prof".to_owned(),
                "--interpreted-frames-native-stack".to_owned(),
                "app.js".to_owned()
            ],
            None
        ));
        assert!(node.is_on(
            &[],
            Some("--max-old-space-size=512 --interpreted-frames-native-stack --perf-basic-prof")
        ));
        assert_eq!(
            node.environment_value(Some("--max-old-space-size=512")),
            "--max-old-space-size=512 --perf-basic-prof --interpreted-frames-native-stack"
        );
        let python = JitSwitch::for_program("python3.12").unwrap();
        assert!(python.is_on(&["-X".to_owned(), "perf".to_owned()], None));
        assert!(python.is_on(&[], Some("1")));
        assert!(!python.is_on(&[], Some("0")));
        assert_eq!(python.environment_value(Some("0")), "1");
        assert_eq!(
            JitSwitch::for_program("java").unwrap().variable,
            "JAVA_TOOL_OPTIONS"
        );
        assert_eq!(JitSwitch::for_program("python3-config"), None);
        assert_eq!(JitSwitch::for_program("./a.out"), None);
    }
}
