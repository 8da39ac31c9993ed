//! The timeline: per interval (fixed length, or between marks), faults by class, bytes
//! mapped and unmapped, net resident growth and the sites that grew.

use serde::Serialize;

use super::fasthash::FastMap;
use super::picture::PAGE;
use super::sites::SiteId;
use super::stats::FaultClass;
use crate::event::Timestamp;

/// How the capture is cut into intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slicing {
    /// Fixed intervals of this many nanoseconds.
    Every(u64),
    /// Between marks.
    Marks,
}

/// One interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Interval {
    /// Start time (first event's interval start).
    pub start: Timestamp,
    /// End time.
    pub end: Timestamp,
    /// The mark that ends it, when slicing by marks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// Faults by class (first-touch, file, swap-in, cow, other).
    pub faults: [u64; 5],
    /// Bytes mapped.
    pub mapped: u64,
    /// Bytes unmapped.
    pub unmapped: u64,
    /// Net change of resident bytes.
    pub resident_growth: i64,
    /// Pages brought back from swap.
    pub swapins: u64,
    /// Net resident change by site (pages), for the top contributors.
    #[serde(skip)]
    pub site_growth: FastMap<SiteId, i64>,
}

/// Builds the intervals while the capture is replayed.
#[derive(Debug, Clone)]
pub struct TimelineBuilder {
    slicing: Slicing,
    current: Interval,
    started: bool,
    done: Vec<Interval>,
}

fn nanos(time: Timestamp) -> u64 {
    u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)
}

fn from_nanos(value: u64) -> Timestamp {
    Timestamp {
        secs: value / 1_000_000_000,
        nanos: (value % 1_000_000_000) as u32,
    }
}

impl TimelineBuilder {
    /// A builder cutting by `slicing`.
    pub fn new(slicing: Slicing) -> TimelineBuilder {
        TimelineBuilder {
            slicing,
            current: Interval::default(),
            started: false,
            done: Vec::new(),
        }
    }

    /// Moves to `time`, closing intervals that ended before it.
    pub fn advance(&mut self, time: Timestamp) {
        if !self.started {
            self.started = true;
            self.current.start = match self.slicing {
                Slicing::Every(step) if step > 0 => from_nanos(nanos(time) / step * step),
                _ => time,
            };
            self.current.end = time;
            return;
        }
        if let Slicing::Every(step) = self.slicing {
            let step = step.max(1);
            let now = nanos(time);
            while now >= nanos(self.current.start).saturating_add(step) {
                let end = nanos(self.current.start).saturating_add(step);
                self.close(from_nanos(end), None);
            }
        }
        if time > self.current.end {
            self.current.end = time;
        }
    }

    fn close(&mut self, end: Timestamp, mark: Option<String>) {
        let mut next = Interval {
            start: end,
            end,
            ..Interval::default()
        };
        std::mem::swap(&mut next, &mut self.current);
        next.end = end;
        next.mark = mark;
        self.done.push(next);
    }

    /// A mark at `time`: ends the interval when slicing by marks.
    pub fn mark(&mut self, time: Timestamp, text: &str) {
        self.advance(time);
        if self.slicing == Slicing::Marks {
            self.close(time, Some(text.to_owned()));
        }
    }

    /// A fault of `class`.
    pub fn fault(&mut self, class: FaultClass) {
        self.current.faults[class.index()] += 1;
        if class == FaultClass::SwapIn {
            self.current.swapins += 1;
        }
    }

    /// Bytes mapped (positive) or unmapped (negative).
    pub fn mapped(&mut self, delta: i64) {
        if delta >= 0 {
            self.current.mapped += delta as u64;
        } else {
            self.current.unmapped += delta.unsigned_abs();
        }
    }

    /// Resident pages of `site` changed by `delta`.
    pub fn resident(&mut self, site: SiteId, delta: i64) {
        self.current.resident_growth += delta * PAGE as i64;
        *self.current.site_growth.entry(site).or_insert(0) += delta;
    }

    /// The intervals, the last one closed at the last event.
    pub fn finish(mut self) -> Vec<Interval> {
        if self.started {
            let end = self.current.end;
            self.close(end, None);
        }
        self.done.retain(|i| {
            i.faults.iter().any(|&n| n > 0) || i.mapped > 0 || i.unmapped > 0 || i.mark.is_some()
        });
        self.done
    }
}
