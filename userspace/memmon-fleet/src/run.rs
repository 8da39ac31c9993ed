//! A run: the answers symbolised once and written as the report's outputs per cluster,
//! the diffs asked, and the overview `clusters.csv`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use memmon::report::aggregate::{self, Aggregate, StackTable, StackValues};
use memmon::report::output::folded::{render_folded, Weight};
use memmon::report::output::text::{self, memory::TextOptions};
use memmon::report::symbolize::short_name::Naming;
use memmon::report::symbolize::symbols::{SymbolOptions, Symbols};
use memmon::report::view::diff;
use memmon::report::view::own_code::OwnCode;
use memmon::report::Prepared;

use crate::compare;
use crate::dataset::Dataset;
use crate::engine::Engine;
use crate::query::{answer, Answers, ClusterSums, Question, CLASSES};

/// `--diff LABEL=A:B`: each cluster with LABEL=A (the base) against the one with LABEL=B
/// and the same other labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffSpec {
    /// The label.
    pub label: String,
    /// The base value.
    pub base: String,
    /// The new value.
    pub new: String,
}

impl DiffSpec {
    /// Parses `LABEL=A:B`.
    pub fn parse(text: &str) -> Result<DiffSpec, String> {
        let (label, values) = text
            .split_once('=')
            .ok_or_else(|| format!("--diff {text:?}: give LABEL=BASE:NEW"))?;
        let (base, new) = values
            .split_once(':')
            .ok_or_else(|| format!("--diff {text:?}: give LABEL=BASE:NEW"))?;
        Ok(DiffSpec {
            label: label.to_owned(),
            base: base.to_owned(),
            new: new.to_owned(),
        })
    }
}

/// Everything a run is asked.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The dataset.
    pub dataset: PathBuf,
    /// The clusters' labels and the top N.
    pub question: Question,
    /// The diffs.
    pub diff: Option<DiffSpec>,
    /// `--compare BASE:NEW`: pairs of clusters by name, compared as the diffs.
    pub compare: Vec<(String, String)>,
    /// A change in mean bytes of a stack under this is not flagged (`--diff-threshold`).
    pub diff_threshold: u64,
    /// The engine.
    pub engine: Engine,
    /// Symbol sources.
    pub symbols: SymbolOptions,
    /// Rows per table of the text and HTML outputs.
    pub rows: usize,
    /// Clusters and sub-clusters of fewer snapshots are dropped, with one line.
    pub min_snapshots: u64,
    /// Folded stacks and the pages' flame graphs rooted at the innermost frame (the
    /// allocator): all callers of one function (`--reverse`).
    pub reverse: bool,
    /// The output directory.
    pub output: PathBuf,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Summary {
    /// Clusters written.
    pub clusters: usize,
    /// Snapshots in the good parts of the dataset.
    pub snapshots: u64,
    /// Parts skipped (one line each was printed).
    pub skipped: usize,
    /// Unique stacks symbolised.
    pub stacks: usize,
    /// Diffs written.
    pub diffs: usize,
    /// Clusters dropped for having fewer than `--min-snapshots` snapshots.
    pub dropped: usize,
    /// Each diff's rows, flagged first.
    pub compared: Vec<Compared>,
}

/// One diff of a run: the two clusters by name, the measure and its rows.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The base cluster.
    pub base: String,
    /// The new cluster.
    pub new: String,
    /// The measure.
    pub measure: Measure,
    /// The rows, flagged first.
    pub rows: Vec<compare::Row>,
}

/// A cluster's name, as its files are named: its labels' values joined by `-`, then for a
/// sub-cluster `/` and its name (`s1-2.0/top2000`: the files `s1-2.0/top2000.folded`...),
/// characters other than letters, digits, `.`, `_` and `+` made `_`. `values` is the key
/// of [`crate::query::Answers::clusters`]: the labels' values, then the sub-cluster (`""`
/// for none).
pub fn cluster_name(values: &[String]) -> String {
    let clean = |value: &str, keep: &str| -> String {
        value
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._+".contains(c) || keep.contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let (labels, sub) = match values.split_last() {
        Some((sub, labels)) => (labels, sub.as_str()),
        None => (values, ""),
    };
    let mut name = labels
        .iter()
        .map(|value| clean(value, ""))
        .collect::<Vec<_>>()
        .join("-");
    if !sub.is_empty() {
        name.push('/');
        name.push_str(&clean(sub, "/-"));
    }
    name
}

/// `sum / count` rounded to the nearest integer (halves up), exactly.
pub fn mean(sum: i64, count: u64) -> u64 {
    if count == 0 || sum <= 0 {
        return 0;
    }
    let (sum, count) = (sum as u128, u128::from(count));
    u64::try_from((2 * sum + count) / (2 * count)).unwrap_or(u64::MAX)
}

/// `sum / count` as a decimal with up to 3 places, exact where it has fewer.
fn mean_text(sum: i64, count: u64) -> String {
    if count == 0 {
        return "0".to_owned();
    }
    let thousandths = mean(sum.saturating_mul(1000), count);
    let (whole, part) = (thousandths / 1000, thousandths % 1000);
    if part == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{:03}", part)
            .trim_end_matches('0')
            .to_owned()
    }
}

/// The mean resident snapshot of a cluster (over its snapshots with resident figures).
fn aggregate_of(sums: &ClusterSums, label: String) -> Aggregate {
    let n = sums.resident_snapshots;
    Aggregate {
        label,
        snapshots: n,
        stacks: sums
            .stacks
            .iter()
            .map(|(&stack, values)| {
                (
                    stack,
                    StackValues {
                        resident: mean(values[0], n),
                        mapped: mean(values[1], n),
                        faults: [2, 3, 4, 5, 6].map(|i| mean(values[i], n)),
                    },
                )
            })
            .collect(),
        class_bytes: CLASSES
            .iter()
            .zip(sums.classes)
            .filter(|(_, sum)| *sum > 0)
            .map(|(class, sum)| ((*class).to_owned(), mean(sum, n)))
            .collect(),
    }
}

/// The mean allocated snapshot of a cluster (over its heap profiles): each stack's mean
/// unbiased bytes in the report's resident column, the total as its heap.
fn allocated_aggregate_of(sums: &ClusterSums, label: String) -> Aggregate {
    let n = sums.allocated_snapshots;
    Aggregate {
        label,
        snapshots: n,
        stacks: sums
            .stacks
            .iter()
            .filter(|(_, values)| values[7] > 0)
            .map(|(&stack, values)| {
                (
                    stack,
                    StackValues {
                        resident: mean(values[7], n),
                        ..StackValues::default()
                    },
                )
            })
            .collect(),
        class_bytes: BTreeMap::from([("heap".to_owned(), mean(sums.allocated, n))]),
    }
}

/// The report's outputs of one aggregate: `STEM.folded`, `.txt`, `.html`, `.pb.gz`.
fn write_outputs(options: &RunOptions, stem: &str, cluster: &Prepared) -> Result<(), String> {
    let view = &cluster.view;
    let naming = Naming::Short;
    write(
        &options.output.join(format!("{stem}.folded")),
        render_folded(view, Weight::Resident).as_bytes(),
    )?;
    write(
        &options.output.join(format!("{stem}.txt")),
        text::memory::render(
            view,
            TextOptions {
                top: options.rows,
                timeline: false,
            },
        )
        .as_bytes(),
    )?;
    write(
        &options.output.join(format!("{stem}.html")),
        memmon::report::output::html::render(
            cluster,
            options.rows,
            memmon::report::view::access::DEFAULT_COLD,
            naming,
        )
        .as_bytes(),
    )?;
    write(
        &options.output.join(format!("{stem}.pb.gz")),
        &aggregate::pprof(&[(cluster, 1)], &options.symbols).map_err(|e| e.0)?,
    )
}

/// The top three functions of own code of a cluster with their mean bytes.
pub fn top_functions(cluster: &Prepared) -> Vec<String> {
    cluster
        .view
        .your_code
        .functions
        .iter()
        .take(3)
        .map(|f| format!("{} {}", f.function, f.resident))
        .collect()
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// Which mean of a cluster: of its resident bytes (captures, agent snapshots) or of its
/// allocated bytes (heap profiles, unbiased).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Measure {
    /// Resident bytes.
    Resident,
    /// Allocated bytes.
    Allocated,
}

impl Measure {
    /// Both, in the outputs' order.
    pub const ALL: [Measure; 2] = [Measure::Resident, Measure::Allocated];

    /// The cluster's snapshots with this measure.
    pub fn count(self, sums: &ClusterSums) -> u64 {
        match self {
            Measure::Resident => sums.resident_snapshots,
            Measure::Allocated => sums.allocated_snapshots,
        }
    }

    /// Whether the cluster has outputs of this measure: the resident ones for a cluster
    /// with resident figures or none of either, the allocated ones for one with heap
    /// profiles.
    pub fn shown(self, sums: &ClusterSums) -> bool {
        match self {
            Measure::Resident => sums.resident_snapshots > 0 || sums.allocated_snapshots == 0,
            Measure::Allocated => sums.allocated_snapshots > 0,
        }
    }

    /// Its index in [`ClusterSums::stacks`]' values.
    pub fn column(self) -> usize {
        match self {
            Measure::Resident => 0,
            Measure::Allocated => 7,
        }
    }

    /// Its index in [`ClusterSums::squares`]' values.
    fn squares(self) -> usize {
        match self {
            Measure::Resident => 0,
            Measure::Allocated => 1,
        }
    }

    /// The suffix of its files' stems (`""`, `.allocated`).
    pub fn suffix(self) -> &'static str {
        match self {
            Measure::Resident => "",
            Measure::Allocated => ".allocated",
        }
    }

    /// Its name (`resident`, `allocated`).
    pub fn name(self) -> &'static str {
        match self {
            Measure::Resident => "resident",
            Measure::Allocated => "allocated",
        }
    }
}

/// The stacks of the clusters, symbolised once for all.
#[derive(Debug, Clone)]
pub struct Symbolised {
    /// The stacks as sites.
    pub table: StackTable,
    /// Their frames' names.
    pub symbols: Symbols,
}

/// Only the stacks the clusters hold, symbolised once for all.
pub fn symbolise(answers: &Answers, options: &SymbolOptions) -> Symbolised {
    let mut table = StackTable::new();
    for sums in answers.clusters.values() {
        for stack in sums.stacks.keys() {
            if let Some(frames) = answers.stacks.get(stack) {
                table.add(*stack, frames);
            }
        }
    }
    let symbols = table.symbolize(options);
    Symbolised { table, symbols }
}

/// `by`'s labels with a cluster's values, `model=s1 version=2.0`.
pub fn labels_text(by: &[String], values: &[String]) -> String {
    by.iter()
        .zip(values)
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A cluster's mean of `measure` made into the report's model and view (`None` where the
/// cluster has no outputs of it, [`Measure::shown`]).
pub fn prepare(
    symbolised: &Symbolised,
    by: &[String],
    values: &[String],
    sums: &ClusterSums,
    measure: Measure,
    reverse: bool,
) -> Result<Option<Prepared>, String> {
    if !measure.shown(sums) {
        return Ok(None);
    }
    let labels = labels_text(by, values);
    let aggregate = match measure {
        Measure::Resident => aggregate_of(
            sums,
            format!(
                "the mean of {} snapshots of {labels}",
                sums.resident_snapshots
            ),
        ),
        Measure::Allocated => allocated_aggregate_of(
            sums,
            format!(
                "the mean allocated bytes (unbiased) of {} heap profiles of {labels}",
                sums.allocated_snapshots
            ),
        ),
    };
    let mut cluster = symbolised
        .table
        .prepare(
            &symbolised.symbols,
            &aggregate,
            &OwnCode::default(),
            Naming::Short,
        )
        .map_err(|e| format!("cluster {}: {e}", cluster_name(values)))?;
    cluster.view.reversed = reverse;
    Ok(Some(cluster))
}

/// The columns of `clusters.csv` after the labels'.
pub const CLUSTER_COLUMNS: [&str; 12] = [
    "subset",
    "snapshots",
    "mean_resident_bytes",
    "mean_anon_bytes",
    "mean_file_bytes",
    "mean_shmem_bytes",
    "mean_allocated_bytes",
    "p50_resident_bytes",
    "p95_resident_bytes",
    "p99_resident_bytes",
    "mean_lifetime_seconds",
    "top_own_sites",
];

/// A cluster's row of `clusters.csv`, unquoted: its key (the labels' values and the
/// sub-cluster), then [`CLUSTER_COLUMNS`]' figures after `subset` (means exact to three
/// decimals, empty where the cluster has no snapshot with the figure).
pub fn cluster_record(values: &[String], sums: &ClusterSums, top_sites: &[String]) -> Vec<String> {
    let resident_mean = |sum: i64| {
        if sums.resident_snapshots == 0 {
            String::new()
        } else {
            mean_text(sum, sums.resident_snapshots)
        }
    };
    let percentile = |value: i64| {
        if sums.resident_snapshots == 0 {
            String::new()
        } else {
            value.to_string()
        }
    };
    let mut record = values.to_vec();
    record.extend([
        sums.snapshots.to_string(),
        resident_mean(sums.resident),
        resident_mean(sums.anon),
        resident_mean(sums.file),
        resident_mean(sums.shmem),
        if sums.allocated_snapshots == 0 {
            String::new()
        } else {
            mean_text(sums.allocated, sums.allocated_snapshots)
        },
        percentile(sums.resident_percentiles[0]),
        percentile(sums.resident_percentiles[1]),
        percentile(sums.resident_percentiles[2]),
        // Seconds, to the millisecond: the mean of the milliseconds, in thousandths.
        if sums.lifetime_snapshots == 0 {
            String::new()
        } else {
            mean_text(
                sums.lifetime_ms,
                sums.lifetime_snapshots.saturating_mul(1000),
            )
        },
        top_sites.join("; "),
    ]);
    record
}

/// The clusters by name (as their files are named), to their keys.
pub fn cluster_names(answers: &Answers) -> BTreeMap<String, Vec<String>> {
    answers
        .clusters
        .keys()
        .map(|values| (cluster_name(values), values.clone()))
        .collect()
}

/// Each stack's function chain, outermost first, `;`-joined as in the folded files (what
/// the diffs match stacks by).
pub fn chains(answers: &Answers, symbolised: &Symbolised) -> BTreeMap<i64, String> {
    let mut chains: BTreeMap<i64, String> = BTreeMap::new();
    for sums in answers.clusters.values() {
        for stack in sums.stacks.keys() {
            if chains.contains_key(stack) {
                continue;
            }
            if let Some(functions) = symbolised.table.functions(&symbolised.symbols, *stack) {
                let names: Vec<String> = functions
                    .iter()
                    .rev()
                    .map(|f| f.replace(';', ":").replace('\n', " "))
                    .collect();
                chains.insert(*stack, names.join(";"));
            }
        }
    }
    chains
}

/// The name of a stack without a chain (not in the table).
pub fn unnamed_chain(stack: i64) -> String {
    format!("stack {stack:016x}")
}

/// The diff of two clusters in `measure` per function chain: the change, its interval and
/// flag, flagged rows first ([`compare::rows`]); `None` where a cluster has no snapshot
/// with the measure.
pub fn diff_rows(
    base: &ClusterSums,
    new: &ClusterSums,
    chains: &BTreeMap<i64, String>,
    measure: Measure,
    threshold: u64,
) -> Option<Vec<compare::Row>> {
    if measure.count(base) == 0 || measure.count(new) == 0 {
        return None;
    }
    // A chain of m stack ids (call sites of one function chain): the sum of the squares
    // of its per-snapshot bytes is not the sum of theirs (the cross terms are not in the
    // sums) but at most m times it (Cauchy–Schwarz): its variance is bounded above, its
    // interval wider than the exact one, never narrower.
    let moments = |sums: &ClusterSums| {
        let mut out: BTreeMap<String, (compare::Moments, u32)> = BTreeMap::new();
        for (stack, values) in &sums.stacks {
            let value = values[measure.column()];
            if value == 0 {
                continue;
            }
            let chain = chains
                .get(stack)
                .cloned()
                .unwrap_or_else(|| unnamed_chain(*stack));
            let (entry, ids) = out.entry(chain).or_default();
            entry.sum += value as f64;
            entry.squares += sums
                .squares
                .get(stack)
                .map_or(0.0, |s| s[measure.squares()]);
            *ids += 1;
        }
        out.into_iter()
            .map(|(chain, (mut moments, ids))| {
                moments.squares *= f64::from(ids);
                (chain, moments)
            })
            .collect::<BTreeMap<String, compare::Moments>>()
    };
    Some(compare::rows(
        &moments(base),
        &moments(new),
        measure.count(base),
        measure.count(new),
        threshold,
    ))
}

/// A diff's report outputs: the text diff, the HTML page (with its differential flame
/// graph) and the pprof profile (NEW minus BASE).
pub fn diff_outputs(
    base: &Prepared,
    new: &Prepared,
    rows: usize,
    symbols: &SymbolOptions,
) -> Result<(String, String, Vec<u8>), String> {
    let difference = diff::diff(&base.view, &new.view);
    Ok((
        text::diff::render(&difference, rows),
        memmon::report::output::html::render_diff(base, new, &difference, rows),
        aggregate::pprof(&[(new, 1), (base, -1)], symbols).map_err(|e| e.0)?,
    ))
}

/// Runs the job: queries on the engine, then symbolisation and outputs here.
pub async fn run(options: &RunOptions) -> Result<Summary, String> {
    let dataset = Dataset::open(&options.dataset)?;
    for line in &dataset.skipped {
        eprintln!("memmon fleet: {line}");
    }
    let context = options.engine.session(&dataset).await?;
    let mut answers = match options.engine.timeout() {
        None => answer(&context, &options.question).await?,
        Some(limit) => tokio::time::timeout(limit, answer(&context, &options.question))
            .await
            .map_err(|_| {
                format!(
                    "query failed: no answer from the Ballista cluster in {} s (an executor \
                     lost mid-job? --query-timeout)",
                    limit.as_secs()
                )
            })??,
    };
    let before = answers.clusters.len();
    let mut dropped_snapshots = 0;
    answers.clusters.retain(|_, sums| {
        let keep = sums.snapshots >= options.min_snapshots;
        if !keep {
            dropped_snapshots += sums.snapshots;
        }
        keep
    });
    let dropped = before - answers.clusters.len();
    if dropped > 0 {
        eprintln!(
            "memmon fleet: {dropped} clusters of fewer than {} snapshots dropped ({dropped_snapshots} \
             snapshots)",
            options.min_snapshots
        );
    }
    if let Some(spec) = &options.diff {
        if !options.question.by.contains(&spec.label) {
            return Err(format!(
                "--diff {}: the label is not one of --by ({})",
                spec.label,
                options.question.by.join(",")
            ));
        }
    }
    std::fs::create_dir_all(&options.output)
        .map_err(|e| format!("cannot create {}: {e}", options.output.display()))?;
    let symbolised = symbolise(&answers, &options.symbols);
    let by = &options.question.by;
    let mut prepared: BTreeMap<Vec<String>, Prepared> = BTreeMap::new();
    let mut csv = String::new();
    for key in by {
        let _ = write!(csv, "{},", csv_field(key));
    }
    csv.push_str(&CLUSTER_COLUMNS.join(","));
    csv.push('\n');
    for (values, sums) in &answers.clusters {
        let name = cluster_name(values);
        let mut top_sites: Vec<String> = Vec::new();
        for measure in Measure::ALL {
            let Some(cluster) = prepare(&symbolised, by, values, sums, measure, options.reverse)?
            else {
                continue;
            };
            write_outputs(options, &format!("{name}{}", measure.suffix()), &cluster)?;
            if top_sites.is_empty() {
                top_sites = top_functions(&cluster);
            }
            if measure == Measure::Resident {
                prepared.insert(values.clone(), cluster);
            }
        }
        let record = cluster_record(values, sums, &top_sites);
        let fields: Vec<String> = record.iter().map(|field| csv_field(field)).collect();
        csv.push_str(&fields.join(","));
        csv.push('\n');
    }
    write(&options.output.join("clusters.csv"), csv.as_bytes())?;
    // The pairs to compare: --diff's, then --compare's.
    let mut pairs: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    if let Some(spec) = &options.diff {
        let index = by.iter().position(|k| *k == spec.label).unwrap_or(0);
        for values in answers.clusters.keys() {
            if values[index] != spec.base {
                continue;
            }
            let mut other = values.clone();
            other[index] = spec.new.clone();
            if answers.clusters.contains_key(&other) {
                pairs.push((values.clone(), other));
            } else {
                eprintln!(
                    "memmon fleet: no cluster {} to compare {} with",
                    cluster_name(&other),
                    cluster_name(values)
                );
            }
        }
    }
    let by_name = cluster_names(&answers);
    for (base, new) in &options.compare {
        match (by_name.get(base), by_name.get(new)) {
            (Some(b), Some(n)) => pairs.push((b.clone(), n.clone())),
            _ => {
                return Err(format!(
                    "--compare {base}:{new}: no cluster {} (the clusters: {})",
                    if by_name.contains_key(base) {
                        new
                    } else {
                        base
                    },
                    by_name.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            }
        }
    }
    let chains = if pairs.is_empty() {
        BTreeMap::new()
    } else {
        chains(&answers, &symbolised)
    };
    let mut diffs = 0;
    let mut compared = Vec::new();
    for (values, other) in &pairs {
        let stem = format!(
            "diff-{}-vs-{}",
            cluster_name(values).replace('/', "."),
            cluster_name(other).replace('/', ".")
        );
        let (base_sums, new_sums) = (&answers.clusters[values], &answers.clusters[other]);
        // Per function chain and measure (resident, allocated): the change and its noise.
        for measure in Measure::ALL {
            if let Some(rows) = diff_rows(
                base_sums,
                new_sums,
                &chains,
                measure,
                options.diff_threshold,
            ) {
                write(
                    &options
                        .output
                        .join(format!("{stem}{}.stacks.csv", measure.suffix())),
                    compare::csv(&rows).as_bytes(),
                )?;
                compared.push(Compared {
                    base: cluster_name(values),
                    new: cluster_name(other),
                    measure,
                    rows,
                });
            }
        }
        if let (Some(base), Some(new)) = (prepared.get(values), prepared.get(other)) {
            let (text, html, pprof) = diff_outputs(base, new, options.rows, &options.symbols)?;
            write(&options.output.join(format!("{stem}.txt")), text.as_bytes())?;
            write(
                &options.output.join(format!("{stem}.html")),
                html.as_bytes(),
            )?;
            write(&options.output.join(format!("{stem}.pb.gz")), &pprof)?;
        }
        diffs += 1;
    }
    Ok(Summary {
        clusters: answers.clusters.len(),
        snapshots: dataset.snapshots,
        skipped: dataset.skipped.len(),
        stacks: symbolised.table.len(),
        diffs,
        dropped,
        compared,
    })
}
