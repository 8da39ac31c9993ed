//! Headless Chromium (Debian package `chromium`) on a page of `memmon report --format
//! html`, for the HTML tests and the page's load benchmark.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The Chromium command on this machine; panics, saying what to install, without one.
pub fn chromium() -> &'static str {
    for name in ["chromium", "chromium-browser"] {
        if Command::new(name).arg("--version").output().is_ok() {
            return name;
        }
    }
    panic!("Chromium is not installed: install it (Debian package chromium) to run this test");
}

/// Headless Chromium on `page`, with the options `extra` (what to do, the window size).
/// Each run gets a new, empty profile next to the page (runs in parallel must not share
/// one: a second browser on a profile in use hands its work to the first and prints
/// nothing), and no background networking (this machine's network is closed).
pub fn headless(page: &Path, extra: &[&str]) -> Output {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let profile = page.with_extension(format!(
        "profile-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile).unwrap();
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
        ])
        .args(["--disable-sync", "--disable-quic"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    output
}

/// The DOM after the page's script ran (its `data-ready` set), as headless Chromium
/// dumps it with the options `extra` (the window size); panics with Chromium's messages
/// when it failed or dumped the page before its script ran.
pub fn dump_dom(page: &Path, extra: &[&str]) -> String {
    let mut options = vec!["--virtual-time-budget=5000", "--dump-dom"];
    options.extend_from_slice(extra);
    let output = headless(page, &options);
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success() && dom.contains("data-ready=\"true\""),
        "chromium {} and dumped {} bytes{}: {}",
        output.status,
        dom.len(),
        if dom.is_empty() {
            ""
        } else {
            ", without the page's data-ready (its script did not run to the end)"
        },
        String::from_utf8_lossy(&output.stderr)
    );
    dom
}

/// The value of the first attribute `name` in `dom`.
pub fn attribute<'d>(dom: &'d str, name: &str) -> Option<&'d str> {
    let start = dom.find(&format!("{name}=\""))? + name.len() + 2;
    dom[start..].split('"').next()
}
