//! A cgroup's model from a small capture, its snapshot decoded with the project's pprof
//! reader (prost and profile_proto): exact values, build ID + file offset locations,
//! labels; and the site cap.

use std::collections::BTreeMap;
use std::io::Read;

use memmon::report::output::profile_proto::Profile;
use memmon::CaptureReader;
use memmon_agent::model::CgroupModel;
use memmon_agent::profile::{build, encode, file_name, SnapshotInfo};
use prost::Message;

const PAGE: i64 = 4096;

/// Process 100 runs /usr/bin/app (build ID abc123): 3 anon faults at the site
/// 0x400100 < 0x400200 and 2 at 0x400300, in an anonymous mapping; one mmap call.
const CAPTURE: &str = "\
# buildid abc123 /usr/bin/app
# snapshot maps 100 1.000000000 start
#| 00400000-00401000 r-xp 00000000 08:01 5    /usr/bin/app
#| 7f0000000000-7f0000100000 rw-p 00000000 00:00 0
1.500000000 100/100 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000200000 stack=0x400050
2.000000000 100/100 fault type=anon access=W addr=0x7f0000000000 ip=0x400100 stack=0x400100,0x400200
2.000000001 100/100 fault type=anon access=W addr=0x7f0000001000 ip=0x400100 stack=0x400100,0x400200
2.000000002 100/100 fault type=anon access=W addr=0x7f0000002000 ip=0x400100 stack=0x400100,0x400200
2.000000003 100/100 fault type=anon access=W addr=0x7f0000003000 ip=0x400300 stack=0x400300
2.000000004 100/100 fault type=anon access=W addr=0x7f0000004000 ip=0x400300 stack=0x400300
";

fn model_of(text: &str, max_sites: usize) -> CgroupModel {
    let mut model = CgroupModel::new("/work/job-1", max_sites);
    let mut reader = CaptureReader::new(text.as_bytes());
    while let Some(record) = reader.next_record() {
        let (_, record) = record.unwrap();
        model.record(&record);
    }
    model
}

fn decode(bytes: &[u8]) -> Profile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .unwrap();
    Profile::decode(raw.as_slice()).unwrap()
}

#[test]
fn snapshot_decodes_with_exact_values() {
    let mut model = model_of(CAPTURE, 64);
    model.sample(1.0, 5);
    assert_eq!(model.faults[0], 5);
    assert_eq!(model.calls.get("mmap"), Some(&1));
    let picture = model.picture();
    let by_class = model.resident_by_class(&picture);
    assert_eq!(by_class["anon_mmap"], 5 * 4096);
    assert_eq!(by_class.values().sum::<u64>(), 5 * 4096);

    let mut labels = BTreeMap::new();
    labels.insert("host".to_owned(), "box1".to_owned());
    labels.insert("cgroup".to_owned(), "/work/job-1".to_owned());
    labels.insert("unit".to_owned(), String::new());
    labels.insert("group".to_owned(), "canary".to_owned());
    let profile = build(
        model.replay(),
        &SnapshotInfo {
            labels: &labels,
            time_nanos: 7,
        },
    );
    let profile = decode(&encode(&profile).unwrap());
    let text = |i: i64| profile.string_table[i as usize].as_str();
    let types: Vec<String> = profile
        .sample_type
        .iter()
        .map(|t| format!("{}/{}", text(t.r#type), text(t.unit)))
        .collect();
    assert_eq!(
        types,
        [
            "resident/bytes",
            "mapped/bytes",
            "faults_anon/count",
            "faults_file/count",
            "faults_swap/count",
            "faults_wp/count",
            "faults_other/count",
            "class_resident/bytes"
        ]
    );
    assert_eq!(text(profile.default_sample_type), "resident");
    assert_eq!(profile.time_nanos, 7);
    // One mapping: the app, by build ID, at 1 << 40.
    assert_eq!(profile.mapping.len(), 1);
    let mapping = &profile.mapping[0];
    assert_eq!(text(mapping.build_id), "abc123");
    assert_eq!(text(mapping.filename), "/usr/bin/app");
    assert_eq!(mapping.memory_start, 1 << 40);
    // Samples by their frames: file offsets in the app, or a label's name.
    let frame = |id: u64| {
        let location = profile.location.iter().find(|l| l.id == id).unwrap();
        if location.mapping_id == 0 {
            let function = profile
                .function
                .iter()
                .find(|f| f.id == location.line[0].function_id)
                .unwrap();
            return text(function.name).to_owned();
        }
        assert_eq!(location.mapping_id, mapping.id);
        format!(
            "{:#x}",
            location.address - mapping.memory_start + mapping.file_offset
        )
    };
    let mut sites: Vec<(Vec<String>, Vec<i64>)> = profile
        .sample
        .iter()
        .filter(|s| s.value[7] == 0)
        .map(|s| {
            (
                s.location_id.iter().map(|&id| frame(id)).collect(),
                s.value.clone(),
            )
        })
        .collect();
    sites.sort();
    assert_eq!(
        sites,
        [
            (
                // The caller's return address 0x200, one byte back: inside its call.
                vec!["0x100".into(), "0x1ff".into()],
                vec![3 * PAGE, 0, 3, 0, 0, 0, 0, 0]
            ),
            (vec!["0x300".into()], vec![2 * PAGE, 0, 2, 0, 0, 0, 0, 0]),
            // The mmap call's return address 0x50, one byte back: inside its syscall.
            (vec!["0x4f".into()], vec![0, 65536, 0, 0, 0, 0, 0, 0]),
            // The regions of the start snapshot: the app's page and the 1 MiB mapping.
            (
                vec!["[mapped before watching]".into()],
                vec![0, 4096 + (1 << 20), 0, 0, 0, 0, 0, 0]
            ),
        ]
    );
    // The class samples: one, anonymous mmap, 5 pages.
    let classes: Vec<(String, i64)> = profile
        .sample
        .iter()
        .filter(|s| s.value[7] != 0)
        .map(|s| {
            let location = profile
                .location
                .iter()
                .find(|l| l.id == s.location_id[0])
                .unwrap();
            let function = profile
                .function
                .iter()
                .find(|f| f.id == location.line[0].function_id)
                .unwrap();
            (text(function.name).to_owned(), s.value[7])
        })
        .collect();
    assert_eq!(classes, [("[class] anonymous mmap".to_owned(), 5 * PAGE)]);
    // Every sample carries the labels.
    for sample in &profile.sample {
        let pairs: BTreeMap<&str, &str> = sample
            .label
            .iter()
            .map(|l| (text(l.key), text(l.str)))
            .collect();
        assert_eq!(pairs["host"], "box1");
        assert_eq!(pairs["cgroup"], "/work/job-1");
        assert_eq!(pairs["group"], "canary");
    }
    let comments: Vec<&str> = profile.comment.iter().map(|&c| text(c)).collect();
    assert!(comments.contains(&"build_id abc123 /usr/bin/app"));
    assert!(comments.contains(&"host=box1"));
}

/// 12 sites through a model capped at 8: the 9th drops 2 (down to 7), the 12th 2 more;
/// the pages of dropped sites stay, under the dropped label.
#[test]
fn sites_are_capped() {
    let mut text = String::from(
        "# snapshot maps 100 1.000000000 start\n\
         #| 00400000-00401000 r-xp 00000000 08:01 5    /usr/bin/app\n\
         #| 7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n",
    );
    for n in 0..12u64 {
        text.push_str(&format!(
            "2.{n:09} 100/100 fault type=anon access=W addr={:#x} ip={:#x} stack={:#x}\n",
            0x7f0000000000u64 + n * 4096,
            0x400000 + n * 16,
            0x400000 + n * 16
        ));
    }
    let model = model_of(&text, 8);
    assert_eq!(model.sites(), (8, 4));
    let picture = model.picture();
    assert_eq!(picture.kind_bytes(model.page_size()).anon, 12 * 4096);
    let profile = build(
        model.replay(),
        &SnapshotInfo {
            labels: &BTreeMap::new(),
            time_nanos: 0,
        },
    );
    let dropped: i64 = profile
        .sample
        .iter()
        .filter(|s| {
            let location = profile
                .location
                .iter()
                .find(|l| l.id == s.location_id[0])
                .unwrap();
            location.line.first().is_some_and(|line| {
                let f = profile
                    .function
                    .iter()
                    .find(|f| f.id == line.function_id)
                    .unwrap();
                profile.string_table[f.name as usize] == memmon::report::model::sites::LABEL_DROPPED
            })
        })
        .map(|s| s.value[0])
        .sum();
    assert_eq!(dropped, 4 * PAGE);
}

#[test]
fn file_names_sort_by_time() {
    let name = file_name(
        std::time::Duration::from_millis(1_765_000_000_123),
        "/system.slice/foo bar.service",
        "interval",
    );
    assert_eq!(
        name,
        "001765000000.123-system.slice_foo_bar.service-interval.pb.gz"
    );
}

/// `go tool pprof -top` reads a spooled snapshot: the resident bytes of the app's two
/// sites by their leaf (the binary is not here: named by address, offset + 1 << 40, in
/// the mapping `[app]`), and the classes' sample type.
#[test]
fn go_tool_pprof_reads_a_snapshot() {
    let mut model = model_of(CAPTURE, 64);
    model.sample(1.0, 5);
    let labels = BTreeMap::from([("host".to_owned(), "box1".to_owned())]);
    let profile = build(
        model.replay(),
        &SnapshotInfo {
            labels: &labels,
            time_nanos: 1,
        },
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("agent-go-pprof");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("snapshot.pb.gz");
    std::fs::write(&file, encode(&profile).unwrap()).unwrap();
    let output = std::process::Command::new("go")
        .args(["tool", "pprof", "-top", "-addresses", "-sample_index=resident"])
        .arg(&file)
        .env("PPROF_BINARY_PATH", &dir)
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
    // "      12kB 60.00% 60.00%       12kB 60.00%  0000010000000100 [app]"
    let flat = |address: &str| {
        let line = stdout
            .lines()
            .find(|l| l.trim_end().ends_with(&format!("{address} [app]")))
            .unwrap_or_else(|| panic!("no {address} in:\n{stdout}"));
        line.split_whitespace().next().unwrap().to_owned()
    };
    assert_eq!(flat("0000010000000100"), "12kB", "{stdout}");
    assert_eq!(flat("0000010000000300"), "8kB", "{stdout}");
    assert!(stdout.contains("of 20kB total"), "{stdout}");
    let classes = std::process::Command::new("go")
        .args(["tool", "pprof", "-top", "-sample_index=class_resident"])
        .arg(&file)
        .env("PPROF_BINARY_PATH", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&classes.stdout);
    let line = stdout
        .lines()
        .find(|l| l.trim_end().ends_with("[class] anonymous mmap"))
        .unwrap_or_else(|| panic!("no class line in:\n{stdout}"));
    assert_eq!(line.split_whitespace().next(), Some("20kB"), "{stdout}");
}

/// A model that runs for ever: 10 000 faults at 10 000 different stacks through a model
/// capped at 8 sites, one page in ten released again, and 1 000 short-lived children, each
/// faulting a page at an address outside any file; sampled every 1 000 events as the agent
/// does. The dropped sites' ids are recycled: the table stays within its cap (it kept an id
/// per stack ever seen), and every page and count stays exact: each kept site holds the one
/// page it brought in, the dropped label the rest. No address space is made per process
/// (one entry each, kept for ever).
#[test]
fn dropped_sites_are_recycled() {
    const FAULTS: u64 = 10_000;
    let page = |n: u64| 0x7f0000000000u64 + n * 4096;
    let mut text = String::from(
        "# snapshot maps 100 1.000000000 start\n\
         #| 00400000-00401000 r-xp 00000000 08:01 5    /usr/bin/app\n\
         #| 7f0000000000-7f0010000000 rw-p 00000000 00:00 0\n",
    );
    let mut resident = std::collections::BTreeSet::new();
    let mut released = 0u64;
    for n in 0..FAULTS {
        let (ip, caller) = (0x400000 + (n % 256) * 16, 0x400000 + (n / 256) * 16);
        text.push_str(&format!(
            "2.{n:09} 100/100 fault type=anon access=W addr={:#x} ip={ip:#x} stack={ip:#x},{caller:#x}\n",
            page(n)
        ));
        resident.insert(n);
        if n % 10 == 9 {
            // A page brought in 5 faults ago (its site long dropped, or still kept).
            let gone = n - 5;
            text.push_str(&format!(
                "2.{n:09} 100/100 madvise addr={:#x} len=4096 advice=DONTNEED ret=0\n",
                page(gone)
            ));
            resident.remove(&gone);
            released += 1;
        }
        if n % 10 == 5 {
            let child = 1000 + n;
            text.push_str(&format!(
                "2.{n:09} 100/100 fork child={child} watched=1\n\
                 2.{n:09} {child}/{child} fault type=anon access=W addr={:#x} ip=0x7e0000000010 stack=0x7e0000000010\n\
                 2.{n:09} {child}/{child} exit code=0\n",
                page(FAULTS + n)
            ));
        }
    }
    let mut model = CgroupModel::new("/work/job-1", 8);
    let mut reader = CaptureReader::new(text.as_bytes());
    let mut events = 0;
    while let Some(record) = reader.next_record() {
        let (_, record) = record.unwrap();
        model.record(&record);
        events += 1;
        if events % 1000 == 0 {
            model.sample(1.0, 5);
        }
    }
    model.sample(1.0, 5);
    let (kept, dropped) = model.sites();
    assert!(kept <= 8, "{kept} sites kept");
    assert!(dropped >= FAULTS - 8, "{dropped} sites dropped");
    let table = model.replay().sites();
    // Ids: at most the cap, the eighth dropped at once, and the label sites.
    assert!(table.len() <= 16, "{} site ids", table.len());
    assert_eq!(table.space_count(), 0);
    assert_eq!(model.replay().process_count(), 1);

    let picture = model.picture();
    let pages = resident.len() as u64;
    assert_eq!(picture.kind_bytes(model.page_size()).anon, pages * 4096);
    assert_eq!(picture.site_resident.values().sum::<u64>(), pages);
    let label = table
        .label_id(memmon::report::model::sites::LABEL_DROPPED)
        .unwrap();
    let mut kept_pages = 0;
    for (&site, &count) in &picture.site_resident {
        if site == label {
            continue;
        }
        // A kept site: one of the last stacks, holding exactly its one page.
        assert_eq!(count, 1, "site {site}: {:?}", table.frames(site));
        kept_pages += 1;
    }
    assert_eq!(picture.site_resident[&label], pages - kept_pages);

    let stats = model.replay().stats();
    let (mut pages_in, mut released_pages, mut faults) = (0, 0, 0);
    for id in 0..table.len() as u32 {
        if let Some(site) = stats.get(id) {
            pages_in += site.pages_in;
            released_pages += site.released;
            faults += site.total_faults();
        }
    }
    assert_eq!(
        (pages_in, released_pages, faults),
        (FAULTS + 1000, released, FAULTS + 1000)
    );
}

/// A stack as a snapshot or the report names it: per frame, the object's path and the
/// file offset, or the label.
type NamedStack = Vec<String>;

/// The agent's snapshot of a real capture (`base.cap`: `memmon record` of
/// tests/report/alloc_sites in the VM) taken when the stream reaches the mark
/// `after-scratch`, against `memmon report --at after-scratch` of the same capture: the
/// same stacks (object and file offset of every frame) with the same resident bytes.
#[test]
fn snapshot_sites_match_the_report_of_a_record() {
    use memmon::report::model::replay::{Replay, ReplayOptions};
    use memmon::report::model::sites::Frame;
    use memmon::{EventKind, Record};

    let capture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../memmon/tests/fixtures/base.cap"
    ))
    .unwrap();
    const MARK: &str = "after-scratch";

    // The report's view of the mark.
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(capture.as_bytes()).unwrap();
    let analysis = replay.finish();
    let mark = analysis.marks.iter().find(|m| m.text == MARK).unwrap();
    let mut report: BTreeMap<NamedStack, i64> = BTreeMap::new();
    for (&site, &pages) in &mark.holdings.total.site_resident {
        let stack = analysis
            .sites
            .frames(site)
            .iter()
            .map(|frame| match *frame {
                // A snapshot places a return address inside its call, one byte back.
                Frame::Code {
                    object,
                    offset,
                    ret,
                } => format!(
                    "{}+{:#x}",
                    analysis.sites.object_path(object),
                    offset - u64::from(ret)
                ),
                Frame::Label(label) => label.to_owned(),
                Frame::Address { addr, .. } => format!("{addr:#x}"),
                other => format!("{other:?}"),
            })
            .collect();
        *report.entry(stack).or_insert(0) += pages as i64 * PAGE;
    }

    // The agent's model, fed the same records up to the mark.
    let mut model = CgroupModel::new("/work/job-1", 4096);
    let mut reader = CaptureReader::new(capture.as_bytes());
    while let Some(record) = reader.next_record() {
        let (_, record) = record.unwrap();
        let at_mark = matches!(&record, Record::Event(event)
            if matches!(&event.kind, EventKind::Mark { text } if text.to_string_lossy() == MARK));
        model.record(&record);
        if at_mark {
            break;
        }
    }
    model.sample(1.0, 5);
    let bytes = encode(&build(
        model.replay(),
        &SnapshotInfo {
            labels: &BTreeMap::new(),
            time_nanos: 0,
        },
    ))
    .unwrap();
    let profile = decode(&bytes);
    let text = |index: i64| profile.string_table[index as usize].as_str();
    let mut agent: BTreeMap<NamedStack, i64> = BTreeMap::new();
    for sample in &profile.sample {
        let stack = sample
            .location_id
            .iter()
            .map(|id| {
                let location = profile.location.iter().find(|l| l.id == *id).unwrap();
                match profile.mapping.iter().find(|m| m.id == location.mapping_id) {
                    Some(mapping) => format!(
                        "{}+{:#x}",
                        text(mapping.filename),
                        location.address - mapping.memory_start + mapping.file_offset
                    ),
                    None if location.line.is_empty() => format!("{:#x}", location.address),
                    None => {
                        let function = location.line[0].function_id;
                        let function = profile.function.iter().find(|f| f.id == function);
                        text(function.unwrap().name).to_owned()
                    }
                }
            })
            .collect();
        if sample.value[0] != 0 {
            *agent.entry(stack).or_insert(0) += sample.value[0];
        }
    }
    for (stack, bytes) in &report {
        if agent.get(stack) != Some(bytes) {
            eprintln!(
                "DIFF report {bytes} agent {:?}: {stack:?}",
                agent.get(stack)
            );
        }
    }
    for (stack, bytes) in &agent {
        if !report.contains_key(stack) {
            eprintln!("DIFF agent only {bytes}: {stack:?}");
        }
    }
    assert!(report.len() > 20, "{} stacks", report.len());
    assert_eq!(
        agent.values().sum::<i64>(),
        report.values().sum::<i64>(),
        "resident bytes"
    );
    assert_eq!(agent, report);
}

/// `memmon export` reads a spooled snapshot: its labels, time, classes, and each stack as
/// (build ID, file offset) frames with the exact values; the stack ids are those of the
/// same frames from a capture.
#[test]
fn export_reads_a_snapshot_as_build_id_and_offset() {
    use memmon::export::{pprof, stack_id, StackFrame};
    let mut model = model_of(CAPTURE, 64);
    model.sample(1.0, 5);
    let labels = BTreeMap::from([
        ("host".to_owned(), "box1".to_owned()),
        ("model".to_owned(), "s1".to_owned()),
    ]);
    let profile = build(
        model.replay(),
        &SnapshotInfo {
            labels: &labels,
            time_nanos: 42,
        },
    );
    let bytes = encode(&profile).unwrap();
    let snapshot = pprof::snapshot(&bytes, "a.pb.gz").unwrap();
    assert_eq!(snapshot.labels, labels);
    assert_eq!(snapshot.time_unix_ns, 42);
    assert_eq!(snapshot.anon, 5 * 4096);
    assert_eq!(snapshot.class_bytes["anon_mmap"], 5 * 4096);
    let code = |offset: u64| StackFrame::Code {
        build_id: "abc123".to_owned(),
        file_offset: offset,
        object: "/usr/bin/app".to_owned(),
    };
    let mut stacks: Vec<(Vec<StackFrame>, u64, u64, [u64; 5])> = snapshot
        .samples
        .iter()
        .map(|s| (s.frames.clone(), s.resident, s.mapped, s.faults))
        .collect();
    stacks.sort();
    assert_eq!(
        stacks,
        [
            (vec![code(0x4f)], 0, 65536, [0; 5]),
            (vec![code(0x100), code(0x1ff)], 3 * 4096, 0, [3, 0, 0, 0, 0]),
            (vec![code(0x300)], 2 * 4096, 0, [2, 0, 0, 0, 0]),
            (
                vec![StackFrame::Label("[mapped before watching]".to_owned())],
                0,
                4096 + (1 << 20),
                [0; 5]
            ),
        ]
    );
    // The id ignores the path: the same build on another machine, elsewhere, matches.
    let elsewhere = StackFrame::Code {
        build_id: "abc123".to_owned(),
        file_offset: 0x300,
        object: "/opt/app/bin/app".to_owned(),
    };
    assert_eq!(stack_id(&[code(0x300)]), stack_id(&[elsewhere]));
    // Truncated: skipped with a reason.
    let error = pprof::snapshot(&bytes[..bytes.len() / 2], "a.pb.gz").unwrap_err();
    assert!(error.contains("truncated"), "{error}");
}
