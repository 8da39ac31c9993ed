//! The pipeline's aggregation as SQL: clusters by labels, the top N snapshots by RSS
//! within each, per cluster the sum per stack over its snapshots (the mean is the sum
//! over the cluster's count: a stack absent from a snapshot counts 0 there), and the
//! frames of the stacks. Every query ends in a grouped aggregate, so the engine streams
//! the snapshots and samples and spills its hash tables past its memory pool.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use memmon::export::StackFrame;

/// The coarse classes of `class_bytes`, summed per cluster.
pub const CLASSES: [&str; 7] = [
    "heap",
    "anon_mmap",
    "stack",
    "file",
    "shmem",
    "special",
    "unknown",
];

/// The percentiles of RSS per cluster in `clusters.csv`.
pub const RESIDENT_PERCENTILES: [u64; 3] = [50, 95, 99];

/// What is asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Question {
    /// The labels that make clusters.
    pub by: Vec<String>,
    /// Per N, a sub-cluster `CLUSTER/topN` of each cluster: its N snapshots with the
    /// highest RSS (ties: by id; heap profiles, without RSS, last).
    pub top: Vec<u64>,
    /// The snapshots whose `reason` label is one of these are a sub-cluster of their own,
    /// `CLUSTER/REASON`, left out of CLUSTER (`--reason`).
    pub reasons: Vec<String>,
    /// Only the snapshots taken at or after this time (ns since the epoch).
    pub since: Option<i64>,
    /// Only the snapshots taken before this time (ns since the epoch).
    pub until: Option<i64>,
}

/// One cluster's sums over its snapshots. The resident sums are over the snapshots with
/// resident figures (captures, agent snapshots), the allocated ones over the heap
/// profiles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterSums {
    /// Snapshots.
    pub snapshots: u64,
    /// Snapshots with resident figures.
    pub resident_snapshots: u64,
    /// Snapshots with allocated figures (heap profiles).
    pub allocated_snapshots: u64,
    /// Allocated bytes (unbiased) in use.
    pub allocated: i64,
    /// Snapshots that say when their process started (and when they were taken).
    pub lifetime_snapshots: u64,
    /// Their processes' lifetimes at the snapshots, in milliseconds, summed.
    pub lifetime_ms: i64,
    /// Resident bytes at the 50th, 95th and 99th percentiles (nearest rank) of the
    /// snapshots with resident figures.
    pub resident_percentiles: [i64; 3],
    /// Resident, anon, file, shmem bytes.
    pub resident: i64,
    /// Anonymous bytes.
    pub anon: i64,
    /// File bytes.
    pub file: i64,
    /// Shared-memory bytes.
    pub shmem: i64,
    /// By coarse class ([`CLASSES`] order).
    pub classes: [i64; 7],
    /// Per stack: resident, mapped, the five fault counts, allocated.
    pub stacks: BTreeMap<i64, [i64; 8]>,
    /// Per stack: the sums of the squares of its resident and of its allocated bytes over
    /// the snapshots (one sample per snapshot and stack), for the diffs' intervals.
    pub squares: BTreeMap<i64, [f64; 2]>,
}

/// The answers: clusters by their labels' values, and the frames of their stacks.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    /// By the values of the `by` labels, then the sub-cluster (`""` for the cluster
    /// itself, `top2000`, `near-limit`, `near-limit/top2000`).
    pub clusters: BTreeMap<Vec<String>, ClusterSums>,
    /// The frames of each stack, innermost first.
    pub stacks: BTreeMap<i64, Vec<StackFrame>>,
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The snapshots of each cluster chosen (`chosen`: snapshot_id, c0..cN, the sums'
/// columns).
fn chosen_sql(question: &Question) -> String {
    let labels: Vec<String> = question
        .by
        .iter()
        .enumerate()
        .map(|(i, key)| format!("COALESCE(labels[{}], 'none') AS c{i}", quote(key)))
        .collect();
    let classes: Vec<String> = CLASSES
        .iter()
        .enumerate()
        .map(|(i, class)| format!("COALESCE(class_bytes[{}], 0) AS k{i}", quote(class)))
        .collect();
    // The window's partition: the sub-cluster's column only where it varies (a constant
    // one in a PARTITION BY fails on Ballista 55: "Expects PARTITION BY expression to be
    // ordered").
    let keys = window_keys(question, !question.reasons.is_empty());
    let filter = time_filter(question);
    let width = question.by.len();
    let part = if question.reasons.is_empty() {
        "''".to_owned()
    } else {
        let reasons: Vec<String> = question.reasons.iter().map(|r| quote(r)).collect();
        format!(
            "CASE WHEN COALESCE(labels['reason'], '') IN ({}) THEN labels['reason'] ELSE '' END",
            reasons.join(", ")
        )
    };
    let snaps = format!(
        "SELECT snapshot_id, resident_bytes, anon_bytes, file_bytes, shmem_bytes, \
         allocated_bytes, {LIFETIME_MS} AS lifetime_ms, {}, {}, {part} AS c{width} FROM \
         snapshots{filter}",
        classes.join(", "),
        labels.join(", ")
    );
    if question.top.is_empty() {
        return snaps;
    }
    // The snapshots once as their cluster, once more in each tier of the top N: joined to
    // the tiers.
    let mut columns: Vec<String> = [
        "snapshot_id",
        "resident_bytes",
        "anon_bytes",
        "file_bytes",
        "shmem_bytes",
        "allocated_bytes",
        "lifetime_ms",
    ]
    .iter()
    .map(|c| (*c).to_owned())
    .collect();
    columns.extend((0..CLASSES.len()).map(|i| format!("k{i}")));
    columns.extend((0..width).map(|i| format!("c{i}")));
    let columns = columns.join(", ");
    let mut tiers = vec!["('', 0)".to_owned()];
    tiers.extend(question.top.iter().map(|n| format!("('top{n}', {n})")));
    format!(
        "WITH snaps AS ({snaps}), ranked AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY \
         {keys} ORDER BY resident_bytes DESC NULLS LAST, snapshot_id) AS rank FROM snaps), \
         tiers AS (SELECT * FROM (VALUES {}) AS t(tier, tier_size)) \
         SELECT {columns}, CASE WHEN tier = '' THEN c{width} WHEN c{width} = '' THEN tier \
         ELSE c{width} || '/' || tier END AS c{width} FROM ranked CROSS JOIN tiers \
         WHERE tier_size = 0 OR rank <= tier_size",
        tiers.join(", ")
    )
}

/// The `WHERE` clause of `--since`/`--until` over the snapshots (empty without them).
fn time_filter(question: &Question) -> String {
    let mut when = Vec::new();
    if let Some(since) = question.since {
        when.push(format!("time_unix_ns >= {since}"));
    }
    if let Some(until) = question.until {
        when.push(format!("time_unix_ns < {until}"));
    }
    if when.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", when.join(" AND "))
    }
}

/// The partition of a window over the chosen snapshots: the labels' columns, and the
/// sub-cluster's if `varies`.
fn window_keys(question: &Question, varies: bool) -> String {
    let width = question.by.len() + usize::from(varies);
    (0..width)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The columns of a cluster's key: the labels' values, then the sub-cluster.
fn cluster_columns(question: &Question) -> String {
    (0..=question.by.len())
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn batches(
    context: &SessionContext,
    sql: &str,
    mut each: impl FnMut(&RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    let frame = context
        .sql(sql)
        .await
        .map_err(|e| format!("query failed: {e}"))?;
    let mut stream = frame
        .execute_stream()
        .await
        .map_err(|e| format!("query failed: {e}"))?;
    while let Some(batch) = stream.next().await {
        each(&batch.map_err(|e| format!("query failed: {e}"))?)?;
    }
    Ok(())
}

/// Each row's cluster key: the batch's first `width` columns (the labels), a null as "".
fn row_keys(batch: &RecordBatch, width: usize) -> Result<Vec<Vec<String>>, String> {
    let labels: Vec<Vec<Option<String>>> = batch.columns()[..width]
        .iter()
        .map(strings)
        .collect::<Result<_, _>>()?;
    Ok((0..batch.num_rows())
        .map(|row| {
            labels
                .iter()
                .map(|column| column[row].clone().unwrap_or_default())
                .collect()
        })
        .collect())
}

fn strings(column: &ArrayRef) -> Result<Vec<Option<String>>, String> {
    let column = cast(column, &DataType::Utf8).map_err(|e| e.to_string())?;
    let column = column.as_string::<i32>();
    Ok((0..column.len())
        .map(|i| (!column.is_null(i)).then(|| column.value(i).to_owned()))
        .collect())
}

fn integers(column: &ArrayRef) -> Result<Vec<i64>, String> {
    let column = cast(column, &DataType::Int64).map_err(|e| e.to_string())?;
    let column = column.as_primitive::<Int64Type>();
    Ok((0..column.len())
        .map(|i| {
            if column.is_null(i) {
                0
            } else {
                column.value(i)
            }
        })
        .collect())
}

fn floats(column: &ArrayRef) -> Result<Vec<f64>, String> {
    let column = cast(column, &DataType::Float64).map_err(|e| e.to_string())?;
    let column = column.as_primitive::<Float64Type>();
    Ok((0..column.len())
        .map(|i| {
            if column.is_null(i) {
                0.0
            } else {
                column.value(i)
            }
        })
        .collect())
}

/// A snapshot's process's lifetime at the snapshot, in milliseconds (null where the
/// snapshot does not say when its process started, or when it was taken): milliseconds, so
/// that a day of a fleet's lifetimes sums within 64 bits.
const LIFETIME_MS: &str = "CASE WHEN time_unix_ns > 0 AND process_start_unix_ns IS NOT NULL \
     THEN (time_unix_ns - process_start_unix_ns) / 1000000 END";

/// Runs the queries.
pub async fn answer(context: &SessionContext, question: &Question) -> Result<Answers, String> {
    let chosen = chosen_sql(question);
    let keys = cluster_columns(question);
    let width = question.by.len() + 1;
    let class_sums: Vec<String> = (0..CLASSES.len()).map(|i| format!("SUM(k{i})")).collect();
    let clusters_sql = format!(
        "WITH chosen AS ({chosen}) SELECT {keys}, COUNT(*), SUM(resident_bytes), \
         SUM(anon_bytes), SUM(file_bytes), SUM(shmem_bytes), {}, COUNT(resident_bytes), \
         COUNT(allocated_bytes), SUM(allocated_bytes), COUNT(lifetime_ms), SUM(lifetime_ms) \
         FROM chosen GROUP BY {keys}",
        class_sums.join(", "),
    );
    let classes = CLASSES.len();
    let mut answers = Answers::default();
    batches(context, &clusters_sql, |batch| {
        let columns = batch.columns();
        let keys = row_keys(batch, width)?;
        let numbers: Vec<Vec<i64>> = columns[width..]
            .iter()
            .map(integers)
            .collect::<Result<_, _>>()?;
        for (row, key) in keys.into_iter().enumerate() {
            let sums = answers.clusters.entry(key).or_default();
            sums.snapshots = u64::try_from(numbers[0][row]).unwrap_or(0);
            sums.resident = numbers[1][row];
            sums.anon = numbers[2][row];
            sums.file = numbers[3][row];
            sums.shmem = numbers[4][row];
            for (i, class) in sums.classes.iter_mut().enumerate() {
                *class = numbers[5 + i][row];
            }
            sums.resident_snapshots = u64::try_from(numbers[5 + classes][row]).unwrap_or(0);
            sums.allocated_snapshots = u64::try_from(numbers[6 + classes][row]).unwrap_or(0);
            sums.allocated = numbers[7 + classes][row];
            sums.lifetime_snapshots = u64::try_from(numbers[8 + classes][row]).unwrap_or(0);
            sums.lifetime_ms = numbers[9 + classes][row];
        }
        Ok(())
    })
    .await?;
    // Nearest-rank percentiles of RSS: the value of rank ceil(P * n / 100) in each
    // cluster's snapshots with resident figures, in integers.
    let percentiles: Vec<String> = RESIDENT_PERCENTILES
        .iter()
        .map(|p| format!("MAX(CASE WHEN r = ({p} * n + 99) / 100 THEN resident_bytes END)"))
        .collect();
    let window = window_keys(
        question,
        !question.reasons.is_empty() || !question.top.is_empty(),
    );
    let percentiles_sql = format!(
        "WITH chosen AS ({chosen}), ranked AS (SELECT {keys}, resident_bytes, ROW_NUMBER() \
         OVER (PARTITION BY {window} ORDER BY resident_bytes, snapshot_id) AS r, \
         COUNT(*) OVER (PARTITION BY {window}) AS n FROM chosen WHERE resident_bytes IS NOT \
         NULL) SELECT {keys}, {} FROM ranked GROUP BY {keys}",
        percentiles.join(", ")
    );
    batches(context, &percentiles_sql, |batch| {
        let columns = batch.columns();
        let keys = row_keys(batch, width)?;
        let numbers: Vec<Vec<i64>> = columns[width..]
            .iter()
            .map(integers)
            .collect::<Result<_, _>>()?;
        for (row, key) in keys.into_iter().enumerate() {
            if let Some(sums) = answers.clusters.get_mut(&key) {
                for (i, value) in sums.resident_percentiles.iter_mut().enumerate() {
                    *value = numbers[i][row];
                }
            }
        }
        Ok(())
    })
    .await?;
    let prefixed: Vec<String> = (0..width).map(|i| format!("c.c{i}")).collect();
    let stacks_sql = format!(
        "WITH chosen AS ({chosen}) SELECT {}, s.stack_id, SUM(s.resident_bytes), \
         SUM(s.mapped_bytes), SUM(s.faults_anon), SUM(s.faults_file), SUM(s.faults_swap), \
         SUM(s.faults_wp), SUM(s.faults_other), SUM(s.allocated_bytes), \
         SUM(CAST(s.resident_bytes AS DOUBLE) * CAST(s.resident_bytes AS DOUBLE)), \
         SUM(CAST(s.allocated_bytes AS DOUBLE) * CAST(s.allocated_bytes AS DOUBLE)) \
         FROM samples s JOIN chosen c \
         ON s.snapshot_id = c.snapshot_id GROUP BY {}, s.stack_id",
        prefixed.join(", "),
        prefixed.join(", ")
    );
    batches(context, &stacks_sql, |batch| {
        let columns = batch.columns();
        let keys = row_keys(batch, width)?;
        let numbers: Vec<Vec<i64>> = columns[width..width + 9]
            .iter()
            .map(integers)
            .collect::<Result<_, _>>()?;
        let squares: Vec<Vec<f64>> = columns[width + 9..]
            .iter()
            .map(floats)
            .collect::<Result<_, _>>()?;
        for (row, key) in keys.into_iter().enumerate() {
            let Some(sums) = answers.clusters.get_mut(&key) else {
                continue;
            };
            let mut values = [0i64; 8];
            for (i, value) in values.iter_mut().enumerate() {
                *value = numbers[1 + i][row];
            }
            sums.stacks.insert(numbers[0][row], values);
            sums.squares
                .insert(numbers[0][row], [squares[0][row], squares[1][row]]);
        }
        Ok(())
    })
    .await?;
    answers.stacks = frames(context, "").await?;
    Ok(answers)
}

/// The frames of the stacks (those `WHERE` `filter` keeps of the `stacks` table: all for
/// an empty one), innermost first.
async fn frames(
    context: &SessionContext,
    filter: &str,
) -> Result<BTreeMap<i64, Vec<StackFrame>>, String> {
    // One row per frame of each stack (the same build ID may have been at different paths
    // on different machines: the first path in order names it).
    let frames_sql = format!(
        "SELECT stack_id, frame, MIN(build_id), MIN(file_offset), MIN(object), MIN(label) \
         FROM stacks{filter} GROUP BY stack_id, frame"
    );
    let mut frames: BTreeMap<(i64, i64), StackFrame> = BTreeMap::new();
    batches(context, &frames_sql, |batch| {
        let columns = batch.columns();
        let stack = integers(&columns[0])?;
        let frame = integers(&columns[1])?;
        let build_id = strings(&columns[2])?;
        let offset = integers(&columns[3])?;
        let object = strings(&columns[4])?;
        let label = strings(&columns[5])?;
        for row in 0..batch.num_rows() {
            let value = match &label[row] {
                Some(name) => StackFrame::Label(name.clone()),
                None => StackFrame::Code {
                    build_id: build_id[row].clone().unwrap_or_default(),
                    file_offset: offset[row] as u64,
                    object: object[row].clone().unwrap_or_default(),
                },
            };
            frames.insert((stack[row], frame[row]), value);
        }
        Ok(())
    })
    .await?;
    let mut out: BTreeMap<i64, Vec<StackFrame>> = BTreeMap::new();
    for ((stack, _), frame) in frames {
        out.entry(stack).or_default().push(frame);
    }
    Ok(out)
}

/// One snapshot as the dataset has it, but its samples.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SnapshotRow {
    /// Its id.
    pub snapshot_id: i64,
    /// Where it came from.
    pub source: String,
    /// When (ns since the epoch; 0 unknown).
    pub time_unix_ns: i64,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Resident bytes (`None` for a heap profile).
    pub resident_bytes: Option<i64>,
    /// Allocated bytes (`None` but for a heap profile).
    pub allocated_bytes: Option<i64>,
}

/// A snapshot holding the stacks asked for, with their bytes in it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Holder {
    /// The snapshot.
    #[serde(flatten)]
    pub snapshot: SnapshotRow,
    /// The stacks' resident bytes in it.
    pub stack_resident_bytes: i64,
    /// The stacks' allocated bytes in it.
    pub stack_allocated_bytes: i64,
}

impl Holder {
    /// The stacks' bytes in it: resident and allocated (a snapshot has one or the other).
    pub fn bytes(&self) -> i64 {
        self.stack_resident_bytes
            .saturating_add(self.stack_allocated_bytes)
    }
}

/// A list of stack or snapshot ids for SQL's `IN (...)`.
fn id_list(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each row's labels (a `map<utf8, utf8>` column).
fn label_maps(column: &ArrayRef) -> Result<Vec<BTreeMap<String, String>>, String> {
    let map = column
        .as_map_opt()
        .ok_or_else(|| format!("labels are {}, not a map", column.data_type()))?;
    let keys = strings(map.keys())?;
    let values = strings(map.values())?;
    let offsets = map.value_offsets();
    Ok((0..map.len())
        .map(|row| {
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            (start..end)
                .filter_map(|i| Some((keys[i].clone()?, values[i].clone().unwrap_or_default())))
                .collect()
        })
        .collect())
}

/// Each row's values of a `map<utf8, int64>` column in [`CLASSES`] order.
fn class_sums(column: &ArrayRef) -> Result<Vec<[i64; 7]>, String> {
    let map = column
        .as_map_opt()
        .ok_or_else(|| format!("classes are {}, not a map", column.data_type()))?;
    let keys = strings(map.keys())?;
    let values = integers(map.values())?;
    let offsets = map.value_offsets();
    Ok((0..map.len())
        .map(|row| {
            let mut out = [0i64; 7];
            for i in offsets[row] as usize..offsets[row + 1] as usize {
                if let Some(index) = CLASSES.iter().position(|c| Some(*c) == keys[i].as_deref()) {
                    out[index] = values[i];
                }
            }
            out
        })
        .collect())
}

fn optional_integers(column: &ArrayRef) -> Result<Vec<Option<i64>>, String> {
    let column = cast(column, &DataType::Int64).map_err(|e| e.to_string())?;
    let column = column.as_primitive::<Int64Type>();
    Ok((0..column.len())
        .map(|i| (!column.is_null(i)).then(|| column.value(i)))
        .collect())
}

/// The snapshots' rows, by id.
async fn snapshot_rows(
    context: &SessionContext,
    ids: &[i64],
) -> Result<BTreeMap<i64, (SnapshotRow, [i64; 3], [i64; 7])>, String> {
    let mut out = BTreeMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT snapshot_id, source, time_unix_ns, labels, resident_bytes, allocated_bytes, \
         anon_bytes, file_bytes, shmem_bytes, class_bytes FROM snapshots WHERE snapshot_id \
         IN ({})",
        id_list(ids)
    );
    batches(context, &sql, |batch| {
        let columns = batch.columns();
        let id = integers(&columns[0])?;
        let source = strings(&columns[1])?;
        let time = integers(&columns[2])?;
        let labels = label_maps(&columns[3])?;
        let resident = optional_integers(&columns[4])?;
        let allocated = optional_integers(&columns[5])?;
        let kinds: Vec<Vec<i64>> = columns[6..9]
            .iter()
            .map(integers)
            .collect::<Result<_, _>>()?;
        let classes = class_sums(&columns[9])?;
        for row in 0..batch.num_rows() {
            out.insert(
                id[row],
                (
                    SnapshotRow {
                        snapshot_id: id[row],
                        source: source[row].clone().unwrap_or_default(),
                        time_unix_ns: time[row],
                        labels: labels[row].clone(),
                        resident_bytes: resident[row],
                        allocated_bytes: allocated[row],
                    },
                    [kinds[0][row], kinds[1][row], kinds[2][row]],
                    classes[row],
                ),
            );
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// The drill-down: the snapshots that hold any of `stacks`, with their bytes of them,
/// most first (ties by id), at most `limit`. Among the question's snapshots (its time
/// range) and, with `cluster` (a key of [`Answers::clusters`]), those of that cluster or
/// sub-cluster only.
pub async fn holders(
    context: &SessionContext,
    question: &Question,
    cluster: Option<&[String]>,
    stacks: &[i64],
    limit: usize,
) -> Result<Vec<Holder>, String> {
    if stacks.is_empty() {
        return Ok(Vec::new());
    }
    let (from, condition) = match cluster {
        Some(values) => {
            let key: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(i, value)| format!(" AND c.c{i} = {}", quote(value)))
                .collect();
            (format!("({})", chosen_sql(question)), key.concat())
        }
        None => (
            format!(
                "(SELECT snapshot_id FROM snapshots{})",
                time_filter(question)
            ),
            String::new(),
        ),
    };
    let sql = format!(
        "SELECT s.snapshot_id, SUM(s.resident_bytes), SUM(s.allocated_bytes) FROM samples s \
         JOIN {from} c ON s.snapshot_id = c.snapshot_id WHERE s.stack_id IN ({}){condition} \
         GROUP BY s.snapshot_id",
        id_list(stacks)
    );
    let mut sums: Vec<(i64, i64, i64)> = Vec::new();
    batches(context, &sql, |batch| {
        let columns = batch.columns();
        let id = integers(&columns[0])?;
        let resident = integers(&columns[1])?;
        let allocated = integers(&columns[2])?;
        for row in 0..batch.num_rows() {
            sums.push((id[row], resident[row], allocated[row]));
        }
        Ok(())
    })
    .await?;
    sums.sort_by_key(|&(id, resident, allocated)| {
        (std::cmp::Reverse(resident.saturating_add(allocated)), id)
    });
    sums.truncate(limit);
    let ids: Vec<i64> = sums.iter().map(|s| s.0).collect();
    let mut rows = snapshot_rows(context, &ids).await?;
    Ok(sums
        .into_iter()
        .filter_map(|(id, resident, allocated)| {
            Some(Holder {
                snapshot: rows.remove(&id)?.0,
                stack_resident_bytes: resident,
                stack_allocated_bytes: allocated,
            })
        })
        .collect())
}

/// One snapshot as a cluster of one (its sums are its values), for its own report; `None`
/// for an id the dataset does not have.
pub async fn snapshot(
    context: &SessionContext,
    id: i64,
) -> Result<Option<(SnapshotRow, Answers)>, String> {
    let Some((row, kinds, classes)) = snapshot_rows(context, &[id]).await?.remove(&id) else {
        return Ok(None);
    };
    let mut sums = ClusterSums {
        snapshots: 1,
        resident_snapshots: u64::from(row.resident_bytes.is_some()),
        allocated_snapshots: u64::from(row.allocated_bytes.is_some()),
        allocated: row.allocated_bytes.unwrap_or(0),
        resident: row.resident_bytes.unwrap_or(0),
        anon: kinds[0],
        file: kinds[1],
        shmem: kinds[2],
        classes,
        ..ClusterSums::default()
    };
    sums.resident_percentiles = [sums.resident; 3];
    let sql = format!(
        "SELECT stack_id, SUM(resident_bytes), SUM(mapped_bytes), SUM(faults_anon), \
         SUM(faults_file), SUM(faults_swap), SUM(faults_wp), SUM(faults_other), \
         SUM(allocated_bytes) FROM samples WHERE snapshot_id = {id} GROUP BY stack_id"
    );
    batches(context, &sql, |batch| {
        let numbers: Vec<Vec<i64>> = batch
            .columns()
            .iter()
            .map(integers)
            .collect::<Result<_, _>>()?;
        for (row, &stack) in numbers[0].iter().enumerate() {
            let mut values = [0i64; 8];
            for (i, value) in values.iter_mut().enumerate() {
                *value = numbers[1 + i][row];
            }
            sums.stacks.insert(stack, values);
            let square = |v: i64| (v as f64) * (v as f64);
            sums.squares
                .insert(stack, [square(values[0]), square(values[7])]);
        }
        Ok(())
    })
    .await?;
    let mut answers = Answers {
        stacks: frames(
            context,
            &format!(" WHERE stack_id IN (SELECT stack_id FROM samples WHERE snapshot_id = {id})"),
        )
        .await?,
        ..Answers::default()
    };
    answers.clusters.insert(vec![String::new()], sums);
    Ok(Some((row, answers)))
}

/// A time of `--since`/`--until`: seconds since the epoch, or a UTC date `YYYY-MM-DD` with an
/// optional time `THH:MM[:SS]` (and an optional `Z`), as nanoseconds since the epoch.
pub fn parse_time(text: &str) -> Result<i64, String> {
    let bad =
        || format!("{text:?}: give seconds since the epoch or a UTC time YYYY-MM-DD[THH:MM[:SS]]");
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: i64 = text.parse().map_err(|_| bad())?;
        return seconds.checked_mul(1_000_000_000).ok_or_else(bad);
    }
    let text_utc = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = text_utc
        .split_once(['T', ' '])
        .unwrap_or((text_utc, "00:00"));
    let number = |part: Option<&str>, digits: usize| -> Result<i64, String> {
        let part = part.ok_or_else(bad)?;
        if part.len() != digits || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        part.parse().map_err(|_| bad())
    };
    let mut fields = date.split('-');
    let (year, month, day) = (
        number(fields.next(), 4)?,
        number(fields.next(), 2)?,
        number(fields.next(), 2)?,
    );
    let mut clock = time.split(':');
    let (hour, minute) = (number(clock.next(), 2)?, number(clock.next(), 2)?);
    let second = match clock.next() {
        Some(part) => number(Some(part), 2)?,
        None => 0,
    };
    if fields.next().is_some()
        || clock.next().is_some()
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(bad());
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok((days * 86_400 + hour * 3600 + minute * 60 + second) * 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn times_are_seconds_or_utc_dates() {
        assert_eq!(parse_time("1796601600"), Ok(1_796_601_600_000_000_000));
        assert_eq!(parse_time("2026-12-07"), Ok(1_796_601_600_000_000_000));
        assert_eq!(
            parse_time("2000-02-29T13:45:07Z"),
            Ok(951_831_907_000_000_000)
        );
        assert_eq!(parse_time("1970-01-01T00:00"), Ok(0));
        for bad in [
            "",
            "2026-13-01",
            "2026-12-7",
            "2026-12-07T25:00",
            "yesterday",
            "1e9",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }
}
