//! Names for sites: frames normalised to (object, file offset) are symbolised with
//! blazesym from the ELF symbols and DWARF of the mapped files. An object without
//! symbols (or missing) gives `object+0xoffset`; nothing fails for lack of debug info.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use serde::Serialize;

use crate::report::model::sites::{Frame, ObjectId, SiteId, SiteTable};

/// One symbolised frame (a function, or a function inlined into it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct FrameInfo {
    /// Function name (demangled), `object+0xoffset` without symbols, or a label.
    pub function: String,
    /// Source file, when debug info has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Source line, when debug info has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// This frame was inlined into the next one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
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

    /// At most `depth` functions, innermost first, joined by ` < `.
    pub fn functions(frames: &[FrameInfo], depth: usize) -> String {
        let names: Vec<&str> = frames
            .iter()
            .take(depth)
            .map(|f| f.function.as_str())
            .collect();
        names.join(" < ")
    }

    /// [`functions`], followed by ` < ...` when frames were left out.
    pub fn chain(frames: &[FrameInfo], depth: usize) -> String {
        let more = if frames.len() > depth { " < ..." } else { "" };
        format!("{}{more}", functions(frames, depth))
    }

    /// The callers of the innermost function (at most 4), joined by ` < `.
    pub fn callers(frames: &[FrameInfo]) -> String {
        functions(frames.get(1..).unwrap_or_default(), 4)
    }

    /// `chain (file:line)`: a chain of 4 and the innermost location, when known.
    pub fn site(frames: &[FrameInfo]) -> String {
        let chain = chain(frames, 4);
        match location(frames) {
            Some(location) => format!("{chain} ({location})"),
            None => chain,
        }
    }
}

/// Where the binaries are found.
#[derive(Debug, Clone, Default)]
pub struct SymbolOptions {
    /// Look up `/path/of/object` as `SYSROOT/path/of/object`.
    pub sysroot: Option<PathBuf>,
}

/// The symbolised frames of every code frame of a site table.
#[derive(Debug, Clone, Default)]
pub struct Symbols {
    frames: HashMap<Frame, Vec<FrameInfo>>,
    /// Objects whose file could not be used as the capture's (missing, other build).
    pub warnings: Vec<String>,
}

/// The GNU build ID of an ELF file, as lowercase hex.
pub fn build_id(path: &Path) -> Option<String> {
    let id = blazesym::helper::read_elf_build_id(&path).ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn resolve(path: &str, options: &SymbolOptions) -> PathBuf {
    match &options.sysroot {
        Some(root) => root.join(path.trim_start_matches('/')),
        None => PathBuf::from(path),
    }
}

/// The file to symbolise an object with: the path (under the sysroot) when its build ID
/// is the capture's, else the debug file of that build ID
/// (`usr/lib/debug/.build-id/xx/yyyy.debug`); with a warning when neither matches.
fn locate(
    path: &str,
    build_id: Option<&str>,
    options: &SymbolOptions,
    warnings: &mut Vec<String>,
) -> PathBuf {
    let file = resolve(path, options);
    let Some(wanted) = build_id else {
        if !file.is_file() {
            warnings.push(format!(
                "{path}: not found ({}); its frames show as offsets",
                file.display()
            ));
        }
        return file;
    };
    let found = build_id_of(&file);
    if found.as_deref() == Some(wanted) {
        return file;
    }
    if wanted.len() > 2 {
        let root = options
            .sysroot
            .clone()
            .unwrap_or_else(|| PathBuf::from("/"));
        let debug = root
            .join("usr/lib/debug/.build-id")
            .join(&wanted[..2])
            .join(format!("{}.debug", &wanted[2..]));
        if debug.is_file() {
            return debug;
        }
    }
    match found {
        Some(other) => warnings.push(format!(
            "{path}: build ID {other} is not the capture's {wanted}: the binary changed since the capture, names may be wrong (use --sysroot)"
        )),
        None => warnings.push(format!(
            "{path}: not found ({}); its frames show as offsets",
            file.display()
        )),
    }
    file
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
        let symbolizer = Symbolizer::builder()
            .enable_code_info(true)
            .enable_inlined_fns(true)
            .build();
        let mut frames = HashMap::new();
        let mut warnings = Vec::new();
        let mut objects: Vec<_> = by_object.into_iter().collect();
        objects.sort_by_key(|(object, _)| *object);
        for (object, wanted) in objects {
            let path = sites.object_path(object);
            let file = locate(path, sites.object_build_id(object), options, &mut warnings);
            let wanted: Vec<(u64, bool)> = wanted.into_iter().collect();
            let lookups: Vec<u64> = wanted
                .iter()
                .map(|&(offset, ret)| {
                    if ret {
                        offset.saturating_sub(1)
                    } else {
                        offset
                    }
                })
                .collect();
            let results = symbolize_object(&symbolizer, &file, &lookups);
            for (index, &(offset, ret)) in wanted.iter().enumerate() {
                let infos = results.get(index).cloned().flatten().unwrap_or_else(|| {
                    vec![FrameInfo::named(format!("{}+{offset:#x}", basename(path)))]
                });
                frames.insert(
                    Frame::Code {
                        object,
                        offset,
                        ret,
                    },
                    infos,
                );
            }
        }
        Symbols { frames, warnings }
    }

    /// The symbolised frames of one frame (several when functions were inlined).
    pub fn frame_infos(&self, sites: &SiteTable, frame: &Frame) -> Vec<FrameInfo> {
        let _ = sites;
        match frame {
            Frame::Code { .. } => self
                .frames
                .get(frame)
                .cloned()
                .unwrap_or_else(|| vec![FrameInfo::named("?".to_owned())]),
            Frame::Address(addr) => vec![FrameInfo::named(format!("[{addr:#x}]"))],
            Frame::Label(label) => vec![FrameInfo::named((*label).to_owned())],
        }
    }

    /// The frames of a site, innermost first, inlined functions expanded.
    pub fn site(&self, sites: &SiteTable, site: SiteId) -> Vec<FrameInfo> {
        let mut out = Vec::new();
        for frame in sites.frames(site) {
            match frame {
                Frame::Code { .. } => match self.frames.get(frame) {
                    Some(infos) => out.extend(infos.iter().cloned()),
                    None => out.push(FrameInfo::named("?".to_owned())),
                },
                Frame::Address(addr) => out.push(FrameInfo::named(format!("[{addr:#x}]"))),
                Frame::Label(label) => out.push(FrameInfo::named((*label).to_owned())),
            }
        }
        out
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
    results
        .into_iter()
        .map(|result| match result {
            Symbolized::Sym(sym) => {
                let mut infos = Vec::new();
                // Inlined calls come outermost first: the innermost is the frame itself.
                let code = sym.code_info.as_deref();
                let mut location = code.map(|c| (c.to_path().display().to_string(), c.line));
                for inlined in sym.inlined.iter().rev() {
                    let (file, line) = location.take().unzip();
                    infos.push(FrameInfo {
                        function: inlined.name.to_string(),
                        file,
                        line: line.flatten(),
                        inlined: true,
                    });
                    location = inlined
                        .code_info
                        .as_ref()
                        .map(|c| (c.to_path().display().to_string(), c.line));
                }
                let (file, line) = location.unzip();
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
