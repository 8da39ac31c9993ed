//! `memmon serve` on a dataset made here from a real capture (memmon/tests/fixtures'
//! base.cap, recorded in the VM, its binary under a sysroot for symbols): 2 models × 2
//! versions × 2 groups of 4 snapshots, one stack of the program grown by 2 MiB in model
//! s1's version 2.0 (and by 0, 4, 8, 12 KiB of noise in every cluster), left out of half of
//! one cluster's snapshots, and one snapshot whose model is HTML with quotes. The service,
//! started on 127.0.0.1:0, must give `memmon fleet`'s figures on the same dataset exactly
//! (clusters.csv, the diff's stacks.csv), find functions and labels, show the program's
//! own function first, flag the grown stack first, drill down to exactly the snapshots
//! holding it, answer bad input with a clear 4xx and go on, read a changing dataset again,
//! and bound its queries. Headless Chromium (Debian's `chromium`) loads the pages at
//! 1400×1000 without a script error; their screenshots are kept in the test's directory.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use memmon::export::{capture, stack_id, write::DatasetWriter, SnapshotData};
use memmon::report::symbolize::symbols::SymbolOptions;
use memmon_fleet::engine::Engine;
use memmon_fleet::query::Question;
use memmon_fleet::run::{run, RunOptions};
use memmon_fleet::serve::{serve, ServeOptions};
use serde_json::Value;

const MIB: u64 = 1 << 20;
/// The model whose label is HTML with quotes.
const NASTY: &str = "s3<script>alert(\"x\")</script>'q";

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

/// The fixture's binary at the path the capture names, for symbols.
fn sysroot() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        use std::io::Read;
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-sysroot");
        std::fs::create_dir_all(root.join("host")).unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(fixture("alloc_sites.gz")).unwrap())
            .read_to_end(&mut bytes)
            .unwrap();
        let partial = root
            .join("host")
            .join(format!("alloc_sites.{}", std::process::id()));
        std::fs::write(&partial, bytes).unwrap();
        std::fs::rename(&partial, root.join("host/alloc_sites")).unwrap();
        root
    })
    .clone()
}

/// The capture's process holding the most at its peak.
fn main_snapshot() -> SnapshotData {
    let text = std::fs::read(fixture("base.cap")).unwrap();
    let mut snapshots = capture::snapshots(&text, "base.cap", None).unwrap();
    snapshots.sort_by_key(|s| std::cmp::Reverse(s.resident()));
    snapshots.remove(0)
}

struct Fleet {
    dataset: PathBuf,
    snapshots: Vec<SnapshotData>,
    /// The stack grown in s1's 2.0.
    grown: i64,
}

/// 2026-12-06T10:00Z.
const TIME: i64 = 1_796_551_200_000_000_000;

fn make_snapshots() -> (Vec<SnapshotData>, i64) {
    let source = main_snapshot();
    // The program's stack holding the most: grown.
    let grown_index = (0..source.samples.len())
        .max_by_key(|&i| (source.samples[i].resident, std::cmp::Reverse(i)))
        .unwrap();
    let grown = stack_id(&source.samples[grown_index].frames);
    let mut out = Vec::new();
    let mut id = 5000;
    for model in ["s1", "s2"] {
        for version in ["1.0", "2.0"] {
            for group in ["a", "b"] {
                for j in 0..4u64 {
                    let mut snapshot = source.clone();
                    id += 1;
                    snapshot.id = id;
                    snapshot.source = format!("{model}-{version}-{group}-{j}.cap");
                    snapshot.time_unix_ns = TIME + (id - 5000) * 60_000_000_000;
                    snapshot.labels = BTreeMap::from([
                        ("model".to_owned(), model.to_owned()),
                        ("version".to_owned(), version.to_owned()),
                        ("group".to_owned(), group.to_owned()),
                        ("host".to_owned(), format!("h{j}")),
                    ]);
                    let mut delta = j * 4096;
                    if model == "s1" && version == "2.0" {
                        delta += 2 * MIB;
                    }
                    let sample = &mut snapshot.samples[grown_index];
                    let before = sample.resident;
                    sample.resident += delta;
                    snapshot.anon += delta;
                    *snapshot.class_bytes.entry("heap".to_owned()).or_default() += delta;
                    // Half of s2's group b do not hold it at all.
                    if model == "s2" && group == "b" && j % 2 == 1 {
                        snapshot.samples.remove(grown_index);
                        snapshot.anon = snapshot.anon.saturating_sub(before + delta);
                        let heap = snapshot.class_bytes.get_mut("heap").unwrap();
                        *heap = heap.saturating_sub(before + delta);
                    }
                    out.push(snapshot);
                }
            }
        }
    }
    let mut nasty = source.clone();
    nasty.id = 9999;
    nasty.source = "nasty\"<b>.cap".to_owned();
    nasty.time_unix_ns = 0;
    nasty.labels = BTreeMap::from([
        ("model".to_owned(), NASTY.to_owned()),
        ("version".to_owned(), "1.0".to_owned()),
        ("group".to_owned(), "a".to_owned()),
    ]);
    out.push(nasty);
    (out, grown)
}

fn write_dataset(dir: &Path, snapshots: &[SnapshotData]) {
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

/// A program that holds two allocations, run under Debian's jemalloc with profiling.
const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) void *hold_big(size_t n) { void *p = malloc(n); memset(p, 1, n); return p; }
__attribute__((noinline)) void **hold_small(int n) {
    void **v = malloc(n * sizeof(void *));
    for (int i = 0; i < n; i++) { v[i] = malloc(64); memset(v[i], 2, 64); }
    return v;
}
int main(int argc, char **argv) {
    int scale = atoi(argv[1]);
    void *a = hold_big((size_t)scale << 20);
    void **b = hold_small(1000 * scale);
    (void)a; (void)b;
    return 0;
}
"#;

/// Two real jemalloc heap dumps (`prof_final`) of the program, exported as snapshots of
/// model s1, version 1.0, group a (a missing cc or jemalloc fails: `make deps`).
fn jemalloc_snapshots(dir: &Path) -> Vec<SnapshotData> {
    use std::process::Command;
    let source = dir.join("held.c");
    std::fs::write(&source, PROGRAM).unwrap();
    let program = dir.join("held");
    let status = Command::new("cc")
        .args(["-g", "-O1", "-fno-omit-frame-pointer", "-o"])
        .arg(&program)
        .arg(&source)
        .status()
        .expect("cc: run `make deps`");
    assert!(status.success());
    let mut out = Vec::new();
    for scale in [2, 3] {
        let prefix = dir.join(format!("jeprof-{scale}"));
        let output = Command::new(&program)
            .arg(scale.to_string())
            .env("LD_PRELOAD", "libjemalloc.so.2")
            .env(
                "MALLOC_CONF",
                format!(
                    "prof:true,lg_prof_sample:14,prof_final:true,prof_prefix:{}",
                    prefix.display()
                ),
            )
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let dump = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("jeprof-{scale}."))
            })
            .expect("no jemalloc dump (libjemalloc2 with profiling: make deps)");
        let labels = BTreeMap::from([
            ("model".to_owned(), "s1".to_owned()),
            ("version".to_owned(), "1.0".to_owned()),
            ("group".to_owned(), "a".to_owned()),
        ]);
        let mut snapshots = memmon::export::read_input(&dump, &labels, None).unwrap();
        assert_eq!(snapshots.len(), 1);
        out.push(snapshots.remove(0));
    }
    out
}

fn fleet() -> &'static Fleet {
    static FLEET: OnceLock<Fleet> = OnceLock::new();
    FLEET.get_or_init(|| {
        let (mut snapshots, grown) = make_snapshots();
        snapshots.extend(jemalloc_snapshots(&tmp("serve-jemalloc")));
        let dataset = tmp("serve-dataset");
        write_dataset(&dataset, &snapshots);
        Fleet {
            dataset,
            snapshots,
            grown,
        }
    })
}

fn by() -> Vec<String> {
    ["model", "version", "group"].map(str::to_owned).to_vec()
}

fn options(dataset: &Path) -> ServeOptions {
    let mut options = ServeOptions::new(
        dataset.to_owned(),
        Engine::Local {
            memory_limit: 64 << 20,
        },
    );
    options.symbols = SymbolOptions {
        sysroot: Some(sysroot()),
        ..SymbolOptions::default()
    };
    options.by = by();
    options
}

/// The service on 127.0.0.1:0, in a thread of its own.
fn start(options: ServeOptions) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                serve(listener, options).await.unwrap();
            });
    });
    address
}

fn server() -> SocketAddr {
    static SERVER: OnceLock<SocketAddr> = OnceLock::new();
    *SERVER.get_or_init(|| start(options(&fleet().dataset)))
}

fn client() -> &'static reqwest::blocking::Client {
    static CLIENT: OnceLock<reqwest::blocking::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap()
    })
}

/// GET `path` (already a URL's path and query): status, content type and body.
fn get(address: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    let response = client()
        .get(format!("http://{address}{path}"))
        .send()
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, kind, response.bytes().unwrap().to_vec())
}

fn text(address: SocketAddr, path: &str) -> (u16, String) {
    let (status, _, body) = get(address, path);
    (status, String::from_utf8(body).unwrap())
}

fn json(address: SocketAddr, path: &str) -> (u16, Value) {
    let (status, kind, body) = get(address, path);
    assert!(kind.starts_with("application/json"), "{path}: {kind}");
    (status, serde_json::from_slice(&body).unwrap())
}

fn ok_json(path: &str) -> Value {
    let (status, value) = json(server(), path);
    assert_eq!(status, 200, "{path}: {value}");
    value
}

fn encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A CSV file's records (quoted fields with doubled quotes).
fn csv_records(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    for line in text.lines() {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => fields.push(std::mem::take(&mut field)),
                _ => field.push(c),
            }
        }
        fields.push(field);
        records.push(fields);
    }
    records
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// `memmon fleet` on the dataset, comparing s1's 1.0 and 2.0 in group a: its output
/// directory.
fn fleet_outputs() -> &'static PathBuf {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    OUT.get_or_init(|| {
        let output = tmp("serve-fleet-out");
        block_on(run(&RunOptions {
            dataset: fleet().dataset.clone(),
            question: Question {
                by: by(),
                ..Question::default()
            },
            diff: None,
            compare: vec![("s1-1.0-a".to_owned(), "s1-2.0-a".to_owned())],
            diff_threshold: memmon_fleet::compare::DEFAULT_THRESHOLD,
            engine: Engine::Local {
                memory_limit: 64 << 20,
            },
            symbols: SymbolOptions {
                sysroot: Some(sysroot()),
                ..SymbolOptions::default()
            },
            rows: 10,
            min_snapshots: 1,
            reverse: false,
            output: output.clone(),
        }))
        .unwrap();
        output
    })
}

fn clusters_csv() -> Vec<Vec<String>> {
    csv_records(&std::fs::read_to_string(fleet_outputs().join("clusters.csv")).unwrap())
}

#[test]
fn the_clusters_are_memmon_fleets_clusters_csv() {
    let csv = clusters_csv();
    let value = ok_json("/api/clusters");
    let columns: Vec<String> = value["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(columns, csv[0]);
    let clusters = value["clusters"].as_array().unwrap();
    // 8 clusters and the nasty one.
    assert_eq!(clusters.len(), 9);
    // s1-1.0-a has both: its 4 captures' RSS and its 2 heap dumps' mean allocated bytes.
    let s1_old = clusters
        .iter()
        .find(|c| c["cluster"] == "s1-1.0-a")
        .unwrap();
    assert_eq!(s1_old["snapshots"], "6");
    let dumps: Vec<u64> = fleet()
        .snapshots
        .iter()
        .filter_map(|s| s.allocated)
        .collect();
    assert_eq!(dumps.len(), 2);
    let sum: u64 = dumps.iter().sum();
    let mean = if sum.is_multiple_of(2) {
        (sum / 2).to_string()
    } else {
        format!("{}.5", sum / 2)
    };
    assert_eq!(s1_old["mean_allocated_bytes"], mean);
    assert!(dumps[0] > 2 * MIB && dumps[1] > 3 * MIB, "{dumps:?}");
    assert_eq!(
        s1_old["mean_resident_bytes"],
        (main_snapshot().resident() + (4096 + 8192 + 12288) / 4).to_string()
    );
    assert_eq!(csv.len(), 1 + 9);
    for (cluster, record) in clusters.iter().zip(&csv[1..]) {
        let served: Vec<String> = columns
            .iter()
            .map(|c| cluster[c].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(&served, record);
    }
    // The means themselves: s1-2.0-a's RSS is the capture's plus the 2 MiB and the noise.
    let source = main_snapshot();
    let s1_new = clusters
        .iter()
        .find(|c| c["cluster"] == "s1-2.0-a")
        .unwrap();
    let expected = source.resident() + 2 * MIB + (4096 + 8192 + 12288) / 4;
    assert_eq!(s1_new["mean_resident_bytes"], expected.to_string());
    assert_eq!(s1_new["snapshots"], "4");
    // The home page shows the same figures (the exact one in data-v).
    let (status, page) = text(server(), "/");
    assert_eq!(status, 200);
    for (cluster, record) in clusters.iter().zip(&csv[1..]) {
        let name = cluster["cluster"].as_str().unwrap();
        let escaped = name.replace('&', "&amp;");
        let row_start = page
            .find(&format!("data-cluster=\"{escaped}\""))
            .unwrap_or_else(|| panic!("no row of {name}"));
        let row = &page[row_start..row_start + page[row_start..].find("</tr>").unwrap()];
        let mean = &record[columns
            .iter()
            .position(|c| c == "mean_resident_bytes")
            .unwrap()];
        assert!(row.contains(&format!("data-v=\"{mean}\"")), "{row}");
    }
    // The columns the dataset has: heap dumps' allocated bytes, captures' RSS.
    for heading in [
        "mean allocated",
        "mean RSS",
        "RSS anon",
        "RSS file",
        "p95 RSS",
    ] {
        assert!(
            page.contains(&format!("<th class=\"n\">{heading}</th>")),
            "{heading}"
        );
    }
    // The label that is HTML: escaped, never markup.
    assert!(page.contains("s3&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&apos;q"));
    assert!(!page.contains("<script>alert"));
    // A day with no snapshot has no cluster; the day of the snapshots has them all.
    assert_eq!(
        ok_json("/api/clusters?day=2026-12-05")["clusters"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        ok_json("/api/clusters?day=2026-12-06")["clusters"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
    // Other labels, a filter, tiers as rows.
    let by_model = ok_json("/api/clusters?by=model&filter=model=s2&top=2");
    let rows: Vec<(String, String)> = by_model["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["cluster"].as_str().unwrap().to_owned(),
                c["snapshots"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("s2".to_owned(), "16".to_owned()),
            ("s2/top2".to_owned(), "2".to_owned())
        ]
    );
}

#[test]
fn search_finds_a_function_and_a_label_value() {
    let found = ok_json("/api/search?q=KEEP_cache");
    let stacks = found["stacks"].as_array().unwrap();
    assert!(!stacks.is_empty(), "{found}");
    for stack in stacks {
        assert!(stack["chain"].as_str().unwrap().contains("keep_cache"));
        assert_eq!(stack["functions"], serde_json::json!(["keep_cache"]));
        assert!(!stack["clusters"].as_array().unwrap().is_empty());
    }
    assert!(found["clusters"].as_array().unwrap().is_empty());
    let found = ok_json("/api/search?q=s2");
    assert_eq!(
        found["clusters"],
        serde_json::json!(["s2-1.0-a", "s2-1.0-b", "s2-2.0-a", "s2-2.0-b"])
    );
    let (status, page) = text(server(), "/search?q=keep_cache");
    assert_eq!(status, 200);
    assert!(
        page.contains("<a class=\"function\" href=\"/drill?function=keep_cache\">keep_cache</a>")
    );
}

/// The first function of a cluster's "your code" table.
fn first_own_function(page: &str) -> &str {
    let table = &page[page.find("id=\"your-code-table\"").expect("your code")..];
    let cell = &table[table.find("<td class=\"name\"").unwrap()..];
    let start = cell.find('>').unwrap() + 1;
    &cell[start..start + cell[start..].find("</td>").unwrap()]
}

#[test]
fn a_clusters_page_shows_the_programs_own_function_first() {
    let csv = clusters_csv();
    let top = csv[0].iter().position(|c| c == "top_own_sites").unwrap();
    let record = csv[1..]
        .iter()
        .find(|r| r[..3] == ["s1", "2.0", "a"])
        .unwrap();
    // "scratch 8388608; ...": its function is the first.
    let first = record[top].split(';').next().unwrap();
    let first = &first[..first.rfind(' ').unwrap()];
    let (status, page) = text(server(), "/cluster?c=s1-2.0-a");
    assert_eq!(status, 200);
    assert_eq!(
        first_own_function(&page),
        format!("{first} (report/alloc_sites.c)")
    );
    assert!(page.contains("id=\"flame-resident\""));
    let api = ok_json("/api/cluster?c=s1-2.0-a");
    assert_eq!(api["your_code"][0]["function"], first);
    // The reversed flame graph's toggle, pprof, the folded stacks both ways.
    assert!(page.contains("href=\"/cluster?c=s1-2.0-a&amp;measure=resident&amp;reversed=1\""));
    let (status, kind, pprof) = get(server(), "/cluster/pprof?c=s1-2.0-a");
    assert_eq!((status, kind.as_str()), (200, "application/octet-stream"));
    assert_eq!(pprof[..2], [0x1f, 0x8b]);
    let (_, folded) = text(server(), "/cluster/folded?c=s1-2.0-a");
    let (_, reversed) = text(server(), "/cluster/folded?c=s1-2.0-a&reversed=1");
    let flip = |line: &str| {
        let (stack, weight) = line.rsplit_once(' ').unwrap();
        let mut frames: Vec<&str> = stack.split(';').collect();
        frames.reverse();
        format!("{} {weight}", frames.join(";"))
    };
    let mut flipped: Vec<String> = folded.lines().map(flip).collect();
    let mut lines: Vec<String> = reversed.lines().map(str::to_owned).collect();
    flipped.sort();
    lines.sort();
    assert!(!lines.is_empty());
    assert_eq!(lines, flipped);
    let (status, page) = text(server(), "/cluster?c=s1-2.0-a&reversed=1");
    assert_eq!(status, 200);
    assert!(page.contains("flame graph root to allocator"));
    // The heap dumps' mean: the program's own function holding most, first.
    let api = ok_json("/api/cluster?c=s1-1.0-a&measure=allocated");
    assert_eq!(api["your_code"][0]["function"], "hold_big");
    assert_eq!(api["your_code"][1]["function"], "hold_small");
    let (status, page) = text(server(), "/cluster?c=s1-1.0-a&measure=allocated");
    assert_eq!(status, 200);
    assert!(first_own_function(&page).starts_with("hold_big ("));
    assert!(page.contains("id=\"other-measure\""));
}

/// The server's chain of a stack id.
fn chain_of(cluster: &str, stack: i64) -> String {
    let api = ok_json(&format!("/api/cluster?c={cluster}"));
    api["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack_id"] == stack)
        .unwrap_or_else(|| panic!("no stack {stack} in {cluster}"))["chain"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_comparisons_first_flagged_row_is_the_grown_stack() {
    let chain = chain_of("s1-1.0-a", fleet().grown);
    assert!(chain.contains("main;"), "{chain}");
    let diff = ok_json("/api/compare?base=s1-1.0-a&new=s1-2.0-a");
    let rows = diff["rows"].as_array().unwrap();
    assert_eq!(rows[0]["flagged"], true);
    assert_eq!(rows[0]["stack"], chain.as_str());
    assert_eq!(rows[0]["change_bytes"], (2 * MIB) as f64);
    assert_eq!(diff["flagged"], 1);
    // memmon fleet --compare's stacks.csv, exactly.
    let csv = std::fs::read_to_string(fleet_outputs().join("diff-s1-1.0-a-vs-s1-2.0-a.stacks.csv"))
        .unwrap();
    assert_eq!(diff["csv"], csv.as_str());
    // The page: the flagged row first, the differential flame graph, the text diff.
    let (status, page) = text(server(), "/compare?base=s1-1.0-a&new=s1-2.0-a");
    assert_eq!(status, 200);
    let table = &page[page.find("id=\"diff-rows\"").unwrap()..];
    let first = &table[table.find("<tr class=").unwrap()..];
    let first = &first[..first.find("</tr>").unwrap()];
    assert!(
        first.starts_with("<tr class=\"flagged\"><td>yes</td>"),
        "{first}"
    );
    assert!(first.contains(&format!(
        "<td class=\"chain\">{}</td>",
        chain.replace('<', "&lt;").replace('>', "&gt;")
    )));
    assert!(page.contains("id=\"flame-diff\""));
    assert!(page.contains("id=\"text-diff\""));
    // Nothing grew between the groups of s2's 1.0.
    let calm = ok_json("/api/compare?base=s2-1.0-a&new=s1-1.0-a");
    assert_eq!(calm["flagged"], 0);
}

#[test]
fn the_drill_down_lists_exactly_the_snapshots_holding_the_stack() {
    let fleet = fleet();
    let mut expected: Vec<(u64, i64)> = fleet
        .snapshots
        .iter()
        .filter_map(|s| {
            s.samples
                .iter()
                .find(|sample| stack_id(&sample.frames) == fleet.grown)
                .map(|sample| (sample.resident, s.id))
        })
        .collect();
    expected.sort_by_key(|&(bytes, id)| (std::cmp::Reverse(bytes), id));
    let served = ok_json(&format!("/api/drill?stack={}", fleet.grown));
    let got: Vec<(u64, i64)> = served["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stack_resident_bytes"].as_u64().unwrap(),
                s["snapshot_id"].as_i64().unwrap(),
            )
        })
        .collect();
    // 33 snapshots, 4 of s2's group b (2 per version) without it.
    assert_eq!(got.len(), 29);
    assert_eq!(got, expected);
    // Each with its labels.
    let first = &served["snapshots"][0];
    assert_eq!(first["labels"]["model"], "s1");
    assert_eq!(first["labels"]["version"], "2.0");
    // In one cluster: those of it that hold it.
    let served = ok_json(&format!("/api/drill?stack={}&c=s2-1.0-b", fleet.grown));
    let ids: Vec<i64> = served["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["snapshot_id"].as_i64().unwrap())
        .collect();
    let expected: Vec<i64> = expected
        .iter()
        .map(|e| e.1)
        .filter(|id| {
            let s = fleet.snapshots.iter().find(|s| s.id == *id).unwrap();
            s.labels["model"] == "s2" && s.labels["version"] == "1.0" && s.labels["group"] == "b"
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids, expected);
    // By the chain (as the comparison links): the same snapshots.
    let chain = chain_of("s1-1.0-a", fleet.grown);
    let by_chain = ok_json(&format!("/api/drill?chain={}", encode(&chain)));
    assert_eq!(by_chain["snapshots"].as_array().unwrap().len(), 29);
    // The page, and a snapshot's own report.
    let (status, page) = text(server(), &format!("/drill?stack={}", fleet.grown));
    assert_eq!(status, 200);
    assert_eq!(page.matches("<tr data-snapshot=").count(), 29);
    let id = expected[0];
    let snapshot = ok_json(&format!("/api/snapshot?id={id}"));
    assert_eq!(snapshot["snapshot"]["labels"]["group"], "b");
    assert!(snapshot["your_code"].as_array().unwrap().len() >= 2);
    let (status, page) = text(server(), &format!("/snapshot?id={id}"));
    assert_eq!(status, 200);
    assert!(page.contains("id=\"your-code-table\""));
}

#[test]
fn bad_input_gets_a_clear_4xx_and_the_service_goes_on() {
    let address = server();
    let script = encode("<script>alert(\"x\")</script>'");
    let cases: Vec<(String, u16, &str)> = vec![
        ("/nope".into(), 404, "no page /nope"),
        ("/api/nope".into(), 404, "no page /api/nope"),
        ("/cluster?c=unknown".into(), 404, "no cluster"),
        ("/api/cluster".into(), 400, "give c=CLUSTER"),
        ("/cluster?c=../../etc/passwd".into(), 404, "no cluster"),
        (
            "/api/cluster?c=..%2F..%2Fetc%2Fpasswd".into(),
            404,
            "no cluster",
        ),
        ("/cluster/pprof?c=%2Fetc%2Fpasswd".into(), 404, "no cluster"),
        ("/../../etc/passwd".into(), 404, "no page"),
        ("/static/..%2F..%2Fetc%2Fpasswd".into(), 404, "no page"),
        ("/daily/..%2F..%2Fetc%2Fpasswd".into(), 404, "no daily"),
        ("/api/clusters?by=model%3Bdrop".into(), 400, "not a label"),
        ("/api/clusters?day=yesterday".into(), 400, "day="),
        ("/api/clusters?bogus=1".into(), 400, "unknown parameter"),
        ("/api/clusters?by=model&by=group".into(), 400, "given twice"),
        ("/api/clusters?top=0".into(), 400, "top="),
        ("/api/clusters?filter=host=h1".into(), 400, "not one of"),
        (
            "/api/cluster?c=s1-1.0-a&stack=1".into(),
            400,
            "not one of this page",
        ),
        ("/api/drill?stack=abc".into(), 400, "not a number"),
        ("/api/drill".into(), 400, "give stack="),
        (
            "/api/drill?function=no_such_function".into(),
            404,
            "no stack",
        ),
        ("/api/compare?base=s1-1.0-a".into(), 400, "give base="),
        (
            "/api/compare?base=s1-1.0-a&new=nope".into(),
            404,
            "no cluster",
        ),
        ("/api/snapshot?id=12345".into(), 404, "no snapshot 12345"),
        (format!("/cluster?c={script}"), 404, "no cluster"),
        (format!("/api/cluster?c={script}"), 404, "no cluster"),
        (
            "/cluster?c=s1-2.0-a&measure=allocated".into(),
            404,
            "no allocated",
        ),
    ];
    for (path, status, message) in &cases {
        let (got, kind, body) = get(address, path);
        let body = String::from_utf8(body).unwrap();
        assert_eq!(got, *status, "{path}: {body}");
        if path.starts_with("/api/") {
            assert!(kind.starts_with("application/json"), "{path}: {kind}");
            let value: Value = serde_json::from_str(&body).unwrap();
            let error = value["error"].as_str().unwrap();
            assert!(error.contains(message), "{path}: {error}");
        } else {
            assert!(kind.starts_with("text/html"), "{path}: {kind}");
            assert!(body.contains("id=\"error\""), "{path}: {body}");
            assert!(body.contains(message), "{path}: {body}");
            assert!(!body.contains("<script>alert"), "{path}: {body}");
        }
        assert!(!body.contains("root:x:0:0"), "{path} read /etc/passwd");
        let (status, _) = json(address, "/api/version");
        assert_eq!(status, 200, "after {path}");
    }
    // Read-only: other methods refused, with an error body.
    for path in ["/api/clusters", "/cluster"] {
        let response = client()
            .post(format!("http://{address}{path}"))
            .body("x")
            .send()
            .unwrap();
        assert_eq!(response.status().as_u16(), 405);
        assert_eq!(response.headers()["allow"], "GET, HEAD");
        let body = response.text().unwrap();
        assert!(
            body.contains("the service is read-only (GET only)"),
            "{body}"
        );
    }
    assert_eq!(json(address, "/api/version").0, 200);
    // Label values with HTML and quotes: escaped in every page.
    let (status, page) = text(address, &format!("/?filter=model={}", encode(NASTY)));
    assert_eq!(status, 200);
    assert!(!page.contains("<script>alert"));
    assert!(page.contains("data-cluster=\"s3_script_alert__x____script__q-1.0-a\""));
    let (status, page) = text(address, &format!("/search?q={script}"));
    assert_eq!(status, 200);
    assert!(!page.contains("<script>alert"));
    assert!(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&apos;"));
    let (status, page) = text(address, "/cluster?c=s3_script_alert__x____script__q-1.0-a");
    assert_eq!(status, 200);
    assert!(!page.contains("<script>alert"));
    let (status, page) = text(
        address,
        "/drill?function=main&c=s3_script_alert__x____script__q-1.0-a",
    );
    assert_eq!(status, 200);
    assert!(page.contains("model=s3&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&apos;q"));
    assert!(page.contains("nasty&quot;&lt;b&gt;.cap"));
    assert!(!page.contains("<script>alert") && !page.contains("<b>.cap"));
}

#[test]
fn a_dataset_that_changes_under_the_service_is_read_again() {
    let (snapshots, _) = make_snapshots();
    let dataset = tmp("serve-dataset-changing");
    write_dataset(&dataset, &snapshots[..8]);
    let address = start(options(&dataset));
    let (_, first) = json(address, "/api/clusters");
    assert_eq!(first["clusters"].as_array().unwrap().len(), 2);
    // A new export: a new version, its clusters.
    let mut writer = DatasetWriter::create(&dataset).unwrap();
    for snapshot in &snapshots[8..16] {
        writer.add(snapshot).unwrap();
    }
    writer.finish().unwrap();
    let (status, second) = json(address, "/api/clusters");
    assert_eq!(status, 200);
    assert_ne!(first["version"], second["version"]);
    assert_eq!(second["clusters"].as_array().unwrap().len(), 4);
    // A part half written: skipped, named, the rest served.
    for table in ["snapshots", "samples", "stacks"] {
        std::fs::write(dataset.join(table).join("part-half.parquet"), b"PAR1 half").unwrap();
    }
    let (status, third) = json(address, "/api/clusters");
    assert_eq!(status, 200, "{third}");
    assert_eq!(third["clusters"].as_array().unwrap().len(), 4);
    let skipped = third["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].as_str().unwrap().contains("part-half.parquet"));
    // Everything gone: a clear error, and back when it is back.
    let moved = dataset.with_extension("moved");
    let _ = std::fs::remove_dir_all(&moved);
    std::fs::rename(&dataset, &moved).unwrap();
    let (status, gone) = json(address, "/api/clusters");
    assert_eq!(status, 503);
    assert!(
        gone["error"].as_str().unwrap().contains("cannot be read"),
        "{gone}"
    );
    let (status, page) = text(address, "/");
    assert_eq!(status, 503);
    assert!(page.contains("id=\"error\""));
    std::fs::rename(&moved, &dataset).unwrap();
    let (status, back) = json(address, "/api/clusters");
    assert_eq!(status, 200);
    assert_eq!(back["version"], third["version"]);
}

#[test]
fn a_query_over_its_bounds_gets_a_clear_error_and_the_service_goes_on() {
    let dataset = &fleet().dataset;
    let mut slow = options(dataset);
    slow.query_timeout = Duration::from_micros(1);
    let address = start(slow);
    let (status, value) = json(address, "/api/clusters");
    assert_eq!(status, 503);
    assert!(
        value["error"]
            .as_str()
            .unwrap()
            .contains("took longer than its limit"),
        "{value}"
    );
    let (status, page) = text(address, "/");
    assert_eq!(status, 503);
    assert!(page.contains("took longer than its limit"));
    assert_eq!(json(address, "/api/version").0, 200);
    let mut small = options(dataset);
    small.engine = Engine::Local { memory_limit: 1024 };
    let address = start(small);
    let (status, value) = json(address, "/api/clusters");
    assert_eq!(status, 503, "{value}");
    assert!(
        value["error"].as_str().unwrap().contains("memory limit"),
        "{value}"
    );
    assert_eq!(json(address, "/api/version").0, 200);
}

/// Headless Chromium on a URL, at 1400×1000: the DOM once the page's script ran, and a
/// screenshot kept at `shot`.
fn chromium(url: &str, shot: &Path) -> String {
    let browser = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|name| {
            std::process::Command::new(name)
                .arg("--version")
                .output()
                .is_ok()
        })
        .expect("Chromium is not installed: install it (Debian package chromium)");
    let run = |extra: &[String]| {
        let profile = tmp(&format!(
            "serve-chromium-{}",
            shot.file_stem().unwrap().to_string_lossy()
        ));
        let output = std::process::Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args([
                "--disable-background-networking",
                "--disable-component-update",
            ])
            .args(["--disable-sync", "--disable-quic", "--hide-scrollbars"])
            .arg("--window-size=1400,1000")
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(url)
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&profile);
        output
    };
    let output = run(&["--virtual-time-budget=5000".into(), "--dump-dom".into()]);
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success() && dom.contains("data-ready=\"true\""),
        "chromium on {url}: {} {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_file(shot);
    let output = run(&[format!("--screenshot={}", shot.display())]);
    assert!(
        output.status.success() && shot.is_file(),
        "no screenshot of {url}"
    );
    eprintln!("screenshot: {}", shot.display());
    dom
}

fn attribute<'d>(dom: &'d str, name: &str) -> Option<&'d str> {
    let start = dom.find(&format!("{name}=\""))? + name.len() + 2;
    dom[start..].split('"').next()
}

#[test]
fn the_pages_in_headless_chromium_at_1400_by_1000() {
    let address = server();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let csv = clusters_csv();
    let home = chromium(&format!("http://{address}/"), &shots.join("home.png"));
    assert_eq!(attribute(&home, "data-script-errors"), Some(""));
    let mean = csv[0]
        .iter()
        .position(|c| c == "mean_resident_bytes")
        .unwrap();
    for record in &csv[1..] {
        assert!(home.contains(&format!("data-v=\"{}\"", record[mean])));
    }
    let cluster = chromium(
        &format!("http://{address}/cluster?c=s1-2.0-a"),
        &shots.join("cluster.png"),
    );
    assert_eq!(attribute(&cluster, "data-script-errors"), Some(""));
    let top = csv[0].iter().position(|c| c == "top_own_sites").unwrap();
    let record = csv[1..]
        .iter()
        .find(|r| r[..3] == ["s1", "2.0", "a"])
        .unwrap();
    let first = record[top].split(';').next().unwrap();
    assert_eq!(
        first_own_function(&cluster),
        format!(
            "{} (report/alloc_sites.c)",
            &first[..first.rfind(' ').unwrap()]
        )
    );
    let compare = chromium(
        &format!("http://{address}/compare?base=s1-1.0-a&new=s1-2.0-a"),
        &shots.join("compare.png"),
    );
    assert_eq!(attribute(&compare, "data-script-errors"), Some(""));
    assert!(compare.contains("<tr class=\"flagged\"><td>yes</td>"));
    let search = chromium(
        &format!("http://{address}/search?q=keep_cache"),
        &shots.join("search.png"),
    );
    assert_eq!(attribute(&search, "data-script-errors"), Some(""));
    assert!(
        search.contains("<a class=\"function\" href=\"/drill?function=keep_cache\">keep_cache</a>")
    );
    // The drill-down: the snapshots holding the grown stack, most bytes first.
    let fleet = fleet();
    let drill = chromium(
        &format!("http://{address}/drill?stack={}", fleet.grown),
        &shots.join("drill.png"),
    );
    assert_eq!(attribute(&drill, "data-script-errors"), Some(""));
    let shown: Vec<i64> = drill
        .split("<tr data-snapshot=\"")
        .skip(1)
        .map(|row| row[..row.find('"').unwrap()].parse().unwrap())
        .collect();
    let mut expected: Vec<(u64, i64)> = fleet
        .snapshots
        .iter()
        .filter_map(|s| {
            s.samples
                .iter()
                .find(|sample| stack_id(&sample.frames) == fleet.grown)
                .map(|sample| (sample.resident, s.id))
        })
        .collect();
    expected.sort_by_key(|&(bytes, id)| (std::cmp::Reverse(bytes), id));
    assert_eq!(shown, expected.iter().map(|e| e.1).collect::<Vec<_>>());
}

/// A loopback webhook receiver: the bodies POSTed to it, answered with `status`.
struct Receiver {
    address: SocketAddr,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    status: std::sync::Arc<std::sync::atomic::AtomicU16>,
}

fn receiver() -> Receiver {
    use axum::extract::State;
    use std::sync::atomic::{AtomicU16, Ordering};
    use std::sync::{Arc, Mutex};
    type Shared = (Arc<Mutex<Vec<String>>>, Arc<AtomicU16>);
    async fn hook(State((bodies, status)): State<Shared>, body: String) -> axum::http::StatusCode {
        bodies.lock().unwrap().push(body);
        axum::http::StatusCode::from_u16(status.load(Ordering::SeqCst)).unwrap()
    }
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let status = Arc::new(AtomicU16::new(200));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let state: Shared = (bodies.clone(), status.clone());
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let app = axum::Router::new()
                    .route("/hook", axum::routing::post(hook))
                    .with_state(state);
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
    });
    Receiver {
        address,
        bodies,
        status,
    }
}

/// The daily job: s1's release_test grew by 2 MiB over its release_baseline, s2's did not.
#[test]
fn the_daily_job_stores_the_days_page_and_posts_the_flagged_rows() {
    use std::sync::atomic::Ordering;
    let (mut snapshots, grown) = make_snapshots();
    snapshots.retain(|s| s.id != 9999);
    for snapshot in &mut snapshots {
        let group = if snapshot.labels["version"] == "1.0" {
            "release_baseline"
        } else {
            "release_test"
        };
        snapshot.labels.insert("group".to_owned(), group.to_owned());
    }
    let dir = tmp("serve-daily");
    let dataset = dir.join("dataset");
    write_dataset(&dataset, &snapshots);
    let results = dir.join("results");
    let hook = receiver();
    let binary = env!("CARGO_BIN_EXE_memmon-fleet");
    let daily = |day: &str, url: &str| {
        let output = std::process::Command::new(binary)
            .arg("daily")
            .arg(&dataset)
            .arg("--results")
            .arg(&results)
            .args(["--day", day, "--webhook", url, "--attempts", "3"])
            .args([
                "--retry-delay",
                "0.01",
                "--serve-url",
                "http://memmon.example:9465",
            ])
            .arg("--sysroot")
            .arg(sysroot())
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let url = format!("http://{}/hook", hook.address);
    // The receiver failing: 3 attempts, each logged; the day's page there all the same.
    hook.status.store(503, Ordering::SeqCst);
    let (ok, log) = daily("2026-12-05", &url);
    assert!(!ok, "{log}");
    for attempt in 1..=3 {
        assert!(
            log.contains(&format!(
                "POST to {url} failed (attempt {attempt} of 3): HTTP 503 Service Unavailable"
            )),
            "{log}"
        );
    }
    assert!(log.contains("kept for the next run"), "{log}");
    assert_eq!(hook.bodies.lock().unwrap().len(), 3);
    assert!(results.join("2026-12-05.html").is_file());
    assert!(results.join("2026-12-05.webhook.json").is_file());
    // The receiver down (nothing listening): the same.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let (ok, log) = daily("2026-12-05", &format!("http://{closed}/hook"));
    assert!(!ok && log.contains("(attempt 3 of 3)"), "{log}");
    assert!(results.join("2026-12-05.html").is_file());
    // Back: the day's message, and the one left pending first.
    hook.bodies.lock().unwrap().clear();
    hook.status.store(200, Ordering::SeqCst);
    let (ok, log) = daily("2026-12-06", &url);
    assert!(ok, "{log}");
    assert!(log.contains("2 comparisons, 1 stacks flagged"), "{log}");
    let bodies = hook.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let first: Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(first["day"], "2026-12-05");
    assert_eq!(first["flagged"], 0);
    let message: Value = serde_json::from_str(&bodies[1]).unwrap();
    assert_eq!(message["day"], "2026-12-06");
    assert_eq!(message["flagged"], 1);
    let said = message["text"].as_str().unwrap();
    assert!(
        said.starts_with("memmon daily 2026-12-06: 1 stacks flagged in 2 comparisons\n"),
        "{said}"
    );
    assert!(
        said.contains(
            "\ns1-release_baseline → s1-release_test (resident): +2 MiB \
             __libc_start_call_main;main;scratch (8.0 MiB → 10.0 MiB) \
             http://memmon.example:9465/compare?by=model%2Cgroup&day=2026-12-06&\
             base=s1-release_baseline&new=s1-release_test&measure=resident"
        ),
        "{said}"
    );
    assert!(!results.join("2026-12-05.webhook.json").exists());
    assert!(!results.join("2026-12-06.webhook.json").exists());
    // The stored results: memmon fleet's outputs of the day and the flagged rows.
    assert!(results.join("2026-12-06/clusters.csv").is_file());
    assert!(results
        .join("2026-12-06/diff-s1-release_baseline-vs-s1-release_test.stacks.csv")
        .is_file());
    let stored: Value =
        serde_json::from_slice(&std::fs::read(results.join("2026-12-06.json")).unwrap()).unwrap();
    let comparisons = stored["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 2);
    assert_eq!(comparisons[0]["base"], "s1-release_baseline");
    assert_eq!(
        comparisons[0]["flagged"][0]["change_bytes"],
        (2 * MIB) as f64
    );
    assert_eq!(comparisons[1]["flagged"].as_array().unwrap().len(), 0);
    // memmon serve shows the days.
    let mut serving = options(&dataset);
    serving.daily = Some(results.clone());
    serving.by = vec!["model".to_owned(), "group".to_owned()];
    let address = start(serving);
    let (status, days) = json(address, "/api/daily");
    assert_eq!(status, 200);
    assert_eq!(
        days["days"],
        serde_json::json!(["2026-12-06", "2026-12-05"])
    );
    let (status, page) = text(address, "/daily");
    assert_eq!(status, 200);
    assert!(page.contains("<a href=\"/daily/2026-12-06\">2026-12-06</a>"));
    let (status, page) = text(address, "/daily/2026-12-06");
    assert_eq!(status, 200);
    let chain = {
        let api = json(address, "/api/cluster?c=s1-release_test").1;
        api["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stack_id"] == grown)
            .unwrap()["chain"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(page.contains(&format!(
        "<td>{}</td></tr>",
        chain.replace('<', "&lt;").replace('>', "&gt;")
    )));
    assert_eq!(text(address, "/daily/2026-12-07").0, 404);
}

/// A loopback Ballista cluster: a scheduler and two executors of this crate's binary.
#[cfg(feature = "ballista")]
#[path = "support/cluster.rs"]
mod cluster;

/// `--engine ballista://`: the same answers from a loopback cluster as from the embedded
/// engine (clusters, comparison, drill-down, a snapshot).
#[cfg(feature = "ballista")]
#[test]
fn on_a_ballista_cluster_the_answers_are_the_same() {
    let logs = tmp("serve-ballista-logs");
    let cluster = cluster::start_cluster(&logs);
    let mut remote = options(&fleet().dataset);
    remote.engine = Engine::Ballista {
        address: format!("127.0.0.1:{}", cluster.port),
        timeout: Duration::from_secs(120),
    };
    remote.query_timeout = Duration::from_secs(120);
    let address = start(remote);
    let grown = fleet().grown;
    for path in [
        "/api/clusters".to_owned(),
        "/api/compare?base=s1-1.0-a&new=s1-2.0-a".to_owned(),
        format!("/api/drill?stack={grown}"),
        format!("/api/drill?stack={grown}&c=s2-1.0-b"),
        "/api/snapshot?id=5001".to_owned(),
    ] {
        let (status, served) = json(address, &path);
        assert_eq!(status, 200, "{path}: {served}; logs in {}", logs.display());
        assert_eq!(served, ok_json(&path), "{path}");
    }
    drop(cluster);
}
