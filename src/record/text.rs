// SPDX-License-Identifier: GPL-2.0

//! The text form of events: one line per event, as documented in `docs/events.md`.

use crate::record::copy::copy_bytes;
use crate::record::event::{
    fault_flags, Event, FaultType, Kind, PythonEnd, PythonFrame, StackEnd, PYTHON_MAX, STACK_MAX,
    TEXT_CAPACITY,
};
use core::fmt::{self, Write};

/// Room for the longest line: an `mmap` with every flag name and unknown bits, extreme
/// numbers (about 400 bytes) and a path of [`TEXT_CAPACITY`] bytes all escaped (4 each), a
/// stack of [`STACK_MAX`] entries of which [`PYTHON_MAX`] Python frames (22 bytes each).
pub(crate) const LINE_MAX: usize = 3712;
const _: () =
    assert!(LINE_MAX >= 500 + 4 * TEXT_CAPACITY + 6 + 20 * STACK_MAX + 24 + 2 * PYTHON_MAX + 40);

/// A line being formatted.
///
/// Writes past [`LINE_MAX`] are cut, and [`Line::finish`] then ends the line with a newline,
/// so that a line is always whole; with the bound above this does not happen.
pub(crate) struct Line {
    buf: [u8; LINE_MAX],
    len: usize,
}

impl Line {
    /// An empty line.
    pub(crate) fn new() -> Self {
        Self {
            buf: [0; LINE_MAX],
            len: 0,
        }
    }

    /// Empties the line.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// The bytes written so far.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Appends what fits of `bytes`; fails if not all of it did.
    fn push_bytes(&mut self, bytes: &[u8]) -> fmt::Result {
        let room = LINE_MAX - self.len;
        let fits = bytes.len().min(room);
        if let Some(dst) = self.buf.get_mut(self.len..) {
            copy_bytes(dst, bytes);
        }
        self.len += fits;
        if fits < bytes.len() {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }

    /// Appends `value` in decimal, at least `width` digits (zero-padded).
    fn push_dec(&mut self, value: u64, width: usize) -> fmt::Result {
        let mut digits = [b'0'; 20];
        let mut at = digits.len();
        let mut rest = value;
        loop {
            at -= 1;
            // CAST: a digit is below 10.
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let at = at.min(digits.len() - width.min(digits.len()));
        self.push_bytes(&digits[at..])
    }

    /// Appends `value` as a signed decimal.
    fn push_signed(&mut self, value: i64) -> fmt::Result {
        if value < 0 {
            self.push_bytes(b"-")?;
        }
        self.push_dec(value.unsigned_abs(), 1)
    }

    /// Appends `value` as `0x` and lowercase hex digits.
    fn push_hex(&mut self, value: u64) -> fmt::Result {
        let mut digits = [0u8; 18];
        let mut at = digits.len();
        let mut rest = value;
        loop {
            at -= 1;
            digits[at] = b"0123456789abcdef"[(rest & 0xf) as usize];
            rest >>= 4;
            if rest == 0 {
                break;
            }
        }
        at -= 2;
        digits[at] = b'0';
        digits[at + 1] = b'x';
        self.push_bytes(&digits[at..])
    }

    /// Ends the line with its newline, cutting the last byte if the line is full.
    fn finish(&mut self) {
        if self.len == LINE_MAX {
            self.len -= 1;
        }
        self.buf[self.len] = b'\n';
        self.len += 1;
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_bytes(s.as_bytes())
    }
}

/// Writes `bytes` in the stream's `str` form: 0x21..0x7e but `\` as is, others as `\xNN`.
fn write_escaped(out: &mut Line, bytes: &[u8], truncated: bool) -> fmt::Result {
    write_escaped_cut(out, bytes, false, truncated)
}

/// Writes the text of an event, `...` before it when its start was cut, after it when its
/// end was.
fn write_text(out: &mut Line, e: &Event) -> fmt::Result {
    write_escaped_cut(out, e.text(), e.text_head_cut, e.text_truncated)
}

fn write_escaped_cut(out: &mut Line, bytes: &[u8], head_cut: bool, truncated: bool) -> fmt::Result {
    if head_cut {
        out.push_bytes(b"...")?;
    }
    for &b in bytes {
        if (0x21..=0x7e).contains(&b) && b != b'\\' {
            out.push_bytes(&[b])?;
        } else {
            write!(out, "\\x{b:02x}")?;
        }
    }
    if truncated {
        out.push_bytes(b"...")?;
    }
    Ok(())
}

/// Names of the x86-64 Linux errno values 1 to 133, index = number - 1 (41 and 58 are
/// unused: empty), as the userspace library names them.
const ERRNO_NAMES: [&str; 133] = [
    "EPERM",
    "ENOENT",
    "ESRCH",
    "EINTR",
    "EIO",
    "ENXIO",
    "E2BIG",
    "ENOEXEC",
    "EBADF",
    "ECHILD",
    "EAGAIN",
    "ENOMEM",
    "EACCES",
    "EFAULT",
    "ENOTBLK",
    "EBUSY",
    "EEXIST",
    "EXDEV",
    "ENODEV",
    "ENOTDIR",
    "EISDIR",
    "EINVAL",
    "ENFILE",
    "EMFILE",
    "ENOTTY",
    "ETXTBSY",
    "EFBIG",
    "ENOSPC",
    "ESPIPE",
    "EROFS",
    "EMLINK",
    "EPIPE",
    "EDOM",
    "ERANGE",
    "EDEADLK",
    "ENAMETOOLONG",
    "ENOLCK",
    "ENOSYS",
    "ENOTEMPTY",
    "ELOOP",
    "",
    "ENOMSG",
    "EIDRM",
    "ECHRNG",
    "EL2NSYNC",
    "EL3HLT",
    "EL3RST",
    "ELNRNG",
    "EUNATCH",
    "ENOCSI",
    "EL2HLT",
    "EBADE",
    "EBADR",
    "EXFULL",
    "ENOANO",
    "EBADRQC",
    "EBADSLT",
    "",
    "EBFONT",
    "ENOSTR",
    "ENODATA",
    "ETIME",
    "ENOSR",
    "ENONET",
    "ENOPKG",
    "EREMOTE",
    "ENOLINK",
    "EADV",
    "ESRMNT",
    "ECOMM",
    "EPROTO",
    "EMULTIHOP",
    "EDOTDOT",
    "EBADMSG",
    "EOVERFLOW",
    "ENOTUNIQ",
    "EBADFD",
    "EREMCHG",
    "ELIBACC",
    "ELIBBAD",
    "ELIBSCN",
    "ELIBMAX",
    "ELIBEXEC",
    "EILSEQ",
    "ERESTART",
    "ESTRPIPE",
    "EUSERS",
    "ENOTSOCK",
    "EDESTADDRREQ",
    "EMSGSIZE",
    "EPROTOTYPE",
    "ENOPROTOOPT",
    "EPROTONOSUPPORT",
    "ESOCKTNOSUPPORT",
    "EOPNOTSUPP",
    "EPFNOSUPPORT",
    "EAFNOSUPPORT",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "ENETDOWN",
    "ENETUNREACH",
    "ENETRESET",
    "ECONNABORTED",
    "ECONNRESET",
    "ENOBUFS",
    "EISCONN",
    "ENOTCONN",
    "ESHUTDOWN",
    "ETOOMANYREFS",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "EHOSTDOWN",
    "EHOSTUNREACH",
    "EALREADY",
    "EINPROGRESS",
    "ESTALE",
    "EUCLEAN",
    "ENOTNAM",
    "ENAVAIL",
    "EISNAM",
    "EREMOTEIO",
    "EDQUOT",
    "ENOMEDIUM",
    "EMEDIUMTYPE",
    "ECANCELED",
    "ENOKEY",
    "EKEYEXPIRED",
    "EKEYREVOKED",
    "EKEYREJECTED",
    "EOWNERDEAD",
    "ENOTRECOVERABLE",
    "ERFKILL",
    "EHWPOISON",
];

/// Errno names for syscall results; others print as `-E<number>`.
fn errno_name(errno: i64) -> Option<&'static str> {
    let index = usize::try_from(errno.checked_sub(1)?).ok()?;
    ERRNO_NAMES
        .get(index)
        .copied()
        .filter(|name| !name.is_empty())
}

/// How a successful return value prints.
#[derive(Clone, Copy)]
enum RetForm {
    Hex,
    Dec,
}

fn write_ret(out: &mut Line, ret: i64, form: RetForm) -> fmt::Result {
    if (-4095..0).contains(&ret) {
        match errno_name(-ret) {
            Some(name) => write!(out, " ret=-{name}"),
            None => write!(out, " ret=-E{}", -ret),
        }
    } else {
        match form {
            // CAST: a successful address return is an unsigned long.
            RetForm::Hex => write!(out, " ret={:#x}", ret as u64),
            RetForm::Dec => write!(out, " ret={ret}"),
        }
    }
}

/// Writes `value` as `|`-joined names of `names` (bit, name), unknown bits as one hex value.
fn write_flags(out: &mut Line, value: u64, names: &[(u64, &str)]) -> fmt::Result {
    if value == 0 {
        return out.write_str("0");
    }
    let mut rest = value;
    let mut first = true;
    for &(bits, name) in names {
        if bits != 0 && rest & bits == bits {
            if !first {
                out.write_str("|")?;
            }
            out.write_str(name)?;
            rest &= !bits;
            first = false;
        }
    }
    if rest != 0 {
        if !first {
            out.write_str("|")?;
        }
        write!(out, "{rest:#x}")?;
    }
    Ok(())
}

fn write_prot(out: &mut Line, prot: u64) -> fmt::Result {
    let letter = |bit: u64, c: u8| if prot & bit != 0 { c } else { b'-' };
    out.push_bytes(&[letter(1, b'r'), letter(2, b'w'), letter(4, b'x')])?;
    if prot & !7 != 0 {
        write!(out, "|{:#x}", prot & !7)?;
    }
    Ok(())
}

/// `MAP_*` names; the mapping type (low two bits) is matched first as a whole.
const MMAP_FLAGS: &[(u64, &str)] = &[
    (0x03, "SHARED_VALIDATE"),
    (0x01, "SHARED"),
    (0x02, "PRIVATE"),
    (0x10, "FIXED"),
    (0x20, "ANONYMOUS"),
    (0x100, "GROWSDOWN"),
    (0x800, "DENYWRITE"),
    (0x1000, "EXECUTABLE"),
    (0x2000, "LOCKED"),
    (0x4000, "NORESERVE"),
    (0x8000, "POPULATE"),
    (0x10000, "NONBLOCK"),
    (0x20000, "STACK"),
    (0x40000, "HUGETLB"),
    (0x80000, "SYNC"),
    (0x100000, "FIXED_NOREPLACE"),
    (0x4000000, "UNINITIALIZED"),
];

const MREMAP_FLAGS: &[(u64, &str)] = &[(1, "MAYMOVE"), (2, "FIXED"), (4, "DONTUNMAP")];
const MLOCK2_FLAGS: &[(u64, &str)] = &[(1, "ONFAULT")];
const MLOCKALL_FLAGS: &[(u64, &str)] = &[(1, "CURRENT"), (2, "FUTURE"), (4, "ONFAULT")];
const MSYNC_FLAGS: &[(u64, &str)] = &[(1, "ASYNC"), (2, "INVALIDATE"), (4, "SYNC")];
const SHMAT_FLAGS: &[(u64, &str)] = &[
    (0x1000, "RDONLY"),
    (0x2000, "RND"),
    (0x4000, "REMAP"),
    (0x8000, "EXEC"),
];

fn advice_name(advice: u64) -> Option<&'static str> {
    Some(match advice {
        0 => "NORMAL",
        1 => "RANDOM",
        2 => "SEQUENTIAL",
        3 => "WILLNEED",
        4 => "DONTNEED",
        8 => "FREE",
        9 => "REMOVE",
        10 => "DONTFORK",
        11 => "DOFORK",
        12 => "MERGEABLE",
        13 => "UNMERGEABLE",
        14 => "HUGEPAGE",
        15 => "NOHUGEPAGE",
        16 => "DONTDUMP",
        17 => "DODUMP",
        18 => "WIPEONFORK",
        19 => "KEEPONFORK",
        20 => "COLD",
        21 => "PAGEOUT",
        22 => "POPULATE_READ",
        23 => "POPULATE_WRITE",
        25 => "COLLAPSE",
        100 => "HWPOISON",
        101 => "SOFT_OFFLINE",
        102 => "GUARD_INSTALL",
        103 => "GUARD_REMOVE",
        _ => return None,
    })
}

/// Writes the line prefix: time, ids and kind name.
fn write_frame(out: &mut Line, time_ns: u64, pid: i32, tid: i32, kind: &str) -> fmt::Result {
    // Hand-formatted: this runs for every line a reader reads.
    out.push_dec(time_ns / 1_000_000_000, 1)?;
    out.push_bytes(b".")?;
    out.push_dec(time_ns % 1_000_000_000, 9)?;
    out.push_bytes(b" ")?;
    out.push_signed(i64::from(pid))?;
    out.push_bytes(b"/")?;
    out.push_signed(i64::from(tid))?;
    out.push_bytes(b" ")?;
    out.push_bytes(kind.as_bytes())
}

/// Formats, into `out` (emptied first), the `lost` line for `count` missed events.
pub(crate) fn format_lost(out: &mut Line, time_ns: u64, count: u64) {
    out.clear();
    // A full line is cut by `finish`.
    let _ = write_frame(out, time_ns, 0, 0, "lost").and_then(|()| write!(out, " count={count}"));
    out.finish();
}

/// Formats `event` with its user call stack as one line, newline included, into `out`
/// (emptied first).
pub(crate) fn format_event(out: &mut Line, event: &Event, stack: &[u64]) {
    out.clear();
    // A full line is cut by `finish`.
    let native = stack.len().saturating_sub(usize::from(event.python_frames));
    let (stack, python) = stack.split_at(native);
    let _ = write_event(out, event)
        .and_then(|()| write_stack(out, stack, event.stack_end))
        .and_then(|()| write_python(out, python, event.python_end));
    out.finish();
}

/// Writes ` stack=0x..,0x..` for a non-empty stack, and ` stack_end=REASON` after it when
/// the stack is not whole (alone for a stack shed whole).
fn write_stack(out: &mut Line, stack: &[u64], end: StackEnd) -> fmt::Result {
    for (i, entry) in stack.iter().enumerate() {
        out.push_bytes(if i == 0 { b" stack=" } else { b"," })?;
        out.push_hex(*entry)?;
    }
    if (!stack.is_empty() && end != StackEnd::Complete) || end == StackEnd::Shed {
        out.push_bytes(b" stack_end=")?;
        out.push_bytes(end.name().as_bytes())?;
    }
    Ok(())
}

/// Writes ` pystack=0xCODE+OFFSET,..` for Python frames (a `*` after the offset marks the
/// outermost frame of one run of the eval loop), and ` pystack_end=REASON` after them when
/// they do not end at the thread's outermost frame (alone when there are none).
fn write_python(out: &mut Line, python: &[u64], end: PythonEnd) -> fmt::Result {
    for (i, entry) in python.iter().enumerate() {
        let frame = PythonFrame::unpack(*entry);
        out.push_bytes(if i == 0 { b" pystack=" } else { b"," })?;
        out.push_hex(frame.code)?;
        out.push_bytes(b"+")?;
        write!(out, "{}", frame.offset)?;
        if frame.entry {
            out.push_bytes(b"*")?;
        }
    }
    if end != PythonEnd::Complete {
        out.push_bytes(b" pystack_end=")?;
        out.push_bytes(end.name().as_bytes())?;
    }
    Ok(())
}

/// Writes the line of `e` but its stack: the prefix, the fields of its kind, and the
/// duration of a call.
fn write_event(out: &mut Line, e: &Event) -> fmt::Result {
    write_frame(out, e.time_ns, e.pid, e.tid, e.kind.name())?;
    match e.kind {
        Kind::Fault => write_fault(out, e)?,
        Kind::Mmap
        | Kind::Munmap
        | Kind::Mremap
        | Kind::Brk
        | Kind::Mprotect
        | Kind::PkeyMprotect
        | Kind::Mseal
        | Kind::Shmat
        | Kind::Shmdt => write_mapping_call(out, e)?,
        Kind::Madvise
        | Kind::ProcessMadvise
        | Kind::Mlock
        | Kind::Munlock
        | Kind::Mlock2
        | Kind::Mlockall
        | Kind::Munlockall
        | Kind::Fsync
        | Kind::Msync => write_residency_call(out, e)?,
        Kind::Rss
        | Kind::Mark
        | Kind::Exec
        | Kind::Gen
        | Kind::Fork
        | Kind::Exit
        | Kind::Cgroup
        | Kind::Dropped => write_process_event(out, e)?,
    }
    if e.kind.is_syscall() {
        out.push_bytes(b" dur=")?;
        out.push_dec(e.dur_ns, 1)?;
    }
    Ok(())
}

/// The fields of a `fault` line.
fn write_fault(out: &mut Line, e: &Event) -> fmt::Result {
    let [a0, a1, a2, ..] = e.args;
    let fault_type = e.fault_type.name();
    let access = if e.flags & fault_flags::WRITE != 0 {
        "W"
    } else if e.flags & fault_flags::EXEC != 0 {
        "X"
    } else {
        "R"
    };
    out.push_bytes(b" type=")?;
    out.push_bytes(fault_type.as_bytes())?;
    out.push_bytes(b" access=")?;
    out.push_bytes(access.as_bytes())?;
    out.push_bytes(b" addr=")?;
    out.push_hex(a0)?;
    out.push_bytes(b" ip=")?;
    out.push_hex(a1)?;
    if e.flags & fault_flags::USER == 0 {
        out.write_str(" user=0")?;
    }
    if e.flags & fault_flags::HUGE != 0 {
        out.write_str(" huge=1")?;
    }
    if e.flags & fault_flags::MAJOR != 0 {
        out.write_str(" major=1")?;
    }
    if e.flags & fault_flags::RETRY != 0 {
        out.write_str(" retry=1")?;
    }
    if e.fault_type.maps_pages() && a2 != 1 {
        out.push_bytes(b" pages=")?;
        out.push_dec(a2, 1)?;
    }
    if e.fault_type == FaultType::Access {
        out.push_bytes(b" gen=")?;
        out.push_dec(a2, 1)?;
    }
    Ok(())
}

/// The fields of the calls that map, unmap, move or protect memory: `mmap`, `munmap`,
/// `mremap`, `brk`, `mprotect`, `pkey_mprotect`, `mseal`, `shmat`, `shmdt`.
fn write_mapping_call(out: &mut Line, e: &Event) -> fmt::Result {
    let [a0, a1, a2, a3, a4, a5] = e.args;
    match e.kind {
        Kind::Mmap => {
            write!(out, " addr={a0:#x} len={a1} prot=")?;
            write_prot(out, a2)?;
            out.write_str(" flags=")?;
            write_flags(out, a3, MMAP_FLAGS)?;
            // CAST: the fd and offset arguments are a C int and off_t.
            write!(out, " fd={} off={}", a4 as i32, a5 as i64)?;
            write_ret(out, e.ret, RetForm::Hex)?;
            if !e.text().is_empty() {
                out.write_str(" file=")?;
                write_text(out, e)?;
            }
        }
        Kind::Munmap => {
            write!(out, " addr={a0:#x} len={a1}")?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::Mremap => {
            write!(out, " old={a0:#x} old_len={a1} new_len={a2} flags=")?;
            write_flags(out, a3, MREMAP_FLAGS)?;
            write!(out, " new={a4:#x}")?;
            write_ret(out, e.ret, RetForm::Hex)?;
        }
        Kind::Brk => {
            write!(out, " req={a0:#x}")?;
            write_ret(out, e.ret, RetForm::Hex)?;
        }
        Kind::Mprotect => {
            write!(out, " addr={a0:#x} len={a1} prot=")?;
            write_prot(out, a2)?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::PkeyMprotect => {
            write!(out, " addr={a0:#x} len={a1} prot=")?;
            write_prot(out, a2)?;
            // CAST: the pkey argument is a C int.
            write!(out, " pkey={}", a3 as i32)?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::Mseal => {
            write!(out, " addr={a0:#x} len={a1} flags=")?;
            write_flags(out, a2, &[])?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::Shmat => {
            // CAST: the shmid argument is a C int.
            write!(out, " shmid={} addr={a1:#x} flags=", a0 as i32)?;
            write_flags(out, a2, SHMAT_FLAGS)?;
            write_ret(out, e.ret, RetForm::Hex)?;
        }
        Kind::Shmdt => {
            write!(out, " addr={a0:#x}")?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        // Not a mapping call: `write_event` does not pass one; a kind routed here by mistake
        // fails its line rather than printing it without its fields.
        _ => return Err(fmt::Error),
    }
    Ok(())
}

/// The fields of the calls that advise on, lock or write back memory: `madvise`,
/// `process_madvise`, `mlock`, `munlock`, `mlock2`, `mlockall`, `munlockall`, `fsync`,
/// `msync`.
fn write_residency_call(out: &mut Line, e: &Event) -> fmt::Result {
    let [a0, a1, a2, a3, a4, _] = e.args;
    match e.kind {
        Kind::Madvise => {
            write!(out, " addr={a0:#x} len={a1} advice=")?;
            write_advice(out, a2)?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::ProcessMadvise => {
            // CAST: the pidfd and advice arguments are C ints.
            write!(out, " pidfd={} vec={a1:#x} vlen={a2} advice=", a0 as i32)?;
            write_advice(out, a3)?;
            out.write_str(" flags=")?;
            write_flags(out, a4, &[])?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::Mlock | Kind::Munlock => {
            write!(out, " addr={a0:#x} len={a1}")?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::Mlock2 => {
            write!(out, " addr={a0:#x} len={a1} flags=")?;
            write_flags(out, a2, MLOCK2_FLAGS)?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::Mlockall => {
            out.write_str(" flags=")?;
            write_flags(out, a0, MLOCKALL_FLAGS)?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::Munlockall => write_ret(out, e.ret, RetForm::Dec)?,
        Kind::Fsync => {
            // CAST: the fd argument is a C int.
            write!(out, " fd={}", a0 as i32)?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        Kind::Msync => {
            write!(out, " addr={a0:#x} len={a1} flags=")?;
            write_flags(out, a2, MSYNC_FLAGS)?;
            write_ret(out, e.ret, RetForm::Dec)?;
        }
        // Not such a call: `write_event` does not pass one; a kind routed here by mistake
        // fails its line rather than printing it without its fields.
        _ => return Err(fmt::Error),
    }
    Ok(())
}

/// Writes an `madvise` advice by name, or as a number if it has none.
fn write_advice(out: &mut Line, advice: u64) -> fmt::Result {
    match advice_name(advice) {
        Some(name) => out.write_str(name),
        // CAST: the advice argument is a C int.
        None => write!(out, "{}", advice as i32),
    }
}

/// The fields of the events that are not calls: `rss`, `mark`, `exec`, `gen`, `fork`,
/// `exit`, `cgroup`, `dropped`.
fn write_process_event(out: &mut Line, e: &Event) -> fmt::Result {
    let [a0, a1, a2, a3, a4, a5] = e.args;
    match e.kind {
        Kind::Rss => {
            let at = match a5 {
                0 => "exit",
                1 => "exec",
                _ => "mark",
            };
            write!(
                out,
                " anon={a0} file={a1} shmem={a2} swap={a3} peak={a4} at={at}"
            )?;
        }
        Kind::Mark => {
            out.write_str(" text=")?;
            write_escaped(out, e.text(), e.text_truncated)?;
        }
        Kind::Exec => write_exec(out, e)?,
        Kind::Gen => write!(out, " n={a0} armed={a1}")?,
        Kind::Fork => write!(out, " child={} watched={}", e.ret, a0)?,
        Kind::Exit => write!(out, " code={}", e.ret)?,
        Kind::Dropped => write!(out, " faults={a0}")?,
        Kind::Cgroup => {
            write!(out, " id={a0} path=")?;
            write_text(out, e)?;
        }
        // A call: `write_event` does not pass one; a kind routed here by mistake fails its
        // line rather than printing it without its fields.
        _ => return Err(fmt::Error),
    }
    Ok(())
}

/// The fields of an `exec` line: the new command name and the file executed.
fn write_exec(out: &mut Line, e: &Event) -> fmt::Result {
    let comm_len = e.args[0].min(16) as usize;
    out.write_str(" comm=")?;
    let comm = e.args[1..3]
        .iter()
        .flat_map(|word| word.to_le_bytes())
        .take(comm_len);
    let mut comm_bytes = [0u8; 16];
    for (slot, byte) in comm_bytes.iter_mut().zip(comm) {
        *slot = byte;
    }
    write_escaped(out, &comm_bytes[..comm_len], false)?;
    out.write_str(" filename=")?;
    write_escaped(out, e.text(), e.text_truncated)
}
