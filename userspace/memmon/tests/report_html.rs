//! `memmon report --format html` loaded in headless Chromium (Debian package
//! `chromium`): the page from a fixture capture has its chart, flame graphs and tables
//! with the fixture's names and byte counts and logged no script error; the page of a
//! 1 M-event capture is under 5 MB and its script runs without error (how fast its DOM
//! loads is measured by `make bench`: benches/html_page.rs). These tests fail, with a
//! message saying so, when Chromium is missing.

use std::path::{Path, PathBuf};

use memmon::report::{report, Format, ReportOptions};

#[path = "../benches/support/chromium.rs"]
mod chromium;
#[path = "../benches/support/generate.rs"]
mod generate;

use chromium::{attribute, dump_dom, headless};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// The binaries of the fixtures under a sysroot, as the captures name them.
fn sysroot() -> PathBuf {
    use std::io::Read;
    // Once per test binary: tests run in parallel and must not see a half-written file.
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let root = tmp("report-html-sysroot");
        std::fs::create_dir_all(root.join("host")).unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(fixture("alloc_sites.gz")).unwrap())
            .read_to_end(&mut bytes)
            .unwrap();
        let partial = root.join("host/alloc_sites.partial");
        std::fs::write(&partial, bytes).unwrap();
        std::fs::rename(&partial, root.join("host/alloc_sites")).unwrap();
        root
    })
    .clone()
}

#[test]
fn html_page_in_headless_chromium() {
    let page = tmp("report.html");
    let bytes = report(
        &[fixture("base.cap")],
        &ReportOptions {
            format: Format::Html,
            sysroot: Some(sysroot()),
            spike: Some(2 << 20),
            ..ReportOptions::default()
        },
    )
    .unwrap();
    std::fs::write(&page, &bytes).unwrap();
    let dom = dump_dom(&page, &[]);
    assert_eq!(
        attribute(&dom, "data-ready"),
        Some("true"),
        "the page's script did not run"
    );
    assert_eq!(
        attribute(&dom, "data-script-errors"),
        Some(""),
        "script errors"
    );
    // The chart: stacked areas, marks, the process's counters, the spike.
    assert!(dom.contains("id=\"rss-chart\""));
    assert!(dom.contains("class=\"area\""));
    assert!(dom.contains(">after-keep</text>"));
    assert!(dom.contains("id=\"counters\""));
    assert!(dom.contains("class=\"spike\""));
    assert!(
        dom.contains("<title>the peak, 826 ms: 11.7 MiB</title>"),
        "the peak's line"
    );
    // The moment shown first: the peak, with the end.
    assert!(
        dom.contains("<p id=\"moment\">At <b>the peak, 826 ms</b>: resident <b>11.7 MiB</b> (anon 11.1 MiB, file 652 KiB, shmem 0 B), mapped 12.0 MiB; at the end: 5.7 MiB. 3422 events, process 60;"),
        "the moment's paragraph"
    );
    // Flame graphs (in srcdoc frames) with the functions at the peak (load_table and
    // reheat ran after it).
    let flame = dom
        .find("id=\"flame-resident\"")
        .expect("the resident flame graph");
    let frame = &dom[flame
        ..dom[flame..]
            .find("</iframe>")
            .map_or(dom.len(), |e| flame + e)];
    for name in ["keep_cache", "scratch"] {
        assert!(frame.contains(name), "{name} not in the flame graph");
    }
    assert!(
        !frame.contains("load_table"),
        "load_table in the peak's flame graph"
    );
    assert!(dom.contains("id=\"flame-faults\"") && dom.contains("id=\"flame-swapin\""));
    // The tables, with byte counts.
    let sites = &dom[dom.find("id=\"sites\"").expect("the sites table")..];
    assert!(sites.contains("<td class=\"name\">keep_cache &lt; main ("));
    assert!(
        sites.contains("data-v=\"3141632\""),
        "keep_cache's 3 MiB - 1 page"
    );
    assert!(
        sites.contains("data-v=\"8384512\""),
        "scratch's 8 MiB - 1 page"
    );
    assert!(sites.contains("<td>temporary</td>"), "scratch is temporary");
    let breakdown = &dom[dom.find("id=\"breakdown\"").expect("the breakdown")..];
    let breakdown = &breakdown[..breakdown.find("</table>").unwrap()];
    assert!(breakdown.contains("anonymous mmap"));
    assert!(!breakdown.contains("/tmp/alloc_sites.table"));
    assert!(dom.contains("ok: exit of "));
}

/// What a person sees first: at 1400×1000 the page shows "Your code", the program's
/// functions with their bytes and bars, within the first 1000 pixels, and no table is
/// wider than the window. Chromium lays the page out at that size; a script added for the
/// test writes the positions into the DOM it dumps. The screenshot is kept beside
/// (`first-screen.png` in the test's target directory).
#[test]
fn first_screen_answers_at_1400_by_1000() {
    let bytes = report(
        &[fixture("base.cap")],
        &ReportOptions {
            format: Format::Html,
            sysroot: Some(sysroot()),
            ..ReportOptions::default()
        },
    )
    .unwrap();
    let page = String::from_utf8(bytes).unwrap();
    let measure = r#"<script>window.addEventListener('load', function () {
  var b = document.body, table = document.getElementById('your-code-table');
  var rows = table.tBodies[0].rows, last = rows[Math.min(rows.length, 3) - 1];
  b.setAttribute('data-answer-top', String(Math.round(table.getBoundingClientRect().top)));
  b.setAttribute('data-answer-bottom', String(Math.round(last.getBoundingClientRect().bottom)));
  b.setAttribute('data-first-function', rows[0].cells[0].textContent);
  b.setAttribute('data-bar-width', String(Math.round(rows[0].cells[1].firstChild.getBoundingClientRect().width)));
  b.setAttribute('data-page-width', String(document.documentElement.scrollWidth));
  b.setAttribute('data-sites-right', String(Math.round(document.getElementById('sites').getBoundingClientRect().right)));
});</script></body>"#;
    let measured = tmp("first-screen.html");
    std::fs::write(&measured, page.replacen("</body>", measure, 1)).unwrap();
    let dom = dump_dom(&measured, &["--hide-scrollbars", "--window-size=1400,1000"]);
    let number = |name: &str| -> i64 {
        attribute(&dom, name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in the laid-out page"))
    };
    eprintln!(
        "your code at {}..{} px, page {} px wide, sites table to {} px",
        number("data-answer-top"),
        number("data-answer-bottom"),
        number("data-page-width"),
        number("data-sites-right")
    );
    // At the peak: scratch's 8 MiB, before it freed them.
    assert_eq!(
        attribute(&dom, "data-first-function"),
        Some("scratch (report/alloc_sites.c)")
    );
    assert!(
        number("data-answer-bottom") <= 1000,
        "the answer is below the fold"
    );
    assert!(number("data-bar-width") > 0, "no bar");
    assert!(
        number("data-page-width") <= 1400,
        "the page is wider than the window"
    );
    assert!(
        number("data-sites-right") <= 1400,
        "the sites table is wider than the window"
    );
    // The screenshot a person would see, kept for looking at.
    let shot = tmp("first-screen.png");
    let screenshot = format!("--screenshot={}", shot.display());
    let status = headless(
        &measured,
        &["--hide-scrollbars", "--window-size=1400,1000", &screenshot],
    );
    assert!(status.status.success() && shot.is_file(), "no screenshot");
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn html_page_of_a_million_events() {
    let capture = tmp("million.cap");
    std::fs::write(&capture, generate::generate_capture()).unwrap();
    let page = tmp("million.html");
    let bytes = report(
        &[capture],
        &ReportOptions {
            format: Format::Html,
            ..ReportOptions::default()
        },
    )
    .unwrap();
    assert!(bytes.len() < 5_000_000, "{} bytes", bytes.len());
    std::fs::write(&page, &bytes).unwrap();
    let dom = dump_dom(&page, &[]);
    assert_eq!(attribute(&dom, "data-script-errors"), Some(""));
    // How fast it loads is make bench's (benches/html_page.rs), not a test's.
    let loaded: u64 = attribute(&dom, "data-dom-loaded-ms")
        .and_then(|ms| ms.parse().ok())
        .expect("the page recorded when its DOM loaded");
    eprintln!(
        "1 M events: page {} bytes, DOM loaded at {loaded} ms",
        bytes.len()
    );
}

#[test]
fn html_diff_page() {
    let page = tmp("diff.html");
    let bytes = report(
        &[fixture("base.cap"), fixture("grown.cap")],
        &ReportOptions {
            format: Format::Html,
            diff: true,
            sysroot: Some(sysroot()),
            ..ReportOptions::default()
        },
    )
    .unwrap();
    std::fs::write(&page, &bytes).unwrap();
    let dom = dump_dom(&page, &[]);
    assert_eq!(attribute(&dom, "data-script-errors"), Some(""));
    assert!(dom.contains("id=\"flame-diff\""));
    let sites = &dom[dom.find("id=\"diff-sites\"").expect("the site changes")..];
    assert!(sites.contains("<td>keep_cache"));
    assert!(sites.contains("+2 MiB"));
}
