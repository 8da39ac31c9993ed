// SPDX-License-Identifier: GPL-2.0

//! Running code with preemption disabled (`preempt_disable()`, `linux/preempt.h`), and the
//! context the current code runs in.

use crate::bindings;

/// Runs `f` with preemption disabled on the current CPU: it must not sleep.
pub(crate) fn without_preemption<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: Disabling preemption is allowed in any context; it is enabled again below.
    unsafe { bindings::memmon_preempt_disable() };
    let result = f();
    // SAFETY: Paired with the `preempt_disable()` above, on the same CPU (none can switch
    // meanwhile).
    unsafe { bindings::memmon_preempt_enable() };
    result
}

/// Whether the current code runs in task context: not in an NMI, a hard interrupt or a softirq
/// (`in_task()`: one read of the preempt count).
pub(crate) fn in_task() -> bool {
    // SAFETY: Reading the current CPU's preempt count is allowed in any context.
    unsafe { bindings::memmon_in_task() }
}
