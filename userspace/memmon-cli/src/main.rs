//! `memmon`: watch processes' memory-management system calls and page faults through the
//! memmon kernel module (`/proc/memmon`).

mod child;
mod commands;
mod live;
mod output;
mod params;
mod stacks;
mod sysinfo;

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use memmon::{CaptureReader, ProcInterface, KIND_NAMES};

use crate::output::{Format, Printer};

/// Watch processes' mm system calls and page faults through the memmon kernel module.
///
/// memmon records, for watched processes, every mm system call (mmap, munmap, mremap, brk,
/// mprotect, madvise, mlock, munlock, fsync ...) and every page fault (typed: anon, file,
/// swap, wp), and serves them through /proc/memmon/events. Most commands need root and the
/// module loaded; `tail --input FILE` needs neither.
#[derive(Debug, Parser)]
#[command(
    name = "memmon",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    /// Directory of the module's files.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "MEMMON_PROC_ROOT",
        default_value = memmon::capture::control::DEFAULT_PROC_ROOT
    )]
    proc_root: PathBuf,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command under watch and print its events until it exits.
    ///
    /// The command starts only once it is watched, so its first event is its `exec`
    /// (preceded by a few faults of memmon's own child before exec). memmon exits with
    /// the command's exit status (128+N when killed by signal N).
    #[command(
        after_help = "Example:\n  memmon run -- ls -l /tmp\n  memmon run --follow -o trace.txt -- make -j2"
    )]
    Run {
        /// Also watch the processes the command forks, and theirs.
        #[arg(long, short = 'f')]
        follow: bool,
        /// Write the raw event lines to FILE instead of printing them decoded.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        format: FormatArgs,
        /// No summary at the end (faults by type, resident growth, top 5 sites).
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Record user call stacks of up to N frames (module parameter stack_depth,
        /// restored afterwards; 0 = none).
        #[arg(long, value_name = "N", default_value_t = 0,
              value_parser = clap::value_parser!(u32).range(0..=64))]
        stacks: u32,
        #[command(flatten)]
        sample: SampleArgs,
        /// The command and its arguments.
        #[arg(required = true, last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Start watching running processes.
    Attach {
        /// Also watch the processes they fork from now on.
        #[arg(long, short = 'f')]
        follow: bool,
        /// Process ids.
        #[arg(required = true, value_name = "PID")]
        pids: Vec<u32>,
    },
    /// Stop watching processes.
    Detach {
        /// Stop watching every process.
        #[arg(long, conflicts_with = "pids")]
        all: bool,
        /// Process ids.
        #[arg(required_unless_present = "all", value_name = "PID")]
        pids: Vec<u32>,
    },
    /// List the watched processes (pid and command name).
    List,
    /// Print the event stream, decoded, as it arrives (Ctrl-C to stop).
    ///
    /// Starts with the oldest event still in the module's buffer. Does not change the
    /// watch set: use `attach` first. `lost` lines are always shown.
    #[command(
        after_help = "Example:\n  memmon tail --pid 212 --kind mmap,munmap\n  memmon tail --json --input capture.txt"
    )]
    Tail {
        #[command(flatten)]
        format: FormatArgs,
        /// Only events of these processes (repeat or separate with commas).
        #[arg(long, short = 'p', value_name = "PID", value_delimiter = ',')]
        pid: Vec<u32>,
        /// Only events of these kinds (comma-separated).
        #[arg(long, short = 'k', value_name = "KIND", value_delimiter = ',',
              value_parser = clap::builder::PossibleValuesParser::new(KIND_NAMES))]
        kind: Vec<String>,
        /// Decode a capture file or saved event stream instead of the live stream
        /// (`-` for stdin); stops at its end. Needs neither root nor the module.
        #[arg(long, short = 'i', value_name = "FILE")]
        input: Option<PathBuf>,
    },
    /// Record a capture file: events plus /proc/PID/maps and memory-status snapshots.
    ///
    /// Either attach to running processes (-p, until they all exit or Ctrl-C) or run a
    /// command (after `--`, until it exits). Snapshots are taken at the start, after every
    /// exec, at every mark and at the end. The format is described in userspace/README.md.
    #[command(
        after_help = "Example:\n  memmon record -o cap.txt -- ./a.out\n  memmon record -o cap.txt -p 212 -p 300\n  memmon tail --input cap.txt"
    )]
    Record {
        /// The capture file to write.
        #[arg(short = 'o', long, value_name = "FILE", required = true)]
        output: PathBuf,
        /// Also watch the processes forked by the recorded ones.
        #[arg(long, short = 'f')]
        follow: bool,
        /// No summary at the end (faults by type, resident growth, top 5 sites).
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Record user call stacks of up to N frames (module parameter stack_depth,
        /// restored afterwards; default 16, 0 = none).
        #[arg(long, value_name = "N",
              value_parser = clap::value_parser!(u32).range(0..=64))]
        stacks: Option<u32>,
        #[command(flatten)]
        sample: SampleArgs,
        /// Record these running processes (repeat or separate with commas).
        #[arg(
            short = 'p',
            long = "pid",
            value_name = "PID",
            value_delimiter = ',',
            conflicts_with = "command",
            required_unless_present = "command"
        )]
        pids: Vec<u32>,
        /// The command to run and record.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Report which code and which mappings hold the memory, from capture files.
    ///
    /// Replays the captures (several are merged) into a model of each address space:
    /// every page a fault brings in is attributed to the fault's stack (or ip) and to its
    /// mapping class. Shows the RSS tree, the top sites by resident bytes, faults and
    /// mapped bytes, swap-ins, and reconciles the model with the process's own counters.
    /// Needs neither root nor the module.
    #[command(
        after_help = "Example:\n  memmon record -o cap.txt -- ./a.out && memmon report cap.txt\n  memmon report --format svg -o flame.svg cap.txt\n  memmon report --diff before.txt after.txt\n  memmon report --timeline --interval marks cap.txt"
    )]
    Report(ReportArgs),
    /// Print the module's counters.
    Stats,
    /// Write a marker line into the event stream (a `mark` event).
    Mark {
        /// The text.
        #[arg(required = true)]
        text: Vec<String>,
    },
}

/// Options of `memmon report`.
#[derive(Debug, Args)]
struct ReportArgs {
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
    /// Show the state at this mark (its text) instead of the end.
    #[arg(long, value_name = "MARK")]
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

fn report(args: ReportArgs) -> Result<ExitCode> {
    use memmon::report::{Format, ReportOptions};
    let options = ReportOptions {
        format: Format::parse(&args.format).context("bad --format")?,
        weight: memmon::report::output::folded::Weight::parse(&args.weight)
            .context("bad --weight")?,
        top: args.top,
        at: args.at,
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
        diff: args.diff,
        access: args.access,
        cold: args.cold,
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

/// `--sample MS` of `run` and `record`.
#[derive(Debug, Args)]
struct SampleArgs {
    /// Access sampling every MS milliseconds (10 to 60000; module parameter sample_ms,
    /// restored afterwards): each generation's first access to every resident page, for
    /// `memmon report --access`.
    #[arg(long, value_name = "MS", value_parser = params::parse_period)]
    sample: Option<u32>,
}

/// How decoded events are printed.
#[derive(Debug, Args)]
struct FormatArgs {
    /// One JSON object per event instead of the human-readable form.
    #[arg(long)]
    json: bool,
    /// Prefix human-readable lines with the event's timestamp.
    #[arg(long, short = 't', conflicts_with = "json")]
    time: bool,
}

impl FormatArgs {
    fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            Format::Human { time: self.time }
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("memmon: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let proc = ProcInterface::new(&cli.proc_root);
    match cli.command {
        Command::Run {
            follow,
            output,
            format,
            quiet,
            stacks,
            sample,
            command,
        } => {
            let _stacks = stacks::StackDepth::set(stacks, stacks > 0);
            let _sample = params::SamplePeriod::set(sample.sample, &cli.proc_root)?;
            let printer = match output {
                Some(path) => Printer::new(create_file(&path)?, Format::Raw),
                None => Printer::new(Box::new(io::stdout().lock()), format.format()),
            };
            commands::follow::run_command(&proc, &command, follow, printer, !quiet)
        }
        Command::Attach { follow, pids } => {
            if follow {
                proc.watch_following(&pids)?;
            } else {
                proc.watch(&pids)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Detach { all, pids } => {
            if all {
                proc.clear()?;
            } else {
                proc.unwatch(&pids)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::List => {
            let mut out = io::stdout().lock();
            for pid in proc.watched()? {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|name| name.trim_end().to_owned())
                    .unwrap_or_else(|_| "?".to_owned());
                output::ignore_broken_pipe(writeln!(out, "{pid} {comm}"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tail {
            format,
            pid,
            kind,
            input,
        } => {
            let filter = output::Filter::new(pid, kind);
            let printer = Printer::new(Box::new(io::stdout().lock()), format.format());
            match input {
                Some(path) => tail_input(&path, filter, printer),
                None => commands::follow::tail_live(&proc, filter, printer),
            }
        }
        Command::Record {
            output,
            follow,
            quiet,
            stacks,
            sample,
            pids,
            command,
        } => {
            let file = create_file(&output)?;
            let stacks = stacks::StackDepth::set(stacks.unwrap_or(16), stacks.is_some());
            let sample = params::SamplePeriod::set(sample.sample, &cli.proc_root)?;
            let code = if command.is_empty() {
                commands::follow::record_pids(&proc, &pids, follow, file)
            } else {
                commands::follow::record_command(&proc, &command, follow, file)
            }?;
            drop(sample);
            drop(stacks);
            if !quiet {
                // From the file, after recording: the summary costs the recording nothing.
                let every_second = memmon::report::model::timeline::Slicing::Every(1_000_000_000);
                match memmon::report::analyze(&[output], every_second) {
                    Ok(analysis) => {
                        eprint!("{}", memmon::report::output::summary::summary(&analysis))
                    }
                    Err(error) => eprintln!("memmon: warning: no summary: {error}"),
                }
            }
            Ok(code)
        }
        Command::Report(args) => report(args),
        Command::Stats => {
            let stats = proc.stats()?;
            let width = stats
                .entries
                .iter()
                .map(|(key, _)| key.len())
                .max()
                .unwrap_or(0);
            let mut out = io::stdout().lock();
            for (key, value) in &stats.entries {
                output::ignore_broken_pipe(writeln!(out, "{key:width$}  {value}"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Mark { text } => {
            proc.mark(&text.join(" "))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn create_file(path: &PathBuf) -> Result<Box<dyn Write>> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    // Large: the live loops write whole reads at once and flush after each.
    Ok(Box::new(io::BufWriter::with_capacity(1 << 20, file)))
}

/// `tail --input`: decode a capture file or stdin.
fn tail_input(path: &PathBuf, filter: output::Filter, mut printer: Printer) -> Result<ExitCode> {
    let input: Box<dyn io::BufRead> = if path.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        Box::new(BufReader::new(file))
    };
    let name = path.display().to_string();
    let mut reader = CaptureReader::new(input);
    let mut lost = 0u64;
    let mut bad_lines = 0u64;
    while let Some(item) = reader.next_event() {
        match item {
            Ok((_, event)) => {
                if let memmon::EventKind::Lost { count } = event.kind {
                    lost += count;
                }
                if filter.accepts(&event) && !printer.print(&event)? {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            Err(memmon::ReadError::Io { source, .. }) => {
                bail!("cannot read {name}: {source}")
            }
            Err(error) => {
                bad_lines += 1;
                eprintln!("memmon: warning: {name}: {error}");
            }
        }
    }
    printer.flush()?;
    if lost > 0 {
        eprintln!("memmon: {lost} events were lost (overwritten before they were read)");
    }
    if bad_lines > 0 {
        bail!("{name}: {bad_lines} lines could not be decoded");
    }
    Ok(ExitCode::SUCCESS)
}
