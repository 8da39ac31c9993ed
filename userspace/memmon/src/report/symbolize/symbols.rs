//! Names for sites: frames normalised to (object, file offset) are symbolised with
//! blazesym from the ELF symbols and DWARF of the mapped files. An object without
//! symbols gives `object+0xSTART`, the start of its function by the object's call frame
//! information (or the frame's own offset when the object is missing or has none);
//! nothing fails for lack of debug info.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use blazesym::helper::ElfResolver;
use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer, TranslateFileOffset};
use serde::{Deserialize, Serialize};

use memmon_objects::functions::FunctionRanges;

use super::debug_file::{self, build_id};
use super::debuginfod::{Debuginfod, DebuginfodOptions};
use super::jit_names::JitName;

use crate::report::model::sites::{Frame, ObjectId, SiteId, SiteTable, SpaceId};

/// One symbolised frame (a function, or a function inlined into it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FrameInfo {
    /// Function name (demangled), `object+0xoffset` without symbols, or a label.
    pub function: String,
    /// Source file, when debug info has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Source line, when debug info has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// This frame was inlined into the next one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inlined: bool,
}

impl FrameInfo {
    fn named(function: String) -> FrameInfo {
        FrameInfo {
            function,
            file: None,
            line: None,
            inlined: false,
        }
    }

    /// `file:line` when known.
    pub fn location(&self) -> Option<String> {
        let file = self.file.as_ref()?;
        Some(match self.line {
            Some(line) => format!("{file}:{line}"),
            None => file.clone(),
        })
    }
}

/// How a site is named, from its frames innermost first (the text tables, the HTML
/// page, the diff and the access report all name sites so).
pub mod name {
    use super::FrameInfo;

    /// The innermost function, `?` without frames.
    pub fn function(frames: &[FrameInfo]) -> &str {
        frames.first().map_or("?", |f| f.function.as_str())
    }

    /// The innermost frame's `file:line`, when known.
    pub fn location(frames: &[FrameInfo]) -> Option<String> {
        frames.first().and_then(FrameInfo::location)
    }

    /// Whether `function` is a program's entry: `main` (C, and Rust's `crate::main`) or
    /// Go's `main.main`. What calls it is the runtime's start-up, the same for every site.
    pub fn is_entry(function: &str) -> bool {
        function == "main" || function == "main.main" || function.ends_with("::main")
    }

    /// The frames up to the program's entry ([`is_entry`], included), all without one.
    fn to_entry(frames: &[FrameInfo]) -> &[FrameInfo] {
        match frames.iter().position(|f| is_entry(&f.function)) {
            Some(entry) => &frames[..=entry],
            None => frames,
        }
    }

    /// At most `depth` functions, innermost first, joined by ` < `; none past the entry.
    pub fn functions(frames: &[FrameInfo], depth: usize) -> String {
        let names: Vec<&str> = to_entry(frames)
            .iter()
            .take(depth)
            .map(|f| f.function.as_str())
            .collect();
        names.join(" < ")
    }

    /// [`functions`], followed by ` < ...` when frames were left out.
    pub fn chain(frames: &[FrameInfo], depth: usize) -> String {
        let more = if to_entry(frames).len() > depth {
            " < ..."
        } else {
            ""
        };
        format!("{}{more}", functions(frames, depth))
    }

    /// The callers of the innermost function (at most 4), joined by ` < `.
    pub fn callers(frames: &[FrameInfo]) -> String {
        functions(frames.get(1..).unwrap_or_default(), 4)
    }

    /// `chain (file:line)`: a chain of 4 and the innermost location, when known.
    pub fn site(frames: &[FrameInfo]) -> String {
        site_of_depth(frames, 4)
    }

    /// `chain (file:line)` with a chain of `depth` functions.
    pub fn site_of_depth(frames: &[FrameInfo], depth: usize) -> String {
        let chain = chain(frames, depth);
        match location(frames) {
            Some(location) => format!("{chain} ({location})"),
            None => chain,
        }
    }
}

/// Where the binaries and their debug info are found.
#[derive(Debug, Clone, Default)]
pub struct SymbolOptions {
    /// Look up `/path/of/object` as `SYSROOT/path/of/object`.
    pub sysroot: Option<PathBuf>,
    /// More debug directories (`--debug-dir`), searched before `SYSROOT/usr/lib/debug`
    /// and `/usr/lib/debug`.
    pub debug_dirs: Vec<PathBuf>,
    /// Fetch the debug files that no directory has from these debuginfod servers.
    pub debuginfod: Option<DebuginfodOptions>,
}

impl SymbolOptions {
    /// The debug directories, in search order: `--debug-dir`s, `SYSROOT/usr/lib/debug`,
    /// `/usr/lib/debug`.
    pub fn search_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = self.debug_dirs.clone();
        if let Some(root) = &self.sysroot {
            dirs.push(root.join("usr/lib/debug"));
        }
        dirs.push(PathBuf::from("/usr/lib/debug"));
        dirs
    }
}

/// The symbolised frames of every code frame of a site table.
#[derive(Debug, Clone, Default)]
pub struct Symbols {
    frames: HashMap<Frame, Vec<FrameInfo>>,
    /// Objects whose file could not be used as the capture's (missing, other build).
    pub warnings: Vec<String>,
    /// The debug file used for each object that has one apart from its binary.
    pub debug_files: Vec<(String, PathBuf)>,
    /// Code frames that nothing named (shown as `object+0xoffset`).
    unresolved: std::collections::HashSet<Frame>,
}

/// The file name of `path`.
pub(crate) fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether `function` is the name a frame of the object at `path` gets when nothing names
/// it (`object+0xoffset`).
pub(crate) fn is_unnamed(function: &str, path: &str) -> bool {
    function
        .strip_prefix(basename(path))
        .is_some_and(|rest| rest.starts_with("+0x"))
}

/// Where the object the capture names `path` is here: under the sysroot when it is there
/// (in the capture's build, `wanted`, when the capture recorded one), else at `path`
/// itself when that is the capture's build or nothing under the sysroot is, else under the
/// sysroot (missing, or another build: the warnings name it).
pub(crate) fn resolve(path: &str, wanted: Option<&str>, options: &SymbolOptions) -> PathBuf {
    let here = PathBuf::from(path);
    let Some(root) = &options.sysroot else {
        return here;
    };
    let under = root.join(path.trim_start_matches('/'));
    let is_wanted = |file: &Path| {
        file.is_file() && wanted.is_none_or(|id| build_id_of(file).as_deref() == Some(id))
    };
    if is_wanted(&under) || (under.is_file() && !is_wanted(&here)) {
        return under;
    }
    if here.is_file() && path.starts_with('/') {
        here
    } else {
        under
    }
}

/// What an object is symbolised with.
#[derive(Debug, Default)]
struct Located {
    /// The files are the capture's build (by build ID, or the capture recorded none):
    /// names recorded on the record machine (`record --symbolize`) give way to them.
    exact: bool,
    /// The binary (the capture's build, or the only one there is); its program headers
    /// turn the capture's file offsets into addresses.
    binary: Option<PathBuf>,
    /// The split debug file with the names and lines, when the binary has no DWARF.
    debug: Option<PathBuf>,
    /// Nothing was found: where the binary was looked for.
    missing: Option<PathBuf>,
}

/// The files to symbolise an object with: the binary at the path (under the sysroot)
/// when its build ID is the capture's, and when it has no DWARF of its own, the debug
/// file of that build ID (`DIR/.build-id/xx/rest.debug`), else the one its
/// `.gnu_debuglink` names, else the one debuginfod has; with a warning when the binary
/// is missing or another build and no debug file is found.
fn locate(
    path: &str,
    wanted: Option<&str>,
    options: &SymbolOptions,
    dirs: &[PathBuf],
    mut debuginfod: Option<&mut Debuginfod>,
    warnings: &mut Vec<String>,
) -> Located {
    if path.starts_with('[') {
        // The kernel's code mappings (`[vdso]`) are no file to read: offsets.
        return Located::default();
    }
    let file = resolve(path, wanted, options);
    let found = build_id_of(&file);
    let matches = file.is_file() && (wanted.is_none() || found.as_deref() == wanted);
    if matches && debug_file::has_dwarf(&file) {
        return Located {
            exact: true,
            binary: Some(file),
            debug: None,
            missing: None,
        };
    }
    let mut binary = matches.then(|| file.clone());
    if binary.is_none() {
        // Missing here, or another build: debuginfod may have the capture's.
        if let (Some(id), Some(client)) = (wanted, debuginfod.as_deref_mut()) {
            binary = client.executable(id, path);
            if let Some(executable) = &binary {
                if debug_file::has_dwarf(executable) {
                    return Located {
                        exact: true,
                        binary,
                        debug: None,
                        missing: None,
                    };
                }
            }
        }
    }
    let debug = wanted
        .and_then(|id| debug_file::by_build_id(id, dirs))
        .or_else(|| {
            binary
                .as_deref()
                .and_then(|b| debug_file::by_debuglink(b, path, dirs))
        })
        .or_else(|| {
            let id = wanted.or(found.as_deref().filter(|_| matches))?;
            debuginfod?.debug_file(id, path)
        });
    if binary.is_some() || debug.is_some() {
        return Located {
            exact: true,
            binary,
            debug,
            missing: None,
        };
    }
    match (found, wanted) {
        (Some(other), Some(wanted)) => warnings.push(format!(
            "{path}: build ID {other} is not the capture's {wanted}: the binary changed since the capture, names may be wrong (use --sysroot)"
        )),
        _ => {
            return Located {
                exact: false,
                binary: None,
                debug: None,
                missing: Some(file),
            }
        }
    }
    Located {
        exact: false,
        binary: file.is_file().then_some(file),
        debug: None,
        missing: None,
    }
}

fn build_id_of(path: &Path) -> Option<String> {
    if path.is_file() {
        build_id(path)
    } else {
        None
    }
}

impl Symbols {
    /// Symbolises all code frames of `sites`.
    pub fn new(sites: &SiteTable, options: &SymbolOptions) -> Symbols {
        let dirs = options.search_dirs();
        let symbolizer = Symbolizer::builder()
            .enable_code_info(true)
            .enable_inlined_fns(true)
            .set_debug_dirs(Some(&dirs))
            .build();
        let mut debuginfod = options.debuginfod.as_ref().map(Debuginfod::new);
        let mut frames = HashMap::new();
        let mut warnings = Vec::new();
        let mut missing: Vec<(&str, PathBuf)> = Vec::new();
        let mut debug_files = Vec::new();
        let mut unresolved = std::collections::HashSet::new();
        for (object, wanted) in code_frames_by_object(sites) {
            let path = sites.object_path(object);
            let recorded = recorded_names(sites, object, &wanted);
            let mut object_warnings = Vec::new();
            let located = locate(
                path,
                sites.object_build_id(object),
                options,
                &dirs,
                debuginfod.as_mut(),
                &mut object_warnings,
            );
            // Without the capture's build here, the names resolved where it was recorded
            // are the right ones: no warning then.
            let use_recorded = !located.exact && recorded.iter().any(Option::is_some);
            if !use_recorded {
                warnings.append(&mut object_warnings);
                if let Some(looked) = &located.missing {
                    missing.push((path, looked.clone()));
                }
            }
            if let Some(debug) = &located.debug {
                debug_files.push((path.to_owned(), debug.clone()));
            }
            // A return address is looked up one byte back, inside its call.
            let lookups: Vec<u64> = wanted
                .iter()
                .map(|&(offset, ret)| offset.saturating_sub(u64::from(ret)))
                .collect();
            let results = symbolize_located(&symbolizer, path, &located, &lookups, &mut warnings);
            // Code no symbol names is named by the start of its function (its FDE), so
            // that every instruction of one function is one frame.
            let mut functions: Option<Option<FunctionRanges>> = None;
            for (index, &(offset, ret)) in wanted.iter().enumerate() {
                let frame = Frame::Code {
                    object,
                    offset,
                    ret,
                };
                let local = results.get(index).cloned().flatten();
                let recorded = recorded.get(index).cloned().flatten();
                let infos = if use_recorded {
                    recorded.or(local)
                } else {
                    local.or(recorded)
                };
                let infos = infos.unwrap_or_else(|| {
                    unresolved.insert(frame);
                    // Only the capture's build says where its functions start.
                    let ranges = functions.get_or_insert_with(|| {
                        let binary = located.binary.as_deref().filter(|_| located.exact);
                        binary.and_then(FunctionRanges::read)
                    });
                    let lookup = lookups.get(index).copied().unwrap_or(offset);
                    vec![unnamed_frame(path, ranges.as_ref(), lookup, offset)]
                });
                frames.insert(frame, infos);
            }
        }
        warnings.extend(missing_note(&missing));
        Symbols {
            frames,
            warnings,
            debug_files,
            unresolved,
        }
    }

    /// The code frames that were named, with their names, in frame order (what
    /// `record --symbolize` stores).
    pub fn resolved(&self) -> Vec<(&Frame, &[FrameInfo])> {
        let mut out: Vec<(&Frame, &[FrameInfo])> = self
            .frames
            .iter()
            .filter(|(frame, _)| !self.unresolved.contains(frame))
            .map(|(frame, infos)| (frame, infos.as_slice()))
            .collect();
        out.sort_by_key(|(frame, _)| **frame);
        out
    }

    /// The code frames symbolised, by object, with their functions.
    pub fn code_frames(&self) -> impl Iterator<Item = (ObjectId, &[FrameInfo])> {
        self.frames.iter().filter_map(|(frame, infos)| match frame {
            Frame::Code { object, .. } => Some((*object, infos.as_slice())),
            _ => None,
        })
    }

    /// The symbolised frames of one frame (several when functions were inlined).
    pub fn frame_infos(&self, sites: &SiteTable, frame: &Frame) -> Vec<FrameInfo> {
        match frame {
            Frame::Code { .. } => self
                .frames
                .get(frame)
                .cloned()
                .unwrap_or_else(|| vec![FrameInfo::named("?".to_owned())]),
            Frame::Address { addr, space } => vec![address_frame(sites, *space, *addr)],
            Frame::Python { code, line } => vec![match sites.python_code(*code) {
                Some(info) => FrameInfo {
                    function: info.name.clone(),
                    file: Some(info.file.clone()),
                    line: Some(*line),
                    inlined: false,
                },
                None => FrameInfo::named("[Python code]".to_owned()),
            }],
            Frame::Label(label) => vec![FrameInfo::named((*label).to_owned())],
        }
    }

    /// The frames of a site, innermost first, inlined functions expanded.
    pub fn site(&self, sites: &SiteTable, site: SiteId) -> Vec<FrameInfo> {
        sites
            .frames(site)
            .iter()
            .flat_map(|frame| self.frame_infos(sites, frame))
            .collect()
    }
}

/// The names `record --symbolize` stored for the frames `wanted` of `object`.
fn recorded_names(
    sites: &SiteTable,
    object: ObjectId,
    wanted: &[(u64, bool)],
) -> Vec<Option<Vec<FrameInfo>>> {
    wanted
        .iter()
        .map(|&(offset, ret)| {
            let frame = Frame::Code {
                object,
                offset,
                ret,
            };
            serde_json::from_str(sites.recorded(&frame)?).ok()
        })
        .collect()
}

/// The code frames of all sites, by object (in object order), each object's sorted.
fn code_frames_by_object(sites: &SiteTable) -> Vec<(ObjectId, Vec<(u64, bool)>)> {
    let mut by_object: HashMap<ObjectId, BTreeSet<(u64, bool)>> = HashMap::new();
    for id in 0..sites.len() {
        for frame in sites.frames(id as SiteId) {
            if let Frame::Code {
                object,
                offset,
                ret,
            } = *frame
            {
                by_object.entry(object).or_default().insert((offset, ret));
            }
        }
    }
    let mut objects: Vec<(ObjectId, Vec<(u64, bool)>)> = by_object
        .into_iter()
        .map(|(object, wanted)| (object, wanted.into_iter().collect()))
        .collect();
    objects.sort_by_key(|(object, _)| *object);
    objects
}

/// Symbolises the file offsets `lookups` of the object at `path` with the files
/// [`locate`] found: its split debug file, else its binary; `None` for what they cannot
/// name (all of it without files).
fn symbolize_located(
    symbolizer: &Symbolizer,
    path: &str,
    located: &Located,
    lookups: &[u64],
    warnings: &mut Vec<String>,
) -> Vec<Option<Vec<FrameInfo>>> {
    match (&located.debug, &located.binary) {
        (Some(debug), binary) => {
            let results = symbolize_split(
                symbolizer,
                binary.as_deref().unwrap_or(debug),
                debug,
                lookups,
            );
            if binary.is_none() && results.iter().all(Option::is_none) {
                warnings.push(format!(
                    "{path}: only its debug file {} was found, whose program headers do not map file offsets (it needs the binary: --sysroot); its frames show as offsets",
                    debug.display()
                ));
            }
            results
        }
        (None, Some(binary)) => symbolize_object(symbolizer, binary, lookups),
        (None, None) => vec![None; lookups.len()],
    }
}

/// The frame of code no symbol names, at file offset `offset` (looked up at `lookup`):
/// `object+0xSTART`, the start of the function that `ranges` (the object's FDEs) say holds
/// it, else `object+0xOFFSET`.
fn unnamed_frame(
    path: &str,
    ranges: Option<&FunctionRanges>,
    lookup: u64,
    offset: u64,
) -> FrameInfo {
    let start = ranges
        .and_then(|ranges| ranges.start_of(lookup))
        .unwrap_or(offset);
    FrameInfo::named(format!("{}+{start:#x}", basename(path)))
}

/// One line for the objects not found here (`(path, where it was looked for)`), `None`
/// when all were.
fn missing_note(missing: &[(&str, PathBuf)]) -> Option<String> {
    match missing {
        [] => None,
        [(path, looked)] => Some(format!(
            "{path}: not found ({}); its frames show as offsets",
            looked.display()
        )),
        _ => {
            const SHOWN: usize = 4;
            let mut names: Vec<&str> = missing.iter().take(SHOWN).map(|(p, _)| *p).collect();
            let more = format!("and {} more", missing.len().saturating_sub(SHOWN));
            if missing.len() > SHOWN {
                names.push(&more);
            }
            Some(format!(
                "{} objects not found here, their frames show as offsets: {} (--sysroot DIR finds a copy of the capture machine's files)",
                missing.len(),
                names.join(", ")
            ))
        }
    }
}

/// A frame outside any mapped file: the name its own process's perf map gives its
/// generated code (also one byte back, for a return address just past the code), with the
/// script and line the name gives (V8's `JS:*f /app/main.js:3:21`, Python's
/// `py::f:/app/f.py`), else `[0x...]`.
fn address_frame(sites: &SiteTable, space: SpaceId, addr: u64) -> FrameInfo {
    match sites
        .perf_symbol(space, addr)
        .or_else(|| sites.perf_symbol(space, addr.wrapping_sub(1)))
    {
        Some(name) => {
            let jit = JitName::parse(name);
            FrameInfo {
                function: name.to_owned(),
                file: jit.as_ref().and_then(|jit| jit.file.clone()),
                line: jit.and_then(|jit| jit.line),
                inlined: false,
            }
        }
        None => FrameInfo::named(format!("[{addr:#x}]")),
    }
}

/// Symbolises file offsets of an object with its split debug file: the offsets become
/// addresses by the program headers of `binary`, which `debug` (a file of
/// `objcopy --only-keep-debug`) keeps without their file offsets.
fn symbolize_split(
    symbolizer: &Symbolizer,
    binary: &Path,
    debug: &Path,
    offsets: &[u64],
) -> Vec<Option<Vec<FrameInfo>>> {
    let Ok(resolver) = ElfResolver::open(binary) else {
        return vec![None; offsets.len()];
    };
    let addrs: Vec<Option<u64>> = offsets
        .iter()
        .map(|&offset| resolver.file_offset_to_virt_offset(offset).ok().flatten())
        .collect();
    let known: Vec<u64> = addrs.iter().flatten().copied().collect();
    let source = Source::Elf(Elf::new(debug));
    let Ok(results) = symbolizer.symbolize(&source, Input::VirtOffset(&known)) else {
        return vec![None; offsets.len()];
    };
    let mut results = convert(results);
    qualify(
        &mut results,
        symbol_table_names(symbolizer, debug, Input::VirtOffset(&known)),
    );
    let mut results = results.into_iter();
    addrs
        .iter()
        .map(|addr| addr.and_then(|_| results.next().flatten()))
        .collect()
}

/// The names the ELF symbol table of `file` (not its DWARF) gives `input`'s addresses.
fn symbol_table_names(
    symbolizer: &Symbolizer,
    file: &Path,
    input: Input<&[u64]>,
) -> Vec<Option<String>> {
    let source = Source::Elf(Elf {
        debug_syms: false,
        ..Elf::new(file)
    });
    match symbolizer.symbolize(&source, input) {
        Ok(results) => results
            .into_iter()
            .map(|result| match result {
                Symbolized::Sym(sym) => Some(sym.name.to_string()),
                Symbolized::Unknown(_) => None,
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Each result's function (the one its code belongs to, not those inlined into it) named
/// by the symbol table where DWARF names it without its scope: GCC gives a function of
/// internal linkage (in an anonymous namespace, a lambda's `operator()`) no linkage name,
/// only its own (`fill`), while its symbol is qualified
/// (`(anonymous namespace)::Store<unsigned long>::fill(unsigned long)`).
fn qualify(results: &mut [Option<Vec<FrameInfo>>], symbols: Vec<Option<String>>) {
    for (result, symbol) in results.iter_mut().zip(symbols) {
        let (Some(infos), Some(symbol)) = (result.as_mut(), symbol) else {
            continue;
        };
        let Some(function) = infos.last_mut() else {
            continue;
        };
        let unscoped = !function.function.contains("::") && !function.function.is_empty();
        if unscoped && symbol.contains(&format!("::{}", function.function)) {
            function.function = symbol;
        }
    }
}

/// Symbolises file offsets of one object; `None` entries for what it cannot name.
fn symbolize_object(
    symbolizer: &Symbolizer,
    file: &Path,
    offsets: &[u64],
) -> Vec<Option<Vec<FrameInfo>>> {
    if !file.is_file() {
        return vec![None; offsets.len()];
    }
    let source = Source::Elf(Elf::new(file));
    let Ok(results) = symbolizer.symbolize(&source, Input::FileOffset(offsets)) else {
        return vec![None; offsets.len()];
    };
    let mut results = convert(results);
    qualify(
        &mut results,
        symbol_table_names(symbolizer, file, Input::FileOffset(offsets)),
    );
    results
}

/// blazesym's results as frames, inlined functions first. Each function has its own
/// location: blazesym gives the symbol's (the outer function's) for the address in its
/// code, at the call it inlined, and each inlined function's for the address in its
/// code (outermost first: the innermost is where the address is).
fn convert(results: Vec<Symbolized<'_>>) -> Vec<Option<Vec<FrameInfo>>> {
    let located = |code: Option<&blazesym::symbolize::CodeInfo<'_>>| {
        code.map(|c| (c.to_path().display().to_string(), c.line))
            .unzip()
    };
    results
        .into_iter()
        .map(|result| match result {
            Symbolized::Sym(sym) => {
                let mut infos = Vec::with_capacity(sym.inlined.len() + 1);
                for inlined in sym.inlined.iter().rev() {
                    let (file, line) = located(inlined.code_info.as_ref());
                    infos.push(FrameInfo {
                        function: inlined.name.to_string(),
                        file,
                        line: line.flatten(),
                        inlined: true,
                    });
                }
                let (file, line) = located(sym.code_info.as_deref());
                infos.push(FrameInfo {
                    function: sym.name.to_string(),
                    file,
                    line: line.flatten(),
                    inlined: false,
                });
                Some(infos)
            }
            Symbolized::Unknown(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{qualify, FrameInfo, SymbolOptions};

    #[test]
    fn functions_without_their_scope_take_the_symbols() {
        let frame = |function: &str, inlined: bool| FrameInfo {
            function: function.to_owned(),
            file: Some("/src/templates.cc".to_owned()),
            line: Some(21),
            inlined,
        };
        let mut results = vec![
            Some(vec![frame("fill", false)]),
            Some(vec![frame("resize", true), frame("operator()", false)]),
            Some(vec![frame("load_rows", false)]),
            Some(vec![frame(
                "std::vector<int>::push_back(int const&)",
                false,
            )]),
            None,
        ];
        qualify(
            &mut results,
            vec![
                Some("(anonymous namespace)::Store<unsigned long>::fill(unsigned long) [clone .constprop.0]".to_owned()),
                Some("build_index(unsigned long)::{lambda(unsigned long)#1}::operator()(unsigned long) const".to_owned()),
                Some("load_rows".to_owned()),
                Some("other::symbol()".to_owned()),
                Some("x::y".to_owned()),
            ],
        );
        let names: Vec<Vec<&str>> = results
            .iter()
            .map(|r| r.iter().flatten().map(|f| f.function.as_str()).collect())
            .collect();
        assert_eq!(
            names,
            [
                vec!["(anonymous namespace)::Store<unsigned long>::fill(unsigned long) [clone .constprop.0]"],
                vec![
                    "resize",
                    "build_index(unsigned long)::{lambda(unsigned long)#1}::operator()(unsigned long) const"
                ],
                vec!["load_rows"],
                vec!["std::vector<int>::push_back(int const&)"],
                vec![],
            ]
        );
        // The line stays DWARF's.
        assert_eq!(results[0].as_ref().unwrap()[0].line, Some(21));
    }

    #[test]
    fn debug_directories_in_search_order() {
        let options = SymbolOptions {
            sysroot: Some(PathBuf::from("/srv/root")),
            debug_dirs: vec![PathBuf::from("/a"), PathBuf::from("/b")],
            debuginfod: None,
        };
        let want: Vec<PathBuf> = ["/a", "/b", "/srv/root/usr/lib/debug", "/usr/lib/debug"]
            .into_iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(options.search_dirs(), want);
        assert_eq!(
            SymbolOptions::default().search_dirs(),
            [PathBuf::from("/usr/lib/debug")]
        );
    }
}
