//! Printing events (human, JSON, raw) and filtering them.

use std::io::{self, Write};

use anyhow::{Context, Result};
use memmon::{Event, EventKind};

/// How events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The original memmon's log style, optionally with timestamps.
    Human {
        /// Prefix each line with the timestamp.
        time: bool,
    },
    /// One JSON object per line.
    Json,
    /// The event line exactly as the module wrote it (canonical form).
    Raw,
}

/// Writes events to an output in one format.
pub struct Printer {
    out: Box<dyn Write>,
    format: Format,
}

impl Printer {
    /// A printer writing `format` to `out`.
    pub fn new(out: Box<dyn Write>, format: Format) -> Printer {
        Printer { out, format }
    }

    /// Writes one event. Returns `Ok(false)` when the reader went away (broken pipe).
    pub fn print(&mut self, event: &Event) -> Result<bool> {
        let result = match self.format {
            Format::Human { time: false } => writeln!(self.out, "{}", event.human()),
            Format::Human { time: true } => writeln!(self.out, "{}", event.human_with_time()),
            Format::Raw => writeln!(self.out, "{event}"),
            Format::Json => serde_json::to_writer(&mut self.out, event)
                .map_err(io::Error::from)
                .and_then(|()| self.out.write_all(b"\n")),
        };
        ignore_broken_pipe(result)
    }

    /// Flushes buffered output. Returns `Ok(false)` on a broken pipe.
    pub fn flush(&mut self) -> Result<bool> {
        ignore_broken_pipe(self.out.flush())
    }
}

/// Turns a broken pipe (`memmon tail | head`) into `Ok(false)`, other errors into errors.
pub fn ignore_broken_pipe(result: io::Result<()>) -> Result<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(error) => Err(error).context("cannot write output"),
    }
}

/// Which events `tail` shows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pids: Vec<u32>,
    kinds: Vec<String>,
}

impl Filter {
    /// Shows events of `pids` (all when empty) and `kinds` (all when empty).
    pub fn new(pids: Vec<u32>, kinds: Vec<String>) -> Filter {
        Filter { pids, kinds }
    }

    /// Whether to show `event`. `lost` events are always shown.
    pub fn accepts(&self, event: &Event) -> bool {
        if matches!(event.kind, EventKind::Lost { .. }) {
            return true;
        }
        (self.pids.is_empty() || self.pids.contains(&event.pid))
            && (self.kinds.is_empty() || self.kinds.iter().any(|kind| kind == event.kind.name()))
    }
}
