//! `--access` as text: the header, the sites that touch cold pages, the generations and
//! the sites by pages touched.

use std::fmt::{Result, Write};

use crate::capture::control::format_ranges;
use crate::report::output::text::Table;
use crate::report::view::access::{AccessSiteRow, AccessView, GenerationRow};

/// `3 generations` / `1 generation`.
fn plural(count: u64, word: &str) -> String {
    let suffix = match (count, word.ends_with('s')) {
        (1, _) => "",
        (_, true) => "es",
        (_, false) => "s",
    };
    format!("{count} {word}{suffix}")
}

/// Renders the access report as text, `top` rows per site table.
pub fn render(view: &AccessView, top: usize) -> String {
    let mut out = String::new();
    let _ = write_text(&mut out, view, top);
    out
}

fn write_text(out: &mut String, view: &AccessView, top: usize) -> Result {
    write_header(out, view)?;
    if view.generations.is_empty() {
        writeln!(
            out,
            "\nNo access sampling in the capture (record with --sample MS and a module with sample_ms)"
        )?;
        return Ok(());
    }
    write_budget_warning(out, view)?;
    writeln!(out, "\nSites that touch cold pages")?;
    let cold_sites: Vec<&AccessSiteRow> = view.sites.iter().filter(|s| s.cold_pages > 0).collect();
    if cold_sites.is_empty() {
        writeln!(out, "  none")?;
    } else {
        write_sites(out, cold_sites.into_iter().take(top))?;
    }
    write_generations(out, &view.generations)?;
    write_before_start(out, view, top)?;
    writeln!(out, "\nSites by pages touched")?;
    let mut rows: Vec<&AccessSiteRow> = view.sites.iter().collect();
    rows.sort_by(|a, b| {
        (b.pages, b.accesses)
            .cmp(&(a.pages, a.accesses))
            .then_with(|| a.chain(64).cmp(&b.chain(64)))
    });
    write_sites(out, rows.into_iter().take(top))?;
    Ok(())
}

/// The first lines: what was sampled, what cold and hot mean, the notes.
fn write_header(out: &mut String, view: &AccessView) -> Result {
    let pids: Vec<String> = view.pids.iter().map(u32::to_string).collect();
    let range = match (view.generations.first(), view.generations.last()) {
        (Some(first), Some(last)) if first.n != last.n => format!(" ({} to {})", first.n, last.n),
        (Some(first), Some(_)) => format!(" ({})", first.n),
        _ => String::new(),
    };
    writeln!(
        out,
        "memmon report --access: {} sampled in {}{range}, process{} {}; sites from {}{}",
        plural(view.accesses, "page access"),
        plural(view.generations.len() as u64, "generation"),
        if pids.len() == 1 { "" } else { "es" },
        pids.join(", "),
        if view.stacks {
            "call stacks"
        } else {
            "fault addresses (no stacks in the capture)"
        },
        if view.lost > 0 {
            format!("; {} EVENTS LOST (accesses may be missing)", view.lost)
        } else {
            String::new()
        }
    )?;
    writeln!(
        out,
        "cold: the page had gone {} without being accessed or brought in (--cold {}); hot: used in the previous generation too",
        plural(view.cold_after, "whole generation"),
        view.cold_after
    )?;
    for warning in &view.symbol_warnings {
        writeln!(out, "note: {warning}")?;
    }
    Ok(())
}

/// Warns of the generations that armed the module's whole page budget, if any.
fn write_budget_warning(out: &mut String, view: &AccessView) -> Result {
    let capped: Vec<String> = view
        .generations
        .iter()
        .filter(|g| g.budget_reached)
        .map(|g| g.n.to_string())
        .collect();
    if let (false, Some(budget)) = (capped.is_empty(), view.budget) {
        writeln!(
            out,
            "warning: generation{} {} armed the module's budget of {budget} pages (sample_pages): pages beyond it were not armed, so their accesses are missing and they may look cold",
            if capped.len() == 1 { "" } else { "s" },
            capped.join(", ")
        )?;
    }
    Ok(())
}

/// The code that touched the pages resident before memmon started (`record -p`), if any
/// was touched: the sites by those pages.
fn write_before_start(out: &mut String, view: &AccessView, top: usize) -> Result {
    if view.before_start_touched == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "\nPages resident before memmon started: {} touched, by",
        plural(view.before_start_touched, "page")
    )?;
    let mut rows: Vec<&AccessSiteRow> = view
        .sites
        .iter()
        .filter(|s| s.before_start_pages > 0)
        .collect();
    rows.sort_by(|a, b| {
        b.before_start_pages
            .cmp(&a.before_start_pages)
            .then_with(|| a.chain(64).cmp(&b.chain(64)))
    });
    writeln!(out, "{:>8}  site", "pages")?;
    for row in rows.into_iter().take(top) {
        writeln!(out, "{:>8}  {}", row.before_start_pages, row.name())?;
    }
    Ok(())
}

/// One row per generation, with its top three sites.
fn write_generations(out: &mut String, generations: &[GenerationRow]) -> Result {
    writeln!(out, "\nGenerations")?;
    let table = Table {
        columns: [
            ("gen", 6),
            ("start", 20),
            ("armed", 9),
            ("resident", 9),
            ("res-cold", 9),
            ("touched", 8),
            ("hot", 8),
            ("warm", 8),
            ("cold", 8),
        ],
        last: "sites (pages touched, cold)",
    };
    table.header(out)?;
    for row in generations {
        let sites: Vec<String> = row
            .sites
            .iter()
            .take(3)
            .map(|s| {
                if s.cold > 0 {
                    format!("{} {} ({} cold)", s.site, s.pages, s.cold)
                } else {
                    format!("{} {}", s.site, s.pages)
                }
            })
            .collect();
        let more = if row.sites.len() > 3 {
            format!(", {} more", row.sites.len() - 3)
        } else {
            String::new()
        };
        table.row(
            out,
            [
                row.n.to_string(),
                row.start
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "-".into()),
                row.armed.to_string(),
                row.resident.to_string(),
                row.resident_cold.to_string(),
                row.touched.to_string(),
                row.hot.to_string(),
                row.warm.to_string(),
                row.cold.to_string(),
            ],
            format_args!("{}{more}", sites.join(", ")),
        )?;
    }
    Ok(())
}

fn write_sites<'a>(out: &mut String, rows: impl Iterator<Item = &'a AccessSiteRow>) -> Result {
    // The generations, left-aligned, before the site.
    const RANGES: usize = 12;
    let table = Table {
        columns: [("pages", 8), ("cold", 8), ("accesses", 9), ("gens", 6)],
        last: "site",
    };
    table.header_with(out, format_args!("{:<RANGES$} site", "generations"))?;
    for row in rows {
        table.row(
            out,
            [
                row.pages,
                row.cold_pages,
                row.accesses,
                row.generations.len() as u64,
            ],
            format_args!(
                "{:<RANGES$} {}",
                generation_ranges(&row.generations),
                row.name()
            ),
        )?;
    }
    Ok(())
}

/// `1-5`, `3`, `1-2,4`.
fn generation_ranges(generations: &[u64]) -> String {
    format_ranges(generations.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::generation_ranges;

    #[test]
    fn ranges() {
        assert_eq!(generation_ranges(&[1, 2, 3, 5, 7, 8]), "1-3,5,7-8");
        assert_eq!(generation_ranges(&[]), "");
    }
}
