// SPDX-License-Identifier: GPL-2.0

//! Python frames: a walk of the current thread's CPython interpreter frames, beside its native
//! stack, for a process whose interpreter userspace described (`SET_PYTHON`,
//! docs/unwind.md). Like the native walk it never sleeps and never faults: it takes no lock,
//! reads user memory with page faults disabled, and takes a bounded number of steps.

use crate::kernel_ext::task::{
    current_tid_in_own_ns, current_user_fsbase, read_user_nofault, read_user_words_nofault,
};
use crate::record::event::{PythonEnd, PythonFrame, PYTHON_MAX};
use crate::unwind::format::{
    PythonSpec, ThreadList, ThreadStateAt, PYTHON_ADDRESS_LIMIT, PYTHON_NO_OFFSET,
};
use core::mem::MaybeUninit;

/// Most frames stepped over without being recorded (3.12 and later: the eval loop's entry
/// frames on the C stack) in one walk, beyond those recorded.
const SKIPPED_MAX: usize = PYTHON_MAX;

/// Most interpreters and thread states looked at, together, in the thread lists for the
/// current thread's thread state (a description of kind 3).
const THREADS_MAX: usize = 256;

/// Bytes of bytecode past a code object's first instruction within which a frame's
/// instruction pointer must lie (16 MiB: any real code object's).
const INSTRUCTIONS_MAX: u64 = 1 << 24;

/// Whether `instr`, a frame's instruction pointer, lies in the bytecode of the code object
/// whose first instruction is at `first`: at most [`INSTRUCTIONS_MAX`] bytes past it, or one
/// code unit before it (3.11 and 3.12's `prev_instr` before the frame's first instruction),
/// an even number of bytes from it.
fn is_in_code(instr: u64, first: u64) -> bool {
    // Code units are 2 bytes: an odd distance from the first is no instruction's.
    instr.wrapping_sub(first.wrapping_sub(2)) < INSTRUCTIONS_MAX + 2 && (instr ^ first) & 1 == 0
}

/// Reads the 8-byte word at user address `addr`; `None` if it is not 8-aligned user memory
/// below `limit` that is mapped and readable.
fn read_word(addr: u64, limit: u64) -> Option<u64> {
    if addr % 8 != 0 || addr.checked_add(8).is_none_or(|end| end > limit) {
        return None;
    }
    let mut word = [0u8; 8];
    read_user_nofault(addr, &mut word).then(|| u64::from_le_bytes(word))
}

/// The byte at `offset` of a structure, out of the 8-byte word read at `offset & !7`.
fn byte_of(word: u64, offset: u16) -> u8 {
    // CAST: the low byte after the shift, taken on purpose.
    (word >> (8 * (offset % 8))) as u8
}

/// Whether `addr` may be the address of a structure: 8-aligned, below `limit`.
fn is_pointer(addr: u64, limit: u64) -> bool {
    addr % 8 == 0 && addr < limit
}

/// The current thread's innermost interpreter frame, from its thread state in the
/// interpreters' thread lists: the one whose native thread id (`gettid()`) is the current
/// task's id in its pid namespace. It holds the GIL or not: a thread that released it around
/// C code keeps its state, and its innermost frame, in the list. One id may name several
/// states (a new thread's state carries its creator's id until the thread runs; a state
/// unbound but not yet deleted keeps its old one): the first with a frame is the thread's,
/// else a matching state without one gives none (0). At most [`THREADS_MAX`] interpreters
/// and thread states are looked at (the lists change under the walk, which takes no lock: a
/// walk that runs into a state being freed reads garbage, which the first frame's type check
/// or the instruction pointer check ends, or ends on the bound).
fn listed_innermost_frame(
    spec: &PythonSpec,
    list: &ThreadList,
    limit: u64,
) -> Result<u64, PythonEnd> {
    let tid = u64::try_from(current_tid_in_own_ns()).map_err(|_| PythonEnd::NoThread)?;
    if tid == 0 {
        // No id in the task's own namespace; a state not bound yet has 0 too.
        return Err(PythonEnd::NoThread);
    }
    let mut matched = false;
    let mut steps = 0;
    let mut interp = read_word(list.head, limit).ok_or(PythonEnd::Unreadable)?;
    while interp != 0 {
        steps += 1;
        if steps > THREADS_MAX {
            return Err(PythonEnd::Depth);
        }
        if !is_pointer(interp, limit) {
            return Err(PythonEnd::Invalid);
        }
        // No overflow: `interp` is below 2^47, the offsets at most 65528.
        let mut thread = read_word(interp + u64::from(list.interp_threads), limit)
            .ok_or(PythonEnd::Unreadable)?;
        while thread != 0 {
            steps += 1;
            if steps > THREADS_MAX {
                return Err(PythonEnd::Depth);
            }
            if !is_pointer(thread, limit) {
                return Err(PythonEnd::Invalid);
            }
            let id = read_word(thread + u64::from(list.thread_native_id), limit)
                .ok_or(PythonEnd::Unreadable)?;
            if id == tid {
                match frame_of(spec, thread, limit) {
                    Ok(frame) if frame != 0 => return Ok(frame),
                    _ => matched = true,
                }
            }
            thread = read_word(thread + u64::from(list.thread_next), limit)
                .ok_or(PythonEnd::Unreadable)?;
        }
        interp =
            read_word(interp + u64::from(list.interp_next), limit).ok_or(PythonEnd::Unreadable)?;
    }
    if matched {
        Ok(0)
    } else {
        Err(PythonEnd::NoThread)
    }
}

/// The current thread's innermost interpreter frame, or why there is none.
fn innermost_frame(spec: &PythonSpec, limit: u64) -> Result<u64, PythonEnd> {
    let thread_state = match spec.thread_state {
        ThreadStateAt::List(list) => return listed_innermost_frame(spec, &list, limit),
        ThreadStateAt::Global(addr) => pointed_thread_state(spec, addr, limit)?,
        ThreadStateAt::ThreadLocal(offset) => {
            let at = current_user_fsbase().wrapping_add_signed(offset);
            pointed_thread_state(spec, at, limit)?
        }
    };
    frame_of(spec, thread_state, limit)
}

/// The thread state a pointer at `at` points to (a global or a thread-local one), if it is
/// the current thread's.
fn pointed_thread_state(spec: &PythonSpec, at: u64, limit: u64) -> Result<u64, PythonEnd> {
    let thread_state = read_word(at, limit).ok_or(PythonEnd::Unreadable)?;
    if thread_state == 0 {
        return Err(PythonEnd::NoThread);
    }
    if !is_pointer(thread_state, limit) {
        return Err(PythonEnd::Invalid);
    }
    if spec.thread_id != PYTHON_NO_OFFSET {
        // 3.11's global thread state is the GIL holder's: this thread's only if its id
        // (`pthread_self()`, the thread pointer) is this thread's.
        let id = read_word(thread_state + u64::from(spec.thread_id), limit)
            .ok_or(PythonEnd::Unreadable)?;
        if id != current_user_fsbase() {
            return Err(PythonEnd::NoThread);
        }
    }
    Ok(thread_state)
}

/// The innermost interpreter frame of the thread state at `thread_state` (8-aligned, below
/// `limit`).
fn frame_of(spec: &PythonSpec, thread_state: u64, limit: u64) -> Result<u64, PythonEnd> {
    let link =
        read_word(thread_state + u64::from(spec.frame_link), limit).ok_or(PythonEnd::Unreadable)?;
    if spec.frame_link2 == PYTHON_NO_OFFSET {
        return Ok(link);
    }
    if link == 0 {
        return Err(PythonEnd::NoThread);
    }
    if link % 8 != 0 || link >= limit {
        return Err(PythonEnd::Invalid);
    }
    read_word(link + u64::from(spec.frame_link2), limit).ok_or(PythonEnd::Unreadable)
}

/// Writes into `out` the current thread's Python frames, innermost first, at most
/// `out.len()` of them (and at most [`PYTHON_MAX`]), each a [`PythonFrame`] packed; `user_end` is the end of
/// the task's user address space. Returns how many it initialised at the start of `out` and
/// why they end there. A first frame whose code is no code object (`spec.code_type`), or a
/// frame whose instruction pointer is not in its code's bytecode, ends the walk (`invalid`):
/// wrong offsets, or garbage frames, give a short walk, never a read outside user space.
/// Callable in atomic context: no lock, page faults disabled, at most [`THREADS_MAX`]
/// interpreters and thread states (two reads each) to find the thread's, then at most
/// [`PYTHON_MAX`] + [`SKIPPED_MAX`] frames, each four words read in one user access section,
/// and one read of the first code object's type.
pub(crate) fn walk_python(
    spec: &PythonSpec,
    user_end: u64,
    out: &mut [MaybeUninit<u64>],
) -> (usize, PythonEnd) {
    let limit = user_end.min(PYTHON_ADDRESS_LIMIT);
    let max = out.len().min(PYTHON_MAX);
    let mut frame = match innermost_frame(spec, limit) {
        Ok(frame) => frame,
        Err(end) => return (0, end),
    };
    let mut count = 0;
    let mut skipped = 0;
    // The words of a frame the walk uses, each read with one load: the previous frame, the
    // code object, the instruction pointer, and the word holding the frame's owner (3.12 and
    // later) or its entry flag (3.11). `check_python` made them 8-aligned (the two bytes'
    // words by `& !7`) and within `frame_bytes`, which is 8-aligned.
    // Exactly one of the two is given (`check_python`): the owner with `owner_cstack`, the
    // entry flag with `frame_is_entry`, each tested below by its own field.
    let flag_byte = if spec.owner_cstack != 0xff {
        spec.frame_owner
    } else {
        spec.frame_is_entry
    };
    let offsets = [
        spec.frame_previous,
        spec.frame_code,
        spec.frame_instr,
        flag_byte & !7,
    ];
    let mut words = [0u64; 4];
    loop {
        if frame == 0 {
            return (count, PythonEnd::Complete);
        }
        if count >= max {
            return (count, PythonEnd::Depth);
        }
        let end = frame.checked_add(u64::from(spec.frame_bytes));
        if frame % 8 != 0 || end.is_none_or(|end| end > limit) {
            return (count, PythonEnd::Invalid);
        }
        if !read_user_words_nofault(frame, u64::from(spec.frame_bytes), &offsets, &mut words) {
            return (count, PythonEnd::Unreadable);
        }
        let [previous, code, instr, flags] = words;
        let flag = byte_of(flags, flag_byte);
        if spec.owner_cstack != 0xff && flag == spec.owner_cstack {
            // The eval loop's entry frame (3.12 and later): the frame recorded last is the
            // outermost of the run it entered.
            if let Some(last) = count.checked_sub(1).and_then(|at| out.get_mut(at)) {
                // SAFETY: the first `count` entries were written below.
                let mut last_frame = PythonFrame::unpack(unsafe { last.assume_init() });
                last_frame.entry = true;
                last.write(last_frame.pack());
            }
            skipped += 1;
            if skipped > SKIPPED_MAX {
                return (count, PythonEnd::Depth);
            }
            frame = previous;
            continue;
        }
        // The frame's code: the first recorded must be of type `PyCode_Type` (a read of
        // its type), which wrong offsets fail; every frame's instruction pointer must lie
        // in its code's bytecode, which garbage frames fail (no read: a frame's four words
        // are the walk's only reads past the first frame).
        if code == 0 || !is_pointer(code, limit) {
            return (count, PythonEnd::Invalid);
        }
        if count == 0 {
            match read_word(code + 8, limit) {
                Some(code_type) if code_type == spec.code_type => {}
                _ => return (count, PythonEnd::Invalid),
            }
        }
        let first = code.wrapping_add(u64::from(spec.code_start));
        if !is_in_code(instr, first) {
            return (count, PythonEnd::Invalid);
        }
        // One code unit before the first (a frame that has not run its first instruction
        // yet, 3.11 and 3.12) is at the first: offset 0.
        let units = instr.saturating_sub(first) / 2;
        let offset = u16::try_from(units)
            .ok()
            .filter(|&units| units < PythonFrame::OFFSET_UNKNOWN)
            .unwrap_or(PythonFrame::OFFSET_UNKNOWN);
        let entry = spec.frame_is_entry != PYTHON_NO_OFFSET && flag != 0;
        let Some(slot) = out.get_mut(count) else {
            return (count, PythonEnd::Depth);
        };
        slot.write(
            PythonFrame {
                code,
                offset,
                entry,
            }
            .pack(),
        );
        count += 1;
        frame = previous;
    }
}
