//! The moments a report shows (`--at`): the peak, the end, a mark or a time, and what the
//! processes held at each.

use serde::Serialize;

use crate::report::model::picture::{PageSize, Picture};
use crate::report::model::replay::Analysis;
use crate::report::model::ProcessKey;
use crate::stream::event::Timestamp;

/// A moment of the captures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Moment {
    /// The moment the live processes of a capture together held the most resident memory
    /// (with several captures, each one's peak, summed).
    #[default]
    Peak,
    /// Each process's last state before it released its memory, summed.
    End,
    /// The state at the first mark with this text.
    Mark(String),
    /// The state this many nanoseconds after the capture's start (of each capture, summed).
    Time(u64),
}

impl Moment {
    /// Parses `--at`: `peak`, `end`, a time since the capture's start with its unit
    /// (`9.1s`, `250ms`, `100us`, `5000ns`), else the text of a mark.
    pub fn parse(text: &str) -> Moment {
        match text {
            "peak" => Moment::Peak,
            "end" => Moment::End,
            _ => parse_time(text).map_or_else(|| Moment::Mark(text.to_owned()), Moment::Time),
        }
    }

    /// The time asked, for the replay ([`crate::report::ReplayOptions::at_time`]).
    pub fn time(&self) -> Option<u64> {
        match self {
            Moment::Time(nanos) => Some(*nanos),
            _ => None,
        }
    }
}

/// A duration with its unit (`9.1s`, `250ms`, `100us`, `5000ns`) in nanoseconds.
fn parse_time(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        _ => return None,
    };
    let nanos = number.parse::<f64>().ok()? * scale;
    (nanos.is_finite() && nanos >= 0.0 && nanos < u64::MAX as f64).then_some(nanos.round() as u64)
}

/// What the processes held at one moment: each one's picture, in the order the processes
/// appeared, and their sum.
#[derive(Debug, Clone, Default)]
pub struct Holdings {
    /// Each process's picture (those that held nothing may be left out).
    pub processes: Vec<(ProcessKey, Picture)>,
    /// Their sum.
    pub total: Picture,
}

impl Holdings {
    /// Adds a process's picture, of pages of `page` bytes.
    pub fn add(&mut self, key: ProcessKey, picture: Picture, page: PageSize) {
        self.total.merge(&picture, page);
        self.processes.push((key, picture));
    }

    /// Adds another capture's holdings, of pages of `page` bytes.
    pub fn extend(&mut self, other: Holdings, page: PageSize) {
        self.total.merge(&other.total, page);
        self.processes.extend(other.processes);
    }

    /// Counts the sites `remap` dropped under the site it moves them to.
    pub fn remap_sites(&mut self, remap: &crate::report::model::sites::SiteRemap) {
        for (_, picture) in &mut self.processes {
            picture.remap_sites(remap);
        }
        self.total.remap_sites(remap);
    }

    /// The picture of process `key`, if it held anything.
    pub fn process(&self, key: ProcessKey) -> Option<&Picture> {
        self.processes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, picture)| picture)
    }
}

/// When a moment was in one capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct When {
    /// Which capture (0: the first given).
    pub capture: usize,
    /// The time, on the clock of the capture's lines.
    pub time: Timestamp,
    /// Nanoseconds since the capture's start (its `# start` header, else its first event).
    pub since_start_ns: u64,
    /// Resident bytes of the capture's live processes together then.
    pub resident: u64,
}

/// Nanoseconds from `start` to `time` (0 if `time` is earlier).
pub fn since(start: Timestamp, time: Timestamp) -> u64 {
    u64::try_from(time.as_nanos().saturating_sub(start.as_nanos())).unwrap_or(u64::MAX)
}

/// The time `nanos` nanoseconds after `start`.
pub fn after(start: Timestamp, nanos: u64) -> Timestamp {
    let total = start.as_nanos().saturating_add(u128::from(nanos));
    let per_second = u128::from(Timestamp::NANOS_PER_SEC);
    Timestamp {
        secs: u64::try_from(total / per_second).unwrap_or(u64::MAX),
        nanos: (total % per_second) as u32,
    }
}

impl When {
    /// `time` of `capture`, which started at `start`, with `resident` bytes.
    pub fn new(capture: usize, time: Timestamp, start: Timestamp, resident: u64) -> When {
        When {
            capture,
            time,
            since_start_ns: since(start, time),
            resident,
        }
    }
}

/// The state at a moment of each capture (the peak, a time), summed over the captures.
#[derive(Debug, Clone, Default)]
pub struct MomentState {
    /// The moment in each capture that has it.
    pub when: Vec<When>,
    /// What the processes held then.
    pub holdings: Holdings,
}

/// The state at `--at TIME`.
#[derive(Debug, Clone, Default)]
pub struct TimeState {
    /// The time asked, in nanoseconds since each capture's start.
    pub asked: u64,
    /// The state then (the captures that ended before it: their state at the end, which
    /// has only the processes still alive).
    pub state: MomentState,
    /// The longest capture: nanoseconds from its start to its last event.
    pub longest: u64,
}

/// Why a moment cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MomentError {
    /// `--at` names no mark of the capture.
    #[error("no mark {0:?} in the capture (marks: {1})")]
    NoSuchMark(String, String),
    /// `--at TIME` is after the last event of every capture.
    #[error("--at {asked}: the capture ends {ends} after its start")]
    TimeAfterEnd {
        /// The time asked (`9.1 s`).
        asked: String,
        /// When the longest capture's last event was (`3.2 s`).
        ends: String,
    },
    /// The replay was not told the time (`ReplayOptions::at_time`).
    #[error("the state at {0} was not kept by the replay (ReplayOptions::at_time)")]
    TimeNotReplayed(String),
}

/// A duration for people: `470 ms`, `9.1 s`, `153 s`.
pub fn duration(nanos: u64) -> String {
    let seconds = nanos as f64 / 1e9;
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1e3)
    } else if seconds < 100.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{seconds:.0} s")
    }
}

/// A moment resolved in an analysis.
#[derive(Debug, Clone, Copy)]
pub struct Resolved<'a> {
    /// What the processes held then.
    pub holdings: &'a Holdings,
    /// When, in each capture (empty for the end, which is each process's own last moment).
    pub when: &'a [When],
}

impl Analysis {
    /// What the processes held at `moment`. Without a moment (a capture without events),
    /// the peak is the end.
    pub fn at(&self, moment: &Moment) -> Result<Resolved<'_>, MomentError> {
        let end = Resolved {
            holdings: &self.end,
            when: &[],
        };
        match moment {
            Moment::Peak if self.peak.when.is_empty() => Ok(end),
            Moment::Peak => Ok(Resolved {
                holdings: &self.peak.holdings,
                when: &self.peak.when,
            }),
            Moment::End => Ok(end),
            Moment::Mark(text) => {
                let mark = self.marks.iter().find(|m| &m.text == text).ok_or_else(|| {
                    let names: Vec<String> =
                        self.marks.iter().map(|m| format!("{:?}", m.text)).collect();
                    MomentError::NoSuchMark(text.clone(), names.join(", "))
                })?;
                Ok(Resolved {
                    holdings: &mark.holdings,
                    when: std::slice::from_ref(&mark.when),
                })
            }
            Moment::Time(asked) => {
                let state = self
                    .at_time
                    .as_ref()
                    .filter(|state| state.asked == *asked)
                    .ok_or_else(|| MomentError::TimeNotReplayed(duration(*asked)))?;
                if state.longest < *asked {
                    return Err(MomentError::TimeAfterEnd {
                        asked: duration(*asked),
                        ends: duration(state.longest),
                    });
                }
                Ok(Resolved {
                    holdings: &state.state.holdings,
                    when: &state.state.when,
                })
            }
        }
    }
}
