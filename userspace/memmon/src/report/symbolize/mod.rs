//! Names for the code frames of the sites: the object files and their debug info are
//! found ([`debug_file`], [`debuginfod`]) and symbolised ([`symbols`]), generated code is
//! named by its perf map ([`jit_names`]), and the views a person reads show the names
//! short ([`short_name`]). The views (`report::view`) compute with the names; this
//! resolves them.

pub mod debug_file;
pub mod debuginfod;
pub mod jit_names;
pub mod short_name;
pub mod symbols;
