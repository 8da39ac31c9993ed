//! A dataset directory of `memmon export`: its parquet parts, checked before any query.
//! An export writes one file per table with the same name (`part-TIME-PID.parquet`); a
//! part whose three files are not all there and readable with the tables' schemas is
//! skipped whole, with a line naming it, so that no snapshot is counted without its
//! stacks.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_schema::{DataType, Schema};
use memmon::export::schema::{self, TABLES};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// The good parts of a dataset, and the bad ones.
#[derive(Debug, Default)]
pub struct Dataset {
    /// Per table (in [`TABLES`] order), its good files.
    pub files: [Vec<PathBuf>; 3],
    /// Rows in the good snapshots files.
    pub snapshots: u64,
    /// Each part skipped, with why: one line each.
    pub skipped: Vec<String>,
}

/// Whether two types are the same but for the names and nullability of nested fields
/// (a map's entries are named differently by other writers).
fn same_type(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Map(a, _), DataType::Map(b, _)) => same_type(a.data_type(), b.data_type()),
        (DataType::Struct(a), DataType::Struct(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|(a, b)| same_type(a.data_type(), b.data_type()))
        }
        _ => a == b,
    }
}

/// Why a file is not a part of `table`, or its row count. A column added since the first
/// datasets ([`schema::ADDED`]) may be missing: the engine reads it as null.
fn check(path: &Path, table: &str, expected: &Schema) -> Result<u64, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| format!("not a parquet file (truncated?): {e}"))?;
    let found = builder.schema();
    for field in expected.fields() {
        let Ok(have) = found.field_with_name(field.name()) else {
            if schema::ADDED.contains(&(table, field.name().as_str())) {
                continue;
            }
            return Err(format!("wrong schema: no column {}", field.name()));
        };
        if !same_type(have.data_type(), field.data_type()) {
            return Err(format!(
                "wrong schema: column {} is {}, not {}",
                field.name(),
                have.data_type(),
                field.data_type()
            ));
        }
    }
    if let Some(extra) = found
        .fields()
        .iter()
        .find(|field| expected.field_with_name(field.name()).is_err())
    {
        return Err(format!(
            "wrong schema: a column {} it should not have",
            extra.name()
        ));
    }
    Ok(u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0))
}

impl Dataset {
    /// Reads the parts of the dataset in `dir`.
    pub fn open(dir: &Path) -> Result<Dataset, String> {
        let mut parts: BTreeMap<String, [Option<PathBuf>; 3]> = BTreeMap::new();
        for (index, table) in TABLES.iter().enumerate() {
            let table_dir = dir.join(table);
            let entries = std::fs::read_dir(&table_dir).map_err(|e| {
                format!(
                    "{} is not a dataset of memmon export (no {}: {e})",
                    dir.display(),
                    table_dir.display()
                )
            })?;
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(".parquet") {
                    parts.entry(name).or_default()[index] = Some(entry.path());
                }
            }
        }
        let mut dataset = Dataset::default();
        for (name, files) in parts {
            let mut rows = 0;
            let mut bad = None;
            for (index, table) in TABLES.iter().enumerate() {
                let Some(path) = &files[index] else {
                    bad = Some(format!("{table}/{name} is missing"));
                    break;
                };
                let expected = schema::of(table).unwrap_or_else(schema::snapshots);
                match check(path, table, &expected) {
                    Ok(count) if index == 0 => rows = count,
                    Ok(_) => {}
                    Err(reason) => {
                        bad = Some(format!("{}: {reason}", path.display()));
                        break;
                    }
                }
            }
            match bad {
                Some(reason) => dataset
                    .skipped
                    .push(format!("part {name} skipped: {reason}")),
                None => {
                    dataset.snapshots += rows;
                    for (index, file) in files.into_iter().enumerate() {
                        if let Some(file) = file {
                            dataset.files[index].push(file);
                        }
                    }
                }
            }
        }
        if dataset.files[0].is_empty() {
            return Err(format!(
                "{}: no good part of a dataset ({} skipped)",
                dir.display(),
                dataset.skipped.len()
            ));
        }
        Ok(dataset)
    }
}
