//! The markup the page's sections share: the escape of text and attribute values, and
//! the table cell of a number (its value kept in `data-v` for sorting).

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

/// A right-aligned cell showing `text`, sorted by `value`.
pub fn number_cell(value: u64, text: &str) -> String {
    format!("<td class=\"n\" data-v=\"{value}\">{}</td>", escape(text))
}
