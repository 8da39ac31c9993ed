//! The model the replay builds from captures: address spaces, sites, classes, pictures
//! of what is resident, the moments a report shows (the peak, the end, marks, a time),
//! statistics, the timeline and access sampling.

pub mod access;
pub mod class;
pub mod loss;
pub mod maps;
pub mod moment;
pub mod peak;
pub mod picture;
pub mod replay;
pub mod sites;
pub mod space;
pub mod stats;
pub mod timeline;

/// A process of one capture: (capture index, pid).
pub type ProcessKey = (usize, u32);
