//! `memmon export`: real captures (recorded in the VM) as snapshots at their peak, the
//! same stacks whatever the load addresses, bad inputs named, and the parquet tables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memmon::export::{capture, read_input, stack_id, write::DatasetWriter, StackFrame};
use memmon::report::{prepare, ReportOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every hex number of the capture in the mmap area (0x7f0000000000 and up, where the
/// loader puts libraries and PIE programs here) moved by `delta`, with or without `0x`:
/// the same run with other load addresses.
fn relocate(text: &str, delta: u64) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let (prefix, digits) = match word.strip_prefix("0x") {
            Some(rest) => ("0x", rest),
            None => ("", word.as_str()),
        };
        let moved = (digits.len() >= 12)
            .then(|| u64::from_str_radix(digits, 16).ok())
            .flatten()
            .filter(|v| (0x7f00_0000_0000..0x7fff_0000_0000).contains(v));
        match moved {
            Some(value) => {
                out.push_str(prefix);
                out.push_str(&format!("{:0width$x}", value + delta, width = digits.len()));
            }
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() || (c == 'x' && word == "0") {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[test]
fn a_capture_is_one_snapshot_per_process_at_the_report_peak() {
    let bytes = std::fs::read(fixture("base.cap")).unwrap();
    let snapshots = capture::snapshots(&bytes, "base.cap", None).unwrap();
    let report = prepare(&[fixture("base.cap")], &ReportOptions::default()).unwrap();
    let resident: u64 = snapshots.iter().map(|s| s.resident()).sum();
    assert_eq!(resident, report.view.shown.peak.resident);
    assert_eq!(
        snapshots.iter().map(|s| s.anon).sum::<u64>(),
        report.view.totals.anon
    );
    let by_stacks: u64 = snapshots
        .iter()
        .flat_map(|s| &s.samples)
        .map(|s| s.resident)
        .sum();
    let by_sites: u64 = report.view.sites.iter().map(|s| s.resident).sum();
    assert_eq!(by_stacks, by_sites);
    let faults: u64 = snapshots
        .iter()
        .flat_map(|s| &s.samples)
        .map(|s| s.faults.iter().sum::<u64>())
        .sum();
    assert!(faults > 0);
    assert_eq!(snapshots[0].labels["command"], "alloc_sites");
    // The program's frames carry the build ID of its `# buildid` header.
    assert!(snapshots.iter().flat_map(|s| &s.samples).any(|s| s
        .frames
        .iter()
        .any(|f| matches!(f, StackFrame::Code { build_id, .. }
            if build_id == "9c29a9d04fcb9a23f2263e4ab87cc992ad671e5f"))));
    // Its start-unix header and the peak give the time.
    assert!(snapshots[0].time_unix_ns > 1_796_069_935_552_868_310);
}

#[test]
fn other_load_addresses_give_the_same_stacks() {
    let text = std::fs::read_to_string(fixture("base.cap")).unwrap();
    let moved = relocate(&text, 0x3_2100_0000);
    assert_ne!(text, moved);
    let stacks = |bytes: &[u8]| -> BTreeMap<i64, (u64, u64)> {
        let snapshots = capture::snapshots(bytes, "x", None).unwrap();
        let mut out = BTreeMap::new();
        for sample in snapshots.iter().flat_map(|s| &s.samples) {
            let entry = out.entry(stack_id(&sample.frames)).or_insert((0, 0));
            entry.0 += sample.resident;
            entry.1 += sample.mapped;
        }
        out
    };
    let here = stacks(text.as_bytes());
    let there = stacks(moved.as_bytes());
    assert!(here.len() > 3, "{here:?}");
    assert_eq!(here, there);
}

#[test]
fn bad_inputs_are_named_with_why() {
    let dir = tmp("export-bad");
    let text = std::fs::read_to_string(fixture("base.cap")).unwrap();
    let truncated = dir.join("truncated.cap");
    std::fs::write(&truncated, &text[..text.len() / 2 + 7]).unwrap();
    let error = read_input(&truncated, &BTreeMap::new(), None).unwrap_err();
    assert!(error
        .to_string()
        .starts_with(&format!("{}: ", truncated.display())));
    assert!(error.reason.contains("do not parse"), "{error}");
    // Without its build ID header and without the binary: unknown build ID.
    let no_build_id: String = text
        .lines()
        .filter(|line| !line.starts_with("# buildid"))
        .map(|line| format!("{line}\n"))
        .collect();
    let unknown = dir.join("unknown.cap");
    std::fs::write(&unknown, no_build_id).unwrap();
    let error = read_input(&unknown, &BTreeMap::new(), None).unwrap_err();
    assert!(error.reason.contains("unknown build ID of /"), "{error}");
    // A gzip file that is no profile.
    let not_profile = dir.join("not.pb.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, b"\x0a\x05hello").unwrap();
    std::fs::write(&not_profile, encoder.finish().unwrap()).unwrap();
    let error = read_input(&not_profile, &BTreeMap::new(), None).unwrap_err();
    assert!(error.reason.contains("wrong schema"), "{error}");
}

#[test]
fn the_tables_hold_every_snapshot_sample_and_frame() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tmp("export-tables");
    let labels = BTreeMap::from([("model".to_owned(), "s1".to_owned())]);
    let snapshots = read_input(&fixture("base.cap"), &labels, None).unwrap();
    let mut writer = DatasetWriter::create(&dir).unwrap();
    for snapshot in &snapshots {
        writer.add(snapshot).unwrap();
    }
    writer.finish().unwrap();
    let rows = |table: &str| -> i64 {
        let entries: Vec<_> = std::fs::read_dir(dir.join(table))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(entries.len(), 1);
        let file = std::fs::File::open(entries[0].path()).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        reader.metadata().file_metadata().num_rows()
    };
    let mut stacks: BTreeMap<i64, usize> = BTreeMap::new();
    let mut samples = std::collections::BTreeSet::new();
    for snapshot in &snapshots {
        assert_eq!(snapshot.labels["model"], "s1");
        for sample in &snapshot.samples {
            let id = stack_id(&sample.frames);
            stacks.insert(id, sample.frames.len());
            samples.insert((snapshot.id, id));
        }
    }
    assert_eq!(rows("snapshots"), snapshots.len() as i64);
    assert_eq!(rows("samples"), samples.len() as i64);
    assert_eq!(rows("stacks"), stacks.values().sum::<usize>() as i64);
}

#[test]
fn an_input_exported_again_is_not_added_twice() {
    let dir = tmp("export-twice");
    let snapshots = read_input(&fixture("base.cap"), &BTreeMap::new(), None).unwrap();
    let grown = read_input(&fixture("grown.cap"), &BTreeMap::new(), None).unwrap();
    let mut first = DatasetWriter::create(&dir).unwrap();
    for snapshot in &snapshots {
        assert!(first.add(snapshot).unwrap());
    }
    // Twice in one export: once.
    assert!(!first.add(&snapshots[0]).unwrap());
    assert_eq!(
        (first.written, first.duplicates),
        (snapshots.len() as u64, 1)
    );
    first.finish().unwrap();
    // Again in a second export, beside a new input: only the new one.
    std::thread::sleep(std::time::Duration::from_millis(2));
    let mut second = DatasetWriter::create(&dir).unwrap();
    for snapshot in snapshots.iter().chain(&grown) {
        second.add(snapshot).unwrap();
    }
    assert_eq!(
        (second.written, second.duplicates),
        (grown.len() as u64, snapshots.len() as u64)
    );
    second.finish().unwrap();
}

/// When each process started, for the fleet's lifetime at the snapshot: the command memmon
/// started at the capture's start, a child at its `fork` line (put on the wall clock by
/// `# start` and `# start-unix`), a process memmon began to watch running by its
/// `# process-start` header; a process none of these names has none.
#[test]
fn process_starts_from_the_capture() {
    let capture = "\
# memmon-capture 1
# start 100.000000000
# start-unix 1800000000.250000000
# command /bin/prog
# process-start 300 1799990000000000000
100.000100000 200/200 mmap addr=0x0 len=4096 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
102.500000000 200/200 fork child=201 watched=1
103.000000000 300/300 munmap addr=0x7f0000000000 len=4096 ret=0
104.000000000 400/400 munmap addr=0x7f0000000000 len=4096 ret=0
";
    let starts = capture::process_starts(capture.as_bytes());
    assert_eq!(starts.get(&200), Some(&1_800_000_000_250_000_000));
    assert_eq!(starts.get(&201), Some(&1_800_000_002_750_000_000));
    assert_eq!(starts.get(&300), Some(&1_799_990_000_000_000_000));
    assert_eq!(starts.get(&400), None);
    assert_eq!(starts.len(), 3);
    // Without `# command` (a capture of running processes), the first process is not taken
    // for one memmon started.
    let attached = capture.replace("# command /bin/prog\n", "# pids 200 300 400\n");
    assert_eq!(capture::process_starts(attached.as_bytes()).get(&200), None);
}
