//! "Your code": resident bytes by function of the program's own code, the first answer a
//! report gives. Each site's bytes go to its innermost function of own code (with the
//! library code that function called: `load_rows`, for what sqlite and malloc brought in
//! for it), and, inclusive, to every function of own code on its stack (`main` has all
//! that its callees have).

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::report::model::sites::ObjectId;
use crate::report::view::memory::SiteRow;

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
}

impl FunctionRow {
    /// `function (file)`, as the tables name it.
    pub fn name(&self) -> String {
        match &self.file {
            Some(file) => format!("{} ({})", self.function, short_file(file)),
            None => self.function.clone(),
        }
    }
}

/// The function a frame's code belongs to, as a person names it: a closure's is its
/// enclosing function's (Rust's `f::{{closure}}` and `f::{closure#0}`; Go's `f.func1`,
/// `f.func2.1` and `f.gowrap1`), and a compiler's clone of a C or C++ function is the
/// function (GCC's `f.constprop.0`, `f.part.0`, `f.isra.0`, `f.cold`). `go` says the code
/// is Go's (its source a `.go` file), whose names have dots of their own (`main.part`).
pub fn function_of(name: &str, go: bool) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let numbered = |s: &str, word: &str| s.strip_prefix(word).is_some_and(digits);
    let mut name = name;
    loop {
        let before = name;
        if let Some(outer) = name.strip_suffix("::{{closure}}") {
            name = outer;
        }
        if let Some((outer, last)) = name.rsplit_once("::{closure#") {
            if last.strip_suffix('}').is_some_and(digits) {
                name = outer;
            }
        }
        if let Some((outer, last)) = name.rsplit_once('.').filter(|(outer, _)| !outer.is_empty()) {
            let fold = if go {
                // Go: `f.func1`, `f.gowrap1`, and `f.func2.1` (a closure in a closure).
                numbered(last, "func")
                    || numbered(last, "gowrap")
                    || (digits(last)
                        && outer
                            .rsplit_once('.')
                            .is_some_and(|(_, f)| numbered(f, "func")))
            } else {
                ["constprop", "isra", "part", "cold", "lto_priv"].contains(&last)
                    || (digits(last)
                        && outer.rsplit_once('.').is_some_and(|(_, kind)| {
                            ["constprop", "isra", "part", "lto_priv"].contains(&kind)
                        }))
            };
            if fold {
                name = outer;
            }
        }
        if name == before {
            return name;
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

/// Resident bytes by function of own code.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct YourCode {
    /// The functions, by resident bytes (then inclusive bytes, then name).
    pub functions: Vec<FunctionRow>,
    /// Resident bytes whose stacks have no own code (the C library's and the loader's
    /// start-up, pseudo-sites without a stack).
    pub outside: u64,
}

/// The functions of own code of `sites` with the resident bytes they brought in.
pub fn your_code(sites: &[SiteRow]) -> YourCode {
    // Functions by object and name: two programs' `main`s are two rows.
    type Key = (Option<ObjectId>, String);
    let mut rows: HashMap<Key, (FunctionRow, u64)> = HashMap::new();
    let mut files: HashMap<Key, BTreeSet<Option<String>>> = HashMap::new();
    let mut outside = 0u64;
    for site in sites.iter().filter(|site| site.resident > 0) {
        let Some(&innermost) = site.own.first() else {
            outside = outside.saturating_add(site.resident);
            continue;
        };
        let mut seen = BTreeSet::new();
        for &index in &site.own {
            let Some(frame) = site.frames.get(index) else {
                continue;
            };
            let go = frame.file.as_deref().is_some_and(|f| f.ends_with(".go"));
            let function = function_of(&frame.function, go);
            let key = (
                site.objects.get(index).copied().flatten(),
                function.to_owned(),
            );
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
    YourCode { functions, outside }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::symbolize::symbols::FrameInfo;
    use crate::report::view::memory::{FaultCounts, Lifetime};

    fn site(names: &[(&str, Option<&str>)], own: &[usize], resident: u64) -> SiteRow {
        SiteRow {
            frames: names
                .iter()
                .map(|(function, file)| FrameInfo {
                    function: (*function).to_owned(),
                    file: file.map(str::to_owned),
                    line: Some(1),
                    inlined: false,
                })
                .collect(),
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
        }
    }

    #[test]
    fn closures_and_clones_are_their_function() {
        for (name, go, function) in [
            ("app::build::{{closure}}", false, "app::build"),
            ("app::build::{{closure}}::{{closure}}", false, "app::build"),
            ("app::build::{closure#0}", false, "app::build"),
            ("main.buildJournal.func1", true, "main.buildJournal"),
            ("main.buildJournal.func2.1", true, "main.buildJournal"),
            ("main.serve.gowrap1", true, "main.serve"),
            ("main.part", true, "main.part"),
            ("main.cold", true, "main.cold"),
            ("main.main", true, "main.main"),
            ("clear_arena.constprop.0", false, "clear_arena"),
            ("load.part.0", false, "load"),
            ("load.cold", false, "load"),
            ("load.isra.0.cold", false, "load"),
            ("main", false, "main"),
            ("libc.so.6+0x153480", false, "libc.so.6+0x153480"),
        ] {
            assert_eq!(function_of(name, go), function, "{name}");
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
        let code = your_code(&sites);
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
    }
}
