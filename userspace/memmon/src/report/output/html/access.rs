//! The "Access sampling" section of `--format html`: the generations table and the
//! sites with their cold pages ([`crate::report::view::access`]), present only when the captures
//! have access sampling.

use std::fmt::Write;

use crate::report::output::html::markup::{escape, number_cell};
use crate::report::symbolize::symbols::name;
use crate::report::view::access::AccessView;

fn number(value: u64) -> String {
    number_cell(value, &value.to_string())
}

/// The section, or nothing without sampling.
pub fn section(view: &AccessView, top: usize) -> String {
    if view.generations.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Access sampling</h2><p>{} page accesses sampled in {} generations. Cold: the page had gone {} whole generations without being accessed or brought in (<code>--cold {}</code>); hot: used in the previous generation too.</p>",
        view.accesses,
        view.generations.len(),
        view.cold_after,
        view.cold_after
    );
    out.push_str(
        "<h3>Sites that touch cold pages</h3><table id=\"access-sites\"><thead><tr><th>function</th><th>file:line</th><th>callers</th><th class=\"n\">cold pages</th><th class=\"n\">pages</th><th class=\"n\">accesses</th><th class=\"n\">generations</th></tr></thead><tbody>",
    );
    for row in view.sites.iter().take(top) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td>{}{}{}{}</tr>",
            escape(name::function(&row.shown)),
            escape(&name::location(&row.shown).unwrap_or_default()),
            escape(&name::callers(&row.shown)),
            number(row.cold_pages),
            number(row.pages),
            number(row.accesses),
            number(row.generations.len() as u64),
        );
    }
    out.push_str(
        "</tbody></table><h3>Generations</h3><table id=\"access-generations\"><thead><tr><th class=\"n\">gen</th><th class=\"n\">armed</th><th class=\"n\">resident</th><th class=\"n\">resident cold</th><th class=\"n\">touched</th><th class=\"n\">hot</th><th class=\"n\">warm</th><th class=\"n\">cold</th><th>sites (pages, cold)</th></tr></thead><tbody>",
    );
    for row in &view.generations {
        let sites: Vec<String> = row
            .sites
            .iter()
            .take(3)
            .map(|s| format!("{} {} ({})", s.site, s.pages, s.cold))
            .collect();
        let _ = write!(
            out,
            "<tr>{}{}{}{}{}{}{}{}<td>{}</td></tr>",
            number(row.n),
            number(row.armed),
            number(row.resident),
            number(row.resident_cold),
            number(row.touched),
            number(row.hot),
            number(row.warm),
            number(row.cold),
            escape(&sites.join(", "))
        );
    }
    out.push_str("</tbody></table>");
    out
}
