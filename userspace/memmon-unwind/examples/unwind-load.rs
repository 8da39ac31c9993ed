//! unwind-load PID...: loads the unwind tables of each process into /proc/memmon/unwind
//! once, as `memmon unwind` does; prints what it gave the module.
use memmon_unwind::loader::{Loader, UnwindFile};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let file = match UnwindFile::open(Path::new("/proc/memmon/unwind")) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("unwind-load: /proc/memmon/unwind: {e}");
            return ExitCode::from(2);
        }
    };
    let mut loader = Loader::new(file);
    let mut status = ExitCode::SUCCESS;
    for pid in std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<u32>().ok())
    {
        match loader.sync_process(pid) {
            Ok(report) => {
                println!(
                    "{pid}: {} ranges, {} tables added",
                    report.ranges,
                    report.added.len()
                );
                for warning in report.warnings {
                    eprintln!("{pid}: {warning}");
                }
            }
            Err(e) => {
                eprintln!("unwind-load: {pid}: {e}");
                status = ExitCode::from(1);
            }
        }
    }
    status
}
