//! What is resident and mapped at one moment, by site and by class.

use serde::Serialize;

use crate::report::model::class::PageKind;
use crate::report::model::sites::SiteId;
use rustc_hash::FxHashMap;

/// Index of a class in the report's class table.
pub type ClassId = u32;

/// Resident pages and mapped bytes, by site and by (kind, class).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picture {
    /// Resident pages by site.
    pub site_resident: FxHashMap<SiteId, u64>,
    /// Mapped bytes by the site of the call that mapped them.
    pub site_mapped: FxHashMap<SiteId, u64>,
    /// Resident pages by (page kind, class).
    pub class_resident: FxHashMap<(PageKind, ClassId), u64>,
    /// Mapped bytes by class.
    pub class_mapped: FxHashMap<ClassId, u64>,
    /// Resident pages by kind (anon, file, shmem).
    pub kinds: [u64; 3],
    /// Pages paged out to swap (and not back yet).
    pub swapped: u64,
    /// Resident bytes by site where they are not whole pages: a fleet cluster's means
    /// ([`crate::report::aggregate`]). A site here counts these bytes rather than its pages
    /// in `site_resident` ([`Picture::site_bytes`]). Empty for captures.
    pub site_resident_bytes: FxHashMap<SiteId, u64>,
}

/// Model totals in bytes, comparable with the kernel's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KindBytes {
    /// Anonymous bytes.
    pub anon: u64,
    /// File bytes.
    pub file: u64,
    /// Shared-memory bytes.
    pub shmem: u64,
    /// Swapped-out bytes.
    pub swap: u64,
}

/// The sum of byte counts, saturating.
pub fn saturating_sum(values: impl IntoIterator<Item = u64>) -> u64 {
    values.into_iter().fold(0, u64::saturating_add)
}

impl KindBytes {
    /// Resident bytes: anon + file + shmem.
    pub fn resident(&self) -> u64 {
        saturating_sum([self.anon, self.file, self.shmem])
    }
}

/// The size of the kernel's pages, which every page count of the model is in: 4 KiB on
/// x86_64, 4, 16 or 64 KiB on arm64 (its kernels' `CONFIG_ARM64_*K_PAGES`). A capture says
/// which (its `# page-size` header); one without it is of a 4 KiB kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PageSize(u64);

impl PageSize {
    /// 4 KiB: x86_64's, and a capture's that names none.
    pub const DEFAULT: PageSize = PageSize(4096);

    /// A page size of `bytes`: a power of two from 4 KiB to 1 MiB (the kernel's
    /// `PAGE_SHIFT` is 12 to 16 on every architecture memmon runs on, 18 on a few others).
    pub fn new(bytes: u64) -> Option<PageSize> {
        (bytes.is_power_of_two() && (4096..=1 << 20).contains(&bytes)).then_some(PageSize(bytes))
    }

    /// The size of this machine's pages (`sysconf(_SC_PAGESIZE)`: the running kernel's).
    pub fn of_this_machine() -> PageSize {
        nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .and_then(|bytes| u64::try_from(bytes).ok())
            .and_then(PageSize::new)
            .unwrap_or(PageSize::DEFAULT)
    }

    /// Parses a `# page-size` header's value (bytes, decimal).
    pub fn parse(text: &str) -> Option<PageSize> {
        text.trim().parse().ok().and_then(PageSize::new)
    }

    /// Bytes in a page.
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// The bytes of `pages` pages, saturating.
    pub const fn of(self, pages: u64) -> u64 {
        pages.saturating_mul(self.0)
    }

    /// The bytes of a signed page count, saturating.
    pub fn of_signed(self, pages: i64) -> i64 {
        pages.saturating_mul(i64::try_from(self.0).unwrap_or(i64::MAX))
    }

    /// The number of the page that holds `addr`.
    pub const fn number(self, addr: u64) -> u64 {
        addr / self.0
    }

    /// `addr` rounded down to its page's start.
    pub const fn down(self, addr: u64) -> u64 {
        addr & !(self.0 - 1)
    }

    /// `addr` rounded up to a page boundary, saturating at the last page's start.
    pub const fn up(self, addr: u64) -> u64 {
        addr.saturating_add(self.0 - 1) & !(self.0 - 1)
    }

    /// The pages of a PMD-mapped huge page (a page table's entries: 512 of 4 KiB pages,
    /// 2048 of 16 KiB, 8192 of 64 KiB).
    pub const fn pmd_pages(self) -> u64 {
        self.0 / 8
    }

    /// Bytes in pages, to the nearest page.
    pub const fn pages_nearest(self, bytes: u64) -> u64 {
        bytes.saturating_add(self.0 / 2) / self.0
    }
}

impl Default for PageSize {
    fn default() -> Self {
        PageSize::DEFAULT
    }
}

impl std::fmt::Display for PageSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

fn add_to<K: std::hash::Hash + Eq + Copy>(map: &mut FxHashMap<K, u64>, key: K, delta: i64) {
    let entry = map.entry(key).or_insert(0);
    *entry = entry.saturating_add_signed(delta);
    if *entry == 0 {
        map.remove(&key);
    }
}

impl Picture {
    /// The resident bytes of `site`: its exact bytes where the picture has them, else its
    /// pages (of `page` bytes).
    pub fn site_bytes(&self, site: SiteId, page: PageSize) -> u64 {
        self.site_resident_bytes
            .get(&site)
            .copied()
            .unwrap_or_else(|| {
                let pages = self.site_resident.get(&site).copied().unwrap_or(0);
                page.of(pages)
            })
    }

    /// Adds `delta` resident pages of `site` in (`kind`, `class`).
    pub fn resident(&mut self, site: SiteId, kind: PageKind, class: ClassId, delta: i64) {
        add_to(&mut self.site_resident, site, delta);
        add_to(&mut self.class_resident, (kind, class), delta);
        let total = &mut self.kinds[kind.index()];
        *total = total.saturating_add_signed(delta);
    }

    /// Adds `delta` mapped bytes of `site` in `class`.
    pub fn mapped(&mut self, site: SiteId, class: ClassId, delta: i64) {
        add_to(&mut self.site_mapped, site, delta);
        add_to(&mut self.class_mapped, class, delta);
    }

    /// Adds `delta` pages known as swapped.
    pub fn swapped(&mut self, delta: i64) {
        self.swapped = self.swapped.saturating_add_signed(delta);
    }

    /// Whether nothing is resident, mapped or swapped.
    pub fn is_empty(&self) -> bool {
        self.site_resident.is_empty()
            && self.site_mapped.is_empty()
            && self.class_resident.is_empty()
            && self.class_mapped.is_empty()
            && self.kinds == [0; 3]
            && self.swapped == 0
    }

    /// Counts the sites `remap` dropped under the site it moves them to.
    pub fn remap_sites(&mut self, remap: &crate::report::model::sites::SiteRemap) {
        remap.map(&mut self.site_resident);
        remap.map(&mut self.site_mapped);
        remap.map(&mut self.site_resident_bytes);
    }

    /// Adds another picture (another process) to this one, both of pages of `page` bytes.
    pub fn merge(&mut self, other: &Picture, page: PageSize) {
        // A site either picture has exact bytes for gets the sum of both's bytes.
        let exact: Vec<(SiteId, u64)> = self
            .site_resident_bytes
            .keys()
            .chain(other.site_resident_bytes.keys())
            .map(|&site| {
                (
                    site,
                    self.site_bytes(site, page)
                        .saturating_add(other.site_bytes(site, page)),
                )
            })
            .collect();
        self.site_resident_bytes.extend(exact);
        for (&site, &pages) in &other.site_resident {
            *self.site_resident.entry(site).or_insert(0) += pages;
        }
        for (&site, &bytes) in &other.site_mapped {
            let entry = self.site_mapped.entry(site).or_insert(0);
            *entry = entry.saturating_add(bytes);
        }
        for (&key, &pages) in &other.class_resident {
            *self.class_resident.entry(key).or_insert(0) += pages;
        }
        for (&class, &bytes) in &other.class_mapped {
            let entry = self.class_mapped.entry(class).or_insert(0);
            *entry = entry.saturating_add(bytes);
        }
        for (total, more) in self.kinds.iter_mut().zip(other.kinds) {
            *total += more;
        }
        self.swapped += other.swapped;
    }

    /// Totals in bytes by kind, of pages of `page` bytes.
    pub fn kind_bytes(&self, page: PageSize) -> KindBytes {
        KindBytes {
            anon: page.of(self.kinds[PageKind::Anon.index()]),
            file: page.of(self.kinds[PageKind::File.index()]),
            shmem: page.of(self.kinds[PageKind::Shmem.index()]),
            swap: page.of(self.swapped),
        }
    }
}

/// The changes of one process's picture since some moment, net and signed: applied to its
/// picture of that moment, they give its picture of now. The same keys as [`Picture`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PictureChanges {
    site_resident: FxHashMap<SiteId, i64>,
    site_mapped: FxHashMap<SiteId, i64>,
    class_resident: FxHashMap<(PageKind, ClassId), i64>,
    class_mapped: FxHashMap<ClassId, i64>,
    kinds: [i64; 3],
    swapped: i64,
}

fn change<K: std::hash::Hash + Eq + Copy>(map: &mut FxHashMap<K, i64>, key: K, delta: i64) {
    let entry = map.entry(key).or_insert(0);
    *entry = entry.saturating_add(delta);
    if *entry == 0 {
        map.remove(&key);
    }
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl PictureChanges {
    /// `delta` resident pages of `site` in (`kind`, `class`), as [`Picture::resident`].
    pub fn resident(&mut self, site: SiteId, kind: PageKind, class: ClassId, delta: i64) {
        change(&mut self.site_resident, site, delta);
        change(&mut self.class_resident, (kind, class), delta);
        let total = &mut self.kinds[kind.index()];
        *total = total.saturating_add(delta);
    }

    /// `delta` mapped bytes of `site` in `class`, as [`Picture::mapped`].
    pub fn mapped(&mut self, site: SiteId, class: ClassId, delta: i64) {
        change(&mut self.site_mapped, site, delta);
        change(&mut self.class_mapped, class, delta);
    }

    /// Counts the sites `remap` dropped under the site it moves them to.
    pub fn remap_sites(&mut self, remap: &crate::report::model::sites::SiteRemap) {
        remap.map(&mut self.site_resident);
        remap.map(&mut self.site_mapped);
        self.site_resident.retain(|_, delta| *delta != 0);
        self.site_mapped.retain(|_, delta| *delta != 0);
    }

    /// `delta` swapped pages, as [`Picture::swapped`].
    pub fn swapped(&mut self, delta: i64) {
        self.swapped = self.swapped.saturating_add(delta);
    }

    /// All of `picture`, added (`sign` 1) or taken away (-1).
    pub fn picture(&mut self, picture: &Picture, sign: i64) {
        for (&site, &pages) in &picture.site_resident {
            change(&mut self.site_resident, site, sign * to_i64(pages));
        }
        for (&site, &bytes) in &picture.site_mapped {
            change(&mut self.site_mapped, site, sign * to_i64(bytes));
        }
        for (&key, &pages) in &picture.class_resident {
            change(&mut self.class_resident, key, sign * to_i64(pages));
        }
        for (&class, &bytes) in &picture.class_mapped {
            change(&mut self.class_mapped, class, sign * to_i64(bytes));
        }
        for (total, &pages) in self.kinds.iter_mut().zip(&picture.kinds) {
            *total = total.saturating_add(sign * to_i64(pages));
        }
        self.swapped = self.swapped.saturating_add(sign * to_i64(picture.swapped));
    }

    /// Applies the changes to `picture` and forgets them (keeping their room). Each key's
    /// net change leaves its count at what the process holds, never below zero, so no
    /// count saturates on the way whatever the order.
    pub fn drain_into(&mut self, picture: &mut Picture) {
        for (site, delta) in self.site_resident.drain() {
            add_to(&mut picture.site_resident, site, delta);
        }
        for (site, delta) in self.site_mapped.drain() {
            add_to(&mut picture.site_mapped, site, delta);
        }
        for (key, delta) in self.class_resident.drain() {
            add_to(&mut picture.class_resident, key, delta);
        }
        for (class, delta) in self.class_mapped.drain() {
            add_to(&mut picture.class_mapped, class, delta);
        }
        for (total, delta) in picture
            .kinds
            .iter_mut()
            .zip(std::mem::take(&mut self.kinds))
        {
            *total = total.saturating_add_signed(delta);
        }
        picture.swapped(std::mem::take(&mut self.swapped));
    }
}
