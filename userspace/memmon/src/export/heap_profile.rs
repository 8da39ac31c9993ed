//! Allocators' heap profiles as snapshots: jemalloc's `heap_v2/R` dumps
//! (`prof:true`), gperftools' and tcmalloc's `heap profile:` dumps (`HEAPPROFILE=`,
//! `MallocExtension::GetHeapSample`), and Go's pprof heap profiles (`inuse_space`).
//!
//! A text dump has its stacks (return addresses, innermost first) with their in-use
//! objects and bytes, and a copy of the process's `/proc/self/maps`
//! (`MAPPED_LIBRARIES:` or `--- Memory map: ---`). Each stack's bytes are unbiased as
//! jeprof does ([`Sampling::unbias`]), per dump and per stack, and its frames are normalised
//! through the dump's own maps to (build ID, file offset of the instruction), as the
//! snapshots of captures are: the same code has the same stack id whatever ASLR did.
//!
//! A dump that does not parse gives one [`ParseError`]: the line and why.

use std::collections::BTreeMap;
use std::fmt;

use memmon_objects::procfs::MapsEntry;

use memmon_objects::procfs::FileId;

use crate::report::output::profile_proto::Profile;

use super::{snapshot_id, SnapshotData, StackFrame, StackSample};

/// Which allocator wrote a dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapFormat {
    /// jemalloc's `heap_v2/R` (threaded) dump.
    Jemalloc,
    /// gperftools' or tcmalloc's `heap profile:` dump.
    Gperftools,
    /// Go's pprof heap profile (gzipped profile.proto).
    Go,
}

impl HeapFormat {
    /// The `profiler` label of its snapshots.
    pub fn name(self) -> &'static str {
        match self {
            HeapFormat::Jemalloc => "jemalloc",
            HeapFormat::Gperftools => "gperftools",
            HeapFormat::Go => "go",
        }
    }
}

/// How a dump's counts were sampled, as jeprof reads its header, and so how they are
/// unbiased.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// Every allocation counted (gperftools' `heapprofile`, a `heap_v2/0` dump): no
    /// adjustment.
    Exact,
    /// A Poisson process of mean `period` bytes (`heap_v2/R`, tcmalloc's `heap_v2/R`):
    /// an allocation of size X was sampled with probability 1 − e^(−X/period).
    Poisson {
        /// The sampling period, bytes.
        period: f64,
    },
    /// tcmalloc's older uniform sampling (`heap/R`, or a header without a type whose
    /// in-use and allocated pairs are equal): counts divided by X/period where that is
    /// below 1.
    Uniform {
        /// Half the header's figure (jeprof's reading), bytes.
        period: f64,
    },
}

impl Sampling {
    /// A stack's estimated true (objects, bytes) from its sampled `objects` and `bytes`,
    /// exactly as jeprof's `AdjustSamples`: for [`Sampling::Poisson`], with the mean size
    /// s/c of the stack's samples, k = 1/(1 − e^(−(s/c)/R)) and (c·k, s·k); no
    /// adjustment where c = 0 or R = 0. For [`Sampling::Uniform`], with r = (s/c)/R,
    /// (c/r, s/r) where r < 1.
    pub fn unbias(self, objects: u64, bytes: u64) -> (f64, f64) {
        let (n, s) = (objects as f64, bytes as f64);
        match self {
            Sampling::Exact => (n, s),
            Sampling::Poisson { period } => {
                if objects == 0 || period == 0.0 {
                    return (n, s);
                }
                let ratio = (s / n) / period;
                let scale = 1.0 / (1.0 - (-ratio).exp());
                (n * scale, s * scale)
            }
            Sampling::Uniform { period } => {
                if objects == 0 || period == 0.0 {
                    return (n, s);
                }
                let ratio = (s / n) / period;
                if ratio < 1.0 {
                    (n / ratio, s / ratio)
                } else {
                    (n, s)
                }
            }
        }
    }
}

/// One stack of a dump.
#[derive(Debug, Clone, PartialEq)]
pub struct HeapStack {
    /// The dump's line of its `@` (from 1; 0 for a Go profile).
    pub line: usize,
    /// Its addresses as the dump gives them (return addresses), innermost first.
    pub addresses: Vec<u64>,
    /// In-use objects, as sampled.
    pub objects: u64,
    /// In-use bytes, as sampled.
    pub bytes: u64,
    /// In-use objects, unbiased.
    pub unbiased_objects: f64,
    /// In-use bytes, unbiased (the estimate of the stack's true bytes).
    pub unbiased_bytes: f64,
}

/// A parsed dump.
#[derive(Debug, Clone, PartialEq)]
pub struct HeapProfile {
    /// Its allocator.
    pub format: HeapFormat,
    /// Its sampling.
    pub sampling: Sampling,
    /// Its stacks, in the dump's order.
    pub stacks: Vec<HeapStack>,
    /// Its maps (sorted by start).
    pub maps: Vec<MapsEntry>,
    /// Build IDs the dump gives itself, by object path (a Go profile's mappings').
    pub build_ids: BTreeMap<String, String>,
    /// Frames a dump names rather than locates (a Go profile's locations without a
    /// mapping), by the address the stack gives them.
    pub names: BTreeMap<u64, String>,
    /// The functions a dump names at an address (a Go profile's locations, innermost
    /// first where inlined): its frames there where the object's build ID is unknown (a Go
    /// binary has a Go build ID but no GNU one unless linked with one).
    pub functions: BTreeMap<u64, Vec<String>>,
    /// Whether the addresses are return addresses (jemalloc's, gperftools'), each moved
    /// one byte back into its call; Go's are already.
    pub return_addresses: bool,
}

/// Why a dump does not parse: the line (from 1; 0 for the whole file) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The line, from 1 (0: the file as a whole).
    pub line: usize,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "line {}: {}", self.line, self.reason)
        }
    }
}

impl std::error::Error for ParseError {}

fn error(line: usize, reason: impl Into<String>) -> ParseError {
    ParseError {
        line,
        reason: reason.into(),
    }
}

/// Whether `bytes` start like a text heap profile (jemalloc's or gperftools').
pub fn is_text_dump(bytes: &[u8]) -> bool {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&[][..], |i| &bytes[i..]);
    start.starts_with(b"heap_v2/") || start.starts_with(b"heap profile:")
}

/// A count of a dump: decimal digits that fit 64 bits.
fn count(word: &str, line: usize) -> Result<u64, ParseError> {
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error(line, format!("bad count {word:?} (not a number)")));
    }
    word.parse()
        .map_err(|_| error(line, format!("bad count {word:?} (over 64 bits)")))
}

/// `C1: S1 [C2: S2]` (in use, then allocated): the four counts.
fn counts(text: &str, line: usize) -> Result<[u64; 4], ParseError> {
    let bad = || error(line, format!("bad counts {text:?} (not `C: S [C: S]`)"));
    let (in_use, rest) = text.split_once('[').ok_or_else(bad)?;
    let allocated = rest.trim_end().strip_suffix(']').ok_or_else(bad)?;
    let pair = |pair: &str| -> Result<(u64, u64), ParseError> {
        let (objects, bytes) = pair.split_once(':').ok_or_else(bad)?;
        Ok((count(objects.trim(), line)?, count(bytes.trim(), line)?))
    };
    let (c1, s1) = pair(in_use)?;
    let (c2, s2) = pair(allocated)?;
    Ok([c1, s1, c2, s2])
}

/// The addresses of a stack (`0xADDR ...`).
fn addresses(text: &str, line: usize) -> Result<Vec<u64>, ParseError> {
    let addresses = text
        .split_ascii_whitespace()
        .map(|word| {
            let digits = word
                .strip_prefix("0x")
                .or_else(|| word.strip_prefix("0X"))
                .unwrap_or(word);
            u64::from_str_radix(digits, 16)
                .map_err(|_| error(line, format!("bad address {word:?} in a stack")))
        })
        .collect::<Result<Vec<u64>, ParseError>>()?;
    if addresses.is_empty() {
        return Err(error(line, "a stack without addresses"));
    }
    Ok(addresses)
}

/// The maps section from line `first` (its lines' numbers from `first + 1`).
fn maps<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> Result<Vec<MapsEntry>, ParseError> {
    let mut maps = Vec::new();
    for (number, text) in lines {
        if text.trim().is_empty() {
            continue;
        }
        let entry = MapsEntry::parse(text.trim_end()).ok_or_else(|| {
            error(
                number,
                format!(
                    "bad maps line {:?}",
                    text.chars().take(80).collect::<String>()
                ),
            )
        })?;
        maps.push(entry);
    }
    maps.sort_by_key(|entry| entry.start);
    Ok(maps)
}

/// Parses a text dump: jemalloc's `heap_v2/R` or gperftools' `heap profile:`.
pub fn parse_text(bytes: &[u8]) -> Result<HeapProfile, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        error(line, "not text (not a heap profile)")
    })?;
    if !text.ends_with('\n') {
        let line = text.lines().count();
        return Err(error(line, "truncated: the last line has no newline"));
    }
    let mut lines = text
        .lines()
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .enumerate()
        .map(|(i, line)| (i + 1, line));
    let (header_line, header) = lines
        .by_ref()
        .find(|(_, line)| !line.trim().is_empty())
        .ok_or_else(|| error(0, "empty"))?;
    let header = header.trim();
    let (format, sampling) = if let Some(rate) = header.strip_prefix("heap_v2/") {
        let period = count(rate.trim(), header_line)?;
        (
            HeapFormat::Jemalloc,
            Sampling::Poisson {
                period: period as f64,
            },
        )
    } else if let Some(rest) = header.strip_prefix("heap profile:") {
        (
            HeapFormat::Gperftools,
            gperftools_sampling(rest, header_line)?,
        )
    } else {
        return Err(error(
            header_line,
            "not a heap profile (no `heap_v2/R` nor `heap profile:` header)",
        ));
    };
    let mut stacks: Vec<HeapStack> = Vec::new();
    // jemalloc: the stack whose `t*` line is awaited.
    let mut open: Option<usize> = None;
    let mut mapped = None;
    while let Some((number, line)) = lines.next() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with("MAPPED_LIBRARIES:") || trimmed.starts_with("--- Memory map:") {
            mapped = Some(maps(lines.by_ref())?);
            break;
        }
        match format {
            HeapFormat::Jemalloc => {
                if let Some(stack) = trimmed.strip_prefix('@') {
                    if let Some(index) = open {
                        return Err(error(stacks[index].line, "a stack without its `t*:` line"));
                    }
                    stacks.push(HeapStack {
                        line: number,
                        addresses: addresses(stack, number)?,
                        objects: 0,
                        bytes: 0,
                        unbiased_objects: 0.0,
                        unbiased_bytes: 0.0,
                    });
                    open = Some(stacks.len() - 1);
                } else if let Some(rest) = trimmed.strip_prefix('t') {
                    let (thread, values) = rest
                        .split_once(':')
                        .ok_or_else(|| error(number, format!("bad line {:?}", shorten(trimmed))))?;
                    if thread != "*" && !thread.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(error(number, format!("bad thread {:?}", shorten(trimmed))));
                    }
                    let [objects, bytes, ..] = counts(values, number)?;
                    // Per-thread lines, and the header's totals, are not the profile.
                    if thread != "*" {
                        continue;
                    }
                    let Some(index) = stacks.len().checked_sub(1) else {
                        continue;
                    };
                    if open.take() != Some(index) {
                        return Err(error(number, "a second `t*:` line for one stack"));
                    }
                    let (unbiased_objects, unbiased_bytes) = sampling.unbias(objects, bytes);
                    let stack = &mut stacks[index];
                    (stack.objects, stack.bytes) = (objects, bytes);
                    (stack.unbiased_objects, stack.unbiased_bytes) =
                        (unbiased_objects, unbiased_bytes);
                } else {
                    return Err(error(number, format!("bad line {:?}", shorten(trimmed))));
                }
            }
            HeapFormat::Gperftools | HeapFormat::Go => {
                let (values, stack) = trimmed
                    .split_once('@')
                    .ok_or_else(|| error(number, format!("bad line {:?}", shorten(trimmed))))?;
                let [objects, bytes, ..] = counts(values, number)?;
                let (unbiased_objects, unbiased_bytes) = sampling.unbias(objects, bytes);
                stacks.push(HeapStack {
                    line: number,
                    addresses: addresses(stack, number)?,
                    objects,
                    bytes,
                    unbiased_objects,
                    unbiased_bytes,
                });
            }
        }
    }
    if let Some(index) = open {
        return Err(error(
            stacks[index].line,
            "a stack without its `t*:` line (truncated?)",
        ));
    }
    let Some(maps) = mapped else {
        return Err(error(
            text.lines().count(),
            "no MAPPED_LIBRARIES section (truncated?)",
        ));
    };
    Ok(HeapProfile {
        format,
        sampling,
        stacks,
        maps,
        build_ids: BTreeMap::new(),
        names: BTreeMap::new(),
        functions: BTreeMap::new(),
        return_addresses: true,
    })
}

fn shorten(text: &str) -> String {
    text.chars().take(60).collect()
}

/// The sampling of a `heap profile:` header (after the colon), as jeprof's
/// `ReadHeapProfile` reads it.
fn gperftools_sampling(rest: &str, line: usize) -> Result<Sampling, ParseError> {
    let (values, kind) = match rest.split_once('@') {
        Some((values, kind)) => (values, Some(kind.trim())),
        None => (rest, None),
    };
    let [c1, s1, c2, s2] = counts(values, line)?;
    let Some(kind) = kind.filter(|kind| !kind.is_empty()) else {
        // No type: a remote-heap v1 profile if its in-use pair is its allocated pair.
        return Ok(if c1 == c2 && s1 == s2 {
            Sampling::Uniform {
                period: 128.0 * 1024.0,
            }
        } else {
            Sampling::Exact
        });
    };
    // `[url/]type[/period]`: jeprof's `([^/]*)(/(\d+))?` after the `@`.
    let (name, period) = match kind.split_once('/') {
        Some((name, period)) => {
            let digits: String = period.chars().take_while(char::is_ascii_digit).collect();
            (
                name,
                (!digits.is_empty())
                    .then(|| count(&digits, line))
                    .transpose()?,
            )
        }
        None => (kind, None),
    };
    // jeprof: v2 samples at the header's figure, v1 at half of it; at 128 KiB where the
    // header gives none or 0.
    let v2 = name.contains("_v2");
    let period = match period {
        Some(period) if period > 0 && v2 => period as f64,
        Some(period) if period > 0 => period as f64 / 2.0,
        _ => 128.0 * 1024.0,
    };
    Ok(if name == "heapprofile" || !name.contains("heap") {
        Sampling::Exact
    } else if v2 {
        Sampling::Poisson { period }
    } else {
        Sampling::Uniform { period }
    })
}

/// The name of the code frames' pseudo-frame outside any file of the maps.
pub const OUTSIDE_FILES: &str = "[code outside files]";

impl HeapProfile {
    /// The mapping holding `address`.
    pub fn mapping_of(&self, address: u64) -> Option<&MapsEntry> {
        let after = self.maps.partition_point(|entry| entry.start <= address);
        let entry = self.maps[..after].last()?;
        (address < entry.end).then_some(entry)
    }

    /// The program: the path of the first file mapping (the executable, which the
    /// loader maps first).
    pub fn program(&self) -> Option<&str> {
        self.maps
            .iter()
            .find(|entry| entry.path.starts_with('/'))
            .map(|entry| entry.path.as_str())
    }

    /// A stack's frames, normalised through the dump's maps: each return address moved
    /// one byte back (into its call) and made (build ID, file offset); an address in no
    /// file mapping is [`OUTSIDE_FILES`]. `build_id` gives an object's build ID by its
    /// path (where the dump does not); in an object without one, the functions the dump
    /// names there (Go's), else an error naming the object.
    pub fn frames(
        &self,
        stack: &HeapStack,
        build_id: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Result<Vec<StackFrame>, ParseError> {
        let mut frames = Vec::with_capacity(stack.addresses.len());
        for &address in &stack.addresses {
            if let Some(name) = self.names.get(&address) {
                frames.push(StackFrame::Label(name.clone()));
                continue;
            }
            let instruction = if self.return_addresses {
                address.saturating_sub(1)
            } else {
                address
            };
            let Some(entry) = self
                .mapping_of(instruction)
                .filter(|entry| entry.path.starts_with('/'))
            else {
                frames.push(StackFrame::Label(OUTSIDE_FILES.to_owned()));
                continue;
            };
            let id = self.build_ids.get(&entry.path).cloned();
            match id.or_else(|| build_id(&entry.path)) {
                Some(id) => frames.push(StackFrame::Code {
                    build_id: id,
                    file_offset: instruction - entry.start + entry.offset,
                    object: entry.path.clone(),
                }),
                None => match self.functions.get(&address) {
                    Some(names) => frames.extend(names.iter().cloned().map(StackFrame::Label)),
                    None => {
                        return Err(error(
                            stack.line,
                            format!(
                                "unknown build ID of {} (give --sysroot where the binary is)",
                                entry.path
                            ),
                        ))
                    }
                },
            }
        }
        Ok(frames)
    }

    /// The dump as a snapshot named `name`: one sample per stack with its unbiased bytes
    /// (rounded to the byte), their sum as the snapshot's allocated bytes, no resident
    /// figures, and the labels `profiler` (jemalloc, gperftools, go) and `command` (the
    /// program's file name).
    pub fn snapshot(
        &self,
        bytes: &[u8],
        name: &str,
        build_id: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Result<SnapshotData, ParseError> {
        let mut samples = Vec::with_capacity(self.stacks.len());
        let mut allocated = 0u64;
        for stack in &self.stacks {
            let bytes = round(stack.unbiased_bytes);
            allocated = allocated.saturating_add(bytes);
            samples.push(StackSample {
                frames: self.frames(stack, build_id)?,
                allocated: bytes,
                ..StackSample::default()
            });
        }
        let mut labels = BTreeMap::new();
        labels.insert("profiler".to_owned(), self.format.name().to_owned());
        if let Some(program) = self.program() {
            let file = program.rsplit('/').next().unwrap_or(program);
            labels.insert("command".to_owned(), file.to_owned());
        }
        Ok(SnapshotData {
            // A dump does not say when its process started.
            process_start_unix_ns: None,
            id: snapshot_id(bytes, 0, 0),
            source: name.to_owned(),
            labels,
            time_unix_ns: 0,
            resident_known: false,
            anon: 0,
            file: 0,
            shmem: 0,
            allocated: Some(allocated),
            class_bytes: BTreeMap::new(),
            samples,
        })
    }
}

/// An unbiased figure to the nearest byte.
pub fn round(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        // `as` saturates at u64::MAX.
        value.round() as u64
    } else {
        0
    }
}

/// Objects' build IDs by path, read from the binaries (under a sysroot), once each.
#[derive(Debug, Default)]
pub struct BuildIds {
    sysroot: Option<std::path::PathBuf>,
    read: std::collections::HashMap<String, Option<String>>,
}

impl BuildIds {
    /// Reading the binaries at their paths, or under `sysroot`.
    pub fn new(sysroot: Option<&std::path::Path>) -> BuildIds {
        BuildIds {
            sysroot: sysroot.map(std::path::Path::to_path_buf),
            read: Default::default(),
        }
    }

    /// The build ID of the object at `path` where it ran.
    pub fn of(&mut self, path: &str) -> Option<String> {
        let sysroot = &self.sysroot;
        self.read
            .entry(path.to_owned())
            .or_insert_with(|| {
                let file = match sysroot {
                    Some(root) => root.join(path.trim_start_matches('/')),
                    None => std::path::PathBuf::from(path),
                };
                memmon_objects::elf::build_id(&file)
            })
            .clone()
    }
}

/// The sample types of a Go heap profile: in-use objects and bytes.
const GO_IN_USE: [&str; 2] = ["inuse_objects", "inuse_space"];

fn go_text(profile: &Profile, index: i64) -> Result<&str, ParseError> {
    usize::try_from(index)
        .ok()
        .and_then(|i| profile.string_table.get(i))
        .map(String::as_str)
        .ok_or_else(|| {
            error(
                0,
                format!("string {index} out of the table (corrupt profile)"),
            )
        })
}

/// Whether a decoded profile.proto is a Go heap profile (sample types `inuse_objects`
/// and `inuse_space`).
pub fn is_go_heap(profile: &Profile) -> bool {
    GO_IN_USE.iter().all(|kind| {
        profile
            .sample_type
            .iter()
            .any(|t| go_text(profile, t.r#type).is_ok_and(|name| name == *kind))
    })
}

/// A Go heap profile (decoded) as a dump: its `inuse_space` and `inuse_objects`, which
/// Go's runtime has unbiased already (no adjustment here); its mappings as maps, with
/// their build IDs; a location in no mapping named by its function.
pub fn parse_go(profile: &Profile) -> Result<HeapProfile, ParseError> {
    let mut columns = [usize::MAX; 2];
    for (index, value_type) in profile.sample_type.iter().enumerate() {
        let kind = go_text(profile, value_type.r#type)?;
        if let Some(slot) = GO_IN_USE.iter().position(|t| *t == kind) {
            columns[slot] = index;
        }
    }
    if columns.contains(&usize::MAX) {
        return Err(error(
            0,
            "wrong schema: no inuse_objects and inuse_space (not a Go heap profile)",
        ));
    }
    let mut maps = Vec::new();
    let mut build_ids = BTreeMap::new();
    let mut mapping_ids = std::collections::HashMap::new();
    for mapping in &profile.mapping {
        let path = go_text(profile, mapping.filename)?.to_owned();
        let id = go_text(profile, mapping.build_id)?;
        if !id.is_empty() && path.starts_with('/') {
            build_ids.insert(path.clone(), id.to_ascii_lowercase());
        }
        if mapping.memory_limit <= mapping.memory_start {
            return Err(error(
                0,
                format!("mapping {} of {path} has no addresses", mapping.id),
            ));
        }
        mapping_ids.insert(mapping.id, ());
        maps.push(MapsEntry {
            start: mapping.memory_start,
            end: mapping.memory_limit,
            perms: "r-xp".to_owned(),
            offset: mapping.file_offset,
            file: FileId {
                major: 0,
                minor: 0,
                inode: 0,
            },
            path,
            deleted: false,
        });
    }
    maps.sort_by_key(|entry| entry.start);
    let functions: std::collections::HashMap<u64, _> =
        profile.function.iter().map(|f| (f.id, f)).collect();
    // Each location as the address its frames are found by: its own (a return address),
    // or for one without a mapping a made-up one named by its function.
    let mut names = BTreeMap::new();
    let mut functions_at: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut locations = std::collections::HashMap::new();
    for location in &profile.location {
        let named = location
            .line
            .iter()
            .filter_map(|line| functions.get(&line.function_id))
            .map(|function| go_text(profile, function.name).map(str::to_owned))
            .collect::<Result<Vec<String>, ParseError>>()?;
        let address = if location.mapping_id != 0 && location.address != 0 {
            if !mapping_ids.contains_key(&location.mapping_id) {
                return Err(error(
                    0,
                    format!(
                        "location {} names mapping {}, which is not there",
                        location.id, location.mapping_id
                    ),
                ));
            }
            if !named.is_empty() {
                functions_at.insert(location.address, named);
            }
            location.address
        } else {
            let name = match location.line.first() {
                Some(line) => match functions.get(&line.function_id) {
                    Some(function) => go_text(profile, function.name)?,
                    None => "?",
                },
                None => "?",
            };
            // Above any user address: never in a mapping.
            let key = u64::MAX - location.id;
            names.insert(key, name.to_owned());
            key
        };
        locations.insert(location.id, address);
    }
    let mut stacks = Vec::with_capacity(profile.sample.len());
    for sample in &profile.sample {
        let value = |slot: usize| -> Result<u64, ParseError> {
            let value = sample.value.get(columns[slot]).copied().unwrap_or(0);
            u64::try_from(value).map_err(|_| error(0, format!("bad count {value} (negative)")))
        };
        let (objects, bytes) = (value(0)?, value(1)?);
        if objects == 0 && bytes == 0 {
            continue;
        }
        let addresses = sample
            .location_id
            .iter()
            .map(|id| {
                locations.get(id).copied().ok_or_else(|| {
                    error(
                        0,
                        format!("a sample names location {id}, which is not there"),
                    )
                })
            })
            .collect::<Result<Vec<u64>, ParseError>>()?;
        stacks.push(HeapStack {
            line: 0,
            addresses,
            objects,
            bytes,
            unbiased_objects: objects as f64,
            unbiased_bytes: bytes as f64,
        });
    }
    Ok(HeapProfile {
        format: HeapFormat::Go,
        sampling: Sampling::Exact,
        stacks,
        maps,
        build_ids,
        names,
        functions: functions_at,
        return_addresses: false,
    })
}
