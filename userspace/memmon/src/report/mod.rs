//! `memmon report`: which code and which mappings hold the memory. This file is the
//! pipeline: captures → [`model`] (the replay) → [`symbolize`] (names) → [`view`] (rows)
//! → [`output`] (a format).
//!
//! [`Replay`] replays captures into a model of each address space ([`model::space`]),
//! with every resident page attributed to the code site that brought it in and to its
//! mapping class, and keeps what the processes held at the moments a report can show
//! ([`model::moment`]: the peak, the end, marks, a time); [`symbolize::symbols`] names the
//! sites; the views and output formats build on the [`Analysis`], at one moment.

pub mod aggregate;
pub mod model;
pub mod output;
pub mod python;
pub mod symbolize;
pub mod view;

pub use model::moment::Moment;
pub use model::replay::{Analysis, Replay, ReplayOptions};
pub use view::memory::{Prepared, View};

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use crate::report::model::timeline::Slicing;
use crate::report::output::folded::{render_folded, render_svg, Weight};
use crate::report::output::pprof::{encode, site_values, ProfileBuilder};
use crate::report::output::text::{self, memory::TextOptions};
use crate::report::symbolize::short_name::Naming;
use crate::report::symbolize::symbols::{SymbolOptions, Symbols};
use crate::report::view::diff;
use crate::report::view::memory::{build, ViewOptions};
use crate::report::view::own_code::OwnCode;
use crate::report::view::stripped;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Tables for people.
    #[default]
    Text,
    /// One JSON document.
    Json,
    /// Folded stacks.
    Folded,
    /// A flame graph.
    Svg,
    /// Gzipped profile.proto.
    Pprof,
    /// One self-contained HTML page.
    Html,
}

impl Format {
    /// Parses `text`, `json`, `folded`, `svg`, `pprof`, `html`.
    pub fn parse(text: &str) -> Option<Format> {
        Some(match text {
            "text" => Format::Text,
            "json" => Format::Json,
            "folded" => Format::Folded,
            "svg" => Format::Svg,
            "pprof" => Format::Pprof,
            "html" => Format::Html,
            _ => return None,
        })
    }
}

impl Weight {
    /// Parses `resident`, `faults`, `mapped`, `swapin`.
    pub fn parse(text: &str) -> Option<Weight> {
        Some(match text {
            "resident" => Weight::Resident,
            "faults" => Weight::Faults,
            "mapped" => Weight::Mapped,
            "swapin" => Weight::Swapin,
            _ => return None,
        })
    }
}

/// Parses `--interval`: `marks`, or a duration (`1s`, `250ms`, `100us`, `5000ns`; a bare
/// number is seconds).
pub fn parse_interval(text: &str) -> Option<Slicing> {
    if text == "marks" {
        return Some(Slicing::Marks);
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        _ => return None,
    };
    let nanos = value * scale;
    (nanos >= 1.0 && nanos.is_finite()).then_some(Slicing::Every(nanos as u64))
}

/// Everything `memmon report` can be asked.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Output format.
    pub format: Format,
    /// Flame-graph and folded weight.
    pub weight: Weight,
    /// Rows per table.
    pub top: usize,
    /// The moment shown (`--at`); none: the peak.
    pub at: Option<Moment>,
    /// Show the timeline (text).
    pub timeline: bool,
    /// Timeline slicing.
    pub slicing: Slicing,
    /// Flag intervals growing more than this.
    pub spike: Option<u64>,
    /// Where binaries are found.
    pub sysroot: Option<PathBuf>,
    /// More directories of split debug files (`--debug-dir`).
    pub debug_dirs: Vec<PathBuf>,
    /// Debuginfod servers for the debug files that no directory has.
    pub debuginfod: Option<crate::report::symbolize::debuginfod::DebuginfodOptions>,
    /// The two captures are BASE and NEW.
    pub diff: bool,
    /// The access-sampling report (`--access`) instead of the memory report.
    pub access: bool,
    /// `--cold K`: an access is cold when the page went untouched for K generations.
    pub cold: u64,
    /// `--group-by cgroup|process`: the RSS tree and top sites per group too.
    pub group_by: Option<crate::report::view::memory::GroupBy>,
    /// What is the program's own code (`--own GLOB`, `--lib GLOB`).
    pub own_code: OwnCode,
    /// How the tables, the folded stacks and the flame graphs name functions: short, or
    /// in full (`--full-names`).
    pub naming: Naming,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            format: Format::Text,
            weight: Weight::Resident,
            top: 10,
            at: None,
            timeline: false,
            slicing: Slicing::Every(1_000_000_000),
            spike: None,
            sysroot: None,
            debug_dirs: Vec::new(),
            debuginfod: None,
            diff: false,
            access: false,
            cold: crate::report::view::access::DEFAULT_COLD,
            group_by: None,
            own_code: OwnCode::default(),
            naming: Naming::Short,
        }
    }
}

impl ReportOptions {
    /// The moment shown.
    pub fn moment(&self) -> Moment {
        self.at.clone().unwrap_or_default()
    }

    fn replay_options(&self) -> ReplayOptions {
        ReplayOptions {
            slicing: self.slicing,
            at_time: self.at.as_ref().and_then(Moment::time),
        }
    }

    fn symbol_options(&self) -> SymbolOptions {
        SymbolOptions {
            sysroot: self.sysroot.clone(),
            debug_dirs: self.debug_dirs.clone(),
            debuginfod: self.debuginfod.clone(),
        }
    }
}

/// Why a report failed: one line for `memmon: error: ...`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReportError(pub String);

/// Replays captures (merged) into an analysis.
pub fn analyze(paths: &[PathBuf], options: ReplayOptions) -> Result<Analysis, ReportError> {
    let mut replay = Replay::new(options);
    for path in paths {
        let file = File::open(path)
            .map_err(|e| ReportError(format!("cannot open {}: {e}", path.display())))?;
        replay
            .capture(BufReader::new(file))
            .map_err(|e| ReportError(format!("{}: {e}", path.display())))?;
    }
    Ok(replay.finish())
}

/// `memmon record --symbolize`: names the code frames of the capture at `path` here,
/// where its binaries are, and appends them to it as `# symbol` headers (one per frame:
/// `{"object":PATH,"offset":N,"ret":BOOL,"frames":[...]}`, the frames as in the JSON
/// report). A later report uses them for objects it does not have (or has in another
/// build), and symbolises afresh from the binaries it has. Returns the number of
/// headers written.
pub fn symbolize_capture(
    path: &std::path::Path,
    options: &SymbolOptions,
) -> Result<usize, ReportError> {
    use std::io::Write;
    let analysis = analyze(&[path.to_path_buf()], ReplayOptions::default())?;
    let symbols = Symbols::new(&analysis.sites, options);
    let mut out = Vec::new();
    let mut count = 0;
    for (frame, infos) in symbols.resolved() {
        let crate::report::model::sites::Frame::Code {
            object,
            offset,
            ret,
        } = *frame
        else {
            continue;
        };
        let line = serde_json::json!({
            "object": analysis.sites.object_path(object),
            "offset": offset,
            "ret": ret,
            "frames": infos,
        });
        let _ = writeln!(out, "# symbol {line}");
        count += 1;
    }
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(&out))
        .map_err(|e| ReportError(format!("cannot write {}: {e}", path.display())))?;
    Ok(count)
}

/// Replays, symbolises and builds the view.
pub fn prepare(paths: &[PathBuf], options: &ReportOptions) -> Result<Prepared, ReportError> {
    let analysis = analyze(paths, options.replay_options())?;
    let symbols = Symbols::new(&analysis.sites, &options.symbol_options());
    let mut own_code = options.own_code.clone();
    own_code.add_executables(&analysis.executables);
    let mut view = build(
        &analysis,
        &symbols,
        &ViewOptions {
            at: options.moment(),
            spike: options.spike,
            group_by: options.group_by,
            own_code,
            naming: options.naming,
        },
    )
    .map_err(|e| ReportError(e.to_string()))?;
    // Raw addresses of stripped objects among the first rows: where their names are. The
    // packages are this machine's (dpkg), so not under a sysroot.
    // Missing objects have their own note.
    let symbol_options = options.symbol_options();
    let mut unnamed = stripped::unnamed_objects(&view, &analysis.sites, options.top);
    unnamed.retain(|object| {
        crate::report::symbolize::symbols::resolve(
            &object.path,
            object.build_id.as_deref(),
            &symbol_options,
        )
        .is_file()
    });
    if !unnamed.is_empty() {
        let root = options
            .sysroot
            .clone()
            .unwrap_or_else(|| PathBuf::from("/"));
        let owner = |path: &str| match options.sysroot {
            None => stripped::dpkg_owner(path),
            Some(_) => None,
        };
        view.stripped_hint = stripped::stripped_hint(
            &unnamed,
            &owner,
            &|id| stripped::debug_file_installed(&root, id),
            options.debuginfod.is_some(),
        );
    }
    Ok(Prepared {
        analysis,
        symbols,
        view,
    })
}

fn json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, ReportError> {
    let mut out = serde_json::to_vec_pretty(value)
        .map_err(|e| ReportError(format!("cannot write JSON: {e}")))?;
    out.push(b'\n');
    Ok(out)
}

/// The report's bytes.
pub fn report(paths: &[PathBuf], options: &ReportOptions) -> Result<Vec<u8>, ReportError> {
    if paths.is_empty() {
        return Err(ReportError("no capture given".to_owned()));
    }
    if options.access {
        return access_report(paths, options);
    }
    if options.group_by.is_some() && options.diff {
        return Err(ReportError(
            "--group-by groups one report's processes (no --diff)".to_owned(),
        ));
    }
    if options.diff {
        let [base_path, new_path] = paths else {
            return Err(ReportError(format!(
                "--diff takes two captures, BASE and NEW ({} given)",
                paths.len()
            )));
        };
        let base = prepare(std::slice::from_ref(base_path), options)?;
        let new = prepare(std::slice::from_ref(new_path), options)?;
        let difference = diff::diff(&base.view, &new.view);
        return match options.format {
            Format::Text => Ok(text::diff::render(&difference, options.top).into_bytes()),
            Format::Json => json(&difference),
            Format::Pprof => pprof(&[(&new, 1), (&base, -1)], options),
            Format::Html => {
                Ok(crate::report::output::html::render_diff(&base, &new, &difference, options.top).into_bytes())
            }
            Format::Folded | Format::Svg => Err(ReportError(
                "--diff writes text, json, pprof or html (for a differential flame graph, give two folded outputs to inferno-diff-folded)".to_owned(),
            )),
        };
    }
    let prepared = prepare(paths, options)?;
    let view = &prepared.view;
    match options.format {
        Format::Text => Ok(text::memory::render(
            view,
            TextOptions {
                top: options.top,
                timeline: options.timeline,
            },
        )
        .into_bytes()),
        Format::Json => json(view),
        Format::Html => Ok(crate::report::output::html::render(
            &prepared,
            options.top,
            options.cold,
            options.naming,
        )
        .into_bytes()),
        Format::Folded => Ok(render_folded(view, options.weight).into_bytes()),
        Format::Svg => {
            let title = format!(
                "memmon: {} by site at {}",
                options.weight.name(),
                view.shown.moment_label
            );
            render_svg(view, options.weight, &title).map_err(ReportError)
        }
        Format::Pprof => pprof(&[(&prepared, 1)], options),
    }
}

/// One profile of the analyses, each with its sign (a diff's base is negated, as `go tool
/// pprof -diff_base` does).
fn pprof(parts: &[(&Prepared, i64)], options: &ReportOptions) -> Result<Vec<u8>, ReportError> {
    let symbol_options = options.symbol_options();
    let mut builder = ProfileBuilder::new();
    for &(prepared, sign) in parts {
        let values = site_values(&prepared.analysis, &prepared.view);
        builder.add(
            &prepared.analysis,
            &prepared.symbols,
            &symbol_options,
            &values,
            sign,
        );
    }
    encode(&builder.finish()).map_err(|e| ReportError(format!("cannot compress: {e}")))
}

/// `--access`: the access-sampling report (text or JSON).
fn access_report(paths: &[PathBuf], options: &ReportOptions) -> Result<Vec<u8>, ReportError> {
    if options.diff {
        return Err(ReportError(
            "--access does not compare captures (no --diff)".to_owned(),
        ));
    }
    if options.at.is_some() {
        return Err(ReportError(
            "--access covers all the generations of the capture (no --at)".to_owned(),
        ));
    }
    let analysis = analyze(paths, options.replay_options())?;
    let symbols = Symbols::new(&analysis.sites, &options.symbol_options());
    let view =
        crate::report::view::access::build(&analysis, &symbols, options.cold, options.naming);
    match options.format {
        Format::Text => Ok(text::access::render(&view, options.top).into_bytes()),
        Format::Json => json(&view),
        _ => Err(ReportError("--access writes text or json".to_owned())),
    }
}
