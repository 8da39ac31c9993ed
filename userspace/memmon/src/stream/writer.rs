//! The one match over the event kinds: [`EventKind::write_with`] hands each kind's fields,
//! in the order they are written, to a [`KindWriter`], which the line form (`key=value`,
//! docs/events.md: [`crate::stream::line`]) and the human form
//! ([`crate::stream::human`]) implement.

use std::fmt;

use crate::stream::escaped::EscapedStr;
use crate::stream::event::{Access, EventKind, FaultType, RssAt, SyscallResult};

/// A system call's result as both forms write it: hex (address-returning calls) or
/// decimal on success, `-ENAME` on failure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ret {
    result: SyscallResult,
    hex: bool,
}

impl Ret {
    /// The result of an address-returning call (`0x7f5a2c1e4000`).
    pub(crate) fn hex(result: SyscallResult) -> Ret {
        Ret { result, hex: true }
    }

    /// The result of any other call (`0`).
    pub(crate) fn dec(result: SyscallResult) -> Ret {
        Ret { result, hex: false }
    }
}

impl fmt::Display for Ret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.result {
            Ok(value) if self.hex => write!(f, "{value:#x}"),
            Ok(value) => write!(f, "{value}"),
            Err(errno) => write!(f, "-{errno}"),
        }
    }
}

/// The value of a system call's argument.
#[derive(Clone, Copy)]
pub(crate) enum Value<'v> {
    /// An address (`0x7f5a2c1e4000`).
    Hex(u64),
    /// A length or a count.
    Unsigned(u64),
    /// A descriptor, an offset, a key or an id.
    Signed(i64),
    /// Flags, a protection or an advice, in their own text.
    Named(&'v dyn fmt::Display),
}

impl Value<'_> {
    /// Whether the value is the number 0.
    fn is_zero(&self) -> bool {
        matches!(self, Value::Hex(0) | Value::Unsigned(0) | Value::Signed(0))
    }
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Hex(value) => write!(f, "{value:#x}"),
            Value::Unsigned(value) => write!(f, "{value}"),
            Value::Signed(value) => write!(f, "{value}"),
            Value::Named(value) => write!(f, "{value}"),
        }
    }
}

/// How the human form shows an argument (the line form writes every one as `key=value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shown {
    /// The value alone.
    Bare,
    /// `key value` (`fd -1`).
    Labelled,
    /// `key value`, and nothing at all when the value is 0 (`off 4096`).
    LabelledUnlessZero,
}

/// One argument of a system call: its key in the line form, its value, how the human form
/// shows it.
#[derive(Clone, Copy)]
pub(crate) struct Arg<'v> {
    pub(crate) key: &'static str,
    pub(crate) value: Value<'v>,
    pub(crate) shown: Shown,
}

impl<'v> Arg<'v> {
    fn new(key: &'static str, value: Value<'v>) -> Arg<'v> {
        Arg {
            key,
            value,
            shown: Shown::Bare,
        }
    }

    fn hex(key: &'static str, value: u64) -> Arg<'v> {
        Arg::new(key, Value::Hex(value))
    }

    fn unsigned(key: &'static str, value: u64) -> Arg<'v> {
        Arg::new(key, Value::Unsigned(value))
    }

    fn signed(key: &'static str, value: i64) -> Arg<'v> {
        Arg::new(key, Value::Signed(value))
    }

    fn named(key: &'static str, value: &'v dyn fmt::Display) -> Arg<'v> {
        Arg::new(key, Value::Named(value))
    }

    fn shown(self, shown: Shown) -> Arg<'v> {
        Arg { shown, ..self }
    }

    /// Whether the human form leaves the argument out.
    pub(crate) fn is_hidden(&self) -> bool {
        self.shown == Shown::LabelledUnlessZero && self.value.is_zero()
    }
}

/// What a fault notes besides its type, access, address and instruction pointer, each only
/// when it is so.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FaultNote {
    /// The kernel faulted on the process's behalf (`user=0`).
    Kernel,
    /// A PMD-level fault (`huge=1`).
    Huge,
    /// The fault needed I/O (`major=1`).
    Major,
    /// A repeat after VM_FAULT_RETRY (`retry=1`).
    Retry,
    /// It mapped this many pages, not one (`pages=`).
    Pages(u64),
    /// The access-sampling generation of a `type=access` fault (`gen=`).
    Generation(u64),
}

/// A form of the events: what [`EventKind::write_with`] hands each kind's fields to.
pub(crate) trait KindWriter {
    /// A page fault; its notes follow, each with [`KindWriter::fault_note`].
    fn fault(&mut self, fault_type: FaultType, access: Access, addr: u64, ip: u64) -> fmt::Result;
    /// One note of the fault just written.
    fn fault_note(&mut self, note: FaultNote) -> fmt::Result;
    /// The system call `name` with its arguments, in order, and its result.
    fn call<'v>(
        &mut self,
        name: &str,
        args: impl IntoIterator<Item = Arg<'v>>,
        ret: Ret,
    ) -> fmt::Result;
    /// The file of the file mapping (`mmap`) just written.
    fn mapped_file(&mut self, file: &EscapedStr<'_>) -> fmt::Result;
    /// Memory counters in bytes (`anon`, `file`, ...) taken at `at`.
    fn rss(&mut self, at: RssAt, counters: &[(&str, u64)]) -> fmt::Result;
    /// A marker line.
    fn mark(&mut self, text: &EscapedStr<'_>) -> fmt::Result;
    /// An exec of `filename`, whose command name is `comm`.
    fn exec(&mut self, comm: &EscapedStr<'_>, filename: &EscapedStr<'_>) -> fmt::Result;
    /// A fork of `child`, watched too or not.
    fn fork(&mut self, child: u32, watched: bool) -> fmt::Result;
    /// The process's exit with a wait(2) status.
    fn exit(&mut self, code: i32) -> fmt::Result;
    /// Access-sampling generation `n`, with `armed` pages armed.
    fn generation(&mut self, n: u64, armed: u64) -> fmt::Result;
    /// The cgroup of id `id` at `path` the process is in.
    fn cgroup(&mut self, id: u64, path: &EscapedStr<'_>) -> fmt::Result;
    /// `count` events missed.
    fn lost(&mut self, count: u64) -> fmt::Result;
    /// `faults` faults of the process not recorded.
    fn dropped(&mut self, faults: u64) -> fmt::Result;
}

impl EventKind<'_> {
    /// Hands the kind's fields to `out`, in the order they are written.
    pub(crate) fn write_with(&self, out: &mut impl KindWriter) -> fmt::Result {
        match *self {
            EventKind::Fault {
                fault_type,
                access,
                addr,
                ip,
                user,
                huge,
                major,
                retry,
                pages,
                gen,
            } => {
                out.fault(fault_type, access, addr, ip)?;
                let notes = [
                    (!user).then_some(FaultNote::Kernel),
                    huge.then_some(FaultNote::Huge),
                    major.then_some(FaultNote::Major),
                    retry.then_some(FaultNote::Retry),
                    (pages != 1).then_some(FaultNote::Pages(pages)),
                    // Last, as the module writes it (before `stack=`).
                    gen.map(FaultNote::Generation),
                ];
                notes
                    .into_iter()
                    .flatten()
                    .try_for_each(|note| out.fault_note(note))
            }
            EventKind::Rss {
                anon,
                file,
                shmem,
                swap,
                peak,
                at,
            } => {
                let counters = [
                    ("anon", anon),
                    ("file", file),
                    ("shmem", shmem),
                    ("swap", swap),
                    ("peak", peak),
                ];
                out.rss(at, &counters)
            }
            EventKind::Mark { ref text } => out.mark(text),
            EventKind::Exec {
                ref comm,
                ref filename,
            } => out.exec(comm, filename),
            EventKind::Fork { child, watched } => out.fork(child, watched),
            EventKind::Exit { code } => out.exit(code),
            EventKind::Gen { n, armed } => out.generation(n, armed),
            EventKind::Cgroup { id, ref path } => out.cgroup(id, path),
            EventKind::Lost { count } => out.lost(count),
            EventKind::Dropped { faults } => out.dropped(faults),
            _ => self.write_address_call(out),
        }
    }
}

/// The system call kinds, in three groups, each handing the call's arguments, in order,
/// and its result to `out`; each passes the kinds it does not cover to the next.
impl EventKind<'_> {
    /// The calls that return an address.
    fn write_address_call(&self, out: &mut impl KindWriter) -> fmt::Result {
        match *self {
            EventKind::Mmap {
                addr,
                len,
                prot,
                flags,
                fd,
                off,
                ret,
                ref file,
            } => {
                let args = [
                    Arg::hex("addr", addr),
                    Arg::unsigned("len", len),
                    Arg::named("prot", &prot),
                    Arg::named("flags", &flags),
                    Arg::signed("fd", fd).shown(Shown::Labelled),
                    Arg::signed("off", off).shown(Shown::LabelledUnlessZero),
                ];
                out.call(self.name(), args, Ret::hex(ret))?;
                file.as_ref().map_or(Ok(()), |file| out.mapped_file(file))
            }
            EventKind::Mremap {
                old,
                old_len,
                new_len,
                flags,
                new,
                ret,
            } => {
                let args = [
                    Arg::hex("old", old),
                    Arg::unsigned("old_len", old_len),
                    Arg::unsigned("new_len", new_len),
                    Arg::named("flags", &flags),
                    Arg::hex("new", new),
                ];
                out.call(self.name(), args, Ret::hex(ret))
            }
            EventKind::Shmat {
                shmid,
                addr,
                flags,
                ret,
            } => {
                let args = [
                    Arg::signed("shmid", shmid),
                    Arg::hex("addr", addr),
                    Arg::named("flags", &flags),
                ];
                out.call(self.name(), args, Ret::hex(ret))
            }
            // brk never fails: it returns the resulting break.
            EventKind::Brk { req, ret } => {
                out.call(self.name(), [Arg::hex("req", req)], Ret::hex(Ok(ret)))
            }
            _ => self.write_range_call(out),
        }
    }

    /// The calls on the range `addr`, `len`, and what further arguments they take.
    fn write_range_call(&self, out: &mut impl KindWriter) -> fmt::Result {
        let (addr, len, more, ret) = match self {
            EventKind::Munmap { addr, len, ret }
            | EventKind::Mlock { addr, len, ret }
            | EventKind::Munlock { addr, len, ret } => (addr, len, [None, None], ret),
            EventKind::Mprotect {
                addr,
                len,
                prot,
                ret,
            } => (addr, len, [Some(Arg::named("prot", prot)), None], ret),
            EventKind::Madvise {
                addr,
                len,
                advice,
                ret,
            } => (addr, len, [Some(Arg::named("advice", advice)), None], ret),
            EventKind::Mlock2 {
                addr,
                len,
                flags,
                ret,
            } => (addr, len, [Some(Arg::named("flags", flags)), None], ret),
            EventKind::Msync {
                addr,
                len,
                flags,
                ret,
            } => (addr, len, [Some(Arg::named("flags", flags)), None], ret),
            EventKind::Mseal {
                addr,
                len,
                flags,
                ret,
            } => (addr, len, [Some(Arg::named("flags", flags)), None], ret),
            EventKind::PkeyMprotect {
                addr,
                len,
                prot,
                pkey,
                ret,
            } => {
                let more = [
                    Some(Arg::named("prot", prot)),
                    Some(Arg::signed("pkey", *pkey)),
                ];
                (addr, len, more, ret)
            }
            _ => return self.write_other_call(out),
        };
        let range = [Arg::hex("addr", *addr), Arg::unsigned("len", *len)];
        let args = range.into_iter().chain(more.into_iter().flatten());
        out.call(self.name(), args, Ret::dec(*ret))
    }

    /// The other calls; every kind that comes here is one of them.
    fn write_other_call(&self, out: &mut impl KindWriter) -> fmt::Result {
        match *self {
            EventKind::ProcessMadvise {
                pidfd,
                vec,
                vlen,
                advice,
                flags,
                ret,
            } => {
                let args = [
                    Arg::signed("pidfd", pidfd).shown(Shown::Labelled),
                    Arg::hex("vec", vec),
                    Arg::unsigned("vlen", vlen),
                    Arg::named("advice", &advice),
                    Arg::named("flags", &flags),
                ];
                out.call(self.name(), args, Ret::dec(ret))
            }
            EventKind::Mlockall { flags, ret } => {
                out.call(self.name(), [Arg::named("flags", &flags)], Ret::dec(ret))
            }
            EventKind::Munlockall { ret } => out.call(self.name(), [], Ret::dec(ret)),
            EventKind::Fsync { fd, ret } => {
                out.call(self.name(), [Arg::signed("fd", fd)], Ret::dec(ret))
            }
            EventKind::Shmdt { addr, ret } => {
                out.call(self.name(), [Arg::hex("addr", addr)], Ret::dec(ret))
            }
            // The kinds the three functions before write, all named: a new kind stops this
            // match compiling until one of the four writes it.
            EventKind::Fault { .. }
            | EventKind::Rss { .. }
            | EventKind::Mark { .. }
            | EventKind::Exec { .. }
            | EventKind::Fork { .. }
            | EventKind::Exit { .. }
            | EventKind::Gen { .. }
            | EventKind::Cgroup { .. }
            | EventKind::Lost { .. }
            | EventKind::Dropped { .. }
            | EventKind::Mmap { .. }
            | EventKind::Mremap { .. }
            | EventKind::Shmat { .. }
            | EventKind::Brk { .. }
            | EventKind::Munmap { .. }
            | EventKind::Mlock { .. }
            | EventKind::Munlock { .. }
            | EventKind::Mprotect { .. }
            | EventKind::Madvise { .. }
            | EventKind::Mlock2 { .. }
            | EventKind::Msync { .. }
            | EventKind::Mseal { .. }
            | EventKind::PkeyMprotect { .. } => {
                unreachable!("{} was written before", self.name())
            }
        }
    }
}
