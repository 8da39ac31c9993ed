//! `memmon fleet`: the snapshots of a fleet (a dataset of `memmon export`) aggregated as
//! SQL on DataFusion, embedded (default) or on a Ballista cluster, then symbolised once per
//! (build ID, offset) and written as the report's outputs per cluster (docs/fleet.md).
//!
//! - [`dataset`]: the dataset's parquet parts, bad ones skipped with a line each;
//! - [`engine`]: the engines (DataFusion with a capped memory pool that spills, or
//!   Ballista);
//! - [`query`]: the aggregation's SQL;
//! - [`compare`]: the diffs' per-stack changes, Welch's intervals and flags;
//! - [`run`]: symbolisation and outputs;
//! - [`daily`]: `memmon fleet daily`, a day's comparisons stored and posted to a webhook;
//! - [`serve`]: `memmon serve`, the clusters as a web service on the same queries;
//! - `cluster`: a Ballista scheduler and executor in one binary each, for tests and
//!   small deployments (with the `ballista` feature, on by default).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "ballista")]
pub mod cluster;
pub mod compare;
pub mod daily;
pub mod dataset;
pub mod engine;
pub mod query;
pub mod run;
pub mod serve;
