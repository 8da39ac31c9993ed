// SPDX-License-Identifier: GPL-2.0

//! memmon: records, for the processes named in `/proc/memmon/watch-pids`, every page fault,
//! typed by the handler that resolved it (anonymous, file, swap-in, write-protect), and every
//! mm system call, as text lines in `/proc/memmon/events`.
//!
//! - [`state`]: what the producers and the readers share; [`ring`]: the per-CPU rings of
//!   packed records; [`watch`]: the watched processes;
//! - [`monitor`]: what the `/proc/memmon` files serve: the state, the probes' counters and
//!   arming, the cgroup move probe;
//! - [`probes`]: one file per kernel hook (faults, mm calls, fork/exec/exit, `rss`, user
//!   stacks, access sampling);
//! - [`record`]: the record format, kernel-free (events, packed form, text lines);
//! - [`unwind`]: the unwind tables userspace loads, which the stack walker reads under RCU;
//! - [`files`]: the `/proc/memmon` files;
//! - [`kernel_ext`]: safe wrappers for what `rust/kernel/` lacks (kprobes, tracepoints,
//!   procfs, poll queues, timers, work, runtime parameters, tasks and pids, cgroups, page
//!   faults, `READ_ONCE`, a byte writer).
//!
//! - [`arch`]: what differs between x86_64 and arm64 (syscall entry points and arguments,
//!   registers, the current task, ftrace call sites).
//!
//! Initialisation order: the state (rings, watch set), the kprobes (registered disarmed),
//! the tracepoint probes, the sampling thread, then the files, `events` last; drop undoes it
//! in reverse, closing the rings first so that blocked readers return.

use crate::kernel_ext::kcrate::sync::Arc;
use crate::kernel_ext::prelude::*;

// The ring and watch-set spinlocks are taken in kprobe and tracepoint handlers, which must
// not sleep: on PREEMPT_RT a spinlock is a sleeping lock.
#[cfg(CONFIG_PREEMPT_RT)]
compile_error!("memmon does not support PREEMPT_RT kernels");

mod arch;
mod bindings;
mod files;
mod kernel_ext;
mod monitor;
mod probes;
mod record;
mod ring;
mod state;
mod unwind;
mod watch;

use kernel_ext::errno::eopnotsupp;
use kernel_ext::module_param::param_value;
use kernel_ext::procfs::ProcDir;
use kernel_ext::tracepoint::{Detached, TracepointProbe};
use monitor::Monitor;
use probes::{fault::Source, lifecycle::LifecycleProbes, syscalls::SyscallProbes};
use ring::Ring;
use state::State;
use unwind::store::UnwindStore;
use watch::WatchSet;

/// The `module!` declaration, with its parameters: 7.x's kernel crate declares them; 6.12's
/// has no parameters in `module!`, and `kernel_ext::module_param::load_params!` declares them
/// (`kernel_param` in `__param`, their `.modinfo` strings), with the same names, defaults and
/// descriptions, readable through `param_value` as on 7.x.
macro_rules! memmon_module {
    (params: { $($name:ident: u32 { default: $default:tt, description: $description:tt, },)* } $(,)?) => {
        #[cfg(not(memmon_kernel_6_12))]
        module! {
            type: Memmon,
            name: "memmon",
            authors: ["memmon developers"],
            description: "Typed page faults and mm system calls of watched processes",
            license: "GPL",
            params: {
                $($name: u32 {
                    default: $default,
                    description: $description,
                },)*
            },
        }
        #[cfg(memmon_kernel_6_12)]
        module! {
            type: Memmon,
            name: "memmon",
            author: "memmon developers",
            description: "Typed page faults and mm system calls of watched processes",
            license: "GPL",
        }
        #[cfg(memmon_kernel_6_12)]
        kernel_ext::module_param::load_params! { $($name: $default, $description;)* }
    };
}

memmon_module! {
    params: {
        buflen: u32 {
            default: 0,
            description: "Bytes of the event rings in all (8192 to 268435456; 0: 1 MiB per CPU, at most 64 MiB; grown at run time through /proc/memmon/buflen)",
        },
        unwind_max_kb: u32 {
            default: 32768,
            description: "Memory for unwind tables and ranges, in KiB (0 to 4194304, 0: none)",
        },
        fault_kprobes: u32 {
            default: 0,
            description: "1: take faults from kprobes on handle_mm_fault and its handlers, as on a kernel without the mm:mm_fault tracepoint (0 or 1)",
        },
        sample_pages: u32 {
            default: 65536,
            description: "Access sampling: pages armed per process and generation at most (1 to 67108864)",
        },
    },
}

/// Smallest accepted `buflen`.
pub(crate) const BUFLEN_MIN: u32 = 8192;
/// Largest accepted `buflen`.
pub(crate) const BUFLEN_MAX: u32 = 256 << 20;

/// Bytes of one CPU's ring with `buflen=0`: room for thousands of faults with stacks of the
/// default depth (127 entries, most of them unchanged from the previous record's), so that a
/// reader scheduled late on a busy machine loses nothing (ftrace keeps about 1.4 MB per CPU,
/// perf 512 KiB).
const AUTO_RING_BYTES: usize = 1 << 20;

/// The most `buflen=0` takes in all, on a machine of many CPUs.
const AUTO_BUFLEN_MAX: usize = 64 << 20;

/// Largest accepted `unwind_max_kb` (4 GiB).
const UNWIND_MAX_KB_MAX: u32 = 4 << 20;

/// Largest accepted `sample_pages` (256 GiB of 4 KiB pages).
const SAMPLE_PAGES_MAX: u32 = 1 << 26;

struct Memmon {
    state: Arc<State>,
    /// `None` only during drop.
    proc_dir: Option<ProcDir<Monitor>>,
    /// The tracepoint probes: faults, process exit, fork (the cgroup move's is the
    /// monitor's, attached while a cgroup is watched).
    tracepoints: KVec<TracepointProbe<State>>,
    sampler: Option<probes::sample::Sampler>,
}

/// The load parameters, checked.
struct Params {
    buflen: usize,
    unwind_max_bytes: usize,
    sample_pages: u32,
    fault_source: Source,
}

impl Params {
    /// The parameters the module is loaded with; fails with `EINVAL`, and says why, for one
    /// out of its range.
    fn read() -> Result<Self> {
        let buflen = param_value(&module_parameters::buflen);
        if buflen != 0 && !(BUFLEN_MIN..=BUFLEN_MAX).contains(&buflen) {
            pr_err!(
                "buflen={} is out of range: it must be 0 (1 MiB per CPU) or {} to {} bytes\n",
                buflen,
                BUFLEN_MIN,
                BUFLEN_MAX
            );
            return Err(EINVAL);
        }
        let sample_pages = param_value(&module_parameters::sample_pages);
        if !(1..=SAMPLE_PAGES_MAX).contains(&sample_pages) {
            pr_err!(
                "sample_pages={} is out of range: it must be 1 to {} pages\n",
                sample_pages,
                SAMPLE_PAGES_MAX
            );
            return Err(EINVAL);
        }
        let unwind_max_kb = param_value(&module_parameters::unwind_max_kb);
        if unwind_max_kb > UNWIND_MAX_KB_MAX {
            pr_err!(
                "unwind_max_kb={} is out of range: it must be 0 to {} KiB\n",
                unwind_max_kb,
                UNWIND_MAX_KB_MAX
            );
            return Err(EINVAL);
        }
        let fault_kprobes = param_value(&module_parameters::fault_kprobes);
        if fault_kprobes > 1 {
            pr_err!(
                "fault_kprobes={} is out of range: it must be 0 or 1\n",
                fault_kprobes
            );
            return Err(EINVAL);
        }
        let fault_source = if fault_kprobes == 1 {
            Source::Kprobes
        } else {
            Source::default_for_build()
        };
        let buflen = match buflen {
            0 => (crate::kernel_ext::kcrate::cpu::nr_cpu_ids() as usize * AUTO_RING_BYTES)
                .min(AUTO_BUFLEN_MAX),
            // CAST: `buflen` is at most 256 MiB.
            bytes => bytes as usize,
        };
        Ok(Self {
            buflen,
            // CAST: at most 4 GiB, in a usize of 64 bits.
            unwind_max_bytes: unwind_max_kb as usize * 1024,
            sample_pages,
            fault_source,
        })
    }
}

impl kernel::Module for Memmon {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: No preconditions; it reads the kernel's utsname (and logs a mismatch).
        if !unsafe { bindings::memmon_kernel_matches() } {
            return Err(ENODEV);
        }
        let params = Params::read()?;
        kernel_ext::task::check_task_layout()?;
        #[cfg(memmon_kernel_6_12)]
        kernel_ext::killable::check_mutex_layout()?;
        let buflen = params.buflen;
        let state = Arc::pin_init(
            try_pin_init!(State {
                ring <- Ring::new(buflen)?,
                watch <- WatchSet::new()?,
                unwind <- UnwindStore::new(params.unwind_max_bytes),
                walks: probes::stack::WalkBuffers::new()?,
            }),
            GFP_KERNEL,
        )?;
        let monitor = register_probes(&state, params.fault_source)?;
        let tracepoints = attach_tracepoints(&state, params.fault_source)?;
        let sampler = probes::sample::Sampler::start(state.clone(), params.sample_pages)?;
        let proc_dir = create_files(monitor)?;
        let stats = state.ring.stats();
        pr_info!(
            "loaded: buflen={} ({} rings of {} bytes), fault source: {}\n",
            buflen,
            stats.rings,
            stats.ring_bytes,
            params.fault_source.name()
        );
        // What 6.12 lacks of what memmon uses on 7.x (docs/kernels.md).
        #[cfg(memmon_kernel_6_12)]
        pr_info!(
            "kernel without Rust (6.12), memmon built self-contained: the kernel crate's own messages print \"(%pA?)\", a VVec cannot be resized (docs/kernels.md)\n"
        );
        Ok(Self {
            state,
            proc_dir: Some(proc_dir),
            tracepoints,
            sampler: Some(sampler),
        })
    }
}

/// Registers the kprobes (the fault source's if it is `fault_source`, the syscall and the
/// lifecycle probes), all going through ftrace, into the monitor of `state`.
fn register_probes(state: &Arc<State>, fault_source: Source) -> Result<Arc<Monitor>> {
    let fault_kprobes = match fault_source {
        Source::Kprobes => {
            probes::sample::refuse_sampling()?;
            Some(probes::fault::kprobes::FaultKprobes::register(state)?)
        }
        Source::Tracepoint => None,
    };
    let monitor = Arc::new(
        Monitor::new(
            state.clone(),
            SyscallProbes::register(state, fault_kprobes)?,
            LifecycleProbes::register(state)?,
            fault_source,
        )?,
        GFP_KERNEL,
    )?;
    // The handlers take spinlocks, wake readers and resolve paths: that is only allowed
    // where kprobes run in the probed task's context, not as an NMI
    // ([`arch::kprobe_handlers_fit`]: x86_64's must go through ftrace, not an int3 trap).
    if !arch::kprobe_handlers_fit(monitor.syscalls.ftrace_based())
        || !arch::kprobe_handlers_fit(monitor.lifecycle.ftrace_based())
    {
        pr_err!(
            "the kprobes do not go through ftrace (int3): build the kernel with \
             CONFIG_KPROBES_ON_FTRACE and CONFIG_DYNAMIC_FTRACE\n"
        );
        return Err(eopnotsupp());
    }
    Ok(monitor)
}

/// Attaches the tracepoint probes: `mm:mm_fault` if it is the fault source, process exit,
/// fork.
fn attach_tracepoints(
    state: &Arc<State>,
    fault_source: Source,
) -> Result<KVec<TracepointProbe<State>>> {
    let mut tracepoints = KVec::with_capacity(3, GFP_KERNEL)?;
    if fault_source == Source::Tracepoint {
        #[cfg(memmon_mm_fault)]
        tracepoints.push(
            probes::fault::tracepoint::attach(state.clone())?,
            GFP_KERNEL,
        )?;
    }
    tracepoints.push(probes::lifecycle::attach_exit(state.clone())?, GFP_KERNEL)?;
    tracepoints.push(probes::lifecycle::attach_fork(state.clone())?, GFP_KERNEL)?;
    Ok(tracepoints)
}

/// Creates `/proc/memmon` and its files, served from `monitor`.
fn create_files(monitor: Arc<Monitor>) -> Result<ProcDir<Monitor>> {
    let proc_dir = ProcDir::new(c"memmon", monitor)?;
    proc_dir.create::<files::WatchPidsFile>(c"watch-pids", 0o600)?;
    proc_dir.create::<files::StatsFile>(c"stats", 0o444)?;
    proc_dir.create::<files::MarkerFile>(c"marker", 0o200)?;
    proc_dir.create::<files::UnwindFile>(c"unwind", 0o600)?;
    proc_dir.create::<files::BuflenFile>(c"buflen", 0o600)?;
    // Last: once it exists a reader may block in it, and nothing after it can fail (a
    // failed init would remove the files without closing the ring first).
    proc_dir.create::<files::EventsFile>(c"events", 0o400)?;
    Ok(proc_dir)
}

impl Drop for Memmon {
    fn drop(&mut self) {
        // First the sampling thread: stopping it waits for a generation in progress, which
        // writes to the ring. Pages still armed stay correct: their next access restores them
        // (and is reported to nobody once the probe is detached).
        drop(self.sampler.take());
        // Readers blocked in read() or poll() wake up and see end of file, so that removing
        // the files (which waits for callbacks in flight) cannot hang.
        self.state.ring.close();
        // Removes the files, releases those still open, then unregisters the kprobes.
        drop(self.proc_dir.take());
        // One wait for all the tracepoint probes' calls in flight.
        let mut detached = Detached::new();
        for probe in core::mem::take(&mut self.tracepoints) {
            probe.detach_into(&mut detached);
        }
        drop(detached);
        let stats = self.state.ring.stats();
        pr_info!(
            "unloaded: {} events produced, {} overwritten\n",
            stats.produced,
            stats.overwritten
        );
    }
}
