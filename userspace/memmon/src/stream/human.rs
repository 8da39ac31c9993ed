//! A human-readable rendering in the style of the original memmon log.
//!
//! ```text
//! 29305: anon page @0x804a004 (W)
//! 29305: mmap(0x0, 139264, rw-, PRIVATE|ANONYMOUS, fd -1) -> 0x7f5a2c1e4000
//! 29305: munmap(0x7f5a2c1e4000, 139264) -> 0
//! 29305: fsync(1) -> 0
//! 29305: anon page @0x7f3c1a000000 (W) python 0x7f3c1a2b4c30+18 < 0x7f3c1a2b5e10+42*
//! ```
//!
//! An event with Python frames (`pystack=`) ends with them, innermost first, `<` between a
//! frame and its caller, `*` after the outermost frame of one run of the eval loop, and why
//! they end early when they do (`(python frames end: no_thread)`).

use std::fmt;

use crate::stream::escaped::EscapedStr;
use crate::stream::event::{Access, Event, EventKind, FaultType, PythonEnd, PythonStack, RssAt};
use crate::stream::writer::{Arg, FaultNote, KindWriter, Ret, Shown};

/// Wraps an event so that `Display` gives the human-readable form (no newline).
#[derive(Debug, Clone, Copy)]
pub struct Human<'e, 'a> {
    event: &'e Event<'a>,
    with_time: bool,
}

impl<'a> Event<'a> {
    /// The human-readable form: `PID: what happened` (`PID/TID:` for a non-main thread).
    pub fn human(&self) -> Human<'_, 'a> {
        Human {
            event: self,
            with_time: false,
        }
    }

    /// The human-readable form prefixed with the timestamp.
    pub fn human_with_time(&self) -> Human<'_, 'a> {
        Human {
            event: self,
            with_time: true,
        }
    }
}

/// Describes a wait(2) status: `exited 3`, `killed by SIGKILL`, ...
pub fn describe_wait_status(code: i32) -> String {
    let signal = code & 0x7f;
    if signal == 0 {
        format!("exited {}", (code >> 8) & 0xff)
    } else if signal == 0x7f {
        format!("stopped (status {code:#x})")
    } else {
        let core = if code & 0x80 != 0 {
            " (core dumped)"
        } else {
            ""
        };
        format!("killed by signal {signal}{core}")
    }
}

impl fmt::Display for Human<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let event = self.event;
        if self.with_time {
            write!(f, "{} ", event.time)?;
        }
        if let EventKind::Lost { .. } = event.kind {
            // No process's: no pid, no duration.
            return event.kind.write_with(&mut HumanForm(f));
        }
        if event.pid == event.tid {
            write!(f, "{}: ", event.pid)?;
        } else {
            write!(f, "{}/{}: ", event.pid, event.tid)?;
        }
        event.kind.write_with(&mut HumanForm(f))?;
        if let Some(dur) = event.dur {
            write!(f, " in {dur} ns")?;
        }
        if let Some(python) = &event.python {
            write_python(f, python)?;
        }
        Ok(())
    }
}

/// ` python CODE+OFFSET < CODE+OFFSET* ...`, innermost first, then why the frames end when
/// they end early.
fn write_python(f: &mut fmt::Formatter<'_>, python: &PythonStack) -> fmt::Result {
    let PythonStack(frames, end) = python;
    if !frames.is_empty() {
        f.write_str(" python")?;
        for (index, frame) in frames.iter().enumerate() {
            let separator = if index > 0 { " <" } else { "" };
            let star = if frame.entry { "*" } else { "" };
            write!(f, "{separator} {:#x}+{}{star}", frame.code, frame.offset)?;
        }
    }
    if *end != PythonEnd::Complete {
        write!(f, " (python frames end: {})", end.name())?;
    }
    Ok(())
}

/// Writes what happened (the part after `PID: `).
struct HumanForm<'f, 'g>(&'f mut fmt::Formatter<'g>);

impl KindWriter for HumanForm<'_, '_> {
    fn fault(&mut self, fault_type: FaultType, access: Access, addr: u64, _ip: u64) -> fmt::Result {
        write!(
            self.0,
            "{} page @{addr:#x} ({})",
            fault_type.as_str(),
            access.as_str()
        )
    }

    fn fault_note(&mut self, note: FaultNote) -> fmt::Result {
        match note {
            FaultNote::Kernel => self.0.write_str(" [kernel]"),
            FaultNote::Huge => self.0.write_str(" [huge]"),
            FaultNote::Major => self.0.write_str(" [major]"),
            FaultNote::Retry => self.0.write_str(" [retry]"),
            FaultNote::Pages(pages) => write!(self.0, " [{pages} pages]"),
            FaultNote::Generation(gen) => write!(self.0, " [generation {gen}]"),
        }
    }

    fn call<'v>(
        &mut self,
        name: &str,
        args: impl IntoIterator<Item = Arg<'v>>,
        ret: Ret,
    ) -> fmt::Result {
        write!(self.0, "{name}(")?;
        let shown = args.into_iter().filter(|arg| !arg.is_hidden());
        for (index, arg) in shown.enumerate() {
            if index > 0 {
                self.0.write_str(", ")?;
            }
            match arg.shown {
                Shown::Bare => write!(self.0, "{}", arg.value)?,
                Shown::Labelled | Shown::LabelledUnlessZero => {
                    write!(self.0, "{} {}", arg.key, arg.value)?
                }
            }
        }
        write!(self.0, ") -> {ret}")
    }

    fn mapped_file(&mut self, file: &EscapedStr<'_>) -> fmt::Result {
        write!(self.0, " {}", file.to_string_lossy())
    }

    fn rss(&mut self, at: RssAt, counters: &[(&str, u64)]) -> fmt::Result {
        write!(self.0, "rss at {}:", at.as_str())?;
        for (index, (key, bytes)) in counters.iter().enumerate() {
            let separator = if index > 0 { "," } else { "" };
            write!(self.0, "{separator} {key} {bytes}")?;
        }
        Ok(())
    }

    fn mark(&mut self, text: &EscapedStr<'_>) -> fmt::Result {
        write!(self.0, "mark {:?}", text.to_string_lossy())
    }

    fn exec(&mut self, comm: &EscapedStr<'_>, filename: &EscapedStr<'_>) -> fmt::Result {
        write!(
            self.0,
            "exec {} ({})",
            filename.to_string_lossy(),
            comm.to_string_lossy()
        )
    }

    fn fork(&mut self, child: u32, watched: bool) -> fmt::Result {
        let note = if watched { " (watched)" } else { "" };
        write!(self.0, "fork -> {child}{note}")
    }

    fn exit(&mut self, code: i32) -> fmt::Result {
        write!(self.0, "exit: {}", describe_wait_status(code))
    }

    fn generation(&mut self, n: u64, armed: u64) -> fmt::Result {
        write!(
            self.0,
            "generation {n}: {armed} pages armed for access sampling"
        )
    }

    fn cgroup(&mut self, id: u64, path: &EscapedStr<'_>) -> fmt::Result {
        write!(self.0, "in cgroup {} (id {id})", path.to_string_lossy())
    }

    fn lost(&mut self, count: u64) -> fmt::Result {
        write!(
            self.0,
            "*** {count} events lost (overwritten before they were read) ***"
        )
    }

    fn dropped(&mut self, faults: u64) -> fmt::Result {
        write!(
            self.0,
            "*** {faults} faults not recorded (the ring was nearly full) ***"
        )
    }
}
