//! Unwind tables for the memmon module: DWARF CFI compiled into rows the kernel walks.
//!
//! - [`compile`] reads an ELF object's `.eh_frame` / `.debug_frame` into [`Table`] rows, by
//!   its architecture's rules ([`arch`]: x86_64, arm64);
//! - [`key`] names each object's table (build ID, or device and inode);
//! - [`protocol`] encodes the writes to `/proc/memmon/unwind` and validates them as the
//!   module does; `fuzz` (cargo feature `fuzz`, test support) makes invalid writes for
//!   the module's tests;
//! - [`maps`] reads `/proc/PID/maps` into the objects mapped and their load bias;
//! - [`loader`] keeps the tables, and loads those of a process into the module;
//! - [`walk`] is the walk of docs/unwind.md, in userspace, as a reference.

pub mod arch;
pub mod compile;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod key;
pub mod loader;
pub mod maps;
pub mod needed;
pub mod protocol;
pub mod python;
pub mod walk;

pub use arch::Arch;
pub use compile::{compile, CompileError, CompileStats, Table};
pub use key::{FileId, Key};
pub use loader::{Loader, UnwindFile, UnwindSink};
pub use protocol::{Range, Row, Rule};
