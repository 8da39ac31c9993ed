//! Getting events: the capture file (reading streams, writing headers and snapshots), the
//! control of the module (every /proc and /sys path memmon uses), and what the events need
//! from the processes while they live (unwind tables, Python code objects, the pages a
//! process held before memmon watched it).

pub mod cgroup;
pub mod control;
pub mod file;
pub mod live;
pub mod python_codes;
pub mod resident;
pub mod unwind;
