//! The formats a view is written in: text, folded stacks and flame graphs, pprof, the
//! HTML page, and the end-of-run summary; how they name the moment shown.

pub mod folded;
pub mod html;
pub mod moment;
pub mod pprof;
pub mod profile_proto;
pub mod summary;
pub mod text;
