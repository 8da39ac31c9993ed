//! The peak of a capture, found in the replay's one pass: the moment its live processes
//! together held the most resident memory, and what each of them held then.
//!
//! The tracker keeps each process's picture at the highest moment so far and, per process,
//! the net changes since. When the total passes that highest, the changes are applied to
//! those pictures and cleared. Every change is recorded once and applied at most once, and
//! the changes kept are net per key (never more keys than the pictures have): the replay
//! stays O(events) in time, and no picture is copied.

use crate::report::model::class::PageKind;
use crate::report::model::moment::{MomentState, When};
use crate::report::model::picture::{ClassId, PageSize, Picture, PictureChanges};
use crate::report::model::sites::SiteId;
use crate::report::model::ProcessKey;
use crate::stream::event::Timestamp;
use rustc_hash::{FxHashMap, FxHashSet};

/// The highest moment so far of one capture.
#[derive(Debug, Clone, Copy)]
struct Highest {
    pages: u64,
    time: Timestamp,
}

/// What changed of one process since the highest moment.
#[derive(Debug, Default)]
struct Since {
    changes: PictureChanges,
    /// In [`PeakTracker::changed`].
    listed: bool,
}

/// Finds the peak of the capture being replayed.
#[derive(Debug, Default)]
pub struct PeakTracker {
    /// Resident pages of the capture's processes now.
    pages: u64,
    highest: Option<Highest>,
    /// What each process held at the highest moment (none: nothing).
    at_highest: FxHashMap<ProcessKey, Picture>,
    /// What changed since, per process (kept with its room while the process holds
    /// something).
    since: FxHashMap<ProcessKey, Since>,
    /// The processes with changes since.
    changed: Vec<ProcessKey>,
    /// The processes that exited (and did not exec or fork anew since): what the stream
    /// still says of them holds nothing live.
    exited: FxHashSet<ProcessKey>,
}

impl PeakTracker {
    /// The changes of process `key`, unless it exited.
    fn changes(&mut self, key: ProcessKey) -> Option<&mut PictureChanges> {
        if self.exited.contains(&key) {
            return None;
        }
        let since = self.since.entry(key).or_default();
        if !since.listed {
            since.listed = true;
            self.changed.push(key);
        }
        Some(&mut since.changes)
    }

    /// Resident pages of the capture's live processes now: the measure the peak is the
    /// highest of.
    pub fn live_pages(&self) -> u64 {
        self.pages
    }

    /// Process `key` exited (its memory released): it holds nothing live any more.
    pub fn exited(&mut self, key: ProcessKey) {
        self.exited.insert(key);
    }

    /// Forgets process `key`, which exited ([`crate::report::model::replay::Replay::forget_exited`]).
    pub fn forget(&mut self, key: ProcessKey) {
        self.exited.remove(&key);
        self.since.remove(&key);
        self.at_highest.remove(&key);
        self.changed.retain(|changed| *changed != key);
    }

    /// Counts the sites `remap` dropped under the site it moves them to.
    pub fn remap_sites(&mut self, remap: &crate::report::model::sites::SiteRemap) {
        for picture in self.at_highest.values_mut() {
            picture.remap_sites(remap);
        }
        for since in self.since.values_mut() {
            since.changes.remap_sites(remap);
        }
    }

    /// Process `key` lives again (an exec, or a fork that reuses its pid), holding nothing
    /// yet.
    pub fn revived(&mut self, key: ProcessKey) {
        self.exited.remove(&key);
    }

    /// `delta` resident pages of `site` in (`kind`, `class`) for process `key`.
    pub fn resident(
        &mut self,
        key: ProcessKey,
        site: SiteId,
        kind: PageKind,
        class: ClassId,
        delta: i64,
    ) {
        if let Some(changes) = self.changes(key) {
            changes.resident(site, kind, class, delta);
            self.pages = self.pages.saturating_add_signed(delta);
        }
    }

    /// `delta` mapped bytes of `site` in `class` for process `key`.
    pub fn mapped(&mut self, key: ProcessKey, site: SiteId, class: ClassId, delta: i64) {
        if let Some(changes) = self.changes(key) {
            changes.mapped(site, class, delta);
        }
    }

    /// `delta` swapped pages for process `key`.
    pub fn swapped(&mut self, key: ProcessKey, delta: i64) {
        if let Some(changes) = self.changes(key) {
            changes.swapped(delta);
        }
    }

    /// Process `key`'s picture `old` replaced by `new` at once (a forked child's copy of
    /// its parent).
    pub fn replaced(&mut self, key: ProcessKey, old: &Picture, new: &Picture) {
        let resident = |p: &Picture| p.kinds.iter().fold(0u64, |a, &b| a.saturating_add(b));
        let Some(changes) = self.changes(key) else {
            return;
        };
        changes.picture(old, -1);
        changes.picture(new, 1);
        self.pages = self
            .pages
            .saturating_sub(resident(old))
            .saturating_add(resident(new));
    }

    /// An event has been applied at `time`: a moment. If it is the highest so far (the
    /// first of equals), the pictures are brought to it.
    pub fn settle(&mut self, time: Timestamp) {
        if self.highest.is_some_and(|h| self.pages <= h.pages) {
            return;
        }
        self.highest = Some(Highest {
            pages: self.pages,
            time,
        });
        for key in self.changed.drain(..) {
            let Some(since) = self.since.get_mut(&key) else {
                continue;
            };
            since.listed = false;
            let picture = self.at_highest.entry(key).or_default();
            since.changes.drain_into(picture);
            if picture.is_empty() {
                // Gone (exit, exec): nothing to keep of it.
                self.at_highest.remove(&key);
                self.since.remove(&key);
            }
        }
    }

    /// Ends the capture: its peak (none without an event), what its processes (in `order`)
    /// held then, summed into `peak`; its pages are of `page` bytes. The tracker starts
    /// afresh for the next capture.
    pub fn finish(
        &mut self,
        capture: usize,
        start: Option<Timestamp>,
        order: &[ProcessKey],
        peak: &mut MomentState,
        page: PageSize,
    ) {
        let done = std::mem::take(self);
        let (Some(highest), Some(start)) = (done.highest, start) else {
            return;
        };
        let mut pictures = done.at_highest;
        for key in order {
            if let Some(picture) = pictures.remove(key) {
                peak.holdings.add(*key, picture, page);
            }
        }
        peak.when.push(When::new(
            capture,
            highest.time,
            start,
            page.of(highest.pages),
        ));
    }
}
