//! How each event changes the model: [`Replay::event`] sends each kind to its method.

use crate::report::model::class::{Class, PageKind};
use crate::report::model::maps::Counters;
use crate::report::model::moment::When;
use crate::report::model::picture::{KindBytes, Picture};
use crate::report::model::replay::Process;
use crate::report::model::replay::{CounterSource, MarkState, Replay};
use crate::report::model::sites::{
    Frame, SiteId, SiteTable, SpaceId, LABEL_KERNEL, LABEL_MEMMON, LABEL_NO_STACK,
};
use crate::report::model::space::{Ctx, Leave, Page, PageState, Space, Vma};
use crate::report::model::stats::FaultClass;
use crate::report::model::ProcessKey;
use crate::stream::event::{
    Access, Event, EventKind, FaultType, RssAt, Stack, StackEnd, Timestamp,
};
use crate::stream::flags::{Advice, MmapFlags, MremapFlags, Prot};

/// The most pages one fault can map (a PUD-level mapping: 1 GiB).
const MAX_PAGES_PER_FAULT: u64 = 262_144;

impl Replay {
    /// Applies one event. The state after it is a moment: the peak's tracker sees it.
    pub fn event(&mut self, event: &Event) {
        self.before_event(event.time);
        self.apply(event);
        self.peak_tracker.settle(event.time);
        self.recycle_dropped_sites();
    }

    fn apply(&mut self, event: &Event) {
        self.python = event.python.clone().filter(|python| !python.0.is_empty());
        self.count(event);
        let key = (self.capture, event.pid);
        match &event.kind {
            EventKind::Lost { count } => self.loss.lost(*count),
            EventKind::Dropped { faults } => self.loss.dropped(event.pid, *faults),
            EventKind::Fault { .. } => self.on_fault(key, event),
            EventKind::Gen { n, armed } => self.on_gen(key, *n, *armed, event.time),
            EventKind::Mmap { ret: Ok(_), .. } => self.on_mmap(key, event),
            EventKind::Munmap {
                addr,
                len,
                ret: Ok(_),
            } => self.with_space(key, |space, ctx| {
                space.unmap(ctx, *addr, addr.saturating_add(*len), Leave::Freed)
            }),
            EventKind::Mremap {
                old,
                old_len,
                new_len,
                flags,
                ret: Ok(new),
                ..
            } => {
                let keep = flags.contains(MremapFlags::DONTUNMAP);
                self.with_space(key, |space, ctx| {
                    space.remap(ctx, *old, *old_len, *new, *new_len, keep)
                });
            }
            // A JIT makes its code executable with mprotect (V8's `rwx`): its frames are
            // code then.
            EventKind::Mprotect {
                addr,
                len,
                prot,
                ret: Ok(_),
            }
            | EventKind::PkeyMprotect {
                addr,
                len,
                prot,
                ret: Ok(_),
                ..
            } => self.with_space(key, |space, _| {
                space.protect(*addr, addr.saturating_add(*len), prot.contains(Prot::EXEC))
            }),
            EventKind::Brk { ret, .. } => self.brk(key, *ret, event.stack.as_ref()),
            EventKind::Madvise {
                addr,
                len,
                advice,
                ret: Ok(_),
            } => self.on_madvise(key, *addr, *len, *advice),
            EventKind::Exec { filename, comm } => {
                self.loss.exec(event.pid, &comm.to_string_lossy());
                let path = filename.to_string_lossy();
                if path.starts_with('/') && !self.executables.contains(&path) {
                    self.executables.push(path);
                }
                self.on_exec(key);
            }
            EventKind::Exit { .. } => self.on_exit(key),
            EventKind::Fork {
                child,
                watched: true,
            } => {
                self.loss.fork(event.pid, *child);
                self.on_fork(key, (self.capture, *child));
            }
            EventKind::Mark { text } => self.on_mark(text.to_string_lossy(), event.time),
            EventKind::Rss { .. } => self.on_rss(key, event),
            _ => {}
        }
    }

    /// Counts the event, its time and its stack.
    fn count(&mut self, event: &Event) {
        self.events += 1;
        self.timeline.advance(event.time);
        self.span = Some(match self.span {
            None => (event.time, event.time),
            Some((first, last)) => (first.min(event.time), last.max(event.time)),
        });
        if let Some(stack) = &event.stack {
            self.has_stacks = true;
            self.stack_ends[stack.1 as usize] += 1;
            if stack.1 == StackEnd::Shed {
                self.loss.shed(event.pid);
            }
        }
    }

    /// A fault: its pages, and a sampled access in the access log.
    fn on_fault(&mut self, key: ProcessKey, event: &Event) {
        let EventKind::Fault {
            fault_type,
            access,
            addr,
            ip,
            user,
            huge,
            pages,
            gen,
            ..
        } = &event.kind
        else {
            return;
        };
        if *pages != 1 {
            self.has_pages = true;
        }
        // At most a PUD (1 GiB) per fault, whatever the line says.
        // pages=0: the fault added nothing to RSS (a lost race, the zero page). A
        // write-protect fault always concerns its page: a copy-on-write replaces
        // it (pages=0, RSS unchanged) and may change its kind (a private file page
        // becomes anonymous), so it is applied to that page.
        let count = if *pages == 0 && *fault_type != FaultType::Wp {
            0
        } else if *pages > 1 {
            (*pages).min(MAX_PAGES_PER_FAULT)
        } else if *huge {
            self.page.pmd_pages()
        } else {
            1
        };
        let ip = if *user { *ip } else { 0 };
        // The kernel's faults while it loads a new image (an exec's bss, its stack) carry
        // the old image's user stack, which names none of the new one's code.
        let in_exec = match self.processes.get_mut(&key) {
            Some(process) if *user => {
                process.exec_loading = false;
                false
            }
            Some(process) => process.exec_loading,
            None => false,
        };
        let stack = event.stack.as_ref().filter(|_| !in_exec);
        let site = self.site(key, ip, stack, LABEL_KERNEL);
        self.fault(key, *fault_type, *access, *addr, count, site, event.time);
        if *fault_type == FaultType::Access {
            // A sampled first access: nothing enters RSS (count is ignored above).
            let (first, pages) = if *huge {
                let pmd = self.page.pmd_pages();
                (self.page.number(*addr) & !(pmd - 1), pmd)
            } else {
                (self.page.number(*addr), 1)
            };
            // The site each page is held under (a page resident before memmon started:
            // that site), for the view to say which code touched whose pages.
            let space = self.processes.get(&key).map(|process| &process.space);
            self.access.touch(key, *gen, first, pages, site, |vpn| {
                space
                    .and_then(|space| space.page(vpn))
                    .filter(|page| matches!(page.state, PageState::Resident | PageState::Swapped))
                    .map(|page| page.site)
            });
        }
    }

    /// A new generation of access sampling, with the pages resident when it starts.
    fn on_gen(&mut self, key: ProcessKey, n: u64, armed: u64, time: Timestamp) {
        let stack = self.class_ids.get(&Class::Stack).copied();
        self.register(key);
        let process = self
            .processes
            .entry(key)
            .or_insert_with(|| Process::new(self.page));
        let resident = process
            .space
            .pages_in(0, u64::MAX)
            .filter(|(_, page)| page.state == PageState::Resident && Some(page.class) != stack)
            .map(|(vpn, _)| vpn);
        self.access.generation(key, n, armed, time, resident);
    }

    /// A successful mmap: the new region, its class by flags and file.
    fn on_mmap(&mut self, key: ProcessKey, event: &Event) {
        let EventKind::Mmap {
            len,
            prot,
            flags,
            off,
            ret: Ok(start),
            file,
            ..
        } = &event.kind
        else {
            return;
        };
        let site = self.site(key, 0, event.stack.as_ref(), LABEL_NO_STACK);
        let shared = flags.intersects(MmapFlags::SHARED);
        let path = file.as_ref().map(|f| f.to_string_lossy());
        let class = match &path {
            None if shared => Class::Shmem("[anon shared]".to_owned()),
            None if flags.intersects(MmapFlags::STACK | MmapFlags::GROWSDOWN) => Class::Stack,
            None => Class::AnonMmap,
            Some(path) => Class::from_maps(path, shared, 1),
        };
        let object = match &path {
            Some(path) if !class.is_shmem() => Some(self.object(path)),
            _ => None,
        };
        let shmem = class.is_shmem();
        let class = self.class(class);
        let vma = Vma {
            end: start.saturating_add(*len),
            class,
            site,
            offset: u64::try_from(*off).unwrap_or(0),
            object,
            shared,
            shmem,
            exec: prot.contains(Prot::EXEC),
        };
        self.map(key, *start, vma);
    }

    /// A successful madvise: the advice that frees or pages out drops the pages.
    fn on_madvise(&mut self, key: ProcessKey, addr: u64, len: u64, advice: Advice) {
        let leave = match advice.0 {
            4 | 8 | 9 => Leave::Freed,
            21 => Leave::PagedOut,
            _ => return,
        };
        self.with_space(key, |space, ctx| {
            space.drop_pages(ctx, addr, addr.saturating_add(len), leave)
        });
    }

    /// An exec: the old image's memory is released, the process lives on.
    fn on_exec(&mut self, key: ProcessKey) {
        self.access.exec(key);
        // A new image: its generated code is not the old one's.
        self.spaces.remove(&key);
        self.release(key, RssAt::Exec);
        self.peak_tracker.revived(key);
        if let Some(process) = self.processes.get_mut(&key) {
            process.exited = false;
            process.exec_loading = true;
            // memmon's own image is gone.
            process.stub_objects.clear();
        }
    }

    /// An exit: the process's last state counts for the end, then its memory goes.
    fn on_exit(&mut self, key: ProcessKey) {
        self.before_last_exit = self.peak_tracker.live_pages();
        if let Some(process) = self.processes.get(&key) {
            self.finished
                .add(key, process.space.picture.clone(), self.page);
        }
        self.release(key, RssAt::Exit);
        if self
            .processes
            .get(&key)
            .is_some_and(|process| process.exited)
        {
            self.peak_tracker.exited(key);
        }
    }

    /// A watched fork: the child starts with a copy of its parent's address space (its
    /// sites' space linked to the parent's) and in its parent's cgroup.
    fn on_fork(&mut self, key: ProcessKey, child_key: ProcessKey) {
        if self.processes.contains_key(&key)
            && !self.spaces.contains_key(&child_key)
            && !self.shared_addresses
        {
            let parent = self.space_of(key);
            let space = self.sites.new_space(Some(parent));
            self.spaces.insert(child_key, space);
        }
        if let Some(parent) = self.processes.get(&key) {
            let space = parent.space.clone();
            let process = self
                .processes
                .entry(child_key)
                .or_insert_with(|| Process::new(self.page));
            if process.space.is_empty() {
                // A pid that exited before is a new process now.
                if std::mem::replace(&mut process.exited, false) {
                    self.peak_tracker.revived(child_key);
                    process.space.picture = Picture::default();
                }
                self.peak_tracker
                    .replaced(child_key, &process.space.picture, &space.picture);
                // The chart's series counts the copy too, as the peak does.
                self.timeline.picture(&process.space.picture, -1);
                self.timeline.picture(&space.picture, 1);
                process.space = space;
            }
            if !self.order.contains(&child_key) {
                self.order.push(child_key);
            }
            self.access.fork(key, child_key);
            if let Some(cgroup) = self.cgroups.get(&key).cloned() {
                self.cgroups.entry(child_key).or_insert(cgroup);
            }
        }
    }

    /// A mark: the timeline's, and the state of the capture's live processes then.
    fn on_mark(&mut self, text: String, time: Timestamp) {
        self.timeline.mark(time, &text);
        let holdings = self.live_holdings();
        let resident = holdings.total.kind_bytes(self.page).resident();
        let start = self.start.unwrap_or(time);
        self.marks.push(MarkState {
            text,
            when: When::new(self.capture, time, start, resident),
            holdings,
        });
    }

    /// The process's own counters, compared with the model at the mark, exec or exit.
    fn on_rss(&mut self, key: ProcessKey, event: &Event) {
        let EventKind::Rss {
            anon,
            file,
            shmem,
            swap,
            at,
            ..
        } = &event.kind
        else {
            return;
        };
        let counters = Counters {
            anon: *anon,
            file: *file,
            shmem: *shmem,
            swap: *swap,
        };
        match at {
            RssAt::Mark => self.mark_counters(key, counters, CounterSource::RssLine),
            RssAt::Exec
                if self
                    .processes
                    .get_mut(&key)
                    .is_some_and(|p| std::mem::replace(&mut p.stub, false)) => {}
            RssAt::Exit | RssAt::Exec => {
                let model = match self.processes.get(&key) {
                    Some(p) if p.space.is_empty() => p.released.unwrap_or_default(),
                    Some(p) => p.space.picture.kind_bytes(self.page),
                    None => KindBytes::default(),
                };
                self.compare(
                    format!("{} of {}", at.as_str(), event.pid),
                    event.time,
                    key,
                    model,
                    counters,
                    CounterSource::RssLine,
                );
            }
        }
    }

    /// A process seen for the first time takes its place in the order (the end, the
    /// moments and `--group-by` list the processes in it).
    pub(super) fn register(&mut self, key: ProcessKey) {
        if !self.processes.contains_key(&key) {
            self.order.push(key);
        }
    }

    fn with_space(&mut self, key: ProcessKey, f: impl FnOnce(&mut Space, &mut Ctx)) {
        self.register(key);
        let process = self
            .processes
            .entry(key)
            .or_insert_with(|| Process::new(self.page));
        let mut ctx = Ctx {
            stats: &mut self.stats,
            timeline: &mut self.timeline,
            peak: &mut self.peak_tracker,
            process: key,
        };
        f(&mut process.space, &mut ctx);
    }

    fn release(&mut self, key: ProcessKey, at: RssAt) {
        let Some(process) = self.processes.get_mut(&key) else {
            return;
        };
        process.released = Some(process.space.picture.kind_bytes(process.space.page_size()));
        process.exited = at == RssAt::Exit;
        process.raw_sites.clear();
        let mut ctx = Ctx {
            stats: &mut self.stats,
            timeline: &mut self.timeline,
            peak: &mut self.peak_tracker,
            process: key,
        };
        process.space.release(&mut ctx);
    }

    /// The site of an event: its stack (with the ip first), else its ip, else `label`; code
    /// of memmon's own image before the command's exec (`record -- CMD`),
    /// [`LABEL_MEMMON`].
    fn site(
        &mut self,
        key: ProcessKey,
        ip: u64,
        stack: Option<&Stack>,
        label: &'static str,
    ) -> SiteId {
        let exact_first = ip != 0;
        let joined: Vec<u64>;
        let raw: &[u64] = match stack {
            Some(stack) if !stack.0.is_empty() => {
                if ip != 0 && stack.0[0] != ip {
                    joined = std::iter::once(ip).chain(stack.0.iter().copied()).collect();
                    &joined
                } else {
                    &stack.0
                }
            }
            _ if ip != 0 => std::slice::from_ref(&ip),
            _ => return self.sites.label(label),
        };
        let space = self.space_of(key);
        self.register(key);
        let process = self
            .processes
            .entry(key)
            .or_insert_with(|| Process::new(self.page));
        if process.raw_epoch != process.space.code_epoch || process.raw_drops != self.sites.drops()
        {
            process.raw_sites.clear();
            process.raw_epoch = process.space.code_epoch;
            process.raw_drops = self.sites.drops();
        }
        // The Python frames are part of what the site is made of.
        let with_python: Vec<u64>;
        let python = self
            .python
            .as_ref()
            .filter(|_| !process.python_eval.is_empty());
        let cache_key: &[u64] = match python {
            Some(python) => {
                with_python =
                    raw.iter()
                        .copied()
                        .chain(std::iter::once(u64::MAX))
                        .chain(python.0.iter().map(|f| {
                            f.code | (u64::from(f.offset) << 48) | (u64::from(f.entry) << 63)
                        }))
                        .collect();
                &with_python
            }
            None => raw,
        };
        if let Some(&site) = process.raw_sites.get(cache_key) {
            self.sites.touch(site);
            return site;
        }
        // A frame-pointer walk through code without frame pointers can read data as a
        // return address: the chain stops at the first caller that is not code.
        let known = !process.space.is_empty();
        let shared_addresses = self.shared_addresses;
        let mut unmapped: Vec<Frame> = Vec::new();
        let frames: Vec<Frame> = raw
            .iter()
            .enumerate()
            .take_while(|&(index, &addr)| {
                index == 0
                    || match process.space.is_code(addr) {
                        Some(code) => code,
                        None => !known,
                    }
            })
            .map(|(index, &addr)| {
                let frame = process.space.frame(addr, index > 0 || !exact_first, space);
                let frame = match frame {
                    Frame::Address { addr, .. } if shared_addresses => Frame::Address {
                        addr,
                        space: SpaceId::MAX,
                    },
                    frame => frame,
                };
                if matches!(frame, Frame::Address { .. }) && process.space.find(addr).is_none() {
                    unmapped.push(frame);
                }
                frame
            })
            .collect();
        for frame in unmapped {
            self.sites.note_unmapped(frame);
        }
        let frames = match python {
            Some(python) => merge_python(process, &self.sites, raw, frames, &python.0),
            None => frames,
        };
        // memmon's own image before the command's exec (`record -- CMD`): its code is none
        // of the command's, one label.
        let in_stub = |frame: &Frame| match frame {
            Frame::Code { object, .. } => process.stub_objects.contains(object),
            _ => false,
        };
        let before_exec = !process.stub_objects.is_empty();
        let site = if before_exec && !frames.is_empty() && frames.iter().all(in_stub) {
            self.sites.label(LABEL_MEMMON)
        } else {
            self.sites.intern(frames)
        };
        let process = self
            .processes
            .entry(key)
            .or_insert_with(|| Process::new(self.page));
        process.raw_sites.insert(cache_key.to_vec(), site);
        site
    }

    /// Counts a fault for `site` and brings in its `count` pages at `addr` (none for the
    /// kinds that map nothing).
    #[allow(clippy::too_many_arguments)]
    fn fault(
        &mut self,
        key: ProcessKey,
        fault_type: FaultType,
        access: Access,
        addr: u64,
        count: u64,
        site: SiteId,
        time: Timestamp,
    ) {
        let class = FaultClass::of(fault_type);
        self.stats.site(site).faults[class.index()] += 1;
        self.timeline.fault(class);
        if count == 0
            || matches!(
                fault_type,
                FaultType::Spurious
                    | FaultType::Numa
                    | FaultType::Access
                    | FaultType::Hugetlb
                    | FaultType::Other
            )
        {
            return;
        }
        let unknown = self.class(Class::Unknown);
        self.register(key);
        let process = self
            .processes
            .entry(key)
            .or_insert_with(|| Process::new(self.page));
        let space = &mut process.space;
        let (region, class_id, shared, shmem) = match space.find(addr) {
            Some((start, vma)) => (Some((start, vma.end)), vma.class, vma.shared, vma.shmem),
            None => (None, unknown, false, false),
        };
        let kind = match fault_type {
            // A write to a private mapping copies the page: anonymous, whatever the file
            // (one on tmpfs, or in /dev/shm, too).
            FaultType::File if !shared && access == Access::Write => PageKind::Anon,
            FaultType::Wp if !shared => PageKind::Anon,
            FaultType::File | FaultType::Swap | FaultType::Wp if shmem => PageKind::Shmem,
            FaultType::File => PageKind::File,
            FaultType::Wp => PageKind::File,
            _ => PageKind::Anon,
        };
        let state = if fault_type == FaultType::Anon && access == Access::Read {
            PageState::Zero
        } else {
            PageState::Resident
        };
        let first = self.page.number(addr);
        let targets = target_pages(space, first, count, region, self.resident_before);
        let mut ctx = Ctx {
            stats: &mut self.stats,
            timeline: &mut self.timeline,
            peak: &mut self.peak_tracker,
            process: key,
        };
        let mut brought = 0;
        for vpn in targets {
            // A page of the start's snapshot that the stream shows faulted in after all
            // (an event read after the snapshot was taken): this fault brought it in.
            let seeded = space.page(vpn).is_some_and(|page| {
                page.state == PageState::Resident && Some(page.site) == self.resident_before
            });
            let page = match space.page(vpn) {
                // A copy-on-write keeps the page's first site; it only changes its kind. The
                // copy of a page from before memmon started is the writer's.
                Some(old)
                    if fault_type == FaultType::Wp
                        && old.state == PageState::Resident
                        && !seeded =>
                {
                    Page { kind, ..*old }
                }
                _ => Page {
                    site,
                    class: class_id,
                    kind,
                    state,
                },
            };
            if space.set_page(&mut ctx, vpn, page) || (seeded && page.site == site) {
                brought += 1;
                self.access.resident(key, vpn);
            }
        }
        let stats = self.stats.site(site);
        stats.pages_in += brought;
        if fault_type == FaultType::Swap {
            stats.swapped_in += brought;
            stats.first_swapin.get_or_insert(time);
            stats.last_swapin = Some(time);
        }
    }

    /// mmap: pages already faulted in the new range by the call itself (MAP_POPULATE,
    /// whose faults precede the call's line) take the new region's class and site.
    fn map(&mut self, key: ProcessKey, start: u64, vma: Vma) {
        let unknown = self.class(Class::Unknown);
        let kernel = self.sites.label(LABEL_KERNEL);
        self.with_space(key, |space, ctx| {
            let page = space.page_size();
            let first = page.number(start);
            let last = page.number(page.up(vma.end));
            let early: Vec<(u64, Page)> = space
                .pages_in(first, last)
                .filter(|(_, p)| p.class == unknown)
                .collect();
            space.map(ctx, start, vma);
            for (vpn, page) in early {
                let site = if page.site == kernel {
                    vma.site
                } else {
                    page.site
                };
                let kind = if vma.shmem {
                    PageKind::Shmem
                } else if vma.shared && vma.object.is_some() {
                    PageKind::File
                } else {
                    page.kind
                };
                space.set_page(
                    ctx,
                    vpn,
                    Page {
                        site,
                        class: vma.class,
                        kind,
                        ..page
                    },
                );
            }
        });
    }

    fn brk(&mut self, key: ProcessKey, ret: u64, stack: Option<&Stack>) {
        let site = self.site(key, 0, stack, LABEL_NO_STACK);
        let heap = self.class(Class::Heap);
        self.with_space(key, |space, ctx| {
            let Some(current) = space.brk else {
                space.brk_start = Some(ret);
                space.brk = Some(ret);
                return;
            };
            let page = space.page_size();
            if page.up(ret) > page.up(current) {
                let vma = Vma {
                    end: page.up(ret),
                    class: heap,
                    site,
                    offset: 0,
                    object: None,
                    shared: false,
                    shmem: false,
                    exec: false,
                };
                space.map(ctx, page.up(current), vma);
            } else if page.up(ret) < page.up(current) {
                space.unmap(ctx, page.up(ret), page.up(current), Leave::Freed);
            }
            space.brk = Some(ret);
        });
    }
}

/// The pages a fault of `count` pages at page `first` maps: the faulting page, then the
/// not-yet-resident pages of its aligned window (fault-around, mTHP, PMD THP), within the
/// region. A page of the start's snapshot (its site `before`) counts as not yet resident: a
/// fault applied after the snapshot (read after it was taken) mapped it.
fn target_pages(
    space: &Space,
    first: u64,
    count: u64,
    region: Option<(u64, u64)>,
    before: Option<SiteId>,
) -> Vec<u64> {
    if count <= 1 {
        return vec![first];
    }
    let (low, high) = match region {
        Some((start, end)) => {
            let page = space.page_size();
            (page.number(start), page.number(page.up(end)))
        }
        None => (first.saturating_sub(count), first.saturating_add(count)),
    };
    let window = count.next_power_of_two().max(16);
    let base = (first / window * window).max(low);
    let mut targets = vec![first];
    let resident = |vpn: u64| {
        space
            .page(vpn)
            .is_some_and(|p| p.state == PageState::Resident && Some(p.site) != before)
    };
    let mut vpn = base;
    while (targets.len() as u64) < count && vpn < high {
        if vpn != first && !resident(vpn) {
            targets.push(vpn);
        }
        vpn += 1;
    }
    let mut vpn = base;
    while (targets.len() as u64) < count && vpn > low {
        vpn -= 1;
        if !resident(vpn) {
            targets.push(vpn);
        }
    }
    targets
}

/// The native frames of a stack (`frames`, from the addresses `raw`) with each of the
/// interpreter's eval loop replaced by the Python frames it was running: `python`,
/// innermost first, falls into runs, each ending at an entry frame (where a C caller entered
/// the eval loop), and the eval loop's frames take the runs in order. Runs left over (a
/// native stack cut short) go at the end; an eval loop frame left over stays.
fn merge_python(
    process: &Process,
    sites: &SiteTable,
    raw: &[u64],
    frames: Vec<Frame>,
    python: &[crate::stream::event::PythonFrame],
) -> Vec<Frame> {
    let mut runs: Vec<Vec<Frame>> = vec![Vec::new()];
    for frame in python {
        let named = match process.python_codes.get(&frame.code) {
            Some(&code) => Frame::Python {
                code,
                line: sites
                    .python_code(code)
                    .map_or(0, |info| info.line_at(frame.offset)),
            },
            None => Frame::Label(crate::report::model::sites::LABEL_PYTHON_UNNAMED),
        };
        if let Some(run) = runs.last_mut() {
            run.push(named);
        }
        if frame.entry {
            runs.push(Vec::new());
        }
    }
    runs.retain(|run| !run.is_empty());
    let mut runs = runs.into_iter();
    let in_eval = |addr: u64| {
        process
            .python_eval
            .iter()
            .any(|[start, end]| (*start..*end).contains(&addr))
    };
    let mut out = Vec::with_capacity(frames.len() + python.len());
    for (index, frame) in frames.into_iter().enumerate() {
        let addr = raw.get(index).copied().unwrap_or(0);
        // A return address is in its call: one byte back.
        let lookup = if index > 0 {
            addr.wrapping_sub(1)
        } else {
            addr
        };
        if in_eval(lookup) {
            if let Some(run) = runs.next() {
                out.extend(run);
                continue;
            }
        }
        out.push(frame);
    }
    out.extend(runs.flatten());
    out
}
