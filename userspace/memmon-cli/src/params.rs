//! Module parameters set for the duration of a `run` or `record` and restored afterwards
//! (when the command ends, fails or is interrupted: the guard's `Drop`): `--stacks N`
//! (`stack_depth`, the depth of the user call stacks) and `--sample MS` (`sample_ms`, the
//! period of access sampling).

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use memmon::capture::control::{RingGrowth, RING_TARGET_BYTES};
use memmon::{ModuleParams, ProcInterface};

/// A module parameter set by memmon, restored to its previous value when dropped.
#[derive(Debug, Default)]
pub struct ParamGuard {
    /// The parameter file, its value before, and how a failed restore names it.
    restore: Option<(PathBuf, String, String)>,
}

impl ParamGuard {
    /// A guard with nothing to restore (the parameter was left alone).
    pub fn unchanged() -> ParamGuard {
        ParamGuard::default()
    }

    /// Writes `value` to `path`, whose value was `previous`; dropping the guard writes
    /// `previous` back (a failure then is a warning naming the parameter as `label`).
    pub fn set(
        path: &Path,
        previous: String,
        value: &str,
        label: String,
    ) -> io::Result<ParamGuard> {
        std::fs::write(path, value)?;
        Ok(ParamGuard {
            restore: Some((path.to_owned(), previous, label)),
        })
    }
}

impl Drop for ParamGuard {
    fn drop(&mut self) {
        if let Some((path, previous, label)) = &self.restore {
            if let Err(error) = std::fs::write(path, previous) {
                eprintln!("memmon: warning: cannot restore {label} to {previous}: {error}");
            }
        }
    }
}

/// The call-stack depth `record`, `run`, `attach` and `top` ask for when `--stacks` is not
/// given: the module's most, perf's default most (`kernel.perf_event_max_stack`), deep
/// enough for compilers, interpreters and their libraries (docs/performance.md: at 64,
/// 4.6 % of cc1plus's fault bytes had their stack cut at the limit; the cost per entry is
/// in `make bench`).
pub const DEFAULT_STACK_DEPTH: u32 = 127;

/// The most `stack_depth` of a module older than 127-entry stacks.
const OLD_STACK_MAX: u32 = 64;

/// Sets `stack_depth` to `depth`. `explicit`: the user asked (`--stacks`), so a module
/// without the parameter, or a refused value, is worth a warning. A module that refuses the
/// default (an older one, whose most is 64) is given its most instead.
pub fn stack_depth(params: &ModuleParams, depth: u32, explicit: bool) -> ParamGuard {
    let path = params.path("stack_depth");
    let Ok(previous) = std::fs::read_to_string(&path) else {
        if explicit && depth > 0 {
            eprintln!("memmon: warning: the module has no stack_depth parameter: no call stacks");
        }
        return ParamGuard::unchanged();
    };
    let previous = previous.trim().to_owned();
    if previous == depth.to_string() {
        return ParamGuard::unchanged();
    }
    let set = |depth: u32| {
        ParamGuard::set(
            &path,
            previous.clone(),
            &depth.to_string(),
            "stack_depth".to_owned(),
        )
    };
    let result = match set(depth) {
        Err(_) if !explicit && depth > OLD_STACK_MAX && previous != OLD_STACK_MAX.to_string() => {
            set(OLD_STACK_MAX)
        }
        result => result,
    };
    match result {
        Ok(guard) => guard,
        Err(error) => {
            if explicit {
                eprintln!("memmon: warning: cannot set stack_depth to {depth}: {error}");
            }
            ParamGuard::unchanged()
        }
    }
}

/// Grows the module's per-CPU event rings to 1 MiB each when they are smaller (issue 50:
/// a burst of faults, a dynamic loader's start-up, outran smaller rings), through
/// `/proc/memmon/buflen`, and says so in one line. `record`, `run`, `attach` and `top` call
/// it when they start (the agent has its own, which logs). With an older module that has
/// no `buflen`, the advice to load it with a larger buffer; a failed write is one warning
/// with the errno. Returns what was found and done.
pub fn grow_rings(proc: &ProcInterface) -> RingGrowth {
    let growth = proc.grow_rings(RING_TARGET_BYTES);
    if let Some(line) = ring_growth_message(&growth, &proc.path("buflen")) {
        eprintln!("{line}");
    }
    growth
}

/// The line [`grow_rings`] prints, if any.
pub fn ring_growth_message(growth: &RingGrowth, buflen: &Path) -> Option<String> {
    let (warning, text) = growth.describe(buflen, "memmon")?;
    let warning = if warning { "warning: " } else { "" };
    Some(format!("memmon: {warning}{text}"))
}

/// The shortest and longest sampling periods the module takes (0 is off).
pub const PERIOD_MS: std::ops::RangeInclusive<u32> = 10..=60000;

/// Parses `--sample MS`: 10 to 60000 milliseconds.
pub fn parse_period(text: &str) -> Result<u32, String> {
    let bad = || {
        format!(
            "expected a period in milliseconds from {} to {}",
            PERIOD_MS.start(),
            PERIOD_MS.end()
        )
    };
    let value: u32 = text.parse().map_err(|_| bad())?;
    if PERIOD_MS.contains(&value) {
        Ok(value)
    } else {
        Err(bad())
    }
}

/// Sets `sample_ms` to `period` (nothing when `None`). Errors, in the module's terms: the
/// module is not loaded, has no such parameter (built without access sampling), refuses
/// the value, or memmon is not root.
pub fn sample_period(
    params: &ModuleParams,
    proc: &ProcInterface,
    period: Option<u32>,
) -> Result<ParamGuard> {
    let Some(period) = period else {
        return Ok(ParamGuard::unchanged());
    };
    if !proc.root().exists() {
        bail!(
            "memmon module not loaded ({} does not exist)",
            proc.root().display()
        );
    }
    let path = params.path("sample_ms");
    let previous = match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().to_owned(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => bail!(
            "--sample: the memmon module has no access sampling ({} does not exist): load a memmon module of this version, which has it",
            path.display()
        ),
        Err(error) => bail!("--sample: cannot read {}: {error}", path.display()),
    };
    let label = path.display().to_string();
    ParamGuard::set(&path, previous, &period.to_string(), label).or_else(|error| {
        match error.raw_os_error() {
            Some(nix::libc::EINVAL) => bail!(
                "--sample: the module refused sample_ms={period} (EINVAL): it takes 0 (off) or {} to {} milliseconds",
                PERIOD_MS.start(),
                PERIOD_MS.end()
            ),
            Some(nix::libc::EACCES | nix::libc::EPERM) => bail!(
                "--sample: permission denied on {} (memmon needs root)",
                path.display()
            ),
            _ => bail!(
                "--sample: cannot set {} to {period}: {error}",
                path.display()
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_growth_lines() {
        let buflen = Path::new("/proc/memmon/buflen");
        let line = |growth| ring_growth_message(&growth, buflen);
        assert_eq!(line(RingGrowth::Unknown), None);
        assert_eq!(
            line(RingGrowth::LargeEnough {
                ring_bytes: 1 << 20
            }),
            None
        );
        assert_eq!(
            line(RingGrowth::Grown {
                from: 65536,
                to: 1048576,
                written: 2097152
            })
            .as_deref(),
            Some(
                "memmon: grew the module's event rings from 65536 to 1048576 bytes per CPU \
                 (wrote 2097152 to /proc/memmon/buflen)"
            )
        );
        assert_eq!(
            line(RingGrowth::NoBuflen {
                ring_bytes: 65536,
                rings: 2
            })
            .as_deref(),
            Some(
                "memmon: warning: the module's 2 event rings are 65536 bytes per CPU and a \
                 burst of faults can outrun memmon; this module cannot grow them \
                 (/proc/memmon/buflen does not exist): load it with a larger buflen (insmod \
                 memmon.ko buflen=2097152)"
            )
        );
        assert_eq!(
            line(RingGrowth::Failed {
                ring_bytes: 65536,
                written: 2097152,
                error: io::Error::from_raw_os_error(13)
            })
            .as_deref(),
            Some(
                "memmon: warning: cannot grow the module's event rings from 65536 bytes per \
                 CPU (writing 2097152 to /proc/memmon/buflen): EACCES: Permission denied (os \
                 error 13)"
            )
        );
    }

    #[test]
    fn periods() {
        assert_eq!(parse_period("10"), Ok(10));
        assert_eq!(parse_period("60000"), Ok(60000));
        for bad in ["0", "9", "60001", "-5", "1.5", "", "100ms"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
    }
}
