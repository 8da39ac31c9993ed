//! The one-screen summary `memmon run` and `memmon record` print at the end: faults by
//! type, resident growth at the peak (and at the end), the top 5 sites at the peak
//! symbolised.

use std::fmt::Write;

use crate::report::model::replay::Analysis;
use crate::report::output::moment::other_moments;
use crate::report::output::text::size;
use crate::report::symbolize::symbols::{SymbolOptions, Symbols};
use crate::report::view::memory::{build, shown_sites, ViewOptions};

/// Sites listed.
const TOP: usize = 5;

/// The summary text (several lines, each starting with `memmon: `).
pub fn summary(analysis: &Analysis) -> String {
    let symbols = Symbols::new(&analysis.sites, &SymbolOptions::default());
    let Ok(view) = build(analysis, &symbols, &ViewOptions::default()) else {
        return String::new();
    };
    let mut faults = [0u64; 5];
    for row in &view.sites {
        faults[0] += row.faults.first_touch;
        faults[1] += row.faults.file;
        faults[2] += row.faults.swap_in;
        faults[3] += row.faults.cow;
        faults[4] += row.faults.other;
    }
    let mut out = String::new();
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
    let _ = writeln!(
        out,
        "memmon: resident growth while watched, at {}: {} (anon {}, file {}, shmem {}), {} swapped out{others}",
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
