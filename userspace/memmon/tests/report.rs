//! `memmon report` on fixture captures recorded in the test VM (tests/report/: the
//! program alloc_sites and make-fixtures.sh). The program keeps 3 MiB in keep_cache()
//! (5 MiB in the alloc_sites5 build), churns 8 MiB in scratch(), maps and reads a 1 MiB
//! file in load_table() and pages 1 MiB out and back in in reheat(). The captures have
//! stacks (stack_depth 16; the walk ends in the static glibc, which has no frame
//! pointers), pages= and rss lines; malloc writes its chunk header, one page, from its own
//! code, hence the one page less than the amounts.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use memmon::report::model::replay::CounterSource;
use memmon::report::model::timeline::Slicing;
use memmon::report::output::profile_proto::Profile;
use memmon::report::view::memory::{Lifetime, SiteRow, View};
use memmon::report::{prepare, report, Format, Moment, ReportOptions};
use prost::Message;

const MIB: u64 = 1 << 20;
const PAGE: u64 = 4096;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A sysroot with the fixture binaries at the paths the captures name (/host/...).
fn sysroot() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-sysroot");
        std::fs::create_dir_all(root.join("host")).unwrap();
        for name in ["alloc_sites", "alloc_sites5"] {
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(
                std::fs::File::open(fixture(&format!("{name}.gz"))).unwrap(),
            )
            .read_to_end(&mut bytes)
            .unwrap();
            // Written aside and renamed: another test binary may be reading it.
            let partial = root
                .join("host")
                .join(format!("{name}.partial-{}", std::process::id()));
            std::fs::write(&partial, bytes).unwrap();
            std::fs::rename(&partial, root.join("host").join(name)).unwrap();
        }
        root
    })
    .clone()
}

fn options() -> ReportOptions {
    ReportOptions {
        sysroot: Some(sysroot()),
        ..ReportOptions::default()
    }
}

fn view_of(captures: &[&str], options: &ReportOptions) -> View {
    let paths: Vec<PathBuf> = captures.iter().map(|c| fixture(c)).collect();
    prepare(&paths, options).unwrap().view
}

fn site<'v>(view: &'v View, function: &str) -> &'v SiteRow {
    view.sites
        .iter()
        .find(|row| row.function() == function)
        .unwrap_or_else(|| panic!("no site {function} in the report"))
}

/// The innermost function of a chain `inner < caller < ...`.
fn innermost(chain: &str) -> &str {
    chain.split(" < ").next().unwrap_or(chain)
}

fn within_a_page(got: u64, want: u64) -> bool {
    got.abs_diff(want) <= PAGE
}

/// By default the report shows the peak: scratch()'s 8 MiB with keep_cache()'s 3 MiB,
/// before load_table() and reheat() ran; the end (5.7 MiB) is in the header.
#[test]
fn shows_the_peak_by_default() {
    let view = view_of(&["base.cap"], &options());
    assert_eq!(view.shown.moment, "peak");
    assert_eq!(view.shown.moment_label, "the peak, 826 ms");
    assert_eq!(view.shown.moment_when[0].time.to_string(), "3.377804640");
    assert_eq!(view.totals.resident(), 12_308_480);
    assert_eq!(view.shown.peak.resident, 12_308_480);
    assert_eq!(view.shown.end.resident, 6_021_120);
    let top: Vec<(&str, u64)> = view
        .sites
        .iter()
        .take(2)
        .map(|row| (row.function(), row.resident))
        .collect();
    // Less the page of each chunk's header, which malloc wrote itself.
    assert_eq!(
        top,
        [("scratch", 8 * MIB - PAGE), ("keep_cache", 3 * MIB - PAGE)]
    );
    // scratch's memory was released before the end: temporary, whatever the moment.
    assert_eq!(site(&view, "scratch").lifetime, Lifetime::Temporary);
    assert_eq!(site(&view, "load_table").resident, 0);
    assert_eq!(site(&view, "reheat").resident, 0);
    let at_end = view_of(
        &["base.cap"],
        &ReportOptions {
            at: Some(Moment::End),
            ..options()
        },
    );
    assert_eq!(at_end.totals.resident(), 6_021_120);
    assert_eq!(site(&at_end, "scratch").resident, 0);
}

/// At the end: what each phase left.
#[test]
fn names_the_functions_with_their_byte_counts() {
    let view = view_of(
        &["base.cap"],
        &ReportOptions {
            at: Some(Moment::End),
            ..options()
        },
    );
    let keep = site(&view, "keep_cache");
    assert!(
        within_a_page(keep.resident, 3 * MIB),
        "keep_cache {}",
        keep.resident
    );
    assert_eq!(keep.lifetime, Lifetime::Accumulating);
    assert!(keep.location().unwrap().contains("alloc_sites.c:"));
    let scratch = site(&view, "scratch");
    assert_eq!(scratch.resident, 0);
    assert!(
        within_a_page(scratch.released, 8 * MIB),
        "scratch {}",
        scratch.released
    );
    assert!(within_a_page(scratch.peak, 8 * MIB));
    assert_eq!(scratch.lifetime, Lifetime::Temporary);
    let table = site(&view, "load_table");
    assert_eq!(table.resident, MIB);
    // With pages= a file fault maps up to 16 pages (fault-around): fewer faults.
    assert!(table.faults.file >= 16 && table.faults.file <= 256);
    let reheat = site(&view, "reheat");
    assert_eq!(reheat.resident, MIB);
    assert_eq!(reheat.swapped_in, MIB);
    assert_eq!(reheat.faults.swap_in, 256);
    assert_eq!(reheat.faults.first_touch, 256);
    // The biggest holders: keep_cache first, then the two 1 MiB ones.
    let mut top: Vec<&str> = view.sites.iter().take(3).map(SiteRow::function).collect();
    assert_eq!(top[0], "keep_cache");
    top.sort_unstable();
    assert_eq!(top, ["keep_cache", "load_table", "reheat"]);
    // Only reheat brings pages back from swap.
    let swappers: Vec<&str> = view
        .sites
        .iter()
        .filter(|row| row.swapped_in > 0)
        .map(SiteRow::function)
        .collect();
    assert_eq!(swappers, ["reheat"]);
    // The RSS tree: the table file by its path, the anonymous mmaps of malloc and reheat.
    let table_file = view
        .tree
        .iter()
        .find(|row| row.label == "/tmp/alloc_sites.table")
        .unwrap();
    assert_eq!(table_file.resident, MIB);
}

#[test]
fn reconciles_without_warning() {
    let view = view_of(&["base.cap"], &options());
    assert!(!view.reconciliation.is_empty(), "no comparison made");
    for check in &view.reconciliation {
        assert!(check.warnings.is_empty(), "{:?}", check.warnings);
    }
    // The rss line at exit is the final picture: 3 MiB + 1 MiB of anonymous memory.
    let end = view.reconciliation.last().unwrap();
    assert!(end.label.starts_with("exit of "), "{}", end.label);
    assert_eq!(end.source, CounterSource::RssLine);
    assert!(end.counters.anon >= 4 * MIB);
    assert!(end.model.anon.abs_diff(end.counters.anon) <= 2 * PAGE);
}

#[test]
fn warns_on_a_capture_that_started_after_the_allocations() {
    let view = view_of(&["late.cap"], &options());
    let check = view
        .reconciliation
        .iter()
        .find(|c| !c.warnings.is_empty())
        .expect("a warning");
    let missing = check.counters.anon - check.model.anon;
    // keep_cache's 3 MiB and reheat's 1 MiB were resident before the capture started.
    assert!((4 * MIB..4 * MIB + MIB / 2).contains(&missing), "{missing}");
    let warning = &check.warnings[0];
    assert!(warning.contains(&format!("+{missing} bytes")), "{warning}");
    assert!(warning.contains("before watching began"), "{warning}");
    let text = String::from_utf8(report(&[fixture("late.cap")], &options()).unwrap()).unwrap();
    assert!(text.contains("warning: mark \"end\""), "{text}");
}

#[test]
fn at_a_mark() {
    let options = ReportOptions {
        at: Some(Moment::parse("after-keep")),
        ..options()
    };
    let view = view_of(&["base.cap"], &options);
    assert!(within_a_page(site(&view, "keep_cache").resident, 3 * MIB));
    assert!(view
        .sites
        .iter()
        .all(|row| row.function() != "reheat" || row.resident == 0));
    let bad = ReportOptions {
        at: Some(Moment::parse("nope")),
        ..ReportOptions::default()
    };
    let error = prepare(&[fixture("base.cap")], &bad)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("no mark \"nope\""), "{error}");
}

#[test]
fn diff_of_two_builds() {
    let options = ReportOptions {
        diff: true,
        format: Format::Json,
        ..options()
    };
    let json = report(&[fixture("base.cap"), fixture("grown.cap")], &options).unwrap();
    let diff: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let first = &diff["sites"][0];
    // The function chain, innermost first (with stacks: "keep_cache < main < ...").
    assert_eq!(innermost(first["name"].as_str().unwrap()), "keep_cache");
    let growth = first["resident"].as_i64().unwrap();
    assert!(growth.abs_diff(2 * MIB as i64) <= PAGE, "{growth}");
    let text = report(
        &[fixture("base.cap"), fixture("grown.cap")],
        &ReportOptions {
            format: Format::Text,
            ..options
        },
    )
    .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("+2 MiB") && text.contains("keep_cache"),
        "{text}"
    );
}

#[test]
fn merges_captures() {
    let view = view_of(&["base.cap", "grown.cap"], &options());
    // 3 + 5 MiB, less the two chunk-header pages malloc itself wrote.
    let keep = site(&view, "keep_cache");
    assert_eq!(keep.resident, 8 * MIB - 2 * PAGE);
    assert_eq!(view.pids.len(), 2);
}

#[test]
fn timeline_between_marks_flags_the_spike() {
    let options = ReportOptions {
        slicing: Slicing::Marks,
        spike: Some(2 * MIB),
        ..options()
    };
    let view = view_of(&["base.cap"], &options);
    let keep = view
        .timeline
        .iter()
        .find(|row| row.interval.mark.as_deref() == Some("after-keep"))
        .unwrap();
    assert!(keep.spike);
    assert_eq!(innermost(&keep.top[0].0), "keep_cache");
    let scratch = view
        .timeline
        .iter()
        .find(|row| row.interval.mark.as_deref() == Some("after-scratch"))
        .unwrap();
    assert!(!scratch.spike);
    assert!(scratch.interval.faults[0] >= 2047);
    assert!(scratch.interval.unmapped >= 8 * MIB);
    let swapin = view
        .timeline
        .iter()
        .find(|row| row.interval.mark.as_deref() == Some("after-reheat"))
        .unwrap();
    assert_eq!(swapin.interval.swapins, 256);
}

#[test]
fn folded_and_svg() {
    let folded = report(
        &[fixture("base.cap")],
        &ReportOptions {
            format: Format::Folded,
            ..options()
        },
    )
    .unwrap();
    let folded = String::from_utf8(folded).unwrap();
    // outer;...;keep_cache 3141632 (just "keep_cache" without stacks).
    assert!(
        folded
            .lines()
            .any(|l| l == "keep_cache 3141632" || l.ends_with(";keep_cache 3141632")),
        "{folded}"
    );
    let svg = report(
        &[fixture("base.cap")],
        &ReportOptions {
            format: Format::Svg,
            ..options()
        },
    )
    .unwrap();
    let mut reader = quick_xml::Reader::from_reader(svg.as_slice());
    let mut buffer = Vec::new();
    let mut texts = String::new();
    loop {
        match reader.read_event_into(&mut buffer) {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Text(text)) => {
                texts.push_str(&String::from_utf8_lossy(&text));
                texts.push('\n');
            }
            Ok(_) => {}
            Err(error) => panic!("the SVG is not XML: {error}"),
        }
        buffer.clear();
    }
    // At the peak: keep_cache and scratch; load_table and reheat ran after it.
    for name in ["keep_cache", "scratch"] {
        assert!(texts.contains(name), "{name} not in the SVG");
    }
    for name in ["load_table", "reheat"] {
        assert!(!texts.contains(name), "{name} in the SVG");
    }
}

fn decode(bytes: &[u8]) -> Profile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .unwrap();
    Profile::decode(raw.as_slice()).unwrap()
}

/// Resident bytes and faults of the samples whose leaf is `function`.
fn leaf_values(profile: &Profile, function: &str) -> (i64, i64) {
    let name = |index: i64| profile.string_table[index as usize].as_str();
    let mut values = (0, 0);
    for sample in &profile.sample {
        let leaf = profile
            .location
            .iter()
            .find(|l| l.id == sample.location_id[0])
            .unwrap();
        let function_id = leaf.line[0].function_id;
        let f = profile
            .function
            .iter()
            .find(|f| f.id == function_id)
            .unwrap();
        if name(f.name) == function {
            values.0 += sample.value[0];
            values.1 += sample.value[1];
        }
    }
    values
}

#[test]
fn pprof_decodes_and_go_tool_pprof_reads_it() {
    let bytes = report(
        &[fixture("base.cap")],
        &ReportOptions {
            format: Format::Pprof,
            ..options()
        },
    )
    .unwrap();
    let profile = decode(&bytes);
    let types: Vec<String> = profile
        .sample_type
        .iter()
        .map(|t| {
            format!(
                "{}/{}",
                profile.string_table[t.r#type as usize], profile.string_table[t.unit as usize]
            )
        })
        .collect();
    assert_eq!(
        types,
        [
            "resident/bytes",
            "faults/count",
            "mapped/bytes",
            "swapin/bytes"
        ]
    );
    let (resident, faults) = leaf_values(&profile, "keep_cache");
    assert_eq!(resident, 3 * MIB as i64 - PAGE as i64);
    assert_eq!(faults, 767);
    let mapping = profile
        .mapping
        .iter()
        .find(|m| profile.string_table[m.filename as usize] == "/host/alloc_sites")
        .unwrap();
    assert_eq!(
        profile.string_table[mapping.build_id as usize].len(),
        40,
        "a GNU build ID"
    );

    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("base.pb.gz");
    std::fs::write(&file, &bytes).unwrap();
    let output = Command::new("go")
        .args(["tool", "pprof", "-top", "-sample_index=resident"])
        .arg(&file)
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run `go tool pprof` ({error}): install Go (Debian package golang-go) to run this test"
            )
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "go tool pprof failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // "     3MB 55.12% 55.12%        3MB 55.12%  keep_cache"
    let line = stdout
        .lines()
        .find(|l| l.trim_end().ends_with(" keep_cache"))
        .unwrap_or_else(|| panic!("no keep_cache in:\n{stdout}"));
    assert!(
        line.trim_start().starts_with("3MB") || line.trim_start().starts_with("3.00MB"),
        "{line}"
    );
}

#[test]
fn binaries_are_matched_by_build_id() {
    let base = fixture("base.cap");
    let text = std::fs::read_to_string(&base).unwrap();
    let id = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("# buildid ")?
                .strip_suffix(" /host/alloc_sites")
        })
        .expect("a build ID for /host/alloc_sites in the capture")
        .to_owned();
    // The other build at the capture's path: names may be wrong, and the report says so.
    let wrong = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-wrong-build");
    let _ = std::fs::remove_dir_all(&wrong);
    std::fs::create_dir_all(wrong.join("host")).unwrap();
    std::fs::copy(
        sysroot().join("host/alloc_sites5"),
        wrong.join("host/alloc_sites"),
    )
    .unwrap();
    let view = view_of(
        &["base.cap"],
        &ReportOptions {
            sysroot: Some(wrong.clone()),
            ..ReportOptions::default()
        },
    );
    assert!(
        view.symbol_warnings
            .iter()
            .any(|w| w.contains("/host/alloc_sites: build ID") && w.contains(&id)),
        "{:?}",
        view.symbol_warnings
    );
    // The right build found by its build ID in the debug directory is used instead.
    let debug = wrong.join("usr/lib/debug/.build-id").join(&id[..2]);
    std::fs::create_dir_all(&debug).unwrap();
    std::fs::copy(
        sysroot().join("host/alloc_sites"),
        debug.join(format!("{}.debug", &id[2..])),
    )
    .unwrap();
    let view = view_of(
        &["base.cap"],
        &ReportOptions {
            sysroot: Some(wrong),
            ..ReportOptions::default()
        },
    );
    assert!(view
        .symbol_warnings
        .iter()
        .all(|w| !w.contains("/host/alloc_sites:")));
    assert!(within_a_page(site(&view, "keep_cache").resident, 3 * MIB));
}
