//! Cumulative per-site statistics over the whole capture (faults, pages in and out).

use serde::Serialize;

use crate::stream::event::{FaultType, Timestamp};

/// The fault classes of the report's fault view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultClass {
    /// First touch of anonymous memory (`type=anon`).
    FirstTouch,
    /// A file or shmem page (`type=file`).
    File,
    /// A swap-in (`type=swap`).
    SwapIn,
    /// Copy-on-write or write-notify (`type=wp`).
    CopyOnWrite,
    /// Spurious, NUMA, hugetlb, access-sampling and other faults.
    Other,
}

impl FaultClass {
    /// All classes, in report order.
    pub const ALL: [FaultClass; 5] = [
        FaultClass::FirstTouch,
        FaultClass::File,
        FaultClass::SwapIn,
        FaultClass::CopyOnWrite,
        FaultClass::Other,
    ];

    /// The class of a fault type.
    pub fn of(fault_type: FaultType) -> FaultClass {
        match fault_type {
            FaultType::Anon => FaultClass::FirstTouch,
            FaultType::File => FaultClass::File,
            FaultType::Swap => FaultClass::SwapIn,
            FaultType::Wp => FaultClass::CopyOnWrite,
            _ => FaultClass::Other,
        }
    }

    /// Index into per-class arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Short name for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultClass::FirstTouch => "first-touch",
            FaultClass::File => "file",
            FaultClass::SwapIn => "swap-in",
            FaultClass::CopyOnWrite => "cow",
            FaultClass::Other => "other",
        }
    }
}

/// Cumulative counts of one site.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteStats {
    /// Faults by [`FaultClass`].
    pub faults: [u64; 5],
    /// Pages this site's faults brought into residence.
    pub pages_in: u64,
    /// Of those, pages released while the process lived (munmap, madvise, brk shrink).
    pub released: u64,
    /// Pages paged out (MADV_PAGEOUT) while resident.
    pub paged_out: u64,
    /// Pages brought back from swap by this site.
    pub swapped_in: u64,
    /// First swap-in.
    pub first_swapin: Option<Timestamp>,
    /// Last swap-in.
    pub last_swapin: Option<Timestamp>,
    /// Highest resident pages of this site at any moment (summed over processes).
    pub peak_resident: u64,
}

impl SiteStats {
    /// All faults.
    pub fn total_faults(&self) -> u64 {
        self.faults.iter().sum()
    }
}

/// Per-site statistics, indexed by site id.
#[derive(Debug, Clone, Default)]
pub struct StatsTable {
    sites: Vec<SiteStats>,
    /// Current resident pages per site over all processes (for peaks).
    current: Vec<u64>,
}

impl StatsTable {
    /// The statistics of `site`, created if new.
    pub fn site(&mut self, site: u32) -> &mut SiteStats {
        let index = site as usize;
        if self.sites.len() <= index {
            self.sites.resize(index + 1, SiteStats::default());
        }
        &mut self.sites[index]
    }

    /// The statistics of `site`, if any.
    pub fn get(&self, site: u32) -> Option<&SiteStats> {
        self.sites.get(site as usize)
    }

    /// Tracks the resident pages of `site` for its peak.
    pub fn resident_changed(&mut self, site: u32, delta: i64) {
        let index = site as usize;
        if self.current.len() <= index {
            self.current.resize(index + 1, 0);
        }
        let now = self.current[index].saturating_add_signed(delta);
        self.current[index] = now;
        let stats = self.site(site);
        stats.peak_resident = stats.peak_resident.max(now);
    }

    /// Moves the statistics of the sites `remap` dropped to the site it moves them to,
    /// leaving theirs empty for the new sites that reuse the ids.
    pub fn remap_sites(&mut self, remap: &crate::report::model::sites::SiteRemap) {
        for &id in &remap.dropped {
            let index = id as usize;
            let Some(stats) = self.sites.get_mut(index).map(std::mem::take) else {
                continue;
            };
            let current = self.current.get_mut(index).map_or(0, std::mem::take);
            let into = self.site(remap.into);
            for (total, more) in into.faults.iter_mut().zip(stats.faults) {
                *total += more;
            }
            into.pages_in += stats.pages_in;
            into.released += stats.released;
            into.paged_out += stats.paged_out;
            into.swapped_in += stats.swapped_in;
            into.first_swapin = match (into.first_swapin, stats.first_swapin) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            into.last_swapin = into.last_swapin.max(stats.last_swapin);
            if current > 0 {
                self.resident_changed(remap.into, i64::try_from(current).unwrap_or(i64::MAX));
            }
        }
    }
}
