//! `memmon report --access` on a synthetic capture of the issue-15 test program
//! (fixtures/access_sample.c, built as fixtures/access_sample.gz by Debian's gcc 12.2 with
//! `gcc -O0 -g -static -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
//! -fdebug-prefix-map=$PWD=.`): 4096 pages touched by populate(), then
//! 5 generations; hot_loop() touches the same 256 pages in each, scan_once() 1024 other
//! pages in generation 3. The capture is written here line by line as `memmon record
//! --sample 100 -- /host/access_sample` would write it, with the module's access lines
//! and stacks at the binary's real addresses, so that the sites symbolise.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memmon::report::symbolize::short_name::Naming;
use memmon::report::symbolize::symbols::{SymbolOptions, Symbols};
use memmon::report::view::access::{build, AccessView};
use memmon::report::{analyze, report, Format, ReplayOptions, ReportOptions};

const PID: u32 = 4242;
const BASE: u64 = 0x7f3a_c000_0000;
const PAGE: u64 = 4096;
/// The stores and loads of the program (ips), and the return addresses after its calls.
const POPULATE_IP: u64 = 0x401635;
const HOT_LOOP_IP: u64 = 0x40166b;
const SCAN_ONCE_IP: u64 = 0x4016bd;
const MMAP_SYSCALL_RET: u64 = 0x431aa3;
const AFTER_POPULATE: u64 = 0x4017e6;
const AFTER_HOT_LOOP: u64 = 0x401816;
const AFTER_SCAN_ONCE: u64 = 0x401821;
/// main's return address into __libc_start_call_main.
const AFTER_MAIN: u64 = 0x401b64;
const BUILD_ID: &str = "df9fbf869b002b6f71d16d6567b3fbbf4d854421";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn sysroot() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-access-sysroot");
        std::fs::create_dir_all(root.join("host")).unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(fixture("access_sample.gz")).unwrap())
            .read_to_end(&mut bytes)
            .unwrap();
        let partial = root
            .join("host")
            .join(format!("access_sample.partial-{}", std::process::id()));
        std::fs::write(&partial, bytes).unwrap();
        std::fs::rename(&partial, root.join("host/access_sample")).unwrap();
        root
    })
    .clone()
}

/// `SECS.NANOS` from nanoseconds after 100 s.
fn at(nanos: u64) -> String {
    let total = 100_000_000_000 + nanos;
    format!("{}.{:09}", total / 1_000_000_000, total % 1_000_000_000)
}

/// The capture of `access_sample 100` recorded with `--sample 100`.
fn capture_text() -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    for header in [
        "# memmon-capture 1",
        "# kernel 6.8.0-memmon",
        "# module-version 0.15",
        "# buflen 4194304",
        "# sample-ms 100",
        "# sample-pages 65536",
        "# start 99.999000000",
        "# command /host/access_sample 100",
    ] {
        line(header.to_owned());
    }
    line(format!(
        "{} {PID}/{PID} exec comm=access_sample filename=/host/access_sample",
        at(0)
    ));
    line(format!("# buildid {BUILD_ID} /host/access_sample"));
    line(format!("# snapshot maps {PID} {} exec", at(10_000)));
    for maps in [
        "00400000-00401000 r--p 00000000 00:1f 7 /host/access_sample",
        "00401000-00479000 r-xp 00001000 00:1f 7 /host/access_sample",
        "00479000-004a1000 r--p 00079000 00:1f 7 /host/access_sample",
        "004a1000-004a8000 rw-p 000a0000 00:1f 7 /host/access_sample",
        "004a8000-004ca000 rw-p 00000000 00:00 0 [heap]",
        "7ffd4f2e0000-7ffd4f301000 rw-p 00000000 00:00 0 [stack]",
    ] {
        line(format!("#| {maps}"));
    }
    line(format!(
        "{} {PID}/{PID} mmap addr=0x0 len=16777216 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret={BASE:#x} dur=2100 stack={MMAP_SYSCALL_RET:#x},{AFTER_MAIN:#x}",
        at(1_000_000)
    ));
    let mut time = 2_000_000;
    for page in 0..4096 {
        line(format!(
            "{} {PID}/{PID} fault type=anon access=W addr={:#x} ip={POPULATE_IP:#x} stack={POPULATE_IP:#x},{AFTER_POPULATE:#x},{AFTER_MAIN:#x}",
            at(time),
            BASE + page * PAGE
        ));
        time += 1_000;
    }
    for gen in 1..=5u64 {
        let mut time = gen * 150_000_000;
        line(format!("{} {PID}/{PID} gen n={gen} armed=4096", at(time)));
        let mut access = |page: u64, ip: u64, ret: u64| {
            time += 2_000;
            line(format!(
                "{} {PID}/{PID} fault type=access access=R addr={:#x} ip={ip:#x} gen={gen} stack={ip:#x},{ret:#x},{AFTER_MAIN:#x}",
                at(time),
                BASE + page * PAGE
            ));
        };
        for page in 0..256 {
            access(page, HOT_LOOP_IP, AFTER_HOT_LOOP);
        }
        if gen == 3 {
            for page in 256..1280 {
                access(page, SCAN_ONCE_IP, AFTER_SCAN_ONCE);
            }
        }
    }
    line(format!(
        "{} {PID}/{PID} rss anon=16777216 file=0 shmem=0 swap=0 peak=16777216 at=exit",
        at(800_000_000)
    ));
    line(format!("{} {PID}/{PID} exit code=0", at(800_000_001)));
    line("# end 100.900000000".to_owned());
    out
}

fn capture() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join("access_sample.cap");
        let partial = dir.join(format!("access_sample.cap.partial-{}", std::process::id()));
        std::fs::write(&partial, capture_text()).unwrap();
        std::fs::rename(&partial, &path).unwrap();
        path
    })
    .clone()
}

fn access_view(cold: u64) -> AccessView {
    let analysis = analyze(&[capture()], ReplayOptions::default()).unwrap();
    let symbols = Symbols::new(
        &analysis.sites,
        &SymbolOptions {
            sysroot: Some(sysroot()),
            ..SymbolOptions::default()
        },
    );
    build(&analysis, &symbols, cold, Naming::Short)
}

fn options(format: Format, cold: u64) -> ReportOptions {
    ReportOptions {
        format,
        access: true,
        cold,
        sysroot: Some(sysroot()),
        ..ReportOptions::default()
    }
}

#[test]
fn generations_report_exactly_the_touched_pages() {
    let view = access_view(2);
    assert!(
        view.symbol_warnings.is_empty(),
        "{:?}",
        view.symbol_warnings
    );
    assert_eq!(view.pids, [PID]);
    assert!(view.stacks);
    assert_eq!(view.access_faults, 256 * 5 + 1024);
    assert_eq!(view.accesses, 256 * 5 + 1024);
    let rows: Vec<(u64, u64, u64, u64, u64, u64)> = view
        .generations
        .iter()
        .map(|g| (g.n, g.armed, g.touched, g.hot, g.warm, g.cold))
        .collect();
    assert_eq!(
        rows,
        [
            (1, 4096, 256, 256, 0, 0),
            (2, 4096, 256, 256, 0, 0),
            (3, 4096, 1280, 256, 0, 1024),
            (4, 4096, 256, 256, 0, 0),
            (5, 4096, 256, 256, 0, 0),
        ]
    );
    // The model's resident pages when each generation starts, and how many were cold
    // (untouched for 2 generations): the 3840 never touched since populate() from
    // generation 3 on, less scan_once's 1024 once it touched them.
    let resident: Vec<(u64, u64)> = view
        .generations
        .iter()
        .map(|g| (g.resident, g.resident_cold))
        .collect();
    assert_eq!(
        resident,
        [
            (4096, 0),
            (4096, 0),
            (4096, 3840),
            (4096, 2816),
            (4096, 2816)
        ]
    );
    let third = &view.generations[2];
    let sites: Vec<(&str, u64, u64)> = third
        .sites
        .iter()
        .map(|s| (s.site.as_str(), s.pages, s.cold))
        .collect();
    assert_eq!(
        sites,
        [
            ("scan_once < main", 1024, 1024),
            ("hot_loop < main", 256, 0),
        ]
    );
    assert!(view.generations.iter().all(|g| !g.budget_reached));
    assert_eq!(view.budget, Some(65536));
}

#[test]
fn sites_count_distinct_and_cold_pages() {
    let view = access_view(2);
    let summary: Vec<(&str, u64, u64, u64, Vec<u64>)> = view
        .sites
        .iter()
        .map(|s| {
            (
                s.frames[0].function.as_str(),
                s.pages,
                s.cold_pages,
                s.accesses,
                s.generations.clone(),
            )
        })
        .collect();
    // Sites touching cold pages first.
    assert_eq!(
        summary,
        [
            ("scan_once", 1024, 1024, 1024, vec![3]),
            ("hot_loop", 256, 0, 1280, vec![1, 2, 3, 4, 5]),
        ]
    );
    let scan = &view.sites[0];
    assert_eq!(scan.frames[1].function, "main");
    assert!(scan.frames[0]
        .file
        .as_deref()
        .is_some_and(|f| f.ends_with("access_sample.c")));
    // With the default --cold 3, scan_once's pages (idle for 2 generations) are warm.
    let view = access_view(3);
    assert_eq!(view.sites[0].frames[0].function, "scan_once");
    assert!(view.sites.iter().all(|s| s.cold_pages == 0));
    let third = &view.generations[2];
    assert_eq!((third.hot, third.warm, third.cold), (256, 1024, 0));
    // --cold 1: every access after an idle generation is cold.
    let view = access_view(1);
    assert_eq!(view.sites[0].cold_pages, 1024);
    assert_eq!(view.sites[1].cold_pages, 0);
}

#[test]
fn access_faults_bring_nothing_into_rss() {
    let options = ReportOptions {
        sysroot: Some(sysroot()),
        ..ReportOptions::default()
    };
    let view = memmon::report::prepare(&[capture()], &options)
        .unwrap()
        .view;
    // populate()'s 4096 pages, nothing more, and the model matches the rss line.
    assert_eq!(view.totals.anon, 4096 * PAGE);
    let populate = view
        .sites
        .iter()
        .find(|s| s.function() == "populate")
        .unwrap();
    assert_eq!(populate.resident, 4096 * PAGE);
    for name in ["hot_loop", "scan_once"] {
        let site = view.sites.iter().find(|s| s.function() == name).unwrap();
        assert_eq!(site.resident, 0, "{name}");
        assert_eq!(site.brought_in, 0, "{name}");
    }
    let hot = view
        .sites
        .iter()
        .find(|s| s.function() == "hot_loop")
        .unwrap();
    assert_eq!(hot.faults.other, 1280);
    assert!(
        view.reconciliation.iter().all(|c| c.warnings.is_empty()),
        "{:?}",
        view.reconciliation
    );
}

#[test]
fn text_and_json_output() {
    let text = String::from_utf8(report(&[capture()], &options(Format::Text, 2)).unwrap()).unwrap();
    println!("{text}");
    let headline = text
        .split("Sites that touch cold pages\n")
        .nth(1)
        .expect("headline section");
    let first_row = headline.lines().nth(1).unwrap();
    assert!(first_row.contains("scan_once < main"), "{first_row}");
    assert!(first_row.contains("(./access_sample.c:37)"), "{first_row}");
    assert!(text.contains("--cold 2"));
    let third = text
        .lines()
        .find(|l| l.trim_start().starts_with("3 ") && l.contains("1280"))
        .expect("generation 3 row");
    assert!(
        third.contains("scan_once < main 1024 (1024 cold), hot_loop < main 256"),
        "{third}"
    );

    let json = report(&[capture()], &options(Format::Json, 2)).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["cold_after"], 2);
    assert_eq!(json["generations"][2]["touched"], 1280);
    assert_eq!(json["generations"][2]["cold"], 1024);
    assert_eq!(json["sites"][0]["frames"][0]["function"], "scan_once");
    assert_eq!(json["sites"][0]["cold_pages"], 1024);
    assert_eq!(json["sites"][1]["pages"], 256);

    let error = report(&[capture()], &options(Format::Svg, 2)).unwrap_err();
    assert!(error.to_string().contains("text or json"), "{error}");
}

#[test]
fn a_capture_without_sampling_says_so() {
    let text =
        String::from_utf8(report(&[fixture("late.cap")], &options(Format::Text, 3)).unwrap())
            .unwrap();
    assert!(text.contains("No access sampling in the capture"), "{text}");
}

#[test]
fn html_page_has_the_access_section() {
    let options = ReportOptions {
        format: Format::Html,
        cold: 2,
        sysroot: Some(sysroot()),
        ..ReportOptions::default()
    };
    let html = String::from_utf8(report(&[capture()], &options).unwrap()).unwrap();
    let section = html
        .split("<h2>Access sampling</h2>")
        .nth(1)
        .expect("access section");
    let sites = section.split("<table id=\"access-sites\">").nth(1).unwrap();
    let first_row = sites.split("<tr>").nth(2).unwrap();
    assert!(first_row.starts_with("<td>scan_once</td>"), "{first_row}");
    assert!(first_row.contains("data-v=\"1024\""), "{first_row}");
    assert!(section.contains("<td class=\"n\" data-v=\"1280\">1280</td>"));
    // Captures without sampling have no such section.
    let plain = ReportOptions {
        format: Format::Html,
        ..ReportOptions::default()
    };
    let html = String::from_utf8(report(&[fixture("late.cap")], &plain).unwrap()).unwrap();
    assert!(!html.contains("Access sampling"));
}

#[test]
fn huge_and_unknown_pages() {
    use memmon::report::model::replay::{Replay, ReplayOptions};
    // A process recorded with -p: its pages were resident before watching began. A huge
    // access touches its 2 MiB page (512 pages); a page first touched in generation 9
    // of a process first armed in generation 7 has been idle for 2 generations.
    let text = "\
1.000000000 7/7 gen n=7 armed=1000
1.000000001 7/7 fault type=access access=W addr=0x7f0000201000 ip=0x401000 gen=7 huge=1
2.000000000 7/7 gen n=8 armed=1000
3.000000000 7/7 gen n=9 armed=1000
3.000000001 7/8 fault type=access access=R addr=0x7f0000000000 ip=0x401000 gen=9
3.000000002 7/8 fault type=access access=R addr=0x7f0000200000 ip=0x401000 gen=9
";
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(text.as_bytes()).unwrap();
    let analysis = replay.finish();
    let view = build(&analysis, &Symbols::default(), 2, Naming::Short);
    let rows: Vec<(u64, u64, u64, u64, u64)> = view
        .generations
        .iter()
        .map(|g| (g.n, g.touched, g.hot, g.warm, g.cold))
        .collect();
    assert_eq!(
        rows,
        [(7, 512, 512, 0, 0), (8, 0, 0, 0, 0), (9, 2, 0, 1, 1)]
    );
    assert_eq!(view.sites.len(), 1);
    assert_eq!((view.sites[0].pages, view.sites[0].cold_pages), (513, 1));
    assert_eq!(view.access_faults, 3);
}

#[test]
fn pages_resident_before_start_name_the_code_that_touches_them() {
    use memmon::report::model::replay::{Replay, ReplayOptions};
    use memmon::report::output::text::access::render;
    // `record -p` of a running process: 8 anonymous pages resident at the start. Then one
    // page faulted in (not one of them); ip 0x401000 touches pages 0-3 in generations 1-3
    // and the new page, ip 0x402000 pages 4-5 once. 6 of the 8 pages were touched: 4 by
    // the first code, 2 by the other; the new page is not counted as one of them.
    let text = "\
# memmon-capture 1
# start 1.000000000
# pids 7
# snapshot maps 7 1.000000000 start
#| 00400000-00403000 r-xp 00000000 08:01 5 /bin/prog
#| 7f0000000000-7f0000010000 rw-p 00000000 00:00 0 
# snapshot pages 7 1.000000000 start
#| 7f0000000000-7f0000008000 anon
# snapshot status 7 1.000000000 start
#| VmRSS:	      32 kB
#| RssAnon:	      32 kB
#| RssFile:	       0 kB
#| RssShmem:	       0 kB
#| VmSwap:	       0 kB
1.100000000 7/7 fault type=anon access=W addr=0x7f0000009000 ip=0x403000
2.000000000 7/7 gen n=1 armed=9
2.000000001 7/7 fault type=access access=W addr=0x7f0000000000 ip=0x401000 gen=1
2.000000002 7/7 fault type=access access=W addr=0x7f0000001000 ip=0x401000 gen=1
2.000000003 7/7 fault type=access access=W addr=0x7f0000002000 ip=0x401000 gen=1
2.000000004 7/7 fault type=access access=W addr=0x7f0000003000 ip=0x401000 gen=1
2.000000005 7/7 fault type=access access=W addr=0x7f0000009000 ip=0x401000 gen=1
3.000000000 7/7 gen n=2 armed=9
3.000000001 7/7 fault type=access access=W addr=0x7f0000000000 ip=0x401000 gen=2
3.000000002 7/7 fault type=access access=R addr=0x7f0000004000 ip=0x402000 gen=2
3.000000003 7/7 fault type=access access=R addr=0x7f0000005000 ip=0x402000 gen=2
4.000000000 7/7 gen n=3 armed=9
4.000000001 7/7 fault type=access access=W addr=0x7f0000003000 ip=0x401000 gen=3
# end 5.000000000
";
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(text.as_bytes()).unwrap();
    let analysis = replay.finish();
    // /bin/prog is not there: its sites show as offsets, one per ip.
    let symbols = Symbols::new(&analysis.sites, &SymbolOptions::default());
    let view = build(&analysis, &symbols, 3, Naming::Short);
    assert_eq!(view.before_start_touched, 6);
    let rows: Vec<(u64, u64, u64)> = view
        .sites
        .iter()
        .map(|s| (s.pages, s.accesses, s.before_start_pages))
        .collect();
    assert_eq!(rows, [(5, 7, 4), (2, 2, 2)]);
    let text = render(&view, 10);
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Pages resident before memmon started"))
        .take(4)
        .collect();
    assert_eq!(
        section[0],
        "Pages resident before memmon started: 6 pages touched, by"
    );
    assert_eq!(
        section[2].split_whitespace().collect::<Vec<_>>(),
        ["4", "prog+0x1000"]
    );
    assert_eq!(
        section[3].split_whitespace().collect::<Vec<_>>(),
        ["2", "prog+0x2000"]
    );
    // Without a pages snapshot (the fixture: every page faulted in), no such section.
    assert_eq!(access_view(3).before_start_touched, 0);
    assert!(!render(&access_view(3), 10).contains("resident before memmon started"));
}
