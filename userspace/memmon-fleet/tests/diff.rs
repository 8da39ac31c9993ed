//! The diff that says what matters, on a synthetic fleet whose figures the test knows:
//! two versions of 5 snapshots each; one stack grows by 2 MiB in every snapshot (flagged,
//! first), one varies as noise with a mean change of 100 KiB (over the threshold but
//! inside the noise: not flagged; absent from some snapshots, counting 0 there), one is
//! the same in both. The means and Welch's bounds are computed here independently (the
//! equal variances of each stack make Welch's degrees of freedom 2(n − 1) = 8, whose
//! 97.5 % quantile is the tables' 2.306004135).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memmon::export::{write::DatasetWriter, SnapshotData, StackFrame, StackSample};
use memmon::report::symbolize::symbols::SymbolOptions;
use memmon_fleet::engine::Engine;
use memmon_fleet::query::Question;
use memmon_fleet::run::{run, DiffSpec, RunOptions};

const MIB: u64 = 1 << 20;
const T_975_8: f64 = 2.306_004_135_033_371;

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

fn stack(inner: &str, outer: &str) -> Vec<StackFrame> {
    vec![
        StackFrame::Label(inner.to_owned()),
        StackFrame::Label(outer.to_owned()),
    ]
}

/// Per version, per snapshot: the bytes of (grows, noise, stable).
fn values() -> BTreeMap<&'static str, Vec<[u64; 3]>> {
    let base_grow: Vec<u64> = (0..5).map(|i| MIB + 4096 * i).collect();
    let base_noise = [0, 4 * MIB, 0, 4 * MIB, 2 * MIB];
    // The same values in another order, 100 KiB more each.
    let new_noise = [4 * MIB, 0, 2 * MIB, 0, 4 * MIB].map(|v| v + 100 * 1024);
    let mut out = BTreeMap::new();
    out.insert(
        "1",
        (0..5)
            .map(|i| [base_grow[i], base_noise[i], 3 * MIB])
            .collect(),
    );
    out.insert(
        "2",
        (0..5)
            .map(|i| [base_grow[i] + 2 * MIB, new_noise[i], 3 * MIB])
            .collect(),
    );
    out
}

fn write_fleet(dir: &Path) {
    let stacks = [
        stack("grow_alloc", "main"),
        stack("noise_alloc", "main"),
        stack("stable_alloc", "main"),
    ];
    let mut writer = DatasetWriter::create(dir).unwrap();
    let mut id = 0;
    for (version, snapshots) in values() {
        for row in snapshots {
            id += 1;
            let samples: Vec<StackSample> = stacks
                .iter()
                .zip(row)
                .filter(|(_, bytes)| *bytes > 0)
                .map(|(frames, bytes)| StackSample {
                    frames: frames.clone(),
                    resident: bytes,
                    ..StackSample::default()
                })
                .collect();
            writer
                .add(&SnapshotData {
                    id,
                    source: format!("s{id}"),
                    labels: BTreeMap::from([("version".to_owned(), version.to_owned())]),
                    time_unix_ns: 1,
                    resident_known: true,
                    anon: row.iter().sum(),
                    class_bytes: BTreeMap::from([("heap".to_owned(), row.iter().sum())]),
                    samples,
                    ..SnapshotData::default()
                })
                .unwrap();
        }
    }
    writer.finish().unwrap();
}

/// Mean, change and Welch's bounds of one stack, from the values.
fn expected(index: usize) -> (f64, f64, f64, f64, f64) {
    let all = values();
    let of = |version: &str| -> Vec<f64> { all[version].iter().map(|r| r[index] as f64).collect() };
    let (a, b) = (of("1"), of("2"));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() as f64 - 1.0)
    };
    assert_eq!(var(&a), var(&b), "equal variances: df = 8");
    let se = (var(&a) / 5.0 + var(&b) / 5.0).sqrt();
    let change = mean(&b) - mean(&a);
    (
        mean(&a),
        mean(&b),
        change,
        change - T_975_8 * se,
        change + T_975_8 * se,
    )
}

fn options(dataset: &Path, output: &Path) -> RunOptions {
    RunOptions {
        dataset: dataset.to_owned(),
        question: Question {
            by: vec!["version".to_owned()],
            ..Question::default()
        },
        diff: Some(DiffSpec::parse("version=1:2").unwrap()),
        compare: Vec::new(),
        diff_threshold: memmon_fleet::compare::DEFAULT_THRESHOLD,
        engine: Engine::Local {
            memory_limit: 64 << 20,
        },
        symbols: SymbolOptions::default(),
        rows: 10,
        min_snapshots: 1,
        reverse: false,
        output: output.to_owned(),
    }
}

#[test]
fn the_grown_stack_is_flagged_first_and_the_noise_is_not() {
    let dir = tmp("diff-welch");
    let dataset = dir.join("dataset");
    write_fleet(&dataset);
    let out = dir.join("out");
    let summary = block_on(run(&options(&dataset, &out))).unwrap();
    assert_eq!(summary.diffs, 1);
    let csv = std::fs::read_to_string(out.join("diff-1-vs-2.stacks.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "flagged,base_mean_bytes,new_mean_bytes,change_bytes,change_low_bytes,\
         change_high_bytes,stack"
    );
    assert_eq!(lines.len(), 4, "{csv}");
    // Flagged first; then by the size of the change.
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.iter().map(|r| (r[0], r[6])).collect::<Vec<_>>(),
        [
            ("yes", "main;grow_alloc"),
            ("", "main;noise_alloc"),
            ("", "main;stable_alloc")
        ]
    );
    for (row, index) in rows.iter().zip([0, 1, 2]) {
        let (base, new, change, low, high) = expected(index);
        let number = |text: &str| text.parse::<f64>().unwrap();
        assert_eq!(number(row[1]), base, "{row:?}");
        assert_eq!(number(row[2]), new, "{row:?}");
        assert_eq!(number(row[3]), change, "{row:?}");
        assert!((number(row[4]) - low).abs() <= 0.0005, "{row:?}: low {low}");
        assert!(
            (number(row[5]) - high).abs() <= 0.0005,
            "{row:?}: high {high}"
        );
    }
    // The figures themselves: the grown stack, 2 MiB more with se = 4096 (its values
    // 1 MiB + 0, 4096, ..., 16384: s² = 2.5 · 4096²); the noise, +100 KiB within ± 2.9 MB.
    assert_eq!(rows[0][1..4], ["1056768", "3153920", "2097152"]);
    assert_eq!(rows[0][4], format!("{:.3}", 2_097_152.0 - T_975_8 * 4096.0));
    assert_eq!(rows[0][4], "2087706.607");
    assert_eq!(rows[0][5], "2106597.393");
    assert_eq!(rows[1][1..4], ["2097152", "2199552", "102400"]);
    assert_eq!(rows[2][1..6], ["3145728", "3145728", "0", "0", "0"]);
    // Over a threshold above the change, nothing is flagged.
    let out_high = dir.join("out-high");
    let mut high = options(&dataset, &out_high);
    high.diff_threshold = 3 * MIB;
    block_on(run(&high)).unwrap();
    let csv_high = std::fs::read_to_string(out_high.join("diff-1-vs-2.stacks.csv")).unwrap();
    assert!(
        csv_high.lines().skip(1).all(|l| l.starts_with(',')),
        "{csv_high}"
    );
    // --compare names any two clusters: the same rows.
    let out_compare = dir.join("out-compare");
    let mut compare = options(&dataset, &out_compare);
    compare.diff = None;
    compare.compare = vec![("1".to_owned(), "2".to_owned())];
    block_on(run(&compare)).unwrap();
    assert_eq!(
        std::fs::read_to_string(out_compare.join("diff-1-vs-2.stacks.csv")).unwrap(),
        csv
    );
    compare.compare = vec![("1".to_owned(), "3".to_owned())];
    let error = block_on(run(&compare)).unwrap_err();
    assert!(error.starts_with("--compare 1:3: no cluster 3"), "{error}");
}

/// Heap profiles of three stacks under two allocators, reversed: rooted at the allocator.
#[test]
fn reversed_folded_stacks_are_rooted_at_the_allocator() {
    let dir = tmp("reverse");
    let dataset = dir.join("dataset");
    let stacks = [
        (vec!["malloc", "parse", "main"], 3000u64),
        (vec!["malloc", "decode", "main"], 5000),
        (vec!["calloc", "decode", "main"], 700),
    ];
    let mut writer = DatasetWriter::create(&dataset).unwrap();
    for id in 1..=2i64 {
        let samples: Vec<StackSample> = stacks
            .iter()
            .map(|(names, bytes)| StackSample {
                frames: names
                    .iter()
                    .map(|n| StackFrame::Label((*n).to_owned()))
                    .collect(),
                // The second dump holds twice the first's.
                allocated: bytes * id as u64,
                ..StackSample::default()
            })
            .collect();
        writer
            .add(&SnapshotData {
                id,
                source: format!("dump{id}"),
                labels: BTreeMap::from([("version".to_owned(), "1".to_owned())]),
                allocated: Some(samples.iter().map(|s| s.allocated).sum()),
                samples,
                ..SnapshotData::default()
            })
            .unwrap();
    }
    writer.finish().unwrap();
    let mut options = options(&dataset, &dir.join("out"));
    options.diff = None;
    options.reverse = true;
    block_on(run(&options)).unwrap();
    // Means over the 2 dumps: 1.5 times the first's.
    assert_eq!(
        std::fs::read_to_string(dir.join("out/1.allocated.folded")).unwrap(),
        "calloc;decode;main 1050\nmalloc;decode;main 7500\nmalloc;parse;main 4500\n"
    );
    options.reverse = false;
    options.output = dir.join("out-forward");
    block_on(run(&options)).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("out-forward/1.allocated.folded")).unwrap(),
        "main;decode;calloc 1050\nmain;decode;malloc 7500\nmain;parse;malloc 4500\n"
    );
    // The page's flame graph: inferno's reversed stacks, one `malloc` box of all its
    // callers' 12 000 bytes at the root; forward, malloc is two boxes (7 500 and 4 500).
    let page = std::fs::read_to_string(dir.join("out/1.allocated.html")).unwrap();
    let forward = std::fs::read_to_string(dir.join("out-forward/1.allocated.html")).unwrap();
    let malloc_boxes = |html: &str| -> Vec<String> {
        html.match_indices("&lt;title&gt;malloc (")
            .map(|(at, _)| {
                let rest = &html[at + "&lt;title&gt;malloc (".len()..];
                rest[..rest.find(' ').unwrap()].to_owned()
            })
            .collect()
    };
    assert_eq!(malloc_boxes(&page), ["12,000"]);
    let mut forward_boxes = malloc_boxes(&forward);
    forward_boxes.sort();
    assert_eq!(forward_boxes, ["4,500", "7,500"]);
}

/// Nested tops and `--reason`: exact membership of each sub-cluster.
#[test]
fn nested_tops_and_reasons_are_sub_clusters() {
    let dir = tmp("tiers");
    let dataset = dir.join("dataset");
    // (id, RSS in MiB, reason)
    let snapshots = [
        (1, 10, "interval"),
        (2, 60, "near-limit"),
        (3, 30, "interval"),
        (4, 50, "interval"),
        (5, 20, "kill"),
        (6, 40, "exit"),
    ];
    let mut writer = DatasetWriter::create(&dataset).unwrap();
    for (id, rss, reason) in snapshots {
        writer
            .add(&SnapshotData {
                id,
                source: format!("s{id}"),
                labels: BTreeMap::from([
                    ("version".to_owned(), "1".to_owned()),
                    ("reason".to_owned(), reason.to_owned()),
                ]),
                time_unix_ns: 1,
                resident_known: true,
                anon: rss * MIB,
                samples: vec![StackSample {
                    frames: stack(&format!("snapshot{id}"), "main"),
                    resident: rss * MIB,
                    ..StackSample::default()
                }],
                ..SnapshotData::default()
            })
            .unwrap();
    }
    writer.finish().unwrap();
    let mut options = options(&dataset, &dir.join("out"));
    options.diff = None;
    options.question.top = vec![3, 1];
    options.question.reasons = vec!["near-limit".to_owned(), "kill".to_owned()];
    let summary = block_on(run(&options)).unwrap();
    assert_eq!(summary.clusters, 9);
    let csv = std::fs::read_to_string(dir.join("out/clusters.csv")).unwrap();
    let rows: Vec<String> = csv
        .lines()
        .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
        .collect();
    let mib = |m: u64| (m * MIB).to_string();
    assert_eq!(
        rows,
        [
            "version,subset,snapshots,mean_resident_bytes".to_owned(),
            // 1, 3, 4, 6: the snapshots of no reason asked.
            format!("1,,4,{}", 130 * MIB / 4),
            format!("1,kill,1,{}", mib(20)),
            format!("1,kill/top1,1,{}", mib(20)),
            format!("1,kill/top3,1,{}", mib(20)),
            format!("1,near-limit,1,{}", mib(60)),
            format!("1,near-limit/top1,1,{}", mib(60)),
            format!("1,near-limit/top3,1,{}", mib(60)),
            // 4 (50 MiB).
            format!("1,top1,1,{}", mib(50)),
            // 4, 6, 3 (50, 40, 30 MiB).
            format!("1,top3,3,{}", mib(40)),
        ]
    );
    // Each sub-cluster's files hold its own snapshots' stacks.
    let folded = |name: &str| std::fs::read_to_string(dir.join("out").join(name)).unwrap();
    assert_eq!(
        folded("1/top1.folded"),
        format!("main;snapshot4 {}\n", mib(50))
    );
    assert_eq!(
        folded("1/top3.folded"),
        format!(
            "main;snapshot3 {}\nmain;snapshot4 {}\nmain;snapshot6 {}\n",
            mib(10),
            // The nearest byte of 50 MiB / 3 and 40 MiB / 3.
            17_476_267,
            13_981_013
        )
    );
    assert_eq!(
        folded("1/near-limit.folded"),
        format!("main;snapshot2 {}\n", mib(60))
    );
    assert_eq!(
        folded("1.folded").lines().count(),
        4,
        "1, 3, 4, 6 only: {}",
        folded("1.folded")
    );
}

/// Stacks are matched by function chain: a Rust function whose symbol hash changed between
/// builds (other stack ids) is one row; a chain of two call sites in one cluster has its
/// variance bounded above (Cauchy–Schwarz: twice the sum of their squares).
#[test]
fn chains_match_across_builds_and_merged_sites_widen_the_interval() {
    const KIB: u64 = 1024;
    let dir = tmp("diff-chains");
    let dataset = dir.join("dataset");
    let grow = |hash: &str| stack(&format!("app::grow::h{hash}"), "main");
    // Per version, its stacks with their KiB in each of 3 snapshots.
    type Stacks = Vec<(Vec<StackFrame>, [u64; 3])>;
    let versions: [(&str, Stacks); 2] = [
        ("1", vec![(grow("1111111111111111"), [10, 20, 30])]),
        (
            "2",
            vec![
                (grow("2222222222222222"), [10, 20, 30]),
                (grow("3333333333333333"), [5, 5, 5]),
            ],
        ),
    ];
    let mut writer = DatasetWriter::create(&dataset).unwrap();
    let mut id = 0;
    for (version, stacks) in &versions {
        for j in 0..3 {
            id += 1;
            let samples: Vec<StackSample> = stacks
                .iter()
                .map(|(frames, kib)| StackSample {
                    frames: frames.clone(),
                    resident: kib[j] * KIB,
                    ..StackSample::default()
                })
                .collect();
            writer
                .add(&SnapshotData {
                    id,
                    source: format!("s{id}"),
                    labels: BTreeMap::from([("version".to_owned(), (*version).to_owned())]),
                    time_unix_ns: 1,
                    resident_known: true,
                    anon: samples.iter().map(|s| s.resident).sum(),
                    samples,
                    ..SnapshotData::default()
                })
                .unwrap();
        }
    }
    writer.finish().unwrap();
    assert_ne!(
        memmon::export::stack_id(&grow("1111111111111111")),
        memmon::export::stack_id(&grow("2222222222222222"))
    );
    let out = dir.join("out");
    let mut options = options(&dataset, &out);
    options.diff_threshold = 1;
    block_on(run(&options)).unwrap();
    let csv = std::fs::read_to_string(out.join("diff-1-vs-2.stacks.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(lines.len(), 1, "{csv}");
    let row: Vec<&str> = lines[0].split(',').collect();
    // 10, 20, 30 KiB against 15, 25, 35 KiB.
    assert_eq!(row[1..4], ["20480", "25600", "5120"]);
    assert_eq!(row[6], "main;app::grow");
    // Base: s² = 100 KiB² exactly; new: bounded by (2 · 2950 − 75² / 3)... in KiB²:
    // Q ≤ 2 · (10² + 20² + 30² + 3 · 5²) = 2950, S = 75, s² ≤ (2950 − 1875) / 2 = 537.5
    // (the exact 100 would be narrower).
    let kib2 = (KIB * KIB) as f64;
    let (a, b) = (100.0 * kib2 / 3.0, 537.5 * kib2 / 3.0);
    let df = (a + b) * (a + b) / (a * a / 2.0 + b * b / 2.0);
    let half = memmon_fleet::compare::student_t_quantile(0.975, df) * (a + b).sqrt();
    let number = |text: &str| text.parse::<f64>().unwrap();
    assert!(
        (number(row[4]) - (5120.0 - half)).abs() <= 0.0005,
        "{row:?}"
    );
    assert!(
        (number(row[5]) - (5120.0 + half)).abs() <= 0.0005,
        "{row:?}"
    );
    // Within the noise: not flagged.
    assert_eq!(row[0], "");
}
