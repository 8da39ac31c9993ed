// SPDX-License-Identifier: GPL-2.0

//! The [`Monitor`] the `/proc/memmon` files serve: the shared [`State`], the probes (for their
//! counters, and the syscall probes' arming), the cgroup move probe, the open readers; and
//! the module's [`Memory`] as `stats` reports it.

use crate::kernel_ext::kcrate::{
    new_mutex,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
};
use crate::kernel_ext::kprobe::Unregistration;
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::tracepoint::TracepointProbe;
use crate::probes::fault::Source;
use crate::probes::lifecycle::{attach_cgroup_move, push_cgroup, LifecycleProbes};
use crate::probes::syscalls::SyscallProbes;
use crate::state::State;

/// Everything the `/proc/memmon` files need: the state and the probes (for their counters).
pub(crate) struct Monitor {
    pub(crate) state: Arc<State>,
    pub(crate) syscalls: SyscallProbes,
    pub(crate) lifecycle: LifecycleProbes,
    /// Where faults come from.
    pub(crate) fault_source: Source,
    /// The probe on `cgroup_attach_task`, attached only while a cgroup is watched: while it
    /// is, the kernel formats the destination path of every cgroup move for it. Attached
    /// before a write that adds a cgroup applies; detached by the first write or read of
    /// `watch-pids` that finds none watched (or at unload). Taken before the watch set's
    /// writers' mutex.
    cgroup_move: Pin<KBox<Mutex<Option<TracepointProbe<State>>>>>,
    /// Open `events` files.
    pub(crate) readers: Atomic<u64>,
}

/// What the module holds in memory, in bytes, as `stats` reports it: nothing grows with the
/// events recorded, and only a bounded buffer per open `events` file with the readers.
pub(crate) struct Memory {
    pub(crate) rings: usize,
    pub(crate) watch: usize,
    pub(crate) paths: usize,
    pub(crate) unwind: usize,
    pub(crate) per_reader: usize,
    pub(crate) readers: u64,
}

impl Memory {
    pub(crate) fn total(&self) -> u64 {
        // CAST: byte counts of allocations fit in u64.
        (self.rings + self.watch + self.paths + self.unwind) as u64
            + self.readers * self.per_reader as u64
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
    /// The module's memory, now, with `per_reader` bytes for each open `events` file.
    pub(crate) fn memory(&self, per_reader: usize) -> Memory {
        let ring = self.state.ring.stats();
        Memory {
            rings: ring.rings * ring.ring_bytes,
            watch: self.state.watch.bytes(),
            paths: self.syscalls.path_bytes(),
            unwind: self.state.unwind.memory().0,
            per_reader,
            readers: self.readers.load(Relaxed),
        }
    }

    /// The monitor of `state`, with its probes.
    pub(crate) fn new(
        state: Arc<State>,
        syscalls: SyscallProbes,
        lifecycle: LifecycleProbes,
        fault_source: Source,
    ) -> Result<Self> {
        Ok(Self {
            state,
            syscalls,
            lifecycle,
            fault_source,
            cgroup_move: KBox::pin_init(new_mutex!(None, "memmon_cgroup_move"), GFP_KERNEL)?,
            readers: Atomic::new(0),
        })
    }

    /// Applies a `watch-pids` write, arming the syscall probes first if it adds a process or
    /// a cgroup, and attaching the cgroup move probe first if it adds a cgroup (a write that
    /// cannot fails and changes nothing); each process that a cgroup added makes watched
    /// gets its `cgroup` line. Detaches that probe if no cgroup is watched after.
    pub(crate) fn apply_watch_write(&self, request: &[u8]) -> Result {
        let mut cgroup_move = self.cgroup_move.lock();
        let result = self.state.watch.apply(
            request,
            |adds_cgroup| {
                self.syscalls.arm()?;
                if adds_cgroup && cgroup_move.is_none() {
                    *cgroup_move = Some(attach_cgroup_move(self.state.clone())?);
                }
                Ok(())
            },
            |joined| push_cgroup(&self.state, joined),
        );
        self.detach_cgroup_move_if_unused(&mut cgroup_move);
        result
    }

    /// `watch-pids` as text; detaches the cgroup move probe if no cgroup is watched (one was
    /// removed since the last write).
    pub(crate) fn watch_format(&self) -> Result<KVVec<u8>> {
        let mut cgroup_move = self.cgroup_move.lock();
        let content = self.state.watch.format();
        self.detach_cgroup_move_if_unused(&mut cgroup_move);
        content
    }

    /// Whether the cgroup move probe is attached.
    pub(crate) fn cgroup_move_attached(&self) -> bool {
        self.cgroup_move.lock().is_some()
    }

    /// Detaches the cgroup move probe (`cgroup_move`, its lock's guarded value) if no cgroup
    /// is watched: none can be added meanwhile, writes take the lock first.
    fn detach_cgroup_move_if_unused(&self, cgroup_move: &mut Option<TracepointProbe<State>>) {
        if cgroup_move.is_some() && self.state.watch.cgroup_count() == 0 {
            // Dropping it waits until no CPU runs it any more.
            drop(cgroup_move.take());
        }
    }

    /// Whether the syscall probes are armed (they are while a process is watched).
    pub(crate) fn syscall_probes_armed(&self) -> bool {
        self.syscalls.armed()
    }

    /// Probe hits missed: syscalls because too many were in flight at once, any probe hit
    /// recursively.
    pub(crate) fn probes_missed(&self) -> u64 {
        self.syscalls.missed() + self.lifecycle.missed() + self.syscalls.fault_probes_missed()
    }

    /// Faults the fault source's kprobes missed (too many pending at once).
    pub(crate) fn faults_missed(&self) -> u64 {
        self.syscalls.faults_missed()
    }
}
