//! `memmon-fleet` (run as `memmon fleet`): aggregates a dataset of `memmon export`
//! (docs/fleet.md); `memmon-fleet scheduler` and `memmon-fleet executor` start a Ballista
//! cluster's processes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use memmon::report::symbolize::debuginfod::DebuginfodOptions;
use memmon::report::symbolize::symbols::SymbolOptions;
#[cfg(feature = "ballista")]
use memmon_fleet::cluster::{self, ExecutorAddress};
use memmon_fleet::engine::{Engine, DEFAULT_MEMORY_LIMIT, DEFAULT_QUERY_TIMEOUT};
use memmon_fleet::query::{parse_time, Question};
use memmon_fleet::run::{run, DiffSpec, RunOptions};

/// Aggregate a fleet's snapshots (a dataset of `memmon export`) per cluster of labels, on
/// DataFusion (embedded) or a Ballista cluster, and write the report's outputs per
/// cluster: CLUSTER.folded, CLUSTER.txt, CLUSTER.html, CLUSTER.pb.gz, clusters.csv, and
/// with --diff the diffs.
#[derive(Debug, Parser)]
#[command(
    name = "memmon fleet",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    service: Option<Service>,
    /// The dataset directory (`memmon export -o DIR`).
    #[arg(value_name = "DIR", required = true)]
    dataset: Option<PathBuf>,
    /// The labels that make clusters (comma-separated); a snapshot without one has
    /// `none` for it.
    #[arg(
        long,
        value_name = "LABEL[,LABEL...]",
        value_delimiter = ',',
        required = true
    )]
    by: Vec<String>,
    /// Look up binaries as SYSROOT/path (as `memmon report`).
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
    /// More directories of split debug files.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// Fetch debug files from debuginfod servers (DEBUGINFOD_URLS).
    #[arg(long)]
    debuginfod: bool,
    /// Per N, a sub-cluster CLUSTER/topN of each cluster: its N snapshots with the highest
    /// RSS (comma-separated: nested tiers in one pass).
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',',
          value_parser = clap::value_parser!(u64).range(1..))]
    top: Vec<u64>,
    /// The snapshots whose `reason` label is one of these (`--reason`: near-limit,kill;
    /// `--reason=R1,R2`: those) as a
    /// sub-cluster of their own, CLUSTER/REASON, left out of CLUSTER: the agent's
    /// `near-limit` snapshots; heap dumps written before a process's own kill labelled so
    /// at export (`memmon export --label reason=kill`).
    #[arg(long, value_name = "REASON[,REASON...]", value_delimiter = ',', num_args = 0..=1,
          require_equals = true, default_missing_value = "near-limit,kill")]
    reason: Option<Vec<String>>,
    /// Only the snapshots taken at or after TIME (seconds since the epoch, or a UTC time
    /// YYYY-MM-DD[THH:MM[:SS]]); those of unknown time are left out.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    since: Option<i64>,
    /// Only the snapshots taken before TIME (as --since).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    until: Option<i64>,
    /// Drop the clusters and sub-clusters of fewer than N snapshots, with one line saying
    /// how many.
    #[arg(long, value_name = "N", default_value_t = 1)]
    min_snapshots: u64,
    /// Compare each cluster with LABEL=BASE with the one with LABEL=NEW.
    #[arg(long, value_name = "LABEL=BASE:NEW")]
    diff: Option<String>,
    /// Compare cluster BASE with cluster NEW (by their names, as the files'), as --diff
    /// does; repeatable.
    #[arg(long, value_name = "BASE:NEW", value_parser = parse_pair)]
    compare: Vec<(String, String)>,
    /// In the diffs' stacks.csv, flag a stack whose change in mean bytes is over this (and
    /// outside the noise: Welch's 95 % interval excludes 0).
    #[arg(long, value_name = "BYTES", default_value_t = memmon_fleet::compare::DEFAULT_THRESHOLD)]
    diff_threshold: u64,
    /// Where the queries run: local (DataFusion here) or ballista://HOST:PORT.
    #[arg(long, value_name = "ENGINE", default_value = "local")]
    engine: String,
    /// On Ballista, fail a query that has not ended in this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_QUERY_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    query_timeout: u64,
    /// The embedded engine's memory pool in MiB (its operators spill to disk past it).
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_MEMORY_LIMIT >> 20)]
    memory_limit: usize,
    /// Rows per table of the text and HTML outputs.
    #[arg(long, value_name = "N", default_value_t = 10)]
    rows: usize,
    /// Folded stacks and the pages' flame graphs rooted at the innermost frame (the
    /// allocator), so that one function's box spans all its callers.
    #[arg(long)]
    reverse: bool,
    /// The output directory.
    #[arg(short = 'o', long, value_name = "OUT", required = true)]
    output: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Service {
    /// Run a Ballista scheduler.
    Scheduler {
        /// Listen here.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// And on this port.
        #[arg(long, default_value_t = 50050)]
        port: u16,
        /// Seconds without a heartbeat after which an executor is taken for dead and its
        /// tasks run elsewhere.
        #[arg(long, value_name = "SECONDS", default_value_t = 180,
              value_parser = clap::value_parser!(u64).range(5..))]
        executor_timeout: u64,
    },
    /// Run a Ballista executor.
    Executor {
        /// Listen here.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Its Flight port (the gRPC one is the next).
        #[arg(long, default_value_t = 50051)]
        port: u16,
        /// The scheduler's host.
        #[arg(long, default_value = "127.0.0.1")]
        scheduler_host: String,
        /// The scheduler's port.
        #[arg(long, default_value_t = 50050)]
        scheduler_port: u16,
        /// Tasks at once (default: the cores).
        #[arg(long)]
        slots: Option<usize>,
        /// Work directory (shuffle files).
        #[arg(long)]
        work_dir: Option<String>,
    },
}

/// `BASE:NEW`.
fn parse_pair(text: &str) -> Result<(String, String), String> {
    text.split_once(':')
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .ok_or_else(|| format!("{text:?}: give BASE:NEW (two clusters' names)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(16 << 20)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("memmon: error: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(start(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("memmon: error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn start(cli: Cli) -> Result<(), String> {
    if let Some(service) = cli.service {
        return serve(service).await;
    }
    let (Some(dataset), Some(output)) = (cli.dataset, cli.output) else {
        return Err("give DIR and -o OUT".to_owned());
    };
    let options = RunOptions {
        dataset,
        question: Question {
            by: cli.by,
            top: cli.top,
            reasons: cli.reason.unwrap_or_default(),
            since: cli.since,
            until: cli.until,
        },
        diff: cli.diff.as_deref().map(DiffSpec::parse).transpose()?,
        compare: cli.compare,
        diff_threshold: cli.diff_threshold,
        engine: Engine::parse(
            &cli.engine,
            cli.memory_limit << 20,
            std::time::Duration::from_secs(cli.query_timeout),
        )?,
        symbols: SymbolOptions {
            sysroot: cli.sysroot,
            debug_dirs: cli.debug_dirs,
            debuginfod: if cli.debuginfod {
                DebuginfodOptions::from_env(None)
            } else {
                None
            },
        },
        rows: cli.rows,
        min_snapshots: cli.min_snapshots,
        reverse: cli.reverse,
        output,
    };
    let summary = run(&options).await?;
    eprintln!(
        "memmon fleet: {} clusters of {} snapshots ({} parts skipped), {} stacks symbolised, \
         {} diffs, in {}",
        summary.clusters,
        summary.snapshots,
        summary.skipped,
        summary.stacks,
        summary.diffs,
        options.output.display()
    );
    Ok(())
}

/// `memmon-fleet scheduler` and `memmon-fleet executor`: run until killed.
#[cfg(feature = "ballista")]
async fn serve(service: Service) -> Result<(), String> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match service {
        Service::Scheduler {
            host,
            port,
            executor_timeout,
        } => cluster::scheduler(&host, port, executor_timeout).await,
        Service::Executor {
            host,
            port,
            scheduler_host,
            scheduler_port,
            slots,
            work_dir,
        } => {
            let slots = slots.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
            });
            cluster::executor(&ExecutorAddress {
                host,
                port,
                scheduler_host,
                scheduler_port,
                slots,
                work_dir,
            })
            .await
        }
    }
}

/// Without Ballista's crates, the services are not there.
#[cfg(not(feature = "ballista"))]
async fn serve(_: Service) -> Result<(), String> {
    Err(memmon_fleet::engine::WITHOUT_BALLISTA.to_owned())
}
