//! `--format folded` (flamegraph.pl / inferno input) and `--format svg` (an inferno flame
//! graph), weighted by resident bytes, faults, mapped bytes or swapped-in bytes.

use crate::report::view::memory::{SiteRow, View};

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

/// Folded stacks: `outer;...;inner WEIGHT`, one line per site with a non-zero weight.
pub fn folded_lines(view: &View, weight: Weight) -> Vec<String> {
    let mut lines: Vec<String> = view
        .sites
        .iter()
        .filter_map(|row| {
            let value = weight.of(row);
            (value > 0).then(|| {
                let names: Vec<String> = row
                    .frames
                    .iter()
                    .rev()
                    .map(|f| clean(&f.function))
                    .collect();
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
    let lines = folded_lines(view, weight);
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
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)
        .map_err(|error| format!("cannot draw the flame graph: {error}"))?;
    Ok(out)
}
