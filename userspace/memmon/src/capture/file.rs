//! Reading event streams and capture files; writing capture-file headers and snapshots.
//!
//! # Capture file format (version 1)
//!
//! A capture is the raw event lines of docs/events.md, interleaved with lines that start
//! with `#`, which the event format never does. So `/proc/memmon/events` output itself is
//! a valid capture (one without headers), and `grep -v '^#'` of a capture is a valid
//! event stream.
//!
//! ```text
//! # memmon-capture 1
//! # kernel 6.8.0-45-generic
//! # page-size 4096
//! # module-version unknown
//! # buflen 4096
//! # start 5.100000000
//! # command /bin/true
//! # snapshot maps 212 5.100020000 start
//! #| 00400000-00401000 r-xp 00000000 08:01 1234 /bin/true
//! # snapshot pages 212 5.100020000 start
//! #| 400000-401000 file
//! # snapshot status 212 5.100020000 start
//! #| VmRSS:  1200 kB
//! 5.103884211 212/212 mmap addr=0x0 len=139264 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f5a2c1e4000
//! 5.104100000 212/212 exit code=0
//! # snapshot maps 212 5.104200000 end unavailable: process has exited
//! # end 5.104300000
//! ```
//!
//! - `# KEY VALUE`: a header (key without spaces, value = rest of the line). Known keys:
//!   `memmon-capture` (format version), `kernel` (uname release), `kernel-build` (uname
//!   version: the build, on Debian with the package version), `page-size` (the kernel's
//!   page size in bytes, which the events' page counts are in; 4096 when absent),
//!   `fault-source` (the
//!   module's, as `/proc/memmon/stats` names it), `module-version`
//!   (`/sys/module/memmon/version` or `unknown`), `buflen`
//!   (the `buflen` line of `/proc/memmon/stats`, else
//!   `/sys/module/memmon/parameters/buflen`; absent when unknown), `start` and `end`
//!   (CLOCK_MONOTONIC, the events' clock), `start-unix` (wall clock), `command`, `pids`,
//!   `process-start PID NS` (when a process memmon began to watch while it ran started,
//!   nanoseconds since the epoch: `record -p`, a member of a watched cgroup).
//!   Readers ignore keys they do not know.
//! - `# snapshot SOURCE PID TIME REASON [NOTE...]` followed by zero or more `#| LINE`
//!   lines: a copy of `/proc/PID/maps` (SOURCE `maps`) or of the `Vm*`/`Rss*` lines of
//!   `/proc/PID/status` (SOURCE `status`) taken by the recorder at TIME (CLOCK_MONOTONIC).
//!   REASON is `start`, `exec`, `mark` or `end`; NOTE says why a snapshot is empty.
//!   SOURCE `perf-map` is a copy of the process's `/tmp/perf-PID.map` (the perf map of
//!   JIT-generated code: `START SIZE NAME`, hex), taken when the recording ends.
//!   SOURCE `pages` (REASON `start`, of a process that was running when memmon began to
//!   watch it: `record -p`, a process `record --cgroup` finds; not the command memmon
//!   starts) is what each mapping held then, in runs `START-END KIND` (hex addresses, END
//!   exclusive, page-aligned) of resident pages (KIND `anon`, `file`, `shmem`), the shared
//!   zero page (`zero`, not counted in RSS) and swapped pages (`swap`); pages of none of
//!   these are not listed. It is read with the `maps` snapshot before it, whose lines are
//!   then `/proc/PID/smaps`' mappings of the same read ([`crate::capture::resident`] says
//!   how each page's kind is known and what is approximated without root; its NOTE says
//!   so when something was).
//! - Any other line starting with `#`, and empty lines, are ignored.
//! - Every other line is an event line.

use std::io::{self, BufRead, Write};

use thiserror::Error;

use crate::stream::event::{Event, Timestamp};
use crate::stream::parse::{parse_line, ParseError};

/// Version written in the `# memmon-capture` header.
pub const CAPTURE_VERSION: u32 = 1;

/// An error while reading a stream or capture, with the 1-based line number.
#[derive(Debug, Error)]
pub enum ReadError {
    /// Reading the input failed.
    #[error("read error after line {line}: {source}")]
    Io {
        /// The last line read successfully.
        line: u64,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// An event line did not parse.
    #[error("line {line}: {source}")]
    Parse {
        /// The line.
        line: u64,
        /// What was wrong.
        #[source]
        source: ParseError,
    },
    /// A `# snapshot` line without the required fields.
    #[error(
        "line {line}: bad snapshot header {text:?}: expected `# snapshot SOURCE PID TIME REASON`"
    )]
    BadSnapshotHeader {
        /// The line.
        line: u64,
        /// The line's text.
        text: String,
    },
}

/// Which /proc file a snapshot copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SnapshotSource {
    /// `/proc/PID/maps`.
    Maps,
    /// The `Vm*`/`Rss*` lines of `/proc/PID/status`.
    Status,
    /// The process's perf map, `/tmp/perf-PID.map` (`START SIZE NAME` lines, hex, of
    /// code a JIT or interpreter generated), copied at the end of the recording.
    PerfMap,
    /// The pages resident or swapped when memmon started watching a running process, as
    /// runs `START-END KIND` ([`crate::capture::resident`]).
    Pages,
}

impl SnapshotSource {
    /// The name used in capture files (`maps`, `status`, `perf-map`, `pages`).
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotSource::Maps => "maps",
            SnapshotSource::Status => "status",
            SnapshotSource::PerfMap => "perf-map",
            SnapshotSource::Pages => "pages",
        }
    }
}

/// A snapshot block of a capture file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// What was copied.
    pub source: SnapshotSource,
    /// Of which process.
    pub pid: u32,
    /// When (CLOCK_MONOTONIC).
    pub time: Timestamp,
    /// Why: `start`, `exec`, `mark`, `end`.
    pub reason: String,
    /// Why the snapshot is empty or partial, if it is.
    pub note: Option<String>,
    /// The copied lines, without newlines.
    pub lines: Vec<String>,
}

/// One item of a capture file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// An event line.
    Event(Event<'a>),
    /// A `# KEY VALUE` header.
    Header {
        /// The key.
        key: String,
        /// The value (rest of the line).
        value: String,
    },
    /// A snapshot block.
    Snapshot(Snapshot),
}

/// What [`CaptureReader::advance`] found.
enum Advanced {
    /// An event line, left in the reader's buffer.
    EventLine,
    /// A header or snapshot.
    Other(u64, Record<'static>),
}

/// Reads events (and capture-file headers and snapshots) from any `BufRead`:
/// `/proc/memmon/events`, a capture file, stdin.
///
/// This is a lending reader: each event borrows the reader's line buffer until the next
/// call. Use [`CaptureReader::into_events`] for an `Iterator` of owned events.
#[derive(Debug)]
pub struct CaptureReader<R> {
    input: R,
    buffer: Vec<u8>,
    line_number: u64,
    /// The buffer holds a line read ahead (the one after a snapshot block).
    pending: bool,
}

impl<R: BufRead> CaptureReader<R> {
    /// A reader over `input`.
    pub fn new(input: R) -> CaptureReader<R> {
        CaptureReader {
            input,
            buffer: Vec::with_capacity(256),
            line_number: 0,
            pending: false,
        }
    }

    /// The number of the last line read (1-based).
    pub fn line_number(&self) -> u64 {
        self.line_number
    }

    /// Reads the next line into the buffer; false at end of input.
    fn fill(&mut self) -> Result<bool, ReadError> {
        if self.pending {
            self.pending = false;
            return Ok(true);
        }
        self.buffer.clear();
        let read = self
            .input
            .read_until(b'\n', &mut self.buffer)
            .map_err(|source| ReadError::Io {
                line: self.line_number,
                source,
            })?;
        if read == 0 {
            return Ok(false);
        }
        self.line_number += 1;
        if self.buffer.last() == Some(&b'\n') {
            self.buffer.pop();
        }
        Ok(true)
    }

    /// Reads up to the next record; for an event the line stays in the buffer.
    fn advance(&mut self) -> Option<Result<Advanced, ReadError>> {
        loop {
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => return Some(Err(error)),
            }
            let line = self.line_number;
            if self.buffer.is_empty() {
                continue;
            }
            if self.buffer[0] != b'#' {
                return Some(Ok(Advanced::EventLine));
            }
            let text = String::from_utf8_lossy(&self.buffer).into_owned();
            let Some(header) = text.strip_prefix("# ") else {
                continue;
            };
            if let Some(spec) = header.strip_prefix("snapshot ") {
                return Some(
                    self.read_snapshot(line, spec)
                        .map(|(line, record)| Advanced::Other(line, record)),
                );
            }
            let (key, value) = header.split_once(' ').unwrap_or((header, ""));
            return Some(Ok(Advanced::Other(
                line,
                Record::Header {
                    key: key.to_owned(),
                    value: value.to_owned(),
                },
            )));
        }
    }

    /// Parses the event line held in the buffer.
    fn parse_buffer(&self) -> Result<(u64, Event<'_>), ReadError> {
        let line = self.line_number;
        std::str::from_utf8(&self.buffer)
            .map_err(|_| ParseError::NotText)
            .and_then(parse_line)
            .map(|event| (line, event))
            .map_err(|source| ReadError::Parse { line, source })
    }

    /// The next record with its line number, or `None` at end of input.
    pub fn next_record(&mut self) -> Option<Result<(u64, Record<'_>), ReadError>> {
        match self.advance()? {
            Ok(Advanced::EventLine) => Some(
                self.parse_buffer()
                    .map(|(line, event)| (line, Record::Event(event))),
            ),
            Ok(Advanced::Other(line, record)) => Some(Ok((line, record))),
            Err(error) => Some(Err(error)),
        }
    }

    fn read_snapshot(
        &mut self,
        line: u64,
        spec: &str,
    ) -> Result<(u64, Record<'static>), ReadError> {
        let bad = || ReadError::BadSnapshotHeader {
            line,
            text: format!("# snapshot {spec}"),
        };
        let mut parts = spec.splitn(5, ' ');
        let source = match parts.next() {
            Some("maps") => SnapshotSource::Maps,
            Some("status") => SnapshotSource::Status,
            Some("perf-map") => SnapshotSource::PerfMap,
            Some("pages") => SnapshotSource::Pages,
            _ => return Err(bad()),
        };
        let pid = parts
            .next()
            .and_then(|pid| pid.parse().ok())
            .ok_or_else(bad)?;
        let time = parts.next().and_then(Timestamp::parse).ok_or_else(bad)?;
        let reason = parts
            .next()
            .filter(|r| !r.is_empty())
            .ok_or_else(bad)?
            .to_owned();
        let note = parts.next().map(str::to_owned);
        let mut lines = Vec::new();
        while self.fill()? {
            if let Some(content) = self.buffer.strip_prefix(b"#| ") {
                lines.push(String::from_utf8_lossy(content).into_owned());
            } else if self.buffer == b"#|" {
                lines.push(String::new());
            } else {
                self.pending = true;
                break;
            }
        }
        Ok((
            line,
            Record::Snapshot(Snapshot {
                source,
                pid,
                time,
                reason,
                note,
                lines,
            }),
        ))
    }

    /// The next event with its line number, skipping headers and snapshots.
    pub fn next_event(&mut self) -> Option<Result<(u64, Event<'_>), ReadError>> {
        loop {
            match self.advance()? {
                Ok(Advanced::EventLine) => return Some(self.parse_buffer()),
                Ok(Advanced::Other(..)) => continue,
                Err(error) => return Some(Err(error)),
            }
        }
    }

    /// An iterator of owned events (headers and snapshots skipped).
    pub fn into_events(self) -> OwnedEvents<R> {
        OwnedEvents { reader: self }
    }
}

/// Iterator of owned events with line numbers; see [`CaptureReader::into_events`].
#[derive(Debug)]
pub struct OwnedEvents<R> {
    reader: CaptureReader<R>,
}

impl<R: BufRead> Iterator for OwnedEvents<R> {
    type Item = Result<(u64, Event<'static>), ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.reader
            .next_event()
            .map(|result| result.map(|(line, event)| (line, event.into_owned())))
    }
}

/// Writes a `# KEY VALUE` header line. Newlines in `value` are replaced by spaces.
pub fn write_header(out: &mut impl Write, key: &str, value: &str) -> io::Result<()> {
    writeln!(out, "# {key} {}", value.replace('\n', " "))
}

/// Writes a snapshot block: the `# snapshot` line, then each line prefixed with `#| `.
pub fn write_snapshot<'l>(
    out: &mut impl Write,
    source: SnapshotSource,
    pid: u32,
    time: Timestamp,
    reason: &str,
    note: Option<&str>,
    lines: impl IntoIterator<Item = &'l str>,
) -> io::Result<()> {
    write!(out, "# snapshot {} {pid} {time} {reason}", source.as_str())?;
    if let Some(note) = note {
        write!(out, " {}", note.replace('\n', " "))?;
    }
    writeln!(out)?;
    for line in lines {
        writeln!(out, "#| {line}")?;
    }
    Ok(())
}

/// Whether the `/proc/PID/maps` text of a process that has just exec'd shows its new image
/// not mapped yet: it has mappings, and none of them is of a file (only `[stack]`,
/// `[vsyscall]`, `[vdso]`, `[vvar]` or anonymous memory), as between the kernel's
/// `begin_new_exec` and the ELF loader's mapping of the program (`VmSize: 132 kB`). A
/// snapshot of that moment names none of the program's code: the recorder takes it again
/// at the process's next event. Empty text (no address space: the process exited) is not
/// such a state: nothing will come later.
pub fn exec_image_missing(maps: &str) -> bool {
    let mut any = false;
    for line in maps.lines() {
        if line.trim().is_empty() {
            continue;
        }
        any = true;
        // The pathname is the sixth field; a file's starts with '/'.
        if line
            .split_whitespace()
            .nth(5)
            .is_some_and(|path| path.starts_with('/'))
        {
            return false;
        }
    }
    any
}

#[cfg(test)]
mod exec_image_tests {
    use super::exec_image_missing;

    #[test]
    fn image_not_mapped_yet() {
        // Between begin_new_exec and the loader: the new stack and the vsyscall page.
        let early = "7ffc1a2b3000-7ffc1a2d4000 rw-p 00000000 00:00 0                          [stack]\n\
                     ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
        assert!(exec_image_missing(early));
        let with_vdso = format!(
            "{early}7ffc1a3f0000-7ffc1a3f2000 r-xp 00000000 00:00 0 [vdso]\n\
             7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n"
        );
        assert!(exec_image_missing(&with_vdso));
        // Mapped: the program (and ld.so).
        let mapped = format!(
            "55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234                       /usr/bin/true\n{early}"
        );
        assert!(!exec_image_missing(&mapped));
        // A path with spaces is still a file.
        assert!(!exec_image_missing(
            "00400000-00401000 r-xp 00000000 08:01 5 /opt/my app/bin\n"
        ));
        // No address space (exited): not worth a retry.
        assert!(!exec_image_missing(""));
    }
}
