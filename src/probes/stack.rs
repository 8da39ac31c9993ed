// SPDX-License-Identifier: GPL-2.0

//! User call stacks: the module parameter `stack_depth` and a frame-pointer walk of the
//! current task's user stack that never sleeps and never faults.
//!
//! `stack_depth` (0 to [`STACK_MAX`], default 0: off) is also writable at run time by root
//! through `/sys/module/memmon/parameters/stack_depth`; other values are refused with
//! `EINVAL` and a kernel log line. The Rust `module!` parameters are set once at load, so this
//! one is declared by hand, as `module_param_cb()` would.

use crate::event::Event;
use crate::ring::Ring;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{bindings, prelude::*};

/// Most return addresses a stack can have.
pub(crate) const STACK_MAX: usize = 64;

/// The current `stack_depth`.
static STACK_DEPTH: AtomicU32 = AtomicU32::new(0);

/// The `stack_depth` in force: how many entries to record, 0 for none.
pub(crate) fn depth() -> usize {
    // CAST: the value is at most STACK_MAX.
    STACK_DEPTH.load(Ordering::Relaxed) as usize
}

/// `kernel_param_ops.set` of `stack_depth`: at load and on writes to sysfs.
///
/// # Safety
///
/// Called by the module parameter code with a NUL-terminated value.
unsafe extern "C" fn set_stack_depth(
    val: *const c_char,
    _param: *const bindings::kernel_param,
) -> c_int {
    let mut value: c_uint = 0;
    // SAFETY: `val` is a NUL-terminated string; `value` is valid for writes.
    let ret = unsafe { bindings::kstrtouint(val, 0, &mut value) };
    if ret != 0 || value as usize > STACK_MAX {
        // SAFETY: `val` is a NUL-terminated string.
        let text = unsafe { kernel::str::CStr::from_char_ptr(val) };
        pr_err!(
            "stack_depth={} is not valid: it must be 0 (off) to {}\n",
            text.to_str().unwrap_or("?"),
            STACK_MAX
        );
        return EINVAL.to_errno();
    }
    STACK_DEPTH.store(value, Ordering::Relaxed);
    0
}

static STACK_DEPTH_OPS: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(set_stack_depth),
    get: Some(bindings::param_get_uint),
    free: None,
};

#[link_section = "__param"]
#[used(compiler)]
static STACK_DEPTH_PARAM: kernel::module_param::KernelParam =
    kernel::module_param::KernelParam::new(bindings::kernel_param {
        name: kernel::str::as_char_ptr_in_const_context(c"stack_depth"),
        // `__this_module` is set up by the kernel at load time and stays until the module is
        // unloaded.
        mod_: &raw mut bindings::__this_module,
        ops: core::ptr::from_ref(&STACK_DEPTH_OPS),
        // Readable by everyone, writable by root.
        perm: 0o644,
        level: -1,
        flags: 0,
        __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 {
            // `param_get_uint` reads an unsigned int here; an `AtomicU32` has its layout.
            arg: core::ptr::from_ref(&STACK_DEPTH).cast_mut().cast(),
        },
    });

/// Highest user address plus one on x86_64 (4-level paging; 5-level tables only add more).
const USER_LIMIT: u64 = 1 << 56;

/// The user registers saved at the top of the current task's kernel stack when it entered
/// the kernel (`task_pt_regs(current)`): those of the system call it is in. `None` for a
/// kernel thread or a user worker (io_uring, vhost), which has no user context of its own.
fn current_user_regs() -> Option<&'static bindings::pt_regs> {
    let task = kernel::task::Task::current_raw();
    // SAFETY: `current` is valid; `flags` is only changed by the task itself.
    let flags = unsafe { (*task).flags };
    if flags & (bindings::PF_KTHREAD | bindings::PF_USER_WORKER) != 0 {
        return None;
    }
    let thread_size = bindings::PAGE_SIZE << bindings::THREAD_SIZE_ORDER;
    // SAFETY: `current` is valid; its `stack` is the base of its kernel stack.
    let stack = unsafe { (*task).stack } as usize;
    let top = stack + thread_size - bindings::TOP_OF_KERNEL_STACK_PADDING as usize;
    let regs = (top - core::mem::size_of::<bindings::pt_regs>()) as *const bindings::pt_regs;
    // SAFETY: A user task that entered the kernel saved its user registers there (the entry
    // code builds `pt_regs` at the top of the kernel stack); they stay while it runs.
    Some(unsafe { &*regs })
}

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

// What `modinfo` shows of the parameter, as `MODULE_PARM_DESC()` and `module_param()` record
// it for a loadable module.
#[link_section = ".modinfo"]
#[used(compiler)]
static STACK_DEPTH_PARMTYPE: [u8; 26] = *b"parmtype=stack_depth:uint\0";
#[link_section = ".modinfo"]
#[used(compiler)]
static STACK_DEPTH_PARM: [u8; 73] =
    *b"parm=stack_depth:User stack entries per fault and syscall (0-64, 0: off)\0";
