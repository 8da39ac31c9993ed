//! `--diff BASE NEW` as text: the change of the total, then by class and by site.

use crate::report::output::text::{signed_size, size};
use crate::report::view::diff::{Change, Diff};

/// The text form, `top` rows per table.
pub fn render(diff: &Diff, top: usize) -> String {
    let mut out = format!(
        "memmon report --diff: resident {}\n",
        signed_size(diff.total)
    );
    out.push_str("\nBy class\n");
    for change in diff.classes.iter().take(top) {
        out.push_str(&format!(
            "  {:>10} {:>10}  {}  ({} -> {})\n",
            signed_size(change.resident),
            mapped(change),
            change.name,
            size(change.base),
            size(change.new)
        ));
    }
    out.push_str("\nBy site\n");
    for change in diff.sites.iter().take(top) {
        out.push_str(&format!(
            "  {:>10} {:>16} {:>8}  {}  ({} -> {})\n",
            signed_size(change.resident),
            mapped(change),
            format!("{:+} faults", change.faults),
            change.name,
            size(change.base),
            size(change.new)
        ));
    }
    out
}

/// `+1 MiB mapped`, or nothing when the mapped bytes did not change.
fn mapped(change: &Change) -> String {
    if change.mapped != 0 {
        format!("{} mapped", signed_size(change.mapped))
    } else {
        String::new()
    }
}
