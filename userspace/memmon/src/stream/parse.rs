//! Parsing one event line into an [`Event`].

use thiserror::Error;

use crate::stream::errno::Errno;
use crate::stream::escaped::EscapedStr;
use crate::stream::event::{
    Access, Event, EventKind, FaultType, PythonEnd, PythonFrame, PythonStack, RssAt, Stack,
    StackEnd, SyscallResult, Timestamp,
};
use crate::stream::flags::{
    Advice, Mlock2Flags, MlockallFlags, MmapFlags, MremapFlags, MsyncFlags, OtherFlags, Prot,
    ShmatFlags, SymbolicFlags,
};
use crate::stream::lex::{parse_dec, parse_hex, parse_signed_dec, parse_u32};

/// Why a line is not a valid event. Values are quoted (shortened when long).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// The line is empty.
    #[error("empty line")]
    Empty,
    /// The line is not valid UTF-8 (the format is ASCII).
    #[error("line is not ASCII text")]
    NotText,
    /// The line ends before the frame (`time pid/tid kind`) is complete.
    #[error("truncated line: no {0}")]
    MissingFrame(&'static str),
    /// The timestamp is not `<seconds>.<9 digits>`.
    #[error("bad timestamp {0:?}: expected <seconds>.<nanoseconds, 9 digits>")]
    BadTimestamp(String),
    /// The `pid/tid` field is malformed.
    #[error("bad pid/tid {0:?}: expected <pid>/<tid>")]
    BadPidTid(String),
    /// The kind is not one this version knows.
    #[error("unknown event kind {0:?}")]
    UnknownKind(String),
    /// A field that is not `key=value`.
    #[error("field {0:?} is not key=value")]
    NotKeyValue(String),
    /// A key the kind requires is absent.
    #[error("{kind} event without required key `{key}`")]
    MissingKey {
        /// The event kind.
        kind: &'static str,
        /// The absent key.
        key: &'static str,
    },
    /// A known key has a value of the wrong form.
    #[error("bad value {value:?} for key `{key}`: expected {expected}")]
    BadValue {
        /// The key.
        key: &'static str,
        /// The value found (shortened when long).
        value: String,
        /// What the value should look like.
        expected: &'static str,
    },
}

/// Longest value quoted in an error message, in characters.
const QUOTE_LIMIT: usize = 64;

fn quote(text: &str) -> String {
    if text.chars().count() <= QUOTE_LIMIT {
        text.to_owned()
    } else {
        let mut short: String = text.chars().take(QUOTE_LIMIT).collect();
        short.push('…');
        short
    }
}

/// Parses a `ret=` value: `-ENAME`/`-E<n>` on failure, hex or decimal on success.
fn parse_ret(text: &str) -> Option<SyscallResult> {
    if let Some(name) = text.strip_prefix('-') {
        return Errno::from_name(name).map(Err);
    }
    if text.starts_with("0x") {
        parse_hex(text).map(Ok)
    } else {
        parse_dec(text).map(Ok)
    }
}

impl Timestamp {
    /// Parses `<seconds>.<nanoseconds>` with exactly nine nanosecond digits.
    pub fn parse(text: &str) -> Option<Timestamp> {
        parse_timestamp(text)
    }
}

fn parse_timestamp(text: &str) -> Option<Timestamp> {
    let (secs, nanos) = text.split_once('.')?;
    if nanos.len() != 9 {
        return None;
    }
    let nanos = u32::try_from(parse_dec(nanos)?).ok()?;
    Some(Timestamp {
        secs: parse_dec(secs)?,
        nanos,
    })
}

/// The `key=value` fields of a line, looked up by key (first occurrence wins).
struct Fields<'a> {
    kind: &'static str,
    pairs: [(&'a str, &'a str); MAX_FIELDS],
    len: usize,
}

/// Fields kept per line; more than any kind has, so only unknown trailing keys are dropped.
const MAX_FIELDS: usize = 16;

impl<'a> Fields<'a> {
    fn new(kind: &'static str, rest: &'a str) -> Result<Fields<'a>, ParseError> {
        let mut fields = Fields {
            kind,
            pairs: [("", ""); MAX_FIELDS],
            len: 0,
        };
        for token in rest.split_ascii_whitespace() {
            let Some((key, value)) = token.split_once('=') else {
                return Err(ParseError::NotKeyValue(quote(token)));
            };
            if fields.len < MAX_FIELDS {
                fields.pairs[fields.len] = (key, value);
                fields.len += 1;
            }
        }
        Ok(fields)
    }

    fn optional(&self, key: &'static str) -> Option<&'a str> {
        self.pairs[..self.len]
            .iter()
            .find(|(name, _)| *name == key)
            .map(|&(_, value)| value)
    }

    fn required(&self, key: &'static str) -> Result<&'a str, ParseError> {
        self.optional(key).ok_or(ParseError::MissingKey {
            kind: self.kind,
            key,
        })
    }

    fn typed<T>(
        &self,
        key: &'static str,
        expected: &'static str,
        parse: impl FnOnce(&'a str) -> Option<T>,
    ) -> Result<T, ParseError> {
        let value = self.required(key)?;
        parse(value).ok_or_else(|| bad_value(key, value, expected))
    }

    fn hex(&self, key: &'static str) -> Result<u64, ParseError> {
        self.typed(key, "a hex number like 0x7f12a000", parse_hex)
    }

    fn dec(&self, key: &'static str) -> Result<u64, ParseError> {
        self.typed(key, "an unsigned decimal number", parse_dec)
    }

    fn signed(&self, key: &'static str) -> Result<i64, ParseError> {
        self.typed(key, "a decimal number", parse_signed_dec)
    }

    fn ret(&self) -> Result<SyscallResult, ParseError> {
        self.typed("ret", "a result like 0, 0x7f12a000 or -ENOMEM", parse_ret)
    }

    fn prot(&self) -> Result<Prot, ParseError> {
        self.typed(
            "prot",
            "three letters r/w/x or - (rw-), other bits after | (r--|0x1000000)",
            Prot::parse,
        )
    }

    fn flags<F: SymbolicFlags>(&self) -> Result<F, ParseError> {
        self.typed("flags", "flag names joined by | (or 0)", F::parse_symbolic)
    }

    fn string(&self, key: &'static str) -> Result<EscapedStr<'a>, ParseError> {
        self.typed(
            key,
            "escaped text (\\xNN for special bytes)",
            EscapedStr::from_escaped,
        )
    }

    /// A `0`/`1` switch that defaults to `default` when absent.
    fn switch(&self, key: &'static str, default: bool) -> Result<bool, ParseError> {
        match self.optional(key) {
            None => Ok(default),
            Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(value) => Err(bad_value(key, value, "0 or 1")),
        }
    }
}

fn bad_value(key: &'static str, value: &str, expected: &'static str) -> ParseError {
    ParseError::BadValue {
        key,
        value: quote(value),
        expected,
    }
}

/// Parses one line of the event stream (a trailing `\n` is allowed).
///
/// Unknown keys are ignored; missing or malformed known keys are errors. Never panics.
pub fn parse_line(line: &str) -> Result<Event<'_>, ParseError> {
    let (time, pid, tid, name, rest) = frame(line)?;
    let fields = Fields::new(name, rest)?;
    let kind = parse_kind(name, &fields)?;
    let dur = if kind.is_syscall() && fields.optional("dur").is_some() {
        Some(fields.dec("dur")?)
    } else {
        None
    };
    let stack = match fields.optional("stack") {
        Some(text) if kind.may_have_stack() => {
            let frames = parse_stack(text)
                .ok_or_else(|| bad_value("stack", text, "hex addresses joined by ,"))?;
            Some(Stack(frames, stack_end(&fields)?))
        }
        // A stack the module shed whole: no `stack=`, only `stack_end=shed`.
        None if kind.may_have_stack() => match fields.optional("stack_end") {
            Some("shed") => Some(Stack(Vec::new(), StackEnd::Shed)),
            Some(end) => return Err(bad_value("stack_end", end, "shed (alone, without stack=)")),
            None => None,
        },
        _ => None,
    };
    let python = match (fields.optional("pystack"), fields.optional("pystack_end")) {
        (None, None) => None,
        _ if !kind.may_have_stack() => None,
        (frames, end) => {
            let frames = match frames {
                Some(text) => parse_python_frames(text).ok_or_else(|| {
                    bad_value("pystack", text, "0xCODE+OFFSET entries joined by ,")
                })?,
                None => Vec::new(),
            };
            let end = match end {
                Some(text) => PythonEnd::parse(text).ok_or_else(|| {
                    bad_value(
                        "pystack_end",
                        text,
                        "depth, unreadable, invalid or no_thread",
                    )
                })?,
                None => PythonEnd::Complete,
            };
            Some(PythonStack(frames, end))
        }
    };
    Ok(Event {
        time,
        pid,
        tid,
        kind,
        dur,
        stack,
        python,
    })
}

/// Parses the entries of a `pystack=` value: `0xCODE+OFFSET`, `*` after an entry frame.
pub fn parse_python_frames(text: &str) -> Option<Vec<PythonFrame>> {
    text.split(',')
        .map(|entry| {
            let (entry, star) = match entry.strip_suffix('*') {
                Some(entry) => (entry, true),
                None => (entry, false),
            };
            let (code, offset) = entry.split_once('+')?;
            Some(PythonFrame {
                code: parse_hex(code)?,
                offset: offset
                    .parse()
                    .ok()
                    .filter(|o| *o <= PythonFrame::OFFSET_UNKNOWN)?,
                entry: star,
            })
        })
        .collect()
}

/// Time and pid of a `fault` line that [`parse_line`] accepts, found by the same code
/// without building the event (no allocation: the stack is checked, not collected);
/// `None` for other kinds and for lines [`parse_line`] rejects. The fast path of
/// `memmon record`, which copies fault lines as they are.
pub fn fault_frame(line: &str) -> Option<(Timestamp, u32)> {
    let (time, pid, _, name, rest) = frame(line).ok()?;
    if name != "fault" {
        return None;
    }
    let fields = Fields::new(name, rest).ok()?;
    parse_fault(&fields).ok()?;
    let stack_valid = match fields.optional("stack") {
        Some(text) => {
            stack_entries(text).all(|entry| entry.is_some()) && stack_end(&fields).is_ok()
        }
        None => true,
    };
    stack_valid.then_some((time, pid))
}

/// The frame of a line: time, pid, tid, the kind's name and the rest (its fields).
fn frame(line: &str) -> Result<(Timestamp, u32, u32, &'static str, &str), ParseError> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.trim_start_matches(' ');
    if line.is_empty() {
        return Err(ParseError::Empty);
    }
    let mut frame = line.splitn(4, ' ');
    let time_text = frame.next().ok_or(ParseError::Empty)?;
    let time =
        parse_timestamp(time_text).ok_or_else(|| ParseError::BadTimestamp(quote(time_text)))?;
    let ids = frame.next().ok_or(ParseError::MissingFrame("pid/tid"))?;
    let (pid, tid) = ids
        .split_once('/')
        .and_then(|(pid, tid)| Some((parse_u32(pid)?, parse_u32(tid)?)))
        .ok_or_else(|| ParseError::BadPidTid(quote(ids)))?;
    let kind_text = frame.next().ok_or(ParseError::MissingFrame("kind"))?;
    let rest = frame.next().unwrap_or("");
    let Some(&name) = crate::stream::event::KIND_NAMES
        .iter()
        .find(|name| **name == kind_text)
    else {
        return Err(ParseError::UnknownKind(quote(kind_text)));
    };
    Ok((time, pid, tid, name, rest))
}

/// Parses raw bytes of one line; non-UTF-8 input is a [`ParseError::NotText`].
pub fn parse_line_bytes(line: &[u8]) -> Result<Event<'_>, ParseError> {
    std::str::from_utf8(line)
        .map_err(|_| ParseError::NotText)
        .and_then(parse_line)
}

/// Parses `0xA,0xB,...` (may be empty).
fn parse_stack(text: &str) -> Option<Vec<u64>> {
    stack_entries(text).collect()
}

/// The entries of a `stack=` value, each `None` when it is not a hex address.
fn stack_entries(text: &str) -> impl Iterator<Item = Option<u64>> + '_ {
    text.split(',')
        .filter(move |_| !text.is_empty())
        .map(parse_hex)
}

/// `stack_end=` of a line with a stack (a whole stack when absent).
fn stack_end(fields: &Fields<'_>) -> Result<StackEnd, ParseError> {
    Ok(match fields.optional("stack_end") {
        Some(end) => StackEnd::parse(end).ok_or_else(|| {
            bad_value(
                "stack_end",
                end,
                "depth, unreadable, no_table, unsupported or shed",
            )
        })?,
        None => StackEnd::Complete,
    })
}

/// The fields of a fault line (shared by [`parse_line`] and [`fault_frame`]).
fn parse_fault<'a>(f: &Fields<'a>) -> Result<EventKind<'a>, ParseError> {
    Ok(EventKind::Fault {
        fault_type: f.typed(
            "type",
            "anon, file, swap, wp, spurious, numa, hugetlb, other or access",
            FaultType::parse,
        )?,
        access: f.typed("access", "R, W or X", |v| match v {
            "R" => Some(Access::Read),
            "W" => Some(Access::Write),
            "X" => Some(Access::Exec),
            _ => None,
        })?,
        addr: f.hex("addr")?,
        ip: f.hex("ip")?,
        user: f.switch("user", true)?,
        huge: f.switch("huge", false)?,
        major: f.switch("major", false)?,
        retry: f.switch("retry", false)?,
        pages: match f.optional("pages") {
            Some(_) => f.dec("pages")?,
            None => 1,
        },
        gen: match f.optional("gen") {
            Some(_) => Some(f.dec("gen")?),
            None => None,
        },
    })
}

fn parse_kind<'a>(name: &'static str, f: &Fields<'a>) -> Result<EventKind<'a>, ParseError> {
    let kind = match name {
        "fault" => parse_fault(f)?,
        "mmap" => EventKind::Mmap {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            prot: f.prot()?,
            flags: f.flags::<MmapFlags>()?,
            fd: f.signed("fd")?,
            off: f.signed("off")?,
            ret: f.ret()?,
            file: match f.optional("file") {
                Some(_) => Some(f.string("file")?),
                None => None,
            },
        },
        "munmap" => EventKind::Munmap {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            ret: f.ret()?,
        },
        "mremap" => EventKind::Mremap {
            old: f.hex("old")?,
            old_len: f.dec("old_len")?,
            new_len: f.dec("new_len")?,
            flags: f.flags::<MremapFlags>()?,
            new: f.hex("new")?,
            ret: f.ret()?,
        },
        "brk" => EventKind::Brk {
            req: f.hex("req")?,
            ret: f.hex("ret")?,
        },
        "mprotect" => EventKind::Mprotect {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            prot: f.prot()?,
            ret: f.ret()?,
        },
        "madvise" => EventKind::Madvise {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            advice: f.typed(
                "advice",
                "an MADV_ name without prefix or a number",
                Advice::parse,
            )?,
            ret: f.ret()?,
        },
        "mlock" => EventKind::Mlock {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            ret: f.ret()?,
        },
        "mlock2" => EventKind::Mlock2 {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            flags: f.flags::<Mlock2Flags>()?,
            ret: f.ret()?,
        },
        "munlock" => EventKind::Munlock {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            ret: f.ret()?,
        },
        "mlockall" => EventKind::Mlockall {
            flags: f.flags::<MlockallFlags>()?,
            ret: f.ret()?,
        },
        "munlockall" => EventKind::Munlockall { ret: f.ret()? },
        "fsync" => EventKind::Fsync {
            fd: f.signed("fd")?,
            ret: f.ret()?,
        },
        "msync" => EventKind::Msync {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            flags: f.flags::<MsyncFlags>()?,
            ret: f.ret()?,
        },
        "pkey_mprotect" => EventKind::PkeyMprotect {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            prot: f.prot()?,
            pkey: f.signed("pkey")?,
            ret: f.ret()?,
        },
        "mseal" => EventKind::Mseal {
            addr: f.hex("addr")?,
            len: f.dec("len")?,
            flags: f.flags::<OtherFlags>()?,
            ret: f.ret()?,
        },
        "process_madvise" => EventKind::ProcessMadvise {
            pidfd: f.signed("pidfd")?,
            vec: f.hex("vec")?,
            vlen: f.dec("vlen")?,
            advice: f.typed(
                "advice",
                "an MADV_ name without prefix or a number",
                Advice::parse,
            )?,
            flags: f.flags::<OtherFlags>()?,
            ret: f.ret()?,
        },
        "shmat" => EventKind::Shmat {
            shmid: f.signed("shmid")?,
            addr: f.hex("addr")?,
            flags: f.flags::<ShmatFlags>()?,
            ret: f.ret()?,
        },
        "shmdt" => EventKind::Shmdt {
            addr: f.hex("addr")?,
            ret: f.ret()?,
        },
        "rss" => EventKind::Rss {
            anon: f.dec("anon")?,
            file: f.dec("file")?,
            shmem: f.dec("shmem")?,
            swap: f.dec("swap")?,
            peak: f.dec("peak")?,
            at: f.typed("at", "exit, exec or mark", RssAt::parse)?,
        },
        "mark" => EventKind::Mark {
            text: f.string("text")?,
        },
        "exec" => EventKind::Exec {
            comm: f.string("comm")?,
            filename: f.string("filename")?,
        },
        "fork" => EventKind::Fork {
            child: f.typed("child", "a pid", parse_u32)?,
            watched: f.typed("watched", "0 or 1", |v| match v {
                "0" => Some(false),
                "1" => Some(true),
                _ => None,
            })?,
        },
        "exit" => EventKind::Exit {
            code: f.typed("code", "a wait(2) status", |v| {
                parse_signed_dec(v).and_then(|n| i32::try_from(n).ok())
            })?,
        },
        "gen" => EventKind::Gen {
            n: f.dec("n")?,
            armed: f.dec("armed")?,
        },
        "cgroup" => EventKind::Cgroup {
            id: f.dec("id")?,
            path: f.string("path")?,
        },
        "lost" => EventKind::Lost {
            count: f.dec("count")?,
        },
        "dropped" => EventKind::Dropped {
            faults: f.dec("faults")?,
        },
        _ => return Err(ParseError::UnknownKind(quote(name))),
    };
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::event::EventKind;

    /// `fault_frame` takes exactly the fault lines `parse_line` accepts, with their time
    /// and pid (the test that kept the record loop's own validator in step with the
    /// parser, now that the loop uses this).
    #[test]
    fn fault_frame_agrees_with_parse_line() {
        let stack = "stack=0x55d000401005,0x7f12a0001000,0xffffffffffffffff";
        let good = [
            "5.103901002 212/213 fault type=anon access=W addr=0x7f5a2c1e4010 ip=0x401d2f",
            "5.103901002 212/212 fault type=file access=R addr=0x400000 ip=0x0 user=0 huge=1 major=1 retry=0 pages=512",
            "5.103901002 212/212 fault type=other access=X addr=0xABCdef ip=0x1 pages=0 stack=",
            "5.103901002 212/212 fault type=wp access=W addr=0x1 ip=0x2 unknown=x",
            "5.103901002 212/212 fault type=wp access=W addr=0x1 ip=0x2 type=bogus",
            "5.103901002 212/212 fault   type=wp  access=W\taddr=0x1 ip=0x2",
            "5.103901002 212/212 fault type=access access=R addr=0x7f0000001000 ip=0x401d2f gen=3",
            "5.103901002 212/212 fault type=access access=W addr=0x7f0000200000 ip=0x401d2f huge=1 gen=18446744073709551615",
        ];
        let mut lines: Vec<String> = good.iter().map(|line| line.to_string()).collect();
        lines.extend(good.iter().map(|line| format!("{line} {stack}")));
        let base = "7.000000001 4000/4001 fault type=swap access=R addr=0x7f0000001000 ip=0x401005";
        for (from, to) in [
            ("type=swap", "type=bogus"),
            ("type=swap", "type="),
            ("access=R", "access=r"),
            ("access=R ", ""),
            ("addr=0x7f0000001000", "addr=7f0000001000"),
            ("addr=0x7f0000001000", "addr=0x"),
            ("addr=0x7f0000001000", "addr=0x00007f00000010000"),
            ("ip=0x401005", "ip=0xg"),
            ("ip=0x401005", "ip"),
            ("7.000000001", "7.00000001"),
            ("7.000000001", "+7.000000001"),
            ("4000/4001", "4000"),
            ("4000/4001", "4000/+4001"),
            ("4000/4001", "4000/4294967296"),
            ("4000/4001", "-1/4001"),
            (" fault", " faults"),
            ("7.0", " 7.0"),
        ] {
            lines.push(base.replacen(from, to, 1));
        }
        for suffix in [
            " user=2",
            " huge=yes",
            " major=",
            " retry=11",
            " pages=-1",
            " pages=18446744073709551616",
            " pages=18446744073709551615",
            " gen=",
            " gen=-1",
            " gen=0x3",
            " gen=18446744073709551616",
            " gen=7",
            " stack=0x1,",
            " stack=,0x1",
            " stack=0x1,0x2",
            " stack=1",
            " stack=0x",
            " stack=0x1,,0x2",
            " stack=0x1,0x",
            " stack=0x00000000000000001",
            " stack=0x0000000000000001,0xfFfF",
            " stack=0x1;0x2",
            " bare",
            " a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 l=12 user=7",
            " a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 user=7",
            " a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 l=12 m",
            " user=1 user=x",
            " user=x user=1",
        ] {
            lines.push(format!("{base}{suffix}"));
        }
        lines.push(format!("{base} stack=0x1 stack_end=depth"));
        lines.push(format!("{base} stack=0x1 stack_end=bogus"));
        lines.push("7.000000001 4000/4001 mmap addr=0x0 len=1 prot=r-- flags=PRIVATE fd=-1 off=0 ret=0x1000".to_owned());
        for line in &lines {
            let parsed = parse_line(line)
                .ok()
                .filter(|event| matches!(event.kind, EventKind::Fault { .. }))
                .map(|event| (event.time, event.pid));
            assert_eq!(fault_frame(line), parsed, "{line}");
        }
        assert!(
            lines
                .iter()
                .filter(|line| fault_frame(line).is_some())
                .count()
                > 12
        );
    }
}
