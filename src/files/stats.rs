// SPDX-License-Identifier: GPL-2.0

//! `/proc/memmon/stats`: counters and memory use, one `name value` line each.

use super::{pin_box, read_generated, reader_bytes};
use crate::kernel_ext::byte_writer::ByteWriter;
use crate::kernel_ext::kcrate::{
    alloc::KVec,
    fs::{File, LocalFile},
    sync::{Arc, ArcBorrow},
    uaccess::UserSliceWriter,
};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::procfs::ProcFile;
use crate::monitor::Monitor;
use crate::record::event::Kind;
use core::fmt::Write;

/// An open `/proc/memmon/stats`.
pub(crate) struct StatsFile {
    monitor: Arc<Monitor>,
}

impl StatsFile {
    fn format(&self) -> Result<KVec<u8>> {
        let state = &self.monitor.state;
        let stats = state.ring.stats();
        let mut out = ByteWriter(KVec::new());
        (|| -> core::fmt::Result {
            writeln!(out, "produced {}", stats.produced)?;
            writeln!(out, "delivered {}", stats.delivered)?;
            writeln!(out, "overwritten {}", stats.overwritten)?;
            writeln!(out, "lost_reported {}", stats.reported_lost)?;
            writeln!(out, "probe_missed {}", self.monitor.probes_missed())?;
            writeln!(out, "fault_source {}", self.monitor.fault_source.name())?;
            writeln!(out, "fault_missed {}", self.monitor.faults_missed())?;
            writeln!(out, "watched {}", state.watch.count())?;
            writeln!(out, "watched_cgroups {}", state.watch.cgroup_count())?;
            writeln!(
                out,
                "cgroup_move_probe {}",
                u8::from(self.monitor.cgroup_move_attached())
            )?;
            writeln!(
                out,
                "syscall_probes_armed {}",
                u8::from(self.monitor.syscall_probes_armed())
            )?;
            writeln!(out, "rings {}", stats.rings)?;
            writeln!(out, "ring_bytes {}", stats.ring_bytes)?;
            writeln!(out, "buflen {}", stats.rings * stats.ring_bytes)?;
            writeln!(out, "page_size {}", crate::bindings::PAGE_SIZE)?;
            writeln!(out, "shed_stacks {}", stats.shed_stacks)?;
            writeln!(out, "dropped_faults {}", stats.dropped_faults)?;
            writeln!(out, "generations {}", crate::probes::sample::generation())?;
            let (arm_ns, armed) = crate::probes::sample::arming_totals();
            writeln!(out, "sample_arm_ns {arm_ns}")?;
            writeln!(out, "sample_armed {armed}")?;
            let memory = self.monitor.memory(reader_bytes(stats.rings));
            writeln!(out, "readers {}", memory.readers)?;
            writeln!(out, "memory_rings {}", memory.rings)?;
            writeln!(out, "memory_watch {}", memory.watch)?;
            writeln!(out, "memory_paths {}", memory.paths)?;
            writeln!(out, "memory_unwind {}", memory.unwind)?;
            writeln!(out, "memory_per_reader {}", memory.per_reader)?;
            writeln!(out, "memory_total {}", memory.total())?;
            let (tables, processes) = state.unwind.counts();
            writeln!(out, "unwind_tables {tables}")?;
            writeln!(out, "unwind_processes {processes}")?;
            writeln!(out, "unwind_max_bytes {}", state.unwind.memory().1)?;
            for kind in Kind::ALL {
                writeln!(out, "{} {}", kind.name(), stats.per_kind[kind as usize])?;
            }
            Ok(())
        })()
        .map_err(|_| ENOMEM)?;
        Ok(out.0)
    }
}

#[vtable]
impl ProcFile for StatsFile {
    type Shared = Monitor;

    fn open(monitor: ArcBorrow<'_, Monitor>, _file: &File) -> Result<Pin<KBox<Self>>> {
        pin_box(Self {
            monitor: monitor.into(),
        })
    }

    fn read(&self, _file: &LocalFile, out: UserSliceWriter, pos: &mut i64) -> Result<usize> {
        read_generated(&self.format()?, out, pos)
    }
}
