//! Prints, for each ELF object named on the command line, the size of its compiled unwind
//! table: rows, bytes (8 a row in the format; as the module counts them, with its index and
//! a fixed cost per table), and the fraction of rows of each rule.
//!
//! ```text
//! cargo run -p memmon-unwind --example table-size -- /lib/x86_64-linux-gnu/libc.so.6
//! ```

use std::process::ExitCode;

use memmon_unwind::protocol::table_bytes;
use memmon_unwind::{compile, Rule};

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: table-size ELF...");
        return ExitCode::from(2);
    }
    let mut failed = false;
    for path in &paths {
        let data = match std::fs::read(path) {
            Ok(data) => data,
            Err(error) => {
                eprintln!("{path}: {error}");
                failed = true;
                continue;
            }
        };
        let table = match compile(&data) {
            Ok(table) => table,
            Err(error) => {
                eprintln!("{path}: {error}");
                failed = true;
                continue;
            }
        };
        let counts = table.rule_counts();
        let rows = table.len().max(1) as f64;
        let fractions: Vec<String> = Rule::ALL
            .iter()
            .map(|&rule| {
                format!(
                    "rule{}={} ({:.2}%)",
                    rule as u8,
                    counts[rule as usize],
                    100.0 * counts[rule as usize] as f64 / rows
                )
            })
            .collect();
        let s = &table.stats;
        println!(
            "{path}: rows={} bytes={} (module: {}) fdes={}+{} skipped={} hdr={} {}",
            table.len(),
            table.bytes(),
            table_bytes(&table.rows),
            s.eh_frame_fdes,
            s.debug_frame_fdes,
            s.fdes_skipped,
            s.used_eh_frame_hdr,
            fractions.join(" ")
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
