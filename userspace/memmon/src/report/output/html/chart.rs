//! The RSS-over-time chart, an SVG written through quick-xml's writer (as inferno writes
//! its flame graphs): resident bytes stacked by group (heap, anonymous mmap, stacks,
//! file, shmem) against the capture's time, marks as labelled vertical lines, the moment
//! the report shows (the peak) as a red one, the process's own counters as a line over
//! the stack, and the spikes of the timeline shaded with their top sites in a tooltip.

use std::io;

use quick_xml::events::{BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

use crate::report::model::picture::saturating_sum;
use crate::report::model::replay::{Analysis, MarkState};
use crate::report::model::timeline::{Point, GROUPS};
use crate::report::output::html::markup::escape;
use crate::report::output::text::{signed_size, size};
use crate::report::view::memory::View;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 380.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 56.0;
/// Fill colours of the groups.
pub const COLOURS: [&str; 5] = ["#e6550d", "#fd8d3c", "#fdae6b", "#3182bd", "#31a354"];

/// A time on the axis, from the capture's start, as precise as the axis needs
/// (`250 ms`, `1.25 s`, `216.0 s`).
fn axis_time(nanos: u128, span: u128) -> String {
    let seconds = nanos as f64 / 1e9;
    if span < 2_000_000_000 {
        format!("{:.0} ms", seconds * 1e3)
    } else if span < 20_000_000_000 {
        format!("{seconds:.2} s")
    } else {
        format!("{seconds:.1} s")
    }
}

/// The SVG being written. Text content is given escaped, with the page's escape (the
/// chart sits inline in the HTML page); attribute values are numbers and names, which
/// quick-xml's escape leaves as they are.
struct Svg(Writer<Vec<u8>>);

impl Svg {
    fn start(name: &str, attributes: &[(&str, &str)]) -> BytesStart<'static> {
        let mut start = BytesStart::new(name.to_owned());
        for &attribute in attributes {
            start.push_attribute(attribute);
        }
        start
    }

    /// `<name attributes/>`.
    fn empty(&mut self, name: &str, attributes: &[(&str, &str)]) -> io::Result<()> {
        self.0
            .write_event(Event::Empty(Svg::start(name, attributes)))
    }

    /// `<name attributes>text</name>`, `text` already escaped.
    fn text(&mut self, name: &str, attributes: &[(&str, &str)], text: &str) -> io::Result<()> {
        self.0
            .write_event(Event::Start(Svg::start(name, attributes)))?;
        self.0
            .write_event(Event::Text(BytesText::from_escaped(text)))?;
        self.0.write_event(Event::End(BytesEnd::new(name)))
    }

    /// `<name attributes><title>title</title></name>`: a shape with a tooltip, `title`
    /// already escaped.
    fn titled(&mut self, name: &str, attributes: &[(&str, &str)], title: &str) -> io::Result<()> {
        self.0
            .write_event(Event::Start(Svg::start(name, attributes)))?;
        self.text("title", &[], title)?;
        self.0.write_event(Event::End(BytesEnd::new(name)))
    }
}

/// `x,y` pairs joined by spaces, one decimal each.
fn points(pairs: impl Iterator<Item = (f64, f64)>) -> String {
    pairs
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The chart, or a note when the capture has no events.
pub fn rss_chart(analysis: &Analysis, view: &View) -> String {
    if analysis.series.is_empty() {
        return "<p>No events: nothing to chart.</p>".to_owned();
    }
    let mut svg = Svg(Writer::new(Vec::new()));
    match draw(&mut svg, analysis, view) {
        Ok(()) => String::from_utf8_lossy(&svg.0.into_inner()).into_owned(),
        // Writing into memory does not fail.
        Err(_) => String::new(),
    }
}

/// The scales of the plot area: time across, resident bytes up.
struct Plot {
    /// The left edge: the capture's start (the clock of the report's header: its moments
    /// count from it), or the first point's time if earlier.
    t0: u128,
    /// Nanoseconds across the plot (at least 1).
    span: u128,
    /// The bytes at the top edge: the highest value and 5 % more.
    top: f64,
}

impl Plot {
    const WIDTH: f64 = WIDTH - LEFT - RIGHT;
    const HEIGHT: f64 = HEIGHT - TOP - BOTTOM;

    /// The x of a time.
    fn x(&self, t: u128) -> f64 {
        LEFT + (t.saturating_sub(self.t0)) as f64 / self.span as f64 * Plot::WIDTH
    }

    /// The y of a byte count.
    fn y(&self, bytes: f64) -> f64 {
        TOP + Plot::HEIGHT - bytes / self.top * Plot::HEIGHT
    }
}

fn draw(svg: &mut Svg, analysis: &Analysis, view: &View) -> io::Result<()> {
    let series = &analysis.series;
    let (Some(first), Some(last)) = (series.first(), series.last()) else {
        return Ok(());
    };
    let t0 = analysis
        .starts
        .first()
        .map_or(first.time, |start| (*start).min(first.time))
        .as_nanos();
    let counters: Vec<Counter> = analysis
        .comparisons
        .iter()
        .map(|c| Counter {
            time: c.time.as_nanos(),
            pid: c.pid,
            label: c.label.clone(),
            resident: c.counters.resident(),
        })
        .collect();
    let top = series
        .iter()
        .map(|p| saturating_sum(p.bytes))
        .chain(counters.iter().map(|c| c.resident))
        .max()
        .unwrap_or(0)
        .max(4096) as f64
        * 1.05;
    let plot = Plot {
        t0,
        span: (last.time.as_nanos().saturating_sub(t0)).max(1),
        top,
    };
    let (width, height) = (WIDTH.to_string(), HEIGHT.to_string());
    svg.0.write_event(Event::Start(Svg::start(
        "svg",
        &[
            ("id", "rss-chart"),
            ("xmlns", "http://www.w3.org/2000/svg"),
            ("width", &width),
            ("height", &height),
            ("viewBox", &format!("0 0 {width} {height}")),
            ("font-family", "sans-serif"),
            ("font-size", "11"),
        ],
    )))?;
    // Spikes first, under everything.
    draw_spikes(svg, &plot, view)?;
    draw_areas(svg, &plot, series)?;
    draw_axes(svg, &plot)?;
    draw_marks(svg, &plot, &analysis.marks)?;
    draw_moment(svg, &plot, view)?;
    draw_counters(svg, &plot, &counters)?;
    draw_legend(svg)?;
    svg.0.write_event(Event::End(BytesEnd::new("svg")))
}

/// The timeline's spikes, shaded, their top sites in the tooltip.
fn draw_spikes(svg: &mut Svg, plot: &Plot, view: &View) -> io::Result<()> {
    let (top_edge, plot_height) = (TOP.to_string(), Plot::HEIGHT.to_string());
    for row in view.timeline.iter().filter(|r| r.spike) {
        let (a, b) = (
            plot.x(row.interval.start.as_nanos()),
            plot.x(row.interval.end.as_nanos()),
        );
        let sites: Vec<String> = row
            .top
            .iter()
            .map(|(name, bytes)| format!("{name}: {}", signed_size(*bytes)))
            .collect();
        svg.titled(
            "rect",
            &[
                ("class", "spike"),
                ("x", &format!("{a:.1}")),
                ("y", &top_edge),
                ("width", &format!("{:.1}", (b - a).max(2.0))),
                ("height", &plot_height),
                ("fill", "#ff000022"),
                ("stroke", "#ff0000"),
                ("stroke-dasharray", "3,3"),
            ],
            &format!(
                "spike: {} in this interval&#10;{}",
                escape(&size(row.interval.resident_growth.unsigned_abs())),
                escape(&sites.join("\n")).replace('\n', "&#10;")
            ),
        )?;
    }
    Ok(())
}

/// The resident bytes as stacked areas, bottom group first.
fn draw_areas(svg: &mut Svg, plot: &Plot, series: &[Point]) -> io::Result<()> {
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
        let outline = series
            .iter()
            .zip(&upper)
            .chain(series.iter().zip(&lower).rev())
            .map(|(p, value)| (plot.x(p.time.as_nanos()), plot.y(*value as f64)));
        svg.titled(
            "polygon",
            &[
                ("class", "area"),
                ("data-group", GROUPS[group]),
                ("points", &points(outline)),
                ("fill", colour),
                ("fill-opacity", "0.85"),
            ],
            &escape(GROUPS[group]),
        )?;
        lower = upper;
    }
    Ok(())
}

/// The axes, with five ticks of bytes and of time.
fn draw_axes(svg: &mut Svg, plot: &Plot) -> io::Result<()> {
    let (left, top_edge) = (LEFT.to_string(), TOP.to_string());
    let bottom_edge = (TOP + Plot::HEIGHT).to_string();
    let right_edge = (LEFT + Plot::WIDTH).to_string();
    for (x1, y1, x2, y2) in [
        (&left, &bottom_edge, &right_edge, &bottom_edge),
        (&left, &top_edge, &left, &bottom_edge),
    ] {
        svg.empty(
            "line",
            &[
                ("x1", x1),
                ("y1", y1),
                ("x2", x2),
                ("y2", y2),
                ("stroke", "#333"),
            ],
        )?;
    }
    for tick in 0u8..=4 {
        let bytes = plot.top / 1.05 * f64::from(tick) / 4.0;
        let level = format!("{:.1}", plot.y(bytes));
        svg.text(
            "text",
            &[
                ("x", &format!("{:.1}", LEFT - 6.0)),
                ("y", &format!("{:.1}", plot.y(bytes) + 4.0)),
                ("text-anchor", "end"),
            ],
            &escape(&size(bytes as u64)),
        )?;
        svg.empty(
            "line",
            &[
                ("x1", &left),
                ("y1", &level),
                ("x2", &format!("{:.1}", LEFT + Plot::WIDTH)),
                ("y2", &level),
                ("stroke", "#ddd"),
            ],
        )?;
        let since = plot.span * u128::from(tick) / 4;
        // The last label ends at the plot's right edge, inside the picture.
        let anchor = if tick == 4 { "end" } else { "middle" };
        svg.text(
            "text",
            &[
                ("class", "time-tick"),
                ("x", &format!("{:.1}", plot.x(plot.t0 + since))),
                ("y", &format!("{:.1}", TOP + Plot::HEIGHT + 16.0)),
                ("text-anchor", anchor),
            ],
            &escape(&axis_time(since, plot.span)),
        )?;
    }
    Ok(())
}

/// The marks: dashed vertical lines, labelled at the top.
fn draw_marks(svg: &mut Svg, plot: &Plot, marks: &[MarkState]) -> io::Result<()> {
    let top_edge = TOP.to_string();
    let label_y = format!("{:.1}", TOP - 4.0);
    for mark in marks {
        let mx = format!("{:.1}", plot.x(mark.when.time.as_nanos()));
        svg.empty(
            "line",
            &[
                ("class", "mark"),
                ("x1", &mx),
                ("y1", &top_edge),
                ("x2", &mx),
                ("y2", &format!("{:.1}", TOP + Plot::HEIGHT)),
                ("stroke", "#555"),
                ("stroke-dasharray", "4,2"),
            ],
        )?;
        svg.text(
            "text",
            &[
                ("class", "mark-label"),
                ("x", &mx),
                ("y", &label_y),
                ("transform", &format!("rotate(-45 {mx} {label_y})")),
                ("fill", "#333"),
            ],
            &escape(&mark.text),
        )?;
    }
    Ok(())
}

/// The moment the report shows (in each capture): a red vertical line, labelled with it
/// (`peak`), its resident bytes in the tooltip.
fn draw_moment(svg: &mut Svg, plot: &Plot, view: &View) -> io::Result<()> {
    let shown = &view.shown;
    let label = match shown.moment.as_str() {
        "peak" => "peak",
        _ => "shown",
    };
    for when in &shown.moment_when {
        let mx = format!("{:.1}", plot.x(when.time.as_nanos()));
        svg.titled(
            "line",
            &[
                ("class", "moment"),
                ("x1", &mx),
                ("y1", &TOP.to_string()),
                ("x2", &mx),
                ("y2", &format!("{:.1}", TOP + Plot::HEIGHT)),
                ("stroke", "#c00"),
                ("stroke-width", "1.5"),
            ],
            &escape(&format!("{}: {}", shown.moment_label, size(when.resident))),
        )?;
        // Near the right edge the label goes left of the line, inside the picture.
        let x = plot.x(when.time.as_nanos());
        let (label_x, anchor) = if x > LEFT + Plot::WIDTH - 40.0 {
            (x - 3.0, "end")
        } else {
            (x + 3.0, "start")
        };
        svg.text(
            "text",
            &[
                ("class", "moment-label"),
                ("x", &format!("{label_x:.1}")),
                ("y", &format!("{:.1}", TOP + 12.0)),
                ("text-anchor", anchor),
                ("fill", "#c00"),
            ],
            label,
        )?;
    }
    Ok(())
}

/// One sample of a process's own counters (an `rss` line, a status snapshot).
struct Counter {
    time: u128,
    pid: u32,
    label: String,
    resident: u64,
}

/// The processes' own counters where there are samples: a dot per sample (its process and
/// moment in the tooltip), never a line across processes or between samples: what the
/// counters were between two samples is not known.
fn draw_counters(svg: &mut Svg, plot: &Plot, counters: &[Counter]) -> io::Result<()> {
    if counters.is_empty() {
        return Ok(());
    }
    svg.0.write_event(Event::Start(Svg::start(
        "g",
        &[("id", "counters"), ("fill", "#000"), ("stroke", "#000")],
    )))?;
    for counter in counters {
        svg.titled(
            "circle",
            &[
                ("class", "counter"),
                ("cx", &format!("{:.1}", plot.x(counter.time))),
                ("cy", &format!("{:.1}", plot.y(counter.resident as f64))),
                ("r", "3"),
            ],
            &escape(&format!(
                "counters of process {} ({}): {}",
                counter.pid,
                counter.label,
                size(counter.resident)
            )),
        )?;
    }
    svg.0.write_event(Event::End(BytesEnd::new("g")))
}

/// The legend, under the time axis: the groups' colours, then the counters' line.
fn draw_legend(svg: &mut Svg) -> io::Result<()> {
    let legend_y = HEIGHT - 14.0;
    let baseline = format!("{legend_y:.1}");
    let mut lx = LEFT;
    for (group, colour) in COLOURS.iter().enumerate() {
        svg.empty(
            "rect",
            &[
                ("x", &format!("{lx:.1}")),
                ("y", &format!("{:.1}", legend_y - 9.0)),
                ("width", "10"),
                ("height", "10"),
                ("fill", colour),
            ],
        )?;
        svg.text(
            "text",
            &[("x", &format!("{:.1}", lx + 14.0)), ("y", &baseline)],
            &escape(GROUPS[group]),
        )?;
        lx += 120.0;
    }
    svg.empty(
        "circle",
        &[
            ("cx", &format!("{:.1}", lx + 7.0)),
            ("cy", &format!("{:.1}", legend_y - 4.0)),
            ("r", "3"),
            ("fill", "#000"),
        ],
    )?;
    svg.text(
        "text",
        &[("x", &format!("{:.1}", lx + 18.0)), ("y", &baseline)],
        "process counters",
    )
}
