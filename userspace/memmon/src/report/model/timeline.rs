//! The timeline: per interval (fixed length, or between marks), faults by class, bytes
//! mapped and unmapped, net resident growth and the sites that grew.

use serde::Serialize;

use crate::report::model::picture::PageSize;
use crate::report::model::sites::SiteId;
use crate::report::model::stats::FaultClass;
use crate::stream::event::Timestamp;
use rustc_hash::FxHashMap;

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
    pub site_growth: FxHashMap<SiteId, i64>,
}

/// The groups of the RSS-over-time series.
pub const GROUPS: [&str; 5] = ["heap", "anonymous mmap", "stacks", "file", "shmem"];

/// Most points kept in the series (halved by dropping every other when exceeded).
const MAX_POINTS: usize = 4096;

/// Resident bytes by group at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Point {
    /// When.
    pub time: Timestamp,
    /// Bytes by [`GROUPS`].
    pub bytes: [u64; 5],
}

/// Builds the intervals while the capture is replayed.
#[derive(Debug, Clone)]
pub struct TimelineBuilder {
    slicing: Slicing,
    current: Interval,
    started: bool,
    done: Vec<Interval>,
    /// Group of each class id, per page kind (anon, file, shmem).
    class_groups: Vec<[u8; 3]>,
    groups: [i64; 5],
    series: Vec<Point>,
    step: u64,
    last_sample: u64,
    now: Timestamp,
    /// The size of the pages the groups count.
    page: PageSize,
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
    /// Counts the sites `remap` dropped under the site it moves them to.
    pub fn remap_sites(&mut self, remap: &crate::report::model::sites::SiteRemap) {
        for interval in self
            .done
            .iter_mut()
            .chain(std::iter::once(&mut self.current))
        {
            remap.map(&mut interval.site_growth);
            interval.site_growth.retain(|_, growth| *growth != 0);
        }
    }

    /// A builder cutting by `slicing`.
    pub fn new(slicing: Slicing) -> TimelineBuilder {
        TimelineBuilder {
            slicing,
            current: Interval::default(),
            started: false,
            done: Vec::new(),
            class_groups: Vec::new(),
            groups: [0; 5],
            series: Vec::new(),
            step: 1_000_000,
            last_sample: 0,
            now: Timestamp::default(),
            page: PageSize::DEFAULT,
        }
    }

    /// Counts pages of `page` bytes from now on (a capture's `# page-size`, before its
    /// first event).
    pub fn set_page_size(&mut self, page: PageSize) {
        self.page = page;
    }

    /// Declares the group of the next class id for each page kind.
    pub fn add_class(&mut self, groups: [u8; 3]) {
        self.class_groups.push(groups);
    }

    fn sample(&mut self, time: Timestamp) {
        let page = self.page;
        let bytes = self.groups.map(|pages| page.of(pages.max(0) as u64));
        if let Some(last) = self.series.last_mut() {
            if last.time == time {
                last.bytes = bytes;
                return;
            }
        }
        self.series.push(Point { time, bytes });
        self.last_sample = nanos(time);
        if self.series.len() > MAX_POINTS {
            let mut keep = false;
            self.series.retain(|_| {
                keep = !keep;
                keep
            });
            self.step = self.step.saturating_mul(2);
        }
    }

    /// Moves to `time`, closing intervals that ended before it.
    pub fn advance(&mut self, time: Timestamp) {
        if time > self.now {
            if self.started && nanos(time) >= self.last_sample.saturating_add(self.step) {
                // The state up to the previous event, stamped with it.
                let previous = self.now;
                self.sample(previous);
            }
            self.now = time;
        }
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
            if now >= nanos(self.current.start).saturating_add(step) {
                let end = nanos(self.current.start).saturating_add(step);
                self.close(from_nanos(end), None);
                // Skip the empty intervals of a gap at once.
                let aligned = now / step * step;
                if aligned > nanos(self.current.start) {
                    self.current.start = from_nanos(aligned);
                    self.current.end = self.current.start;
                }
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
        self.sample(time);
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
            self.current.mapped = self.current.mapped.saturating_add(delta.unsigned_abs());
        } else {
            self.current.unmapped = self.current.unmapped.saturating_add(delta.unsigned_abs());
        }
    }

    /// Resident pages of `site`, of `kind` in `class`, changed by `delta`.
    pub fn resident(&mut self, site: SiteId, kind: usize, class: u32, delta: i64) {
        let group = self
            .class_groups
            .get(class as usize)
            .map_or(1, |groups| groups[kind.min(2)]);
        self.groups[usize::from(group).min(4)] += delta;
        self.current.resident_growth = self
            .current
            .resident_growth
            .saturating_add(self.page.of_signed(delta));
        *self.current.site_growth.entry(site).or_insert(0) += delta;
    }

    /// A whole picture's resident pages added (`sign` 1) or taken away (-1) at once: a
    /// forked child's copy of its parent's.
    pub fn picture(&mut self, picture: &crate::report::model::picture::Picture, sign: i64) {
        for (&(kind, class), &pages) in &picture.class_resident {
            let group = self
                .class_groups
                .get(class as usize)
                .map_or(1, |groups| groups[kind.index().min(2)]);
            let delta = i64::try_from(pages)
                .unwrap_or(i64::MAX)
                .saturating_mul(sign);
            self.groups[usize::from(group).min(4)] += delta;
            self.current.resident_growth = self
                .current
                .resident_growth
                .saturating_add(self.page.of_signed(delta));
        }
        for (&site, &pages) in &picture.site_resident {
            let delta = i64::try_from(pages)
                .unwrap_or(i64::MAX)
                .saturating_mul(sign);
            *self.current.site_growth.entry(site).or_insert(0) += delta;
        }
    }

    /// The intervals, the last one closed at the last event, and the RSS series.
    pub fn finish(mut self) -> (Vec<Interval>, Vec<Point>) {
        if self.started {
            let now = self.now;
            self.sample(now);
            let end = self.current.end;
            self.close(end, None);
        }
        self.done.retain(|i| {
            i.faults.iter().any(|&n| n > 0) || i.mapped > 0 || i.unmapped > 0 || i.mark.is_some()
        });
        (self.done, self.series)
    }
}
