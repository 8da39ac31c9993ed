//! `--format folded` (flamegraph.pl / inferno input) and `--format svg` (an inferno flame
//! graph), weighted by resident bytes, faults, mapped bytes or swapped-in bytes. The flame
//! graph is coloured by whose code each frame is: the program's, its own libraries', the
//! system's, or unknown ([`Whose`]). Frames are named as the view names them (short
//! unless `--full-names`).

use std::collections::HashMap;
use std::fmt::Write as _;

use inferno::flamegraph::FuncFrameAttrsMap;

use crate::report::view::memory::{SiteRow, View};
use crate::report::view::own_code::Whose;

/// The colours of [`Whose`] in flame graphs and the page's legend: the program green, its
/// own libraries teal, the system's sand, unknown grey.
pub const WHOSE_COLOURS: [(Whose, &str); 4] = [
    (Whose::Program, "#5cb85c"),
    (Whose::OwnLibrary, "#4fb3bf"),
    (Whose::System, "#e0c48c"),
    (Whose::Unknown, "#c8c8c8"),
];

/// What the width of a frame measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weight {
    /// Resident bytes at the view's moment.
    #[default]
    Resident,
    /// Faults over the capture.
    Faults,
    /// Mapped bytes at the view's moment.
    Mapped,
    /// Bytes brought back from swap.
    Swapin,
}

impl Weight {
    /// The weight of a site row.
    pub fn of(self, row: &SiteRow) -> u64 {
        match self {
            Weight::Resident => row.resident,
            Weight::Faults => row.faults.total(),
            Weight::Mapped => row.mapped,
            Weight::Swapin => row.swapped_in,
        }
    }

    /// The unit, for the flame graph's legend.
    pub fn unit(self) -> &'static str {
        match self {
            Weight::Faults => "faults",
            _ => "bytes",
        }
    }

    /// The name (`resident`, `faults`, `mapped`, `swapin`).
    pub fn name(self) -> &'static str {
        match self {
            Weight::Resident => "resident",
            Weight::Faults => "faults",
            Weight::Mapped => "mapped",
            Weight::Swapin => "swapin",
        }
    }
}

fn clean(name: &str) -> String {
    name.replace(';', ":").replace('\n', " ")
}

/// Folded stacks: `outer;...;inner WEIGHT`, one line per site with a non-zero weight
/// (`inner;...;outer WEIGHT` for a reversed view, [`View::reversed`]).
pub fn folded_lines(view: &View, weight: Weight) -> Vec<String> {
    ordered_lines(view, weight, view.reversed)
}

fn ordered_lines(view: &View, weight: Weight, reversed: bool) -> Vec<String> {
    let mut lines: Vec<String> = view
        .sites
        .iter()
        .filter_map(|row| {
            let value = weight.of(row);
            (value > 0).then(|| {
                let mut names: Vec<String> =
                    row.shown.iter().rev().map(|f| clean(&f.function)).collect();
                if reversed {
                    names.reverse();
                }
                format!("{} {value}", names.join(";"))
            })
        })
        .collect();
    lines.sort();
    lines
}

/// Renders folded stacks.
pub fn render_folded(view: &View, weight: Weight) -> String {
    let mut out = folded_lines(view, weight).join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Renders an SVG flame graph through inferno.
pub fn render_svg(view: &View, weight: Weight, title: &str) -> Result<Vec<u8>, String> {
    render_svg_width(view, weight, title, None)
}

/// Renders an SVG flame graph of a fixed width in pixels (`None`: fills its container).
pub fn render_svg_width(
    view: &View,
    weight: Weight,
    title: &str,
    width: Option<usize>,
) -> Result<Vec<u8>, String> {
    // Outermost first: inferno reverses them itself for a reversed view.
    let lines = ordered_lines(view, weight, false);
    if lines.is_empty() {
        return Err(format!(
            "nothing to draw: no site has {} {}",
            weight.name(),
            weight.unit()
        ));
    }
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = weight.unit().to_owned();
    options.name_type = "Site:".to_owned();
    options.image_width = width;
    options.func_frameattrs = whose_classes(view);
    // Colours by a hash of the names, not at random: the same view draws the same bytes
    // (memmon fleet's engines give identical files).
    options.deterministic = true;
    options.reverse_stack_order = view.reversed;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)
        .map_err(|error| format!("cannot draw the flame graph: {error}"))?;
    Ok(with_whose_colours(out))
}

/// Each frame's class (`whose-program`, ...), by its function's name as the folded lines
/// give it: the first site that names a function decides.
fn whose_classes(view: &View) -> FuncFrameAttrsMap {
    let mut classes: HashMap<String, Whose> = HashMap::new();
    for row in &view.sites {
        for (frame, whose) in row.shown.iter().zip(&row.whose) {
            classes.entry(clean(&frame.function)).or_insert(*whose);
        }
    }
    let mut lines = String::new();
    for (function, whose) in classes {
        // The attributes file's format: the name, a tab, `name=value` pairs.
        if !function.contains(['\t', '\n']) {
            let _ = writeln!(lines, "{function}\tclass=whose-{}", whose.as_str());
        }
    }
    FuncFrameAttrsMap::from_reader(lines.as_bytes()).unwrap_or_default()
}

/// The flame graph with each class's frames filled with its colour: the `fill` of the
/// first `rect` after each `<g class="whose-...">` is rewritten (as an attribute, which
/// the flame graph's search still overrides when it highlights a frame).
fn with_whose_colours(svg: Vec<u8>) -> Vec<u8> {
    const OPEN: &str = "<g class=\"whose-";
    let text = String::from_utf8_lossy(&svg);
    let mut out = String::with_capacity(text.len());
    let mut rest: &str = &text;
    while let Some(at) = rest.find(OPEN) {
        let (before, group) = rest.split_at(at);
        out.push_str(before);
        let class = &group[OPEN.len()..];
        let colour = WHOSE_COLOURS
            .iter()
            .find(|(whose, _)| class.starts_with(&format!("{}\"", whose.as_str())))
            .map(|(_, colour)| *colour);
        let fill = group
            .find("fill=\"")
            .filter(|&f| !group[..f].contains("</g>"));
        match (colour, fill) {
            (Some(colour), Some(fill)) => {
                let value = fill + "fill=\"".len();
                let end = group[value..].find('"').map_or(value, |e| value + e);
                out.push_str(&group[..value]);
                out.push_str(colour);
                rest = &group[end..];
            }
            _ => {
                out.push_str(&group[..OPEN.len()]);
                rest = &group[OPEN.len()..];
            }
        }
    }
    out.push_str(rest);
    out.into_bytes()
}
