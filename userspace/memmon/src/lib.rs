//! Userspace library for **memmon**, a Linux kernel module that records the mm system
//! calls and typed page faults of watched processes and serves them as text lines through
//! `/proc/memmon/events`.
//!
//! - [`parse_line`] turns one line (format: `docs/events.md`) into a typed [`Event`];
//!   `Display` on [`Event`] writes it back in exactly that format, [`Event::human`] gives
//!   the original memmon's log style, and `serde::Serialize` gives JSON.
//! - [`CaptureReader`] streams events with line numbers from any `BufRead`:
//!   `/proc/memmon/events`, a capture file (see [`capture::file`] for its format), stdin.
//! - [`ProcInterface`] controls the module: watch-pids, stats, marker, events; every
//!   /proc and /sys path memmon uses is in [`capture::control`].
//! - [`report`] is `memmon report`: it replays captures into a model of each address
//!   space ([`report::model`]), names and aggregates what holds the memory
//!   ([`report::view`]) and writes it as text, JSON, folded stacks, flame graphs, pprof or
//!   one HTML page ([`report::output`]).
//!
//! The rooms: [`stream`] (the line format), [`capture`] (getting events), [`report`].
//!
//! ```
//! use memmon::{parse_line, EventKind};
//!
//! let event = parse_line("5.104012000 212/212 fsync fd=1 ret=0").unwrap();
//! assert_eq!(event.pid, 212);
//! assert!(matches!(event.kind, EventKind::Fsync { fd: 1, ret: Ok(0) }));
//! assert_eq!(event.to_string(), "5.104012000 212/212 fsync fd=1 ret=0");
//! assert_eq!(event.human().to_string(), "212: fsync(1) -> 0");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod capture;
pub mod export;
pub mod report;
pub mod stream;
pub mod top;

pub use capture::control::{ControlError, ModuleParams, ProcInterface, Stats, WatchChange};
pub use capture::file::{CaptureReader, ReadError, Record, Snapshot, SnapshotSource};
pub use stream::errno::Errno;
pub use stream::escaped::EscapedStr;
pub use stream::event::{
    Access, Event, EventKind, FaultType, PythonEnd, PythonFrame, PythonStack, RssAt, Stack,
    StackEnd, SyscallResult, Timestamp, KIND_NAMES,
};
pub use stream::flags::{
    Advice, Mlock2Flags, MlockallFlags, MmapFlags, MremapFlags, MsyncFlags, OtherFlags, Prot,
    ShmatFlags,
};
pub use stream::human::{describe_wait_status, Human};
pub use stream::parse::{
    fault_frame, parse_line, parse_line_bytes, parse_python_frames, ParseError,
};
