//! The live event stream: polling /proc/memmon/events, SIGINT/SIGTERM, the monotonic clock.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};
use memmon::{ProcInterface, Timestamp};
use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::time::{clock_gettime, ClockId};

/// Number of SIGINT/SIGTERM received.
static INTERRUPTS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_interrupt(_signal: nix::libc::c_int) {
    // Only an atomic add: async-signal-safe.
    INTERRUPTS.fetch_add(1, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag instead of killing memmon, without SA_RESTART so
/// that a blocked poll returns at once. Exec resets the handler in children.
pub fn catch_interrupts() -> Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(on_interrupt),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only updates an atomic, which is async-signal-safe.
        unsafe { sigaction(signal, &action) }
            .with_context(|| format!("cannot install a {signal} handler"))?;
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    interrupt_count() > 0
}

/// How many times SIGINT or SIGTERM arrived.
pub fn interrupt_count() -> usize {
    INTERRUPTS.load(Ordering::SeqCst)
}

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
pub struct LiveEvents {
    file: File,
    pending: Vec<u8>,
    chunk: Vec<u8>,
}

/// Bytes asked for per read(2).
const CHUNK: usize = 64 * 1024;

impl LiveEvents {
    /// Opens the stream (the read position starts at the oldest buffered event).
    pub fn open(proc: &ProcInterface) -> Result<LiveEvents> {
        let file = proc.open_events_with_flags(OFlag::O_NONBLOCK.bits())?;
        Ok(LiveEvents {
            file,
            pending: Vec::new(),
            chunk: vec![0; CHUNK],
        })
    }

    /// Waits up to `timeout_ms` for events and returns the complete lines read (without
    /// newline). Returns early, possibly with no lines, when a signal arrives.
    pub fn poll_lines(&mut self, timeout_ms: u16) -> Result<Vec<String>> {
        let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(timeout_ms)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => return Ok(Vec::new()),
            Ok(_) => {}
            Err(error) => return Err(error).context("cannot poll the event stream"),
        }
        loop {
            match self.file.read(&mut self.chunk) {
                Ok(0) => {
                    // The module's stream never ends; a plain file standing in for it
                    // (tests) does, and always polls readable: wait instead of spinning.
                    std::thread::sleep(std::time::Duration::from_millis(timeout_ms.into()));
                    break;
                }
                Ok(count) => {
                    self.pending.extend_from_slice(&self.chunk[..count]);
                    if count < self.chunk.len() {
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
        let complete = match self.pending.iter().rposition(|&byte| byte == b'\n') {
            Some(last_newline) => last_newline + 1,
            None => return Ok(Vec::new()),
        };
        let lines = self.pending[..complete]
            .split(|&byte| byte == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| String::from_utf8_lossy(line).into_owned())
            .collect();
        self.pending.drain(..complete);
        Ok(lines)
    }
}
