//! `memmon`: watch processes' memory-management system calls and page faults through the
//! memmon kernel module (`/proc/memmon`).

mod child;
mod commands;
mod jit;
mod live;
mod output;
mod params;
mod sysinfo;
mod unwind;

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use memmon::{ModuleParams, ProcInterface, KIND_NAMES};

use crate::commands::{control, fleet, follow, report, tail, top};
use crate::output::Printer;

/// Watch processes' mm system calls and page faults through the memmon kernel module.
///
/// memmon records, for watched processes, every mm system call (mmap, munmap, mremap, brk,
/// mprotect, madvise, mlock, munlock, fsync ...) and every page fault (typed: anon, file,
/// swap, wp, spurious, numa, hugetlb, access, other), and serves them through
/// /proc/memmon/events. Most commands need root and the module loaded; `tail --input FILE`
/// needs neither.
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

    /// Walk user stacks by frame pointers only: load no unwind tables (record, run, attach
    /// load them by default for the processes they watch; see docs/unwind.md).
    #[arg(long, global = true)]
    no_unwind_tables: bool,

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
        after_help = "Example:\n  memmon run -- ls -l /tmp\n  memmon run -o trace.txt -- make -j2\n  memmon run --no-follow -- ./server\n  memmon run --cgroup /sys/fs/cgroup/system.slice/foo.service"
    )]
    Run {
        /// Also watch the processes the command forks, and theirs: the default (kept so
        /// that older command lines work).
        #[arg(long, short = 'f', overrides_with = "no_follow")]
        follow: bool,
        /// Watch the command alone, not the processes it forks (the summary names those
        /// that forked children).
        #[arg(long, overrides_with = "follow")]
        no_follow: bool,
        /// Write the raw event lines to FILE instead of printing them decoded.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        format: FormatArgs,
        /// No summary at the end (faults by type, resident growth, top 5 sites).
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Record user call stacks of up to N frames (module parameter stack_depth,
        /// restored afterwards; default 127, 0 = none).
        #[arg(long, value_name = "N",
              value_parser = clap::value_parser!(u32).range(0..=127))]
        stacks: Option<u32>,
        #[command(flatten)]
        sample: SampleArgs,
        #[command(flatten)]
        jit: JitArgs,
        /// Instead of a command, watch every process of this cgroup v2 directory and below
        /// it (`/sys/fs/cgroup/NAME` or NAME below the cgroup2 root): those in it now and those that start in or move into it,
        /// until Ctrl-C; the cgroup is unwatched at the end.
        #[arg(long, value_name = "PATH", conflicts_with_all = ["command", "follow", "no_follow", "jit_maps"])]
        cgroup: Option<PathBuf>,
        /// The command and its arguments.
        #[arg(required_unless_present = "cgroup", last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Start watching running processes.
    Attach {
        /// Also watch the processes they fork from now on.
        #[arg(long, short = 'f')]
        follow: bool,
        /// Watch every process of this cgroup v2 directory and below it, now and later
        /// (`/sys/fs/cgroup/NAME` or NAME below the cgroup2 root; `memmon detach --all` or `memmon detach --cgroup PATH` stops).
        #[arg(long, value_name = "PATH", conflicts_with = "follow")]
        cgroup: Option<PathBuf>,
        /// Process ids.
        #[arg(required_unless_present = "cgroup", value_name = "PID")]
        pids: Vec<u32>,
    },
    /// Load the unwind tables of processes watched by hand (`echo PID >
    /// /proc/memmon/watch-pids`), once, so that their user stacks are unwound through
    /// code without frame pointers; again after they load new code. record, run and
    /// attach do it themselves.
    Unwind {
        /// Take the processes' ranges away instead.
        #[arg(long)]
        forget: bool,
        /// Process ids (watched).
        #[arg(required = true, value_name = "PID")]
        pids: Vec<u32>,
    },
    /// Stop watching processes.
    Detach {
        /// Stop watching every process.
        #[arg(long, conflicts_with = "pids")]
        all: bool,
        /// Stop watching this cgroup (`-c:PATH`).
        #[arg(long, value_name = "PATH", conflicts_with = "all")]
        cgroup: Option<PathBuf>,
        /// Process ids.
        #[arg(required_unless_present_any = ["all", "cgroup"], value_name = "PID")]
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
        /// Watch every process of this cgroup v2 directory and below it while tailing
        /// (unwatched at the end).
        #[arg(long, value_name = "PATH", conflicts_with = "input")]
        cgroup: Option<PathBuf>,
    },
    /// Record a capture file: events plus /proc/PID/maps and memory-status snapshots.
    ///
    /// Either attach to running processes (-p, until they all exit or Ctrl-C) or run a
    /// command (after `--`, until it exits). Snapshots are taken at the start, after every
    /// exec, at every mark and at the end. At the end the perf maps (/tmp/perf-PID.map,
    /// written by JITs: Node --perf-basic-prof, perf-map-agent, Python -X perf, LuaJIT,
    /// .NET) of the recorded processes are copied in, for the report to name their
    /// generated code. The format is described in userspace/README.md.
    #[command(
        after_help = "Example:\n  memmon record -o cap.txt -- ./a.out\n  memmon record -o cap.txt -p 212 -p 300\n  memmon tail --input cap.txt"
    )]
    Record {
        /// The capture file to write.
        #[arg(short = 'o', long, value_name = "FILE", required = true)]
        output: PathBuf,
        /// Also watch the processes forked by the recorded ones: the default with a
        /// command; with -p, only when given.
        #[arg(long, short = 'f', overrides_with = "no_follow")]
        follow: bool,
        /// Record the command alone, not the processes it forks (the summary names those
        /// that forked children).
        #[arg(long, overrides_with = "follow")]
        no_follow: bool,
        /// No summary at the end (faults by type, resident growth, top 5 sites).
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Record user call stacks of up to N frames (module parameter stack_depth,
        /// restored afterwards; default 127, 0 = none).
        #[arg(long, value_name = "N",
              value_parser = clap::value_parser!(u32).range(0..=127))]
        stacks: Option<u32>,
        #[command(flatten)]
        sample: SampleArgs,
        /// At the end, name the recorded code frames here, where the binaries are, and
        /// store the names in the capture (`# symbol` lines) beside the addresses: a
        /// report on a machine without these binaries (or with other builds) uses them;
        /// one with the same builds symbolises afresh.
        #[arg(long)]
        symbolize: bool,
        #[command(flatten)]
        jit: JitArgs,
        /// Record these running processes (repeat or separate with commas).
        #[arg(
            short = 'p',
            long = "pid",
            value_name = "PID",
            value_delimiter = ',',
            conflicts_with_all = ["command", "jit_maps"],
            required_unless_present_any = ["command", "cgroup"]
        )]
        pids: Vec<u32>,
        /// Record every process of this cgroup v2 directory and below it
        /// (`/sys/fs/cgroup/NAME` or NAME below the cgroup2 root):
        /// those in it now and those that start in or move into it, until Ctrl-C. The
        /// capture has a `# cgroup PID PATH` header for every recorded process.
        #[arg(long, value_name = "PATH", conflicts_with_all = ["pids", "command", "follow", "no_follow", "jit_maps"])]
        cgroup: Option<PathBuf>,
        /// The command to run and record.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Report which code and which mappings hold the memory, from capture files.
    ///
    /// Replays the captures (several are merged) into a model of each address space:
    /// every page a fault brings in is attributed to the fault's stack (or ip) and to its
    /// mapping class. Shows, at the peak (the moment the processes together held the most
    /// resident memory; --at for another), the program's own functions, the RSS tree, the
    /// top sites by resident bytes, faults and mapped bytes, swap-ins, and reconciles the
    /// model with the process's own counters. Needs neither root nor the module.
    #[command(
        after_help = "Example:\n  memmon record -o cap.txt -- ./a.out && memmon report cap.txt\n  memmon report --at end cap.txt\n  memmon report --format svg -o flame.svg cap.txt\n  memmon report --diff before.txt after.txt\n  memmon report --timeline --interval marks cap.txt"
    )]
    Report(report::ReportArgs),
    /// A live view of the watched processes: resident memory and its growth, the sites
    /// growing it (named as in `memmon report`), faults per second, swap-ins, lost events.
    ///
    /// Watches running processes (-p, with their children), a cgroup (--cgroup), or a
    /// command (after `--`), or replays a capture (--input, at --speed times its pace).
    /// Refreshed every --interval seconds. On a terminal, keys: s sort, p or space pause,
    /// tab switch processes/sites, q quit. When stdout is not a terminal it prints a plain
    /// table every interval (until the capture ends, the command exits, or Ctrl-C).
    #[command(
        after_help = "Example:\n  memmon top -- ./a.out\n  memmon top -p 212\n  memmon top --cgroup /sys/fs/cgroup/system.slice/foo.service\n  memmon top --input cap.txt --speed 10"
    )]
    Top(top::TopArgs),
    /// Run as a service: watch cgroups by glob, spool pprof snapshots, serve Prometheus
    /// metrics (docs/agent.md).
    ///
    /// Watches every cgroup v2 directory the globs match (relative to the cgroup2 root,
    /// e.g. `system.slice/*.service`; cgroups created later too), keeps a bounded model of
    /// each (the report's), writes one pprof snapshot per cgroup into the spool every
    /// interval and when a cgroup nears its memory.max, and serves /metrics. The flags win
    /// over the config file. SIGHUP reloads the config; SIGTERM writes a last snapshot,
    /// unwatches everything and exits.
    #[command(
        after_help = "Example:\n  memmon agent --config /etc/memmon/agent.toml\n  memmon agent --cgroup 'system.slice/*.service' --interval 300 --label group=canary"
    )]
    Agent(AgentArgs),
    /// Add captures, agent snapshots and heap profiles to a parquet dataset for `memmon
    /// fleet` (docs/fleet.md): tables of snapshots (labels, time, resident by class,
    /// allocated), samples (resident, mapped, faults, allocated per stack) and stacks (build
    /// ID + file offset per frame).
    ///
    /// A capture gives one snapshot per process, at its peak; an agent snapshot, one; a heap
    /// profile (jemalloc's heap_v2 dump, gperftools'/tcmalloc's `heap profile:`, Go's pprof
    /// heap profile), one with its unbiased allocated bytes, its frames normalised through
    /// its own maps (build IDs from the binaries, under --sysroot). Inputs are told apart by
    /// their contents. An input that is bad (truncated, not one of these, a frame without a
    /// build ID) is skipped with a line naming it (and for a heap profile its line); the
    /// exit status is then 2.
    #[command(
        after_help = "Example:\n  memmon export --format parquet --label model=s1 --label group=beta -o fleet/ app.cap\n  memmon export -o fleet/ /var/spool/memmon/*.pb.gz\n  memmon export --sysroot /srv/firmware/1.2 --label version=1.2 -o fleet/ dumps/*.heap"
    )]
    Export(fleet::ExportArgs),
    /// Aggregate a dataset of `memmon export` on DataFusion (or a Ballista cluster): per
    /// cluster of labels, the mean per stack, top N by RSS, diffs; the report's outputs
    /// (runs the memmon-fleet binary: `make fleet`; `memmon fleet --help` there).
    #[command(disable_help_flag = true)]
    Fleet {
        /// memmon-fleet's arguments: DIR --by LABEL[,LABEL...] [--top N]
        /// [--diff LABEL=A:B] [--engine local|ballista://HOST:PORT] -o OUT.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// Serve a dataset of `memmon export` on the web: its clusters, each cluster's report,
    /// comparisons, the drill-down to snapshots, search and JSON (runs `memmon-fleet
    /// serve`: `make fleet`; `memmon serve --help` there).
    #[command(disable_help_flag = true)]
    Serve {
        /// memmon-fleet serve's arguments: DIR [--listen ADDR:PORT]
        /// [--engine local|ballista://HOST:PORT] [--by LABEL[,LABEL...]].
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// Print the module's counters.
    Stats,
    /// Write a marker line into the event stream (a `mark` event).
    Mark {
        /// The text.
        #[arg(required = true)]
        text: Vec<String>,
    },
}

/// The flags of `memmon agent`: each wins over the config file's key.
#[derive(Debug, Args)]
struct AgentArgs {
    /// The TOML config file (docs/agent.md); without it, the defaults and the flags.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Watch the cgroups this path or glob matches: the cgroup2 mount's own path
    /// (`/sys/fs/cgroup/w*`) or relative to its root (`w*`) (repeatable; replaces the
    /// file's list).
    #[arg(long = "cgroup", value_name = "GLOB")]
    cgroups: Vec<String>,
    /// Serve /metrics here (default 127.0.0.1:9464; "" for nowhere).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<String>,
    /// The spool directory of the snapshots (default /var/spool/memmon).
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
    /// Seconds between snapshots (default 600).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    interval: Option<u64>,
    /// A label of every snapshot (repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = memmon_agent::config::parse_label)]
    labels: Vec<(String, String)>,
    /// Also write the metrics text to FILE every second (for hosts without a scraper).
    #[arg(long, value_name = "FILE")]
    metrics_file: Option<PathBuf>,
    /// Read the configuration and the flags, print what they give in one line and exit
    /// (0 when valid), without starting.
    #[arg(long)]
    check_config: bool,
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

/// `--jit-maps` of `run` and `record`.
#[derive(Debug, Args)]
struct JitArgs {
    /// Make the JIT runtimes the command runs name their generated code in
    /// /tmp/perf-PID.map, for the report to name the script's functions: sets NODE_OPTIONS
    /// (--perf-basic-prof --interpreted-frames-native-stack), JAVA_TOOL_OPTIONS
    /// (-XX:+DumpPerfMapAtExit) and PYTHONPERFSUPPORT=1 (Python 3.12+) for the command.
    /// Without it, a command that is such a runtime without its switch gets a line saying
    /// how.
    #[arg(long)]
    jit_maps: bool,
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
    fn format(&self) -> output::Format {
        if self.json {
            output::Format::Json
        } else {
            output::Format::Human { time: self.time }
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
    let params = ModuleParams::default();
    unwind::set_enabled(!cli.no_unwind_tables);
    match cli.command {
        Command::Run {
            follow: _,
            no_follow,
            output,
            format,
            quiet,
            stacks,
            sample,
            jit,
            cgroup,
            command,
        } => {
            jit::prepare(&command, jit.jit_maps);
            let cgroup = cgroup
                .as_deref()
                .map(memmon::capture::cgroup::validate)
                .transpose()?;
            params::grow_rings(&proc);
            let _stacks = params::stack_depth(
                &params,
                stacks.unwrap_or(params::DEFAULT_STACK_DEPTH),
                stacks.is_some(),
            );
            let _sample = params::sample_period(&params, &proc, sample.sample)?;
            let printer = match output {
                Some(path) => Printer::new(follow::create_file(&path)?, output::Format::Raw),
                None => Printer::new(Box::new(io::stdout().lock()), format.format()),
            };
            match cgroup {
                Some(cgroup) => follow::run_cgroup(&proc, &cgroup, printer, !quiet),
                None => follow::run_command(&proc, &command, !no_follow, printer, !quiet),
            }
        }
        Command::Attach {
            follow,
            cgroup,
            pids,
        } => control::attach(&proc, &pids, follow, cgroup.as_deref()),
        Command::Unwind { forget, pids } => {
            unwind::unwind_command(&proc, &pids, forget)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Detach { all, cgroup, pids } => {
            control::detach(&proc, &pids, all, cgroup.as_deref())
        }
        Command::List => control::list(&proc),
        Command::Tail {
            format,
            pid,
            kind,
            input,
            cgroup,
        } => {
            let filter = output::Filter::new(pid, kind);
            let printer = Printer::new(Box::new(io::stdout().lock()), format.format());
            match input {
                Some(path) => tail::tail_input(&path, filter, printer),
                None => tail::tail_live(&proc, filter, printer, cgroup.as_deref()),
            }
        }
        Command::Record {
            output,
            follow,
            no_follow,
            quiet,
            stacks,
            sample,
            symbolize,
            jit,
            pids,
            cgroup,
            command,
        } => {
            jit::prepare(&command, jit.jit_maps);
            follow::record(
                &proc,
                &params,
                follow::Recording {
                    output,
                    // A command's children by default; pids' with -f only.
                    follow: if command.is_empty() {
                        follow && !no_follow
                    } else {
                        !no_follow
                    },
                    quiet,
                    stacks,
                    sample: sample.sample,
                    symbolize,
                    pids,
                    cgroup,
                    command,
                },
            )
        }
        Command::Report(args) => report::report(args),
        Command::Top(args) => top::top(&proc, args),
        Command::Agent(args) => {
            let start = memmon_agent::Start {
                config_path: args.config,
                flags: memmon_agent::Overrides {
                    cgroups: args.cgroups,
                    listen: args.listen,
                    spool: args.spool,
                    interval: args.interval,
                    labels: args.labels,
                    metrics_file: args.metrics_file,
                },
                proc_root: cli.proc_root,
                unwind_tables: !cli.no_unwind_tables,
            };
            if args.check_config {
                println!(
                    "memmon agent: configuration valid: {}",
                    memmon_agent::check_config(&start)?
                );
            } else {
                memmon_agent::run(start)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Export(args) => fleet::export(args),
        Command::Fleet { args } => fleet::fleet(&args),
        Command::Serve { args } => fleet::serve(args),
        Command::Stats => control::stats(&proc),
        Command::Mark { text } => control::mark(&proc, &text),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// `memmon --help` names every fault type the parser knows.
    #[test]
    fn help_lists_every_fault_type() {
        let help = super::Cli::command().render_long_help().to_string();
        for fault_type in memmon::FaultType::ALL {
            assert!(help.contains(fault_type.as_str()), "{fault_type:?}: {help}");
        }
    }
}
