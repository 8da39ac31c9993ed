//! The text forms: the memory report ([`memory`], which opens with [`your_code`]), the
//! access report ([`access`]) and the diff ([`diff`]), with the sizes and the table layout they share (also used by the
//! HTML page, the summary and `memmon top`).

use std::fmt::Write;

pub mod access;
pub mod diff;
pub mod memory;
pub mod your_code;

/// `1.5 MiB`, `12 KiB`, `300 B`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `+1.5 MiB`, `-12 KiB`, `+0 B`: a change in bytes.
pub fn signed_size(bytes: i64) -> String {
    let sign = if bytes < 0 { "-" } else { "+" };
    format!("{sign}{}", size(bytes.unsigned_abs()))
}

/// A table of the text forms: right-aligned columns, each header with its width declared
/// once for the header line and the rows, then a free last column (the site).
pub struct Table<const N: usize> {
    /// Header and width of each column.
    pub columns: [(&'static str, usize); N],
    /// Header of the last column.
    pub last: &'static str,
}

impl<const N: usize> Table<N> {
    /// Writes the header line.
    pub fn header(&self, out: &mut String) -> std::fmt::Result {
        self.header_with(out, self.last)
    }

    /// Writes the header line with another last column (one laid out by the caller).
    pub fn header_with(&self, out: &mut String, last: impl std::fmt::Display) -> std::fmt::Result {
        self.line(out, self.columns.map(|(name, _)| name), last)
    }

    /// Writes one row: a cell per column, then the last column's text.
    pub fn row<C: std::fmt::Display>(
        &self,
        out: &mut String,
        cells: [C; N],
        last: impl std::fmt::Display,
    ) -> std::fmt::Result {
        self.line(out, cells, last)
    }

    fn line<C: std::fmt::Display>(
        &self,
        out: &mut String,
        cells: [C; N],
        last: impl std::fmt::Display,
    ) -> std::fmt::Result {
        out.push(' ');
        for ((_, width), cell) in self.columns.iter().zip(cells) {
            write!(out, " {cell:>width$}")?;
        }
        writeln!(out, "  {last}")
    }
}
