//! `memmon report --group-by cgroup|process`: the resident memory at the moment shown
//! (the peak by default) by the cgroup of each process (`# cgroup PID PATH` headers of
//! `record`; a forked child without one is in its parent's) or by process, each group with
//! its RSS tree and sites. Here the peak is the last fault (5.6 s: 24 KiB, as at the end).

use memmon::report::view::memory::GroupBy;
use memmon::report::{prepare, report, Moment, ReportOptions};

const CAPTURE: &str = "\
# memmon-capture 1
# kernel 6.8.0
# pids 212 300
# cgroup 212 /system.slice/a.service
# cgroup 300 /system.slice/b.service
# snapshot maps 212 5.000000000 start
#| 00400000-00401000 r-xp 00000000 08:01 1234 /bin/a
# snapshot maps 300 5.000000000 start
#| 00400000-00401000 r-xp 00000000 08:01 1235 /bin/b
5.100000000 212/212 mmap addr=0x0 len=16384 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
5.200000000 212/212 fault type=anon access=W addr=0x7f0000000000 ip=0x400100
5.200000001 212/212 fault type=anon access=W addr=0x7f0000001000 ip=0x400100
5.300000000 300/300 mmap addr=0x0 len=8192 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f1000000000
5.400000000 300/300 fault type=anon access=W addr=0x7f1000000000 ip=0x400200
5.500000000 212/212 fork child=213 watched=1
5.600000000 213/213 fault type=anon access=W addr=0x7f0000002000 ip=0x400180
5.700000000 213/213 exit code=0
";

const KIB: u64 = 1024;

/// The capture in a file of its own (tests run in parallel).
fn capture() -> std::path::PathBuf {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = std::env::temp_dir().join(format!("memmon-groups-{}-{n}.txt", std::process::id()));
    std::fs::write(&path, CAPTURE).unwrap();
    path
}

/// A group as compared: name, pids, anon bytes, (site, resident bytes).
type Group = (String, Vec<u32>, u64, Vec<(String, u64)>);

fn groups(by: GroupBy, at: Option<Moment>) -> Vec<Group> {
    let options = ReportOptions {
        group_by: Some(by),
        at,
        ..ReportOptions::default()
    };
    let prepared = prepare(&[capture()], &options).unwrap();
    prepared
        .view
        .groups
        .iter()
        .map(|g| {
            (
                g.name.clone(),
                g.pids.clone(),
                g.totals.anon,
                g.sites.iter().map(|s| (s.name(), s.resident)).collect(),
            )
        })
        .collect()
}

#[test]
fn by_cgroup_the_child_is_in_its_parents() {
    assert_eq!(
        groups(GroupBy::Cgroup, None),
        [
            (
                "cgroup /system.slice/a.service".to_owned(),
                vec![212, 213],
                20 * KIB,
                vec![
                    ("a+0x100".to_owned(), 16 * KIB),
                    ("a+0x180".to_owned(), 4 * KIB)
                ]
            ),
            (
                "cgroup /system.slice/b.service".to_owned(),
                vec![300],
                4 * KIB,
                vec![("b+0x200".to_owned(), 4 * KIB)]
            ),
        ]
    );
}

#[test]
fn by_process_and_the_groups_sum_to_the_total() {
    let by_process = groups(GroupBy::Process, None);
    assert_eq!(
        by_process,
        [
            (
                "process 213".to_owned(),
                vec![213],
                12 * KIB,
                vec![
                    ("a+0x100".to_owned(), 8 * KIB),
                    ("a+0x180".to_owned(), 4 * KIB)
                ]
            ),
            (
                "process 212".to_owned(),
                vec![212],
                8 * KIB,
                vec![("a+0x100".to_owned(), 8 * KIB)]
            ),
            (
                "process 300".to_owned(),
                vec![300],
                4 * KIB,
                vec![("b+0x200".to_owned(), 4 * KIB)]
            ),
        ]
    );
    let prepared = prepare(&[capture()], &ReportOptions::default()).unwrap();
    assert_eq!(prepared.view.totals.anon, 24 * KIB);
    assert!(prepared.view.groups.is_empty());
    // At the end: the same figures, the processes in the order they released their memory
    // (the child at its exit, then the others at the end of the capture).
    let at_end = groups(GroupBy::Process, Some(Moment::End));
    assert_eq!(at_end, by_process);
    assert_eq!(groups(GroupBy::Cgroup, Some(Moment::End))[0].1, [213, 212]);
    // Before the fork (5.5 s): 350 ms after the start (the first event, 5.1 s).
    let before = groups(GroupBy::Process, Some(Moment::parse("350ms")));
    let names: Vec<(&str, u64)> = before.iter().map(|g| (g.0.as_str(), g.2)).collect();
    assert_eq!(names, [("process 212", 8 * KIB), ("process 300", 4 * KIB)]);
}

#[test]
fn text_and_errors() {
    let options = ReportOptions {
        group_by: Some(GroupBy::Cgroup),
        ..ReportOptions::default()
    };
    let text = String::from_utf8(report(&[capture()], &options).unwrap()).unwrap();
    assert!(
        text.contains("\ncgroup /system.slice/a.service: resident 20 KiB (anon 20 KiB, file 0 B, shmem 0 B), processes 212, 213\n    anon anonymous mmap                                  20 KiB\n      16 KiB  a+0x100\n       4 KiB  a+0x180\n"),
        "{text}"
    );
    let diff = ReportOptions {
        diff: true,
        ..options.clone()
    };
    assert_eq!(
        report(&[capture(), capture()], &diff)
            .unwrap_err()
            .to_string(),
        "--group-by groups one report's processes (no --diff)"
    );
}
