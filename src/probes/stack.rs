// SPDX-License-Identifier: GPL-2.0

//! User call stacks: the module parameter `stack_depth` and a walk of the current task's user
//! stack that never sleeps and never faults. It follows the unwind tables that userspace
//! loaded for the process ([`crate::unwind`], docs/unwind.md) wherever they cover the pc, and
//! the frame pointer elsewhere.
//!
//! `stack_depth` (0 to [`STACK_MAX`], default 0: off) is also writable at run time by root
//! through `/sys/module/memmon/parameters/stack_depth`; other values are refused with
//! `EINVAL` and a kernel log line.

use crate::arch;
use crate::bindings;
use crate::kernel_ext::kcrate::{
    alloc::{flags::GFP_KERNEL, KVec},
    sync::atomic::{Acquire, Atomic, Release},
};
use crate::kernel_ext::preempt::without_preemption;
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::runtime_param::runtime_param;
use crate::kernel_ext::task::{current_task_size, current_user_regs};
use crate::probes::python::walk_python;
use crate::record::event::{Event, PythonEnd, StackEnd, PYTHON_MAX, STACK_MAX};
use crate::state::State;
use crate::unwind::format::{Row, Rule, Saves};
use crate::unwind::store::ProcessRanges;
use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;

runtime_param! {
    /// The current `stack_depth`.
    static STACK_DEPTH: u32 = 0;
    name: "stack_depth",
    description: "User stack entries per fault and syscall (0-127, 0: off)",
    check: check_stack_depth,
}

/// Accepts a `stack_depth` of 0 (off) to [`STACK_MAX`].
fn check_stack_depth(value: Option<u32>, text: &str) -> Result {
    match value {
        // CAST: u32 to usize is lossless on 64-bit.
        Some(value) if value as usize <= STACK_MAX => Ok(()),
        _ => {
            pr_err!(
                "stack_depth={} is not valid: it must be 0 (off) to {}\n",
                text,
                STACK_MAX
            );
            Err(EINVAL)
        }
    }
}

/// The `stack_depth` in force: how many entries to record, 0 for none.
pub(crate) fn depth() -> usize {
    // CAST: the value is at most STACK_MAX.
    STACK_DEPTH.load(Ordering::Relaxed) as usize
}

/// One CPU's buffer of [`WalkBuffers`].
struct WalkBuffer {
    /// Set while code on the buffer's CPU uses `frames`.
    busy: Atomic<bool>,
    frames: UnsafeCell<[MaybeUninit<u64>; STACK_MAX]>,
}

/// One buffer of [`STACK_MAX`] entries (1 016 bytes) per possible CPU for the stack walks:
/// too big for the kernel stack of a fault.
pub(crate) struct WalkBuffers {
    buffers: KVec<WalkBuffer>,
}

// SAFETY: A buffer's `frames` are only used by the code that set its `busy` flag, on the
// buffer's CPU with preemption disabled, until it clears the flag ([`WalkBuffers::with_current`]);
// the flag is atomic. (`Send` it is already: its parts are.)
unsafe impl Sync for WalkBuffers {}

impl WalkBuffers {
    /// A buffer for every possible CPU.
    pub(crate) fn new() -> Result<Self> {
        // CAST: u32 to usize is lossless on 64-bit.
        let ncpus = crate::kernel_ext::kcrate::cpu::nr_cpu_ids() as usize;
        let mut buffers = KVec::with_capacity(ncpus, GFP_KERNEL)?;
        for _ in 0..ncpus {
            buffers.push(
                WalkBuffer {
                    busy: Atomic::new(false),
                    frames: UnsafeCell::new([MaybeUninit::uninit(); STACK_MAX]),
                },
                GFP_KERNEL,
            )?;
        }
        Ok(Self { buffers })
    }

    /// Runs `f` with preemption disabled and the current CPU's buffer, its entries not
    /// cleared; `None` if code that this one interrupted on the CPU holds it (a walk does
    /// not nest in task context, so this is not expected), or it has none.
    fn with_current<R>(
        &self,
        f: impl FnOnce(Option<&mut [MaybeUninit<u64>; STACK_MAX]>) -> R,
    ) -> R {
        without_preemption(|| {
            // CAST: u32 to usize is lossless on 64-bit.
            let cpu = crate::kernel_ext::kcrate::cpu::CpuId::current().as_u32() as usize;
            let Some(buffer) = self.buffers.get(cpu) else {
                return f(None);
            };
            if buffer.busy.xchg(true, Acquire) {
                return f(None);
            }
            // SAFETY: This code set `busy` on the buffer's CPU, and cannot move to another
            // one before it clears it below: until then nothing else uses `frames` (code
            // that interrupts it finds `busy` set), and the reference does not outlive `f`.
            let frames = unsafe { &mut *buffer.frames.get() };
            let result = f(Some(frames));
            buffer.busy.store(false, Release);
            result
        })
    }
}

/// Pushes `event` to the ring with the current task's user stack, at most `stack_depth`
/// entries (fewer, or none, under the ring's [`crate::ring::Pressure`]): walked from `regs` (a fault from user mode), else from the registers of the
/// system call the task is in, with the unwind tables of the process where it has them.
/// The walk writes into the CPU's buffer ([`WalkBuffers`]) with preemption disabled, and
/// writes only the entries walked.
pub(crate) fn push_with_user_stack(
    state: &State,
    event: &mut Event,
    regs: Option<&bindings::pt_regs>,
) {
    // A reader behind: fewer entries, or none, before any event is lost (`stack_end=shed`).
    let wanted = depth();
    let allowed = state.ring.pressure().depth(wanted);
    // `wanted` is 0 when root turned stacks off since the caller looked: nothing was shed.
    if wanted == 0 {
        state.ring.push(event);
        return;
    }
    if allowed == 0 {
        event.stack_end = StackEnd::Shed;
        state.ring.push(event);
        return;
    }
    let regs = match regs {
        Some(regs) => Some(regs),
        None => current_user_regs(),
    };
    state.walks.with_current(|frames| {
        let Some(frames) = frames else {
            event.stack_end = StackEnd::Shed;
            state.ring.push(event);
            return;
        };
        let (count, end, python, python_end) = match regs {
            Some(regs) => state
                .unwind
                .with_current(|ranges| walk_both(regs, allowed, frames, ranges)),
            None => (0, StackEnd::Complete, 0, PythonEnd::Complete),
        };
        event.stack_end = if end == StackEnd::Depth && allowed < wanted {
            StackEnd::Shed
        } else {
            end
        };
        // CAST: at most PYTHON_MAX.
        event.python_frames = python as u8;
        event.python_end = python_end;
        // SAFETY: `walk_both` initialised the first `count <= STACK_MAX` entries.
        let frames = unsafe { core::slice::from_raw_parts(frames.as_ptr().cast::<u64>(), count) };
        state.ring.push_with_stack(event, frames);
    });
}

/// Writes into `out` the native stack of `regs` ([`walk_user`], at most `depth` entries)
/// followed by the Python frames of the current thread when its process's interpreter was
/// described ([`walk_python`]); the Python frames take their room first, the native ones
/// what is left of [`STACK_MAX`]. Returns the entries initialised at the start of `out`,
/// why the native stack ends, how many of the entries are Python frames, and why those end.
fn walk_both(
    regs: &bindings::pt_regs,
    depth: usize,
    out: &mut [MaybeUninit<u64>; STACK_MAX],
    ranges: Option<&ProcessRanges>,
) -> (usize, StackEnd, usize, PythonEnd) {
    let Some(spec) = ranges.and_then(ProcessRanges::python).filter(|_| depth > 0) else {
        let (count, end) = walk_user(regs, depth, out, ranges);
        return (count, end, 0, PythonEnd::Complete);
    };
    // The Python frames are walked into the end of `out`, then moved to follow the native
    // entries, which the walk keeps below them.
    let tail = STACK_MAX - PYTHON_MAX;
    let (python, python_end) = match out.get_mut(tail..) {
        Some(room) => walk_python(spec, current_task_size(), room),
        None => (0, PythonEnd::Depth),
    };
    // To the very end, out of the native walk's way.
    let kept = STACK_MAX - python;
    out.copy_within(tail..tail + python, kept);
    let (count, end) = walk_user(regs, depth.min(kept), out, ranges);
    if count == 0 {
        return (0, end, 0, PythonEnd::Complete);
    }
    // `count <= kept`: the Python entries fit right after the native ones.
    out.copy_within(kept..STACK_MAX, count);
    (count + python, end, python, python_end)
}

/// The registers a frame is unwound from.
#[derive(Clone, Copy)]
struct Frame {
    ip: u64,
    sp: u64,
    /// The frame pointer: RBP on x86_64, X29 on arm64.
    bp: u64,
    /// The link register (arm64's X30), known in the innermost frame only: where the return
    /// address is while a row says it was not saved (a leaf, a prologue, an epilogue).
    lr: Option<u64>,
}

/// What every step of one walk checks against.
struct Bounds {
    /// The innermost frame's RSP (the vsyscall's, above an emulated vsyscall's caller):
    /// callers' frames lie above it.
    stack_start: u64,
    /// The end of the task's user address space (`TASK_SIZE`), exclusive: a return address,
    /// frame pointer or CFA at or above it is not user memory of the task, and ends the walk.
    user_end: u64,
}

impl Bounds {
    /// Whether the `len` bytes at `addr` lie in the task's user address space.
    fn holds(&self, addr: u64, len: u64) -> bool {
        addr.checked_add(len)
            .is_some_and(|end| end <= self.user_end)
    }
}

/// Writes into `out` the user stack of `regs`, innermost first: the instruction pointer,
/// then the return addresses found with the process's unwind tables (`ranges`) where they
/// cover the frame, by its frame pointer elsewhere; at most `depth` entries (and at most
/// [`STACK_MAX`]). Never goes past a frame it cannot read or trust. Returns the number of
/// entries, which it initialised at the start of `out`, and why the stack ends there: at the
/// first return address outside the task's user address space (`TASK_SIZE`) it stops, as it
/// does at one it cannot read (`unreadable`), and it reads no frame there. In a system call
/// the kernel emulates for a call into the vsyscall page, the stack starts at the caller's
/// return address: every entry is a user address.
/// Callable in atomic context: it takes no lock and reads user memory with page faults
/// disabled; it takes at most `depth` steps, each at most two binary searches and two reads.
fn walk_user(
    regs: &bindings::pt_regs,
    depth: usize,
    out: &mut [MaybeUninit<u64>; STACK_MAX],
    ranges: Option<&ProcessRanges>,
) -> (usize, StackEnd) {
    let depth = depth.min(STACK_MAX);
    if depth == 0 {
        return (0, StackEnd::Complete);
    }
    let user = arch::user_frame(regs);
    let mut frame = Frame {
        ip: user.pc,
        sp: user.sp,
        bp: user.fp,
        lr: user.lr,
    };
    let bounds = Bounds {
        stack_start: frame.sp,
        user_end: current_task_size(),
    };
    // A fault in a system call the kernel emulates for a call into the vsyscall page
    // (x86_64's: [`arch::emulated_call_entry`]): the task is at the vsyscall's first
    // instruction. The stack starts at its caller, as it would after the vsyscall's emulated
    // `ret`, and its innermost entry is then a return address.
    let in_vsyscall = match arch::emulated_call_entry(frame.ip) {
        Some(entry) => {
            frame = match table_step(&frame, entry, &bounds) {
                Ok(Some(caller)) => caller,
                Ok(None) | Err(_) => return (0, StackEnd::Unreadable),
            };
            true
        }
        None => false,
    };
    // Code runs only at user addresses, but a saved pc is what the task made of it.
    if frame.ip >= bounds.user_end {
        return (0, StackEnd::Unreadable);
    }
    out[0].write(frame.ip);
    let mut count = 1;
    // A task whose frames the walk cannot follow (arm64's AArch32 tasks): its pc alone.
    if !user.walkable {
        return (count, StackEnd::Unsupported);
    }
    // The range the previous frame's pc was found in: tried first for the next.
    let mut near = 0;
    loop {
        // Above the innermost frame the pc is a return address, which may lie past the end of
        // the calling function (a call to a function that does not return): look up the call.
        let pc = if count == 1 && !in_vsyscall {
            frame.ip
        } else {
            frame.ip.wrapping_sub(1)
        };
        let caller = match step(&frame, pc, ranges, &mut near, &bounds) {
            Ok(Some(caller)) => caller,
            Ok(None) => return (count, StackEnd::Complete),
            Err(end) => return (count, end),
        };
        let Some(slot) = out.get_mut(count).filter(|_| count < depth) else {
            return (count, StackEnd::Depth);
        };
        slot.write(caller.ip);
        count += 1;
        frame = caller;
    }
}

/// The caller's frame of `frame`, whose pc is `pc`; `None` at the outermost frame.
/// `near` is the range to look `pc` up in first ([`ProcessRanges::row`]).
fn step(
    frame: &Frame,
    pc: u64,
    ranges: Option<&ProcessRanges>,
    near: &mut usize,
    bounds: &Bounds,
) -> Result<Option<Frame>, StackEnd> {
    let row = ranges.and_then(|ranges| ranges.row(pc, near));
    match row.map(|row| (row, row.rule())) {
        Some((row, Rule::Sp | Rule::Fp)) if followable(&row, frame) => {
            table_step(frame, row, bounds)
        }
        Some((_, Rule::Outermost)) => Ok(None),
        Some((_, Rule::Sp | Rule::Fp | Rule::NotFollowable)) => {
            frame_pointer_step(frame, bounds, StackEnd::Unsupported)
        }
        _ => frame_pointer_step(frame, bounds, StackEnd::NoTable),
    }
}

/// Whether a row whose CFA is the stack or the frame pointer plus an offset can be followed
/// from `frame`: its return address saved, or still in the link register (arm64's X30) and
/// the frame pointer unchanged in the innermost frame, the one frame whose link register the
/// walk has (above it, such a row is one the walker cannot follow).
fn followable(row: &Row, frame: &Frame) -> bool {
    let saves = arch::UNWIND_ARCH.saves(row);
    saves.ra != 0 || (saves.fp == 0 && frame.lr.is_some())
}

/// Reads `N` words of user memory at `addr`, with page faults disabled; `None` where they are
/// not all user memory that is mapped and readable.
fn read_user<const N: usize>(addr: u64) -> Option<[u64; N]> {
    let mut words = [0u64; N];
    // SAFETY: `words` is valid for `8 * N` bytes of writes; `copy_from_user_nofault` checks the
    // user range and reads it with page faults disabled, failing instead of faulting.
    let ret = unsafe {
        bindings::copy_from_user_nofault(
            words.as_mut_ptr().cast(),
            addr as *const c_void,
            core::mem::size_of_val(&words),
        )
    };
    (ret == 0).then_some(words)
}

/// A step by a table row whose CFA is the stack or the frame pointer plus an offset: the
/// return address and the saved frame pointer where the row says ([`arch::UNWIND_ARCH`]'s
/// [`Saves`]: x86_64's return address at CFA - 8, arm64's saved or still in X30), and the
/// caller's stack pointer is the CFA. A signed return address (arm64's pointer
/// authentication) is stripped of its code.
fn table_step(frame: &Frame, row: Row, bounds: &Bounds) -> Result<Option<Frame>, StackEnd> {
    let base = if row.rule() == Rule::Sp {
        frame.sp
    } else {
        frame.bp
    };
    let Saves { fp, ra } = arch::UNWIND_ARCH.saves(&row);
    let cfa = base
        .checked_add(u64::from(row.cfa))
        .ok_or(StackEnd::Unreadable)?;
    // The caller's frame lies above this one's: the CFA, and the return address when it was
    // saved, at or above the stack pointer, and in the task's user address space. A slot is
    // at CFA - 1024 at the lowest.
    let lowest = if ra == 0 { cfa } else { slot_at(cfa, ra)? };
    if lowest < frame.sp || cfa < frame.sp || !bounds.holds(cfa, 0) {
        return Err(StackEnd::Unreadable);
    }
    let read_slot = |slot: i8| -> Result<u64, StackEnd> {
        let at = slot_at(cfa, slot)?;
        if !bounds.holds(at, 8) {
            return Err(StackEnd::Unreadable);
        }
        Ok(read_user::<1>(at).ok_or(StackEnd::Unreadable)?[0])
    };
    let (word, bp) = match (ra, fp) {
        // Still in the link register: known in the innermost frame only ([`followable`]).
        (0, 0) => (frame.lr.ok_or(StackEnd::Unsupported)?, frame.bp),
        (0, _) => return Err(StackEnd::Unsupported),
        (ra, 0) => (read_slot(ra)?, frame.bp),
        // The frame pointer saved just below the return address, as x86_64's `push rbp` and
        // arm64's `stp x29, x30` leave them: one read.
        (ra, fp) if fp == ra.wrapping_sub(1) => {
            let at = slot_at(cfa, fp)?;
            if !bounds.holds(at, 16) {
                return Err(StackEnd::Unreadable);
            }
            let [bp, word] = read_user::<2>(at).ok_or(StackEnd::Unreadable)?;
            (word, bp)
        }
        (ra, fp) => (read_slot(ra)?, read_slot(fp)?),
    };
    // Stripped of any pointer authentication code whether or not the row says it is signed,
    // as the frame-pointer step does and as the kernel's `ptrauth_strip_user_insn_pac()`
    // does (the address itself on x86_64).
    let ret_addr = arch::user_return_address(word, bounds.user_end);
    if ret_addr == 0 {
        // A zero return address ends a stack whose outermost frame has no table row saying so.
        return Ok(None);
    }
    if ret_addr >= bounds.user_end {
        return Err(StackEnd::Unreadable);
    }
    Ok(Some(Frame {
        ip: ret_addr,
        sp: cfa,
        bp,
        lr: None,
    }))
}

/// The address of a row's slot (negative, in words) below the CFA: `Unreadable` where it
/// would wrap below 0.
fn slot_at(cfa: u64, slot: i8) -> Result<u64, StackEnd> {
    cfa.checked_add_signed(i64::from(slot) * 8)
        .ok_or(StackEnd::Unreadable)
}

/// A step by the frame pointer: RBP points at the saved RBP, the return address above it (on
/// arm64 the same: X29 points at the frame record, the saved X29 then the saved X30).
/// `broken` is the reason given when the frame pointer does not lead to a caller.
fn frame_pointer_step(
    frame: &Frame,
    bounds: &Bounds,
    broken: StackEnd,
) -> Result<Option<Frame>, StackEnd> {
    let fp = frame.bp;
    if fp == 0 {
        // The outermost frame clears RBP (`_start`, thread start routines).
        return Ok(None);
    }
    // Callers' frames lie higher on the stack: a frame pointer that does not point there is
    // not one (code built without frame pointers uses RBP for data).
    if fp % 8 != 0 || fp < frame.sp || !bounds.holds(fp, 16) {
        return Err(broken);
    }
    let [next, ret_addr] = read_user::<2>(fp).ok_or(broken)?;
    // arm64: the saved return address may be signed (pointer authentication).
    let ret_addr = arch::user_return_address(ret_addr, bounds.user_end);
    // A return address points into code: one that points into the stack being walked
    // (between the stack pointer and this frame) is a frame pointer chain through code built
    // without frame pointers, where RBP held something else.
    let in_stack = (bounds.stack_start..=fp.saturating_add(4096)).contains(&ret_addr);
    if ret_addr == 0 || in_stack {
        return Err(broken);
    }
    // One outside the task's user space is not a return address at all.
    if ret_addr >= bounds.user_end {
        return Err(StackEnd::Unreadable);
    }
    Ok(Some(Frame {
        ip: ret_addr,
        sp: fp + 16,
        bp: next,
        lr: None,
    }))
}
