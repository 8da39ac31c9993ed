//! One process's address space as the capture shows it: regions (VMAs) with their class
//! and mapping site, and pages with the site that brought them in.

use std::collections::BTreeMap;

use crate::report::model::class::PageKind;
use crate::report::model::peak::PeakTracker;
use crate::report::model::picture::{ClassId, PageSize, Picture};
use crate::report::model::sites::{Frame, ObjectId, SiteId, SpaceId};
use crate::report::model::stats::StatsTable;
use crate::report::model::timeline::TimelineBuilder;

/// A mapped region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vma {
    /// One past the last address.
    pub end: u64,
    /// Its class.
    pub class: ClassId,
    /// The site of the call that mapped it.
    pub site: SiteId,
    /// File offset of the region's start.
    pub offset: u64,
    /// The mapped file, for code normalisation.
    pub object: Option<ObjectId>,
    /// MAP_SHARED.
    pub shared: bool,
    /// Pages of this region count as RssShmem.
    pub shmem: bool,
    /// Executable.
    pub exec: bool,
}

/// Whether a page counts as resident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageState {
    /// In memory.
    Resident,
    /// The shared zero page (a read of untouched anonymous memory): not counted.
    Zero,
    /// Paged out to swap.
    Swapped,
}

/// A page the capture saw brought in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// The site that brought it in.
    pub site: SiteId,
    /// Class of its region.
    pub class: ClassId,
    /// How the kernel counts it.
    pub kind: PageKind,
    /// Resident, zero page or swapped.
    pub state: PageState,
}

/// Why pages leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leave {
    /// Freed by the program (munmap, madvise, brk shrink, mremap shrink): temporary.
    Freed,
    /// Paged out (MADV_PAGEOUT): kept in swap.
    PagedOut,
    /// The address space is released (exit, exec).
    Released,
}

/// Shared state the address-space operations update.
pub struct Ctx<'a> {
    /// Per-site cumulative statistics.
    pub stats: &'a mut StatsTable,
    /// The timeline being built.
    pub timeline: &'a mut TimelineBuilder,
    /// The peak's tracker: every change of the picture goes to it too.
    pub peak: &'a mut PeakTracker,
    /// The process whose address space this is.
    pub process: crate::report::model::ProcessKey,
}

/// The model of one address space.
#[derive(Debug, Default, Clone)]
pub struct Space {
    vmas: BTreeMap<u64, Vma>,
    pages: BTreeMap<u64, Page>,
    /// What is resident and mapped now.
    pub picture: Picture,
    /// Start of the brk heap, once known.
    pub brk_start: Option<u64>,
    /// Current break.
    pub brk: Option<u64>,
    /// Bumped whenever executable regions change (raw stacks must be normalised again).
    pub code_epoch: u64,
    /// The size of its pages: page numbers (the keys of `pages`) are addresses divided by it.
    page: PageSize,
}

fn to_i64(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

impl Space {
    /// An empty address space of pages of `page` bytes.
    pub fn new(page: PageSize) -> Space {
        Space {
            page,
            ..Space::default()
        }
    }

    /// The size of its pages.
    pub fn page_size(&self) -> PageSize {
        self.page
    }

    /// The region containing `addr`.
    pub fn find(&self, addr: u64) -> Option<(u64, &Vma)> {
        let (&start, vma) = self.vmas.range(..=addr).next_back()?;
        (addr < vma.end).then_some((start, vma))
    }

    /// Counts the sites `remap` dropped under the site it moves them to: the regions they
    /// mapped, the pages they brought in and the picture.
    pub fn remap_sites(&mut self, remap: &crate::report::model::sites::SiteRemap) {
        for vma in self.vmas.values_mut() {
            vma.site = remap.apply(vma.site);
        }
        for page in self.pages.values_mut() {
            page.site = remap.apply(page.site);
        }
        self.picture.remap_sites(remap);
    }

    /// True when no region is known.
    pub fn is_empty(&self) -> bool {
        self.vmas.is_empty()
    }

    /// The frame of a code address: (object, file offset) when a file maps it, else the
    /// address in address space `space` (this one's id in the [`SiteTable`]).
    ///
    /// [`SiteTable`]: super::sites::SiteTable
    pub fn frame(&self, addr: u64, ret: bool, space: SpaceId) -> Frame {
        match self.find(addr) {
            Some((start, vma)) => match vma.object {
                Some(object) => Frame::Code {
                    object,
                    offset: (addr - start).wrapping_add(vma.offset),
                    ret,
                },
                None => Frame::Address { addr, space },
            },
            None => Frame::Address { addr, space },
        }
    }

    /// Whether `addr` can be code: `Some(true)` in an executable region, `Some(false)` in
    /// another region, `None` in no known region.
    pub fn is_code(&self, addr: u64) -> Option<bool> {
        self.find(addr).map(|(_, vma)| vma.exec)
    }

    /// The regions, by start address.
    pub fn regions(&self) -> impl Iterator<Item = (u64, &Vma)> {
        self.vmas.iter().map(|(&start, vma)| (start, vma))
    }

    /// Maps `[start, end)` as `vma` (replacing what was there, as MAP_FIXED does).
    pub fn map(&mut self, ctx: &mut Ctx, start: u64, vma: Vma) {
        let start = self.page.down(start);
        let vma = Vma {
            end: self.page.up(vma.end),
            ..vma
        };
        if vma.end <= start {
            return;
        }
        self.unmap(ctx, start, vma.end, Leave::Freed);
        self.insert(ctx, start, vma);
    }

    /// Adds regions of a snapshot only where the model has none (gaps).
    pub fn fill(&mut self, ctx: &mut Ctx, start: u64, vma: Vma) {
        let mut cursor = start;
        let overlapping: Vec<(u64, u64)> = self
            .vmas
            .range(..vma.end)
            .filter(|(_, v)| v.end > start)
            .map(|(&s, v)| (s, v.end))
            .collect();
        for (s, e) in overlapping {
            if s > cursor {
                self.insert_piece(ctx, start, cursor, s, vma);
            }
            cursor = cursor.max(e);
        }
        if cursor < vma.end {
            self.insert_piece(ctx, start, cursor, vma.end, vma);
        }
    }

    fn insert_piece(&mut self, ctx: &mut Ctx, origin: u64, from: u64, to: u64, vma: Vma) {
        let piece = Vma {
            end: to,
            offset: vma.offset.wrapping_add(from.saturating_sub(origin)),
            ..vma
        };
        self.insert(ctx, from, piece);
    }

    fn insert(&mut self, ctx: &mut Ctx, start: u64, vma: Vma) {
        let len = vma.end.saturating_sub(start);
        self.mapped(ctx, vma.site, vma.class, to_i64(len));
        if vma.exec {
            self.code_epoch += 1;
        }
        self.vmas.insert(start, vma);
    }

    /// Makes `[start, end)` executable or not (`mprotect`), splitting the regions that
    /// straddle it; nothing is mapped or unmapped.
    pub fn protect(&mut self, start: u64, end: u64, exec: bool) {
        let (start, end) = (self.page.down(start), self.page.up(end));
        for (piece_start, vma) in self.split_out(start, end, |vma| vma.exec != exec) {
            self.vmas.insert(piece_start, Vma { exec, ..vma });
            self.code_epoch += 1;
        }
    }

    /// Removes the regions in `[start, end)` (splitting those that straddle it) and
    /// returns them; pages stay.
    fn cut(&mut self, ctx: &mut Ctx, start: u64, end: u64) -> Vec<(u64, Vma)> {
        let removed = self.split_out(start, end, |_| true);
        for (piece_start, vma) in &removed {
            self.mapped(ctx, vma.site, vma.class, -to_i64(vma.end - piece_start));
            if vma.exec {
                self.code_epoch += 1;
            }
        }
        removed
    }

    /// Takes out the parts inside `[start, end)` of the regions that overlap it and that
    /// `pick` chooses, leaving their parts outside it in place; returns the parts taken, by
    /// start address, each with its end and file offset.
    fn split_out(&mut self, start: u64, end: u64, pick: impl Fn(&Vma) -> bool) -> Vec<(u64, Vma)> {
        let keys: Vec<u64> = self
            .vmas
            .range(..end)
            .rev()
            .take_while(|(_, v)| v.end > start)
            .filter(|(_, v)| pick(v))
            .map(|(&s, _)| s)
            .collect();
        let mut taken = Vec::with_capacity(keys.len());
        for key in keys.into_iter().rev() {
            let Some(vma) = self.vmas.remove(&key) else {
                continue;
            };
            if key < start {
                self.vmas.insert(key, Vma { end: start, ..vma });
            }
            if vma.end > end {
                let offset = vma.offset.wrapping_add(end - key);
                self.vmas.insert(end, Vma { offset, ..vma });
            }
            let piece_start = key.max(start);
            taken.push((
                piece_start,
                Vma {
                    end: vma.end.min(end),
                    offset: vma.offset.wrapping_add(piece_start - key),
                    ..vma
                },
            ));
        }
        taken
    }

    /// Unmaps `[start, end)`: regions and their pages leave.
    pub fn unmap(&mut self, ctx: &mut Ctx, start: u64, end: u64, why: Leave) {
        let (start, end) = (self.page.down(start), self.page.up(end));
        self.cut(ctx, start, end);
        self.drop_pages(ctx, start, end, why);
    }

    /// Pages of `[start, end)` leave (madvise, munmap, exit); with `PagedOut` they stay
    /// known as swapped.
    pub fn drop_pages(&mut self, ctx: &mut Ctx, start: u64, end: u64, why: Leave) {
        let (first, last) = (self.page.number(start), self.page.number(self.page.up(end)));
        let keys: Vec<u64> = self.pages.range(first..last).map(|(&k, _)| k).collect();
        for key in keys {
            let Some(page) = self.pages.get(&key).copied() else {
                continue;
            };
            if page.state == PageState::Resident {
                self.count(ctx, &page, -1);
                match why {
                    Leave::Freed => ctx.stats.site(page.site).released += 1,
                    Leave::PagedOut => ctx.stats.site(page.site).paged_out += 1,
                    Leave::Released => {}
                }
            } else if page.state == PageState::Swapped {
                self.swapped(ctx, -1);
            }
            if why == Leave::PagedOut && page.state != PageState::Zero {
                self.swapped(ctx, 1);
                self.pages.insert(
                    key,
                    Page {
                        state: PageState::Swapped,
                        ..page
                    },
                );
            } else {
                self.pages.remove(&key);
            }
        }
    }

    /// `delta` resident pages like `page`.
    fn count(&mut self, ctx: &mut Ctx, page: &Page, delta: i64) {
        self.picture
            .resident(page.site, page.kind, page.class, delta);
        ctx.peak
            .resident(ctx.process, page.site, page.kind, page.class, delta);
        ctx.stats.resident_changed(page.site, delta);
        ctx.timeline
            .resident(page.site, page.kind.index(), page.class, delta);
    }

    /// `delta` bytes mapped by `site` in `class`.
    fn mapped(&mut self, ctx: &mut Ctx, site: SiteId, class: ClassId, delta: i64) {
        self.picture.mapped(site, class, delta);
        ctx.peak.mapped(ctx.process, site, class, delta);
        ctx.timeline.mapped(delta);
    }

    /// `delta` pages known as swapped.
    fn swapped(&mut self, ctx: &mut Ctx, delta: i64) {
        self.picture.swapped(delta);
        ctx.peak.swapped(ctx.process, delta);
    }

    /// The known pages with numbers in `first..last`.
    pub fn pages_in(&self, first: u64, last: u64) -> impl Iterator<Item = (u64, Page)> + '_ {
        self.pages
            .range(first..last.max(first))
            .map(|(&vpn, &page)| (vpn, page))
    }

    /// The page at virtual page number `vpn`.
    pub fn page(&self, vpn: u64) -> Option<&Page> {
        self.pages.get(&vpn)
    }

    /// Makes page `vpn` `page` (resident, the zero page or swapped; replacing what was
    /// known of it). Returns true when it is resident now and was not before.
    pub fn set_page(&mut self, ctx: &mut Ctx, vpn: u64, page: Page) -> bool {
        let previous = self.pages.insert(vpn, page);
        let was_resident = match previous {
            Some(old) if old.state == PageState::Resident => {
                self.count(ctx, &old, -1);
                true
            }
            Some(old) if old.state == PageState::Swapped => {
                self.swapped(ctx, -1);
                false
            }
            _ => false,
        };
        match page.state {
            PageState::Resident => self.count(ctx, &page, 1),
            PageState::Swapped => self.swapped(ctx, 1),
            PageState::Zero => {}
        }
        !was_resident && page.state == PageState::Resident
    }

    /// The pages of the region starting at `start` count as RssShmem from now on: a file
    /// mapping whose pages the kernel showed swap-backed (a file on tmpfs).
    pub fn mark_shmem(&mut self, start: u64) {
        if let Some(vma) = self.vmas.get_mut(&start) {
            vma.shmem = true;
        }
    }

    /// Moves `[old, old + old_len)` to `new` with `new_len` (mremap): regions and pages
    /// move; a shrink frees the tail; growth extends the last region. With `keep_old`
    /// (MREMAP_DONTUNMAP) the old regions stay, empty.
    pub fn remap(
        &mut self,
        ctx: &mut Ctx,
        old: u64,
        old_len: u64,
        new: u64,
        new_len: u64,
        keep_old: bool,
    ) {
        let (old, old_len, new_len) = (
            self.page.down(old),
            self.page.up(old_len),
            self.page.up(new_len),
        );
        if new_len < old_len {
            self.unmap(
                ctx,
                old.saturating_add(new_len),
                old.saturating_add(old_len),
                Leave::Freed,
            );
        }
        let kept_len = old_len.min(new_len);
        if new != old {
            let pieces = self.cut(ctx, old, old.saturating_add(kept_len));
            if keep_old {
                for &(start, vma) in &pieces {
                    self.insert(ctx, start, vma);
                }
            }
            let first = self.page.number(old);
            let last = self.page.number(old.saturating_add(kept_len));
            let moved: Vec<(u64, Page)> = self
                .pages
                .range(first..last)
                .map(|(&k, &p)| (k, p))
                .collect();
            for (key, _) in &moved {
                self.pages.remove(key);
            }
            self.unmap(ctx, new, new.saturating_add(new_len), Leave::Freed);
            for (start, vma) in pieces {
                let shifted = Vma {
                    end: (vma.end - old).saturating_add(new),
                    ..vma
                };
                self.insert(ctx, (start - old).saturating_add(new), shifted);
            }
            let delta = self.page.number(new) as i128 - self.page.number(old) as i128;
            for (key, page) in moved {
                let target = (key as i128 + delta) as u64;
                self.pages.insert(target, page);
            }
        }
        if new_len > old_len {
            let tail = new.saturating_add(old_len).max(1);
            if let Some((start, vma)) = self.find(tail - 1).map(|(s, v)| (s, *v)) {
                let end = new.saturating_add(new_len).max(vma.end);
                if let Some(v) = self.vmas.get_mut(&start) {
                    v.end = end;
                }
                let grown = to_i64(end - vma.end);
                self.mapped(ctx, vma.site, vma.class, grown);
            }
        }
    }

    /// Releases everything (exit, exec).
    pub fn release(&mut self, ctx: &mut Ctx) {
        self.drop_pages(ctx, 0, self.page.down(u64::MAX), Leave::Released);
        let all: Vec<(u64, Vma)> = std::mem::take(&mut self.vmas).into_iter().collect();
        for (start, vma) in all {
            let len = to_i64(vma.end.saturating_sub(start));
            self.mapped(ctx, vma.site, vma.class, -len);
        }
        self.brk_start = None;
        self.brk = None;
        self.code_epoch += 1;
    }
}
