// SPDX-License-Identifier: GPL-2.0

//! The staged form of an [`Event`]: what a reader copies out of a ring (where events are
//! [`crate::packed`]) to merge the rings by time and format lines without holding a lock.
//!
//! Every record starts with a [`Header`] of 24 bytes, which gives its time and size; a fault
//! adds 24 bytes (48 in all), every other kind 64 bytes of arguments, result and duration,
//! then its text (a path, a marker, a file name) only when it has one, then its user call
//! stack (8 bytes an entry) only when it has one. Records are padded to a multiple of 8
//! bytes.

use crate::event::{Event, FaultType, Kind, TEXT_CAPACITY};
use crate::stack::STACK_MAX;
use core::mem::size_of;

/// Size of the largest record.
pub(crate) const RECORD_MAX: usize = BODY_MAX + 8 * STACK_MAX;

/// Size of the largest record without its stack: what a producer encodes on its stack (the
/// stack entries are copied into the ring from where they were walked).
pub(crate) const BODY_MAX: usize = size_of::<Header>() + size_of::<CallBody>() + TEXT_CAPACITY;

/// What every record starts with.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Header {
    /// CLOCK_MONOTONIC, nanoseconds: when the record was written.
    pub(crate) time_ns: u64,
    pid: i32,
    tid: i32,
    /// Bytes of the whole record, a multiple of 8.
    pub(crate) size: u16,
    kind: u8,
    fault_type: u8,
    flags: u8,
    stack_len: u8,
    text_len: u8,
    text_truncated: u8,
}

/// The body of a fault record.
#[repr(C)]
#[derive(Clone, Copy)]
struct FaultBody {
    addr: u64,
    ip: u64,
    pages: u64,
}

/// The body of every other record; `text_len` bytes of text follow.
#[repr(C)]
#[derive(Clone, Copy)]
struct CallBody {
    args: [u64; 6],
    ret: i64,
    dur_ns: u64,
}

const HEADER: usize = size_of::<Header>();
const _: () = assert!(HEADER == 24 && HEADER + size_of::<FaultBody>() == 48);
const _: () = assert!(RECORD_MAX % 8 == 0 && RECORD_MAX <= u16::MAX as usize);

fn put<T: Copy>(out: &mut [u8; BODY_MAX], offset: usize, value: &T) {
    if let Some(dst) = out.get_mut(offset..offset + size_of::<T>()) {
        // SAFETY: `dst` has room for a `T`; `T` is plain data, written unaligned.
        unsafe { dst.as_mut_ptr().cast::<T>().write_unaligned(*value) };
    }
}

fn get<T: Copy>(bytes: &[u8], offset: usize) -> Option<T> {
    let src = bytes.get(offset..offset + size_of::<T>())?;
    // SAFETY: `src` holds `size_of::<T>()` bytes written by `put` from a `T`; the types read
    // here are plain data valid for any bit pattern.
    Some(unsafe { src.as_ptr().cast::<T>().read_unaligned() })
}

/// Writes into `out` the record of `event` but for its user call stack of `stack_len`
/// entries (at most [`STACK_MAX`]), which follow it in the ring, 8 bytes each; returns the
/// size written and the size of the whole record.
pub(crate) fn encode(event: &Event, stack_len: usize, out: &mut [u8; BODY_MAX]) -> (usize, usize) {
    let text = event.text();
    let stack_len = stack_len.min(STACK_MAX);
    let body_end = if event.kind == Kind::Fault {
        HEADER + size_of::<FaultBody>()
    } else {
        (HEADER + size_of::<CallBody>() + text.len()).next_multiple_of(8)
    };
    let size = body_end + 8 * stack_len;
    let header = Header {
        time_ns: event.time_ns,
        pid: event.pid,
        tid: event.tid,
        // CAST: `size <= RECORD_MAX`, which fits a u16 (asserted above).
        size: size as u16,
        kind: event.kind as u8,
        fault_type: event.fault_type as u8,
        // CAST: event flags use the low 8 bits.
        flags: event.flags as u8,
        // CAST: at most STACK_MAX entries.
        stack_len: stack_len as u8,
        // CAST: a text holds at most TEXT_CAPACITY < 256 bytes.
        text_len: text.len() as u8,
        text_truncated: u8::from(event.text_truncated) | (u8::from(event.text_head_cut) << 1),
    };
    put(out, 0, &header);
    if event.kind == Kind::Fault {
        let body = FaultBody {
            addr: event.args[0],
            ip: event.args[1],
            pages: event.args[2],
        };
        put(out, HEADER, &body);
    } else {
        let body = CallBody {
            args: event.args,
            ret: event.ret,
            dur_ns: event.dur_ns,
        };
        put(out, HEADER, &body);
        let start = HEADER + size_of::<CallBody>();
        if let Some(dst) = out.get_mut(start..start + text.len()) {
            dst.copy_from_slice(text);
        }
    }
    (body_end, size)
}

/// The header of the record that `bytes` starts with.
pub(crate) fn header(bytes: &[u8]) -> Option<Header> {
    get::<Header>(bytes, 0)
}

/// The event of the record in `bytes` and the number of its stack entries, which are stored
/// in `stack`; `None` if it is not a valid record.
pub(crate) fn decode(bytes: &[u8], stack: &mut [u64; STACK_MAX]) -> Option<(Event, usize)> {
    let header = header(bytes)?;
    let mut event = Event::zeroed();
    event.time_ns = header.time_ns;
    event.pid = header.pid;
    event.tid = header.tid;
    event.kind = *Kind::ALL.get(usize::from(header.kind))?;
    event.fault_type = FaultType::from_u8(header.fault_type)?;
    event.flags = u32::from(header.flags);
    if event.kind == Kind::Fault {
        let body = get::<FaultBody>(bytes, HEADER)?;
        event.args[0] = body.addr;
        event.args[1] = body.ip;
        event.args[2] = body.pages;
    } else {
        let body = get::<CallBody>(bytes, HEADER)?;
        event.args = body.args;
        event.ret = body.ret;
        event.dur_ns = body.dur_ns;
        let start = HEADER + size_of::<CallBody>();
        let text = bytes.get(start..start + usize::from(header.text_len))?;
        event.set_text(text);
        event.text_truncated = header.text_truncated & 1 != 0;
        event.text_head_cut = header.text_truncated & 2 != 0;
    }
    let stack_len = usize::from(header.stack_len).min(STACK_MAX);
    let body_end = usize::from(header.size).checked_sub(8 * stack_len)?;
    for (i, entry) in stack.iter_mut().take(stack_len).enumerate() {
        *entry = get::<u64>(bytes, body_end + 8 * i)?;
    }
    Some((event, stack_len))
}
