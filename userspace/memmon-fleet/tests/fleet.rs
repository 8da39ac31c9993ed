//! A synthetic fleet derived from real captures (memmon/tests/fixtures, recorded in the
//! VM): the two builds of alloc_sites as two firmware versions, each snapshot a scaling of
//! a capture's peak, some with a subset of its stacks, some recorded "at other load
//! addresses" (the capture relocated), labelled over models, versions and groups. The test
//! knows the sums and means exactly; the embedded and the Ballista runs must give them and
//! identical files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use memmon::export::{capture, stack_id, write::DatasetWriter, SnapshotData};
use memmon::report::symbolize::symbols::SymbolOptions;
use memmon_fleet::engine::Engine;
use memmon_fleet::query::Question;
use memmon_fleet::run::{mean, run, DiffSpec, RunOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../memmon/tests/fixtures")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fixture binaries at the paths the captures name, for symbols.
fn sysroot() -> PathBuf {
    // Once per test binary: its tests run in parallel and must not write the same files.
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(make_sysroot).clone()
}

fn make_sysroot() -> PathBuf {
    use std::io::Read;
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fleet-sysroot");
    std::fs::create_dir_all(root.join("host")).unwrap();
    for name in ["alloc_sites", "alloc_sites5"] {
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(fixture(&format!("{name}.gz"))).unwrap())
            .read_to_end(&mut bytes)
            .unwrap();
        let partial = root
            .join("host")
            .join(format!("{name}.{}", std::process::id()));
        std::fs::write(&partial, bytes).unwrap();
        std::fs::rename(&partial, root.join("host").join(name)).unwrap();
    }
    root
}

/// Hex numbers in the mmap area moved by `delta` (the same run at other load addresses).
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

/// The process of a capture holding the most at the peak.
fn main_snapshot(text: &str) -> SnapshotData {
    let mut snapshots = capture::snapshots(text.as_bytes(), "capture", None).unwrap();
    snapshots.sort_by_key(|s| std::cmp::Reverse(s.resident()));
    snapshots.remove(0)
}

fn scaled(source: &SnapshotData, factor: u64, keep_every_third: bool) -> SnapshotData {
    let mut out = source.clone();
    out.anon *= factor;
    out.file *= factor;
    out.shmem *= factor;
    for bytes in out.class_bytes.values_mut() {
        *bytes *= factor;
    }
    if !keep_every_third {
        let mut index = 0;
        out.samples.retain(|_| {
            index += 1;
            index % 3 != 0
        });
    }
    for sample in &mut out.samples {
        sample.resident *= factor;
        sample.mapped *= factor;
        sample.faults = sample.faults.map(|f| f * factor);
    }
    out
}

/// The fleet: 2 models × 2 versions × 2 groups; 3 snapshots per baseline cluster and 4
/// per test cluster.
fn fleet() -> Vec<SnapshotData> {
    let base = std::fs::read_to_string(fixture("base.cap")).unwrap();
    let grown = std::fs::read_to_string(fixture("grown.cap")).unwrap();
    let sources = [
        (
            "1.0",
            main_snapshot(&base),
            main_snapshot(&relocate(&base, 0x5_0000_0000)),
        ),
        (
            "2.0",
            main_snapshot(&grown),
            main_snapshot(&relocate(&grown, 0x1_2340_0000)),
        ),
    ];
    let mut out = Vec::new();
    let mut id = 1000;
    for model in ["s1", "s2"] {
        for (version, source, moved) in &sources {
            for group in ["baseline", "test"] {
                let count = if group == "test" { 4 } else { 3 };
                for j in 0..count {
                    let factor = j + 1 + u64::from(model == "s2") + u64::from(group == "test");
                    let from = if j == 2 { moved } else { source };
                    let mut snapshot = scaled(from, factor, j % 2 == 0);
                    id += 1;
                    snapshot.id = id;
                    snapshot.source = format!("{model}-{version}-{group}-{j}");
                    snapshot.labels = BTreeMap::from([
                        ("model".to_owned(), model.to_owned()),
                        ("version".to_owned(), version.to_string()),
                        ("group".to_owned(), group.to_owned()),
                        ("host".to_owned(), format!("h{j}")),
                    ]);
                    out.push(snapshot);
                }
            }
        }
    }
    out
}

fn write_dataset(dir: &Path, snapshots: &[SnapshotData]) {
    // Two exports: two parts.
    let (first, second) = snapshots.split_at(snapshots.len() / 2);
    for part in [first, second] {
        let mut writer = DatasetWriter::create(dir).unwrap();
        for snapshot in part {
            writer.add(snapshot).unwrap();
        }
        writer.finish().unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Expected {
    snapshots: u64,
    resident: u64,
    anon: u64,
    file: u64,
    stacks: BTreeMap<i64, u64>,
}

/// The clusters by (model, version, group), of the top N by RSS of each when asked.
fn expected(snapshots: &[SnapshotData], top: Option<usize>) -> BTreeMap<Vec<String>, Expected> {
    let mut members: BTreeMap<Vec<String>, Vec<&SnapshotData>> = BTreeMap::new();
    for s in snapshots {
        let key = ["model", "version", "group"]
            .map(|k| s.labels[k].clone())
            .to_vec();
        members.entry(key).or_default().push(s);
    }
    members
        .into_iter()
        .map(|(key, mut list)| {
            list.sort_by_key(|s| (std::cmp::Reverse(s.resident()), s.id));
            list.truncate(top.unwrap_or(usize::MAX));
            let mut e = Expected {
                snapshots: list.len() as u64,
                ..Expected::default()
            };
            for s in list {
                e.resident += s.resident();
                e.anon += s.anon;
                e.file += s.file;
                for sample in &s.samples {
                    *e.stacks.entry(stack_id(&sample.frames)).or_default() += sample.resident;
                }
            }
            (key, e)
        })
        .collect()
}

fn options(dataset: &Path, output: &Path, engine: Engine, top: Option<u64>) -> RunOptions {
    RunOptions {
        dataset: dataset.to_path_buf(),
        question: Question {
            by: vec!["model".into(), "version".into(), "group".into()],
            top: top.into_iter().collect(),
            ..Question::default()
        },
        diff: Some(DiffSpec::parse("group=baseline:test").unwrap()),
        compare: Vec::new(),
        diff_threshold: memmon_fleet::compare::DEFAULT_THRESHOLD,
        engine,
        symbols: SymbolOptions {
            sysroot: Some(sysroot()),
            ..SymbolOptions::default()
        },
        rows: 10,
        min_snapshots: 1,
        reverse: false,
        output: output.to_path_buf(),
    }
}

fn local() -> Engine {
    Engine::Local {
        memory_limit: 64 << 20,
    }
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// The files of a directory and its folders (the sub-clusters'), by path.
#[cfg(feature = "ballista")]
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() {
            for (inner, bytes) in files(&entry.path()) {
                out.insert(format!("{name}/{inner}"), bytes);
            }
        } else {
            out.insert(name, std::fs::read(entry.path()).unwrap());
        }
    }
    out
}

#[cfg(feature = "ballista")]
fn assert_same_files(a: &Path, b: &Path) {
    let (a, b) = (files(a), files(b));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(*bytes == b[name], "{name} differs");
    }
    // clusters.csv, 16 clusters and sub-clusters of 4 files each, 8 diffs of 4 files.
    assert_eq!(a.len(), 1 + 16 * 4 + 8 * 4);
}

fn csv_of(expected: &BTreeMap<Vec<String>, Expected>, subset: &str) -> Vec<Vec<String>> {
    expected
        .iter()
        .map(|(key, e)| {
            let mut row = key.clone();
            row.push(subset.to_owned());
            row.push(e.snapshots.to_string());
            for sum in [e.resident, e.anon, e.file] {
                let thousandths = mean(sum as i64 * 1000, e.snapshots);
                let text = if thousandths.is_multiple_of(1000) {
                    (thousandths / 1000).to_string()
                } else {
                    format!("{}.{:03}", thousandths / 1000, thousandths % 1000)
                        .trim_end_matches('0')
                        .to_owned()
                };
                row.push(text);
            }
            row
        })
        .collect()
}

fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "model,version,group,subset,snapshots,mean_resident_bytes,mean_anon_bytes,mean_file_bytes,\
         mean_shmem_bytes,mean_allocated_bytes,p50_resident_bytes,p95_resident_bytes,\
         p99_resident_bytes,mean_lifetime_seconds,top_own_sites"
    );
    lines
        .map(|line| line.split(',').take(8).map(str::to_owned).collect())
        .collect()
}

/// The sum of a folded file's weights.
fn folded_total(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

/// A dataset's parquet file rewritten without the column `allocated_bytes`, as exports
/// wrote them before it.
fn drop_allocated(path: &Path) {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let schema = batches[0].schema();
    let keep: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| schema.field(i).name() != "allocated_bytes")
        .collect();
    assert_eq!(keep.len() + 1, schema.fields().len());
    let projected = std::sync::Arc::new(schema.project(&keep).unwrap());
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), projected, None).unwrap();
    for batch in &batches {
        writer.write(&batch.project(&keep).unwrap()).unwrap();
    }
    writer.close().unwrap();
}

/// A dataset exported before `allocated_bytes`: read with nulls there, the same answers.
#[test]
fn parts_written_before_allocated_bytes_give_the_same_answers() {
    let snapshots = fleet();
    let new = tmp("fleet-dataset-new");
    write_dataset(&new, &snapshots);
    let old = tmp("fleet-dataset-old");
    for table in ["snapshots", "samples", "stacks"] {
        std::fs::create_dir_all(old.join(table)).unwrap();
        for entry in std::fs::read_dir(new.join(table)).unwrap().flatten() {
            let copy = old.join(table).join(entry.file_name());
            std::fs::copy(entry.path(), &copy).unwrap();
            if table != "stacks" {
                drop_allocated(&copy);
            }
        }
    }
    let (out_new, out_old) = (tmp("fleet-out-new"), tmp("fleet-out-old"));
    let summary = block_on(run(&options(&new, &out_new, local(), None))).unwrap();
    let summary_old = block_on(run(&options(&old, &out_old, local(), None))).unwrap();
    assert_eq!(summary_old.skipped, 0);
    assert_eq!(summary_old.snapshots, summary.snapshots);
    for name in ["clusters.csv", "s1-1.0-baseline.folded", "s2-2.0-test.txt"] {
        assert_eq!(
            std::fs::read_to_string(out_old.join(name)).unwrap(),
            std::fs::read_to_string(out_new.join(name)).unwrap(),
            "{name}"
        );
    }
}

/// `--since`/`--until` keep a day's snapshots, `--min-snapshots` drops the small clusters;
/// the percentiles of RSS are the nearest ranks of each cluster's snapshots.
#[test]
fn a_days_snapshots_the_clusters_big_enough_and_their_percentiles() {
    let day = 1_796_601_600_000_000_000i64;
    let hour = 3_600_000_000_000i64;
    let mut snapshots = fleet();
    // From 6 hours before the day to well into it, an hour apart.
    for (index, snapshot) in snapshots.iter_mut().enumerate() {
        snapshot.time_unix_ns = day - 6 * hour + index as i64 * hour;
    }
    let dataset = tmp("fleet-dataset-day");
    write_dataset(&dataset, &snapshots);
    let output = tmp("fleet-out-day");
    let mut options = options(&dataset, &output, local(), None);
    options.diff = None;
    options.question.since = Some(memmon_fleet::query::parse_time("2026-12-07").unwrap());
    options.question.until = Some(memmon_fleet::query::parse_time("2026-12-07T18:00").unwrap());
    options.min_snapshots = 3;
    let summary = block_on(run(&options)).unwrap();
    // The day's: indices 6..24.
    let chosen: Vec<SnapshotData> = snapshots[6..24].to_vec();
    let expected = expected(&chosen, None);
    let kept: BTreeMap<_, _> = expected.iter().filter(|(_, e)| e.snapshots >= 3).collect();
    assert_eq!(summary.dropped, expected.len() - kept.len());
    assert!(summary.dropped > 0 && !kept.is_empty(), "{expected:?}");
    let text = std::fs::read_to_string(output.join("clusters.csv")).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), kept.len());
    for (row, (key, e)) in rows.iter().zip(&kept) {
        assert_eq!(
            row[..3],
            key.iter().map(String::as_str).collect::<Vec<_>>()[..]
        );
        // No sub-cluster.
        assert_eq!(row[3], "");
        assert_eq!(row[4], e.snapshots.to_string());
        let mut rss: Vec<u64> = chosen
            .iter()
            .filter(|s| {
                ["model", "version", "group"]
                    .map(|k| s.labels[k].clone())
                    .to_vec()
                    == **key
            })
            .map(SnapshotData::resident)
            .collect();
        rss.sort_unstable();
        let n = rss.len() as u64;
        for (column, p) in [(10, 50), (11, 95), (12, 99)] {
            let rank = (p * n).div_ceil(100) as usize;
            assert_eq!(row[column], rss[rank - 1].to_string(), "p{p} of {key:?}");
        }
        // No heap profiles: no allocated mean.
        assert_eq!(row[9], "");
    }
}

#[test]
fn the_embedded_run_gives_the_exact_means_top_n_and_diffs() {
    let snapshots = fleet();
    assert_eq!(snapshots.len(), 28);
    let dataset = tmp("fleet-dataset");
    write_dataset(&dataset, &snapshots);
    // A truncated part and one of another schema: skipped, named, counted.
    let part = std::fs::read_dir(dataset.join("snapshots"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name();
    for table in ["snapshots", "samples", "stacks"] {
        let bytes = std::fs::read(dataset.join(table).join(&part)).unwrap();
        std::fs::write(
            dataset.join(table).join("part-truncated.parquet"),
            &bytes[..bytes.len() / 2],
        )
        .unwrap();
    }
    for table in ["snapshots", "samples", "stacks"] {
        // The samples file where the snapshots file should be: a wrong schema.
        let wrong = if table == "snapshots" {
            "samples"
        } else {
            table
        };
        std::fs::copy(
            dataset.join(wrong).join(&part),
            dataset.join(table).join("part-wrong.parquet"),
        )
        .unwrap();
    }
    let dataset_info = memmon_fleet::dataset::Dataset::open(&dataset).unwrap();
    assert_eq!(dataset_info.snapshots, 28);
    assert_eq!(dataset_info.skipped.len(), 2, "{:?}", dataset_info.skipped);
    assert!(dataset_info.skipped[0].contains("part-truncated.parquet skipped"));
    assert!(dataset_info.skipped[0].contains("truncated"));
    assert!(dataset_info.skipped[1].contains("part-wrong.parquet skipped"));
    assert!(dataset_info.skipped[1].contains("wrong schema"));

    let out = tmp("fleet-local");
    let summary = block_on(run(&options(&dataset, &out, local(), None))).unwrap();
    assert_eq!(summary.clusters, 8);
    assert_eq!(summary.diffs, 4);
    assert_eq!(summary.skipped, 2);
    let all = expected(&snapshots, None);
    assert_eq!(csv_rows(&out.join("clusters.csv")), csv_of(&all, ""));
    // Every stack's sum per cluster, exactly, from the engine.
    let context = block_on(local().session(&dataset_info)).unwrap();
    let question = options(&dataset, &out, local(), None).question;
    let answers = block_on(memmon_fleet::query::answer(&context, &question)).unwrap();
    let mut partial_pages = 0;
    for (key, e) in &all {
        // The key of a cluster: its labels' values, then its sub-cluster ("": itself).
        let mut whole = key.clone();
        whole.push(String::new());
        let sums = &answers.clusters[&whole];
        assert_eq!(sums.snapshots, e.snapshots);
        let stacks: BTreeMap<i64, u64> = sums
            .stacks
            .iter()
            .map(|(&id, v)| (id, v[0] as u64))
            .filter(|(_, v)| *v > 0)
            .collect();
        let wanted: BTreeMap<i64, u64> = e
            .stacks
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(stacks, wanted, "{key:?}");
        // The folded means: each stack's mean in bytes (not rounded to pages), summed.
        let name = key.join("-");
        let folded: u64 = e
            .stacks
            .values()
            .map(|&sum| mean(sum as i64, e.snapshots))
            .sum();
        let whole_pages = e
            .stacks
            .values()
            .all(|&sum| mean(sum as i64, e.snapshots).is_multiple_of(4096));
        if !whole_pages {
            partial_pages += 1;
        }
        assert_eq!(
            folded_total(&out.join(format!("{name}.folded"))),
            folded,
            "{name}"
        );
        for ext in ["txt", "html", "pb.gz"] {
            assert!(out.join(format!("{name}.{ext}")).is_file(), "{name}.{ext}");
        }
        // The text's first lines say what the cluster is.
        let text = std::fs::read_to_string(out.join(format!("{name}.txt"))).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(&*format!(
                "memmon fleet: {} snapshots; sites from call stacks",
                e.snapshots
            ))
        );
        let moment = lines.next().unwrap();
        assert!(
            moment.starts_with(&format!(
                "at the mean of {} snapshots of model={} version={} group={}: resident ",
                e.snapshots, key[0], key[1], key[2]
            )),
            "{moment}"
        );
    }
    assert!(
        partial_pages > 0,
        "no cluster has a mean of a part of a page"
    );
    // A stack in only some of a cluster's snapshots: its mean counts 0 for the others.
    let key: Vec<String> = ["s1", "1.0", "baseline"].map(String::from).to_vec();
    let e = &all[&key];
    let partial = e.stacks.iter().find(|(id, _)| {
        snapshots
            .iter()
            .filter(|s| {
                s.labels["model"] == "s1"
                    && s.labels["version"] == "1.0"
                    && s.labels["group"] == "baseline"
            })
            .any(|s| !s.samples.iter().any(|x| stack_id(&x.frames) == **id))
    });
    assert!(
        partial.is_some(),
        "the fleet has a stack absent from some snapshots"
    );
    // Symbolised: the program's functions by name.
    let folded = std::fs::read_to_string(out.join("s1-1.0-baseline.folded")).unwrap();
    assert!(folded.contains("main"), "{folded}");
    // The diffs: one per (model, version).
    let diff =
        std::fs::read_to_string(out.join("diff-s1-1.0-baseline-vs-s1-1.0-test.txt")).unwrap();
    assert!(!diff.is_empty());

    // Top 2 by RSS of each cluster: a sub-cluster CLUSTER/top2 beside each cluster.
    let top_out = tmp("fleet-local-top");
    block_on(run(&options(&dataset, &top_out, local(), Some(2)))).unwrap();
    let mut rows = csv_of(&expected(&snapshots, None), "");
    rows.extend(csv_of(&expected(&snapshots, Some(2)), "top2"));
    rows.sort();
    assert_eq!(csv_rows(&top_out.join("clusters.csv")), rows);
    assert_eq!(
        folded_total(&top_out.join("s1-1.0-baseline/top2.folded")),
        expected(&snapshots, Some(2))[&["s1", "1.0", "baseline"].map(String::from).to_vec()]
            .stacks
            .values()
            .map(|&sum| mean(sum as i64, 2))
            .sum::<u64>()
    );
    assert!(top_out
        .join("diff-s1-1.0-baseline.top2-vs-s1-1.0-test.top2.stacks.csv")
        .exists());
}

/// Without Ballista's crates (make check's build), asking for Ballista is one clear error.
#[cfg(not(feature = "ballista"))]
#[test]
fn without_ballista_the_distributed_engine_is_one_error() {
    let dataset = tmp("fleet-dataset-no-ballista");
    write_dataset(&dataset, &fleet());
    let engine = Engine::Ballista {
        address: "127.0.0.1:50050".to_owned(),
        timeout: Duration::from_secs(60),
    };
    let error = block_on(run(&options(
        &dataset,
        &tmp("fleet-no-ballista"),
        engine,
        None,
    )))
    .map(|_| ())
    .unwrap_err();
    assert_eq!(error, memmon_fleet::engine::WITHOUT_BALLISTA);
}

/// A loopback Ballista cluster: a scheduler and two executors of this crate's binary.
#[cfg(feature = "ballista")]
#[path = "support/cluster.rs"]
mod cluster;

#[cfg(feature = "ballista")]
mod ballista {
    use std::time::Instant;

    use super::cluster::start_cluster;
    use super::*;

    /// A run on the cluster, bounded: a cluster that stops answering fails the test rather
    /// than hanging it.
    fn run_bounded(
        options: &RunOptions,
        logs: &Path,
    ) -> Result<memmon_fleet::run::Summary, String> {
        block_on(async {
            tokio::time::timeout(Duration::from_secs(300), run(options))
                .await
                .unwrap_or_else(|_| panic!("no answer in 300 s; logs in {}", logs.display()))
        })
    }

    #[test]
    fn ballista_with_two_executors_gives_identical_files_and_survives_losing_one() {
        let snapshots = fleet();
        let dataset = tmp("fleet-dataset-ballista");
        write_dataset(&dataset, &snapshots);
        let local_out = tmp("fleet-ballista-local");
        block_on(run(&options(&dataset, &local_out, local(), Some(3)))).unwrap();
        let logs = tmp("fleet-ballista-logs");
        let mut cluster = start_cluster(&logs);
        let engine = Engine::Ballista {
            address: format!("127.0.0.1:{}", cluster.port),
            timeout: Duration::from_secs(60),
        };
        let remote_out = tmp("fleet-ballista-remote");
        let summary = run_bounded(
            &options(&dataset, &remote_out, engine.clone(), Some(3)),
            &logs,
        )
        .unwrap_or_else(|e| panic!("{e}; logs in {}", logs.display()));
        // 8 clusters and their sub-clusters top3.
        assert_eq!(summary.clusters, 16);
        assert_same_files(&local_out, &remote_out);
        // A second run; one executor killed in its middle: the same files or one clear error.
        let again = tmp("fleet-ballista-again");
        let victim = cluster.processes.remove(2);
        let killer = std::thread::spawn(move || {
            let mut victim = victim;
            std::thread::sleep(Duration::from_millis(300));
            // Still running when killed: the run had started and not finished.
            let alive = victim.try_wait().unwrap().is_none();
            victim.kill().unwrap();
            victim.wait().unwrap();
            alive
        });
        let started = Instant::now();
        let result = run_bounded(&options(&dataset, &again, engine, Some(3)), &logs);
        let took = started.elapsed();
        assert!(killer.join().unwrap(), "the executor had died before");
        assert!(
            took > Duration::from_millis(300),
            "the run ended before the kill ({took:?})"
        );
        match result {
            Ok(_) => {
                eprintln!("an executor killed 300 ms into a {took:?} run: identical files");
                assert_same_files(&local_out, &again);
            }
            Err(error) => {
                eprintln!("an executor killed 300 ms into a {took:?} run: {error}");
                assert!(error.starts_with("query failed:"), "{error}");
                assert!(!error.contains('\n'), "one line: {error}");
            }
        }
    }
}
