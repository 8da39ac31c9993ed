//! `--sample MS`: sets the module's `sample_ms` parameter (access sampling, issue 15) for
//! the duration of a `run` or `record` and restores the previous value afterwards (when
//! the command ends, fails or is interrupted: the guard's `Drop`).

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// The module's parameter directory; `MEMMON_PARAMS_DIR` overrides it (tests).
pub fn params_dir() -> PathBuf {
    std::env::var_os("MEMMON_PARAMS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/sys/module/memmon/parameters"))
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

/// Restores the previous `sample_ms` when dropped.
#[derive(Debug)]
pub struct SamplePeriod {
    /// The parameter file and its value before, when memmon changed it.
    restore: Option<(PathBuf, String)>,
}

impl SamplePeriod {
    /// Sets `sample_ms` to `period` (nothing when `None`). Errors, in the module's terms:
    /// the module is not loaded, has no such parameter (built without access sampling),
    /// refuses the value, or memmon is not root.
    pub fn set(period: Option<u32>, proc_root: &Path) -> Result<SamplePeriod> {
        let Some(period) = period else {
            return Ok(SamplePeriod { restore: None });
        };
        if !proc_root.exists() {
            bail!(
                "memmon module not loaded ({} does not exist)",
                proc_root.display()
            );
        }
        let path = params_dir().join("sample_ms");
        let previous = match std::fs::read_to_string(&path) {
            Ok(text) => text.trim().to_owned(),
            Err(error) if error.kind() == io::ErrorKind::NotFound => bail!(
                "--sample: the memmon module has no access sampling ({} does not exist): load a module built with it (issue 15)",
                path.display()
            ),
            Err(error) => bail!("--sample: cannot read {}: {error}", path.display()),
        };
        if let Err(error) = std::fs::write(&path, period.to_string()) {
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
        }
        Ok(SamplePeriod {
            restore: Some((path, previous)),
        })
    }
}

impl Drop for SamplePeriod {
    fn drop(&mut self) {
        if let Some((path, previous)) = &self.restore {
            if let Err(error) = std::fs::write(path, previous) {
                eprintln!(
                    "memmon: warning: cannot restore {} to {previous}: {error}",
                    path.display()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods() {
        assert_eq!(parse_period("10"), Ok(10));
        assert_eq!(parse_period("60000"), Ok(60000));
        for bad in ["0", "9", "60001", "-5", "1.5", "", "100ms"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
    }
}
