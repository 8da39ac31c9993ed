//! How fast the HTML page of `memmon report` loads: the page of the generated 1 M-event
//! capture, opened three times in headless Chromium (Debian package `chromium`); prints
//! the DOM's load time of each run (the page's own `performance.now()` at
//! DOMContentLoaded) against the goal of 3 s. Run with `cargo bench -p memmon --bench
//! html_page` (`make bench` does; see docs/performance.md).

#[path = "support/chromium.rs"]
mod chromium;
#[path = "support/generate.rs"]
mod generate;

use memmon::report::{report, Format, ReportOptions};

/// The goal: the DOM of the 1 M-event page loaded within this many milliseconds.
const GOAL_MS: u64 = 3000;

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this once too.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(dir).unwrap();
    let capture = dir.join("html-bench.cap");
    std::fs::write(&capture, generate::generate_capture()).unwrap();
    let options = ReportOptions {
        format: Format::Html,
        ..ReportOptions::default()
    };
    let page = report(&[capture], &options).unwrap();
    let path = dir.join("html-bench.html");
    std::fs::write(&path, &page).unwrap();
    let mut loads = Vec::new();
    for _ in 0..3 {
        let dom = chromium::dump_dom(&path, &[]);
        let loaded: u64 = chromium::attribute(&dom, "data-dom-loaded-ms")
            .and_then(|ms| ms.parse().ok())
            .expect("the page recorded when its DOM loaded");
        loads.push(loaded);
    }
    loads.sort_unstable();
    let median = loads[1];
    println!(
        "html page of {} events: {} bytes, DOM loaded at {loads:?} ms (median {median} ms, goal {GOAL_MS} ms: {})",
        generate::EVENTS,
        page.len(),
        if median < GOAL_MS { "met" } else { "NOT met" }
    );
}
