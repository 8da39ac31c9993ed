//! The formats a view is written in: text, folded stacks and flame graphs, pprof, the
//! HTML page, and the end-of-run summary.

pub mod folded;
pub mod html;
pub mod pprof;
pub mod profile_proto;
pub mod summary;
pub mod text;
