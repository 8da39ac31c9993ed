//! How the reports say which moment they show, and what the peak and the end were:
//! `at the peak, 9.1 s: 147 MiB (at the end: 46 MiB)`.

use crate::report::model::moment::Moment;
use crate::report::output::text::size;
use crate::report::view::memory::Shown;

/// The peak and the end, those that are not the moment shown: `at the end: 46 MiB`,
/// `at the peak, 9.1 s: 147 MiB`; with `hint`, the end says how to show it (`--at end`).
pub fn other_moments(view: &Shown, hint: bool) -> Vec<String> {
    let mut others = Vec::new();
    let peak_shown = view.at == Moment::Peak;
    if !peak_shown && !view.peak.when.is_empty() {
        others.push(format!(
            "at {}: {}",
            view.peak.label,
            size(view.peak.resident)
        ));
    }
    if !view.at_end() {
        // The end on the peak's measure (never above it), then, when they differ, each
        // process's last state summed (what --at end shows).
        let hint = if hint { " (--at end)" } else { "" };
        if view.end_moment == view.end.resident {
            others.push(format!(
                "at {}: {}{hint}",
                view.end.label,
                size(view.end.resident)
            ));
        } else {
            others.push(format!("at {}: {}", view.end.label, size(view.end_moment)));
            others.push(format!(
                "each process's last state, summed: {}{hint}",
                size(view.end.resident)
            ));
        }
    }
    others
}

/// The moment shown with its resident bytes, then the others in parentheses:
/// `at the peak, 9.1 s: 147 MiB (at the end: 46 MiB)`.
pub fn moment_line(view: &Shown) -> String {
    let others = other_moments(view, false);
    let shown = format!("at {}: {}", view.moment_label, size(view.moment_resident));
    if others.is_empty() {
        shown
    } else {
        format!("{shown} ({})", others.join("; "))
    }
}
