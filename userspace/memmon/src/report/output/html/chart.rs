//! The RSS-over-time chart as hand-laid SVG: resident bytes stacked by group (heap,
//! anonymous mmap, stacks, file, shmem) against the capture's time, marks as labelled
//! vertical lines, the process's own counters as a line over the stack, and the spikes of
//! the timeline shaded with their top sites in a tooltip.

use std::fmt::Write;

use crate::report::model::picture::saturating_sum;
use crate::report::model::replay::Analysis;
use crate::report::model::timeline::GROUPS;
use crate::report::output::text::size;
use crate::report::view::memory::View;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 380.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 56.0;
/// Fill colours of the groups.
pub const COLOURS: [&str; 5] = ["#e6550d", "#fd8d3c", "#fdae6b", "#3182bd", "#31a354"];

/// Escapes text for HTML and SVG (content and attributes).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn seconds(nanos: u128) -> f64 {
    nanos as f64 / 1e9
}

/// The chart, or a note when the capture has no events.
pub fn rss_chart(analysis: &Analysis, view: &View) -> String {
    let series = &analysis.series;
    let (Some(first), Some(last)) = (series.first(), series.last()) else {
        return "<p>No events: nothing to chart.</p>".to_owned();
    };
    let t0 = first.time.as_nanos();
    let span = (last.time.as_nanos().saturating_sub(t0)).max(1);
    let counters: Vec<(u128, u64)> = analysis
        .comparisons
        .iter()
        .map(|c| (c.time.as_nanos(), c.counters.resident()))
        .collect();
    let top = series
        .iter()
        .map(|p| saturating_sum(p.bytes))
        .chain(counters.iter().map(|c| c.1))
        .max()
        .unwrap_or(0)
        .max(4096) as f64
        * 1.05;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |t: u128| LEFT + (t.saturating_sub(t0)) as f64 / span as f64 * plot_w;
    let y = |bytes: f64| TOP + plot_h - bytes / top * plot_h;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg id="rss-chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">"#
    );
    // Spikes first, under everything.
    for row in view.timeline.iter().filter(|r| r.spike) {
        let (a, b) = (
            x(row.interval.start.as_nanos()),
            x(row.interval.end.as_nanos()),
        );
        let sites: Vec<String> = row
            .top
            .iter()
            .map(|(name, bytes)| {
                format!(
                    "{name}: {}{}",
                    if *bytes < 0 { "-" } else { "+" },
                    size(bytes.unsigned_abs())
                )
            })
            .collect();
        let _ = write!(
            svg,
            r##"<rect class="spike" x="{a:.1}" y="{TOP}" width="{:.1}" height="{plot_h}" fill="#ff000022" stroke="#ff0000" stroke-dasharray="3,3"><title>spike: {} in this interval&#10;{}</title></rect>"##,
            (b - a).max(2.0),
            escape(&size(row.interval.resident_growth.unsigned_abs())),
            escape(&sites.join("\n")).replace('\n', "&#10;")
        );
    }
    // Stacked areas, bottom group first.
    let mut lower = vec![0u64; series.len()];
    for (group, colour) in COLOURS.iter().enumerate() {
        let upper: Vec<u64> = series
            .iter()
            .zip(&lower)
            .map(|(p, low)| low.saturating_add(p.bytes[group]))
            .collect();
        if upper == lower {
            continue;
        }
        let mut points = String::new();
        for (p, value) in series.iter().zip(&upper) {
            let _ = write!(
                points,
                "{:.1},{:.1} ",
                x(p.time.as_nanos()),
                y(*value as f64)
            );
        }
        for (p, value) in series.iter().zip(&lower).rev() {
            let _ = write!(
                points,
                "{:.1},{:.1} ",
                x(p.time.as_nanos()),
                y(*value as f64)
            );
        }
        let _ = write!(
            svg,
            r#"<polygon class="area" data-group="{}" points="{}" fill="{colour}" fill-opacity="0.85"><title>{}</title></polygon>"#,
            escape(GROUPS[group]),
            points.trim_end(),
            escape(GROUPS[group])
        );
        lower = upper;
    }
    // Axes and ticks.
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="#333"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}" stroke="#333"/>"##,
        TOP + plot_h,
        LEFT + plot_w,
        TOP + plot_h,
        TOP + plot_h
    );
    for tick in 0u8..=4 {
        let bytes = top / 1.05 * f64::from(tick) / 4.0;
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/>"##,
            LEFT - 6.0,
            y(bytes) + 4.0,
            escape(&size(bytes as u64)),
            y(bytes),
            LEFT + plot_w,
            y(bytes)
        );
        let t = t0 + span * u128::from(tick) / 4;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{:.3} s</text>"#,
            x(t),
            TOP + plot_h + 16.0,
            seconds(t)
        );
    }
    // Marks.
    for mark in &analysis.marks {
        let mx = x(mark.time.as_nanos());
        let _ = write!(
            svg,
            r##"<line class="mark" x1="{mx:.1}" y1="{TOP}" x2="{mx:.1}" y2="{:.1}" stroke="#555" stroke-dasharray="4,2"/><text class="mark-label" x="{:.1}" y="{:.1}" transform="rotate(-45 {:.1} {:.1})" fill="#333">{}</text>"##,
            TOP + plot_h,
            mx,
            TOP - 4.0,
            mx,
            TOP - 4.0,
            escape(&mark.text)
        );
    }
    // The process's own counters.
    if !counters.is_empty() {
        let mut points = String::new();
        for (t, bytes) in &counters {
            let _ = write!(points, "{:.1},{:.1} ", x(*t), y(*bytes as f64));
        }
        let _ = write!(
            svg,
            r##"<polyline id="counters" points="{}" fill="none" stroke="#000" stroke-width="1.5"/>"##,
            points.trim_end()
        );
        for (t, bytes) in &counters {
            let _ = write!(
                svg,
                r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="#000"><title>process counters: {}</title></circle>"##,
                x(*t),
                y(*bytes as f64),
                escape(&size(*bytes))
            );
        }
    }
    // Legend, under the time axis.
    let legend_y = HEIGHT - 14.0;
    let mut lx = LEFT;
    for (group, colour) in COLOURS.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{legend_y:.1}">{}</text>"#,
            legend_y - 9.0,
            lx + 14.0,
            escape(GROUPS[group])
        );
        lx += 120.0;
    }
    let _ = write!(
        svg,
        r##"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#000" stroke-width="1.5"/><text x="{:.1}" y="{legend_y:.1}">process counters</text>"##,
        legend_y - 4.0,
        lx + 14.0,
        legend_y - 4.0,
        lx + 18.0
    );
    svg.push_str("</svg>");
    svg
}
