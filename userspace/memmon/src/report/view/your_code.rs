//! "Your code": resident bytes by function of the program's own code, the first answer a
//! report gives. Each site's bytes go to its innermost function of own code (with the
//! library code that function called: `load_rows`, for what sqlite and malloc brought in
//! for it), and, inclusive, to every function of own code on its stack (`main` has all
//! that its callees have). Functions are named as the view names them (short by default,
//! a closure or lambda as its function: [`enclosing_function`]). The pages a runtime's
//! collector or the loader touched first are theirs, a line each ([`WorkBytes`]), and a
//! line says how much went through generated code no perf map names ([`UnnamedCode`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::report::model::sites::{ObjectId, LABEL_RESIDENT_BEFORE};
use crate::report::symbolize::short_name::enclosing_function;
use crate::report::view::memory::SiteRow;
use crate::report::view::runtimes::{JitSwitch, RuntimeWork};

/// One function of own code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionRow {
    /// The function's name (`object+0xSTART` without one).
    pub function: String,
    /// Its source file, when debug info has it and all its sites agree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Resident bytes it brought in itself or through the library code it called.
    pub resident: u64,
    /// Resident bytes of the stacks it is on: its own and its callees' in own code.
    pub inclusive: u64,
    /// The library part of its heaviest site, when it called one
    /// (`[libxml2.so.2: xmlNewChild … libc.so.6: malloc]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// The full names of the functions the row counts (two instantiations of a template,
    /// a function and its lambdas), when one differs from `function`: at most
    /// [`FULL_NAMES_KEPT`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub full_names: Vec<String>,
}

/// The most full names a function's row keeps.
pub const FULL_NAMES_KEPT: usize = 8;

impl FunctionRow {
    /// `function (file)`, as the tables name it.
    pub fn name(&self) -> String {
        match &self.file {
            Some(file) => format!("{} ({})", self.function, short_file(file)),
            None => self.function.clone(),
        }
    }
}

/// The last two parts of a source path (`src/main.rs`, `tests/rows.c`): enough to tell
/// files apart, short enough for a table.
fn short_file(path: &str) -> &str {
    let mut slashes = path.rmatch_indices('/').map(|(i, _)| i);
    let _last = slashes.next();
    match slashes.next() {
        Some(at) => &path[at + 1..],
        None => path,
    }
}

/// Resident bytes of a runtime's or the loader's work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkBytes {
    /// Which work.
    pub work: RuntimeWork,
    /// Its line's words (`moved by V8's garbage collector`).
    pub label: String,
    /// Resident bytes.
    pub resident: u64,
}

/// Resident bytes whose stacks go through generated code that no perf map names, and how
/// the runtime that made it names its code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnnamedCode {
    /// Resident bytes.
    pub resident: u64,
    /// The runtime among the executables whose JIT can name its code (`node`), when one
    /// is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// Its switch (`--perf-basic-prof --interpreted-frames-native-stack`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
}

/// Resident bytes by function of own code.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct YourCode {
    /// The functions, by resident bytes (then inclusive bytes, then name).
    pub functions: Vec<FunctionRow>,
    /// Resident bytes of the runtime's and the loader's work, largest first: not the
    /// functions'.
    pub runtime_work: Vec<WorkBytes>,
    /// Resident bytes whose stacks have no own code (the C library's and the loader's
    /// start-up, pseudo-sites without a stack), other than the runtime's work and what was
    /// resident before memmon started.
    pub outside: u64,
    /// Resident bytes that were resident when memmon started watching the process (`record
    /// -p`; the site [`LABEL_RESIDENT_BEFORE`]): their sizes and kinds are known, not the
    /// code that brought them in.
    #[serde(skip_serializing_if = "is_zero")]
    pub before_start: u64,
    /// What went through unnamed generated code, when something did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unnamed_code: Option<UnnamedCode>,
    /// Resident bytes whose stacks go through code memmon cannot name because its
    /// mapping's events were lost ([`SiteRow::lost_mapping`]): not generated code.
    #[serde(skip_serializing_if = "is_zero")]
    pub lost_mappings: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The functions of own code of `sites` with the resident bytes they brought in; the
/// programs the capture executed (`executables`) say which runtime's JIT made code that
/// no perf map names.
pub fn your_code(sites: &[SiteRow], executables: &[String]) -> YourCode {
    // Functions by object and name: two programs' `main`s are two rows.
    type Key = (Option<ObjectId>, String);
    let mut rows: HashMap<Key, (FunctionRow, u64)> = HashMap::new();
    let mut files: HashMap<Key, BTreeSet<Option<String>>> = HashMap::new();
    let mut full_names: HashMap<Key, BTreeSet<String>> = HashMap::new();
    let mut work: BTreeMap<RuntimeWork, u64> = BTreeMap::new();
    let mut outside = 0u64;
    let mut before_start = 0u64;
    let mut unnamed = 0u64;
    let mut lost_mappings = 0u64;
    for site in sites.iter().filter(|site| site.resident > 0) {
        if site
            .shown
            .iter()
            .any(|frame| frame.function.starts_with("[0x"))
        {
            // An address in no known region of a lossy stream: its mapping's mmap was
            // lost, which says nothing of a JIT.
            if site.lost_mapping {
                lost_mappings = lost_mappings.saturating_add(site.resident);
            } else {
                unnamed = unnamed.saturating_add(site.resident);
            }
        }
        if let Some(kind) = site.runtime_work {
            let bytes = work.entry(kind).or_insert(0);
            *bytes = bytes.saturating_add(site.resident);
            continue;
        }
        if site.function() == LABEL_RESIDENT_BEFORE {
            before_start = before_start.saturating_add(site.resident);
            continue;
        }
        let Some(&innermost) = site.own.first() else {
            outside = outside.saturating_add(site.resident);
            continue;
        };
        let mut seen = BTreeSet::new();
        for &index in &site.own {
            let Some(frame) = site.shown.get(index) else {
                continue;
            };
            let go = frame.file.as_deref().is_some_and(|f| f.ends_with(".go"));
            let function = enclosing_function(&frame.function, go);
            let key = (
                site.objects.get(index).copied().flatten(),
                function.to_owned(),
            );
            if let Some(full) = site.frames.get(index) {
                let names = full_names.entry(key.clone()).or_default();
                if names.len() < FULL_NAMES_KEPT {
                    names.insert(full.function.clone());
                }
            }
            files
                .entry(key.clone())
                .or_default()
                .insert(frame.file.clone());
            if !seen.insert(key.clone()) {
                // Recursion: a function counts once per stack.
                continue;
            }
            let (row, heaviest) = rows.entry(key).or_insert_with(|| {
                (
                    FunctionRow {
                        function: function.to_owned(),
                        file: frame.file.clone(),
                        resident: 0,
                        inclusive: 0,
                        library: None,
                        full_names: Vec::new(),
                    },
                    0,
                )
            });
            row.inclusive = row.inclusive.saturating_add(site.resident);
            if index == innermost {
                row.resident = row.resident.saturating_add(site.resident);
                if site.resident > *heaviest {
                    *heaviest = site.resident;
                    row.library = site.library.clone();
                }
            }
        }
    }
    let mut functions: Vec<FunctionRow> = rows
        .into_iter()
        .map(|(key, (mut row, _))| {
            // A function's frames may name different files (code inlined from a header):
            // the file only when they agree.
            let mut file = files.remove(&key).unwrap_or_default().into_iter();
            row.file = match (file.next(), file.next()) {
                (Some(only), None) => only,
                _ => None,
            };
            let names = full_names.remove(&key).unwrap_or_default();
            if names.iter().any(|name| *name != row.function) {
                row.full_names = names.into_iter().collect();
            }
            row
        })
        .collect();
    functions.sort_by(|a, b| {
        b.resident
            .cmp(&a.resident)
            .then(b.inclusive.cmp(&a.inclusive))
            .then_with(|| a.function.cmp(&b.function))
            .then_with(|| a.file.cmp(&b.file))
    });
    let mut runtime_work: Vec<WorkBytes> = work
        .into_iter()
        .map(|(work, resident)| WorkBytes {
            work,
            label: work.label(),
            resident,
        })
        .collect();
    runtime_work.sort_by_key(|row| std::cmp::Reverse(row.resident));
    let unnamed_code = (unnamed > 0).then(|| {
        let switch = executables
            .iter()
            .find_map(|program| JitSwitch::for_program(program));
        UnnamedCode {
            resident: unnamed,
            runtime: switch.map(|switch| switch.runtime.to_owned()),
            switch: switch.map(|switch| switch.flags.to_owned()),
        }
    });
    YourCode {
        functions,
        runtime_work,
        outside,
        before_start,
        unnamed_code,
        lost_mappings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::symbolize::short_name::Naming;
    use crate::report::symbolize::symbols::FrameInfo;
    use crate::report::view::memory::{FaultCounts, Lifetime};
    use crate::report::view::runtimes::Runtime;

    fn site(names: &[(&str, Option<&str>)], own: &[usize], resident: u64) -> SiteRow {
        let frames: Vec<FrameInfo> = names
            .iter()
            .map(|(function, file)| FrameInfo {
                function: (*function).to_owned(),
                file: file.map(str::to_owned),
                line: Some(1),
                inlined: false,
            })
            .collect();
        SiteRow {
            shown: Naming::Short.frames(&frames),
            frames,
            resident,
            mapped: 0,
            faults: FaultCounts::default(),
            brought_in: resident,
            released: 0,
            paged_out: 0,
            swapped_in: 0,
            first_swapin: None,
            last_swapin: None,
            peak: resident,
            lifetime: Lifetime::Accumulating,
            own: own.to_vec(),
            whose: Vec::new(),
            objects: Vec::new(),
            library: (own.first() != Some(&0)).then(|| "[libc.so.6: malloc]".to_owned()),
            runtime_work: None,
            lost_mapping: false,
        }
    }

    #[test]
    fn bytes_go_to_the_innermost_own_function_and_up_its_stack() {
        let c = Some("/src/app/rows.c");
        let sites = [
            site(
                &[("malloc", None), ("load", c), ("main", c)],
                &[1, 2],
                6 << 20,
            ),
            site(
                &[("malloc", None), ("index", c), ("main", c)],
                &[1, 2],
                5 << 20,
            ),
            site(&[("index", c), ("main", c)], &[0, 1], 2 << 20),
            // Recursion counts once.
            site(
                &[("walk", c), ("walk", c), ("main", c)],
                &[0, 1, 2],
                1 << 20,
            ),
            site(&[("_dl_relocate_object", None)], &[], 3 << 20),
            site(&[("load", c), ("main", c)], &[0, 1], 0),
        ];
        let code = your_code(&sites, &[]);
        let rows: Vec<(String, u64, u64)> = code
            .functions
            .iter()
            .map(|r| (r.name(), r.resident, r.inclusive))
            .collect();
        assert_eq!(
            rows,
            [
                ("index (app/rows.c)".to_owned(), 7 << 20, 7 << 20),
                ("load (app/rows.c)".to_owned(), 6 << 20, 6 << 20),
                ("walk (app/rows.c)".to_owned(), 1 << 20, 1 << 20),
                ("main (app/rows.c)".to_owned(), 0, 14 << 20),
            ]
        );
        assert_eq!(
            code.functions[0].library.as_deref(),
            Some("[libc.so.6: malloc]")
        );
        assert_eq!(
            code.functions[1].library.as_deref(),
            Some("[libc.so.6: malloc]")
        );
        assert_eq!(code.outside, 3 << 20);
        assert_eq!(code.runtime_work, []);
        assert_eq!(code.unnamed_code, None);
    }

    #[test]
    fn instantiations_and_lambdas_are_one_function() {
        let cc = Some("/src/app/store.cc");
        let sites = [
            site(
                &[
                    ("malloc", None),
                    ("(anonymous namespace)::Store<unsigned long>::fill(unsigned long)", cc),
                    ("main", cc),
                ],
                &[1, 2],
                16 << 20,
            ),
            site(
                &[
                    ("malloc", None),
                    ("(anonymous namespace)::Store<unsigned int>::fill(unsigned long)", cc),
                    ("main", cc),
                ],
                &[1, 2],
                8 << 20,
            ),
            site(
                &[
                    (
                        "build_index(unsigned long)::{lambda(unsigned long)#1}::operator()(unsigned long) const",
                        cc,
                    ),
                    ("build_index(unsigned long)", cc),
                    ("main", cc),
                ],
                &[0, 1, 2],
                6 << 20,
            ),
        ];
        let code = your_code(&sites, &[]);
        let rows: Vec<(String, u64)> = code
            .functions
            .iter()
            .map(|r| (r.function.clone(), r.resident))
            .collect();
        assert_eq!(
            rows,
            [
                ("(anon)::Store<…>::fill".to_owned(), 24 << 20),
                ("build_index".to_owned(), 6 << 20),
                ("main".to_owned(), 0),
            ]
        );
        assert_eq!(
            code.functions[0].full_names,
            [
                "(anonymous namespace)::Store<unsigned int>::fill(unsigned long)",
                "(anonymous namespace)::Store<unsigned long>::fill(unsigned long)",
            ]
        );
        // Inclusive: the lambda and its function count once on a stack.
        assert_eq!(code.functions[1].inclusive, 6 << 20);
    }

    #[test]
    fn runtime_work_and_unnamed_code_are_lines_of_their_own() {
        let js = Some("/app/main.js");
        let mut gc = site(
            &[
                (
                    "v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)",
                    None,
                ),
                ("JS:*holdRecords /app/main.js:3:21", js),
            ],
            &[1],
            5 << 20,
        );
        gc.runtime_work = Some(RuntimeWork::Collector(Runtime::V8));
        let sites = [
            site(
                &[("memset", None), ("JS:*holdBuffers /app/main.js:9:21", js)],
                &[1],
                25 << 20,
            ),
            gc,
            site(
                &[("memset", None), ("[0x7f0012345678]", None)],
                &[],
                2 << 20,
            ),
        ];
        let code = your_code(&sites, &["/usr/bin/node".to_owned()]);
        assert_eq!(code.functions.len(), 1);
        assert_eq!(code.functions[0].name(), "holdBuffers (app/main.js)");
        assert_eq!(
            code.runtime_work,
            [WorkBytes {
                work: RuntimeWork::Collector(Runtime::V8),
                label: "moved by V8's garbage collector".to_owned(),
                resident: 5 << 20,
            }]
        );
        assert_eq!(code.outside, 2 << 20);
        assert_eq!(
            code.unnamed_code,
            Some(UnnamedCode {
                resident: 2 << 20,
                runtime: Some("node".to_owned()),
                switch: Some("--perf-basic-prof --interpreted-frames-native-stack".to_owned()),
            })
        );
    }
}
