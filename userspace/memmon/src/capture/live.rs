//! The live event stream: `/proc/memmon/events` polled and read in whole lines, and the
//! monotonic clock its time stamps are in. Shared by the CLI's live loops and the agent.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsFd;

use anyhow::{Context, Result};
use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::time::{clock_gettime, ClockId};

use crate::{ProcInterface, Timestamp};

/// CLOCK_MONOTONIC now, the clock of event timestamps.
pub fn monotonic_now() -> Timestamp {
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(now) => Timestamp {
            secs: u64::try_from(now.tv_sec()).unwrap_or(0),
            nanos: u32::try_from(now.tv_nsec()).unwrap_or(0),
        },
        // CLOCK_MONOTONIC always exists on Linux; fall back to the origin regardless.
        Err(_) => Timestamp::default(),
    }
}

/// `/proc/memmon/events` opened non-blocking, read in whole lines.
///
/// One reusable buffer: each read(2) appends to the incomplete line carried over from the
/// previous one, the complete lines are handed out as slices of it, and the incomplete
/// tail moves to the front. No allocation per line or per read.
pub struct LiveEvents {
    file: File,
    buffer: Vec<u8>,
    /// Bytes of an incomplete line at the front of `buffer`.
    carry: usize,
}

/// Bytes asked for per read(2): more than the module's buffers hold, so that one read
/// takes everything available.
const READ_BYTES: usize = 1 << 20;

impl LiveEvents {
    /// Opens the stream (the read position starts at the oldest buffered event).
    pub fn open(proc: &ProcInterface) -> Result<LiveEvents> {
        let file = proc.open_events_with_flags(OFlag::O_NONBLOCK.bits())?;
        Ok(LiveEvents::new(file))
    }

    /// Reads `file` (the stream, or a file standing in for it) in whole lines.
    pub fn new(file: File) -> LiveEvents {
        LiveEvents {
            file,
            buffer: vec![0; READ_BYTES],
            carry: 0,
        }
    }

    /// Waits up to `timeout_ms` for events and calls `each` with every complete line read
    /// (without newline; empty lines are skipped, bytes that are not UTF-8 are replaced).
    /// Returns early, possibly with no lines, when a signal arrives.
    pub fn poll_lines(
        &mut self,
        timeout_ms: u16,
        mut each: impl FnMut(&str) -> Result<()>,
    ) -> Result<()> {
        let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(timeout_ms)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => return Ok(()),
            Ok(_) => {}
            Err(error) => return Err(error).context("cannot poll the event stream"),
        }
        loop {
            if self.carry == self.buffer.len() {
                // One line longer than the buffer: make room for the rest of it.
                self.buffer.resize(self.buffer.len() * 2, 0);
            }
            let space = self.buffer.len() - self.carry;
            match self.file.read(&mut self.buffer[self.carry..]) {
                Ok(0) => {
                    // The module's stream never ends; a plain file standing in for it
                    // (tests) does, and always polls readable: wait instead of spinning.
                    std::thread::sleep(std::time::Duration::from_millis(timeout_ms.into()));
                    break;
                }
                Ok(count) => {
                    self.take_lines(self.carry + count, &mut each)?;
                    if count < space {
                        break;
                    }
                }
                Err(error)
                    if error.kind() == io::ErrorKind::WouldBlock
                        || error.kind() == io::ErrorKind::Interrupted =>
                {
                    break
                }
                Err(error) => return Err(error).context("cannot read the event stream"),
            }
        }
        Ok(())
    }

    /// Hands out the complete lines of `buffer[..end]` and keeps the incomplete tail.
    fn take_lines(&mut self, end: usize, each: &mut impl FnMut(&str) -> Result<()>) -> Result<()> {
        let filled = &self.buffer[..end];
        let complete = match filled[self.carry..].iter().rposition(|&byte| byte == b'\n') {
            Some(last_newline) => self.carry + last_newline + 1,
            None => {
                self.carry = end;
                return Ok(());
            }
        };
        match std::str::from_utf8(&filled[..complete]) {
            // The module writes ASCII: one check for all the lines, and a fast search for
            // the newlines.
            Ok(text) => {
                for line in text.split('\n').filter(|line| !line.is_empty()) {
                    each(line)?;
                }
            }
            Err(_) => {
                for line in filled[..complete].split(|&byte| byte == b'\n') {
                    if !line.is_empty() {
                        each(&String::from_utf8_lossy(line))?;
                    }
                }
            }
        }
        self.buffer.copy_within(complete..end, 0);
        self.carry = end - complete;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines cut by the buffer's end are carried over; one longer than the buffer grows it.
    #[test]
    fn lines_are_whole_across_reads() {
        let path = std::env::temp_dir().join(format!("memmon-live-{}", std::process::id()));
        let long = "x".repeat(100);
        let text = format!("a\n\nbc\ndef\n{long}\nghij\n\u{e9}\nk\npartial");
        std::fs::write(&path, text.as_bytes()).unwrap();
        let mut events = LiveEvents::new(File::open(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
        events.buffer = vec![0; 4];
        let mut lines = Vec::new();
        events
            .poll_lines(1, |line| {
                lines.push(line.to_owned());
                Ok(())
            })
            .unwrap();
        assert_eq!(
            lines,
            ["a", "bc", "def", long.as_str(), "ghij", "\u{e9}", "k"]
        );
        assert_eq!(&events.buffer[..events.carry], b"partial");
    }
}
