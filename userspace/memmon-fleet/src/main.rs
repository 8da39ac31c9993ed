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
use memmon_fleet::daily::DailyOptions;
use memmon_fleet::engine::{Engine, DEFAULT_MEMORY_LIMIT, DEFAULT_QUERY_TIMEOUT};
use memmon_fleet::query::{parse_time, Question};
use memmon_fleet::run::{run, DiffSpec, RunOptions};
use memmon_fleet::serve::ServeOptions;

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
    /// Serve the dataset's clusters on the web (`memmon serve`): the clusters and their
    /// tiers, each cluster's report, comparisons, the drill-down to snapshots, search, and
    /// JSON for all (docs/fleet.md).
    Serve(ServeArgs),
    /// A day's comparisons (`memmon fleet daily`): the day's snapshots aggregated, every
    /// comparison made (by default each model's release_baseline against its
    /// release_test), the results stored as a dated page for `memmon serve --daily`, and
    /// a summary of the flagged rows POSTed to a webhook (retried; kept until sent).
    Daily(DailyArgs),
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

/// `memmon fleet daily`'s arguments.
#[derive(Debug, clap::Args)]
struct DailyArgs {
    /// The dataset directory (`memmon export -o DIR`).
    #[arg(value_name = "DIR")]
    dataset: PathBuf,
    /// Where the days' results are kept (give it to `memmon serve --daily`).
    #[arg(long, value_name = "DIR")]
    results: PathBuf,
    /// The day (UTC), YYYY-MM-DD; yesterday by default.
    #[arg(long, value_name = "YYYY-MM-DD")]
    day: Option<String>,
    /// The labels that make clusters.
    #[arg(
        long,
        value_name = "LABEL[,LABEL...]",
        value_delimiter = ',',
        default_value = "model,group"
    )]
    by: Vec<String>,
    /// Compare each cluster with LABEL=BASE with the one with LABEL=NEW.
    #[arg(
        long,
        value_name = "LABEL=BASE:NEW",
        default_value = "group=release_baseline:release_test"
    )]
    diff: String,
    /// Compare cluster BASE with cluster NEW (by name); repeatable.
    #[arg(long, value_name = "BASE:NEW", value_parser = parse_pair)]
    compare: Vec<(String, String)>,
    /// Flag a stack whose change in mean bytes is over this (and outside the noise).
    #[arg(long, value_name = "BYTES", default_value_t = memmon_fleet::compare::DEFAULT_THRESHOLD)]
    diff_threshold: u64,
    /// POST the summary of the flagged rows here (JSON with a `text` field).
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// POSTs per message before it is left for the next run.
    #[arg(long, value_name = "N", default_value_t = 5)]
    attempts: u32,
    /// Seconds before the first retry (doubled for each next one).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    retry_delay: f64,
    /// memmon serve's address, for the summary's links (http://HOST:PORT).
    #[arg(long, value_name = "URL")]
    serve_url: Option<String>,
    /// Where the queries run: local (DataFusion here) or ballista://HOST:PORT.
    #[arg(long, value_name = "ENGINE", default_value = "local")]
    engine: String,
    /// The embedded engine's memory pool in MiB.
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_MEMORY_LIMIT >> 20)]
    memory_limit: usize,
    /// Look up binaries as SYSROOT/path (as `memmon report`).
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
    /// More directories of split debug files.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// Fetch debug files from debuginfod servers (DEBUGINFOD_URLS).
    #[arg(long)]
    debuginfod: bool,
}

/// `memmon fleet daily`.
async fn daily(args: DailyArgs) -> Result<(), String> {
    if !(args.retry_delay >= 0.0 && args.retry_delay.is_finite()) {
        return Err("--retry-delay: give a number of seconds".to_owned());
    }
    let options = DailyOptions {
        run: RunOptions {
            dataset: args.dataset,
            question: Question {
                by: args.by,
                ..Question::default()
            },
            diff: Some(DiffSpec::parse(&args.diff)?),
            compare: args.compare,
            diff_threshold: args.diff_threshold,
            engine: Engine::parse(&args.engine, args.memory_limit << 20, DEFAULT_QUERY_TIMEOUT)?,
            symbols: symbol_options(args.sysroot, args.debug_dirs, args.debuginfod),
            rows: 10,
            min_snapshots: 1,
            reverse: false,
            output: PathBuf::new(),
        },
        day: args
            .day
            .unwrap_or_else(|| memmon_fleet::daily::yesterday(std::time::SystemTime::now())),
        results: args.results,
        webhook: args.webhook,
        attempts: args.attempts,
        retry_delay: std::time::Duration::from_secs_f64(args.retry_delay),
        serve_url: args.serve_url,
    };
    let report = memmon_fleet::daily::daily(&options).await?;
    eprintln!(
        "memmon fleet daily: {}: {} comparisons, {} stacks flagged, in {}",
        options.day,
        report.comparisons,
        report.flagged,
        report.page.display()
    );
    if report.pending.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the results are stored, but {} messages could not be sent (kept for the next run)",
            report.pending.len()
        ))
    }
}

/// `memmon serve`'s arguments.
#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// The dataset directory (`memmon export -o DIR`).
    #[arg(value_name = "DIR")]
    dataset: PathBuf,
    /// Listen on this address (loopback by default: put it behind a reverse proxy with
    /// authentication to share it).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9465")]
    listen: String,
    /// Where the queries run: local (DataFusion here) or ballista://HOST:PORT.
    #[arg(long, value_name = "ENGINE", default_value = "local")]
    engine: String,
    /// The clusters' labels when a page's URL gives none (`by=`).
    #[arg(
        long,
        value_name = "LABEL[,LABEL...]",
        value_delimiter = ',',
        default_value = "model,version,group"
    )]
    by: Vec<String>,
    /// The tiers when a page's URL gives none (`top=`).
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',',
          value_parser = clap::value_parser!(u64).range(1..))]
    top: Vec<u64>,
    /// Look up binaries as SYSROOT/path (as `memmon report`).
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
    /// More directories of split debug files.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// Fetch debug files from debuginfod servers (DEBUGINFOD_URLS).
    #[arg(long)]
    debuginfod: bool,
    /// Each request's queries and symbolisation must end within this many seconds, or
    /// it gets an error page (503).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    query_timeout: f64,
    /// Each request's DataFusion memory pool in MiB (operators spill to disk past it; a
    /// query that cannot gets an error page).
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_MEMORY_LIMIT >> 20)]
    memory_limit: usize,
    /// Rows per table of the report's pages.
    #[arg(long, value_name = "N", default_value_t = 20)]
    rows: usize,
    /// Flag a stack whose change in mean bytes is over this (and outside the noise).
    #[arg(long, value_name = "BYTES", default_value_t = memmon_fleet::compare::DEFAULT_THRESHOLD)]
    diff_threshold: u64,
    /// The daily job's results (`memmon fleet daily --out DIR`), shown under /daily.
    #[arg(long, value_name = "DIR")]
    daily: Option<PathBuf>,
}

fn symbol_options(
    sysroot: Option<PathBuf>,
    debug_dirs: Vec<PathBuf>,
    debuginfod: bool,
) -> SymbolOptions {
    SymbolOptions {
        sysroot,
        debug_dirs,
        debuginfod: if debuginfod {
            DebuginfodOptions::from_env(None)
        } else {
            None
        },
    }
}

/// `memmon serve`.
async fn serve_web(args: ServeArgs) -> Result<(), String> {
    if !(args.query_timeout > 0.0 && args.query_timeout.is_finite()) {
        return Err("--query-timeout: give a number of seconds over 0".to_owned());
    }
    let timeout = std::time::Duration::from_secs_f64(args.query_timeout);
    let mut options = ServeOptions::new(
        args.dataset,
        Engine::parse(&args.engine, args.memory_limit << 20, timeout)?,
    );
    options.by = args.by;
    options.top = args.top;
    options.symbols = symbol_options(args.sysroot, args.debug_dirs, args.debuginfod);
    options.query_timeout = timeout;
    options.rows = args.rows;
    options.diff_threshold = args.diff_threshold;
    options.daily = args.daily;
    // The dataset must be one now (it may change later).
    memmon_fleet::dataset::Dataset::open(&options.dataset)?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let address = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    eprintln!(
        "memmon serve: {} on http://{address}/",
        options.dataset.display()
    );
    memmon_fleet::serve::serve(listener, options).await
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
    match cli.service {
        Some(Service::Serve(args)) => return serve_web(args).await,
        Some(Service::Daily(args)) => return daily(args).await,
        Some(service) => return serve(service).await,
        None => {}
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
        symbols: symbol_options(cli.sysroot, cli.debug_dirs, cli.debuginfod),
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
        Service::Serve(args) => serve_web(args).await,
        Service::Daily(args) => daily(args).await,
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
