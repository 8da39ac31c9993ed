//! The markup the page's sections share: the escape of text and attribute values, and
//! the table cell of a number (its value kept in `data-v` for sorting).

/// Escapes text for HTML and SVG (content and attributes): `&`, `<`, `>`, `"` and `'`.
pub fn escape(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}

/// A right-aligned cell showing `text`, sorted by `value`.
pub fn number_cell(value: u64, text: &str) -> String {
    format!("<td class=\"n\" data-v=\"{value}\">{}</td>", escape(text))
}
