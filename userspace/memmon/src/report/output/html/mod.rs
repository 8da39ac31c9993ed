//! `--format html`: one self-contained page (no network: styles, scripts and data
//! inline) with the RSS-over-time chart, the flame graphs (inferno's interactive SVG in
//! `srcdoc` frames, so their scripts do not clash), the breakdown with the reconciliation
//! and the sortable top-sites table. With `--diff`, the change tables and a differential
//! flame graph (red for growth, blue for shrink).

pub mod access;
pub mod chart;
pub mod markup;

use std::fmt::Write;

use crate::report::output::folded::{folded_lines, render_svg_width, Weight, WHOSE_COLOURS};
use crate::report::output::html::chart::rss_chart;
use crate::report::output::html::markup::{escape, number_cell};
use crate::report::output::moment::{moment_line, other_moments};
use crate::report::output::text::your_code::{
    before_start_line, lost_mappings_note, unnamed_code_note,
};
use crate::report::output::text::{signed_size, size};
use crate::report::symbolize::short_name::Naming;
use crate::report::symbolize::symbols::name;
use crate::report::view::diff::Diff;
use crate::report::view::memory::{shown_sites, Prepared, SiteRow, View};
use crate::report::view::own_code::Whose;

/// The page's styles (page.css).
const STYLE: &str = include_str!("page.css");

/// The page's script (page.js): flame-graph switch, sortable tables, and the
/// `data-ready`/`data-script-errors` attributes the tests look at.
const SCRIPT: &str = include_str!("page.js");

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>\n{STYLE}</style><script>\n{SCRIPT}</script></head><body data-script-errors=\"\">\n{body}\n</body></html>\n",
        escape(title)
    )
}

fn flame_section(view: &View, weights: &[Weight]) -> String {
    let mut out = String::from("<h2>Flame graph</h2><div class=\"switch\">");
    let mut frames = String::new();
    for &weight in weights {
        let title = format!(
            "memmon: {} by site at {}",
            weight.name(),
            view.shown.moment_label
        );
        let Ok(svg) = render_svg_width(view, weight, &title, Some(1100)) else {
            continue;
        };
        let svg = String::from_utf8_lossy(&svg);
        let height = svg_height(&svg);
        let _ = write!(
            out,
            "<button data-weight=\"{0}\" onclick=\"showFlame('{0}')\">{0}</button>",
            weight.name()
        );
        let _ = write!(
            frames,
            "<iframe class=\"flame\" id=\"flame-{}\" title=\"flame graph: {}\" style=\"height: {height}px\" srcdoc=\"{}\"></iframe>",
            weight.name(),
            weight.name(),
            escape(&svg)
        );
    }
    out.push_str("</div>");
    if frames.is_empty() {
        out.push_str("<p class=\"muted\">Nothing to draw.</p>");
    }
    out.push_str(&frames);
    out
}

/// The height of an inferno SVG (its first `height="N"`), plus a margin.
fn svg_height(svg: &str) -> u32 {
    svg.split("height=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse::<f64>().ok())
        .map_or(560, |h| (h as u32).saturating_add(24).clamp(120, 4000))
}

fn breakdown(view: &View) -> String {
    let mut out = String::from(
        "<h2>Breakdown</h2><table id=\"breakdown\"><thead><tr><th>kind</th><th>class</th><th class=\"n\">resident</th></tr></thead><tbody>",
    );
    for row in &view.tree {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>{}</tr>",
            row.kind.as_str(),
            escape(&row.label),
            number_cell(row.resident, &size(row.resident))
        );
    }
    out.push_str("</tbody></table><h3>Reconciliation</h3><ul id=\"reconciliation\">");
    if view.reconciliation.is_empty() {
        out.push_str("<li class=\"muted\">No counters to compare with.</li>");
    }
    for check in &view.reconciliation {
        if check.warnings.is_empty() {
            let _ = write!(
                out,
                "<li class=\"ok\">ok: {}: model {} resident, counters {}</li>",
                escape(&check.label),
                escape(&size(check.model.resident())),
                escape(&size(check.counters.resident()))
            );
        }
        for warning in &check.warnings {
            let _ = write!(
                out,
                "<li class=\"warning\">warning: {}</li>",
                escape(warning)
            );
        }
    }
    out.push_str("</ul>");
    out
}

/// The answer first: the program's own functions by the resident bytes they brought in
/// (themselves or through the library code they called), each with a bar, and what no own
/// code holds.
fn your_code(view: &View, top: usize) -> String {
    let code = &view.your_code;
    let mut out = String::from("<section id=\"your-code\"><h2>Your code</h2>");
    if code.functions.is_empty() {
        out.push_str(
            "<p class=\"muted\">No function of the program's own code holds resident memory.</p>",
        );
        out.push_str(&your_code_lines(view));
        out.push_str("</section>");
        return out;
    }
    out.push_str(
        "<p class=\"muted\">Resident bytes by function of the program, with the library code it called; inclusive adds its callees in the program.</p><table id=\"your-code-table\" class=\"fit\"><thead><tr><th>function</th><th class=\"bar\"></th><th class=\"n\">resident</th><th class=\"n\">inclusive</th><th>through</th></tr></thead><tbody>",
    );
    let most = code.functions.first().map_or(1, |row| row.resident.max(1));
    for row in code.functions.iter().take(top) {
        // CAST: a share of 0 to 100 of the largest row, for the bar's width.
        let percent = (u128::from(row.resident) * 100 / u128::from(most)) as u64;
        // The full names the row counts, in its tooltip.
        let title = if row.full_names.is_empty() {
            String::new()
        } else {
            format!(" title=\"{}\"", escape(&row.full_names.join("\n")))
        };
        let _ = write!(
            out,
            "<tr><td class=\"name\"{title}>{}</td><td class=\"bar\"><div style=\"width: {percent}%\"></div></td>{}{}<td class=\"through\">{}</td></tr>",
            escape(&row.name()),
            number_cell(row.resident, &size(row.resident)),
            number_cell(row.inclusive, &size(row.inclusive)),
            escape(row.library.as_deref().unwrap_or("")),
        );
    }
    out.push_str("</tbody></table>");
    out.push_str(&your_code_lines(view));
    out.push_str("</section>");
    out
}

/// The lines after "Your code"'s table: the runtime's work, what no own code holds, and
/// why generated code is unnamed.
fn your_code_lines(view: &View) -> String {
    let code = &view.your_code;
    let mut out = String::new();
    for work in &code.runtime_work {
        let _ = write!(
            out,
            "<p class=\"muted work\">{} {}</p>",
            escape(&size(work.resident)),
            escape(&work.label)
        );
    }
    if code.outside > 0 {
        let _ = write!(
            out,
            "<p class=\"muted\">{} resident with no function of the program on its stack (start-up, the runtime's and the libraries' own).</p>",
            escape(&size(code.outside))
        );
    }
    if let Some(line) = before_start_line(code) {
        let _ = write!(out, "<p class=\"muted\">{}.</p>", escape(&line));
    }
    if let Some(note) = lost_mappings_note(code) {
        let _ = write!(out, "<p class=\"warning\">Note: {}</p>", escape(&note));
    }
    if let Some(unnamed) = &code.unnamed_code {
        let _ = write!(
            out,
            "<p class=\"warning\">Note: {}</p>",
            escape(&unnamed_code_note(unnamed))
        );
    }
    out
}

/// A site's chain with its full names, for its tooltip (`None` when the shown names are
/// the full ones).
fn full_chain(row: &SiteRow) -> Option<String> {
    (row.shown != row.frames).then(|| {
        let first = row.own.first().copied().unwrap_or(0);
        name::site(row.frames.get(first..).unwrap_or_default())
    })
}

/// The flame graphs' colours, by whose code a frame is.
fn legend() -> String {
    let mut out = String::from("<p class=\"legend\">");
    for (whose, colour) in WHOSE_COLOURS {
        let _ = write!(
            out,
            "<span><i style=\"background: {colour}\"></i>{}</span>",
            match whose {
                Whose::Program => "the program",
                Whose::OwnLibrary => "its own libraries",
                Whose::System => "system libraries and runtime",
                Whose::Unknown => "unknown",
            }
        );
    }
    out.push_str("</p>");
    out
}

fn sites_table(view: &View, top: usize) -> String {
    let mut out = String::from(
        "<h2>Top sites</h2><table id=\"sites\" class=\"fit\"><thead><tr><th>site</th><th class=\"n\">resident</th><th class=\"n\">released</th><th class=\"n\">peak</th><th>lifetime</th><th class=\"n\">faults</th><th class=\"n\">first-touch</th><th class=\"n\">file</th><th class=\"n\">swap-in</th><th class=\"n\">cow</th><th class=\"n\">mapped</th></tr></thead><tbody>",
    );
    for row in shown_sites(&view.sites, &view.runtime_work)
        .into_iter()
        .take(top)
    {
        let f = row.faults;
        let title = full_chain(&row)
            .map(|chain| format!(" title=\"{}\"", escape(&chain)))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td class=\"name\"{title}>{}</td>{}{}{}<td>{}</td>{}{}{}{}{}{}</tr>",
            escape(&row.name()),
            number_cell(row.resident, &size(row.resident)),
            number_cell(row.released, &size(row.released)),
            number_cell(row.peak, &size(row.peak)),
            row.lifetime.as_str(),
            number_cell(f.total(), &f.total().to_string()),
            number_cell(f.first_touch, &f.first_touch.to_string()),
            number_cell(f.file, &f.file.to_string()),
            number_cell(f.swap_in, &f.swap_in.to_string()),
            number_cell(f.cow, &f.cow.to_string()),
            number_cell(row.mapped, &size(row.mapped)),
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// The banner of a capture that did not record everything (nothing when it did): the
/// text report's `incomplete:` line.
fn loss_banner(view: &View) -> String {
    match view.loss.sentence() {
        Some(sentence) => format!(
            "<p id=\"loss\" role=\"alert\"><b>Incomplete capture:</b> {}. The figures below miss what was not recorded.</p>",
            escape(&sentence)
        ),
        None => String::new(),
    }
}

fn summary_line(view: &View) -> String {
    let t = view.totals;
    const LISTED: usize = 8;
    let processes = match view.pids.as_slice() {
        [] => "no process".to_owned(),
        [pid] => format!("process {pid}"),
        pids => {
            let mut listed: Vec<String> = pids.iter().take(LISTED).map(u32::to_string).collect();
            if pids.len() > LISTED {
                listed.push("…".to_owned());
            }
            format!("{} processes ({})", pids.len(), listed.join(", "))
        }
    };
    let others: String = other_moments(&view.shown, false)
        .iter()
        .map(|other| format!("; {}", escape(other)))
        .collect();
    let source = match &view.aggregate_of {
        Some(aggregate) => format!("memmon fleet: {aggregate}"),
        None => format!("{} events, {processes}", view.events),
    };
    format!(
        "<p id=\"moment\">At <b>{}</b>: resident <b>{}</b> (anon {}, file {}, shmem {}), mapped {}{others}. {}; sites from {}.</p>",
        escape(&view.shown.moment_label),
        escape(&size(t.resident())),
        escape(&size(t.anon)),
        escape(&size(t.file)),
        escape(&size(t.shmem)),
        escape(&size(view.mapped)),
        escape(&source),
        if view.stacks { "call stacks" } else { "fault addresses" }
    )
}

/// The page of a report.
///
/// With access sampling in the captures, an "Access sampling" section (cold after `cold`
/// generations) follows the top sites.
pub fn render(prepared: &Prepared, top: usize, cold: u64, naming: Naming) -> String {
    let view = &prepared.view;
    let mut body = String::from("<h1>memmon report</h1>");
    body.push_str(&loss_banner(view));
    body.push_str(&summary_line(view));
    if let Some(hint) = &view.stripped_hint {
        let _ = write!(
            body,
            "<p id=\"stripped-hint\" class=\"muted\">{}</p>",
            escape(hint)
        );
    }
    body.push_str(&your_code(view, top));
    body.push_str("<h2>RSS over time</h2>");
    body.push_str(&rss_chart(&prepared.analysis, view));
    body.push_str(&legend());
    body.push_str(&flame_section(
        view,
        &[
            Weight::Resident,
            Weight::Faults,
            Weight::Mapped,
            Weight::Swapin,
        ],
    ));
    body.push_str(&breakdown(view));
    body.push_str(&sites_table(view, top.max(100)));
    if !prepared.analysis.access.is_empty() {
        let access =
            crate::report::view::access::build(&prepared.analysis, &prepared.symbols, cold, naming);
        body.push_str(&crate::report::output::html::access::section(
            &access,
            top.max(100),
        ));
    }
    page("memmon report", &body)
}

/// The page of a diff: the change tables, a differential flame graph of resident bytes,
/// and both RSS charts.
pub fn render_diff(base: &Prepared, new: &Prepared, diff: &Diff, top: usize) -> String {
    let mut body = String::from("<h1>memmon report --diff</h1>");
    for (side, prepared) in [("BASE", base), ("NEW", new)] {
        if let Some(sentence) = prepared.view.loss.sentence() {
            let _ = write!(
                body,
                "<p class=\"loss\" id=\"loss-{}\" role=\"alert\"><b>Incomplete capture ({side}):</b> {}. Its figures miss what was not recorded.</p>",
                side.to_lowercase(),
                escape(&sentence)
            );
        }
    }
    let _ = write!(
        body,
        "<p id=\"moment\">Resident change: <b>{}</b>, NEW against BASE. BASE {}; NEW {}.</p>",
        escape(&signed_size(diff.total)),
        escape(&moment_line(&base.view.shown)),
        escape(&moment_line(&new.view.shown))
    );
    let before = folded_lines(&base.view, Weight::Resident).join("\n");
    let after = folded_lines(&new.view, Weight::Resident).join("\n");
    let mut differential = Vec::new();
    let drawn = inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut differential,
    )
    .ok()
    .and_then(|()| {
        let text = String::from_utf8_lossy(&differential).into_owned();
        let mut options = inferno::flamegraph::Options::default();
        options.title =
            "memmon: resident bytes, NEW against BASE (red: growth, blue: shrink)".to_owned();
        options.count_name = "bytes".to_owned();
        options.image_width = Some(1100);
        let mut svg = Vec::new();
        inferno::flamegraph::from_lines(&mut options, text.lines(), &mut svg).ok()?;
        Some(String::from_utf8_lossy(&svg).into_owned())
    });
    body.push_str("<h2>Differential flame graph</h2>");
    match drawn {
        Some(svg) => {
            let _ = write!(
                body,
                "<iframe class=\"flame\" id=\"flame-diff\" title=\"differential flame graph\" style=\"height: {}px\" srcdoc=\"{}\"></iframe>",
                svg_height(&svg),
                escape(&svg)
            );
        }
        None => body.push_str("<p class=\"muted\">Nothing to draw.</p>"),
    }
    for (title, id, changes) in [
        ("By site", "diff-sites", &diff.sites),
        ("By class", "diff-classes", &diff.classes),
    ] {
        let _ = write!(
            body,
            "<h2>{title}</h2><table id=\"{id}\"><thead><tr><th>name</th><th class=\"n\">resident change</th><th class=\"n\">base</th><th class=\"n\">new</th><th class=\"n\">mapped change</th><th class=\"n\">faults change</th></tr></thead><tbody>"
        );
        for change in changes.iter().take(top.max(20)) {
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"n\" data-v=\"{}\">{}</td>{}{}<td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{:+}</td></tr>",
                escape(&change.name),
                change.resident,
                escape(&signed_size(change.resident)),
                number_cell(change.base, &size(change.base)),
                number_cell(change.new, &size(change.new)),
                change.mapped,
                escape(&signed_size(change.mapped)),
                change.faults,
                change.faults
            );
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("<h2>RSS over time: BASE</h2>");
    body.push_str(&rss_chart(&base.analysis, &base.view).replacen(
        "id=\"rss-chart\"",
        "id=\"rss-chart-base\"",
        1,
    ));
    body.push_str("<h2>RSS over time: NEW</h2>");
    body.push_str(&rss_chart(&new.analysis, &new.view).replacen(
        "id=\"rss-chart\"",
        "id=\"rss-chart-new\"",
        1,
    ));
    page("memmon report --diff", &body)
}
