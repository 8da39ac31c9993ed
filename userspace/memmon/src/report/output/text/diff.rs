//! `--diff BASE NEW` as text: the change of the total and the moment of each side, then
//! by class and by site.

use crate::report::output::moment::moment_line;
use crate::report::output::text::{signed_size, size};
use crate::report::view::diff::{Change, Diff};

/// The text form, `top` rows per table.
pub fn render(diff: &Diff, top: usize) -> String {
    let each = if diff.base.moment == diff.new.moment {
        match diff.base.moment.as_str() {
            "peak" => ", each at its peak".to_owned(),
            "end" => ", each at its end".to_owned(),
            moment => format!(", each at {moment}"),
        }
    } else {
        String::new()
    };
    let mut out = format!(
        "memmon report --diff: resident {}, NEW against BASE{each}\nBASE {}\nNEW  {}\n",
        signed_size(diff.total),
        moment_line(&diff.base),
        moment_line(&diff.new)
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
