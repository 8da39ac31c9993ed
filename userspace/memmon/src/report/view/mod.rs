//! What the model means for a reader, with the sites named by `report::symbolize`: the memory view (site rows,
//! RSS tree, timeline, your code first), the access view, the diff of two views and the reconciliation;
//! whose code a frame is ([`own_code`]), and what memmon knows of language runtimes ([`runtimes`]).

pub mod access;
pub mod diff;
pub mod memory;
pub mod own_code;
pub mod reach;
pub mod reconcile;
pub mod runtimes;
pub mod stripped;
pub mod your_code;
