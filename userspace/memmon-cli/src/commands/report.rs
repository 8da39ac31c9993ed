//! `memmon report`: its options and the report written to a file or standard output.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::output;

/// Options of `memmon report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Capture files (with --diff: BASE NEW).
    #[arg(required = true, value_name = "CAPTURE")]
    captures: Vec<PathBuf>,
    /// Output format.
    #[arg(long, default_value = "text",
          value_parser = clap::builder::PossibleValuesParser::new(["text", "json", "folded", "svg", "pprof", "html"]))]
    format: String,
    /// What the flame graph / folded stacks weigh.
    #[arg(long, default_value = "resident",
          value_parser = clap::builder::PossibleValuesParser::new(["resident", "faults", "mapped", "swapin"]))]
    weight: String,
    /// Rows per table.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// The moment shown: `peak` (default: when the processes together held the most
    /// resident memory), `end` (each process's last state before it released its memory),
    /// the text of a mark, or a time since the capture's start with its unit (9.1s, 250ms,
    /// 100us).
    #[arg(long, value_name = "peak|end|MARK|TIME")]
    at: Option<String>,
    /// Add the timeline (text format; always in JSON).
    #[arg(long)]
    timeline: bool,
    /// Timeline interval: a duration (1s, 250ms) or `marks`.
    #[arg(long, default_value = "1s")]
    interval: String,
    /// Flag timeline intervals whose resident growth exceeds BYTES (suffixes K, M, G).
    #[arg(long, value_name = "BYTES")]
    spike: Option<String>,
    /// Find the capture's binaries under DIR (captures from another machine).
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
    /// Also look for split debug files under DIR (repeatable): by build ID
    /// (DIR/.build-id/xx/rest.debug) and by .gnu_debuglink (DIR/NAME and
    /// DIR/<binary's directory>/NAME), before SYSROOT/usr/lib/debug and /usr/lib/debug;
    /// debuglinks are also looked for beside the binary and in its .debug/ directory.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// Fetch missing debug files (and the executables of objects missing here or here
    /// in another build) by build ID from the debuginfod server URL, or without
    /// URL from those of DEBUGINFOD_URLS (space-separated; also used without this
    /// option). Cache: DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client,
    /// else ~/.cache/debuginfod_client; timeout per request: DEBUGINFOD_TIMEOUT seconds
    /// (default 30). A server that fails gives one warning; its objects show as offsets.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    debuginfod: Option<String>,
    /// No debuginfod, even with DEBUGINFOD_URLS set.
    #[arg(long, conflicts_with = "debuginfod")]
    no_debuginfod: bool,
    /// Compare two captures: BASE NEW.
    #[arg(long)]
    diff: bool,
    /// Access sampling (captures recorded with --sample): per generation the pages
    /// touched, hot and cold, and the sites that touch cold pages (text or json).
    #[arg(long)]
    access: bool,
    /// With --access (and in the HTML page's access section): an access is cold when
    /// the page had gone K whole generations without being accessed or brought in.
    #[arg(long, value_name = "K", default_value_t = memmon::report::view::access::DEFAULT_COLD,
          value_parser = clap::value_parser!(u64).range(1..=memmon::report::view::access::MAX_COLD))]
    cold: u64,
    /// Also the RSS tree and top sites at the moment per cgroup (the `# cgroup` headers
    /// that `record` writes; `?` without) or per process.
    #[arg(long, value_name = "BY",
          value_parser = clap::builder::PossibleValuesParser::new(["cgroup", "process"]))]
    group_by: Option<String>,
    /// Count the objects whose path matches GLOB as the program's own code (repeatable;
    /// by default own code is the executables and every object outside the
    /// distribution's library directories, less the language runtimes linked in).
    #[arg(long = "own", value_name = "GLOB")]
    own: Vec<String>,
    /// Count the objects whose path matches GLOB as library code (repeatable; wins over
    /// --own).
    #[arg(long = "lib", value_name = "GLOB")]
    lib: Vec<String>,
    /// Name functions in full in the tables, the folded stacks and the flame graphs
    /// (parameter lists, template arguments, return types), one row per instantiation;
    /// by default they are short (`std::vector<…>::push_back`) and a template's
    /// instantiations are one row. JSON and pprof always have the full names.
    #[arg(long)]
    full_names: bool,
    /// Write to FILE instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Parses `4096`, `64K`, `2M`, `1G` (powers of 1024).
fn parse_bytes(text: &str) -> Option<u64> {
    let (number, scale) = match text.char_indices().last()? {
        (i, 'K' | 'k') => (&text[..i], 1u64 << 10),
        (i, 'M' | 'm') => (&text[..i], 1 << 20),
        (i, 'G' | 'g') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}

/// The debuginfod servers: `--debuginfod URL`, else DEBUGINFOD_URLS (given
/// `--debuginfod` without URL, it must be set); none with `--no-debuginfod`.
fn debuginfod(
    flag: Option<&str>,
    off: bool,
) -> Result<Option<memmon::report::symbolize::debuginfod::DebuginfodOptions>> {
    use memmon::report::symbolize::debuginfod::DebuginfodOptions;
    if off {
        return Ok(None);
    }
    match flag {
        Some("") => Ok(Some(DebuginfodOptions::from_env(None).context(
            "--debuginfod without URL needs DEBUGINFOD_URLS (or give --debuginfod URL)",
        )?)),
        Some(url) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                bail!("bad --debuginfod {url:?}: expected an http:// or https:// URL");
            }
            Ok(DebuginfodOptions::from_env(Some(url)))
        }
        None => Ok(DebuginfodOptions::from_env(None)),
    }
}

/// What `--own` and `--lib` say is own code.
fn own_code(own: &[String], lib: &[String]) -> Result<memmon::report::view::own_code::OwnCode> {
    let mut code = memmon::report::view::own_code::OwnCode::default();
    for pattern in own {
        code.add_own(pattern)
            .with_context(|| format!("bad --own {pattern:?}"))?;
    }
    for pattern in lib {
        code.add_lib(pattern)
            .with_context(|| format!("bad --lib {pattern:?}"))?;
    }
    Ok(code)
}

/// `memmon report`.
pub fn report(args: ReportArgs) -> Result<ExitCode> {
    use memmon::report::symbolize::short_name::Naming;
    use memmon::report::{Format, ReportOptions};
    let options = ReportOptions {
        own_code: own_code(&args.own, &args.lib)?,
        format: Format::parse(&args.format).context("bad --format")?,
        weight: memmon::report::output::folded::Weight::parse(&args.weight)
            .context("bad --weight")?,
        top: args.top,
        at: args.at.as_deref().map(memmon::report::Moment::parse),
        timeline: args.timeline,
        slicing: memmon::report::parse_interval(&args.interval).with_context(|| {
            format!(
                "bad --interval {:?}: expected a duration like 1s or 250ms, or marks",
                args.interval
            )
        })?,
        spike: match &args.spike {
            Some(text) => Some(parse_bytes(text).with_context(|| {
                format!("bad --spike {text:?}: expected bytes like 1048576 or 1M")
            })?),
            None => None,
        },
        sysroot: args.sysroot,
        debug_dirs: args.debug_dirs,
        debuginfod: debuginfod(args.debuginfod.as_deref(), args.no_debuginfod)?,
        diff: args.diff,
        access: args.access,
        cold: args.cold,
        group_by: args
            .group_by
            .as_deref()
            .and_then(memmon::report::view::memory::GroupBy::parse),
        naming: if args.full_names {
            Naming::Full
        } else {
            Naming::Short
        },
    };
    let bytes = memmon::report::report(&args.captures, &options)?;
    match &args.output {
        Some(path) => std::fs::write(path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            if options.format == Format::Pprof && io::IsTerminal::is_terminal(&io::stdout()) {
                bail!("--format pprof is binary: give -o FILE or redirect the output");
            }
            output::ignore_broken_pipe(io::stdout().lock().write_all(&bytes))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
