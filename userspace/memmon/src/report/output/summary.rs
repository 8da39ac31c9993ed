//! The one-screen summary `memmon run` and `memmon record` print at the end. It leads with
//! the program's own code, as `memmon report` does ("Your code": resident bytes by function
//! of the program), then faults by type, resident growth at the peak (and at the end), the
//! top 5 sites at the peak symbolised (system code included).

use std::fmt::Write;

use crate::report::model::replay::Analysis;
use crate::report::output::moment::other_moments;
use crate::report::output::text::size;
use crate::report::symbolize::symbols::{SymbolOptions, Symbols};
use crate::report::view::memory::{build, shown_sites, View, ViewOptions};

/// Functions of own code listed, and sites.
const TOP: usize = 5;

/// The summary text (several lines, each starting with `memmon: `).
pub fn summary(analysis: &Analysis) -> String {
    let symbols = Symbols::new(&analysis.sites, &SymbolOptions::default());
    // The programs it ran are own code, as `memmon report` counts them (cc1plus under g++).
    let mut options = ViewOptions::default();
    options.own_code.add_executables(&analysis.executables);
    let Ok(view) = build(analysis, &symbols, &options) else {
        return String::new();
    };
    let mut out = String::new();
    write_your_code(&mut out, &view);
    let mut faults = [0u64; 5];
    for row in &view.sites {
        faults[0] += row.faults.first_touch;
        faults[1] += row.faults.file;
        faults[2] += row.faults.swap_in;
        faults[3] += row.faults.cow;
        faults[4] += row.faults.other;
    }
    let total: u64 = faults.iter().sum();
    let _ = writeln!(
        out,
        "memmon: summary: {} events, {total} faults (first-touch {}, file {}, swap-in {}, copy-on-write {}, other {})",
        view.events, faults[0], faults[1], faults[2], faults[3], faults[4]
    );
    if let Some(loss) = view.loss.sentence() {
        let _ = writeln!(out, "memmon: incomplete: {loss}");
    }
    let totals = view.totals;
    let others: String = other_moments(&view.shown, false)
        .iter()
        .map(|other| format!("; {other}"))
        .collect();
    // A process watched while it ran (record -p): what it held then is counted too.
    let (what, before) = match view.your_code.before_start {
        0 => ("resident growth while watched", String::new()),
        bytes => (
            "resident",
            format!(", {} of it resident before memmon started", size(bytes)),
        ),
    };
    let _ = writeln!(
        out,
        "memmon: {what}, at {}: {} (anon {}, file {}, shmem {}){before}, {} swapped out{others}",
        view.shown.moment_label,
        size(totals.resident()),
        size(totals.anon),
        size(totals.file),
        size(totals.shmem),
        size(totals.swap)
    );
    let rows: Vec<_> = shown_sites(&view.sites, &view.runtime_work)
        .into_iter()
        .filter(|r| r.resident > 0)
        .take(TOP)
        .collect();
    if !rows.is_empty() {
        let _ = writeln!(
            out,
            "memmon: top sites by resident bytes at {}:",
            view.shown.moment_label
        );
    }
    for row in rows {
        let location = row
            .location()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "memmon: {:>10}  {}{location}",
            size(row.resident),
            row.chain(3)
        );
    }
    let access = &analysis.access;
    if !access.is_empty() {
        let generations: std::collections::BTreeSet<u64> =
            access.generations.iter().map(|g| g.n).collect();
        let _ = writeln!(
            out,
            "memmon: access sampling: {} generations, {} page accesses sampled (memmon report --access)",
            generations.len(),
            access.touches.len()
        );
    }
    for check in &view.reconciliation {
        for warning in &check.warnings {
            let _ = writeln!(out, "memmon: warning: {warning}");
        }
    }
    out
}

/// The "Your code" lines: the functions of the program's own code by the resident bytes
/// they brought in (themselves or through the library code they called), with that library
/// part; nothing when no own code holds memory.
fn write_your_code(out: &mut String, view: &View) {
    let code = &view.your_code;
    if code.functions.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "memmon: your code, resident bytes by function at {} (memmon report for more):",
        view.shown.moment_label
    );
    // Rows by resident bytes; one that only calls others (inclusive bytes alone) is not
    // listed here.
    let rows: Vec<_> = code
        .functions
        .iter()
        .filter(|row| row.resident > 0)
        .collect();
    for row in rows.iter().take(TOP) {
        let name = match &row.library {
            Some(library) => format!("{} → {library}", row.name()),
            None => row.name(),
        };
        let _ = writeln!(out, "memmon: {:>10}  {name}", size(row.resident));
    }
    let more = rows.len().saturating_sub(TOP);
    if more > 0 {
        let _ = writeln!(out, "memmon:             ({more} more functions)");
    }
    for work in &code.runtime_work {
        let _ = writeln!(out, "memmon: {:>10}  {}", size(work.resident), work.label);
    }
    if code.outside > 0 {
        let _ = writeln!(
            out,
            "memmon: {:>10}  with no function of the program on its stack (start-up, the runtime's and the libraries' own)",
            size(code.outside)
        );
    }
    if code.before_start > 0 {
        let _ = writeln!(
            out,
            "memmon: {:>10}  resident before memmon started (by code it cannot name)",
            size(code.before_start)
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::report::ReplayOptions;

    /// /usr/bin/app brought in 3 pages itself (main) and 2 through libc's malloc; the
    /// fixture's binaries are not on this machine, so functions are object+offset.
    const CAPTURE: &str = "\
# memmon-capture 1
# command /usr/bin/app
# snapshot maps 100 1.000000000 exec
#| 00400000-00401000 r-xp 00000000 08:01 5    /usr/bin/app
#| 7f1000000000-7f1000100000 r-xp 00000000 08:01 6    /usr/lib/x86_64-linux-gnu/libc.so.6
#| 7f0000000000-7f0000100000 rw-p 00000000 00:00 0
2.000000000 100/100 fault type=anon access=W addr=0x7f0000000000 ip=0x400100 stack=0x400100,0x400200
2.000000001 100/100 fault type=anon access=W addr=0x7f0000001000 ip=0x400100 stack=0x400100,0x400200
2.000000002 100/100 fault type=anon access=W addr=0x7f0000002000 ip=0x400100 stack=0x400100,0x400200
2.000000003 100/100 fault type=anon access=W addr=0x7f0000003000 ip=0x7f1000000100 stack=0x7f1000000100,0x400300,0x400200
2.000000004 100/100 fault type=anon access=W addr=0x7f0000004000 ip=0x7f1000000100 stack=0x7f1000000100,0x400300,0x400200
";

    #[test]
    fn summary_leads_with_your_code() {
        let dir = std::env::temp_dir().join(format!("memmon-summary-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cap.txt");
        std::fs::write(&path, CAPTURE).unwrap();
        let analysis = crate::report::analyze(&[path], ReplayOptions::default()).unwrap();
        let text = super::summary(&analysis);
        let _ = std::fs::remove_dir_all(&dir);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("memmon: your code, resident bytes by function at "),
            "{text}"
        );
        let summary = lines
            .iter()
            .position(|l| l.starts_with("memmon: summary: 5 events, 5 faults (first-touch 5,"))
            .expect(&text);
        // Two functions of /usr/bin/app: 12 KiB and 8 KiB (the latter through libc).
        assert_eq!(
            lines[..summary],
            [
                "memmon: your code, resident bytes by function at the peak, 0 ms (memmon report for more):",
                "memmon:     12 KiB  app+0x100",
                "memmon:      8 KiB  app+0x300 → [libc.so.6+0x100]",
            ],
            "{text}"
        );
        // The sites, system code included, after.
        assert_eq!(
            lines[summary + 2..],
            [
                "memmon: top sites by resident bytes at the peak, 0 ms:",
                "memmon:     12 KiB  app+0x100 < app+0x200",
                "memmon:      8 KiB  libc.so.6+0x100 < app+0x300 < app+0x200",
            ],
            "{text}"
        );
    }
}
