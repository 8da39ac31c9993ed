// SPDX-License-Identifier: GPL-2.0

//! memmon: records, for the processes named in `/proc/memmon/watch-pids`, every page fault,
//! typed by the handler that resolved it (anonymous, file, swap-in, write-protect), and every
//! mm system call, as text lines in `/proc/memmon/events`.
//!
//! - [`fault`]: typed page faults, from the `mm:mm_fault` tracepoint of the kernel patch in
//!   `patches/`, attached through [`tracepoint`];
//! - [`syscalls`], [`lifecycle`]: kprobes and kretprobes on mm syscalls, fork, exec, exit;
//! - [`ring`]: the ring buffer of [`event`] records; [`text`]: their line format;
//! - [`watch`]: the watched processes; [`files`]: the `/proc/memmon` files, served through
//!   the safe procfs wrappers of [`procfs`] and [`pollqueue`].

use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

// The ring and watch-set spinlocks are taken in kprobe and tracepoint handlers, which must
// not sleep: on PREEMPT_RT a spinlock is a sleeping lock.
#[cfg(CONFIG_PREEMPT_RT)]
compile_error!("memmon does not support PREEMPT_RT kernels");

mod copy;
mod delayed_work;
mod event;
mod fault;
mod files;
mod killable;
mod kprobe;
mod lifecycle;
mod packed;
mod pollqueue;
mod procfs;
mod ring;
mod rss;
mod sample;
mod stack;
mod syscalls;
mod text;
mod timer;
mod tracepoint;
mod watch;

use fault::FaultProbe;
use kprobe::Unregistration;
use lifecycle::{ForkProbe, LifecycleProbes};
use procfs::ProcDir;
use ring::Ring;
use syscalls::SyscallProbes;
use tracepoint::Detached;
use watch::WatchSet;

module! {
    type: Memmon,
    name: "memmon",
    authors: ["memmon developers"],
    description: "Typed page faults and mm system calls of watched processes",
    license: "GPL",
    params: {
        buflen: u32 {
            default: 32768,
            description: "Size of the event ring buffer in bytes (8192 to 268435456)",
        },
        sample_pages: u32 {
            default: 65536,
            description: "Access sampling: pages armed per process and generation at most (1 to 67108864)",
        },
    },
}

/// Smallest accepted `buflen`.
const BUFLEN_MIN: u32 = 8192;
/// Largest accepted `buflen`.
const BUFLEN_MAX: u32 = 256 << 20;

/// Largest accepted `sample_pages` (256 GiB of 4 KiB pages).
const SAMPLE_PAGES_MAX: u32 = 1 << 26;

/// What the producers (fault hook, probes) and the readers share.
#[pin_data]
pub(crate) struct State {
    #[pin]
    pub(crate) ring: Ring,
    #[pin]
    pub(crate) watch: WatchSet,
    /// The `buflen` the module was loaded with.
    pub(crate) buflen: usize,
}

/// Everything the `/proc/memmon` files need: the state and the probes (for their counters).
pub(crate) struct Monitor {
    pub(crate) state: Arc<State>,
    syscalls: SyscallProbes,
    lifecycle: LifecycleProbes,
    /// Open `events` files.
    pub(crate) readers: Atomic<u64>,
}

/// What the module holds in memory, in bytes, as `stats` reports it: nothing grows with the
/// events recorded, and only a bounded buffer per open `events` file with the readers.
pub(crate) struct Memory {
    pub(crate) rings: usize,
    pub(crate) watch: usize,
    pub(crate) paths: usize,
    pub(crate) per_reader: usize,
    pub(crate) readers: u64,
}

impl Memory {
    pub(crate) fn total(&self) -> u64 {
        // CAST: byte counts of allocations fit in u64.
        (self.rings + self.watch + self.paths) as u64 + self.readers * self.per_reader as u64
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        // One wait for all the kprobes' handlers in flight, not one per probe.
        let mut batch = Unregistration::new();
        self.syscalls.unregister_into(&mut batch);
        self.lifecycle.unregister_into(&mut batch);
    }
}

impl Monitor {
    /// The module's memory, now.
    pub(crate) fn memory(&self) -> Memory {
        let ring = self.state.ring.stats();
        Memory {
            rings: ring.rings * ring.ring_bytes,
            watch: self.state.watch.bytes(),
            paths: self.syscalls.path_bytes(),
            per_reader: files::reader_bytes(ring.rings),
            readers: self.readers.load(Relaxed),
        }
    }

    /// Applies a `watch-pids` write, arming the syscall probes first if it adds a process.
    pub(crate) fn apply_watch_write(&self, request: &[u8]) -> Result {
        self.state.watch.apply(request, || self.syscalls.arm())
    }

    /// Whether the syscall probes are armed (they are while a process is watched).
    pub(crate) fn syscall_probes_armed(&self) -> bool {
        self.syscalls.armed()
    }

    /// Probe hits missed: syscalls because too many were in flight at once, any probe hit
    /// recursively.
    pub(crate) fn probes_missed(&self) -> u64 {
        self.syscalls.missed() + self.lifecycle.missed()
    }
}

struct Memmon {
    state: Arc<State>,
    /// `None` only during drop.
    proc_dir: Option<ProcDir<Monitor>>,
    /// `None` only during drop.
    fault_probe: Option<FaultProbe>,
    /// `None` only during drop.
    exit_rss_probe: Option<rss::ExitRssProbe>,
    /// `None` only during drop.
    fork_probe: Option<ForkProbe>,
    sampler: Option<sample::Sampler>,
}

impl kernel::Module for Memmon {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let buflen = module_parameters::buflen.value();
        if !(BUFLEN_MIN..=BUFLEN_MAX).contains(&buflen) {
            pr_err!(
                "buflen={} is out of range: it must be {} to {} bytes\n",
                buflen,
                BUFLEN_MIN,
                BUFLEN_MAX
            );
            return Err(EINVAL);
        }
        let sample_pages = module_parameters::sample_pages.value();
        if !(1..=SAMPLE_PAGES_MAX).contains(&sample_pages) {
            pr_err!(
                "sample_pages={} is out of range: it must be 1 to {} pages\n",
                sample_pages,
                SAMPLE_PAGES_MAX
            );
            return Err(EINVAL);
        }
        event::check_task_layout()?;
        // CAST: `buflen` is at most 256 MiB.
        let buflen = buflen as usize;
        let state = Arc::pin_init(
            try_pin_init!(State {
                ring <- Ring::new(buflen)?,
                watch <- WatchSet::new()?,
                buflen,
            }),
            GFP_KERNEL,
        )?;
        let monitor = Arc::new(
            Monitor {
                state: state.clone(),
                syscalls: SyscallProbes::register(&state)?,
                lifecycle: LifecycleProbes::register(&state)?,
                readers: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        // The handlers take spinlocks, wake readers and resolve paths: that is only allowed
        // where kprobes run in the probed task's context, through ftrace, not from an int3
        // trap (NMI-like context).
        if !monitor.syscalls.ftrace_based() || !monitor.lifecycle.ftrace_based() {
            pr_err!(
                "the kprobes do not go through ftrace (int3): build the kernel with \
                 CONFIG_KPROBES_ON_FTRACE and CONFIG_DYNAMIC_FTRACE\n"
            );
            return Err(EOPNOTSUPP);
        }
        let fault_probe = FaultProbe::attach(state.clone())?;
        let exit_rss_probe = rss::ExitRssProbe::attach(state.clone())?;
        let fork_probe = ForkProbe::attach(state.clone())?;
        let sampler = sample::Sampler::start(state.clone(), sample_pages)?;
        let proc_dir = ProcDir::new(c"memmon", monitor)?;
        proc_dir.create::<files::WatchPidsFile>(c"watch-pids", 0o600)?;
        proc_dir.create::<files::StatsFile>(c"stats", 0o444)?;
        proc_dir.create::<files::MarkerFile>(c"marker", 0o200)?;
        // Last: once it exists a reader may block in it, and nothing after it can fail (a
        // failed init would remove the files without closing the ring first).
        proc_dir.create::<files::EventsFile>(c"events", 0o400)?;
        let stats = state.ring.stats();
        pr_info!(
            "loaded: buflen={} ({} rings of {} bytes)\n",
            buflen,
            stats.rings,
            stats.ring_bytes
        );
        Ok(Self {
            state,
            proc_dir: Some(proc_dir),
            fault_probe: Some(fault_probe),
            exit_rss_probe: Some(exit_rss_probe),
            fork_probe: Some(fork_probe),
            sampler: Some(sampler),
        })
    }
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
        if let Some(probe) = self.fault_probe.take() {
            probe.detach_into(&mut detached);
        }
        if let Some(probe) = self.exit_rss_probe.take() {
            probe.detach_into(&mut detached);
        }
        if let Some(probe) = self.fork_probe.take() {
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
