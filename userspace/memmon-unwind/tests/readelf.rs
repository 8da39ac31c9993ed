//! The compiled tables of real Debian objects against binutils' own reading of their CFI:
//! `readelf --debug-dump=frames-interp`. For every FDE of `.eh_frame` that no other FDE
//! overlaps, every row readelf prints (at its first and its last address) must be the row
//! of the compiled table, with the rule, CFA offset, slot and flags that docs/unwind.md
//! gives readelf's CFA, RA and RBP (x86_64) or X29 (arm64) columns. On arm64, whether the
//! return address is signed at an address comes from readelf's raw listing of the FDE's
//! instructions (`--debug-dump=frames`): each `DW_CFA_AARCH64_negate_ra_state` toggles it,
//! `DW_CFA_remember_state` and `DW_CFA_restore_state` save and restore it; and whether X30
//! is undefined there (`DW_CFA_undefined: r30`, the outermost frame), which readelf's table
//! prints as `u`, as it prints a register without a rule (still in X30).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use memmon_unwind::arch::aarch64::{FLAG_FP_BELOW_RA, FLAG_RA_SIGNED};
use memmon_unwind::{compile, Arch, Rule};

/// What readelf says of one row.
#[derive(Clone, Debug)]
struct ReadelfRow {
    loc: u64,
    cfa: String,
    columns: HashMap<String, String>,
}

#[derive(Clone, Debug)]
struct ReadelfFde {
    /// Its offset in the section, as readelf prints it.
    offset: String,
    start: u64,
    end: u64,
    signal: bool,
    rows: Vec<ReadelfRow>,
}

/// The FDEs of `.eh_frame` as readelf prints them, with the CIE's rows for those that
/// have none of their own.
fn readelf_fdes(path: &Path) -> Vec<ReadelfFde> {
    let out = Command::new("readelf")
        .arg("--debug-dump=frames-interp")
        .arg(path)
        .output()
        .expect("readelf (binutils) runs");
    // readelf exits 1, saying nothing, on objects with a .gnu_debuglink it cannot follow:
    // its output is whole all the same.
    assert!(
        !out.stdout.is_empty(),
        "readelf printed nothing for {}",
        path.display()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut cies: HashMap<String, (bool, Vec<ReadelfRow>)> = HashMap::new();
    let mut fdes = Vec::new();
    // What the current entry is: a CIE (its offset) or an FDE (its index).
    enum Current {
        None,
        Cie(String),
        Fde(usize),
    }
    let mut current = Current::None;
    let mut header: Vec<String> = Vec::new();
    let mut in_eh_frame = false;
    for line in text.lines() {
        if line.starts_with("Contents of the ") {
            in_eh_frame = line.starts_with("Contents of the .eh_frame section");
            current = Current::None;
            continue;
        }
        if !in_eh_frame {
            continue;
        }
        // A register rule reads `r5 (rdi)`: one column.
        let line = line.replace(" (", "(");
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() >= 5 && words[3] == "CIE" {
            let signal = words[4].trim_matches('"').contains('S');
            cies.insert(words[0].to_string(), (signal, Vec::new()));
            current = Current::Cie(words[0].to_string());
            header.clear();
        } else if words.len() >= 6 && words[3] == "FDE" {
            let cie = words[4].trim_start_matches("cie=").to_string();
            let (start, end) = words[5]
                .trim_start_matches("pc=")
                .split_once("..")
                .expect("pc=START..END");
            let (signal, cie_rows) = cies.get(&cie).cloned().unwrap_or((false, Vec::new()));
            let start = u64::from_str_radix(start, 16).expect("hex");
            let end = u64::from_str_radix(end, 16).expect("hex");
            // Until it prints its own, the FDE has the CIE's last row.
            let rows = cie_rows
                .last()
                .map(|r| ReadelfRow {
                    loc: start,
                    ..r.clone()
                })
                .into_iter()
                .collect();
            fdes.push(ReadelfFde {
                offset: words[0].to_string(),
                start,
                end,
                signal,
                rows,
            });
            current = Current::Fde(fdes.len() - 1);
            header.clear();
        } else if words.first() == Some(&"LOC") {
            header = words.iter().map(|w| w.to_string()).collect();
        } else if !header.is_empty() && words.len() == header.len() {
            let row = ReadelfRow {
                loc: u64::from_str_radix(words[0], 16).expect("hex LOC"),
                cfa: words[1].to_string(),
                columns: header[2..]
                    .iter()
                    .cloned()
                    .zip(words[2..].iter().map(|w| w.to_string()))
                    .collect(),
            };
            match &current {
                Current::Cie(offset) => {
                    if let Some(cie) = cies.get_mut(offset) {
                        cie.1.push(row);
                    }
                }
                Current::Fde(i) => {
                    let fde = &mut fdes[*i];
                    // The FDE's own rows replace the CIE's copied one.
                    if fde.rows.len() == 1 && fde.rows[0].loc == fde.start && row.loc == fde.start {
                        fde.rows.clear();
                    }
                    fde.rows.push(row);
                }
                Current::None => {}
            }
        }
    }
    fdes
}

/// What a row is: (rule, cfa, slot, flags).
type Expected = (Rule, u16, i8, u8);

/// The state of an arm64 return address that readelf's table does not show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RaState {
    signed: bool,
    undefined: bool,
}

/// The addresses of each FDE (by offset) from which its return address has a state, from
/// readelf's raw listing of the call frame instructions of `.eh_frame`.
fn ra_states(path: &Path) -> HashMap<String, Vec<(u64, RaState)>> {
    let out = Command::new("readelf")
        .arg("--debug-dump=frames")
        .arg(path)
        .output()
        .expect("readelf (binutils) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut states: HashMap<String, Vec<(u64, RaState)>> = HashMap::new();
    let mut cie_state: HashMap<String, RaState> = HashMap::new();
    let mut in_eh_frame = false;
    // The entry being read: its offset, whether it is an FDE, where it is, its state and
    // the remembered ones.
    let mut offset = String::new();
    let mut fde = false;
    let mut loc = 0u64;
    let mut state = RaState::default();
    let mut stack: Vec<RaState> = Vec::new();
    for line in text.lines() {
        if line.starts_with("Contents of the ") {
            in_eh_frame = line.starts_with("Contents of the .eh_frame section");
            continue;
        }
        if !in_eh_frame {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() >= 4 && words[3] == "CIE" {
            offset = words[0].to_string();
            fde = false;
            state = RaState::default();
            stack.clear();
        } else if words.len() >= 6 && words[3] == "FDE" {
            offset = words[0].to_string();
            fde = true;
            let cie = words[4].trim_start_matches("cie=");
            state = cie_state.get(cie).copied().unwrap_or_default();
            stack.clear();
            let start = words[5]
                .trim_start_matches("pc=")
                .split_once("..")
                .expect("pc=")
                .0;
            loc = u64::from_str_radix(start, 16).expect("hex");
            states.insert(offset.clone(), vec![(loc, state)]);
        } else if let Some(first) = words.first() {
            let to = words.iter().position(|w| *w == "to");
            if first.starts_with("DW_CFA_advance_loc") || first.starts_with("DW_CFA_set_loc") {
                let at = to
                    .map_or(words.last(), |i| words.get(i + 1))
                    .expect("an address");
                loc = u64::from_str_radix(at, 16).expect("hex loc");
                continue;
            }
            let x30 = words.get(1) == Some(&"r30");
            match *first {
                "DW_CFA_AARCH64_negate_ra_state" => state.signed = !state.signed,
                "DW_CFA_remember_state" => stack.push(state),
                "DW_CFA_restore_state" => state = stack.pop().unwrap_or(state),
                "DW_CFA_undefined:" if x30 => state.undefined = true,
                _ if x30 => state.undefined = false,
                _ => continue,
            }
            if fde {
                states.get_mut(&offset).expect("the FDE").push((loc, state));
            } else {
                cie_state.insert(offset.clone(), state);
            }
        }
    }
    states
}

/// The row docs/unwind.md gives readelf's columns on x86_64.
fn expected_x86_64(row: &ReadelfRow) -> Expected {
    const NOT: Expected = (Rule::NotFollowable, 0, 0, 0);
    match row.columns.get("ra").map(String::as_str) {
        Some("u") => return (Rule::Outermost, 0, 0, 0),
        Some("c-8") => {}
        _ => return NOT,
    }
    let (rule, offset) = if let Some(n) = row.cfa.strip_prefix("rsp+") {
        (Rule::Sp, n)
    } else if let Some(n) = row.cfa.strip_prefix("rbp+") {
        (Rule::Fp, n)
    } else {
        return NOT;
    };
    let least = if rule == Rule::Sp { 8 } else { 16 };
    let Some(cfa) = offset.parse::<u16>().ok().filter(|&c| c >= least) else {
        return NOT;
    };
    let rbp = match row.columns.get("rbp").map(String::as_str) {
        None | Some("u") | Some("s") => 0,
        Some(saved) => match saved
            .strip_prefix("c-")
            .and_then(|n| n.parse::<i64>().ok())
            .filter(|n| n % 8 == 0 && (16..=1024).contains(n))
        {
            Some(n) => (-n / 8) as i8,
            None => return NOT,
        },
    };
    (rule, cfa, rbp, 0)
}

/// The row docs/unwind.md gives readelf's columns on arm64, with the return address's state.
fn expected_aarch64(row: &ReadelfRow, ra: RaState) -> Expected {
    const NOT: Expected = (Rule::NotFollowable, 0, 0, 0);
    if ra.undefined {
        return (Rule::Outermost, 0, 0, 0);
    }
    // readelf leaves out the column of a register no row of the FDE has a rule for: it is
    // `u`, as in a row that has none.
    let column = |name: &str| row.columns.get(name).map_or("u", String::as_str);
    // The return address column is "ra" (x30): `u` is "no rule" there (still in X30), or
    // undefined (above).
    let slot = match column("ra") {
        "u" | "s" => 0,
        saved => match saved
            .strip_prefix("c-")
            .and_then(|n| n.parse::<i64>().ok())
            .filter(|n| n % 8 == 0 && (8..=1016).contains(n))
        {
            Some(n) => (-n / 8) as i8,
            None => return NOT,
        },
    };
    let (rule, offset) = if let Some(n) = row.cfa.strip_prefix("sp+") {
        (Rule::Sp, n)
    } else if let Some(n) = row.cfa.strip_prefix("x29+") {
        (Rule::Fp, n)
    } else {
        return NOT;
    };
    let least = if rule == Rule::Sp { 0 } else { 16 };
    let Some(cfa) = offset.parse::<u16>().ok().filter(|&c| c >= least) else {
        return NOT;
    };
    let mut flags = match column("x29") {
        "u" | "s" => 0,
        saved if slot != 0 && saved == format!("c-{}", -8 * (i64::from(slot) - 1)) => {
            FLAG_FP_BELOW_RA
        }
        _ => return NOT,
    };
    if ra.signed {
        flags |= FLAG_RA_SIGNED;
    }
    (rule, cfa, slot, flags)
}

/// The row docs/unwind.md gives readelf's columns.
fn expected(arch: Arch, fde: &ReadelfFde, row: &ReadelfRow, ra: RaState) -> Expected {
    if fde.signal {
        return (Rule::NotFollowable, 0, 0, 0);
    }
    match arch {
        Arch::X86_64 => expected_x86_64(row),
        Arch::Aarch64 => expected_aarch64(row, ra),
    }
}

/// Compares every row of every FDE; returns how many were compared.
fn check_object(path: &str) -> Option<usize> {
    let path = Path::new(path);
    let data = std::fs::read(path).ok()?;
    let table = compile(&data).expect("compiles");
    let states = match table.arch {
        Arch::X86_64 => HashMap::new(),
        Arch::Aarch64 => ra_states(path),
    };
    let mut fdes = readelf_fdes(path);
    assert!(!fdes.is_empty(), "readelf found FDEs");
    fdes.sort_by_key(|f| f.start);
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for (i, fde) in fdes.iter().enumerate() {
        let overlaps = (i > 0 && fdes[i - 1].end > fde.start)
            || fdes.get(i + 1).is_some_and(|next| next.start < fde.end);
        if overlaps || fde.start >= fde.end {
            continue;
        }
        for (j, row) in fde.rows.iter().enumerate() {
            let row_end = fde
                .rows
                .get(j + 1)
                .map_or(fde.end, |next| next.loc)
                .min(fde.end);
            if row.loc >= row_end {
                continue;
            }
            for address in [row.loc, row_end - 1] {
                // The return address's state at the address: the last change at or before it.
                let ra = states
                    .get(&fde.offset)
                    .and_then(|changes| changes.iter().rev().find(|(at, _)| *at <= address))
                    .map_or(RaState::default(), |&(_, state)| state);
                let want = expected(table.arch, fde, row, ra);
                let got = table.lookup(address).expect("a row for every FDE address");
                compared += 1;
                if (got.rule, got.cfa, got.slot, got.flags) != want {
                    mismatches.push(format!(
                        "{address:#x} (FDE {:#x}..{:#x}, readelf cfa={} cols={:?}): got {got:?}, want {want:?}",
                        fde.start, fde.end, row.cfa, row.columns
                    ));
                }
            }
        }
        // Just past the FDE: the next FDE's row, or the rule 3 of a gap or the end.
        if fdes.get(i + 1).is_none_or(|next| next.start > fde.end) {
            let got = table.lookup(fde.end).expect("a row past the FDE");
            assert_eq!(
                got.rule,
                Rule::NoInfo,
                "past the FDE ending at {:#x}",
                fde.end
            );
        }
    }
    assert!(
        mismatches.is_empty(),
        "{}: {} of {compared} rows differ from readelf:\n{}",
        path.display(),
        mismatches.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
    let last = table.rows.last().expect("rows");
    assert_eq!(last.rule, Rule::NoInfo);
    // The table ends with the last FDE, or with `.init` or `.fini` where their shape gave
    // them rows (compile.rs: they have no FDE).
    let synthesized_ends = [".init", ".fini"].map(|name| {
        use object::{Object, ObjectSection};
        let file = object::File::parse(&*data).expect("ELF");
        let section = file.section_by_name(name)?;
        let row = table.lookup(section.address())?;
        (row.rule == Rule::Sp).then(|| section.address() + section.size())
    });
    assert_eq!(
        u64::from(last.pc),
        fdes.iter()
            .map(|f| f.end)
            .chain(synthesized_ends.into_iter().flatten())
            .max()
            .unwrap_or(0)
    );
    eprintln!("{}: {compared} rows agree with readelf", path.display());
    Some(compared)
}

/// How many rows of `path`'s table have each arm64 flag: (X29 below the return address,
/// signed).
fn arm64_flag_counts(path: &str) -> (usize, usize) {
    let table = compile(&std::fs::read(path).expect("readable")).expect("compiles");
    assert_eq!(table.arch, Arch::Aarch64);
    let count = |flag| table.rows.iter().filter(|r| r.flags & flag != 0).count();
    (count(FLAG_FP_BELOW_RA), count(FLAG_RA_SIGNED))
}

/// Debian bookworm's arm64 glibc (libc6-arm64-cross, which make deps installs for the arm64
/// guest's programs): built without branch protection, so no row is signed.
#[test]
fn arm64_libc_agrees_with_readelf() {
    let path = "/usr/aarch64-linux-gnu/lib/libc.so.6";
    let compared = check_object(path).expect(
        "/usr/aarch64-linux-gnu/lib/libc.so.6 present (make deps installs libc6-dev-arm64-cross)",
    );
    assert!(compared > 10_000, "only {compared} rows compared");
    let (below, signed) = arm64_flag_counts(path);
    assert!(
        below > 1_000,
        "only {below} rows save X29 below the return address"
    );
    assert_eq!(
        signed, 0,
        "bookworm's libc is not built with branch protection"
    );
}

#[test]
fn arm64_loader_agrees_with_readelf() {
    let compared = check_object("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1")
        .expect("ld-linux-aarch64.so.1 present (make deps installs libc6-dev-arm64-cross)");
    assert!(compared > 0, "no rows compared");
}

/// Debian trixie's arm64 glibc, built with `-mbranch-protection=standard` (5 587
/// `DW_CFA_AARCH64_negate_ra_state` in its `.eh_frame`): in the build root of Debian's arm64
/// kernel (`scripts/stock/prepare 7.3.4+deb13-arm64`), which make deps does not make, so
/// not run by default: `cargo test --test readelf -- --ignored`.
#[test]
#[ignore = "needs build/stock's arm64 root (scripts/stock/prepare 7.3.4+deb13-arm64)"]
fn arm64_signed_libc_agrees_with_readelf() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../build/stock/roots/trixie-gcc14-rustc1.85.1-arm64/usr/aarch64-linux-gnu/lib/libc.so.6"
    );
    let compared = check_object(path).expect("trixie's arm64 libc.so.6 in build/stock's root");
    assert!(compared > 10_000, "only {compared} rows compared");
    let (below, signed) = arm64_flag_counts(path);
    assert!(
        below > 1_000,
        "only {below} rows save X29 below the return address"
    );
    assert!(signed > 1_000, "only {signed} rows signed");
}

#[test]
fn libc_agrees_with_readelf() {
    let compared = check_object("/lib/x86_64-linux-gnu/libc.so.6").expect("libc.so.6 present");
    assert!(compared > 10_000, "only {compared} rows compared");
}

#[test]
fn libz_agrees_with_readelf() {
    // Installed by make deps: an absent input fails the test rather than passing it.
    let compared = check_object("/lib/x86_64-linux-gnu/libz.so.1")
        .expect("/lib/x86_64-linux-gnu/libz.so.1 present (make deps installs zlib1g)");
    assert!(compared > 0, "no rows compared");
}

#[test]
fn libsqlite3_agrees_with_readelf() {
    // Installed by make deps: an absent input fails the test rather than passing it.
    let compared = check_object("/lib/x86_64-linux-gnu/libsqlite3.so.0")
        .expect("/lib/x86_64-linux-gnu/libsqlite3.so.0 present (make deps installs libsqlite3-0)");
    assert!(compared > 0, "no rows compared");
}

#[test]
fn python_agrees_with_readelf() {
    // Installed by make deps: an absent input fails the test rather than passing it.
    let compared = check_object("/usr/bin/python3.11")
        .expect("/usr/bin/python3.11 present (make deps installs python3.11)");
    assert!(compared > 0, "no rows compared");
}

#[test]
fn dynamic_loader_agrees_with_readelf() {
    // Installed by make deps: an absent input fails the test rather than passing it.
    let compared = check_object("/lib64/ld-linux-x86-64.so.2")
        .expect("/lib64/ld-linux-x86-64.so.2 present (make deps installs libc6)");
    assert!(compared > 0, "no rows compared");
}
