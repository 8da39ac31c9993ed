//! unwind-fuzz WATCHED UNWATCHED COUNT SEED: writes COUNT invalid commands (the crate's fuzz
//! cases for a module where WATCHED is watched and UNWATCHED is not) to
//! /proc/memmon/unwind, each in one write(), after the one valid ADD_TABLE they are made
//! against; each must be refused with its errno, and the file must read the same before and
//! after. Prints `cases=N refused=N wrong=N unchanged=yes|no`; exits 1 on any difference.
//! With a fifth argument `python`, the cases are `SET_PYTHON` writes only (descriptions of
//! an interpreter with a field wrong). Used by the VM scenario tests/vm/38-unwind-fuzz.sh.
use memmon_unwind::fuzz::{generate, generate_python, FuzzContext};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::process::ExitCode;

const FILE: &str = "/proc/memmon/unwind";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let python = args.last().is_some_and(|last| last == "python");
    if python {
        args.pop();
    }
    let args: Vec<u64> = args.iter().map(|a| a.parse().unwrap_or(0)).collect();
    let [watched, unwatched, count, seed] = args[..] else {
        eprintln!("usage: unwind-fuzz WATCHED UNWATCHED COUNT SEED [python]");
        return ExitCode::from(2);
    };
    let context = FuzzContext::new(watched as u32, unwatched as u32);
    let mut file = match OpenOptions::new().write(true).open(FILE) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("unwind-fuzz: {FILE}: {e}");
            return ExitCode::from(2);
        }
    };
    for write in context.setup_writes() {
        if let Err(e) = file.write(&write) {
            eprintln!("unwind-fuzz: the setup write was refused: {e}");
            return ExitCode::from(1);
        }
    }
    let before = fs::read_to_string(FILE).unwrap_or_default();
    let cases = if python {
        generate_python(seed, count as usize, &context)
    } else {
        generate(seed, count as usize, &context)
    };
    let (mut refused, mut wrong) = (0, 0);
    for (i, case) in cases.iter().enumerate() {
        match file.write(&case.bytes) {
            Err(e) if e.raw_os_error() == Some(case.errno()) => refused += 1,
            other => {
                wrong += 1;
                if wrong <= 10 {
                    eprintln!(
                        "case {i} ({}): want errno {}, got {:?}",
                        case.mutation,
                        case.errno(),
                        other.map_err(|e| e.raw_os_error())
                    );
                }
            }
        }
    }
    let after = fs::read_to_string(FILE).unwrap_or_default();
    let unchanged = before == after;
    println!(
        "cases={} refused={refused} wrong={wrong} unchanged={}",
        cases.len(),
        if unchanged { "yes" } else { "no" }
    );
    if !unchanged {
        eprintln!("before:\n{before}after:\n{after}");
    }
    if wrong == 0 && unchanged {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
