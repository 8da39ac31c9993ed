//! The compiled tables of real Debian objects against binutils' own reading of their CFI:
//! `readelf --debug-dump=frames-interp`. For every FDE of `.eh_frame` that no other FDE
//! overlaps, every row readelf prints (at its first and its last address) must be the row
//! of the compiled table, with the rule, CFA offset and RBP slot that docs/unwind.md gives
//! readelf's CFA, RA and RBP columns.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use memmon_unwind::{compile, Rule};

/// What readelf says of one row.
#[derive(Clone, Debug)]
struct ReadelfRow {
    loc: u64,
    cfa: String,
    columns: HashMap<String, String>,
}

#[derive(Clone, Debug)]
struct ReadelfFde {
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

/// The row docs/unwind.md gives readelf's columns: (rule, cfa, rbp).
fn expected(fde: &ReadelfFde, row: &ReadelfRow) -> (Rule, u16, i8) {
    const NOT: (Rule, u16, i8) = (Rule::NotFollowable, 0, 0);
    if fde.signal {
        return NOT;
    }
    match row.columns.get("ra").map(String::as_str) {
        Some("u") => return (Rule::Outermost, 0, 0),
        Some("c-8") => {}
        _ => return NOT,
    }
    let (rule, offset) = if let Some(n) = row.cfa.strip_prefix("rsp+") {
        (Rule::Rsp, n)
    } else if let Some(n) = row.cfa.strip_prefix("rbp+") {
        (Rule::Rbp, n)
    } else {
        return NOT;
    };
    let least = if rule == Rule::Rsp { 8 } else { 16 };
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
    (rule, cfa, rbp)
}

/// Compares every row of every FDE; returns how many were compared.
fn check_object(path: &str) -> Option<usize> {
    let path = Path::new(path);
    let data = std::fs::read(path).ok()?;
    let table = compile(&data).expect("compiles");
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
            let want = expected(fde, row);
            for address in [row.loc, row_end - 1] {
                let got = table.lookup(address).expect("a row for every FDE address");
                compared += 1;
                if (got.rule, got.cfa, got.rbp) != want {
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
        (row.rule == Rule::Rsp).then(|| section.address() + section.size())
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
