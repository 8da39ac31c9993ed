//! The [`Loader`] on this test process, writing into a [`KernelModel`]: a memory bound
//! that refuses some tables (`ENOSPC`) leaves their objects out with a warning, a module
//! that lost its tables gets them again, and forgetting a process sends 0 ranges.

use memmon_unwind::loader::{parse_status, Loader, Warning};
use memmon_unwind::protocol::{decode, Command, KernelModel};
use memmon_unwind::UnwindSink;

/// A sink that keeps every write, then hands it to a model.
struct Recorder {
    model: KernelModel,
    writes: Vec<Vec<u8>>,
}

impl UnwindSink for Recorder {
    fn write_command(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writes.push(bytes.to_vec());
        self.model.write_command(bytes)
    }
}

fn recorder(pid: u32) -> Recorder {
    let mut model = KernelModel::new();
    model.watched.insert(pid);
    Recorder {
        model,
        writes: Vec::new(),
    }
}

#[test]
fn sync_writes_tables_once_then_ranges() {
    let pid = std::process::id();
    let mut loader = Loader::new(recorder(pid));
    let first = loader.sync_process(pid).expect("sync");
    let writes = std::mem::take(&mut loader.sink_mut().writes);
    let commands: Vec<Command> = writes
        .iter()
        .map(|w| decode(w, memmon_unwind::Arch::native()).expect("valid"))
        .collect();
    let adds = commands
        .iter()
        .filter(|c| matches!(c, Command::AddTable { .. }))
        .count();
    assert_eq!(adds, first.added.len());
    assert!(
        matches!(commands.last(), Some(Command::SetMaps { pid: p, ranges }) if *p == pid && ranges.len() == first.ranges)
    );
    assert_eq!(commands.len(), adds + 1);

    // Again: no table is written twice, the ranges are given again.
    let again = loader.sync_process(pid).expect("sync");
    assert!(again.added.is_empty());
    assert_eq!(again.ranges, first.ranges);
    assert_eq!(loader.sink().writes.len(), 1);

    // The module lost its tables (reloaded): SET_MAPS gets ENOENT, the tables go again.
    loader.sink_mut().model.tables.clear();
    loader.sink_mut().model.processes.clear();
    let reloaded = loader.sync_process(pid).expect("sync after a reload");
    assert_eq!(reloaded.added.len(), first.added.len());
    assert_eq!(loader.sink().model.processes[&pid].len(), first.ranges);

    // The status text of the module gives the loaded set back.
    let status = parse_status(&format!(
        "table {} rows=1 bytes=72 ranges=0\ntotal bytes=72 max=33554432\n",
        first.added[0]
    ))
    .expect("status");
    loader.set_loaded_from_status(&status);
    assert_eq!(loader.loaded().len(), 1);

    loader.forget_process(pid).expect("forget");
    assert!(loader.sink().model.processes.is_empty());
    // A process no longer watched has nothing to forget.
    loader.sink_mut().model.watched.clear();
    loader.forget_process(pid).expect("forget, not watched");
}

#[test]
fn tables_over_the_bound_are_left_out() {
    let pid = std::process::id();
    let mut sink = recorder(pid);
    // Room for the small objects (ld.so, libgcc_s), not for libc or the test binary.
    sink.model.max_bytes = 160 * 1024;
    let mut loader = Loader::new(sink);
    let report = loader.sync_process(pid).expect("ENOSPC is no error");
    let refused: Vec<_> = report
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::NoSpace { key, path, .. } => Some((*key, path.clone())),
            _ => None,
        })
        .collect();
    assert!(
        refused.iter().any(|(_, path)| path.contains("libc.so")),
        "{report:?}"
    );
    assert!(!report.added.is_empty(), "the small tables fit: {report:?}");
    let model = &loader.sink().model;
    let ranges = &model.processes[&pid];
    assert_eq!(ranges.len(), report.ranges);
    for (key, _) in &refused {
        assert!(ranges.iter().all(|r| r.key != *key));
        assert!(!model.tables.contains_key(key));
    }
    for warning in &report.warnings {
        eprintln!("{warning}");
    }
}
