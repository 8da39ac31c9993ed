// SPDX-License-Identifier: GPL-2.0

//! Access sampling by generation: which code touches which resident pages.
//!
//! Every `sample_ms` milliseconds a kernel thread, `memmon-sample`, starts a generation: for
//! each watched process, holding a reference to its address space, it arms the resident pages
//! of its accessible VMAs through `mm_access_sample_arm()` (`patches/0002`), which makes them
//! PROT_NONE as NUMA balancing does. The next access to each takes a hinting fault that only
//! restores the page, and that the `mm:mm_fault` tracepoint reports as type `access`
//! ([`crate::probes::fault`] adds `gen=`). Once every watched process is armed, one `gen` line per
//! process is written and the generation number moves on: accesses from then on carry it.
//!
//! The arming is bounded: at most `sample_pages` pages per process and generation (the next
//! generation continues where this one stopped), in calls that scan at most [`SCAN_CHUNK`]
//! pages of address space each, the mmap lock dropped between calls. The thread holds no
//! spinlock while arming (it sleeps on the mmap lock).
//!
//! `sample_ms` (0 = off, the default; 10 to 60000 otherwise) is writable at run time by root
//! through `/sys/module/memmon/parameters/sample_ms`; other values are refused with `EINVAL`
//! and a kernel log line, and any non-zero value with `EBUSY` while automatic NUMA balancing
//! is on (its hinting faults could not be told from sampling ones).

use crate::bindings;
use crate::kernel_ext::errno::eopnotsupp;
use crate::kernel_ext::kcrate::{
    sync::{new_condvar, new_mutex, Arc, CondVar, Mutex},
    time::msecs_to_jiffies,
};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::runtime_param::runtime_param;
use crate::record::event::Kind;
use crate::state::State;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Smallest non-zero `sample_ms`.
const SAMPLE_MS_MIN: u32 = 10;
/// Largest `sample_ms`.
const SAMPLE_MS_MAX: u32 = 60000;
/// Pages of address space one `mm_access_sample_arm()` call scans at most (64 MiB), so that
/// the mmap lock is released regularly.
const SCAN_CHUNK: c_ulong = 16384;
/// Longest sleep before the thread looks at `sample_ms` again, in milliseconds.
const POLL_MS: u32 = 100;

runtime_param! {
    /// The current `sample_ms`: 0 while sampling is off.
    static SAMPLE_MS: u32 = 0;
    name: "sample_ms",
    description: "Access sampling period in ms (0: off, or 10-60000)",
    check: check_sample_ms,
}

/// Whether the fault source reports access faults (`type=access`): the `mm:mm_fault`
/// tracepoint does; the kprobe source cannot tell them (`do_numa_page()` is inlined), so
/// [`refuse_sampling`] clears it when that source is chosen.
static ACCESS_FAULTS_SEEN: AtomicBool = AtomicBool::new(cfg!(memmon_mm_fault));

/// The fault source cannot report access faults: `sample_ms` is refused from now on. Fails
/// with `EOPNOTSUPP` (logged) if a period was given at load.
pub(crate) fn refuse_sampling() -> Result {
    ACCESS_FAULTS_SEEN.store(false, Ordering::Relaxed);
    let ms = SAMPLE_MS.load(Ordering::Relaxed);
    if ms != 0 {
        pr_err!(
            "sample_ms={}: access sampling needs the mm:mm_fault fault source; the kprobe \
             source (fault_kprobes=1) cannot tell access faults\n",
            ms
        );
        return Err(eopnotsupp());
    }
    Ok(())
}

/// The last generation whose arming completed: what `gen=` of an access says.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Nanoseconds spent arming, over every generation since load.
static ARM_NS: AtomicU64 = AtomicU64::new(0);
/// Pages armed, over every generation since load.
static ARMED: AtomicU64 = AtomicU64::new(0);

/// Nanoseconds spent arming and pages armed, since load (`/proc/memmon/stats`).
pub(crate) fn arming_totals() -> (u64, u64) {
    (
        ARM_NS.load(Ordering::Relaxed),
        ARMED.load(Ordering::Relaxed),
    )
}

/// The generation accesses belong to now (0 before the first one).
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// `-EBUSY` as `mm_access_sample_arm()` returns it.
fn ebusy() -> c_long {
    // CAST: an errno fits any signed integer type.
    EBUSY.to_errno() as c_long
}

/// The arming helper's answer for an address space that has nothing past `start`: whether
/// arming is possible at all (not while NUMA balancing is on). Process context.
fn arming_allowed() -> bool {
    let task = kernel::task::Task::current_raw();
    // SAFETY: `current` is valid; its `mm` is only replaced by the task itself.
    let mm = unsafe { (*task).mm };
    if mm.is_null() {
        return true;
    }
    let mut next: c_ulong = 0;
    // SAFETY: `mm` is the current task's address space, alive while it runs; starting at the
    // highest address finds no VMA, so nothing is armed: the call only checks whether it may.
    let ret = unsafe { sample_arm(mm, c_ulong::MAX, 0, 0, &mut next) };
    ret != ebusy()
}

/// `mm_access_sample_arm()` of `patches/0002`, on a kernel built with it.
///
/// # Safety
///
/// As for `mm_access_sample_arm()`: `mm` is referenced for the call, in process context,
/// with no lock held; `next` is valid for writes.
#[cfg(CONFIG_MM_ACCESS_SAMPLING)]
unsafe fn sample_arm(
    mm: *mut bindings::mm_struct,
    start: c_ulong,
    budget: c_ulong,
    scan: c_ulong,
    next: *mut c_ulong,
) -> c_long {
    // SAFETY: As the function's safety section says.
    unsafe { bindings::mm_access_sample_arm(mm, start, budget, scan, next) }
}

/// A kernel without `patches/0002` (a distribution's): arming is not supported;
/// [`check_sample_ms`] refuses every period, so this is not reached.
///
/// # Safety
///
/// None needed; `unsafe` as the patched kernel's version is.
#[cfg(not(CONFIG_MM_ACCESS_SAMPLING))]
unsafe fn sample_arm(
    _mm: *mut bindings::mm_struct,
    _start: c_ulong,
    _budget: c_ulong,
    _scan: c_ulong,
    _next: *mut c_ulong,
) -> c_long {
    // CAST: an errno fits any signed integer type.
    eopnotsupp().to_errno() as c_long
}

/// Accepts a `sample_ms` of 0 (off) or [`SAMPLE_MS_MIN`] to [`SAMPLE_MS_MAX`], and a
/// period only while access sampling is allowed.
fn check_sample_ms(value: Option<u32>, text: &str) -> Result {
    let Some(value) = value.filter(|&v| v == 0 || (SAMPLE_MS_MIN..=SAMPLE_MS_MAX).contains(&v))
    else {
        pr_err!(
            "sample_ms={} is not valid: it must be 0 (off) or {} to {} milliseconds\n",
            text,
            SAMPLE_MS_MIN,
            SAMPLE_MS_MAX
        );
        return Err(EINVAL);
    };
    if value != 0 && cfg!(not(CONFIG_MM_ACCESS_SAMPLING)) {
        pr_err!(
            "sample_ms={}: access sampling needs a kernel with patches/0002 \
             (CONFIG_MM_ACCESS_SAMPLING); this one does not have it\n",
            value
        );
        return Err(eopnotsupp());
    }
    if value != 0 && !ACCESS_FAULTS_SEEN.load(Ordering::Relaxed) {
        pr_err!(
            "sample_ms={}: access sampling needs the mm:mm_fault fault source; the kprobe \
             source (fault_kprobes=1) cannot tell access faults\n",
            value
        );
        return Err(eopnotsupp());
    }
    if value != 0 && !arming_allowed() {
        pr_err!(
            "sample_ms={}: access sampling is refused while automatic NUMA balancing is on \
             (its hinting faults would be taken for accesses): set kernel.numa_balancing=0\n",
            value
        );
        return Err(EBUSY);
    }
    Ok(())
}

/// What the sampling thread shares with its owner.
#[pin_data]
struct Shared {
    /// Set when the thread must return.
    #[pin]
    stop: Mutex<bool>,
    /// Wakes the thread when `stop` is set.
    #[pin]
    wake: CondVar,
    state: Arc<State>,
    /// Pages armed per process and generation at most.
    budget: c_ulong,
}

/// The sampling thread, running from initialisation until drop.
///
/// # Invariants
///
/// `task` is the `memmon-sample` kthread, referenced (`get_task_struct`), running
/// [`thread_main`] on `shared` until it is stopped in drop.
pub(crate) struct Sampler {
    shared: Arc<Shared>,
    task: *mut bindings::task_struct,
}

// SAFETY: The task pointer is only used to stop the thread, from any thread.
unsafe impl Send for Sampler {}
// SAFETY: Shared references give no access to the task pointer.
unsafe impl Sync for Sampler {}

impl Sampler {
    /// Starts the thread; `budget` is `sample_pages`.
    pub(crate) fn start(state: Arc<State>, budget: u32) -> Result<Self> {
        let shared = Arc::pin_init(
            pin_init!(Shared {
                stop <- new_mutex!(false),
                wake <- new_condvar!(),
                state,
                budget: c_ulong::try_from(budget).unwrap_or(c_ulong::MAX),
            }),
            GFP_KERNEL,
        )?;
        let data = Arc::as_ptr(&shared).cast_mut().cast::<c_void>();
        // SAFETY: `thread_main` has the kthread signature and reads `data` as a `Shared`,
        // which `shared` keeps alive until the thread is stopped in drop; the name is a plain
        // NUL-terminated format without conversions.
        let task = unsafe {
            bindings::kthread_create_on_node(
                Some(thread_main),
                data,
                bindings::NUMA_NO_NODE,
                c"memmon-sample".as_char_ptr(),
            )
        };
        if kernel::error::from_err_ptr(task).is_err() || task.is_null() {
            pr_err!("cannot start the access sampling thread\n");
            return Err(ENOMEM);
        }
        // SAFETY: `task` is the new kthread, not yet running; the reference keeps its
        // task_struct until `kthread_stop_put`; waking it starts `thread_main`.
        unsafe {
            bindings::get_task_struct(task);
            bindings::wake_up_process(task);
        }
        Ok(Self { shared, task })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        *self.shared.stop.lock() = true;
        self.shared.wake.notify_all();
        // SAFETY: By the type invariant `task` is the referenced kthread; this waits for
        // `thread_main` to return (it checks `stop` between steps) and drops the reference.
        unsafe { bindings::kthread_stop_put(self.task) };
    }
}

/// Sleeps up to `ms` milliseconds or until the thread is stopped; returns whether it is.
fn sleep(shared: &Shared, ms: u32) -> bool {
    let mut stop = shared.stop.lock();
    if !*stop {
        let _ = shared
            .wake
            .wait_interruptible_timeout(&mut stop, msecs_to_jiffies(ms));
    }
    *stop
}

fn should_stop(shared: &Shared) -> bool {
    *shared.stop.lock()
}

/// The thread: a generation every `sample_ms`, until stopped.
///
/// # Safety
///
/// `data` is the `Shared` of a [`Sampler`], alive until the thread is stopped.
unsafe extern "C" fn thread_main(data: *mut c_void) -> c_int {
    // SAFETY: The `Sampler` keeps `Shared` alive until it has stopped this thread.
    let shared = unsafe { &*data.cast::<Shared>() };
    // Where each process's arming continues (pid, address), for those that used their budget.
    let mut cursors: KVec<(i32, c_ulong)> = KVec::new();
    while !should_stop(shared) {
        let ms = SAMPLE_MS.load(Ordering::Relaxed);
        if ms == 0 {
            if sleep(shared, POLL_MS) {
                break;
            }
            continue;
        }
        let start = crate::kernel_ext::task::now_ns();
        generation_pass(shared, &mut cursors);
        // Sleep the rest of the period, a slice at a time, so that a new `sample_ms` applies.
        let mut stopped = false;
        loop {
            let ms = SAMPLE_MS.load(Ordering::Relaxed);
            let elapsed = (crate::kernel_ext::task::now_ns().saturating_sub(start) / 1_000_000)
                .try_into()
                .unwrap_or(u32::MAX);
            if ms == 0 || elapsed >= ms {
                break;
            }
            if sleep(shared, (ms - elapsed).min(POLL_MS)) {
                stopped = true;
                break;
            }
        }
        if stopped {
            break;
        }
    }
    // The thread returns only once stopped: `kthread_stop` collects this value.
    while !should_stop(shared) {
        let _ = sleep(shared, POLL_MS);
    }
    0
}

/// One generation: arms every watched process, then writes their `gen` lines and moves the
/// generation number on.
fn generation_pass(shared: &Shared, cursors: &mut KVec<(i32, c_ulong)>) {
    let mut pids: KVec<i32> = KVec::new();
    let mut full = false;
    shared.state.watch.for_each_watched(|pid| {
        if pids.push(pid, GFP_KERNEL).is_err() {
            full = true;
        }
    });
    if full {
        pr_warn!("access sampling: out of memory listing the watched processes\n");
    }
    let generation = GENERATION.load(Ordering::Relaxed) + 1;
    let started = crate::kernel_ext::task::now_ns();
    let mut armed_per_pid: KVec<(i32, u64)> = KVec::new();
    for &pid in pids.iter() {
        if should_stop(shared) {
            return;
        }
        let Some(armed) = arm_process(shared, pid, cursors) else {
            continue;
        };
        if armed_per_pid.push((pid, armed), GFP_KERNEL).is_err() {
            continue;
        }
    }
    ARM_NS.fetch_add(
        crate::kernel_ext::task::now_ns().saturating_sub(started),
        Ordering::Relaxed,
    );
    // Processes no longer watched forget their cursor.
    cursors.retain(|(pid, _)| shared.state.watch.contains(*pid));
    for &(pid, armed) in armed_per_pid.iter() {
        let mut event = crate::probes::current_event(Kind::Gen);
        event.pid = pid;
        event.tid = pid;
        event.args[0] = generation;
        event.args[1] = armed;
        shared.state.ring.push(&event);
        ARMED.fetch_add(armed, Ordering::Relaxed);
    }
    GENERATION.store(generation, Ordering::Relaxed);
}

/// Arms process `pid` for a generation; returns the pages armed, `None` if it has no address
/// space (any more) or arming is refused.
fn arm_process(shared: &Shared, pid: i32, cursors: &mut KVec<(i32, c_ulong)>) -> Option<u64> {
    let mm = {
        let _rcu = crate::kernel_ext::kcrate::sync::rcu::read_lock();
        // SAFETY: `find_pid_ns` and `pid_task` need the RCU read lock, held by `_rcu`;
        // `init_pid_ns` is static. `get_task_mm` takes a reference on the mm of a task valid
        // under the RCU read lock, or returns null (kernel thread, exiting process).
        unsafe {
            let pid = bindings::find_pid_ns(pid, &raw mut bindings::init_pid_ns);
            if pid.is_null() {
                return None;
            }
            let task = bindings::pid_task(pid, bindings::pid_type_PIDTYPE_TGID);
            if task.is_null() {
                return None;
            }
            bindings::get_task_mm(task)
        }
    };
    if mm.is_null() {
        return None;
    }
    let slot = cursors.iter().position(|(p, _)| *p == pid);
    let mut start = slot.and_then(|i| cursors.get(i)).map_or(0, |(_, at)| *at);
    let wrapped_from = start;
    let mut armed: c_ulong = 0;
    let mut refused = false;
    loop {
        let mut next: c_ulong = 0;
        // SAFETY: `mm` is referenced (`get_task_mm`) until `mmput` below; this thread holds
        // no lock, and the call may sleep.
        let ret = unsafe { sample_arm(mm, start, shared.budget - armed, SCAN_CHUNK, &mut next) };
        if ret < 0 {
            refused = ret == ebusy();
            break;
        }
        // CAST: `ret` is a non-negative page count.
        armed += ret as c_ulong;
        if armed >= shared.budget {
            start = next;
            break;
        }
        if next == 0 {
            // Past the last VMA: start from the beginning next time; if this generation
            // started in the middle, go on from the beginning up to where it started.
            if wrapped_from == 0 || start == 0 {
                start = 0;
                break;
            }
            start = 0;
            continue;
        }
        if wrapped_from != 0 && start < wrapped_from && next >= wrapped_from {
            start = next;
            break;
        }
        start = next;
        if should_stop(shared) {
            break;
        }
    }
    // SAFETY: `mm` was referenced by `get_task_mm`; `mmput` may sleep, allowed here.
    unsafe { bindings::mmput(mm) };
    if refused {
        pr_err!(
            "access sampling stopped: automatic NUMA balancing was turned on (its hinting \
             faults would be taken for accesses); set kernel.numa_balancing=0 and sample_ms \
             again\n"
        );
        SAMPLE_MS.store(0, Ordering::Relaxed);
        return None;
    }
    match slot {
        Some(i) => {
            if let Some(entry) = cursors.get_mut(i) {
                entry.1 = start;
            }
        }
        None if start != 0 => {
            let _ = cursors.push((pid, start), GFP_KERNEL);
        }
        None => {}
    }
    // CAST: a page count fits in u64.
    Some(armed as u64)
}
