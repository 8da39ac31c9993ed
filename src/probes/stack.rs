// SPDX-License-Identifier: GPL-2.0

//! User call stacks: the module parameter `stack_depth` and a frame-pointer walk of the
//! current task's user stack that never sleeps and never faults.
//!
//! `stack_depth` (0 to [`STACK_MAX`], default 0: off) is also writable at run time by root
//! through `/sys/module/memmon/parameters/stack_depth`; other values are refused with
//! `EINVAL` and a kernel log line.

use crate::kernel_ext::runtime_param::runtime_param;
use crate::kernel_ext::task::current_user_regs;
use crate::record::event::{Event, STACK_MAX};
use crate::ring::Ring;
use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;
use kernel::{bindings, prelude::*};

runtime_param! {
    /// The current `stack_depth`.
    static STACK_DEPTH: u32 = 0;
    name: "stack_depth",
    description: "User stack entries per fault and syscall (0-64, 0: off)",
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

/// Highest user address plus one on x86_64 (4-level paging; 5-level tables only add more).
const USER_LIMIT: u64 = 1 << 56;

/// Pushes `event` to `ring` with the current task's user stack, at most `stack_depth`
/// entries: walked from `regs` (a fault from user mode), else from the registers of the
/// system call the task is in. Not inlined, so that its 512-byte buffer takes stack space
/// only when stacks are on; the buffer is not cleared, only the entries walked are written.
#[inline(never)]
pub(crate) fn push_with_user_stack(ring: &Ring, event: &Event, regs: Option<&bindings::pt_regs>) {
    let mut frames = [MaybeUninit::<u64>::uninit(); STACK_MAX];
    let regs = match regs {
        Some(regs) => Some(regs),
        None => current_user_regs(),
    };
    let count = regs.map_or(0, |regs| walk_user(regs, depth(), &mut frames));
    // SAFETY: `walk_user` initialised the first `count <= STACK_MAX` entries.
    let frames = unsafe { core::slice::from_raw_parts(frames.as_ptr().cast::<u64>(), count) };
    ring.push_with_stack(event, frames);
}

/// Writes into `out` the user stack of `regs`, innermost first: the instruction pointer,
/// then the return addresses found by following the frame pointers, at most `depth` entries
/// (and at most [`STACK_MAX`]). Stops early, never past a frame it cannot read or trust.
/// Returns the number of entries, which it initialised at the start of `out`. Callable in
/// atomic context: it reads user memory with page faults disabled.
fn walk_user(
    regs: &bindings::pt_regs,
    depth: usize,
    out: &mut [MaybeUninit<u64>; STACK_MAX],
) -> usize {
    let depth = depth.min(STACK_MAX);
    if depth == 0 {
        return 0;
    }
    // CAST: registers are 64 bits wide on x86_64.
    out[0].write(regs.ip as u64);
    let mut count = 1;
    let mut frame = regs.bp as u64;
    while count < depth {
        if frame == 0 || frame % 8 != 0 || frame >= USER_LIMIT - 16 {
            break;
        }
        let mut words = [0u64; 2];
        // SAFETY: `words` is valid for 16 bytes of writes; `copy_from_user_nofault` checks the
        // user range and reads it with page faults disabled, failing instead of faulting.
        let ret = unsafe {
            bindings::copy_from_user_nofault(
                words.as_mut_ptr().cast(),
                frame as *const c_void,
                core::mem::size_of_val(&words),
            )
        };
        if ret != 0 {
            break;
        }
        let [next, ret_addr] = words;
        // A return address points into code: one that points into the stack being walked
        // (between the stack pointer and this frame) is a frame pointer chain through code
        // built without frame pointers, where `rbp` held something else.
        // CAST: registers are 64 bits wide on x86_64.
        let in_stack = (regs.sp as u64..=frame.saturating_add(4096)).contains(&ret_addr);
        if ret_addr == 0 || ret_addr >= USER_LIMIT || in_stack {
            break;
        }
        let Some(slot) = out.get_mut(count) else {
            break;
        };
        slot.write(ret_addr);
        count += 1;
        // Callers' frames lie higher on the stack: a frame that does not is garbage.
        if next <= frame {
            break;
        }
        frame = next;
    }
    count
}
