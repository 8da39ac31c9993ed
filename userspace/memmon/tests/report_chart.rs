//! The HTML page's chart and header (issue 50): the axis on the header's clock, the
//! processes' counters only where there are samples, the peak's label inside the
//! picture, and the end never above the peak. Hand-written captures.

use std::path::PathBuf;

use memmon::report::{report, Format, ReportOptions};

const MIB: u64 = 1 << 20;

/// A compiler driver (100, 1 MiB) runs cc1plus (101: 8 MiB, held until its exit), then as
/// (102: 2 MiB, held until its exit), then exits. They peak together at 9 MiB (the driver
/// and cc1plus); each one's last state sums to 11 MiB, but they never held that at once:
/// at the end, just before the driver's exit, 1 MiB. The capture starts at 100 s on its
/// clock and ends 4 s later; cc1plus's counters are sampled at a mark and at its exit.
const DRIVER: &str = "\
# memmon-capture 1
# start 100.000000000
# pids 100
100.100000000 100/100 mmap addr=0x0 len=1048576 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7e0000000000
100.200000000 100/100 fault type=anon access=W addr=0x7e0000000000 ip=0x401010 pages=256
100.300000000 100/100 fork child=101 watched=1
100.400000000 101/101 exec comm=cc1plus filename=/usr/lib/cc1plus
100.500000000 101/101 mmap addr=0x0 len=8388608 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
101.000000000 101/101 fault type=anon access=W addr=0x7f0000000000 ip=0x401020 pages=1024
101.100000000 100/100 mark text=compiling
101.100000001 101/101 rss anon=4194304 file=0 shmem=0 swap=0 peak=4194304 at=mark
102.000000000 101/101 fault type=anon access=W addr=0x7f0000400000 ip=0x401020 pages=1024
102.500000000 101/101 rss anon=8388608 file=0 shmem=0 swap=0 peak=8388608 at=exit
102.500000001 101/101 exit code=0
102.600000000 100/100 fork child=102 watched=1
102.700000000 102/102 exec comm=as filename=/usr/bin/as
102.800000000 102/102 mmap addr=0x0 len=2097152 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f1000000000
103.000000000 102/102 fault type=anon access=W addr=0x7f1000000000 ip=0x401030 pages=512
103.500000000 102/102 exit code=0
104.000000000 100/100 exit code=0
";

/// One process whose peak is its last moment, 3.9 s into a 4 s capture: at the chart's
/// right edge.
const LATE_PEAK: &str = "\
# memmon-capture 1
# start 100.000000000
# pids 7
100.100000000 7/7 mmap addr=0x0 len=1048576 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7e0000000000
101.000000000 7/7 fault type=anon access=W addr=0x7e0000000000 ip=0x401010 pages=16
103.900000000 7/7 fault type=anon access=W addr=0x7e0000010000 ip=0x401010 pages=240
104.000000000 7/7 exit code=0
";

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-chart");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn run(path: &PathBuf, format: Format) -> String {
    let options = ReportOptions {
        format,
        debuginfod: None,
        ..ReportOptions::default()
    };
    String::from_utf8(report(std::slice::from_ref(path), &options).unwrap()).unwrap()
}

/// The texts of the elements of `class` in `svg`, in order.
fn texts<'a>(svg: &'a str, class: &str) -> Vec<&'a str> {
    let marker = format!("class=\"{class}\"");
    svg.match_indices(&marker)
        .filter_map(|(at, _)| {
            let rest = &svg[at..];
            let start = rest.find('>')? + 1;
            let end = rest.find('<')?;
            Some(&rest[start..end])
        })
        .collect()
}

#[test]
fn the_end_is_never_above_the_peak() {
    let path = write("the_end_is_never_above_the_peak.cap", DRIVER);
    let text = run(&path, Format::Text);
    assert_eq!(
        text.lines().nth(1).unwrap(),
        "at the peak of the 3 processes together, 2.0 s: resident 9 MiB (anon 9 MiB, file 0 B, shmem 0 B), swapped 0 B, mapped 9 MiB; at the end: 1 MiB; each process's last state, summed: 11 MiB (--at end)"
    );
    let json: serde_json::Value = serde_json::from_str(&run(&path, Format::Json)).unwrap();
    assert_eq!(json["peak"]["resident"], 9 * MIB);
    assert_eq!(json["end_moment"], MIB);
    assert_eq!(json["end"]["resident"], 11 * MIB);
    let page = run(&path, Format::Html);
    let expected = memmon::report::output::html::markup::escape(
        "at the end: 1 MiB; each process's last state, summed: 11 MiB.",
    );
    let moment = &page[page.find("id=\"moment\"").unwrap()..];
    let moment = &moment[..moment.find("</p>").unwrap()];
    assert!(
        moment.contains(&format!(
            "resident <b>9 MiB</b> (anon 9 MiB, file 0 B, shmem 0 B), mapped 9 MiB; {expected}"
        )),
        "{moment}"
    );
}

#[test]
fn the_axis_counts_from_the_capture_start_as_the_header_does() {
    let page = run(
        &write(
            "the_axis_counts_from_the_capture_start_as_the_header_does.cap",
            DRIVER,
        ),
        Format::Html,
    );
    // 100 s to 104 s on the capture's clock: 0 to 4 s, as the header's 2.0 s.
    assert_eq!(
        texts(&page, "time-tick"),
        ["0.00 s", "1.00 s", "2.00 s", "3.00 s", "4.00 s"]
    );
    assert!(!page.contains("100.000 s") && !page.contains("104.000 s"));
}

#[test]
fn the_counters_are_drawn_where_they_were_sampled() {
    let page = run(
        &write("the_counters_are_drawn_where_they_were_sampled.cap", DRIVER),
        Format::Html,
    );
    let chart = &page[page.find("id=\"rss-chart\"").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    // Two samples of cc1plus: two dots, no line between them (nor across processes).
    assert!(chart.contains("<g id=\"counters\""));
    assert_eq!(chart.matches("class=\"counter\"").count(), 2);
    assert!(!chart.contains("polyline"), "{chart}");
    assert!(
        chart
            .contains("<title>counters of process 101 (mark &quot;compiling&quot;): 4 MiB</title>"),
        "{chart}"
    );
    assert!(
        chart.contains("<title>counters of process 101 (exit of 101): 8 MiB</title>"),
        "{chart}"
    );
}

#[test]
fn the_peak_label_stays_inside_the_picture() {
    let page = run(
        &write(
            "the_peak_label_stays_inside_the_picture-late.cap",
            LATE_PEAK,
        ),
        Format::Html,
    );
    let at = page.find("class=\"moment-label\"").unwrap();
    let label = &page[at..][..page[at..].find("</text>").unwrap()];
    // At 3.9 s of 4 s (x 918.5 of 960): left of the line, ending at it.
    assert!(label.contains("x=\"915.5\""), "{label}");
    assert!(label.contains("text-anchor=\"end\""), "{label}");
    assert!(label.ends_with(">peak"), "{label}");
    // Earlier in the picture, right of the line as before.
    let page = run(
        &write("the_peak_label_stays_inside_the_picture.cap", DRIVER),
        Format::Html,
    );
    let at = page.find("class=\"moment-label\"").unwrap();
    assert!(page[at..][..200].contains("text-anchor=\"start\""));
}

#[test]
fn the_series_counts_a_forked_childs_copy_as_the_peak_does() {
    // The driver's 1 MiB is in its child's copy from the fork to the exec: the chart's
    // series is never below what the driver holds, and its highest is the peak's 9 MiB.
    let mut replay = memmon::report::Replay::new(memmon::report::ReplayOptions::default());
    replay.capture(DRIVER.as_bytes()).unwrap();
    let analysis = replay.finish();
    let totals: Vec<u64> = analysis
        .series
        .iter()
        .map(|point| point.bytes.iter().sum())
        .collect();
    assert_eq!(totals.iter().max(), Some(&(9 * MIB)));
    let after_exec: Vec<u64> = analysis
        .series
        .iter()
        .filter(|point| point.time.to_string().as_str() >= "100.400000000")
        .filter(|point| point.time.to_string().as_str() < "104.000000000")
        .map(|point| point.bytes.iter().sum())
        .collect();
    assert!(
        after_exec.iter().all(|&bytes| bytes >= MIB),
        "{after_exec:?}"
    );
}
