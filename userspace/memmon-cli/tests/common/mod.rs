//! What the CLI tests against a fake /proc root share (each test file is a crate of its own).

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory `memmon-cli-SUITE-PID-NAME/memmon` of plain files named like the
/// module's: an empty stream, an empty watch set, stats with nothing produced.
pub fn fake_proc_root(suite: &str, name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("memmon-cli-{suite}-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let root = dir.join("memmon");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("events"), "").unwrap();
    fs::write(root.join("watch-pids"), "\n").unwrap();
    fs::write(root.join("stats"), "produced 0\n").unwrap();
    root
}

/// The memmon binary, pointed at `root` (not at what `MEMMON_PROC_ROOT` says).
pub fn memmon(root: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memmon"));
    command.env_remove("MEMMON_PROC_ROOT");
    command.arg("--proc-root").arg(root);
    command
}
