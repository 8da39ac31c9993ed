//! Perf maps are per process: `/tmp/perf-PID.map` names the generated code of process PID
//! only (two Node processes recorded together, `record --cgroup`, each have code at the
//! same addresses). A forked child runs its parent's code until it execs: the parent's
//! map names it then, not after the exec. A process without a map shows the address.

use memmon::report::{prepare, Moment, ReportOptions};

/// Processes 400 and 500 ran different code at the same address, 0x7f0000100000, each
/// naming it in its own map; 600 ran code there too and has no map; 401, a fork of 400,
/// runs its parent's code; 402, another fork of 400, execs and then faults from
/// 0x7f0000100020 (code of its new image, which no map names).
const CAPTURE: &str = "\
# memmon-capture 1
# kernel 6.8.0
# pids 400 500 600
5.100000000 400/400 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f1000000000
5.100000001 400/400 fault type=anon access=W addr=0x7f1000000000 ip=0x7f0000100010 stack=0x7f0000100010
5.100000002 400/400 fault type=anon access=W addr=0x7f1000001000 ip=0x7f0000100010 stack=0x7f0000100010
5.200000000 500/500 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f2000000000
5.200000001 500/500 fault type=anon access=W addr=0x7f2000000000 ip=0x7f0000100010 stack=0x7f0000100010
5.300000000 600/600 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f3000000000
5.300000001 600/600 fault type=anon access=W addr=0x7f3000000000 ip=0x7f0000100010 stack=0x7f0000100010
5.300000002 600/600 fault type=anon access=W addr=0x7f3000001000 ip=0x7f0000100010 stack=0x7f0000100010
5.300000003 600/600 fault type=anon access=W addr=0x7f3000002000 ip=0x7f0000100010 stack=0x7f0000100010
5.400000000 400/400 fork child=401 watched=1
5.400000001 401/401 fault type=anon access=W addr=0x7f1000002000 ip=0x7f0000100010 stack=0x7f0000100010
5.500000000 400/400 fork child=402 watched=1
5.500000001 402/402 exec comm=x filename=/bin/x
5.500000002 402/402 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f4000000000
5.500000003 402/402 fault type=anon access=W addr=0x7f4000000000 ip=0x7f0000100020 stack=0x7f0000100020
# snapshot perf-map 400 6.000000000 end
#| 7f0000100000 100 js_alloc_in_400
# snapshot perf-map 500 6.000000000 end
#| 7f0000100000 100 js_alloc_in_500
#| 7f0000200000 100 only_in_500
";

const KIB: u64 = 1024;

fn sites(capture: &str, name: &str) -> Vec<(String, u64)> {
    let path = std::env::temp_dir().join(format!(
        "memmon-perf-maps-{}-{name}.txt",
        std::process::id()
    ));
    std::fs::write(&path, capture).unwrap();
    // At the end: after 402's exec (at the peak, its fork, 402 still holds copies of
    // 400's pages, named by 400's map).
    let options = ReportOptions {
        at: Some(Moment::End),
        ..ReportOptions::default()
    };
    let prepared = prepare(std::slice::from_ref(&path), &options).unwrap();
    let _ = std::fs::remove_file(&path);
    let mut sites: Vec<(String, u64)> = prepared
        .view
        .sites
        .iter()
        .filter(|row| row.resident > 0)
        .map(|row| (row.function().to_owned(), row.resident))
        .collect();
    sites.sort();
    sites
}

/// 400's code holds 20 KiB: its own 2 pages, and 401's 3 (the 2 it shares with 400 since
/// the fork, and one it faulted itself running 400's code). 402's copies went at its exec.
#[test]
fn each_process_is_named_from_its_own_perf_map() {
    assert_eq!(
        sites(CAPTURE, "two"),
        [
            ("[0x7f0000100010]".to_owned(), 12 * KIB),
            ("[0x7f0000100020]".to_owned(), 4 * KIB),
            ("js_alloc_in_400".to_owned(), 20 * KIB),
            ("js_alloc_in_500".to_owned(), 4 * KIB),
        ]
    );
}

#[test]
fn the_same_capture_with_the_maps_the_other_way_round() {
    let swapped = CAPTURE
        .replace("perf-map 400 ", "perf-map 999 ")
        .replace("perf-map 500 ", "perf-map 400 ")
        .replace("perf-map 999 ", "perf-map 500 ");
    assert_eq!(
        sites(&swapped, "swapped"),
        [
            ("[0x7f0000100010]".to_owned(), 12 * KIB),
            ("[0x7f0000100020]".to_owned(), 4 * KIB),
            ("js_alloc_in_400".to_owned(), 4 * KIB),
            ("js_alloc_in_500".to_owned(), 20 * KIB),
        ]
    );
}
