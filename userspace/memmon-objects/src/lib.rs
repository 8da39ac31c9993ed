//! Facts about the objects memmon sees, one home each: [`elf`] for ELF files (build ID,
//! `.gnu_debuglink`, whether they carry DWARF), [`functions`] for where their functions
//! start (from `.eh_frame`), and [`procfs`] for `/proc` (the lines of `/proc/PID/maps`).

pub mod elf;
pub mod functions;
pub mod procfs;
