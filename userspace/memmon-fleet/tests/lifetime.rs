//! The clusters' mean lifetime: each snapshot's process's age when the snapshot was taken
//! (`time_unix_ns` - `process_start_unix_ns`), averaged over the snapshots that say when
//! their process started, in seconds to the millisecond; empty for a cluster none of whose
//! snapshots says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memmon::export::{write::DatasetWriter, SnapshotData, StackFrame, StackSample};
use memmon::report::symbolize::symbols::SymbolOptions;
use memmon_fleet::engine::Engine;
use memmon_fleet::query::Question;
use memmon_fleet::run::{run, RunOptions};

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const T0: i64 = 1_800_000_000_000_000_000;

#[test]
fn mean_lifetime_of_the_snapshots_that_say() {
    let dir = tmp("lifetime");
    let dataset = dir.join("dataset");
    let mut writer = DatasetWriter::create(&dataset).unwrap();
    // Model a: lifetimes 10.5 s, 20.25 s and 1 h 0.0004 s (below the millisecond: 3600 s),
    // and one snapshot that does not say. Model b: none says.
    let snapshots: [(&str, Option<i64>); 6] = [
        ("a", Some(10_500_000_000)),
        ("a", Some(20_250_000_000)),
        ("a", Some(3_600_000_400_000)),
        ("a", None),
        ("b", None),
        ("b", None),
    ];
    for (id, (model, lifetime)) in snapshots.into_iter().enumerate() {
        let time = T0 + id as i64;
        writer
            .add(&SnapshotData {
                id: id as i64 + 1,
                source: format!("s{id}"),
                labels: BTreeMap::from([("model".to_owned(), model.to_owned())]),
                time_unix_ns: time,
                resident_known: true,
                anon: 1 << 20,
                class_bytes: BTreeMap::from([("heap".to_owned(), 1 << 20)]),
                samples: vec![StackSample {
                    frames: vec![StackFrame::Label("main".to_owned())],
                    resident: 1 << 20,
                    ..StackSample::default()
                }],
                process_start_unix_ns: lifetime.map(|ns| time - ns),
                ..SnapshotData::default()
            })
            .unwrap();
    }
    writer.finish().unwrap();
    let out = dir.join("out");
    let options = RunOptions {
        dataset: dataset.clone(),
        question: Question {
            by: vec!["model".to_owned()],
            ..Question::default()
        },
        diff: None,
        compare: Vec::new(),
        diff_threshold: memmon_fleet::compare::DEFAULT_THRESHOLD,
        engine: Engine::Local {
            memory_limit: 64 << 20,
        },
        symbols: SymbolOptions::default(),
        rows: 10,
        min_snapshots: 1,
        reverse: false,
        output: out.clone(),
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(&options))
        .unwrap();
    let csv = std::fs::read_to_string(out.join("clusters.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|c| *c == "mean_lifetime_seconds")
        .unwrap();
    let rows: BTreeMap<String, String> = lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (cells[0].to_owned(), cells[column].to_owned())
        })
        .collect();
    // (10 500 + 20 250 + 3 600 000) ms / 3 = 1 210 250 ms.
    assert_eq!(rows["a"], "1210.25");
    assert_eq!(rows["b"], "");
}
