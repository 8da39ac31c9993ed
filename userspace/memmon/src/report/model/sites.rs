//! Code sites: call stacks normalised to (object, file offset), interned to small ids.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

/// Index of an object (a mapped file) in [`SiteTable::objects`].
pub type ObjectId = u32;
/// Index of a site in [`SiteTable`].
pub type SiteId = u32;
/// Index of an address space in [`SiteTable`]: a process's image from its start, fork or
/// exec to its next exec. Addresses outside files mean something only in their own.
pub type SpaceId = u32;

/// One frame of a site, innermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Frame {
    /// Code in a mapped file: `offset` is the file offset of the address; `ret` marks a
    /// return address (symbolised at `offset - 1`, inside the call instruction).
    Code {
        /// The object.
        object: ObjectId,
        /// File offset.
        offset: u64,
        /// A return address rather than the faulting instruction.
        ret: bool,
    },
    /// An address in no file mapping the capture knows (JIT code, unknown regions), in
    /// the address space it was seen in (whose perf map names it).
    Address {
        /// The address.
        addr: u64,
        /// The address space.
        space: SpaceId,
    },
    /// A Python function: the code object's index in [`SiteTable::python_code`], and the
    /// line it was at.
    Python {
        /// The code object.
        code: u32,
        /// The line.
        line: u32,
    },
    /// A pseudo-frame: memory the capture cannot tie to code.
    Label(&'static str),
}

/// Label of faults the kernel took on the process's behalf without a stack.
pub const LABEL_KERNEL: &str = "[kernel, for the process]";
/// Label of regions that existed before watching began.
pub const LABEL_BEFORE: &str = "[mapped before watching]";
/// Label of the pages a process held when memmon started watching it (`record -p`, a
/// process the agent or `record --cgroup` finds running): resident or swapped then, by code
/// the capture cannot name ([`crate::capture::resident`]).
pub const LABEL_RESIDENT_BEFORE: &str = "[resident before memmon started]";
/// Label of regions the program's exec mapped.
pub const LABEL_EXEC: &str = "[exec]";
/// Label of system calls without a stack.
pub const LABEL_NO_STACK: &str = "[system call, no stack]";
/// Label of a Python frame whose code object the capture does not name.
pub const LABEL_PYTHON_UNNAMED: &str = "[Python code, not named]";
/// Label of what memmon's own image did before the command's exec (`record -- CMD`).
pub const LABEL_MEMMON: &str = "[memmon, before the command's exec]";
/// Label of the sites a capped table dropped, least recently used first
/// ([`SiteTable::set_capacity`]): what their pages and counts are shown under.
pub const LABEL_DROPPED: &str = "[sites dropped: least recently used]";

/// A perf map (`/tmp/perf-PID.map`): generated code's (start, end, line number, name), by
/// start; and the longest entry, which bounds a lookup's scan.
#[derive(Debug, Default, Clone)]
struct PerfMap {
    entries: Vec<(u64, u64, usize, String)>,
    longest: u64,
}

impl PerfMap {
    fn add<'l>(&mut self, lines: impl IntoIterator<Item = &'l str>) {
        for line in lines {
            let mut parts = line.trim().splitn(3, char::is_whitespace);
            let (Some(start), Some(size), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok();
            let (Some(start), Some(size)) = (hex(start), hex(size)) else {
                continue;
            };
            let name = name.trim();
            if size == 0 || name.is_empty() {
                continue;
            }
            let seq = self.entries.len();
            self.entries
                .push((start, start.saturating_add(size), seq, name.to_owned()));
            self.longest = self.longest.max(size);
        }
        self.entries.sort();
    }

    fn symbol(&self, addr: u64) -> Option<&str> {
        let end = self.entries.partition_point(|(start, ..)| *start <= addr);
        let lowest = addr.saturating_sub(self.longest);
        self.entries[..end]
            .iter()
            .rev()
            .take_while(|(start, ..)| *start >= lowest)
            .filter(|(_, stop, ..)| addr < *stop)
            .max_by_key(|(_, _, seq, _)| *seq)
            .map(|(.., name)| name.as_str())
    }
}

/// An address space that frames outside files were seen in.
#[derive(Debug, Clone)]
struct AddressSpace {
    /// The space a fork copied this one from.
    parent: Option<SpaceId>,
    perf_map: PerfMap,
}

/// Interned objects and sites, shared by all processes and captures of a report.
#[derive(Debug, Default, Clone)]
pub struct SiteTable {
    objects: Vec<String>,
    build_ids: Vec<Option<String>>,
    object_ids: HashMap<String, ObjectId>,
    sites: Vec<Vec<Frame>>,
    site_ids: FxHashMap<Vec<Frame>, SiteId>,
    /// The address spaces of [`Frame::Address`] frames, by id: each with its perf map.
    spaces: Vec<AddressSpace>,
    /// Python code objects (`# pycode` headers), by index.
    python_codes: Vec<crate::report::python::CodeInfo>,
    python_code_ids: HashMap<crate::report::python::CodeInfo, u32>,
    /// Names resolved on the record machine (`record --symbolize`): the JSON array of
    /// a frame's symbolised frames, by frame.
    recorded: HashMap<Frame, String>,
    /// The most sites with code frames kept ([`SiteTable::set_capacity`]); none: no cap.
    capacity: Option<usize>,
    /// When each site was last used, by id (kept only with a capacity).
    last_use: Vec<u64>,
    /// The use clock.
    clock: u64,
    /// Sites with code frames, not dropped.
    kept: usize,
    /// Frames at addresses in no region the model knew when they were seen (not in an
    /// anonymous region: no JIT's code), whose mapping's events a lossy stream may have
    /// lost.
    unmapped: rustc_hash::FxHashSet<Frame>,
    /// Sites dropped so far.
    dropped: u64,
    /// Drops and recycles so far: a cache of site ids made before the last one is stale.
    drops: u64,
    /// Dropped sites whose ids still name pages and counts: the replay moves those to the
    /// one [`LABEL_DROPPED`] site, then frees the ids ([`SiteTable::take_dropped`],
    /// [`SiteTable::free`]).
    dropped_ids: Vec<SiteId>,
    /// Freed ids, reused by the next new sites.
    free: Vec<SiteId>,
    /// How many times each id was given to a site (kept only with a capacity): a cache
    /// keyed by id holds for the generation it was made in.
    generations: Vec<u32>,
    /// Sites made so far, reused ids included: a cache of the table's sites made when
    /// this was lower misses some.
    created: u64,
}

/// Where a recycle of dropped sites moved their pages and counts: each id of `dropped`
/// now counts under `into` (the [`LABEL_DROPPED`] site).
#[derive(Debug, Clone, Default)]
pub struct SiteRemap {
    /// The ids dropped, freed for reuse once the remap is applied everywhere.
    pub dropped: rustc_hash::FxHashSet<SiteId>,
    /// The site their pages and counts now belong to.
    pub into: SiteId,
}

impl SiteRemap {
    /// The site `id` counts under after the remap.
    pub fn apply(&self, id: SiteId) -> SiteId {
        if self.dropped.contains(&id) {
            self.into
        } else {
            id
        }
    }

    /// Moves the entries of dropped ids of a map by site to `into`, added up.
    pub fn map<V: Copy + Default + std::ops::Add<Output = V>>(
        &self,
        map: &mut FxHashMap<SiteId, V>,
    ) {
        let mut moved = None;
        for id in &self.dropped {
            if let Some(value) = map.remove(id) {
                moved = Some(moved.unwrap_or_default() + value);
            }
        }
        if let Some(value) = moved {
            let entry = map.entry(self.into).or_default();
            *entry = *entry + value;
        }
    }
}

impl SiteTable {
    /// A new address space; `parent`, the space a fork copied it from (its generated code
    /// was copied too: the parent's perf map names what the child's own does not, as
    /// perf does).
    pub fn new_space(&mut self, parent: Option<SpaceId>) -> SpaceId {
        let id = SpaceId::try_from(self.spaces.len()).unwrap_or(SpaceId::MAX);
        self.spaces.push(AddressSpace {
            parent: parent.filter(|&p| p < id),
            perf_map: PerfMap::default(),
        });
        id
    }

    /// Adds the lines of a perf map to the map of address space `space` (`START SIZE
    /// NAME`, hex with or without `0x`; bad lines are skipped). A later line wins over an
    /// earlier one for the same addresses (a JIT reusing memory appends the new code's
    /// line).
    pub fn add_perf_map<'l>(&mut self, space: SpaceId, lines: impl IntoIterator<Item = &'l str>) {
        if let Some(space) = self.spaces.get_mut(space as usize) {
            space.perf_map.add(lines);
        }
    }

    /// The name the perf maps give the generated code at `addr` in address space
    /// `space`: its own map's (of the entries that cover it, the one added last), else
    /// that of the space it was forked from, and so on. Another process's map is never
    /// used.
    pub fn perf_symbol(&self, space: SpaceId, addr: u64) -> Option<&str> {
        let mut next = Some(space);
        while let Some(id) = next {
            let space = self.spaces.get(id as usize)?;
            if let Some(name) = space.perf_map.symbol(addr) {
                return Some(name);
            }
            next = space.parent;
        }
        None
    }

    /// The index of a Python code object, added if new.
    pub fn intern_python_code(&mut self, code: crate::report::python::CodeInfo) -> u32 {
        if let Some(&id) = self.python_code_ids.get(&code) {
            return id;
        }
        let id = u32::try_from(self.python_codes.len()).unwrap_or(u32::MAX);
        self.python_codes.push(code.clone());
        self.python_code_ids.insert(code, id);
        id
    }

    /// The Python code object of index `id`.
    pub fn python_code(&self, id: u32) -> Option<&crate::report::python::CodeInfo> {
        self.python_codes.get(id as usize)
    }

    /// Keeps the frames the record machine resolved for a code frame (a JSON array of
    /// frames, as `# symbol` headers carry them).
    pub fn add_recorded(&mut self, frame: Frame, frames_json: String) {
        self.recorded.insert(frame, frames_json);
    }

    /// The frames the record machine resolved for `frame`, as JSON.
    pub fn recorded(&self, frame: &Frame) -> Option<&str> {
        self.recorded.get(frame).map(String::as_str)
    }

    /// The id of the object at `path`, added if new.
    pub fn object(&mut self, path: &str) -> ObjectId {
        self.object_with_build_id(path, None)
    }

    /// The id of an object: the same build ID is the same object whatever its path (so
    /// captures from different machines merge), else the same path.
    pub fn object_with_build_id(&mut self, path: &str, build_id: Option<&str>) -> ObjectId {
        let key = match build_id {
            Some(id) => format!("build-id:{id}"),
            None => path.to_owned(),
        };
        if let Some(&id) = self.object_ids.get(&key) {
            return id;
        }
        let id = ObjectId::try_from(self.objects.len()).unwrap_or(ObjectId::MAX);
        self.objects.push(path.to_owned());
        self.build_ids.push(build_id.map(str::to_owned));
        self.object_ids.insert(key, id);
        id
    }

    /// The build ID the capture recorded for an object.
    pub fn object_build_id(&self, id: ObjectId) -> Option<&str> {
        self.build_ids.get(id as usize).and_then(|b| b.as_deref())
    }

    /// The path of an object.
    pub fn object_path(&self, id: ObjectId) -> &str {
        self.objects.get(id as usize).map_or("?", String::as_str)
    }

    /// All objects, by id.
    pub fn objects(&self) -> &[String] {
        &self.objects
    }

    /// The id of a site, added if new.
    pub fn intern(&mut self, frames: Vec<Frame>) -> SiteId {
        if let Some(&id) = self.site_ids.get(&frames) {
            self.touch(id);
            return id;
        }
        let code = !matches!(frames.as_slice(), [Frame::Label(_)]);
        self.created += 1;
        let id = match self.free.pop() {
            Some(id) => {
                self.sites[id as usize] = frames.clone();
                if let Some(generation) = self.generations.get_mut(id as usize) {
                    *generation = generation.wrapping_add(1);
                }
                id
            }
            None => {
                let id = SiteId::try_from(self.sites.len()).unwrap_or(SiteId::MAX);
                self.sites.push(frames.clone());
                if self.capacity.is_some() {
                    self.last_use.push(0);
                    self.generations.push(0);
                }
                id
            }
        };
        self.site_ids.insert(frames, id);
        if let Some(capacity) = self.capacity {
            self.touch(id);
            if code {
                self.kept += 1;
                if self.kept > capacity {
                    self.drop_least_recent(capacity);
                }
            }
        }
        id
    }

    /// Caps the sites with code frames at `capacity` (at least 8): past it, the least
    /// recently used eighth are dropped. A dropped site's frames become the one label
    /// [`LABEL_DROPPED`] and its stack is freed; the same stack seen again is a new site.
    /// Its id names its pages and counts until the replay moves them to the
    /// [`LABEL_DROPPED`] site and frees the id for a new site
    /// ([`SiteTable::take_dropped`]), so that a table that runs for ever stays within its
    /// capacity. Label sites are never dropped. Set it before the first site.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = Some(capacity.max(8));
        self.last_use = vec![0; self.sites.len()];
        self.generations = vec![0; self.sites.len()];
    }

    /// The sites dropped since the last call, as a remap to the [`LABEL_DROPPED`] site
    /// (interned if new); none when nothing was dropped. Apply it to everything that
    /// names sites, then [`SiteTable::free`] it.
    pub fn take_dropped(&mut self) -> Option<SiteRemap> {
        if self.dropped_ids.is_empty() {
            return None;
        }
        let dropped = std::mem::take(&mut self.dropped_ids).into_iter().collect();
        let into = self.label(LABEL_DROPPED);
        Some(SiteRemap { dropped, into })
    }

    /// Frees the ids of a remap applied everywhere: new sites reuse them.
    pub fn free(&mut self, remap: &SiteRemap) {
        for &id in &remap.dropped {
            if let Some(frames) = self.sites.get_mut(id as usize) {
                *frames = Vec::new();
                if let Some(last) = self.last_use.get_mut(id as usize) {
                    *last = 0;
                }
                self.free.push(id);
            }
        }
        // Freed ids are reused in any order: lowest first keeps the table dense.
        self.free.sort_unstable_by(|a, b| b.cmp(a));
        self.drops += 1;
    }

    /// How many times site `id` was given to a site (0: once). With a capacity only.
    pub fn generation(&self, id: SiteId) -> u32 {
        self.generations.get(id as usize).copied().unwrap_or(0)
    }

    /// Sites made so far, reused ids included.
    pub fn created(&self) -> u64 {
        self.created
    }

    /// Address spaces made ([`SiteTable::new_space`]).
    pub fn space_count(&self) -> usize {
        self.spaces.len()
    }

    /// The id of label site `label`, if it was interned.
    pub fn label_id(&self, label: &'static str) -> Option<SiteId> {
        self.site_ids.get(&[Frame::Label(label)][..]).copied()
    }

    /// Notes a use of `site` (for [`SiteTable::set_capacity`]'s order).
    pub fn touch(&mut self, site: SiteId) {
        if let Some(last) = self.last_use.get_mut(site as usize) {
            self.clock += 1;
            *last = self.clock;
        }
    }

    /// Sites dropped so far by the cap.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Counts the drops: a site id cached before it changed may name a dropped site.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// Sites with code frames not dropped.
    pub fn kept(&self) -> usize {
        if self.capacity.is_some() {
            self.kept
        } else {
            self.sites.len()
        }
    }

    fn drop_least_recent(&mut self, capacity: usize) {
        let mut code: Vec<(u64, SiteId)> = self
            .sites
            .iter()
            .enumerate()
            // Neither labels (dropped ones included) nor freed ids.
            .filter(|(_, frames)| !matches!(frames.as_slice(), [] | [Frame::Label(_)]))
            .map(|(id, _)| (self.last_use[id], id as SiteId))
            .collect();
        code.sort_unstable();
        let excess = self.kept - (capacity - capacity / 8);
        for &(_, id) in code.iter().take(excess) {
            let frames = std::mem::replace(
                &mut self.sites[id as usize],
                vec![Frame::Label(LABEL_DROPPED)],
            );
            self.site_ids.remove(&frames);
            self.dropped_ids.push(id);
        }
        self.kept -= excess;
        self.dropped += excess as u64;
        self.drops += 1;
    }

    /// A one-frame pseudo-site.
    pub fn label(&mut self, label: &'static str) -> SiteId {
        self.intern(vec![Frame::Label(label)])
    }

    /// Notes that `frame` (a [`Frame::Address`]) was at an address in no region the model
    /// knew.
    pub fn note_unmapped(&mut self, frame: Frame) {
        self.unmapped.insert(frame);
    }

    /// Whether `frame` was seen at an address in no region the model knew
    /// ([`SiteTable::note_unmapped`]).
    pub fn is_unmapped(&self, frame: &Frame) -> bool {
        self.unmapped.contains(frame)
    }

    /// The frames of a site, innermost first.
    pub fn frames(&self, id: SiteId) -> &[Frame] {
        self.sites.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// Number of site ids (freed ones included: their frames are empty).
    pub fn len(&self) -> usize {
        self.sites.len()
    }

    /// True when no site was interned.
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::SiteTable;

    /// With a capacity of 16, the 17th code site drops the 2 least recently used (down to
    /// 14); a label site is never dropped and does not count; the stack of a dropped site
    /// seen again is a new site.
    #[test]
    fn capped_table_drops_least_recent() {
        use super::{Frame, LABEL_DROPPED};
        let code = |n: u64| {
            vec![Frame::Code {
                object: 0,
                offset: n,
                ret: false,
            }]
        };
        let mut table = SiteTable::default();
        table.set_capacity(16);
        let label = table.label("[exec]");
        let ids: Vec<u32> = (0..16).map(|n| table.intern(code(n))).collect();
        // Sites 0 and 1 used again: 2 and 3 are now the least recent.
        assert_eq!(table.intern(code(0)), ids[0]);
        table.touch(ids[1]);
        assert_eq!(table.kept(), 16);
        assert_eq!(table.dropped(), 0);
        let new = table.intern(code(16));
        assert_eq!(table.kept(), 14);
        assert_eq!(table.dropped(), 3);
        assert_eq!(table.drops(), 1);
        for id in &ids[2..5] {
            assert_eq!(table.frames(*id), [Frame::Label(LABEL_DROPPED)]);
        }
        assert_eq!(table.frames(ids[0]), code(0).as_slice());
        assert_eq!(table.frames(ids[5]), code(5).as_slice());
        assert_eq!(table.frames(new), code(16).as_slice());
        assert_eq!(table.frames(label), [Frame::Label("[exec]")]);
        let again = table.intern(code(2));
        assert_ne!(again, ids[2]);
        assert_eq!(table.kept(), 15);

        // The replay moves what names the dropped ids to the dropped label, then frees
        // them: new sites reuse them, lowest first, each a generation later.
        let remap = table.take_dropped().unwrap();
        assert_eq!(remap.dropped.len(), 3);
        assert_eq!(table.frames(remap.into), [Frame::Label(LABEL_DROPPED)]);
        assert_eq!(remap.apply(ids[3]), remap.into);
        assert_eq!(remap.apply(ids[5]), ids[5]);
        assert!(table.take_dropped().is_none());
        let (len, created) = (table.len(), table.created());
        table.free(&remap);
        assert!(table.frames(ids[2]).is_empty());
        assert_eq!(table.generation(ids[2]), 0);
        let reused = table.intern(code(17));
        assert_eq!(reused, ids[2]);
        assert_eq!(table.generation(reused), 1);
        assert_eq!(table.frames(reused), code(17).as_slice());
        assert_eq!((table.len(), table.created()), (len, created + 1));
        assert_eq!(table.kept(), 16);
    }

    #[test]
    fn perf_map_lookup() {
        let mut sites = SiteTable::default();
        let space = sites.new_space(None);
        sites.add_perf_map(
            space,
            [
                "1000 100 first",
                "not a line",
                "0x2000 0x10 second with spaces",
                "3000 0 empty",
                "1080 10 reused",
            ],
        );
        let symbol = |addr| sites.perf_symbol(space, addr);
        assert_eq!(symbol(0x1000), Some("first"));
        assert_eq!(symbol(0x10ff), Some("first"));
        assert_eq!(symbol(0x1100), None);
        // The later line wins where both cover the address.
        assert_eq!(symbol(0x1085), Some("reused"));
        assert_eq!(symbol(0x1090), Some("first"));
        assert_eq!(symbol(0x200f), Some("second with spaces"));
        assert_eq!(symbol(0x2010), None);
        assert_eq!(symbol(0x3000), None);
        assert_eq!(symbol(0xfff), None);
    }

    #[test]
    fn perf_maps_are_per_address_space() {
        let mut sites = SiteTable::default();
        let (a, b) = (sites.new_space(None), sites.new_space(None));
        sites.add_perf_map(a, ["1000 100 in_a", "5000 10 only_a"]);
        sites.add_perf_map(b, ["1000 100 in_b"]);
        assert_eq!(sites.perf_symbol(a, 0x1010), Some("in_a"));
        assert_eq!(sites.perf_symbol(b, 0x1010), Some("in_b"));
        // Another process's map never names an address.
        assert_eq!(sites.perf_symbol(b, 0x5000), None);
        let without = sites.new_space(None);
        assert_eq!(sites.perf_symbol(without, 0x1010), None);
        // A forked child: its own map first, else its parent's.
        let child = sites.new_space(Some(a));
        sites.add_perf_map(child, ["1000 10 in_child"]);
        assert_eq!(sites.perf_symbol(child, 0x1000), Some("in_child"));
        assert_eq!(sites.perf_symbol(child, 0x1050), Some("in_a"));
        assert_eq!(sites.perf_symbol(child, 0x5000), Some("only_a"));
        assert_eq!(sites.perf_symbol(a, 0x1000), Some("in_a"));
        // An unknown space names nothing.
        assert_eq!(sites.perf_symbol(99, 0x1000), None);
    }
}
