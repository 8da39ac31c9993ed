//! The moment a report shows: the peak by default (the highest resident memory of the
//! capture's live processes together), the end, a mark or a time (`--at`), on hand-written
//! captures whose peak is well above their end (as a runtime that frees its heap before
//! it exits), and the peak the replay finds in one pass against a naive replay of every
//! prefix of random captures.

use std::path::PathBuf;

use memmon::report::model::moment::{Moment, MomentError};
use memmon::report::model::picture::Picture;
use memmon::report::model::replay::{Replay, ReplayOptions};
use memmon::report::view::memory::{GroupBy, SiteRow, View};
use memmon::report::{prepare, report, Format, ReportOptions};

const MIB: u64 = 1 << 20;

/// One process: 8 MiB of work (prog+0x1010, mapped by prog+0x1100) and 1 MiB kept
/// (prog+0x1020); the work is unmapped before the exit. Peak 9 MiB at 1.31 s (310 ms
/// after the start), end 1 MiB.
const FREES_BEFORE_EXIT: &str = "\
# memmon-capture 1
# start 1.000000000
# pids 100
# snapshot maps 100 1.000000000 start
#| 00400000-00401000 r--p 00000000 00:03 5 /bin/prog
#| 00401000-00402000 r-xp 00001000 00:03 5 /bin/prog
#| 7ffc0000-7ffc2000 rw-p 00000000 00:00 0 [stack]
1.100000000 100/100 mmap addr=0x0 len=8388608 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000 stack=0x401100,0x401f00
1.200000000 100/100 fault type=anon access=W addr=0x7f0000000000 ip=0x401010 pages=512 stack=0x401010,0x401100,0x401f00
1.210000000 100/100 fault type=anon access=W addr=0x7f0000200000 ip=0x401010 pages=512 stack=0x401010,0x401100,0x401f00
1.220000000 100/100 fault type=anon access=W addr=0x7f0000400000 ip=0x401010 pages=512 stack=0x401010,0x401100,0x401f00
1.230000000 100/100 fault type=anon access=W addr=0x7f0000600000 ip=0x401010 pages=512 stack=0x401010,0x401100,0x401f00
1.300000000 100/100 mmap addr=0x0 len=1048576 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f1000000000 stack=0x401200,0x401f00
1.310000000 100/100 fault type=anon access=W addr=0x7f1000000000 ip=0x401020 pages=256 stack=0x401020,0x401200,0x401f00
1.400000000 100/100 mark text=working
2.000000000 100/100 munmap addr=0x7f0000000000 len=8388608 ret=0 stack=0x401300,0x401f00
2.100000000 100/100 mark text=freed
2.200000000 100/100 rss anon=1048576 file=0 shmem=0 swap=0 peak=9437184 at=exit
2.200000001 100/100 exit code=0
";

/// A parent (100) with 1 MiB (prog+0x1010) forks a child (101), which brings in 4 MiB
/// (prog+0x1030) and exits; the parent then brings in 2 MiB more and unmaps it all before
/// its exit. Together they peak at 6 MiB at 1.5 s (the child 5 MiB with its copy of the
/// parent's, the parent 1 MiB); the end (each one's last state) is 5 MiB, the child's.
const TWO_PROCESSES: &str = "\
# memmon-capture 1
# start 1.000000000
# pids 100
# snapshot maps 100 1.000000000 start
#| 00400000-00401000 r--p 00000000 00:03 5 /bin/prog
#| 00401000-00402000 r-xp 00001000 00:03 5 /bin/prog
1.100000000 100/100 mmap addr=0x0 len=8388608 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000 stack=0x401100
1.200000000 100/100 fault type=anon access=W addr=0x7f0000000000 ip=0x401010 pages=256 stack=0x401010,0x401100
1.300000000 100/100 fork child=101 watched=1
1.400000000 101/101 fault type=anon access=W addr=0x7f0000200000 ip=0x401030 pages=256 stack=0x401030,0x401100
1.500000000 101/101 fault type=anon access=W addr=0x7f0000400000 ip=0x401030 pages=768 stack=0x401030,0x401100
1.600000000 101/101 exit code=0
1.700000000 100/100 fault type=anon access=W addr=0x7f0000200000 ip=0x401010 pages=512 stack=0x401010,0x401100
1.800000000 100/100 munmap addr=0x7f0000000000 len=8388608 ret=0
1.900000000 100/100 exit code=0
";

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-peak");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn options(at: Option<Moment>) -> ReportOptions {
    ReportOptions {
        at,
        debuginfod: None,
        ..ReportOptions::default()
    }
}

fn view(paths: &[PathBuf], at: Option<Moment>) -> View {
    prepare(paths, &options(at)).unwrap().view
}

fn text(paths: &[PathBuf], options: &ReportOptions) -> String {
    String::from_utf8(report(paths, options).unwrap()).unwrap()
}

/// (function chain, resident bytes) of the rows with resident bytes.
fn resident_rows(view: &View) -> Vec<(String, u64)> {
    view.sites
        .iter()
        .filter(|row| row.resident > 0)
        .map(|row| (row.chain(8), row.resident))
        .collect()
}

fn row<'v>(view: &'v View, chain: &str) -> &'v SiteRow {
    view.sites
        .iter()
        .find(|row| row.chain(8) == chain)
        .unwrap_or_else(|| panic!("no row {chain}"))
}

#[test]
fn the_peak_by_default() {
    let capture = write("frees.cap", FREES_BEFORE_EXIT);
    let view = view(std::slice::from_ref(&capture), None);
    assert_eq!(view.shown.moment, "peak");
    assert_eq!(view.shown.moment_label, "the peak, 310 ms");
    assert_eq!(view.totals.anon, 9 * MIB);
    assert_eq!(view.totals.resident(), 9 * MIB);
    assert_eq!(view.shown.moment_resident, 9 * MIB);
    assert_eq!(view.shown.peak.resident, 9 * MIB);
    assert_eq!(view.shown.end.resident, MIB);
    let when = &view.shown.moment_when;
    assert_eq!(when.len(), 1);
    assert_eq!(when[0].time.to_string(), "1.310000000");
    assert_eq!(when[0].since_start_ns, 310_000_000);
    assert_eq!(
        resident_rows(&view),
        [
            (
                "prog+0x1010 < prog+0x1100 < prog+0x1f00".to_owned(),
                8 * MIB
            ),
            ("prog+0x1020 < prog+0x1200 < prog+0x1f00".to_owned(), MIB),
        ]
    );
    // Mapped at the peak: both regions (the start snapshot's 8 KiB of /bin/prog and the
    // stack's 8 KiB too).
    assert_eq!(view.mapped, 9 * MIB + 16 * 1024);
    assert_eq!(row(&view, "prog+0x1100 < prog+0x1f00").mapped, 8 * MIB);
    // The work's memory is temporary (released before the end), whatever the moment.
    let work = row(&view, "prog+0x1010 < prog+0x1100 < prog+0x1f00");
    assert_eq!(work.released, 8 * MIB);
    assert_eq!(
        work.lifetime,
        memmon::report::view::memory::Lifetime::Temporary
    );
    // "Your code" and the RSS tree are the peak's too.
    assert_eq!(view.your_code.functions[0].resident, 8 * MIB);
    assert_eq!(view.tree.iter().map(|r| r.resident).sum::<u64>(), 9 * MIB);

    // `--at peak` is the default, byte for byte, in every format.
    for format in [Format::Text, Format::Json, Format::Folded, Format::Pprof] {
        let paths = std::slice::from_ref(&capture);
        let default = report(
            paths,
            &ReportOptions {
                format,
                ..options(None)
            },
        )
        .unwrap();
        let peak = report(
            paths,
            &ReportOptions {
                format,
                ..options(Some(Moment::Peak))
            },
        )
        .unwrap();
        assert!(default == peak, "{format:?}");
    }
}

#[test]
fn the_header_says_the_moment_and_the_others() {
    let capture = write("frees-header.cap", FREES_BEFORE_EXIT);
    let paths = std::slice::from_ref(&capture);
    let lines = |at: Option<Moment>| -> Vec<String> {
        text(paths, &options(at))
            .lines()
            .take(2)
            .map(str::to_owned)
            .collect()
    };
    let first = "memmon report: 12 events, process 100; sites from call stacks";
    assert_eq!(
        lines(None),
        [
            first,
            "at the peak, 310 ms: resident 9 MiB (anon 9 MiB, file 0 B, shmem 0 B), swapped 0 B, mapped 9.0 MiB; at the end: 1 MiB (--at end)"
        ]
    );
    assert_eq!(
        lines(Some(Moment::End)),
        [
            first,
            "at the end (each process's last state before it released its memory): resident 1 MiB (anon 1 MiB, file 0 B, shmem 0 B), swapped 0 B, mapped 1.0 MiB; at the peak, 310 ms: 9 MiB"
        ]
    );
    assert_eq!(
        lines(Some(Moment::parse("freed"))),
        [
            first,
            "at mark \"freed\", 1.1 s: resident 1 MiB (anon 1 MiB, file 0 B, shmem 0 B), swapped 0 B, mapped 1.0 MiB; at the peak, 310 ms: 9 MiB; at the end: 1 MiB (--at end)"
        ]
    );
    assert_eq!(
        lines(Some(Moment::parse("250ms")))[1],
        "at 250 ms: resident 8 MiB (anon 8 MiB, file 0 B, shmem 0 B), swapped 0 B, mapped 8.0 MiB; at the peak, 310 ms: 9 MiB; at the end: 1 MiB (--at end)"
    );
    // JSON: the moment shown, the peak and the end.
    let json: serde_json::Value = serde_json::from_slice(
        &report(
            paths,
            &ReportOptions {
                format: Format::Json,
                ..options(None)
            },
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(json["moment"], "peak");
    assert_eq!(json["moment_label"], "the peak, 310 ms");
    assert_eq!(json["moment_resident"], 9 * MIB);
    assert_eq!(json["peak"]["resident"], 9 * MIB);
    assert_eq!(json["peak"]["when"][0]["since_start_ns"], 310_000_000);
    assert_eq!(json["peak"]["when"][0]["time"], "1.310000000");
    assert_eq!(json["end"]["resident"], MIB);
    assert_eq!(json["end"]["anon"], MIB);
    // The HTML page says it in its first paragraph.
    let html = text(
        paths,
        &ReportOptions {
            format: Format::Html,
            ..options(None)
        },
    );
    let first_paragraph = html.split("<p id=\"moment\">").nth(1).unwrap();
    assert!(
        first_paragraph.starts_with(
            "At <b>the peak, 310 ms</b>: resident <b>9 MiB</b> (anon 9 MiB, file 0 B, shmem 0 B), mapped 9.0 MiB; at the end: 1 MiB. 12 events, process 100;"
        ),
        "{first_paragraph}"
    );
    let summary = memmon::report::output::summary::summary(
        &memmon::report::analyze(paths, ReplayOptions::default()).unwrap(),
    );
    assert!(
        summary.contains("\nmemmon: resident growth while watched, at the peak, 310 ms: 9 MiB (anon 9 MiB, file 0 B, shmem 0 B), 0 B swapped out; at the end: 1 MiB\nmemmon: top sites by resident bytes at the peak, 310 ms:\n"),
        "{summary}"
    );
}

#[test]
fn at_the_end_a_mark_and_a_time() {
    let capture = write("frees-moments.cap", FREES_BEFORE_EXIT);
    let paths = std::slice::from_ref(&capture);
    let end = view(paths, Some(Moment::End));
    assert_eq!(end.shown.moment, "end");
    assert_eq!(
        resident_rows(&end),
        [("prog+0x1020 < prog+0x1200 < prog+0x1f00".to_owned(), MIB)]
    );
    assert!(end.shown.moment_when.is_empty());
    let working = view(paths, Some(Moment::parse("working")));
    assert_eq!(working.shown.moment, "mark \"working\"");
    assert_eq!(working.totals.resident(), 9 * MIB);
    // A time: the state after the last event at or before it.
    for (at, want) in [
        ("0ms", 0),
        ("199ms", 0),
        ("200ms", 2 * MIB),
        ("0.215s", 4 * MIB),
        ("999ms", 9 * MIB),
        ("1000ms", MIB),
        ("1.2s", MIB),
    ] {
        let shown = view(paths, Some(Moment::parse(at)));
        assert_eq!(shown.totals.resident(), want, "--at {at}");
        assert_eq!(shown.shown.moment_when[0].resident, want, "--at {at}");
    }
    // After the last event (1.2 s after the start): an error that says when it ends.
    let error = prepare(paths, &options(Some(Moment::parse("1500ms"))))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(error, "--at 1.5 s: the capture ends 1.2 s after its start");
    let error = prepare(paths, &options(Some(Moment::parse("nope"))))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        error,
        "no mark \"nope\" in the capture (marks: \"working\", \"freed\")"
    );
}

#[test]
fn moments_parse() {
    assert_eq!(Moment::parse("peak"), Moment::Peak);
    assert_eq!(Moment::parse("end"), Moment::End);
    assert_eq!(Moment::parse("9.1s"), Moment::Time(9_100_000_000));
    assert_eq!(Moment::parse("250ms"), Moment::Time(250_000_000));
    assert_eq!(Moment::parse("100us"), Moment::Time(100_000));
    assert_eq!(Moment::parse("5000ns"), Moment::Time(5000));
    // Without a unit, or with another, it is a mark's text.
    for mark in ["after-load", "2", "3h", "s", "1.2.3s", ""] {
        assert_eq!(Moment::parse(mark), Moment::Mark(mark.to_owned()), "{mark}");
    }
}

#[test]
fn several_processes_peak_together() {
    let capture = write("two.cap", TWO_PROCESSES);
    let paths = std::slice::from_ref(&capture);
    let peak = view(paths, None);
    assert_eq!(
        peak.shown.moment_label,
        "the peak of the 2 processes together, 500 ms"
    );
    assert_eq!(peak.totals.resident(), 6 * MIB);
    assert_eq!(peak.shown.end.resident, 5 * MIB);
    // The parent's 1 MiB is in the child's copy too.
    assert_eq!(
        resident_rows(&peak),
        [
            ("prog+0x1030 < prog+0x1100".to_owned(), 4 * MIB),
            ("prog+0x1010 < prog+0x1100".to_owned(), 2 * MIB),
        ]
    );
    // Grouped by process at the peak, and at the end.
    let grouped = |at: Option<Moment>| -> Vec<(String, u64)> {
        let options = ReportOptions {
            group_by: Some(GroupBy::Process),
            ..options(at)
        };
        prepare(paths, &options)
            .unwrap()
            .view
            .groups
            .iter()
            .map(|g| (g.name.clone(), g.totals.resident()))
            .collect()
    };
    assert_eq!(
        grouped(None),
        [
            ("process 101".to_owned(), 5 * MIB),
            ("process 100".to_owned(), MIB)
        ]
    );
    assert_eq!(
        grouped(Some(Moment::End)),
        [
            ("process 101".to_owned(), 5 * MIB),
            ("process 100".to_owned(), 0)
        ]
    );
    assert_eq!(
        grouped(Some(Moment::parse("650ms"))),
        [("process 100".to_owned(), MIB)]
    );
}

#[test]
fn merged_captures_sum_their_peaks() {
    let paths = [
        write("merged-a.cap", FREES_BEFORE_EXIT),
        write("merged-b.cap", TWO_PROCESSES),
    ];
    let merged = view(&paths, None);
    assert_eq!(
        merged.shown.moment_label,
        "the peak of each of the 2 captures (310 ms, 500 ms), summed"
    );
    assert_eq!(merged.totals.resident(), 15 * MIB);
    assert_eq!(merged.shown.end.resident, 6 * MIB);
    let times = view(&paths, Some(Moment::parse("250ms")));
    // 8 MiB of the first; the second's parent had 1 MiB then.
    assert_eq!(times.totals.resident(), 9 * MIB);
    assert_eq!(
        times.shown.moment_label,
        "250 ms after each capture's start, summed"
    );
    // After the end of the shorter one (900 ms), that one counts with what was still
    // alive (nothing); after the end of both, an error.
    assert_eq!(
        view(&paths, Some(Moment::parse("990ms"))).totals.resident(),
        9 * MIB
    );
    assert!(prepare(&paths, &options(Some(Moment::parse("2s")))).is_err());
}

#[test]
fn a_diff_compares_each_side_at_its_peak() {
    let paths = [
        write("diff-base.cap", FREES_BEFORE_EXIT),
        write("diff-new.cap", TWO_PROCESSES),
    ];
    let diff = |at: Option<Moment>| {
        text(
            &paths,
            &ReportOptions {
                diff: true,
                ..options(at)
            },
        )
    };
    let peak = diff(None);
    let head: Vec<&str> = peak.lines().take(3).collect();
    assert_eq!(
        head,
        [
            "memmon report --diff: resident -3 MiB, NEW against BASE, each at its peak",
            "BASE at the peak, 310 ms: 9 MiB (at the end: 1 MiB)",
            // The end on the peak's measure (just before the parent's exit: nothing),
            // then each one's last state summed (the child's 5 MiB), never above the peak.
            "NEW  at the peak of the 2 processes together, 500 ms: 6 MiB (at the end: 0 B; each process's last state, summed: 5 MiB)",
        ]
    );
    let end = diff(Some(Moment::End));
    let head: Vec<&str> = end.lines().take(3).collect();
    assert_eq!(
        head,
        [
            "memmon report --diff: resident +4 MiB, NEW against BASE, each at its end",
            "BASE at the end: 1 MiB (at the peak, 310 ms: 9 MiB)",
            "NEW  at the end: 5 MiB (at the peak of the 2 processes together, 500 ms: 6 MiB)",
        ]
    );
    let json: serde_json::Value = serde_json::from_slice(
        &report(
            &paths,
            &ReportOptions {
                diff: true,
                format: Format::Json,
                ..options(None)
            },
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(json["total"], -3 * MIB as i64);
    assert_eq!(json["base"]["moment"], "peak");
    assert_eq!(json["base"]["moment_resident"], 9 * MIB);
    assert_eq!(json["new"]["moment_resident"], 6 * MIB);
    assert_eq!(json["new"]["end"]["resident"], 5 * MIB);
}

#[test]
fn a_capture_without_events_shows_its_end() {
    let capture = write(
        "empty.cap",
        "# memmon-capture 1\n# start 1.000000000\n# pids 100\n",
    );
    let view = view(std::slice::from_ref(&capture), None);
    assert!(view.shown.at_end());
    assert_eq!(view.shown.moment_label, "the end (no event)");
    let error = prepare(
        std::slice::from_ref(&capture),
        &options(Some(Moment::parse("1s"))),
    )
    .err()
    .unwrap();
    assert!(error.to_string().contains("--at 1.0 s"), "{error}");
}

mod against_a_naive_replay {
    //! The peak and the state at a time of random captures against a naive replay of
    //! every prefix: the first prefix whose live processes hold the most.
    use super::*;
    use proptest::prelude::*;

    const SLOT: u64 = 0x10_0000;
    const BASE: u64 = 0x7f00_0000_0000;

    fn line() -> impl Strategy<Value = (u32, String)> {
        let slot = 0u64..6;
        let pages = 1u64..24;
        let pid = 1u32..4;
        let kind = prop_oneof![
            4 => (slot.clone(), 0u64..24, 0u8..4, 0u8..2, 0u64..20, 0u64..4).prop_map(
                |(slot, page, kind, access, pages, stack)| {
                    let kind = ["anon", "file", "wp", "swap"][kind as usize];
                    let access = ["R", "W"][access as usize];
                    format!(
                        "fault type={kind} access={access} addr={:#x} ip={:#x} pages={pages} stack={:#x},0x401f00",
                        BASE + slot * SLOT + page * 4096,
                        0x401000 + stack * 0x10,
                        0x401000 + stack * 0x10
                    )
                }
            ),
            2 => (slot.clone(), pages.clone(), 0u8..3, 0u64..3).prop_map(|(slot, pages, kind, stack)| {
                let flags = ["PRIVATE|ANONYMOUS", "SHARED|ANONYMOUS", "PRIVATE"][kind as usize];
                let file = if kind == 2 { " file=/data/f" } else { "" };
                format!(
                    "mmap addr=0x0 len={} prot=rw- flags={flags} fd=3 off=0 ret={:#x}{file} stack={:#x}",
                    pages * 4096,
                    BASE + slot * SLOT,
                    0x401100 + stack * 0x10
                )
            }),
            1 => (slot.clone(), pages.clone()).prop_map(|(slot, pages)| {
                format!("munmap addr={:#x} len={} ret=0", BASE + slot * SLOT, pages * 4096)
            }),
            1 => (slot.clone(), pages.clone(), prop_oneof![Just(4), Just(21)]).prop_map(
                |(slot, pages, advice)| {
                    format!(
                        "madvise addr={:#x} len={} advice={advice} ret=0",
                        BASE + slot * SLOT,
                        pages * 4096
                    )
                }
            ),
            1 => (slot.clone(), pages.clone(), pages, slot).prop_map(|(old, old_len, new_len, new)| {
                format!(
                    "mremap old={:#x} old_len={} new_len={} flags=MAYMOVE new=0x0 ret={:#x}",
                    BASE + old * SLOT,
                    old_len * 4096,
                    new_len * 4096,
                    BASE + new * SLOT
                )
            }),
            1 => (1u32..4).prop_map(|child| format!("fork child={child} watched=1")),
            1 => Just("exec comm=x filename=/bin/x".to_owned()),
            1 => Just("exit code=0".to_owned()),
            1 => Just("mark text=m".to_owned()),
        ];
        (pid, kind)
    }

    fn header() -> String {
        "# memmon-capture 1\n# start 1.000000000\n# pids 1\n\
         # snapshot maps 1 1.000000000 start\n\
         #| 00400000-00402000 r-xp 00000000 00:03 5 /bin/x\n"
            .to_owned()
    }

    /// The capture of the first `count` lines; line `i` is at 1 s + (i + 1) ms.
    fn capture(lines: &[(u32, String)], count: usize) -> String {
        let mut text = header();
        for (i, (pid, line)) in lines.iter().take(count).enumerate() {
            text.push_str(&format!(
                "1.{:09} {pid}/{pid} {line}\n",
                (i as u64 + 1) * 1_000_000
            ));
        }
        text
    }

    /// What the live processes hold after the first `count` lines, by process, and summed.
    fn naive(lines: &[(u32, String)], count: usize) -> (Vec<(u32, Picture)>, Picture) {
        let mut replay = Replay::new(ReplayOptions::default());
        replay.capture(capture(lines, count).as_bytes()).unwrap();
        let mut total = Picture::default();
        let mut processes = Vec::new();
        for ((_, pid), picture) in replay.live_pictures() {
            total.merge(picture, replay.page_size());
            if !picture.is_empty() {
                processes.push((pid, picture.clone()));
            }
        }
        processes.sort_by_key(|(pid, _)| *pid);
        (processes, total)
    }

    fn resident(picture: &Picture) -> u64 {
        picture.kinds.iter().sum()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn the_peak_and_a_time_are_those_of_the_naive_replay(
            lines in proptest::collection::vec(line(), 1..40),
            at_ms in 0u64..45,
        ) {
            let at_time = at_ms * 1_000_000;
            let mut replay = Replay::new(ReplayOptions { at_time: Some(at_time), ..ReplayOptions::default() });
            replay.capture(capture(&lines, lines.len()).as_bytes()).unwrap();
            let analysis = replay.finish();

            // The first prefix (of at least one event) whose processes hold the most.
            let mut best: Option<(usize, u64)> = None;
            for count in 1..=lines.len() {
                let pages = resident(&naive(&lines, count).1);
                if best.is_none_or(|(_, most)| pages > most) {
                    best = Some((count, pages));
                }
            }
            let (count, pages) = best.unwrap();
            let (processes, total) = naive(&lines, count);
            prop_assert_eq!(&analysis.peak.holdings.total, &total);
            let mut found: Vec<(u32, Picture)> = analysis
                .peak
                .holdings
                .processes
                .iter()
                .filter(|(_, picture)| !picture.is_empty())
                .map(|((_, pid), picture)| (*pid, picture.clone()))
                .collect();
            found.sort_by_key(|(pid, _)| *pid);
            prop_assert_eq!(found, processes);
            let when = &analysis.peak.when;
            prop_assert_eq!(when.len(), 1);
            prop_assert_eq!(when[0].since_start_ns, count as u64 * 1_000_000);
            prop_assert_eq!(when[0].resident, pages * 4096);

            // The state at the time: after the lines at or before it.
            let before = (at_ms as usize).min(lines.len());
            let state = analysis.at_time.as_ref().unwrap();
            prop_assert_eq!(&state.state.holdings.total, &naive(&lines, before).1);
            prop_assert_eq!(state.longest, lines.len() as u64 * 1_000_000);
            let shown = analysis.at(&Moment::Time(at_time));
            if at_ms as usize > lines.len() {
                prop_assert!(matches!(shown, Err(MomentError::TimeAfterEnd { .. })), "{:?}", shown.err());
            } else {
                prop_assert_eq!(&shown.unwrap().holdings.total, &naive(&lines, before).1);
            }
        }
    }
}
