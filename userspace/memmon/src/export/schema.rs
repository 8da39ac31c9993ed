//! The three tables' Arrow schemas (as written to parquet; docs/fleet.md lists them).
//!
//! - `snapshots`: `snapshot_id` int64, `source` utf8, `labels` map<utf8, utf8>,
//!   `time_unix_ns` int64, `resident_bytes`, `anon_bytes`, `file_bytes`, `shmem_bytes`
//!   int64 (null: a heap profile, which has no resident figures), `allocated_bytes` int64
//!   (null: not a heap profile), `class_bytes` map<utf8, int64>, `process_start_unix_ns`
//!   int64 (null: the source does not say when its process started);
//! - `samples`: `snapshot_id` int64, `stack_id` int64, `resident_bytes`, `mapped_bytes`,
//!   `faults_anon`, `faults_file`, `faults_swap`, `faults_wp`, `faults_other` int64,
//!   `allocated_bytes` int64 (a heap profile's unbiased bytes; 0 otherwise);
//!
//! The nullable columns a dataset written before them lacks ([`ADDED`]) read as null.
//! - `stacks`: `stack_id` int64, `frame` int32 (0: innermost), `build_id` utf8 (empty for a
//!   pseudo-frame), `file_offset` int64, `object` utf8, `label` utf8 (null for code).

use std::sync::Arc;

use arrow_array::builder::{Int64Builder, MapBuilder, StringBuilder};
use arrow_array::Array;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::FAULT_COLUMNS;

/// The table names, which are also the dataset's directory names.
pub const TABLES: [&str; 3] = ["snapshots", "samples", "stacks"];

/// The type of `labels`: map<utf8, utf8> as Arrow's map builder makes it.
pub fn labels_type() -> DataType {
    MapBuilder::new(None, StringBuilder::new(), StringBuilder::new())
        .finish()
        .data_type()
        .clone()
}

/// The type of `class_bytes`: map<utf8, int64>.
pub fn class_bytes_type() -> DataType {
    MapBuilder::new(None, StringBuilder::new(), Int64Builder::new())
        .finish()
        .data_type()
        .clone()
}

fn int64(name: &str) -> Field {
    Field::new(name, DataType::Int64, false)
}

fn nullable_int64(name: &str) -> Field {
    Field::new(name, DataType::Int64, true)
}

/// The columns added since the first datasets, by table: a part without them is read
/// with nulls there.
pub const ADDED: [(&str, &str); 3] = [
    ("snapshots", "allocated_bytes"),
    ("samples", "allocated_bytes"),
    ("snapshots", "process_start_unix_ns"),
];

/// The snapshots table.
pub fn snapshots() -> SchemaRef {
    Arc::new(Schema::new(vec![
        int64("snapshot_id"),
        Field::new("source", DataType::Utf8, false),
        Field::new("labels", labels_type(), false),
        int64("time_unix_ns"),
        nullable_int64("resident_bytes"),
        nullable_int64("anon_bytes"),
        nullable_int64("file_bytes"),
        nullable_int64("shmem_bytes"),
        nullable_int64("allocated_bytes"),
        Field::new("class_bytes", class_bytes_type(), false),
        nullable_int64("process_start_unix_ns"),
    ]))
}

/// The samples table.
pub fn samples() -> SchemaRef {
    let mut fields = vec![
        int64("snapshot_id"),
        int64("stack_id"),
        int64("resident_bytes"),
        int64("mapped_bytes"),
    ];
    fields.extend(FAULT_COLUMNS.iter().map(|name| int64(name)));
    fields.push(nullable_int64("allocated_bytes"));
    Arc::new(Schema::new(fields))
}

/// The stacks table.
pub fn stacks() -> SchemaRef {
    Arc::new(Schema::new(vec![
        int64("stack_id"),
        Field::new("frame", DataType::Int32, false),
        Field::new("build_id", DataType::Utf8, false),
        int64("file_offset"),
        Field::new("object", DataType::Utf8, false),
        Field::new("label", DataType::Utf8, true),
    ]))
}

/// The schema of table `name` (one of [`TABLES`]).
pub fn of(name: &str) -> Option<SchemaRef> {
    match name {
        "snapshots" => Some(snapshots()),
        "samples" => Some(samples()),
        "stacks" => Some(stacks()),
        _ => None,
    }
}
