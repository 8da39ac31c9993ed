//! `memmon export` (captures and agent snapshots into a parquet dataset) and `memmon
//! fleet` (the fleet's aggregation, in the separate `memmon-fleet` binary: its query
//! engines are a long build that `make run` leaves out).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

/// `memmon export` arguments.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The dataset's format (only parquet).
    #[arg(long, value_name = "FORMAT", default_value = "parquet",
          value_parser = ["parquet"])]
    format: String,
    /// A label of every snapshot exported (repeatable; over the snapshot's own).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = memmon_agent::config::parse_label)]
    labels: Vec<(String, String)>,
    /// Read build IDs that a capture or a heap profile lacks from the binaries under DIR
    /// (as `memmon report`).
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
    /// The dataset directory, created or added to.
    #[arg(short = 'o', long, value_name = "DIR")]
    output: PathBuf,
    /// Captures (`memmon record`), agent snapshots (`*.pb.gz` of its spool) and heap
    /// profiles (jemalloc, gperftools/tcmalloc, Go).
    #[arg(required = true, value_name = "CAPTURE_SNAPSHOT_OR_HEAP_PROFILE")]
    inputs: Vec<PathBuf>,
}

/// `memmon export`: each input's snapshots added to the dataset; a bad input is skipped
/// with a line naming it, and counted.
pub fn export(args: ExportArgs) -> Result<ExitCode> {
    let labels: BTreeMap<String, String> = args.labels.into_iter().collect();
    let mut writer = memmon::export::write::DatasetWriter::create(&args.output)
        .with_context(|| format!("cannot write into {}", args.output.display()))?;
    let mut skipped = 0u64;
    for input in &args.inputs {
        match memmon::export::read_input(input, &labels, args.sysroot.as_deref()) {
            Ok(snapshots) => {
                for snapshot in &snapshots {
                    writer
                        .add(snapshot)
                        .with_context(|| format!("cannot write into {}", args.output.display()))?;
                }
            }
            Err(bad) => {
                eprintln!("memmon: skipped {bad}");
                skipped += 1;
            }
        }
    }
    let (written, duplicates) = (writer.written, writer.duplicates);
    writer
        .finish()
        .with_context(|| format!("cannot write into {}", args.output.display()))?;
    if duplicates > 0 {
        eprintln!(
            "memmon: {duplicates} snapshots already in {}, not added again",
            args.output.display()
        );
    }
    eprintln!(
        "memmon: exported {written} snapshots from {} inputs into {} ({skipped} skipped)",
        args.inputs.len() as u64 - skipped,
        args.output.display()
    );
    if written == 0 && duplicates == 0 {
        bail!("no snapshot exported ({skipped} inputs skipped)");
    }
    Ok(if skipped > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// The `memmon-fleet` binary: beside this executable, else in PATH.
fn fleet_binary() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("memmon-fleet")))
        .filter(|path| path.is_file());
    beside.or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("memmon-fleet"))
                .find(|path| path.is_file())
        })
    })
}

/// `memmon fleet ARGS...`: runs `memmon-fleet ARGS...`.
pub fn fleet(args: &[std::ffi::OsString]) -> Result<ExitCode> {
    run_fleet("fleet", args)
}

/// `memmon serve ARGS...`: runs `memmon-fleet serve ARGS...`.
pub fn serve(args: Vec<std::ffi::OsString>) -> Result<ExitCode> {
    let mut all = vec![std::ffi::OsString::from("serve")];
    all.extend(args);
    run_fleet("serve", &all)
}

/// `memmon COMMAND` through the memmon-fleet binary.
fn run_fleet(command: &str, args: &[std::ffi::OsString]) -> Result<ExitCode> {
    let Some(binary) = fleet_binary() else {
        bail!(
            "memmon {command} needs the memmon-fleet binary, which is not built (its query \
             engines are a long build): run `make fleet`, or `cargo build --release -p \
             memmon-fleet` in userspace/, and put target/release/memmon-fleet beside memmon or \
             in PATH"
        );
    };
    exec(&binary, args)
}

fn exec(binary: &Path, args: &[std::ffi::OsString]) -> Result<ExitCode> {
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(binary).args(args).exec();
    bail!("cannot run {}: {error}", binary.display())
}
