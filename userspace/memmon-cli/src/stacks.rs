//! `--stacks N`: sets the module's `stack_depth` parameter for the duration of a `run` or
//! `record` and restores it afterwards.

use std::path::PathBuf;

/// The module parameter (writable by root at run time, issue 10).
fn stack_depth_path() -> PathBuf {
    crate::params::params_dir().join("stack_depth")
}

/// Restores the previous `stack_depth` when dropped.
pub struct StackDepth {
    previous: Option<String>,
}

impl StackDepth {
    /// Sets `stack_depth` to `depth`. `explicit`: the user asked (`--stacks`), so a module
    /// without the parameter, or a refused value, is worth a warning.
    pub fn set(depth: u32, explicit: bool) -> StackDepth {
        let path = stack_depth_path();
        let Ok(previous) = std::fs::read_to_string(&path) else {
            if explicit && depth > 0 {
                eprintln!(
                    "memmon: warning: the module has no stack_depth parameter: no call stacks"
                );
            }
            return StackDepth { previous: None };
        };
        let previous = previous.trim().to_owned();
        if previous == depth.to_string() {
            return StackDepth { previous: None };
        }
        if let Err(error) = std::fs::write(&path, depth.to_string()) {
            if explicit {
                eprintln!("memmon: warning: cannot set stack_depth to {depth}: {error}");
            }
            return StackDepth { previous: None };
        }
        warn_if_rings_small(depth);
        StackDepth {
            previous: Some(previous),
        }
    }
}

/// Says so when a ring holds few faults with stacks of `depth` entries, so that a burst of
/// faults could outrun the reader. Records are packed (docs/design.md): a fault of a storm
/// takes about 8 bytes, and each stack entry 1 byte when it is the same as in the previous
/// record, up to 10 when it is not; this counts 4 bytes an entry.
fn warn_if_rings_small(depth: u32) {
    let Ok(stats) = std::fs::read_to_string("/proc/memmon/stats") else {
        return;
    };
    let ring_bytes = stats
        .lines()
        .find_map(|line| line.strip_prefix("ring_bytes "))
        .and_then(|value| value.trim().parse::<u64>().ok());
    if let Some(ring_bytes) = ring_bytes {
        let faults = ring_bytes / (8 + 4 * u64::from(depth));
        if depth > 0 && faults < 1000 {
            eprintln!(
                "memmon: warning: with {depth}-frame stacks a ring of {ring_bytes} bytes holds \
                 about {faults} faults per CPU, and a burst of faults can outrun memmon; load \
                 the module with a larger buflen (insmod memmon.ko buflen=4194304)"
            );
        }
    }
}

impl Drop for StackDepth {
    fn drop(&mut self) {
        if let Some(previous) = &self.previous {
            if let Err(error) = std::fs::write(stack_depth_path(), previous) {
                eprintln!("memmon: warning: cannot restore stack_depth to {previous}: {error}");
            }
        }
    }
}
