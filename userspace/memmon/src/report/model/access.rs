//! Access sampling: the `gen` lines and `fault type=access ... gen=N` of a
//! capture, recorded during the replay with what the cold/hot picture needs.
//!
//! The module arms a watched process's resident pages every generation and reports each
//! page's first access in it. An access fault brings nothing into RSS (the replay leaves
//! the address-space model alone for it); here every sampled access becomes a [`Touch`]
//! carrying how many whole generations the page had gone untouched before it: its *idle*
//! count. With the view's `--cold K`, a touch is cold when idle ≥ K.
//!
//! Idle of a page at generation N = N − 1 − L, where L is the last generation in which the
//! page was accessed (a sampled access) or brought into RSS (a fault of the stream that
//! made it resident: anon, file, swap, copy of the zero page). A page brought in before the
//! process's first `gen` line counts as brought in just before it (L = first − 1), and so
//! does a page the capture never saw brought in (resident before watching began). A page
//! brought in during generation G (after G was armed) is first armed in G + 1: touched
//! then, its idle is 0.

use std::collections::HashMap;

use crate::report::model::sites::SiteId;
use crate::report::model::ProcessKey;
use crate::stream::event::Timestamp;
use rustc_hash::FxHashMap;

/// Buckets of the idle histograms: idle 0 to 63, the last one for 64 or more.
pub const IDLE_BUCKETS: usize = 65;

/// When a page was last seen used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// Accessed or brought in during this generation.
    Gen(u64),
    /// Brought in before the process's first generation.
    Before,
}

/// One process's sampling state.
#[derive(Debug, Clone, Default)]
struct Tracker {
    /// The latest generation started for the process.
    current: Option<u64>,
    /// Its first generation.
    first: Option<u64>,
    /// Last use by virtual page number.
    last: FxHashMap<u64, Seen>,
}

impl Tracker {
    /// Whole generations before `n` in which page `vpn` went untouched.
    fn idle(&self, vpn: u64, n: u64) -> u64 {
        match self.last.get(&vpn) {
            Some(Seen::Gen(g)) => n.saturating_sub(g.saturating_add(1)),
            Some(Seen::Before) | None => n.saturating_sub(self.first.unwrap_or(n)),
        }
    }
}

/// A `gen` line: a generation starts for a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerationLine {
    /// The process.
    pub key: ProcessKey,
    /// The generation.
    pub n: u64,
    /// Pages the module armed (`armed=`).
    pub armed: u64,
    /// When.
    pub time: Timestamp,
    /// The pages the model holds resident at this moment (stacks excepted: the module
    /// does not arm them), by idle generations ([`IDLE_BUCKETS`]).
    pub resident_idle: Vec<u64>,
}

/// A sampled first access to one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    /// The process.
    pub key: ProcessKey,
    /// The generation (`gen=`).
    pub gen: u64,
    /// Virtual page number.
    pub vpn: u64,
    /// The site of the access (its stack).
    pub site: SiteId,
    /// The site the model holds the page under when it is touched (the code that brought
    /// it in, or [`LABEL_RESIDENT_BEFORE`](crate::report::model::sites::LABEL_RESIDENT_BEFORE)),
    /// if the model knows the page resident or swapped.
    pub owner: Option<SiteId>,
    /// Whole generations the page had gone untouched before this one.
    pub idle: u64,
}

/// Everything access sampling left in the captures.
#[derive(Debug, Clone, Default)]
pub struct AccessLog {
    trackers: HashMap<ProcessKey, Tracker>,
    /// The `gen` lines, in stream order.
    pub generations: Vec<GenerationLine>,
    /// Sampled accesses, one per page (a huge-page access touches its 512 pages).
    pub touches: Vec<Touch>,
    /// `fault type=access` lines.
    pub access_faults: u64,
    /// The module's per-generation page budget (`# sample-pages` header), if known.
    pub budget: Option<u64>,
}

impl AccessLog {
    /// Counts the sites `remap` dropped under the site it moves them to.
    pub fn remap_sites(&mut self, remap: &crate::report::model::sites::SiteRemap) {
        for touch in &mut self.touches {
            touch.site = remap.apply(touch.site);
            touch.owner = touch.owner.map(|owner| remap.apply(owner));
        }
    }

    /// True when the captures have no access sampling at all.
    pub fn is_empty(&self) -> bool {
        self.generations.is_empty() && self.access_faults == 0
    }

    /// Page `vpn` of `key` became resident (a fault of the stream brought it in).
    pub fn resident(&mut self, key: ProcessKey, vpn: u64) {
        if self.generations.is_empty() && self.access_faults == 0 {
            // No sampling (yet): the page counts as brought in before the first
            // generation, which is what an unknown page counts as too.
            return;
        }
        let tracker = self.trackers.entry(key).or_default();
        let seen = tracker.current.map_or(Seen::Before, Seen::Gen);
        tracker.last.insert(vpn, seen);
    }

    /// A `gen` line; `resident` gives the model's resident pages of the process (not
    /// stacks) at this moment.
    pub fn generation(
        &mut self,
        key: ProcessKey,
        n: u64,
        armed: u64,
        time: Timestamp,
        resident: impl Iterator<Item = u64>,
    ) {
        let tracker = self.trackers.entry(key).or_default();
        tracker.first.get_or_insert(n);
        tracker.current = Some(tracker.current.map_or(n, |c| c.max(n)));
        let mut resident_idle = vec![0u64; IDLE_BUCKETS];
        for vpn in resident {
            let idle = tracker.idle(vpn, n).min(IDLE_BUCKETS as u64 - 1);
            resident_idle[idle as usize] += 1;
        }
        self.generations.push(GenerationLine {
            key,
            n,
            armed,
            time,
            resident_idle,
        });
    }

    /// A `fault type=access`: `pages` pages from `first_vpn` (512 for a huge page) were
    /// touched in generation `gen` (the process's current one when the line has none) by
    /// the code of `site`; `owner` gives the site the model holds a page under.
    pub fn touch(
        &mut self,
        key: ProcessKey,
        gen: Option<u64>,
        first_vpn: u64,
        pages: u64,
        site: SiteId,
        owner: impl Fn(u64) -> Option<SiteId>,
    ) {
        self.access_faults += 1;
        let tracker = self.trackers.entry(key).or_default();
        let Some(gen) = gen.or(tracker.current) else {
            return;
        };
        tracker.first = Some(tracker.first.map_or(gen, |f| f.min(gen)));
        tracker.current = Some(tracker.current.map_or(gen, |c| c.max(gen)));
        for vpn in first_vpn..first_vpn.saturating_add(pages) {
            let idle = tracker.idle(vpn, gen);
            self.touches.push(Touch {
                key,
                gen,
                vpn,
                site,
                owner: owner(vpn),
                idle,
            });
            tracker.last.insert(vpn, Seen::Gen(gen));
        }
    }

    /// The process replaced its address space (exec): what was known of its pages goes.
    pub fn exec(&mut self, key: ProcessKey) {
        if let Some(tracker) = self.trackers.get_mut(&key) {
            tracker.last.clear();
        }
    }

    /// A watched child shares its parent's pages (and their history) at fork.
    pub fn fork(&mut self, parent: ProcessKey, child: ProcessKey) {
        if let Some(tracker) = self.trackers.get(&parent) {
            let copy = tracker.clone();
            self.trackers.entry(child).or_insert(copy);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: ProcessKey = (0, 42);

    #[test]
    fn idle_counts_whole_generations_untouched() {
        let mut log = AccessLog::default();
        let t = Timestamp::default();
        // Pages 0..4 resident before sampling starts (unknown to the log: same thing).
        log.generation(KEY, 1, 4, t, 0..4);
        assert_eq!(log.generations[0].resident_idle[0], 4);
        log.touch(KEY, Some(1), 0, 1, 7, |_| None);
        log.resident(KEY, 10); // brought in during generation 1
        log.generation(KEY, 2, 5, t, [0, 1, 2, 3, 10].into_iter());
        log.touch(KEY, Some(2), 10, 1, 7, |_| None);
        log.generation(KEY, 3, 5, t, [0, 1, 2, 3, 10].into_iter());
        // At generation 3: page 0 last touched in 1 → idle 1; pages 1-3 idle 2; page 10
        // touched in 2 → idle 0.
        assert_eq!(&log.generations[2].resident_idle[..3], &[1, 1, 3]);
        log.touch(KEY, Some(3), 1, 2, 8, |vpn| Some(vpn as SiteId + 100));
        log.touch(KEY, None, 0, 1, 8, |_| None);
        let idle: Vec<(u64, u64, u64)> =
            log.touches.iter().map(|t| (t.gen, t.vpn, t.idle)).collect();
        assert_eq!(
            idle,
            [(1, 0, 0), (2, 10, 0), (3, 1, 2), (3, 2, 2), (3, 0, 1)]
        );
        assert_eq!(log.access_faults, 4);
        let owners: Vec<Option<SiteId>> = log.touches.iter().map(|t| t.owner).collect();
        assert_eq!(owners, [None, None, Some(101), Some(102), None]);
    }
}
