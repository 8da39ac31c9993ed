//! Real heap profiles made here: a C program compiled with `cc` and run under Debian's
//! jemalloc (`LD_PRELOAD=libjemalloc.so.2`, `MALLOC_CONF=prof:true,...`) and gperftools'
//! tcmalloc (`HEAPPROFILE=`), several runs of two versions, exported and aggregated as a
//! small fleet. Per dump and per function of the program, memmon's unbiased bytes must be
//! jeprof's (`jeprof --text --inuse_space --show_bytes`: the float sum, truncated) and
//! google-pprof's; per cluster, the means of the per-dump figures. A missing tool (cc,
//! jemalloc, jeprof, tcmalloc, google-pprof, nm, readelf) fails the test: `make deps`
//! installs them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use memmon::export::heap_profile::{self, round, BuildIds, HeapProfile};
use memmon::export::{read_input, stack_id, write::DatasetWriter, SnapshotData, StackFrame};
use memmon::report::symbolize::symbols::SymbolOptions;
use memmon_fleet::engine::Engine;
use memmon_fleet::query::Question;
use memmon_fleet::run::{mean, run, RunOptions};

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>

/* Many small blocks: the stacks whose unbiasing matters most. */
__attribute__((noinline)) void **small_blocks(int n, size_t size) {
    void **v = malloc(n * sizeof(void *));
    for (int i = 0; i < n; i++) {
        v[i] = malloc(size);
        memset(v[i], 1, size);
    }
    return v;
}

/* Blocks of many sizes from one stack. */
__attribute__((noinline)) void **many_sizes(int n) {
    void **v = malloc(n * sizeof(void *));
    for (int i = 0; i < n; i++) {
        size_t size = 16 + (size_t)(i * 37) % 6000;
        v[i] = malloc(size);
        memset(v[i], 2, size);
    }
    return v;
}

__attribute__((noinline)) void *big_block(size_t size) {
    void *p = malloc(size);
    memset(p, 3, size);
    return p;
}

/* Allocated and freed: not in use at the end. */
__attribute__((noinline)) void churn(int n) {
    for (int i = 0; i < n; i++) {
        free(malloc(4096 + i));
    }
}

int main(int argc, char **argv) {
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    void **a = small_blocks(20000 * scale, 48);
    void **b = many_sizes(3000 * scale);
    void *c = big_block((size_t)scale << 20);
    void *d = big_block((size_t)5 << 20);
    churn(1000);
    (void)a; (void)b; (void)c; (void)d;
    return 0;
}
"#;

/// The program's functions whose figures are compared.
const FUNCTIONS: [&str; 5] = ["small_blocks", "many_sizes", "big_block", "churn", "main"];

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a tool; a missing tool fails the test with what to install.
fn tool(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?} ({e}): run `make deps`"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The program compiled in `dir`.
fn compile(dir: &Path) -> PathBuf {
    let source = dir.join("heap_program.c");
    std::fs::write(&source, PROGRAM).unwrap();
    let program = dir.join("heap_program");
    tool(
        Command::new("cc")
            .args(["-g", "-O1", "-fno-omit-frame-pointer", "-o"])
            .arg(&program)
            .arg(&source),
    );
    program
}

/// The program's functions by their file offsets: (start, end, name), from `nm` and the
/// load segments of `readelf`.
fn functions(program: &Path) -> Vec<(u64, u64, String)> {
    let segments: Vec<(u64, u64, u64)> = tool(Command::new("readelf").arg("-lW").arg(program))
        .lines()
        .filter(|line| line.trim_start().starts_with("LOAD"))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let hex = |w: &str| u64::from_str_radix(w.trim_start_matches("0x"), 16).unwrap();
            // LOAD Offset VirtAddr PhysAddr FileSiz MemSiz
            (hex(words[1]), hex(words[2]), hex(words[4]))
        })
        .collect();
    let mut out = Vec::new();
    for line in tool(
        Command::new("nm")
            .args(["-S", "--defined-only"])
            .arg(program),
    )
    .lines()
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() != 4 || !matches!(words[2], "T" | "t") {
            continue;
        }
        let address = u64::from_str_radix(words[0], 16).unwrap();
        let size = u64::from_str_radix(words[1], 16).unwrap();
        let Some(&(offset, vaddr, _)) = segments
            .iter()
            .find(|(_, vaddr, size)| (*vaddr..vaddr + size).contains(&address))
        else {
            continue;
        };
        let start = address - vaddr + offset;
        out.push((start, start + size, words[3].to_owned()));
    }
    assert!(
        FUNCTIONS
            .iter()
            .all(|f| out.iter().any(|(_, _, name)| name == f)),
        "nm does not name the program's functions: {out:?}"
    );
    out
}

/// The program's functions in a stack (each once).
fn functions_of(
    frames: &[StackFrame],
    program: &Path,
    table: &[(u64, u64, String)],
) -> BTreeSet<String> {
    frames
        .iter()
        .filter_map(|frame| match frame {
            StackFrame::Code {
                file_offset,
                object,
                ..
            } if Path::new(object) == program => table
                .iter()
                .find(|(start, end, _)| (*start..*end).contains(file_offset))
                .map(|(_, _, name)| name.clone()),
            _ => None,
        })
        .collect()
}

/// A reader's `--text --show_bytes` output: its total and its cum column per function.
fn reader_text(output: &str) -> (u64, BTreeMap<String, u64>) {
    let mut total = None;
    let mut cum = BTreeMap::new();
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("Total: ") {
            total = Some(rest.trim_end_matches(" B").parse::<u64>().unwrap());
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() >= 6 && words[1].ends_with('%') && words[4].ends_with('%') {
            cum.insert(words[5..].join(" "), words[3].parse::<u64>().unwrap());
        }
    }
    (total.expect("no Total line"), cum)
}

/// Per function of the program: the sum of its stacks' unbiased bytes (f64, in the
/// dump's order as jeprof adds them) and of their rounded bytes (as exported).
struct Figures {
    total: f64,
    exact: BTreeMap<String, f64>,
    rounded: BTreeMap<String, u64>,
    /// By stack id: rounded bytes.
    stacks: BTreeMap<i64, u64>,
}

fn figures(dump: &HeapProfile, program: &Path, table: &[(u64, u64, String)]) -> Figures {
    let mut build_ids = BuildIds::new(None);
    let mut out = Figures {
        total: 0.0,
        exact: BTreeMap::new(),
        rounded: BTreeMap::new(),
        stacks: BTreeMap::new(),
    };
    for stack in &dump.stacks {
        let frames = dump.frames(stack, &mut |o| build_ids.of(o)).unwrap();
        out.total += stack.unbiased_bytes;
        *out.stacks.entry(stack_id(&frames)).or_default() += round(stack.unbiased_bytes);
        for function in functions_of(&frames, program, table) {
            *out.exact.entry(function.clone()).or_default() += stack.unbiased_bytes;
            *out.rounded.entry(function).or_default() += round(stack.unbiased_bytes);
        }
    }
    out
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// The per-function sums of a folded file (each function once per line).
fn folded_functions(path: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let (stack, weight) = line.rsplit_once(' ').unwrap();
        let weight: u64 = weight.parse().unwrap();
        let names: BTreeSet<&str> = stack.split(';').collect();
        for function in FUNCTIONS {
            if names.contains(function) {
                *out.entry(function.to_owned()).or_default() += weight;
            }
        }
    }
    out
}

/// The rows of clusters.csv by the cluster's first label.
fn clusters_csv(path: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let row: BTreeMap<String, String> = header
                .iter()
                .zip(&fields)
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            (fields[0].to_owned(), row)
        })
        .collect()
}

#[test]
fn jemalloc_dumps_give_jeprofs_figures_per_function_and_their_means_per_cluster() {
    let dir = tmp("heap-jemalloc");
    let program = compile(&dir);
    let table = functions(&program);
    // Two versions (the scale of the program's allocations) of three runs each.
    let mut dumps: Vec<(String, PathBuf)> = Vec::new();
    for (version, scale) in [("v1", 1), ("v2", 3)] {
        for run in 0..3 {
            let prefix = dir.join(format!("jeprof-{version}-{run}"));
            let output = Command::new(&program)
                .arg((scale + run).to_string())
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
            assert!(output.status.success(), "{:?}", output);
            assert!(
                !String::from_utf8_lossy(&output.stderr).contains("ERROR"),
                "jemalloc: {} (libjemalloc2 installed? make deps)",
                String::from_utf8_lossy(&output.stderr)
            );
            let made: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with(&format!("jeprof-{version}-{run}."))
                })
                .collect();
            assert_eq!(
                made.len(),
                1,
                "no final dump of jemalloc (libjemalloc2 with profiling? make deps): {made:?}"
            );
            dumps.push((version.to_owned(), made[0].clone()));
        }
    }
    // Per dump: memmon's figures against jeprof's.
    let dataset = dir.join("dataset");
    let mut writer = DatasetWriter::create(&dataset).unwrap();
    let mut per_version: BTreeMap<String, Vec<(SnapshotData, Figures)>> = BTreeMap::new();
    for (index, (version, path)) in dumps.iter().enumerate() {
        let dump = heap_profile::parse_text(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(
            dump.sampling,
            heap_profile::Sampling::Poisson { period: 16384.0 }
        );
        let mine = figures(&dump, &program, &table);
        let jeprof = tool(
            Command::new("jeprof")
                .args(["--text", "--inuse_space", "--show_bytes"])
                .arg(&program)
                .arg(path),
        );
        let (total, cum) = reader_text(&jeprof);
        eprintln!(
            "dump {index} ({version}): jeprof total {total} B, memmon {:.3} B",
            mine.total
        );
        assert_eq!(mine.total as u64, total, "the total of {}", path.display());
        for function in FUNCTIONS {
            let theirs = cum.get(function).copied().unwrap_or(0);
            let ours = mine.exact.get(function).copied().unwrap_or(0.0);
            eprintln!(
                "  {function}: jeprof {theirs} B, memmon {ours:.3} B (exported {})",
                mine.rounded.get(function).copied().unwrap_or(0)
            );
            assert_eq!(ours as u64, theirs, "{function} in {}", path.display());
        }
        // Allocated in use at the end: all but churn's.
        assert!(mine.exact["small_blocks"] > 0.0 && mine.exact["big_block"] > 0.0);
        assert_eq!(mine.exact.get("churn").copied().unwrap_or(0.0), 0.0);
        let labels = BTreeMap::from([("version".to_owned(), version.clone())]);
        let mut snapshots = read_input(path, &labels, None).unwrap();
        assert_eq!(snapshots.len(), 1);
        let snapshot = snapshots.remove(0);
        assert_eq!(snapshot.labels["profiler"], "jemalloc");
        assert_eq!(snapshot.labels["command"], "heap_program");
        assert_eq!(snapshot.allocated, Some(mine.stacks.values().sum::<u64>()));
        writer.add(&snapshot).unwrap();
        per_version
            .entry(version.clone())
            .or_default()
            .push((snapshot, mine));
    }
    // memmon's own snapshot of a process of version v1 (a capture's peak): its cluster has
    // both figures, each mean over the snapshots that have it.
    let capture = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../memmon/tests/fixtures/base.cap"),
    )
    .unwrap();
    let mut captured = memmon::export::capture::snapshots(&capture, "base.cap", None).unwrap();
    captured.sort_by_key(|s| std::cmp::Reverse(s.resident()));
    let mut captured = captured.remove(0);
    captured
        .labels
        .insert("version".to_owned(), "v1".to_owned());
    writer.add(&captured).unwrap();
    writer.finish().unwrap();
    // The fleet: one cluster per version.
    let output = dir.join("out");
    let summary = block_on(run(&RunOptions {
        dataset: dataset.clone(),
        question: Question {
            by: vec!["version".to_owned()],
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
        output: output.clone(),
    }))
    .unwrap();
    assert_eq!(summary.clusters, 2);
    assert_eq!(summary.snapshots, 7);
    let csv = clusters_csv(&output.join("clusters.csv"));
    for (version, members) in &per_version {
        let n = members.len() as u64;
        let row = &csv[version];
        if version == "v1" {
            assert_eq!(row["snapshots"], "4");
            let rss = captured.resident().to_string();
            assert_eq!(row["mean_resident_bytes"], rss);
            assert_eq!(row["mean_anon_bytes"], captured.anon.to_string());
            assert_eq!(row["p50_resident_bytes"], rss);
            assert_eq!(row["p99_resident_bytes"], rss);
            assert!(output.join("v1.folded").is_file());
        } else {
            assert_eq!(row["snapshots"], "3");
            // No resident figures in heap profiles: empty, not 0.
            assert_eq!(row["mean_resident_bytes"], "");
            assert_eq!(row["p50_resident_bytes"], "");
            // Its top functions are by allocated bytes.
            assert!(row["top_own_sites"].starts_with("many_sizes "), "{row:?}");
            // Heap profiles only: no resident outputs.
            assert!(!output.join(format!("{version}.folded")).exists());
        }
        let sum: u64 = members.iter().map(|(s, _)| s.allocated.unwrap()).sum();
        let thousandths = mean(sum as i64 * 1000, n);
        let expected = format!("{}.{:03}", thousandths / 1000, thousandths % 1000);
        let expected = expected.trim_end_matches('0').trim_end_matches('.');
        assert_eq!(row["mean_allocated_bytes"], expected, "{version}");
        // Per function: the sum over its stacks of each stack's mean over the dumps.
        let mut stacks: BTreeMap<i64, u64> = BTreeMap::new();
        for (_, figures) in members {
            for (stack, bytes) in &figures.stacks {
                *stacks.entry(*stack).or_default() += bytes;
            }
        }
        let folded = folded_functions(&output.join(format!("{version}.allocated.folded")));
        for function in FUNCTIONS {
            let mut expected = 0;
            // Each stack of the function (by id), its mean over the cluster.
            let mut seen = BTreeSet::new();
            for (snapshot, _) in members {
                for sample in &snapshot.samples {
                    let id = stack_id(&sample.frames);
                    if seen.insert(id)
                        && functions_of(&sample.frames, &program, &table).contains(function)
                    {
                        expected += mean(stacks[&id] as i64, n);
                    }
                }
            }
            let got = folded.get(function).copied().unwrap_or(0);
            eprintln!("cluster {version}: {function} mean {got} B");
            assert_eq!(got, expected, "{function} in cluster {version}");
        }
        for suffix in ["txt", "html", "pb.gz"] {
            assert!(output
                .join(format!("{version}.allocated.{suffix}"))
                .is_file());
        }
    }
}

#[test]
fn gperftools_heap_profiles_give_google_pprofs_figures_per_function() {
    let dir = tmp("heap-gperftools");
    let program = compile(&dir);
    let table = functions(&program);
    let prefix = dir.join("tcmalloc");
    let output = Command::new(&program)
        .arg("2")
        .env("LD_PRELOAD", "libtcmalloc.so.4")
        .env("HEAPPROFILE", &prefix)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let dumps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "heap"))
        .collect();
    assert_eq!(
        dumps.len(),
        1,
        "no heap profile from tcmalloc (libgoogle-perftools4? make deps): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dump = heap_profile::parse_text(&std::fs::read(&dumps[0]).unwrap()).unwrap();
    assert_eq!(dump.format, heap_profile::HeapFormat::Gperftools);
    assert_eq!(dump.sampling, heap_profile::Sampling::Exact);
    let mine = figures(&dump, &program, &table);
    let pprof = tool(
        Command::new("google-pprof")
            .args(["--text", "--inuse_space", "--show_bytes"])
            .arg(&program)
            .arg(&dumps[0]),
    );
    let (total, cum) = reader_text(&pprof);
    assert_eq!(mine.total as u64, total);
    // Exact counts: 2 × 20000 blocks of 48 bytes and the vector of their pointers.
    assert_eq!(
        mine.exact["small_blocks"],
        (40_000.0 * 48.0) + 40_000.0 * 8.0
    );
    assert_eq!(mine.exact["big_block"], ((2u64 << 20) + (5 << 20)) as f64);
    for function in FUNCTIONS {
        let theirs = cum.get(function).copied().unwrap_or(0);
        let ours = mine.exact.get(function).copied().unwrap_or(0.0);
        eprintln!("{function}: google-pprof {theirs} B, memmon {ours} B");
        assert_eq!(ours as u64, theirs, "{function}");
    }
    let snapshot = read_input(&dumps[0], &BTreeMap::new(), None)
        .unwrap()
        .remove(0);
    assert_eq!(snapshot.labels["profiler"], "gperftools");
    assert_eq!(snapshot.allocated, Some(total));
}

const GO_PROGRAM: &str = r#"package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

var keep [][]byte

//go:noinline
func smallBlocks(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 48))
	}
}

//go:noinline
func bigBlock(size int) { keep = append(keep, make([]byte, size)) }

func main() {
	runtime.MemProfileRate = 4096
	smallBlocks(20000)
	bigBlock(3 << 20)
	runtime.GC()
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		panic(err)
	}
	f.Close()
}
"#;

#[test]
fn a_go_heap_profile_gives_go_tool_pprofs_figures_per_function() {
    let dir = tmp("heap-go");
    std::fs::write(dir.join("main.go"), GO_PROGRAM).unwrap();
    std::fs::write(dir.join("go.mod"), "module heapprogram\n\ngo 1.19\n").unwrap();
    let go = |args: &[&str]| {
        tool(
            Command::new("go")
                .args(args)
                .current_dir(&dir)
                .env("HOME", &dir)
                .env("GOCACHE", dir.join("cache"))
                .env("GOFLAGS", "-mod=mod")
                .env("GOTOOLCHAIN", "local"),
        )
    };
    go(&["build", "-o", "heapprogram", "."]);
    let profile = dir.join("heap.pb.gz");
    tool(Command::new(dir.join("heapprogram")).arg(&profile));
    let snapshot = read_input(&profile, &BTreeMap::new(), None)
        .unwrap()
        .remove(0);
    assert_eq!(snapshot.labels["profiler"], "go");
    // go tool pprof's figures: its total and per function in use (cum).
    let top = go(&[
        "tool",
        "pprof",
        "-top",
        "-cum",
        "-sample_index=inuse_space",
        "-unit=B",
        "-nodefraction=0",
        "-edgefraction=0",
        "heap.pb.gz",
    ]);
    let mut total = None;
    let mut cum: BTreeMap<String, u64> = BTreeMap::new();
    let bytes = |word: &str| word.trim_end_matches('B').parse::<u64>().unwrap();
    for line in top.lines() {
        if let Some(rest) = line.split(" of ").nth(1) {
            total = Some(bytes(rest.split_whitespace().next().unwrap()));
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() == 6 && words[1].ends_with('%') && words[4].ends_with('%') {
            cum.insert(words[5].to_owned(), bytes(words[3]));
        }
    }
    let total = total.expect("no total in go tool pprof's output");
    assert_eq!(snapshot.allocated, Some(total));
    // memmon's: each stack's bytes to each function in it (once); the Go binary has no
    // GNU build ID, so its frames are the profile's function names.
    let mut mine: BTreeMap<String, u64> = BTreeMap::new();
    for sample in &snapshot.samples {
        let names: BTreeSet<&str> = sample
            .frames
            .iter()
            .filter_map(|frame| match frame {
                StackFrame::Label(name) => Some(name.as_str()),
                StackFrame::Code { .. } => None,
            })
            .collect();
        for name in names {
            *mine.entry(name.to_owned()).or_default() += sample.allocated;
        }
    }
    for function in [
        "main.smallBlocks",
        "main.bigBlock",
        "main.main",
        "runtime.main",
    ] {
        eprintln!(
            "{function}: go tool pprof {} B, memmon {} B",
            cum[function], mine[function]
        );
        assert_eq!(mine[function], cum[function], "{function}");
    }
    assert_eq!(mine["main.bigBlock"], 3 << 20);
}
