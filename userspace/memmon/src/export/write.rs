//! Appends snapshots to a dataset directory: `DIR/snapshots/`, `DIR/samples/`,
//! `DIR/stacks/`, each a set of parquet files (Snappy), one new file per table and writer
//! (`part-TIME-PID-N.parquet`), so that exports add to a dataset without rewriting it.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, Int64Builder, MapBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::{schema, stack_id, SnapshotData, StackFrame};

/// Rows buffered before a record batch is written.
const BATCH_ROWS: usize = 65_536;

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Writes snapshots into a dataset directory.
pub struct DatasetWriter {
    snapshots: TableWriter<SnapshotRows>,
    samples: TableWriter<SampleRows>,
    stacks: TableWriter<StackRows>,
    /// Stacks written by this writer (each once per file).
    stacks_seen: HashSet<i64>,
    /// The ids of the snapshots in the dataset: those of its files when created, and those
    /// written since.
    snapshots_seen: HashSet<i64>,
    /// Snapshots written.
    pub written: u64,
    /// Snapshots not written because the dataset had them (the same input exported twice).
    pub duplicates: u64,
}

impl DatasetWriter {
    /// New files in `dir` (created with its table directories if needed).
    pub fn create(dir: &Path) -> std::io::Result<DatasetWriter> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let name = format!("part-{nanos}-{}.parquet", std::process::id());
        let path = |table: &str| -> std::io::Result<PathBuf> {
            let table_dir = dir.join(table);
            std::fs::create_dir_all(&table_dir)?;
            Ok(table_dir.join(&name))
        };
        Ok(DatasetWriter {
            snapshots: TableWriter::create(&path("snapshots")?, schema::snapshots())?,
            samples: TableWriter::create(&path("samples")?, schema::samples())?,
            stacks: TableWriter::create(&path("stacks")?, schema::stacks())?,
            stacks_seen: HashSet::new(),
            snapshots_seen: snapshot_ids(&dir.join("snapshots"), &name),
            written: 0,
            duplicates: 0,
        })
    }

    /// Adds one snapshot, unless the dataset has it (a snapshot's id hashes its source's
    /// bytes, so an input exported again is not counted twice): then returns false.
    pub fn add(&mut self, snapshot: &SnapshotData) -> std::io::Result<bool> {
        if !self.snapshots_seen.insert(snapshot.id) {
            self.duplicates += 1;
            return Ok(false);
        }
        self.snapshots.rows.push(snapshot);
        // Stacks met more than once in a snapshot (sites that differ only in what the
        // tables do not keep) are one sample.
        let mut by_stack: std::collections::BTreeMap<i64, [u64; 8]> = Default::default();
        for sample in &snapshot.samples {
            let id = stack_id(&sample.frames);
            if self.stacks_seen.insert(id) {
                self.stacks.rows.push(id, &sample.frames);
            }
            let values = by_stack.entry(id).or_default();
            values[0] = values[0].saturating_add(sample.resident);
            values[1] = values[1].saturating_add(sample.mapped);
            for (value, fault) in values[2..7].iter_mut().zip(sample.faults) {
                *value = value.saturating_add(fault);
            }
            values[7] = values[7].saturating_add(sample.allocated);
        }
        for (stack, values) in by_stack {
            self.samples.rows.push(snapshot.id, stack, &values);
        }
        self.snapshots.flush_if_full()?;
        self.samples.flush_if_full()?;
        self.stacks.flush_if_full()?;
        self.written += 1;
        Ok(true)
    }

    /// Writes what is buffered and closes the files.
    pub fn finish(self) -> std::io::Result<()> {
        self.snapshots.finish()?;
        self.samples.finish()?;
        self.stacks.finish()
    }
}

/// The snapshot ids of the parquet files in `table_dir` but `own` (this writer's new file);
/// a file that cannot be read adds none (`memmon fleet` skips it too).
fn snapshot_ids(table_dir: &Path, own: &str) -> HashSet<i64> {
    let mut ids = HashSet::new();
    let Ok(entries) = std::fs::read_dir(table_dir) else {
        return ids;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|name| name == own)
            || path
                .extension()
                .is_none_or(|extension| extension != "parquet")
        {
            continue;
        }
        let _ = read_ids(&path, &mut ids);
    }
    ids
}

/// Adds the `snapshot_id` column of a snapshots file to `ids`.
fn read_ids(path: &Path, ids: &mut HashSet<i64>) -> Result<(), Box<dyn std::error::Error>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;

    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?;
    let column = builder
        .schema()
        .index_of("snapshot_id")
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [column]);
    for batch in builder.with_projection(mask).build()? {
        let batch = batch?;
        let column = batch
            .column(0)
            .as_primitive_opt::<Int64Type>()
            .ok_or("snapshot_id is not int64")?;
        ids.extend(column.iter().flatten());
    }
    Ok(())
}

trait Rows {
    fn len(&self) -> usize;
    fn columns(&mut self) -> Vec<ArrayRef>;
}

struct TableWriter<R> {
    writer: ArrowWriter<File>,
    schema: arrow_schema::SchemaRef,
    rows: R,
}

impl<R: Rows + Default> TableWriter<R> {
    fn create(path: &Path, schema: arrow_schema::SchemaRef) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(properties))
            .map_err(std::io::Error::other)?;
        Ok(TableWriter {
            writer,
            schema,
            rows: R::default(),
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.rows.len() == 0 {
            return Ok(());
        }
        let batch = RecordBatch::try_new(self.schema.clone(), self.rows.columns())
            .map_err(std::io::Error::other)?;
        self.writer.write(&batch).map_err(std::io::Error::other)
    }

    fn flush_if_full(&mut self) -> std::io::Result<()> {
        if self.rows.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.flush()?;
        self.writer.close().map_err(std::io::Error::other)?;
        Ok(())
    }
}

struct SnapshotRows {
    count: usize,
    id: Int64Builder,
    source: StringBuilder,
    labels: MapBuilder<StringBuilder, StringBuilder>,
    time: Int64Builder,
    resident: Int64Builder,
    anon: Int64Builder,
    file: Int64Builder,
    shmem: Int64Builder,
    allocated: Int64Builder,
    classes: MapBuilder<StringBuilder, Int64Builder>,
    process_start: Int64Builder,
}

impl Default for SnapshotRows {
    fn default() -> Self {
        SnapshotRows {
            count: 0,
            id: Int64Builder::new(),
            source: StringBuilder::new(),
            labels: MapBuilder::new(None, StringBuilder::new(), StringBuilder::new()),
            time: Int64Builder::new(),
            resident: Int64Builder::new(),
            anon: Int64Builder::new(),
            file: Int64Builder::new(),
            shmem: Int64Builder::new(),
            allocated: Int64Builder::new(),
            classes: MapBuilder::new(None, StringBuilder::new(), Int64Builder::new()),
            process_start: Int64Builder::new(),
        }
    }
}

impl SnapshotRows {
    fn push(&mut self, snapshot: &SnapshotData) {
        self.count += 1;
        self.id.append_value(snapshot.id);
        self.source.append_value(&snapshot.source);
        for (key, value) in &snapshot.labels {
            self.labels.keys().append_value(key);
            self.labels.values().append_value(value);
        }
        // A map builder's append fails only for a key count unlike its values'.
        let _ = self.labels.append(true);
        self.time.append_value(snapshot.time_unix_ns);
        let known = |bytes: u64| snapshot.resident_known.then(|| to_i64(bytes));
        self.resident.append_option(known(snapshot.resident()));
        self.anon.append_option(known(snapshot.anon));
        self.file.append_option(known(snapshot.file));
        self.shmem.append_option(known(snapshot.shmem));
        self.allocated.append_option(snapshot.allocated.map(to_i64));
        for (class, bytes) in &snapshot.class_bytes {
            self.classes.keys().append_value(class);
            self.classes.values().append_value(to_i64(*bytes));
        }
        let _ = self.classes.append(true);
        self.process_start
            .append_option(snapshot.process_start_unix_ns);
    }
}

impl Rows for SnapshotRows {
    fn len(&self) -> usize {
        self.count
    }

    fn columns(&mut self) -> Vec<ArrayRef> {
        self.count = 0;
        vec![
            Arc::new(self.id.finish()),
            Arc::new(self.source.finish()),
            Arc::new(self.labels.finish()),
            Arc::new(self.time.finish()),
            Arc::new(self.resident.finish()),
            Arc::new(self.anon.finish()),
            Arc::new(self.file.finish()),
            Arc::new(self.shmem.finish()),
            Arc::new(self.allocated.finish()),
            Arc::new(self.classes.finish()),
            Arc::new(self.process_start.finish()),
        ]
    }
}

#[derive(Default)]
struct SampleRows {
    count: usize,
    columns: [Int64Builder; 10],
}

impl SampleRows {
    fn push(&mut self, snapshot: i64, stack: i64, values: &[u64; 8]) {
        self.count += 1;
        self.columns[0].append_value(snapshot);
        self.columns[1].append_value(stack);
        for (column, &value) in self.columns[2..].iter_mut().zip(values) {
            column.append_value(to_i64(value));
        }
    }
}

impl Rows for SampleRows {
    fn len(&self) -> usize {
        self.count
    }

    fn columns(&mut self) -> Vec<ArrayRef> {
        self.count = 0;
        self.columns
            .iter_mut()
            .map(|column| Arc::new(column.finish()) as ArrayRef)
            .collect()
    }
}

#[derive(Default)]
struct StackRows {
    count: usize,
    stack: Int64Builder,
    frame: Int32Builder,
    build_id: StringBuilder,
    offset: Int64Builder,
    object: StringBuilder,
    label: StringBuilder,
}

impl StackRows {
    fn push(&mut self, id: i64, frames: &[StackFrame]) {
        for (index, frame) in frames.iter().enumerate() {
            self.count += 1;
            self.stack.append_value(id);
            self.frame
                .append_value(i32::try_from(index).unwrap_or(i32::MAX));
            match frame {
                StackFrame::Code {
                    build_id,
                    file_offset,
                    object,
                } => {
                    self.build_id.append_value(build_id);
                    self.offset.append_value(*file_offset as i64);
                    self.object.append_value(object);
                    self.label.append_null();
                }
                StackFrame::Label(name) => {
                    self.build_id.append_value("");
                    self.offset.append_value(0);
                    self.object.append_value("");
                    self.label.append_value(name);
                }
            }
        }
    }
}

impl Rows for StackRows {
    fn len(&self) -> usize {
        self.count
    }

    fn columns(&mut self) -> Vec<ArrayRef> {
        self.count = 0;
        vec![
            Arc::new(self.stack.finish()),
            Arc::new(self.frame.finish()),
            Arc::new(self.build_id.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.object.finish()),
            Arc::new(self.label.finish()),
        ]
    }
}
