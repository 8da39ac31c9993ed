//! The report's data: site rows aggregated by function chain, the RSS tree, and the
//! reconciliation, at one moment (the peak unless asked: [`Moment`]). Output formats
//! render a [`View`].

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::report::model::class::{Class, PageKind};
use crate::report::model::loss::Loss;
use crate::report::model::moment::{duration, Holdings, Moment, MomentError, When};
use crate::report::model::picture::{KindBytes, PageSize, Picture};
use crate::report::model::replay::{Analysis, STACK_ENDS};
use crate::report::model::sites::{ObjectId, SiteId};
use crate::report::model::stats::{FaultClass, SiteStats};
use crate::report::model::timeline::Interval;
use crate::report::symbolize::short_name::Naming;
use crate::report::symbolize::symbols::{name, FrameInfo, Symbols};
use crate::report::view::own_code::{objects_with_own_lines, own_site_name, OwnCode, Split, Whose};
use crate::report::view::reach::{classify, StackReach};
use crate::report::view::reconcile::{reconcile, Check};
use crate::report::view::runtimes::RuntimeWork;
use crate::report::view::your_code::{your_code, YourCode};
use crate::stream::event::Timestamp;

/// An analysis with its symbols and its view: what the outputs render.
pub struct Prepared {
    /// The replay's result.
    pub analysis: Analysis,
    /// Its symbols.
    pub symbols: Symbols,
    /// The view asked for.
    pub view: View,
}

/// Whether a site's memory stays, over the whole capture (whatever the view's moment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifetime {
    /// Still resident at the end, never released.
    Accumulating,
    /// Brought in and released within the capture; nothing resident at the end.
    Temporary,
    /// Some released, some still resident at the end.
    Mixed,
    /// Nothing brought in (only mapped, or only faults that map nothing).
    None,
}

impl Lifetime {
    /// The lifetime of memory with `resident` bytes left and `released` bytes freed.
    fn of(resident: u64, released: u64) -> Lifetime {
        match (resident > 0, released > 0) {
            (true, false) => Lifetime::Accumulating,
            (false, true) => Lifetime::Temporary,
            (true, true) => Lifetime::Mixed,
            (false, false) => Lifetime::None,
        }
    }

    /// Name for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifetime::Accumulating => "accumulating",
            Lifetime::Temporary => "temporary",
            Lifetime::Mixed => "mixed",
            Lifetime::None => "-",
        }
    }
}

/// Faults of a site by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FaultCounts {
    /// First touch of anonymous memory.
    pub first_touch: u64,
    /// File and shmem pages.
    pub file: u64,
    /// Swap-ins.
    pub swap_in: u64,
    /// Copy-on-write / write-notify.
    pub cow: u64,
    /// Spurious, NUMA, hugetlb, access.
    pub other: u64,
}

impl FaultCounts {
    fn add(&mut self, faults: &[u64; 5]) {
        self.first_touch += faults[FaultClass::FirstTouch.index()];
        self.file += faults[FaultClass::File.index()];
        self.swap_in += faults[FaultClass::SwapIn.index()];
        self.cow += faults[FaultClass::CopyOnWrite.index()];
        self.other += faults[FaultClass::Other.index()];
    }

    /// All faults.
    pub fn total(&self) -> u64 {
        self.first_touch + self.file + self.swap_in + self.cow + self.other
    }
}

/// One code site (sites with the same function chain, as the view names it, merged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SiteRow {
    /// The frames, innermost first, with their full names.
    pub frames: Vec<FrameInfo>,
    /// The frames as the view names them ([`Naming`]: short by default): what the tables
    /// show and the rows merge by.
    #[serde(skip)]
    pub shown: Vec<FrameInfo>,
    /// Resident bytes at the view's moment.
    pub resident: u64,
    /// Mapped bytes at the view's moment (by the site of the mapping call).
    pub mapped: u64,
    /// Faults over the capture.
    pub faults: FaultCounts,
    /// Bytes brought in over the capture.
    pub brought_in: u64,
    /// Bytes released by the program over the capture (temporary memory).
    pub released: u64,
    /// Bytes paged out (MADV_PAGEOUT).
    pub paged_out: u64,
    /// Bytes brought back from swap by this site.
    pub swapped_in: u64,
    /// First swap-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_swapin: Option<Timestamp>,
    /// Last swap-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_swapin: Option<Timestamp>,
    /// Highest resident bytes at any moment of the busiest of the merged sites.
    pub peak: u64,
    /// Temporary or accumulating (by the end and the bytes released).
    pub lifetime: Lifetime,
    /// The indexes in `frames` of the program's own code ([`OwnCode::split`]), innermost
    /// first: the first names the site.
    #[serde(skip)]
    pub own: Vec<usize>,
    /// Whose each of `frames` is.
    #[serde(skip)]
    pub whose: Vec<Whose>,
    /// The object of each of `frames` (`None` outside files).
    #[serde(skip)]
    pub objects: Vec<Option<ObjectId>>,
    /// The system part of the stack innermost of its own code, summarised
    /// (`[libsqlite3.so.0: sqlite3_step … libc.so.6: malloc]`).
    #[serde(skip)]
    pub library: Option<String>,
    /// The runtime's or the loader's work, when the stack is theirs (`collector_v8`,
    /// `loader`): the tables count it in one row of its own ([`View::runtime_work`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_work: Option<RuntimeWork>,
    /// The stack goes through an address in no region the model knew, in a stream that
    /// lost events: code whose mapping's events were lost (not generated code).
    #[serde(skip)]
    pub lost_mapping: bool,
}

impl SiteRow {
    /// A row of `frames` (named `shown`) with nothing counted yet.
    fn empty(frames: Vec<FrameInfo>, shown: Vec<FrameInfo>, split: Split) -> SiteRow {
        SiteRow {
            frames,
            shown,
            own: split.own,
            whose: split.whose,
            objects: split.objects,
            library: split.library,
            runtime_work: split.work,
            resident: 0,
            mapped: 0,
            faults: FaultCounts::default(),
            brought_in: 0,
            released: 0,
            paged_out: 0,
            swapped_in: 0,
            first_swapin: None,
            last_swapin: None,
            peak: 0,
            lifetime: Lifetime::None,
            lost_mapping: false,
        }
    }

    /// Adds one merged site: its resident and mapped bytes and its statistics (in pages of
    /// `page` bytes). Its peak is the busiest member's, and at least what the merged row
    /// holds now.
    pub fn add(&mut self, resident: u64, mapped: u64, stats: &SiteStats, page: PageSize) {
        self.resident = self.resident.saturating_add(resident);
        self.mapped = self.mapped.saturating_add(mapped);
        self.faults.add(&stats.faults);
        self.brought_in += page.of(stats.pages_in);
        self.released += page.of(stats.released);
        self.paged_out += page.of(stats.paged_out);
        self.swapped_in += page.of(stats.swapped_in);
        self.peak = self
            .peak
            .max(page.of(stats.peak_resident))
            .max(self.resident);
        self.first_swapin = match (self.first_swapin, stats.first_swapin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_swapin = self.last_swapin.max(stats.last_swapin);
    }

    /// Adds another row's bytes and statistics (a merged row's). Its peak is the busiest
    /// member's, and at least what the merged row holds now.
    fn merge(&mut self, other: &SiteRow) {
        self.resident = self.resident.saturating_add(other.resident);
        self.mapped = self.mapped.saturating_add(other.mapped);
        let (faults, theirs) = (&mut self.faults, other.faults);
        faults.first_touch += theirs.first_touch;
        faults.file += theirs.file;
        faults.swap_in += theirs.swap_in;
        faults.cow += theirs.cow;
        faults.other += theirs.other;
        self.brought_in += other.brought_in;
        self.released += other.released;
        self.paged_out += other.paged_out;
        self.swapped_in += other.swapped_in;
        self.peak = self.peak.max(other.peak).max(self.resident);
        self.first_swapin = match (self.first_swapin, other.first_swapin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_swapin = self.last_swapin.max(other.last_swapin);
        self.lifetime = Lifetime::of(self.resident, self.released);
        self.lost_mapping |= other.lost_mapping;
    }

    /// The innermost function, as the view names it.
    pub fn function(&self) -> &str {
        name::function(&self.shown)
    }

    /// The innermost frame with a source location.
    pub fn location(&self) -> Option<String> {
        name::location(&self.shown)
    }

    /// Functions innermost first, joined by ` < `, as the view names them.
    pub fn chain(&self, depth: usize) -> String {
        name::chain(&self.shown, depth)
    }

    /// The frames from the innermost function of own code on (all of them without own
    /// code), as the view names them.
    pub fn own_frames(&self) -> &[FrameInfo] {
        let first = self.own.first().copied().unwrap_or(0);
        self.shown.get(first..).unwrap_or_default()
    }

    /// The site as a person reads it, by the program's own code: `chain (file:line)` from
    /// the innermost function of own code, then the library part it called, summarised
    /// (`load_rows < main (rows.c:35) → [libsqlite3.so.0: sqlite3_step … malloc]`).
    pub fn name(&self) -> String {
        own_site_name(&self.shown, &self.own, self.library.as_deref())
    }
}

/// The rows of the runtime's and the loader's work in `sites`, one per kind of work,
/// each the sum of its sites, named `[moved by V8's garbage collector]`.
pub fn runtime_work_rows(sites: &[SiteRow]) -> Vec<SiteRow> {
    let mut by_work: BTreeMap<RuntimeWork, SiteRow> = BTreeMap::new();
    for site in sites {
        let Some(work) = site.runtime_work else {
            continue;
        };
        let row = by_work.entry(work).or_insert_with(|| {
            let mut row = SiteRow::empty(Vec::new(), Vec::new(), Split::default());
            row.runtime_work = Some(work);
            row
        });
        row.merge(site);
    }
    let mut rows: Vec<SiteRow> = by_work
        .into_iter()
        .map(|(work, mut row)| {
            let label = format!("[{}]", work.label());
            row.frames = vec![FrameInfo {
                function: label,
                file: None,
                line: None,
                inlined: false,
            }];
            row.shown = row.frames.clone();
            row
        })
        .collect();
    rows.sort_by(site_order);
    rows
}

/// The sites as the tables show them: those that are no runtime's work, and `work` (the
/// [`runtime_work_rows`] of `sites`), in the view's order. Sites a person cannot tell
/// apart (the same [`SiteRow::name`]: their stacks differ only in the library code
/// between the function and the innermost frame, as an interpreted and a compiled call
/// of the same function do) are one row, their counts summed.
pub fn shown_sites<'a>(sites: &'a [SiteRow], work: &'a [SiteRow]) -> Vec<Cow<'a, SiteRow>> {
    let mut rows: Vec<Cow<'a, SiteRow>> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for site in sites
        .iter()
        .filter(|site| site.runtime_work.is_none())
        .chain(work)
    {
        match by_name.entry(site.name()) {
            std::collections::hash_map::Entry::Occupied(seen) => {
                rows[*seen.get()].to_mut().merge(site);
            }
            std::collections::hash_map::Entry::Vacant(new) => {
                new.insert(rows.len());
                rows.push(Cow::Borrowed(site));
            }
        }
    }
    rows.sort_by(|a, b| site_order(a, b));
    rows
}

/// The view's order of sites: by resident bytes, then bytes brought in, then mapped
/// bytes, then name.
fn site_order(a: &SiteRow, b: &SiteRow) -> std::cmp::Ordering {
    b.resident
        .cmp(&a.resident)
        .then(b.brought_in.cmp(&a.brought_in))
        .then(b.mapped.cmp(&a.mapped))
        .then_with(|| a.chain(64).cmp(&b.chain(64)))
}

/// One leaf of the RSS tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassRow {
    /// anon, file or shmem.
    pub kind: PageKind,
    /// The mapping class.
    #[serde(flatten)]
    pub class: Class,
    /// Display label.
    pub label: String,
    /// Resident bytes.
    pub resident: u64,
}

/// Mapped bytes by class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MappedRow {
    /// The mapping class.
    #[serde(flatten)]
    pub class: Class,
    /// Display label.
    pub label: String,
    /// Mapped bytes.
    pub mapped: u64,
}

/// Resident bytes at a moment, and when it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MomentTotals {
    /// The moment for people: `the peak, 9.1 s`, `the end`.
    pub label: String,
    /// Resident bytes (anon + file + shmem).
    pub resident: u64,
    /// By kind, and swapped.
    #[serde(flatten)]
    pub bytes: KindBytes,
    /// When, in each capture (none for the end: each process's own last moment).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<When>,
}

impl MomentTotals {
    fn of(label: String, holdings: &Holdings, when: &[When], page: PageSize) -> MomentTotals {
        let bytes = holdings.total.kind_bytes(page);
        MomentTotals {
            label,
            resident: bytes.resident(),
            bytes,
            when: when.to_vec(),
        }
    }
}

/// The moment a view shows, and the peak and the end to compare with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// The moment shown: `peak`, `end`, `mark "TEXT"` or `time 9.1s` (`--at`).
    pub moment: String,
    /// The moment for people: `the peak, 9.1 s`, `the end`, `mark "x", 2.3 s`, `2.5 s`.
    pub moment_label: String,
    /// Resident bytes at the moment shown.
    pub moment_resident: u64,
    /// When the moment shown was, in each capture (none for the end).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moment_when: Vec<When>,
    /// The peak: its resident bytes and when.
    pub peak: MomentTotals,
    /// The end (each process's last state before it released its memory).
    pub end: MomentTotals,
    /// The end as a moment, on the peak's measure ([`Analysis::end_moment`]): resident
    /// bytes of the live processes together at the capture's last moment (all exited:
    /// just before the last exit). Never above the peak; below `end.resident` when the
    /// processes' last states were not held at once (a compiler driver's children).
    pub end_moment: u64,
    /// The moment shown, to find its pictures in the analysis.
    #[serde(skip)]
    pub at: Moment,
}

impl Shown {
    /// Whether the moment shown is the end (asked, or the peak of a capture without
    /// events).
    pub fn at_end(&self) -> bool {
        self.at == Moment::End || (self.at == Moment::Peak && self.peak.when.is_empty())
    }
}

/// Everything a format renders.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// The moment shown, the peak and the end.
    #[serde(flatten)]
    pub shown: Shown,
    /// What the view is of when it is not of a capture's events (`memmon fleet`: `the mean
    /// of 3 snapshots`): the text's first line names it instead of events and processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregate_of: Option<String>,
    /// Folded stacks and flame graphs rooted at the innermost frame (the allocator), so
    /// that one function's box spans all its callers (`memmon fleet --reverse`).
    #[serde(skip)]
    pub reversed: bool,
    /// Events replayed.
    pub events: u64,
    /// What the stream did not record: the events lost by the reader (`lost`), with the faults not recorded
    /// (`dropped`) and the stacks shed (`shed`), and both by process (`loss_by_process`).
    #[serde(flatten)]
    pub loss: Loss,
    /// Capture lines that did not parse (skipped).
    pub bad_lines: u64,
    /// Binaries not found or not the capture's build.
    pub symbol_warnings: Vec<String>,
    /// One line when the first rows are addresses in objects without symbols: where
    /// their names are ([`crate::report::view::stripped`]; set by
    /// [`crate::report::prepare`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stripped_hint: Option<String>,
    /// Processes.
    pub pids: Vec<u32>,
    /// Whether stacks were present (else sites are fault ips).
    pub stacks: bool,
    /// Events with a stack, by why it ends (whole, depth, unreadable, no_table,
    /// unsupported, shed: `StackEnd` order).
    pub stack_ends: [u64; STACK_ENDS],
    /// Resident bytes at the moment by where their stacks end (`main`, a thread's
    /// start, start-up, exit, no stack, other).
    pub stack_reach: StackReach,
    /// Whether `pages=` was present.
    pub pages_key: bool,
    /// Totals by kind at the moment shown.
    pub totals: KindBytes,
    /// Mapped bytes at the moment.
    pub mapped: u64,
    /// The RSS tree leaves, largest first within each kind.
    pub tree: Vec<ClassRow>,
    /// Mapped bytes by class.
    pub mapped_by_class: Vec<MappedRow>,
    /// All sites, by resident bytes then brought-in bytes.
    pub sites: Vec<SiteRow>,
    /// The runtime's and the loader's work ([`runtime_work_rows`]): the tables show each
    /// as one row in place of its sites.
    pub runtime_work: Vec<SiteRow>,
    /// Resident bytes by function of the program's own code ([`your_code`]).
    pub your_code: YourCode,
    /// Model against the process's counters.
    pub reconciliation: Vec<Check>,
    /// The timeline.
    pub timeline: Vec<TimelineRow>,
    /// With `--group-by`: the resident memory at the moment by cgroup or by process.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupRow>,
}

/// What `--group-by` groups the resident memory at the moment by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// The cgroup each process belonged to (`# cgroup` headers of `record`).
    Cgroup,
    /// Each process.
    Process,
}

impl GroupBy {
    /// Parses `cgroup` or `process`.
    pub fn parse(text: &str) -> Option<GroupBy> {
        match text {
            "cgroup" => Some(GroupBy::Cgroup),
            "process" => Some(GroupBy::Process),
            _ => None,
        }
    }
}

/// One group of `--group-by`: its processes' states at the moment summed, as the whole
/// report's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRow {
    /// `cgroup /system.slice/foo.service`, `process 212`; `cgroup ?` for processes the
    /// capture has no cgroup of.
    pub name: String,
    /// The processes.
    pub pids: Vec<u32>,
    /// Resident bytes by kind.
    pub totals: KindBytes,
    /// The RSS tree leaves of the group, largest first within each kind.
    pub tree: Vec<ClassRow>,
    /// The group's sites with resident bytes, largest first (faults and released bytes
    /// are the whole capture's, as in [`View::sites`]).
    pub sites: Vec<SiteRow>,
}

/// One interval of the timeline, with its top growing sites.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineRow {
    /// The interval.
    #[serde(flatten)]
    pub interval: Interval,
    /// Growth over the spike threshold.
    pub spike: bool,
    /// Sites that grew most (function chain, bytes).
    pub top: Vec<(String, i64)>,
}

/// Options of a view.
#[derive(Debug, Clone, Default)]
pub struct ViewOptions {
    /// The moment shown (the peak by default).
    pub at: Moment,
    /// Flag intervals growing by more than this many bytes.
    pub spike: Option<u64>,
    /// Group the resident memory at the moment by cgroup or by process.
    pub group_by: Option<GroupBy>,
    /// What is the program's own code.
    pub own_code: OwnCode,
    /// How functions are named (short unless `--full-names`).
    pub naming: Naming,
}

/// Why a view cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// The moment asked is not in the capture.
    #[error(transparent)]
    Moment(#[from] MomentError),
}

/// When, in each capture: `9.1 s`, or `9.1 s, 8.7 s` for several.
fn times(when: &[When]) -> String {
    let times: Vec<String> = when.iter().map(|w| duration(w.since_start_ns)).collect();
    times.join(", ")
}

/// The moment for people (`the peak, 9.1 s`), in captures of `processes` processes.
fn moment_label(moment: &Moment, when: &[When], processes: usize) -> String {
    let several = when.len() > 1;
    match moment {
        Moment::Peak if when.is_empty() => "the end (no event)".to_owned(),
        Moment::Peak if several => format!(
            "the peak of each of the {} captures ({}), summed",
            when.len(),
            times(when)
        ),
        Moment::Peak if processes > 1 => format!(
            "the peak of the {processes} processes together, {}",
            times(when)
        ),
        Moment::Peak => format!("the peak, {}", times(when)),
        Moment::End => "the end".to_owned(),
        Moment::Mark(text) => format!("mark {text:?}, {}", times(when)),
        Moment::Time(_) if several => {
            format!("{} after each capture's start, summed", times(&when[..1]))
        }
        Moment::Time(_) => times(when),
    }
}

/// The moment as `--at` names it: `peak`, `end`, `mark "TEXT"`, `time 9.1s`.
fn moment_key(moment: &Moment) -> String {
    match moment {
        Moment::Peak => "peak".to_owned(),
        Moment::End => "end".to_owned(),
        Moment::Mark(text) => format!("mark {text:?}"),
        Moment::Time(nanos) => format!("time {}s", *nanos as f64 / 1e9),
    }
}

/// Builds the view of `analysis` at a moment.
pub fn build(
    analysis: &Analysis,
    symbols: &Symbols,
    options: &ViewOptions,
) -> Result<View, ViewError> {
    let shown = analysis.at(&options.at)?;
    let picture = &shown.holdings.total;
    let (sites, stack_reach) = site_rows(analysis, symbols, options, picture, &analysis.end.total);
    let your_code = your_code(&sites, &analysis.executables);
    let runtime_work = runtime_work_rows(&sites);
    let tree = tree_rows(analysis, picture);
    let groups = match options.group_by {
        Some(by) => group_rows(analysis, symbols, options, shown.holdings, by),
        None => Vec::new(),
    };
    let peak = analysis.at(&Moment::Peak)?;
    let mut mapped_by_class: Vec<MappedRow> = picture
        .class_mapped
        .iter()
        .filter_map(|(&class, &bytes)| {
            let class = analysis.classes.get(class as usize)?.clone();
            Some(MappedRow {
                label: class.label(),
                class,
                mapped: bytes,
            })
        })
        .collect();
    mapped_by_class.sort_by(|a, b| b.mapped.cmp(&a.mapped).then(a.label.cmp(&b.label)));
    let timeline = timeline_rows(analysis, symbols, options.spike, options.naming);
    Ok(View {
        aggregate_of: None,
        reversed: false,
        shown: Shown {
            moment: moment_key(&options.at),
            moment_label: moment_label(&options.at, shown.when, analysis.pids.len()),
            moment_resident: picture.kind_bytes(analysis.page).resident(),
            moment_when: shown.when.to_vec(),
            peak: MomentTotals::of(
                moment_label(&Moment::Peak, peak.when, analysis.pids.len()),
                peak.holdings,
                peak.when,
                analysis.page,
            ),
            end: MomentTotals::of(
                moment_label(&Moment::End, &[], 0),
                &analysis.end,
                &[],
                analysis.page,
            ),
            end_moment: analysis.end_moment,
            at: options.at.clone(),
        },
        events: analysis.events,
        loss: analysis.loss.clone(),
        bad_lines: analysis.bad_lines,
        symbol_warnings: symbols.warnings.clone(),
        stripped_hint: None,
        pids: analysis.pids.clone(),
        stacks: analysis.has_stacks,
        stack_ends: analysis.stack_ends,
        stack_reach,
        pages_key: analysis.has_pages,
        totals: picture.kind_bytes(analysis.page),
        mapped: crate::report::model::picture::saturating_sum(
            picture.class_mapped.values().copied(),
        ),
        tree,
        mapped_by_class,
        sites,
        runtime_work,
        your_code,
        reconciliation: reconcile(analysis),
        timeline,
        groups,
    })
}

/// The RSS tree leaves of a picture, largest first within each kind.
fn tree_rows(analysis: &Analysis, picture: &Picture) -> Vec<ClassRow> {
    let mut tree: Vec<ClassRow> = picture
        .class_resident
        .iter()
        .filter_map(|(&(kind, class), &pages)| {
            let class = analysis.classes.get(class as usize)?.clone();
            Some(ClassRow {
                kind,
                label: class.label(),
                class,
                resident: analysis.page.of(pages),
            })
        })
        .collect();
    tree.sort_by(|a, b| {
        (a.kind, std::cmp::Reverse(a.resident), &a.label).cmp(&(
            b.kind,
            std::cmp::Reverse(b.resident),
            &b.label,
        ))
    });
    tree
}

/// The processes' pictures at a moment grouped by cgroup or process, largest resident
/// first.
fn group_rows(
    analysis: &Analysis,
    symbols: &Symbols,
    options: &ViewOptions,
    holdings: &Holdings,
    by: GroupBy,
) -> Vec<GroupRow> {
    let mut groups: Vec<(String, Vec<u32>, Picture)> = Vec::new();
    for (key, picture) in &holdings.processes {
        let name = match by {
            GroupBy::Cgroup => format!(
                "cgroup {}",
                analysis.cgroups.get(key).map_or("?", String::as_str)
            ),
            GroupBy::Process => format!("process {}", key.1),
        };
        match groups.iter_mut().find(|(n, ..)| *n == name) {
            Some((_, pids, sum)) => {
                if !pids.contains(&key.1) {
                    pids.push(key.1);
                }
                sum.merge(picture, analysis.page);
            }
            None => groups.push((name, vec![key.1], picture.clone())),
        }
    }
    let mut rows: Vec<GroupRow> = groups
        .into_iter()
        .map(|(name, pids, picture)| GroupRow {
            name,
            pids,
            totals: picture.kind_bytes(analysis.page),
            tree: tree_rows(analysis, &picture),
            sites: site_rows(analysis, symbols, options, &picture, &analysis.end.total)
                .0
                .into_iter()
                .filter(|row| row.resident > 0)
                .collect(),
        })
        .collect();
    rows.sort_by(|a, b| {
        b.totals
            .resident()
            .cmp(&a.totals.resident())
            .then_with(|| a.name.cmp(&b.name))
    });
    rows
}

fn chain_key(frames: &[FrameInfo]) -> Vec<String> {
    frames.iter().map(|f| f.function.clone()).collect()
}

/// The site rows of a picture (merged by their chains as `options` names them), and its
/// resident bytes by where their stacks end; `end` gives their lifetimes.
fn site_rows(
    analysis: &Analysis,
    symbols: &Symbols,
    options: &ViewOptions,
    picture: &Picture,
    end: &Picture,
) -> (Vec<SiteRow>, StackReach) {
    let (own_code, naming) = (&options.own_code, options.naming);
    // Each row, the weight of its heaviest member, its resident bytes at the end.
    let mut rows: HashMap<Vec<String>, (SiteRow, u64, u64)> = HashMap::new();
    let mut reach = StackReach::default();
    let empty = SiteStats::default();
    let with_lines = &objects_with_own_lines(symbols);
    // Addresses in no known region of a stream that lost events: their mapping's `mmap`
    // may be among the lost.
    let lossy = analysis.loss.lost > 0;
    for id in 0..analysis.sites.len() {
        let id = id as SiteId;
        let stats = analysis.stats.get(id).unwrap_or(&empty);
        let resident = picture.site_bytes(id, analysis.page);
        let mapped = picture.site_mapped.get(&id).copied().unwrap_or(0);
        let at_end = end.site_resident.get(&id).copied().unwrap_or(0);
        if resident == 0 && mapped == 0 && stats.total_faults() == 0 {
            continue;
        }
        let site_frames = analysis.sites.frames(id);
        let by_frame: Vec<Vec<FrameInfo>> = site_frames
            .iter()
            .map(|frame| symbols.frame_infos(&analysis.sites, frame))
            .collect();
        if resident > 0 {
            let ends = classify(&analysis.sites, site_frames, &by_frame);
            reach.add(ends, resident);
        }
        // What `Symbols::site` gives: every frame's functions, innermost first.
        let frames = by_frame.concat();
        let weight = resident.saturating_add(analysis.page.of(stats.pages_in));
        let split = own_code.split(&analysis.sites, site_frames, &by_frame, with_lines, naming);
        let shown = naming.frames(&frames);
        let (row, best, row_at_end) = rows.entry(chain_key(&shown)).or_insert_with(|| {
            (
                SiteRow::empty(frames.clone(), shown.clone(), split.clone()),
                0,
                0,
            )
        });
        *row_at_end += at_end;
        if weight > *best {
            // Show the source location of the heaviest member.
            row.frames = frames;
            row.shown = shown;
            row.own = split.own;
            row.whose = split.whose;
            row.objects = split.objects;
            row.library = split.library;
            row.runtime_work = split.work;
            *best = weight;
        }
        row.add(resident, mapped, stats, analysis.page);
        row.lost_mapping |= lossy
            && site_frames
                .iter()
                .any(|frame| analysis.sites.is_unmapped(frame));
    }
    let mut rows: Vec<SiteRow> = rows
        .into_values()
        .map(|(mut row, _, at_end)| {
            row.lifetime = Lifetime::of(at_end, row.released);
            row
        })
        .collect();
    rows.sort_by(site_order);
    (rows, reach)
}

fn timeline_rows(
    analysis: &Analysis,
    symbols: &Symbols,
    spike: Option<u64>,
    naming: Naming,
) -> Vec<TimelineRow> {
    analysis
        .timeline
        .iter()
        .map(|interval| {
            let mut growth: HashMap<String, i64> = HashMap::new();
            for (&site, &pages) in &interval.site_growth {
                let frames = naming.frames(&symbols.site(&analysis.sites, site));
                let name = name::functions(&frames, usize::MAX);
                *growth.entry(name).or_insert(0) += analysis.page.of_signed(pages);
            }
            let mut top: Vec<(String, i64)> = growth.into_iter().filter(|(_, b)| *b != 0).collect();
            top.sort_by(|a, b| b.1.abs().cmp(&a.1.abs()).then(a.0.cmp(&b.0)));
            top.truncate(3);
            TimelineRow {
                spike: spike.is_some_and(|limit| interval.resident_growth > limit as i64),
                interval: interval.clone(),
                top,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::view::runtimes::Runtime;

    fn row(functions: &[&str], own: &[usize], resident: u64) -> SiteRow {
        let frames: Vec<FrameInfo> = functions
            .iter()
            .map(|function| FrameInfo {
                function: (*function).to_owned(),
                file: None,
                line: None,
                inlined: false,
            })
            .collect();
        let shown = Naming::Short.frames(&frames);
        let mut row = SiteRow::empty(
            frames,
            shown,
            Split {
                own: own.to_vec(),
                library: Some(
                    "[node: Builtins_ConstructHandler … NewFixedArrayWithFiller]".to_owned(),
                ),
                ..Split::default()
            },
        );
        row.resident = resident;
        row.brought_in = resident;
        row.lifetime = Lifetime::of(resident, 0);
        row
    }

    #[test]
    fn a_rows_peak_is_never_below_what_it_holds() {
        // Merged sites of 768 KiB together now, each of which peaked at 64 KiB alone
        // (16 pages): the row's peak is at least the 768 KiB it holds.
        let mut row = SiteRow::empty(Vec::new(), Vec::new(), Split::default());
        let stats = SiteStats {
            peak_resident: 16,
            ..SiteStats::default()
        };
        for _ in 0..12 {
            row.add(64 << 10, 0, &stats, PageSize::DEFAULT);
        }
        assert_eq!(row.resident, 768 << 10);
        assert_eq!(row.peak, 768 << 10);
        // A member's peak above what the row holds stays the row's peak.
        let mut row = SiteRow::empty(Vec::new(), Vec::new(), Split::default());
        let busy = SiteStats {
            peak_resident: 512,
            ..SiteStats::default()
        };
        row.add(64 << 10, 0, &busy, PageSize::DEFAULT);
        assert_eq!((row.resident, row.peak), (64 << 10, 2 << 20));
        // Merged rows keep it too.
        let mut other = SiteRow::empty(Vec::new(), Vec::new(), Split::default());
        other.add(768 << 10, 0, &stats, PageSize::DEFAULT);
        other.merge(&row);
        assert_eq!((other.resident, other.peak), (832 << 10, 2 << 20));
    }

    #[test]
    fn the_tables_merge_what_reads_the_same_and_the_runtimes_work() {
        // An interpreted and a compiled call of holdObjects: two chains, one name.
        let interpreted = row(
            &[
                "NewFixedArrayWithFiller",
                "Builtins_ConstructHandler",
                "JS:~holdObjects /a.js:3:1",
            ],
            &[2],
            14 << 20,
        );
        let compiled = row(
            &[
                "NewFixedArrayWithFiller",
                "Builtins_JSBuiltinsConstructStub",
                "Builtins_ConstructHandler",
                "JS:*holdObjects /a.js:3:1",
            ],
            &[3],
            10 << 20,
        );
        let mut scavenged = row(&["v8::internal::Scavenger::ScavengePage()"], &[], 3 << 20);
        scavenged.runtime_work = Some(RuntimeWork::Collector(Runtime::V8));
        let mut evacuated = row(&["v8::internal::Evacuator::EvacuatePage()"], &[], 2 << 20);
        evacuated.runtime_work = Some(RuntimeWork::Collector(Runtime::V8));
        let sites = [interpreted, compiled, scavenged, evacuated];
        let work = runtime_work_rows(&sites);
        let shown: Vec<(String, u64)> = shown_sites(&sites, &work)
            .iter()
            .map(|row| (row.name(), row.resident))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "holdObjects → [node: Builtins_ConstructHandler … NewFixedArrayWithFiller]"
                        .to_owned(),
                    24 << 20
                ),
                ("[moved by V8's garbage collector]".to_owned(), 5 << 20),
            ]
        );
    }
}
