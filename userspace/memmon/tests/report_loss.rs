//! Issue 50: a report built on a stream that lost events, dropped faults or shed stacks says
//! so wherever it shows its figures (the text header, the page's first screen, its JSON,
//! `memmon top`'s status line, the reconciliation), and unnamed code whose mapping's
//! events were lost is not blamed on a JIT. Hand-written captures.

use memmon::capture::file::CaptureReader;
use memmon::report::model::moment::Moment;
use memmon::report::model::replay::{Replay, ReplayOptions};
use memmon::report::output::text::memory::{render, TextOptions};
use memmon::report::symbolize::symbols::{SymbolOptions, Symbols};
use memmon::report::view::memory::{build, View, ViewOptions};
use memmon::top::{status_line, TopModel};

const KIB: u64 = 1024;

/// cc1plus (4242) maps 1 MiB and faults 768 KiB of it from code at 0x401010, whose
/// mapping's `mmap` the module lost (`lost count=3733`); 512 of its faults were not
/// recorded and 2 of its stacks were shed (one cut short, one not walked). Its counters
/// at exit say 1 MiB anonymous.
fn capture(lost: bool) -> String {
    format!(
        "\
# memmon-capture 1
# start 1.000000000
# pids 4242
1.000000000 4242/4242 exec comm=cc1plus filename=/usr/libexec/cc1plus
1.010000000 4242/4242 mmap addr=0x0 len=1048576 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
{}1.020000000 4242/4242 fault type=anon access=W addr=0x7f0000000000 ip=0x401010 pages=128 stack=0x401010,0x401100
1.030000000 4242/4242 dropped faults=512
1.040000000 4242/4242 fault type=anon access=W addr=0x7f0000080000 ip=0x401010 pages=32 stack=0x401010 stack_end=shed
1.050000000 4242/4242 fault type=anon access=W addr=0x7f00000a0000 ip=0x401010 pages=32 stack_end=shed
1.060000000 4242/4242 rss anon=1048576 file=0 shmem=0 swap=0 peak=1048576 at=exit
1.070000000 4242/4242 exit code=0
",
        if lost {
            "1.015000000 0/0 lost count=3733\n"
        } else {
            ""
        }
    )
}

fn view(capture: &str) -> View {
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(capture.as_bytes()).unwrap();
    let analysis = replay.finish();
    let symbols = Symbols::new(&analysis.sites, &SymbolOptions::default());
    build(&analysis, &symbols, &ViewOptions::default()).unwrap()
}

fn text(view: &View) -> String {
    render(
        view,
        TextOptions {
            top: 10,
            timeline: false,
        },
    )
}

const INCOMPLETE: &str = "incomplete: 3 733 events lost (overwritten before memmon read them); 512 faults of 4242 (cc1plus) not recorded; 2 stacks of 4242 (cc1plus) shed (cut short or not walked)";

#[test]
fn the_text_header_says_what_was_lost() {
    let view = view(&capture(true));
    assert_eq!(view.loss.lost, 3733);
    assert_eq!(view.loss.dropped, 512);
    assert_eq!(view.loss.shed, 2);
    assert_eq!(view.loss.processes.len(), 1);
    assert_eq!(view.loss.processes[0].command.as_deref(), Some("cc1plus"));
    // The shed stacks count with the stacks that ended early.
    assert_eq!(view.stack_ends[5], 2);
    let text = text(&view);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "memmon report: 9 events, process 4242; sites from call stacks"
    );
    assert_eq!(lines[1], INCOMPLETE);
    // 768 KiB in the model.
    assert_eq!(view.totals.anon, 768 * KIB);
}

#[test]
fn a_whole_stream_has_no_incomplete_line() {
    let whole = "\
# memmon-capture 1
# start 1.000000000
# pids 7
1.010000000 7/7 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
1.020000000 7/7 fault type=anon access=W addr=0x7f0000000000 ip=0x401010 pages=16
1.070000000 7/7 exit code=0
";
    let view = view(whole);
    assert!(view.loss.is_empty());
    let text = text(&view);
    assert!(!text.contains("incomplete"), "{text}");
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(json["lost"], 0);
    assert_eq!(json["dropped"], 0);
    assert_eq!(json["shed"], 0);
    assert!(json.get("loss_by_process").is_none());
}

#[test]
fn the_json_keeps_lost_and_gains_dropped_and_shed() {
    let view = view(&capture(true));
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(json["lost"], 3733);
    assert_eq!(json["dropped"], 512);
    assert_eq!(json["shed"], 2);
    assert_eq!(
        json["loss_by_process"],
        serde_json::json!([{"pid": 4242, "command": "cc1plus", "dropped": 512, "shed": 2}])
    );
}

#[test]
fn the_reconciliation_names_the_loss() {
    let view = view(&capture(true));
    assert_eq!(view.reconciliation.len(), 1);
    assert_eq!(
        view.reconciliation[0].warnings,
        ["exit of 4242: the rss line says 1048576 bytes anon resident, the model 786432 (difference +262144 bytes): likely the capture's loss: 512 faults of this process not recorded (the module dropped them while its ring was nearly full), and 3 733 events lost (overwritten before memmon read them)"]
    );
    assert!(!text(&view).contains("before watching began"));
}

#[test]
fn code_of_lost_mappings_is_not_blamed_on_a_jit() {
    // The mmap of the code at 0x401010 is among the lost: memmon cannot name it, and
    // nothing says it is generated code.
    let lossy = view(&capture(true));
    assert_eq!(lossy.your_code.unnamed_code, None);
    assert_eq!(lossy.your_code.lost_mappings, 768 * KIB);
    let text = text(&lossy);
    assert!(
        text.contains("  note: 768 KiB resident went through code memmon cannot name: its mapping's events were lost (its frames show as addresses; not generated code)\n"),
        "{text}"
    );
    assert!(!text.contains("JIT"), "{text}");
    // The same stream without the lost line: an address in no mapping is what it was.
    let whole = view(&capture(false));
    assert_eq!(whole.your_code.lost_mappings, 0);
    assert_eq!(whole.your_code.unnamed_code.unwrap().resident, 768 * KIB);
    // Without the lost events, the dropped faults alone are the reconciliation's cause.
    assert_eq!(
        whole.reconciliation[0].warnings,
        ["exit of 4242: the rss line says 1048576 bytes anon resident, the model 786432 (difference +262144 bytes): likely the capture's loss: 512 faults of this process not recorded (the module dropped them while its ring was nearly full)"]
    );
}

#[test]
fn the_html_page_has_the_banner_on_its_first_screen() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-loss");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("lossy.cap");
    std::fs::write(&path, capture(true)).unwrap();
    let options = memmon::report::ReportOptions {
        format: memmon::report::Format::Html,
        debuginfod: None,
        ..memmon::report::ReportOptions::default()
    };
    let page =
        String::from_utf8(memmon::report::report(std::slice::from_ref(&path), &options).unwrap())
            .unwrap();
    let banner = "<p id=\"loss\" role=\"alert\"><b>Incomplete capture:</b> 3 733 events lost (overwritten before memmon read them); 512 faults of 4242 (cc1plus) not recorded; 2 stacks of 4242 (cc1plus) shed (cut short or not walked). The figures below miss what was not recorded.</p>";
    let at = page.find(banner).expect("the banner");
    // Right under the title, before the first paragraph of figures.
    assert!(at < page.find("id=\"moment\"").unwrap());
    assert!(at > page.find("<h1>memmon report</h1>").unwrap());
    // The lost mapping's code is not called generated.
    assert!(!page.contains("JIT"));
    // A whole stream: no banner.
    let whole = dir.join("whole.cap");
    std::fs::write(
        &whole,
        capture(false)
            .replace("1.030000000 4242/4242 dropped faults=512\n", "")
            .replace(" stack_end=shed", ""),
    )
    .unwrap();
    let page = String::from_utf8(memmon::report::report(&[whole], &options).unwrap()).unwrap();
    assert!(!page.contains("id=\"loss\""));
    // The JSON of the lossy one.
    let json_options = memmon::report::ReportOptions {
        format: memmon::report::Format::Json,
        ..options
    };
    let json: serde_json::Value =
        serde_json::from_slice(&memmon::report::report(&[path], &json_options).unwrap()).unwrap();
    assert_eq!(
        (
            json["lost"].as_u64(),
            json["dropped"].as_u64(),
            json["shed"].as_u64()
        ),
        (Some(3733), Some(512), Some(2))
    );
}

fn feed(top: &mut TopModel, text: &str) {
    let mut reader = CaptureReader::new(text.as_bytes());
    while let Some(record) = reader.next_record() {
        let (_, record) = record.unwrap();
        top.record(&record);
    }
}

#[test]
fn top_shows_the_counts_while_there_are_any() {
    let mut top = TopModel::new(SymbolOptions::default());
    let text = capture(true);
    let (before, after) = text.split_at(text.find("1.015000000").unwrap());
    feed(&mut top, before);
    // Nothing lost yet: the status line as it always was.
    let sample = top.sample(1.0);
    assert_eq!(
        status_line(&sample),
        "events 2  lost 0 (0 in the last 1.0 s)"
    );
    feed(&mut top, after);
    let sample = top.sample(1.0);
    assert_eq!((sample.lost, sample.dropped, sample.shed), (3733, 512, 2));
    assert_eq!(
        status_line(&sample),
        "events 9  lost 3733 (3733 in the last 1.0 s)  faults not recorded 512  stacks shed 2"
    );
}

#[test]
fn the_summary_of_record_says_it_too() {
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(capture(true).as_bytes()).unwrap();
    let summary = memmon::report::output::summary::summary(&replay.finish());
    assert!(
        summary.contains(&format!("\nmemmon: {INCOMPLETE}\n")),
        "{summary}"
    );
}

#[test]
fn the_end_of_a_lossy_capture_is_shown_too() {
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(capture(true).as_bytes()).unwrap();
    let analysis = replay.finish();
    let symbols = Symbols::new(&analysis.sites, &SymbolOptions::default());
    let options = ViewOptions {
        at: Moment::End,
        ..ViewOptions::default()
    };
    let view = build(&analysis, &symbols, &options).unwrap();
    assert_eq!(text(&view).lines().nth(1), Some(INCOMPLETE));
}
