//! What a process already holds when memmon starts watching it: page by page, which pages of
//! each mapping are resident (anonymous, file, shmem), the shared zero page or in swap. Read
//! from `/proc/PID/smaps` (the mappings, their `Rss` and `Anonymous`) and
//! `/proc/PID/pagemap` (each page's entry), with `/proc/kpageflags` where the entries show
//! page frame numbers (as root); written into a capture as a `pages` snapshot of runs
//! (`START-END KIND`, [`PageRun`]) beside the `maps` snapshot of the same read, and seeded
//! into the replay's model as pages "resident before memmon started".
//!
//! # What each page is
//!
//! A pagemap entry (Documentation/admin-guide/mm/pagemap.rst) says whether the page is
//! present (bit 63), in swap (bit 62), a page of a file or of shared memory rather than an
//! anonymous one (bit 61), mapped by this process only (bit 56), and, to a reader with
//! CAP_SYS_ADMIN, its page frame number (bits 0–54). From them:
//!
//! - present with bit 61: a file page, or shmem when the mapping is shared memory (by its
//!   name: `/dev/shm`, memfd, SysV, shared anonymous) or, as root, when the page is
//!   swap-backed (`KPF_SWAPBACKED` and not `KPF_ANON` in `/proc/kpageflags`: a file on
//!   tmpfs, which the kernel counts as RssShmem);
//! - present without bit 61: anonymous, or the shared zero page (or huge zero page), which
//!   a read of untouched anonymous memory maps and which RSS does not count. smaps'
//!   `Anonymous` counts the anonymous pages only, so the mapping's zero pages number its
//!   present non-file pages minus `Anonymous`. Which ones they are: as root, the pages
//!   whose frame's `/proc/kpageflags` entry is not `KPF_ANON` (bit 12): `KPF_ZERO_PAGE`
//!   (bit 24), or a device's frame, not counted either; without root, the zero page is
//!   never "mapped exclusively" (bit 56), so the present non-file pages without bit 56
//!   are it when they are exactly that many; when there are more (anonymous pages shared
//!   with a parent or child since a fork), the last ones of the mapping are taken: the
//!   sizes stay exact, which pages are zero is approximated, and the snapshot's note says
//!   how many;
//! - in swap (bit 62, not a guard region's marker, bit 58): swapped.
//!
//! A hugetlbfs mapping is left out: RSS does not count its pages (nor does the model).

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::capture::control::process_path;
use crate::capture::file::{Snapshot, SnapshotSource};
use crate::report::model::class::Class;
use crate::report::model::maps::MapsLine;
use crate::report::model::picture::PageSize;
use crate::stream::event::Timestamp;
use crate::stream::lex::parse_dec;

/// Pagemap entry: the page frame number (shown to CAP_SYS_ADMIN only; 0 otherwise).
const PM_PFN: u64 = (1 << 55) - 1;
/// Pagemap entry: the page is mapped by this process only.
const PM_MMAP_EXCLUSIVE: u64 = 1 << 56;
/// Pagemap entry: a guard region's marker (MADV_GUARD_INSTALL), not a swapped page.
const PM_GUARD_REGION: u64 = 1 << 58;
/// Pagemap entry: a file page or shared anonymous memory.
const PM_FILE: u64 = 1 << 61;
/// Pagemap entry: swapped.
const PM_SWAP: u64 = 1 << 62;
/// Pagemap entry: present.
const PM_PRESENT: u64 = 1 << 63;

/// `/proc/kpageflags`: an anonymous page.
const KPF_ANON: u64 = 1 << 12;
/// `/proc/kpageflags`: backed by swap (anonymous memory, shmem, tmpfs).
const KPF_SWAPBACKED: u64 = 1 << 14;

/// Pagemap entries read per read(2) (512 KiB).
const ENTRIES_PER_READ: u64 = 65_536;

/// What a run of pages is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageRunKind {
    /// Resident anonymous pages (RssAnon).
    Anon,
    /// Resident file pages (RssFile).
    File,
    /// Resident shared memory (RssShmem).
    Shmem,
    /// The shared zero page: mapped, not counted in RSS.
    Zero,
    /// Swapped out (VmSwap).
    Swap,
}

impl PageRunKind {
    /// The name in a `pages` snapshot: `anon`, `file`, `shmem`, `zero`, `swap`.
    pub fn as_str(self) -> &'static str {
        match self {
            PageRunKind::Anon => "anon",
            PageRunKind::File => "file",
            PageRunKind::Shmem => "shmem",
            PageRunKind::Zero => "zero",
            PageRunKind::Swap => "swap",
        }
    }

    /// The kind of a name ([`PageRunKind::as_str`]).
    pub fn parse(name: &str) -> Option<PageRunKind> {
        [
            PageRunKind::Anon,
            PageRunKind::File,
            PageRunKind::Shmem,
            PageRunKind::Zero,
            PageRunKind::Swap,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
    }
}

/// A run of pages of one kind: one line of a `pages` snapshot, `START-END KIND` (addresses in
/// hex, as `/proc/PID/maps` writes them; END exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRun {
    /// The first page's address.
    pub start: u64,
    /// One past the last page.
    pub end: u64,
    /// What the pages are.
    pub kind: PageRunKind,
}

impl PageRun {
    /// Parses `START-END KIND`; `None` when malformed (START not below END, or either not
    /// aligned to 4 KiB, the smallest page of any kernel: a run's ends are its kernel's page
    /// boundaries).
    pub fn parse(line: &str) -> Option<PageRun> {
        let (range, kind) = line.trim().split_once(' ')?;
        let (start, end) = range.split_once('-')?;
        let start = u64::from_str_radix(start, 16).ok()?;
        let end = u64::from_str_radix(end, 16).ok()?;
        let smallest = PageSize::DEFAULT.bytes();
        let aligned = start % smallest == 0 && end % smallest == 0;
        (start < end && aligned).then_some(PageRun {
            start,
            end,
            kind: PageRunKind::parse(kind.trim())?,
        })
    }

    /// Its pages, of `page` bytes.
    pub fn pages(&self, page: PageSize) -> u64 {
        page.number(self.end - self.start)
    }
}

impl fmt::Display for PageRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:x}-{:x} {}", self.start, self.end, self.kind.as_str())
    }
}

/// A process's page tables as the reader sees them: pagemap entries, and the flags of page
/// frames where the entries show them.
pub trait PageTables {
    /// The pagemap entries of `count` pages from virtual page number `first` (fewer where
    /// the file ends).
    fn entries(&mut self, first: u64, count: u64) -> io::Result<Vec<u64>>;

    /// The `/proc/kpageflags` entry of page frame `pfn`, when it can be read.
    fn frame_flags(&mut self, pfn: u64) -> Option<u64>;
}

/// The page tables of a live process: `/proc/PID/pagemap`, and `/proc/kpageflags` when it
/// opens (as root).
#[derive(Debug)]
pub struct ProcPageTables {
    pagemap: File,
    /// `None`: not tried yet; `Some(None)`: cannot be read.
    kpageflags: Option<Option<File>>,
}

impl ProcPageTables {
    /// Opens the pagemap of `pid`.
    pub fn open(pid: u32) -> io::Result<ProcPageTables> {
        Ok(ProcPageTables {
            pagemap: File::open(process_path(pid, "pagemap"))?,
            kpageflags: None,
        })
    }
}

/// Reads `u64` entries of `file` at `index` (in entries), fewer at its end.
fn read_entries(file: &File, index: u64, count: u64) -> io::Result<Vec<u64>> {
    let mut entries = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut done = 0;
    while done < count {
        let chunk = (count - done).min(ENTRIES_PER_READ);
        let mut bytes = vec![0u8; usize::try_from(chunk * 8).unwrap_or(0)];
        let offset = (index + done).saturating_mul(8);
        let mut filled = 0;
        while filled < bytes.len() {
            match file.read_at(&mut bytes[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(read) => filled += read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        entries.extend(
            bytes[..filled - filled % 8]
                .chunks_exact(8)
                .map(|entry| u64::from_le_bytes(entry.try_into().unwrap_or([0; 8]))),
        );
        if filled < bytes.len() {
            break;
        }
        done += chunk;
    }
    Ok(entries)
}

impl PageTables for ProcPageTables {
    fn entries(&mut self, first: u64, count: u64) -> io::Result<Vec<u64>> {
        read_entries(&self.pagemap, first, count)
    }

    fn frame_flags(&mut self, pfn: u64) -> Option<u64> {
        if pfn == 0 {
            return None;
        }
        let file = self
            .kpageflags
            .get_or_insert_with(|| File::open("/proc/kpageflags").ok())
            .as_ref()?;
        read_entries(file, pfn, 1).ok()?.first().copied()
    }
}

/// One mapping of `/proc/PID/smaps`: its header line and the fields the reading uses.
#[derive(Debug)]
struct SmapsMapping {
    header: String,
    maps: MapsLine,
    /// `Rss`, in pages.
    rss: u64,
    /// `Anonymous`, in pages.
    anonymous: u64,
    /// `Swap`, in pages.
    swap: u64,
    /// `KernelPageSize` in kB (4 but for hugetlbfs).
    kernel_page_kb: u64,
}

/// The mappings of a `/proc/PID/smaps` text, their page counts in pages of `page` bytes.
fn smaps_mappings(smaps: &str, page: PageSize) -> Vec<SmapsMapping> {
    let mut mappings: Vec<SmapsMapping> = Vec::new();
    for line in smaps.lines() {
        if let Some(maps) = MapsLine::parse(line) {
            mappings.push(SmapsMapping {
                header: line.to_owned(),
                maps,
                rss: 0,
                anonymous: 0,
                swap: 0,
                kernel_page_kb: 4,
            });
            continue;
        }
        let (Some(mapping), Some((key, value))) = (mappings.last_mut(), line.split_once(':'))
        else {
            continue;
        };
        let kib = || {
            value
                .split_ascii_whitespace()
                .next()
                .and_then(parse_dec)
                .unwrap_or(0)
        };
        match key {
            "Rss" => mapping.rss = page.number(kib() * 1024),
            "Anonymous" => mapping.anonymous = page.number(kib() * 1024),
            "Swap" => mapping.swap = page.number(kib() * 1024),
            "KernelPageSize" => mapping.kernel_page_kb = kib(),
            _ => {}
        }
    }
    mappings
}

/// The pages a process held when read, and its mappings as the same read saw them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResidentPages {
    /// The mappings: smaps' header lines, which are `/proc/PID/maps` lines.
    pub mappings: Vec<String>,
    /// The pages, in runs, by address.
    pub runs: Vec<PageRun>,
    /// Zero pages chosen without page frame numbers among more candidates (see the
    /// module's documentation): how many, and in how many mappings.
    pub zero_guessed: (u64, u64),
    /// Pages on which the page tables and smaps' `Rss` disagreed: the process changed them
    /// between the two reads.
    pub changed: u64,
}

impl ResidentPages {
    /// Reads the mappings and pages of process `pid`: `/proc/PID/smaps`, then the pagemap of
    /// each mapping with resident or swapped pages.
    pub fn read(pid: u32) -> io::Result<ResidentPages> {
        let smaps = std::fs::read_to_string(process_path(pid, "smaps"))?;
        let mut tables = ProcPageTables::open(pid)?;
        ResidentPages::from_smaps(&smaps, &mut tables, PageSize::of_this_machine())
    }

    /// The pages of the mappings of `smaps` (a `/proc/PID/smaps` text) in `tables`, on a
    /// kernel of pages of `page` bytes (a mapping of larger pages, hugetlbfs', is not read).
    pub fn from_smaps(
        smaps: &str,
        tables: &mut impl PageTables,
        page: PageSize,
    ) -> io::Result<ResidentPages> {
        let mut pages = ResidentPages::default();
        for mapping in smaps_mappings(smaps, page) {
            pages.mappings.push(mapping.header.clone());
            let has_pages = mapping.rss > 0 || mapping.swap > 0;
            if has_pages && mapping.kernel_page_kb * 1024 == page.bytes() {
                pages.read_mapping(&mapping, tables, page)?;
            }
        }
        Ok(pages)
    }

    /// Adds the runs of one mapping.
    fn read_mapping(
        &mut self,
        mapping: &SmapsMapping,
        tables: &mut impl PageTables,
        page: PageSize,
    ) -> io::Result<()> {
        let first = page.number(mapping.maps.start);
        let count = page.number(page.up(mapping.maps.end)).saturating_sub(first);
        let entries = tables.entries(first, count)?;
        let class = Class::from_maps(&mapping.maps.path, mapping.maps.shared, mapping.maps.inode);
        let mut file_kind = class.is_shmem().then_some(PageRunKind::Shmem);
        let mut kinds: Vec<Option<PageRunKind>> = Vec::with_capacity(entries.len());
        // Present pages without bit 61: anonymous, or the zero page.
        let mut non_file = 0;
        for &entry in &entries {
            let kind = if entry & PM_PRESENT != 0 && entry & PM_FILE != 0 {
                // The kind of a file's pages, from the first one: the file's file system.
                Some(
                    *file_kind.get_or_insert_with(|| match tables.frame_flags(entry & PM_PFN) {
                        Some(flags) if flags & KPF_SWAPBACKED != 0 && flags & KPF_ANON == 0 => {
                            PageRunKind::Shmem
                        }
                        _ => PageRunKind::File,
                    }),
                )
            } else if entry & PM_PRESENT != 0 {
                non_file += 1;
                Some(PageRunKind::Anon)
            } else if entry & PM_SWAP != 0 && entry & PM_GUARD_REGION == 0 {
                Some(PageRunKind::Swap)
            } else {
                None
            };
            kinds.push(kind);
        }
        let zero = non_file - non_file.min(mapping.anonymous);
        if zero > 0 {
            self.find_zero_pages(&entries, &mut kinds, zero, tables);
        }
        let resident = kinds
            .iter()
            .filter(|kind| {
                matches!(
                    kind,
                    Some(PageRunKind::Anon | PageRunKind::File | PageRunKind::Shmem)
                )
            })
            .count() as u64;
        self.changed += resident.abs_diff(mapping.rss);
        for (index, kind) in kinds.into_iter().enumerate() {
            let Some(kind) = kind else {
                continue;
            };
            let start = page.of(first + index as u64);
            match self.runs.last_mut() {
                Some(run) if run.end == start && run.kind == kind => run.end += page.bytes(),
                _ => self.runs.push(PageRun {
                    start,
                    end: start + page.bytes(),
                    kind,
                }),
            }
        }
        Ok(())
    }

    /// Marks `zero` of the present non-file pages of a mapping as the zero page: by their
    /// frames' flags where readable, else among those not mapped exclusively (the last ones
    /// when there are more).
    fn find_zero_pages(
        &mut self,
        entries: &[u64],
        kinds: &mut [Option<PageRunKind>],
        zero: u64,
        tables: &mut impl PageTables,
    ) {
        let candidates: Vec<usize> = (0..entries.len())
            .filter(|&index| {
                kinds[index] == Some(PageRunKind::Anon) && entries[index] & PM_MMAP_EXCLUSIVE == 0
            })
            .collect();
        let mut by_flags = true;
        let mut found = Vec::new();
        for &index in &candidates {
            match tables.frame_flags(entries[index] & PM_PFN) {
                // The zero page (KPF_ZERO_PAGE), a frame without a page (KPF_NOPAGE), a
                // driver's page: none is anonymous, none is counted.
                Some(flags) if flags & KPF_ANON == 0 => found.push(index),
                Some(_) => {}
                None => {
                    by_flags = false;
                    break;
                }
            }
        }
        if !by_flags {
            let count = usize::try_from(zero).unwrap_or(usize::MAX);
            if candidates.len() as u64 != zero {
                self.zero_guessed.0 += zero;
                self.zero_guessed.1 += 1;
            }
            found = if candidates.len() >= count {
                candidates[candidates.len() - count..].to_vec()
            } else {
                // Fewer than smaps counts (the process changed in between): the last
                // non-file pages.
                let anon: Vec<usize> = (0..entries.len())
                    .filter(|&index| kinds[index] == Some(PageRunKind::Anon))
                    .collect();
                anon[anon.len().saturating_sub(count)..].to_vec()
            };
        }
        for index in found {
            kinds[index] = Some(PageRunKind::Zero);
        }
    }

    /// Bytes of the runs of `kind`.
    pub fn bytes(&self, kind: PageRunKind) -> u64 {
        self.runs
            .iter()
            .filter(|run| run.kind == kind)
            .map(|run| run.end - run.start)
            .sum()
    }

    /// What the `pages` snapshot's note says: what is approximated, if anything.
    pub fn note(&self) -> Option<String> {
        let mut notes = Vec::new();
        let (zero, mappings) = self.zero_guessed;
        if zero > 0 {
            notes.push(format!(
                "approximate: which {zero} pages of {mappings} mappings are the zero page \
                 (no page frame numbers without CAP_SYS_ADMIN: the last of the pages not \
                 mapped exclusively)"
            ));
        }
        if self.changed > 0 {
            notes.push(format!(
                "changed while read: {} pages differ from smaps' Rss",
                self.changed
            ));
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }

    /// The `maps` snapshot of the mappings read, of process `pid` at `time` (reason
    /// `start`).
    pub fn maps_snapshot(&self, pid: u32, time: Timestamp) -> Snapshot {
        Snapshot {
            source: SnapshotSource::Maps,
            pid,
            time,
            reason: "start".to_owned(),
            note: None,
            lines: self.mappings.clone(),
        }
    }

    /// The `pages` snapshot of the pages read, of process `pid` at `time` (reason `start`).
    pub fn pages_snapshot(&self, pid: u32, time: Timestamp) -> Snapshot {
        Snapshot {
            source: SnapshotSource::Pages,
            pid,
            time,
            reason: "start".to_owned(),
            note: self.note(),
            lines: self.runs.iter().map(PageRun::to_string).collect(),
        }
    }
}

/// How long [`wait_for_image`] waits for an exec to finish loading its image.
const IMAGE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// `PF_EXITING` of `/proc/PID/stat`'s flags: the process is exiting (its mm may be gone).
const PF_EXITING: u64 = 0x4;
/// `PF_KTHREAD` of `/proc/PID/stat`'s flags: a kernel thread, which has no image.
const PF_KTHREAD: u64 = 0x0020_0000;

/// Whether a process's address space is being built by an exec, from its `/proc/PID/stat`
/// text: between `begin_new_exec` (the new, empty mm installed; where the module stamps the
/// `exec` event) and the end of the ELF loader's `create_elf_tables`, which sets `env_end`
/// (field 51) after the stack was moved to its place (`setup_arg_pages`: until then an
/// unnamed anonymous region at the top of the address space, holding the arguments' page)
/// and every segment, the `.bss` past the file and the vDSO were mapped. A fresh mm is
/// zeroed, so `env_end` is 0 all that time and set ever after. `None` when the text is not
/// a stat line; `Some(false)` for a kernel thread, a process exiting or a zombie (no mm:
/// its fields read 0 too, and no image is coming).
pub fn image_loading(stat: &str) -> Option<bool> {
    // The command name (field 2) may hold spaces and parentheses: the fields after it.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // Field N is fields[N - 3]: the state (3), the flags (9), env_end (51).
    let state = *fields.first()?;
    let flags: u64 = fields.get(6)?.parse().ok()?;
    let env_end: u64 = fields.get(48)?.parse().ok()?;
    let gone = matches!(state, "Z" | "X" | "x") || flags & (PF_EXITING | PF_KTHREAD) != 0;
    Some(!gone && env_end == 0)
}

/// Waits (up to a second) while process `pid` is between an exec's new mm and its loaded
/// image ([`image_loading`]): its maps, smaps and pagemap read then show an address space
/// the kernel changes without any event the model sees (the stack moved, the segments and
/// `.bss` mapped). Returns at once for a process not in an exec, gone, or whose stat cannot
/// be read or parsed.
pub fn wait_for_image(pid: u32) {
    let start = std::time::Instant::now();
    while start.elapsed() < IMAGE_WAIT {
        let loading = std::fs::read_to_string(process_path(pid, "stat"))
            .ok()
            .and_then(|stat| image_loading(&stat));
        if loading != Some(true) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

/// The start snapshots of a process memmon starts watching while it runs: its mappings
/// (`maps`) and the pages they hold (`pages`), of one read at `time` (taken by the caller
/// before this call), after the image of an exec under way is loaded ([`wait_for_image`]);
/// `None` when the process cannot be read (it exited, or no permission).
pub fn start_snapshots(pid: u32, time: Timestamp) -> Option<[Snapshot; 2]> {
    wait_for_image(pid);
    let pages = ResidentPages::read(pid).ok()?;
    Some([
        pages.maps_snapshot(pid, time),
        pages.pages_snapshot(pid, time),
    ])
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// The page size of the hand-made tables and smaps texts: x86_64's.
    const PAGE: u64 = PageSize::DEFAULT.bytes();

    /// Page tables given by hand: entries by virtual page number, and the flags of frames
    /// (none: the entries show no frames, as to a reader without CAP_SYS_ADMIN).
    #[derive(Default)]
    struct GivenTables {
        entries: HashMap<u64, u64>,
        frames: Option<HashMap<u64, u64>>,
    }

    impl GivenTables {
        /// Sets the entries of the pages from `addr` on.
        fn at(&mut self, addr: u64, entries: &[u64]) {
            for (index, &entry) in entries.iter().enumerate() {
                let entry = match &self.frames {
                    Some(_) => entry,
                    None => entry & !PM_PFN,
                };
                self.entries.insert(addr / PAGE + index as u64, entry);
            }
        }
    }

    impl PageTables for GivenTables {
        fn entries(&mut self, first: u64, count: u64) -> io::Result<Vec<u64>> {
            Ok((first..first + count)
                .map(|vpn| self.entries.get(&vpn).copied().unwrap_or(0))
                .collect())
        }

        fn frame_flags(&mut self, pfn: u64) -> Option<u64> {
            self.frames.as_ref()?.get(&pfn).copied()
        }
    }

    const ANON: u64 = PM_PRESENT | PM_MMAP_EXCLUSIVE;
    const SHARED_ANON: u64 = PM_PRESENT;
    const FILE: u64 = PM_PRESENT | PM_FILE;
    const ZERO_PFN: u64 = 0x1;
    const ZERO: u64 = PM_PRESENT | ZERO_PFN;
    /// `/proc/kpageflags` of the zero page: KPF_ZERO_PAGE (24) and KPF_RESERVED (32).
    const ZERO_FLAGS: u64 = 1 << 24 | 1 << 32;

    /// A smaps entry: the header, then the fields the reading uses (in kB).
    fn smaps(header: &str, rss_kb: u64, anonymous_kb: u64, swap_kb: u64, page_kb: u64) -> String {
        format!(
            "{header}\nSize:                  8 kB\nKernelPageSize:     {page_kb:4} kB\n\
             MMUPageSize:        {page_kb:4} kB\nRss:            {rss_kb:6} kB\n\
             Pss:            {rss_kb:6} kB\nAnonymous:      {anonymous_kb:6} kB\n\
             Swap:           {swap_kb:6} kB\nVmFlags: rd wr mr mw me ac\n"
        )
    }

    /// A process's smaps and page tables: its program (2 file pages), heap (4 anonymous
    /// pages, a zero page, a swapped one), an anonymous mapping shared with a forked child
    /// (1 page its own, 1 shared, 2 zero pages), a private mapping of a file on tmpfs
    /// (2 pages, and one copied by a write), a /dev/shm mapping (1 page) and a hugetlbfs
    /// mapping.
    fn process(frames: bool) -> (String, GivenTables) {
        let text = [
            smaps(
                "00400000-00403000 r-xp 00000000 08:01 1234 /usr/bin/app",
                8,
                0,
                0,
                4,
            ),
            smaps(
                "01000000-01008000 rw-p 00000000 00:00 0 [heap]",
                16,
                16,
                4,
                4,
            ),
            smaps(
                "7f0000000000-7f0000004000 rw-p 00000000 00:00 0 ",
                8,
                8,
                0,
                4,
            ),
            smaps(
                "7f0000010000-7f0000014000 rw-p 00000000 00:1a 77 /tmp/data",
                12,
                4,
                0,
                4,
            ),
            smaps(
                "7f0000020000-7f0000021000 rw-s 00000000 00:1b 78 /dev/shm/ring",
                4,
                0,
                0,
                4,
            ),
            smaps(
                "7f0000200000-7f0000400000 rw-s 00000000 00:1c 79 /anon_hugepage",
                2048,
                0,
                0,
                2048,
            ),
        ]
        .concat();
        let mut tables = GivenTables {
            frames: frames.then(|| {
                HashMap::from([
                    (ZERO_PFN, ZERO_FLAGS),
                    // The shared anonymous page.
                    (0x500, KPF_ANON | KPF_SWAPBACKED),
                    // The program's page cache.
                    (0x700, 0),
                    // tmpfs's page cache.
                    (0x600, KPF_SWAPBACKED),
                ])
            }),
            ..GivenTables::default()
        };
        tables.at(0x400000, &[FILE | 0x700, FILE | 0x701]);
        tables.at(
            0x1000000,
            &[
                ANON | 0x10,
                ANON | 0x11,
                ANON | 0x12,
                ANON | 0x13,
                ZERO,
                PM_SWAP | 0x40,
            ],
        );
        tables.at(
            0x7f0000000000,
            &[ANON | 0x20, SHARED_ANON | 0x500, ZERO, ZERO],
        );
        tables.at(0x7f0000010000, &[FILE | 0x600, ANON | 0x30, FILE | 0x601]);
        tables.at(0x7f0000020000, &[FILE | 0x800]);
        tables.at(0x7f0000200000, &[FILE | 0x900]);
        (text, tables)
    }

    fn runs(pages: &ResidentPages) -> Vec<String> {
        pages.runs.iter().map(PageRun::to_string).collect()
    }

    #[test]
    fn as_root_every_page_is_exact() {
        let (text, mut tables) = process(true);
        let pages = ResidentPages::from_smaps(&text, &mut tables, PageSize::DEFAULT).unwrap();
        assert_eq!(
            runs(&pages),
            [
                "400000-402000 file",
                "1000000-1004000 anon",
                "1004000-1005000 zero",
                "1005000-1006000 swap",
                // The page shared with the child is anonymous; the zero pages are found
                // by their frames.
                "7f0000000000-7f0000002000 anon",
                "7f0000002000-7f0000004000 zero",
                // tmpfs: swap-backed page cache, RssShmem; the copy is anonymous.
                "7f0000010000-7f0000011000 shmem",
                "7f0000011000-7f0000012000 anon",
                "7f0000012000-7f0000013000 shmem",
                "7f0000020000-7f0000021000 shmem",
            ]
        );
        // hugetlbfs is not in RSS: its mapping is listed, its pages are not.
        assert_eq!(pages.mappings.len(), 6);
        assert_eq!(
            pages.mappings[5],
            "7f0000200000-7f0000400000 rw-s 00000000 00:1c 79 /anon_hugepage"
        );
        assert_eq!(pages.bytes(PageRunKind::Anon), 7 * PAGE);
        assert_eq!(pages.bytes(PageRunKind::File), 2 * PAGE);
        assert_eq!(pages.bytes(PageRunKind::Shmem), 3 * PAGE);
        assert_eq!(pages.bytes(PageRunKind::Zero), 3 * PAGE);
        assert_eq!(pages.bytes(PageRunKind::Swap), PAGE);
        // Every mapping's resident pages are its smaps Rss.
        assert_eq!(pages.changed, 0);
        assert_eq!(pages.note(), None);
    }

    #[test]
    fn without_root_the_zero_pages_are_the_ones_not_mapped_exclusively() {
        let (text, mut tables) = process(false);
        let pages = ResidentPages::from_smaps(&text, &mut tables, PageSize::DEFAULT).unwrap();
        let runs = runs(&pages);
        // The heap's only page not mapped exclusively is its zero page: exact.
        assert!(
            runs.contains(&"1004000-1005000 zero".to_owned()),
            "{runs:?}"
        );
        // The shared mapping has 3 such pages for 2 zero pages: the last two are taken
        // (right here), and the note says it is a guess.
        assert!(
            runs.contains(&"7f0000002000-7f0000004000 zero".to_owned()),
            "{runs:?}"
        );
        // Without the frames' flags, a file on tmpfs is a file.
        assert!(
            runs.contains(&"7f0000010000-7f0000011000 file".to_owned()),
            "{runs:?}"
        );
        // /dev/shm is shared memory by its name.
        assert!(
            runs.contains(&"7f0000020000-7f0000021000 shmem".to_owned()),
            "{runs:?}"
        );
        // The sizes are exact all the same.
        assert_eq!(pages.bytes(PageRunKind::Anon), 7 * PAGE);
        assert_eq!(pages.bytes(PageRunKind::Zero), 3 * PAGE);
        assert_eq!(pages.zero_guessed, (2, 1));
        assert_eq!(
            pages.note().unwrap(),
            "approximate: which 2 pages of 1 mappings are the zero page (no page frame \
             numbers without CAP_SYS_ADMIN: the last of the pages not mapped exclusively)"
        );
    }

    #[test]
    fn a_process_that_changed_while_read_says_so() {
        let text = smaps(
            "01000000-01004000 rw-p 00000000 00:00 0 [heap]",
            16,
            16,
            0,
            4,
        );
        let mut tables = GivenTables::default();
        // smaps saw 4 pages; by the time pagemap was read, 2 were gone.
        tables.at(0x1000000, &[ANON, ANON]);
        let pages = ResidentPages::from_smaps(&text, &mut tables, PageSize::DEFAULT).unwrap();
        assert_eq!(runs(&pages), ["1000000-1002000 anon"]);
        assert_eq!(pages.changed, 2);
        assert_eq!(
            pages.note().unwrap(),
            "changed while read: 2 pages differ from smaps' Rss"
        );
    }

    /// A `/proc/PID/stat` line (a real one's fields) with `comm`, `state`, `flags` and
    /// `env_end` (field 51) given.
    fn stat(comm: &str, state: &str, flags: u64, env_end: u64) -> String {
        format!(
            "6892 ({comm}) {state} 6890 6890 22141 0 -1 {flags} 104 0 0 0 0 0 0 0 20 0 1 0 \
             2830968 3133440 413 18446744073709551615 94209123872768 94209123892649 \
             140730503431440 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94209123908656 94209123910272 \
             94209262030848 140730503437026 140730503437046 140730503437046 {env_end} 0\n"
        )
    }

    /// An exec's window (the new mm installed, the loader not done: env_end 0) is told
    /// from a loaded image, and from the processes that have no image coming (a zombie, an
    /// exiting process, a kernel thread, whose fields read 0 too).
    #[test]
    fn an_image_being_loaded_is_told_from_its_stat() {
        assert_eq!(image_loading(&stat("hold", "R", 0x40_0000, 0)), Some(true));
        assert_eq!(
            image_loading(&stat("hold", "R", 0x40_0000, 140730503438315)),
            Some(false)
        );
        // A command name with spaces and parentheses.
        assert_eq!(image_loading(&stat("a) R 1 (b", "D", 0, 0)), Some(true));
        assert_eq!(image_loading(&stat("hold", "Z", 0x40_0000, 0)), Some(false));
        assert_eq!(image_loading(&stat("hold", "X", 0x40_0000, 0)), Some(false));
        assert_eq!(
            image_loading(&stat("hold", "R", 0x40_0000 | PF_EXITING, 0)),
            Some(false)
        );
        assert_eq!(
            image_loading(&stat("kworker/0:1", "I", PF_KTHREAD | 0x4000_0000, 0)),
            Some(false)
        );
        // Not a stat line (a fake /proc's): no waiting on it.
        assert_eq!(image_loading(""), None);
        assert_eq!(image_loading("6892 (hold) R 1 2"), None);
        // This test process: loaded, and the wait returns at once.
        let own = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert_eq!(image_loading(&own), Some(false));
        let start = std::time::Instant::now();
        wait_for_image(std::process::id());
        assert!(start.elapsed() < IMAGE_WAIT / 10);
    }

    #[test]
    fn runs_are_written_and_read_back() {
        let run = PageRun {
            start: 0x7f0000010000,
            end: 0x7f0000013000,
            kind: PageRunKind::Shmem,
        };
        assert_eq!(run.to_string(), "7f0000010000-7f0000013000 shmem");
        assert_eq!(PageRun::parse(&run.to_string()), Some(run));
        assert_eq!(run.pages(PageSize::DEFAULT), 3);
        for kind in ["anon", "file", "shmem", "zero", "swap"] {
            let line = format!("1000-2000 {kind}");
            assert_eq!(PageRun::parse(&line).unwrap().kind.as_str(), kind);
        }
        for bad in [
            "",
            "1000-2000",
            "1000-2000 dirty",
            "2000-1000 anon",
            "1000-1000 anon",
            "1001-2000 anon",
            "x-2000 anon",
        ] {
            assert_eq!(PageRun::parse(bad), None, "{bad}");
        }
    }

    /// This test process's own pages, read as memmon reads a process it starts watching.
    #[test]
    fn reads_its_own_pages() {
        // Written: anonymous pages. Allocated zeroed and only read: the zero page, in a
        // mapping of its own (above glibc's largest mmap threshold, 32 MiB: calloc gives
        // fresh pages, not a chunk other tests wrote).
        // This machine's pages (the read is of this machine's kernel).
        let page = PageSize::of_this_machine().bytes();
        let written = vec![1u8; 64 * page as usize];
        let read = vec![0u8; 40 << 20];
        let sum: u64 = read
            .iter()
            .step_by(page as usize)
            .map(|&byte| u64::from(std::hint::black_box(byte)))
            .sum();
        assert_eq!(sum, 0);
        let pages = ResidentPages::read(std::process::id()).unwrap();
        // The whole pages inside each buffer.
        let kind_of = |addr: u64| {
            pages
                .runs
                .iter()
                .find(|run| (run.start..run.end).contains(&addr))
                .map(|run| run.kind)
        };
        let inside = |buffer: &[u8]| {
            let start = (buffer.as_ptr() as u64).div_ceil(page) * page;
            (start..buffer.as_ptr() as u64 + buffer.len() as u64 - page + 1).step_by(page as usize)
        };
        for addr in inside(&written) {
            assert_eq!(kind_of(addr), Some(PageRunKind::Anon), "{addr:x}");
        }
        for addr in inside(&read) {
            assert_eq!(kind_of(addr), Some(PageRunKind::Zero), "{addr:x}");
        }
        // The mappings are smaps' headers: maps lines.
        assert!(pages
            .mappings
            .iter()
            .all(|line| MapsLine::parse(line).is_some()));
        assert!(pages.mappings.iter().any(|line| line.ends_with("[stack]")));
        drop((written, read));
    }
}
