// SPDX-License-Identifier: GPL-2.0

//! The packed form of events in the rings: each record coded against the one before it in
//! the same block of a ring, so that a record says only what changed.
//!
//! A record is a tag byte (the kind, and whether the ids, a text and a stack follow), then
//! LEB128 varints: the time since the previous record, the pid and tid when they changed,
//! the fault type and flags, then for a fault the distance from the previous fault's address
//! and instruction pointer and the pages it mapped, for every other kind the arguments its
//! line shows ([`Kind::args`]), the result, a system call's duration and the text; last, the
//! user call stack: its length, a mask of the entries that differ from the last entry
//! written at the same depth in the block (a varint of up to 127 bits: one byte for a mask of
//! the 7 innermost entries), and each of those as its distance from it. A
//! fault of a thread that keeps faulting on the next page takes about 8 bytes, a call stack
//! that did not change two.
//!
//! Every block of a ring starts from [`State::ZERO`], so a reader can start at any block
//! (after the ones before it were overwritten) and needs nothing else to decode it.

use crate::record::copy::copy_bytes;
use crate::record::event::STACK_MAX;
use crate::record::event::{Event, FaultType, Kind, PythonEnd, StackEnd, TEXT_CAPACITY};

/// Most bytes a varint takes.
// rustc 1.85 (Debian trixie's, for the stock kernel) does not count the use of
// `PACKED_MAX` in `ring.rs`'s `const _` assertion, and so would call both unused.
#[allow(dead_code)]
const VARINT_MAX: usize = 10;

/// Most bytes the mask of a stack's changed entries takes: a varint of [`STACK_MAX`] bits.
#[allow(dead_code)]
const MASK_MAX: usize = STACK_MAX.div_ceil(7);

/// Most bytes a packed record takes: tag, time, pid and tid (zigzag of an `i32`: 5 bytes
/// each), type and flags (a 12-bit value), the arguments, result, duration, text length and
/// text of a call (larger than a fault's fields), the stack length, which entries changed and
/// the entries.
#[allow(dead_code)]
pub(crate) const PACKED_MAX: usize = 1
    + VARINT_MAX
    + 5
    + 5
    + 2
    + (8 * VARINT_MAX + 2 + TEXT_CAPACITY)
    + 3
    + MASK_MAX
    + STACK_MAX * VARINT_MAX;

// A stack record gives its length in 7 bits and marks its changed entries with one bit each,
// a mask of up to 127 bits built in two `u64` words.
const _: () = assert!(STACK_MAX <= 127);

const TAG_KIND: u8 = 0x1f;
const TAG_IDS: u8 = 1 << 5;
const TAG_TEXT: u8 = 1 << 6;
const TAG_STACK: u8 = 1 << 7;
const _: () = assert!(Kind::COUNT <= TAG_KIND as usize + 1);

/// What a record is coded against: the fields of the previous record of the block.
#[derive(Clone, Copy)]
pub(crate) struct State {
    time_ns: u64,
    pid: i32,
    tid: i32,
    addr: u64,
    ip: u64,
    /// The first `stack_len` entries of `stack` hold the last entry written at each depth;
    /// deeper ones count as 0 (and hold anything), so that starting a block need not clear
    /// them.
    stack_len: usize,
    stack: [u64; STACK_MAX],
}

impl State {
    /// The state at the start of a block.
    pub(crate) const ZERO: Self = Self {
        time_ns: 0,
        pid: 0,
        tid: 0,
        addr: 0,
        ip: 0,
        stack_len: 0,
        stack: [0; STACK_MAX],
    };

    /// Sets the state to [`State::ZERO`], writing only what it must.
    pub(crate) fn reset(&mut self) {
        self.time_ns = 0;
        self.pid = 0;
        self.tid = 0;
        self.addr = 0;
        self.ip = 0;
        self.stack_len = 0;
    }

    /// The stack entry at `depth` that the next record's is coded against.
    fn previous(&self, depth: usize) -> u64 {
        if depth < self.stack_len {
            self.stack.get(depth).copied().unwrap_or(0)
        } else {
            0
        }
    }

    /// Records `entry` as the last one written at `depth`.
    fn set_previous(&mut self, depth: usize, entry: u64) {
        if let Some(slot) = self.stack.get_mut(depth) {
            *slot = entry;
        }
        self.stack_len = self.stack_len.max(depth + 1);
    }
}

/// Bytes being written into a slice; writes past its end are dropped and remembered.
struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
    overflow: bool,
}

impl Writer<'_> {
    fn byte(&mut self, byte: u8) {
        match self.buf.get_mut(self.len) {
            Some(dst) => {
                *dst = byte;
                self.len += 1;
            }
            None => self.overflow = true,
        }
    }

    fn uvar(&mut self, mut value: u64) {
        while value >= 0x80 {
            // CAST: the low 7 bits, with the continuation bit.
            self.byte(value as u8 | 0x80);
            value >>= 7;
        }
        // CAST: below 0x80.
        self.byte(value as u8);
    }

    /// A value of up to 128 bits: below 2^64, the same bytes as [`Writer::uvar`].
    fn uvar_wide(&mut self, mut value: u128) {
        while value >= 0x80 {
            // CAST: the low 7 bits, with the continuation bit.
            self.byte(value as u8 | 0x80);
            value >>= 7;
        }
        // CAST: below 0x80.
        self.byte(value as u8);
    }

    /// A signed value, zigzag coded so that small magnitudes take few bytes.
    fn svar(&mut self, value: i64) {
        // CAST: zigzag coding reinterprets the bits.
        self.uvar(((value << 1) ^ (value >> 63)) as u64);
    }

    /// The distance from `from` to `to`, modulo 2^64.
    fn delta(&mut self, from: u64, to: u64) {
        // CAST: the difference modulo 2^64, read as signed.
        self.svar(to.wrapping_sub(from) as i64);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) => {
                copy_bytes(dst, bytes);
                self.len += bytes.len();
            }
            None => self.overflow = true,
        }
    }
}

/// Bytes being read from a slice.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let byte = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(byte)
    }

    fn uvar(&mut self) -> Option<u64> {
        let mut value = 0u64;
        let mut shift = 0;
        while shift < 64 {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
            shift += 7;
        }
        None
    }

    /// A value written by [`Writer::uvar_wide`].
    fn uvar_wide(&mut self) -> Option<u128> {
        let mut value = 0u128;
        let mut shift = 0;
        while shift < 128 {
            let byte = self.byte()?;
            value |= u128::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
            shift += 7;
        }
        None
    }

    fn svar(&mut self) -> Option<i64> {
        let value = self.uvar()?;
        // CAST: zigzag decoding reinterprets the bits.
        Some((value >> 1) as i64 ^ -((value & 1) as i64))
    }

    fn delta(&mut self, from: u64) -> Option<u64> {
        // CAST: the difference modulo 2^64, as written by `Writer::delta`.
        Some(from.wrapping_add(self.svar()? as u64))
    }

    fn i32(&mut self) -> Option<i32> {
        i32::try_from(self.svar()?).ok()
    }

    fn bytes(&mut self, len: usize) -> Option<&[u8]> {
        let bytes = self.buf.get(self.pos..self.pos + len)?;
        self.pos += len;
        Some(bytes)
    }
}

/// Writes the packed record of `event`, stamped `time_ns`, with the user call stack `stack`
/// (at most [`STACK_MAX`] entries), coded against `state`, into `out`, and moves `state` on
/// to it. Returns the record's size, or `None` if it did not fit in `out`; `state` is then
/// undefined, and the caller starts a new block.
pub(crate) fn encode(
    event: &Event,
    time_ns: u64,
    stack: &[u64],
    state: &mut State,
    out: &mut [u8],
) -> Option<usize> {
    let mut w = Writer {
        buf: out,
        len: 0,
        overflow: false,
    };
    let text = event.text();
    let stack = stack.get(..stack.len().min(STACK_MAX)).unwrap_or(&[]);
    let ids = (event.pid, event.tid) != (state.pid, state.tid);
    let mut tag = event.kind as u8 & TAG_KIND;
    if ids {
        tag |= TAG_IDS;
    }
    if event.kind != Kind::Fault && !text.is_empty() {
        tag |= TAG_TEXT;
    }
    // A stack shed whole has no entries but says so.
    let shed = event.stack_end == StackEnd::Shed;
    if !stack.is_empty() || shed {
        tag |= TAG_STACK;
    }
    w.byte(tag);
    w.uvar(time_ns.wrapping_sub(state.time_ns));
    state.time_ns = time_ns;
    if ids {
        w.svar(event.pid.into());
        w.svar(event.tid.into());
        state.pid = event.pid;
        state.tid = event.tid;
    }
    // Event flags use the low 8 bits, fault types the low 4.
    w.uvar((u64::from(event.flags & 0xff) << 4) | u64::from(event.fault_type as u8 & 0xf));
    if event.kind == Kind::Fault {
        w.delta(state.addr, event.args[0]);
        w.delta(state.ip, event.args[1]);
        w.uvar(event.args[2]);
        state.addr = event.args[0];
        state.ip = event.args[1];
    } else {
        // Only the arguments the kind's line shows (a syscall's other argument registers
        // hold whatever the caller left there). Zigzag: `-1` (no file, all bits) takes one
        // byte.
        for arg in event.args.iter().take(event.kind.args()) {
            // CAST: the argument's bits, read as signed.
            w.svar(*arg as i64);
        }
        w.svar(event.ret);
        if event.kind.is_syscall() {
            // Unless measured already, up to this stamp from the call's start (see
            // `Event::dur_ns`).
            w.uvar(if event.dur_ns != 0 {
                event.dur_ns
            } else {
                time_ns.saturating_sub(event.time_ns)
            });
        }
        if !text.is_empty() {
            let cut = u64::from(event.text_truncated) | (u64::from(event.text_head_cut) << 1);
            // CAST: a text holds at most TEXT_CAPACITY < 256 bytes.
            w.uvar(((text.len() as u64) << 2) | cut);
            w.bytes(text);
        }
    }
    if !stack.is_empty() || shed {
        // Its length and why it ends there (3 bits), then how many of its entries are Python
        // frames (7 bits) and why they end there (3 bits).
        let python = u64::from(event.python_frames) | (u64::from(event.python_end as u8) << 7);
        // CAST: at most STACK_MAX entries.
        w.uvar((python << 10) | ((stack.len() as u64) << 3) | u64::from(event.stack_end as u8));
        // One bit for each entry that differs from the previous record's at its depth, then
        // those entries only, as distances: in a storm from one place, two bytes in all.
        // The mask in two words: a `u128` bit per entry costs about 20 instructions more an
        // entry (`make bench`).
        let (mut low, mut high) = (0u64, 0u64);
        for (depth, entry) in stack.iter().enumerate().take(64) {
            if *entry != state.previous(depth) {
                low |= 1 << depth;
            }
        }
        for (depth, entry) in stack.iter().enumerate().skip(64) {
            if *entry != state.previous(depth) {
                high |= 1 << (depth - 64);
            }
        }
        w.uvar_wide((u128::from(high) << 64) | u128::from(low));
        // The entries that differ, found again (writing an entry changes only its own
        // depth's previous one).
        for (depth, entry) in stack.iter().enumerate() {
            let previous = state.previous(depth);
            if *entry != previous {
                w.delta(previous, *entry);
            }
            state.set_previous(depth, *entry);
        }
    }
    if w.overflow {
        None
    } else {
        Some(w.len)
    }
}

/// The time of the packed record at the start of `bytes`, coded against `state`.
pub(crate) fn time(bytes: &[u8], state: &State) -> Option<u64> {
    let mut r = Reader { buf: bytes, pos: 0 };
    r.byte()?;
    Some(state.time_ns.wrapping_add(r.uvar()?))
}

/// Decodes the packed record at the start of `bytes`, coded against `state`, into `event`
/// and `stack`, and moves `state` on to it. Returns the record's size and the number of
/// stack entries; `None` if it is not a valid record.
pub(crate) fn decode(
    bytes: &[u8],
    state: &mut State,
    event: &mut Event,
    stack: &mut [u64; STACK_MAX],
) -> Option<(usize, usize)> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let tag = r.byte()?;
    event.clear();
    event.kind = *Kind::ALL.get(usize::from(tag & TAG_KIND))?;
    state.time_ns = state.time_ns.wrapping_add(r.uvar()?);
    event.time_ns = state.time_ns;
    if tag & TAG_IDS != 0 {
        state.pid = r.i32()?;
        state.tid = r.i32()?;
    }
    event.pid = state.pid;
    event.tid = state.tid;
    let type_flags = r.uvar()?;
    // CAST: 4 bits.
    event.fault_type = FaultType::from_u8((type_flags & 0xf) as u8)?;
    // CAST: 8 bits.
    event.flags = ((type_flags >> 4) & 0xff) as u32;
    if event.kind == Kind::Fault {
        state.addr = r.delta(state.addr)?;
        state.ip = r.delta(state.ip)?;
        event.args[0] = state.addr;
        event.args[1] = state.ip;
        event.args[2] = r.uvar()?;
    } else {
        for arg in event.args.iter_mut().take(event.kind.args()) {
            // CAST: the bits written by `encode`.
            *arg = r.svar()? as u64;
        }
        event.ret = r.svar()?;
        if event.kind.is_syscall() {
            event.dur_ns = r.uvar()?;
        }
        if tag & TAG_TEXT != 0 {
            let len_cut = r.uvar()?;
            let len = usize::try_from(len_cut >> 2).ok()?;
            event.set_text(r.bytes(len)?);
            event.text_truncated = len_cut & 1 != 0;
            event.text_head_cut = len_cut & 2 != 0;
        }
    }
    let mut stack_len = 0;
    if tag & TAG_STACK != 0 {
        let len_end = r.uvar()?;
        // CAST: 3 bits.
        event.stack_end = *StackEnd::ALL.get((len_end & 7) as usize)?;
        stack_len = usize::try_from((len_end >> 3) & 0x7f).ok()?;
        // CAST: 7 bits.
        event.python_frames = ((len_end >> 10) & 0x7f) as u8;
        // CAST: 3 bits.
        event.python_end = *PythonEnd::ALL.get(((len_end >> 17) & 7) as usize)?;
        if stack_len > STACK_MAX
            || usize::from(event.python_frames) > stack_len
            || len_end >> 20 != 0
        {
            return None;
        }
        let changed = r.uvar_wide()?;
        // No bit for an entry beyond the stack's end.
        // CAST: at most STACK_MAX (127) entries.
        if changed.checked_shr(stack_len as u32).unwrap_or(0) != 0 {
            return None;
        }
        for (depth, entry) in stack.iter_mut().enumerate().take(stack_len) {
            let previous = state.previous(depth);
            *entry = if changed & (1 << depth) != 0 {
                r.delta(previous)?
            } else {
                previous
            };
            state.set_previous(depth, *entry);
        }
    }
    Some((r.pos, stack_len))
}
