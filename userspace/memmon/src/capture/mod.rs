//! Getting events: the capture file (reading streams, writing headers and snapshots) and
//! the control of the module (every /proc and /sys path memmon uses).

pub mod cgroup;
pub mod control;
pub mod file;
pub mod live;
pub mod unwind;
