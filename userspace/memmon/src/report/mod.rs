//! `memmon report`: which code and which mappings hold the memory.
//!
//! [`Replay`] replays captures into a model of each address space ([`space`]), with
//! every resident page attributed to the code site that brought it in and to its mapping
//! class; [`symbols`] names the sites; the views and output formats build on the
//! [`Analysis`].

pub mod access;
pub mod access_html;
pub mod access_view;
pub mod chart;
pub mod class;
pub mod diff;
pub mod fasthash;
pub mod folded;
pub mod generate;
pub mod html;
pub mod maps;
pub mod picture;
pub mod pprof;
pub mod profile_proto;
pub mod reconcile;
pub mod replay;
pub mod sites;
pub mod space;
pub mod stats;
pub mod summary;
pub mod symbols;
pub mod text;
pub mod timeline;
pub mod view;

pub use generate::{report, Format, ReportError, ReportOptions};
pub use replay::{Analysis, Replay, ReplayOptions};
