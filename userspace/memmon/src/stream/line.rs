//! The line form of an event (`Display` on [`Event`]): docs/events.md's
//! `<time> <pid>/<tid> <kind> key=value ...`, as the module writes it.

use std::fmt;

use crate::stream::escaped::EscapedStr;
use crate::stream::event::{Access, Event, FaultType, RssAt, StackEnd};
use crate::stream::writer::{Arg, FaultNote, KindWriter, Ret};

impl fmt::Display for Event<'_> {
    /// Writes the event in the exact line format of docs/events.md, without the newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}/{} {}",
            self.time,
            self.pid,
            self.tid,
            self.kind.name()
        )?;
        self.kind.write_with(&mut LineForm(f))?;
        if let Some(dur) = self.dur {
            write!(f, " dur={dur}")?;
        }
        if let Some(stack) = &self.stack {
            // A stack shed whole has no `stack=`, only its end.
            if !stack.0.is_empty() || stack.1 != StackEnd::Shed {
                write!(f, " stack={stack}")?;
            }
            if stack.1 != StackEnd::Complete {
                write!(f, " stack_end={}", stack.1.name())?;
            }
        }
        Ok(())
    }
}

/// Writes a kind's fields as `key=value` pairs, each with a leading space.
struct LineForm<'f, 'g>(&'f mut fmt::Formatter<'g>);

impl KindWriter for LineForm<'_, '_> {
    fn fault(&mut self, fault_type: FaultType, access: Access, addr: u64, ip: u64) -> fmt::Result {
        write!(
            self.0,
            " type={} access={} addr={addr:#x} ip={ip:#x}",
            fault_type.as_str(),
            access.as_str()
        )
    }

    fn fault_note(&mut self, note: FaultNote) -> fmt::Result {
        match note {
            FaultNote::Kernel => self.0.write_str(" user=0"),
            FaultNote::Huge => self.0.write_str(" huge=1"),
            FaultNote::Major => self.0.write_str(" major=1"),
            FaultNote::Retry => self.0.write_str(" retry=1"),
            FaultNote::Pages(pages) => write!(self.0, " pages={pages}"),
            FaultNote::Generation(gen) => write!(self.0, " gen={gen}"),
        }
    }

    fn call<'v>(
        &mut self,
        _name: &str,
        args: impl IntoIterator<Item = Arg<'v>>,
        ret: Ret,
    ) -> fmt::Result {
        for arg in args {
            write!(self.0, " {}={}", arg.key, arg.value)?;
        }
        write!(self.0, " ret={ret}")
    }

    fn mapped_file(&mut self, file: &EscapedStr<'_>) -> fmt::Result {
        write!(self.0, " file={file}")
    }

    fn rss(&mut self, at: RssAt, counters: &[(&str, u64)]) -> fmt::Result {
        for (key, bytes) in counters {
            write!(self.0, " {key}={bytes}")?;
        }
        write!(self.0, " at={}", at.as_str())
    }

    fn mark(&mut self, text: &EscapedStr<'_>) -> fmt::Result {
        write!(self.0, " text={text}")
    }

    fn exec(&mut self, comm: &EscapedStr<'_>, filename: &EscapedStr<'_>) -> fmt::Result {
        write!(self.0, " comm={comm} filename={filename}")
    }

    fn fork(&mut self, child: u32, watched: bool) -> fmt::Result {
        write!(self.0, " child={child} watched={}", u8::from(watched))
    }

    fn exit(&mut self, code: i32) -> fmt::Result {
        write!(self.0, " code={code}")
    }

    fn generation(&mut self, n: u64, armed: u64) -> fmt::Result {
        write!(self.0, " n={n} armed={armed}")
    }

    fn cgroup(&mut self, id: u64, path: &EscapedStr<'_>) -> fmt::Result {
        write!(self.0, " id={id} path={path}")
    }

    fn lost(&mut self, count: u64) -> fmt::Result {
        write!(self.0, " count={count}")
    }

    fn dropped(&mut self, faults: u64) -> fmt::Result {
        write!(self.0, " faults={faults}")
    }
}
