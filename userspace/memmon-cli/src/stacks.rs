//! `--stacks N`: sets the module's `stack_depth` parameter for the duration of a `run` or
//! `record` and restores it afterwards.

use std::path::Path;

/// The module parameter (writable by root at run time, issue 10).
const STACK_DEPTH: &str = "/sys/module/memmon/parameters/stack_depth";

/// Restores the previous `stack_depth` when dropped.
pub struct StackDepth {
    previous: Option<String>,
}

impl StackDepth {
    /// Sets `stack_depth` to `depth`. `explicit`: the user asked (`--stacks`), so a module
    /// without the parameter, or a refused value, is worth a warning.
    pub fn set(depth: u32, explicit: bool) -> StackDepth {
        let path = Path::new(STACK_DEPTH);
        let Ok(previous) = std::fs::read_to_string(path) else {
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
        if let Err(error) = std::fs::write(path, depth.to_string()) {
            if explicit {
                eprintln!("memmon: warning: cannot set stack_depth to {depth}: {error}");
            }
            return StackDepth { previous: None };
        }
        StackDepth {
            previous: Some(previous),
        }
    }
}

impl Drop for StackDepth {
    fn drop(&mut self) {
        if let Some(previous) = &self.previous {
            if let Err(error) = std::fs::write(STACK_DEPTH, previous) {
                eprintln!("memmon: warning: cannot restore stack_depth to {previous}: {error}");
            }
        }
    }
}
