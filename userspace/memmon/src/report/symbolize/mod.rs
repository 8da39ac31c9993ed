//! Names for the code frames of the sites: the object files and their debug info are
//! found ([`debug_file`], [`debuginfod`]) and symbolised ([`symbols`]). The views
//! (`report::view`) compute with the names; this resolves them.

pub mod debug_file;
pub mod debuginfod;
pub mod symbols;
