//! `--format text`: the RSS tree, the top sites by resident bytes, faults and mapped
//! bytes, swap-ins, the reconciliation and (with `--timeline`) the timeline.

use std::borrow::Cow;
use std::fmt::{Result, Write};

use crate::report::model::class::PageKind;
use crate::report::model::picture::saturating_sum;
use crate::report::model::replay::STACK_ENDS;
use crate::report::output::moment::other_moments;
use crate::report::output::text::your_code::write_your_code;
use crate::report::output::text::{signed_size, size, Table};
use crate::report::view::memory::{runtime_work_rows, shown_sites, SiteRow, View};
use crate::report::view::reach::StackReach;
use crate::stream::event::StackEnd;

/// Options of the text form.
#[derive(Debug, Clone, Copy)]
pub struct TextOptions {
    /// Rows per table.
    pub top: usize,
    /// Show the timeline.
    pub timeline: bool,
}

/// Renders the view as text.
pub fn render(view: &View, options: TextOptions) -> String {
    let mut out = String::new();
    let _ = write_all(&mut out, view, options);
    out
}

fn write_all(out: &mut String, view: &View, options: TextOptions) -> Result {
    write_header(out, view)?;
    write_your_code(out, &view.your_code, options.top)?;
    write_rss_tree(out, view)?;
    write_groups(out, view, options.top)?;
    write_by_resident(out, view, options.top)?;
    write_by_released(out, view, options.top)?;
    write_by_faults(out, view, options.top)?;
    write_by_mapped(out, view, options.top)?;
    write_swap_ins(out, view, options.top)?;
    write_reconciliation(out, view)?;
    if options.timeline {
        write_timeline(out, view)?;
    }
    Ok(())
}

/// The first lines: the capture, the moment shown with its totals (and the peak and the
/// end when they are not it), the notes and warnings.
fn write_header(out: &mut String, view: &View) -> Result {
    let pids: Vec<String> = view.pids.iter().map(u32::to_string).collect();
    let source = match &view.aggregate_of {
        Some(aggregate) => format!("memmon fleet: {aggregate}"),
        None => format!(
            "memmon report: {} events, process{} {}",
            view.events,
            if pids.len() == 1 { "" } else { "es" },
            pids.join(", ")
        ),
    };
    writeln!(
        out,
        "{source}; sites from {}",
        if view.stacks {
            "call stacks"
        } else {
            "fault addresses (no stacks in the capture)"
        },
    )?;
    if let Some(loss) = view.loss.sentence() {
        writeln!(out, "incomplete: {loss}")?;
    }
    write_moment(out, view)?;
    for warning in &view.symbol_warnings {
        writeln!(out, "note: {warning}")?;
    }
    if let Some(hint) = &view.stripped_hint {
        writeln!(out, "{hint}")?;
    }
    write_stack_ends(out, &view.stack_ends)?;
    if view.stacks {
        write_stack_reach(out, &view.stack_reach)?;
    }
    if view.bad_lines > 0 {
        writeln!(
            out,
            "warning: {} capture lines could not be decoded and were skipped",
            view.bad_lines
        )?;
    }
    Ok(())
}

/// `at the peak, 9.1 s: resident 147 MiB (anon ...), swapped 0 B, mapped 300 MiB; at the
/// end: 46 MiB (--at end)`.
fn write_moment(out: &mut String, view: &View) -> Result {
    let totals = view.totals;
    let label = if view.shown.at_end() && view.aggregate_of.is_none() {
        format!(
            "{} (each process's last state before it released its memory)",
            view.shown.moment_label
        )
    } else {
        view.shown.moment_label.clone()
    };
    let others = other_moments(&view.shown, true);
    // Snapshots (a fleet's aggregate) have no swap figures.
    let swapped = if view.aggregate_of.is_some() {
        String::new()
    } else {
        format!(", swapped {}", size(totals.swap))
    };
    writeln!(
        out,
        "at {label}: resident {} (anon {}, file {}, shmem {}){swapped}, mapped {}{}",
        size(totals.resident()),
        size(totals.anon),
        size(totals.file),
        size(totals.shmem),
        size(view.mapped),
        others
            .iter()
            .map(|other| format!("; {other}"))
            .collect::<String>()
    )
}

/// Says how many stacks ended before their outermost frame, and why, if any did.
fn write_stack_ends(out: &mut String, ends: &[u64; STACK_ENDS]) -> Result {
    let all: u64 = ends.iter().sum();
    let early: u64 = ends.iter().skip(1).sum();
    if early == 0 {
        return Ok(());
    }
    let reasons: Vec<String> = StackEnd::ALL
        .iter()
        .zip(ends)
        .skip(1)
        .filter(|(_, n)| **n > 0)
        .map(|(end, n)| format!("{} {n}", end.name()))
        .collect();
    let meanings = [
        "",
        "depth: the stack_depth limit (record --stacks)",
        "unreadable: a frame that could not be read",
        "no_table: code without an unwind table or frame pointer",
        "unsupported: a frame whose unwind rule cannot be followed",
        "shed: cut short or not walked by the module while the reader was behind",
    ];
    let explained: Vec<&str> = meanings
        .iter()
        .zip(ends)
        .skip(1)
        .filter(|(_, n)| **n > 0)
        .map(|(meaning, _)| *meaning)
        .collect();
    writeln!(
        out,
        "stacks: {early} of {all} ended early ({}); {}",
        reasons.join(", "),
        explained.join("; ")
    )
}

/// Says where the stacks of the resident bytes end, when the capture has stacks.
fn write_stack_reach(out: &mut String, reach: &StackReach) -> Result {
    let total = reach.total();
    if total == 0 {
        return Ok(());
    }
    let parts = [
        ("main", reach.main),
        ("a thread's start", reach.thread_start),
        ("start-up before main", reach.start_up),
        ("exit", reach.exit),
        ("no stack", reach.no_stack),
        ("short of these", reach.other),
    ];
    let shown: Vec<String> = parts
        .iter()
        .filter(|(_, bytes)| *bytes > 0)
        .map(|(what, bytes)| {
            let tenths = u128::from(*bytes) * 1000 / u128::from(total);
            format!(
                "{what} {} ({}.{} %)",
                size(*bytes),
                tenths / 10,
                tenths % 10
            )
        })
        .collect();
    writeln!(
        out,
        "resident bytes by where their stacks end: {}",
        shown.join(", ")
    )
}

/// The resident bytes by page kind, then by class.
fn write_rss_tree(out: &mut String, view: &View) -> Result {
    writeln!(out, "\nRSS tree")?;
    for kind in PageKind::ALL {
        let rows: Vec<_> = view.tree.iter().filter(|r| r.kind == kind).collect();
        let total = saturating_sum(rows.iter().map(|r| r.resident));
        writeln!(out, "  {:<50} {:>10}", kind.as_str(), size(total))?;
        for row in rows {
            writeln!(out, "    {:<48} {:>10}", row.label, size(row.resident))?;
        }
    }
    Ok(())
}

/// `--group-by`: each group's totals, RSS tree and top sites.
fn write_groups(out: &mut String, view: &View, top: usize) -> Result {
    for group in &view.groups {
        let pids: Vec<String> = group.pids.iter().map(u32::to_string).collect();
        writeln!(
            out,
            "\n{}: resident {} (anon {}, file {}, shmem {}), process{} {}",
            group.name,
            size(group.totals.resident()),
            size(group.totals.anon),
            size(group.totals.file),
            size(group.totals.shmem),
            if pids.len() == 1 { "" } else { "es" },
            pids.join(", ")
        )?;
        for row in &group.tree {
            writeln!(
                out,
                "    {:<48} {:>10}",
                format!("{} {}", row.kind.as_str(), row.label),
                size(row.resident)
            )?;
        }
        let work = runtime_work_rows(&group.sites);
        for row in shown_sites(&group.sites, &work).into_iter().take(top) {
            writeln!(out, "  {:>10}  {}", size(row.resident), row.name())?;
        }
    }
    Ok(())
}

/// The columns of the tables of sites by bytes (the first column is the order).
fn bytes_table(first: &'static str, third: &'static str) -> Table<4> {
    Table {
        columns: [(first, 10), ("peak", 10), (third, 10), ("lifetime", 13)],
        last: "site",
    }
}

/// The sites with something resident or released, in the view's order.
fn write_by_resident(out: &mut String, view: &View, top: usize) -> Result {
    writeln!(out, "\nTop sites by resident bytes")?;
    let table = bytes_table("resident", "released");
    table.header(out)?;
    let mut rows: Vec<Cow<SiteRow>> = shown_sites(&view.sites, &view.runtime_work)
        .into_iter()
        .filter(|r| r.resident > 0 || r.released > 0)
        .collect();
    rows.truncate(top);
    for row in rows {
        table.row(
            out,
            [
                &size(row.resident),
                &size(row.peak),
                &size(row.released),
                row.lifetime.as_str(),
            ],
            row.name(),
        )?;
    }
    Ok(())
}

/// The sites whose memory was freed within the capture, if any.
fn write_by_released(out: &mut String, view: &View, top: usize) -> Result {
    let mut rows: Vec<Cow<SiteRow>> = shown_sites(&view.sites, &view.runtime_work)
        .into_iter()
        .filter(|r| r.released > 0)
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nTop sites by released bytes (memory freed within the capture)"
    )?;
    let table = bytes_table("released", "resident");
    table.header(out)?;
    rows.sort_by(|a, b| {
        b.released
            .cmp(&a.released)
            .then(a.chain(64).cmp(&b.chain(64)))
    });
    rows.truncate(top);
    for row in rows {
        table.row(
            out,
            [
                &size(row.released),
                &size(row.peak),
                &size(row.resident),
                row.lifetime.as_str(),
            ],
            row.name(),
        )?;
    }
    Ok(())
}

/// The sites by faults, with the faults by class.
fn write_by_faults(out: &mut String, view: &View, top: usize) -> Result {
    writeln!(out, "\nTop sites by faults")?;
    let table = Table {
        columns: [
            ("faults", 8),
            ("first-touch", 11),
            ("file", 8),
            ("swap-in", 8),
            ("cow", 8),
            ("other", 8),
        ],
        last: "site",
    };
    table.header(out)?;
    let mut rows: Vec<Cow<SiteRow>> = shown_sites(&view.sites, &view.runtime_work)
        .into_iter()
        .filter(|r| r.faults.total() > 0)
        .collect();
    rows.sort_by(|a, b| {
        b.faults
            .total()
            .cmp(&a.faults.total())
            .then(a.chain(64).cmp(&b.chain(64)))
    });
    rows.truncate(top);
    for row in rows {
        let f = row.faults;
        table.row(
            out,
            [f.total(), f.first_touch, f.file, f.swap_in, f.cow, f.other],
            row.name(),
        )?;
    }
    Ok(())
}

/// The sites by the bytes of the mappings they made.
fn write_by_mapped(out: &mut String, view: &View, top: usize) -> Result {
    writeln!(out, "\nTop sites by mapped bytes")?;
    let mut rows: Vec<Cow<SiteRow>> = shown_sites(&view.sites, &view.runtime_work)
        .into_iter()
        .filter(|r| r.mapped > 0)
        .collect();
    rows.sort_by(|a, b| b.mapped.cmp(&a.mapped).then(a.chain(64).cmp(&b.chain(64))));
    rows.truncate(top);
    for row in rows {
        writeln!(out, "  {:>10}  {}", size(row.mapped), row.name())?;
    }
    Ok(())
}

/// The sites that brought pages back from swap, if any, with when.
fn write_swap_ins(out: &mut String, view: &View, top: usize) -> Result {
    let mut rows: Vec<Cow<SiteRow>> = shown_sites(&view.sites, &view.runtime_work)
        .into_iter()
        .filter(|r| r.swapped_in > 0)
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nSwap-ins")?;
    rows.sort_by_key(|r| std::cmp::Reverse(r.swapped_in));
    rows.truncate(top);
    for row in rows {
        writeln!(
            out,
            "  {:>10}  {}  (from {} to {})",
            size(row.swapped_in),
            row.name(),
            row.first_swapin.map(|t| t.to_string()).unwrap_or_default(),
            row.last_swapin.map(|t| t.to_string()).unwrap_or_default()
        )?;
    }
    Ok(())
}

/// The model against the processes' own counters.
fn write_reconciliation(out: &mut String, view: &View) -> Result {
    writeln!(out, "\nReconciliation")?;
    if view.reconciliation.is_empty() {
        writeln!(
            out,
            "  no counters to compare with (no rss lines and no status snapshots with values)"
        )?;
    }
    for check in &view.reconciliation {
        if check.warnings.is_empty() {
            writeln!(
                out,
                "  ok: {}: model anon {} file {} shmem {}, counters anon {} file {} shmem {}",
                check.label,
                size(check.model.anon),
                size(check.model.file),
                size(check.model.shmem),
                size(check.counters.anon),
                size(check.counters.file),
                size(check.counters.shmem)
            )?;
        }
        for warning in &check.warnings {
            writeln!(out, "  warning: {warning}")?;
        }
    }
    Ok(())
}

/// `--timeline`: per interval the faults, the mapping and the growth, with its top sites.
fn write_timeline(out: &mut String, view: &View) -> Result {
    writeln!(out, "\nTimeline")?;
    let table = Table {
        columns: [
            ("start", 20),
            ("end", 20),
            ("1st-tch", 8),
            ("file", 8),
            ("swap-in", 8),
            ("cow", 6),
            ("mapped", 10),
            ("unmapped", 10),
            ("growth", 10),
        ],
        last: "top sites",
    };
    table.header(out)?;
    for row in &view.timeline {
        let i = &row.interval;
        let top: Vec<String> = row
            .top
            .iter()
            .map(|(name, bytes)| format!("{name} {}", signed_size(*bytes)))
            .collect();
        table.row(
            out,
            [
                i.start.to_string(),
                i.end.to_string(),
                i.faults[0].to_string(),
                i.faults[1].to_string(),
                i.faults[2].to_string(),
                i.faults[3].to_string(),
                size(i.mapped),
                size(i.unmapped),
                signed_size(i.resident_growth),
            ],
            format_args!(
                "{}{}{}",
                if row.spike { "SPIKE " } else { "" },
                i.mark
                    .as_ref()
                    .map(|m| format!("[until mark {m:?}] "))
                    .unwrap_or_default(),
                top.join(", ")
            ),
        )?;
    }
    Ok(())
}
