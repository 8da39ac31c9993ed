//! Reports of aggregated stacks (`memmon fleet`): the mean of a cluster of snapshots made
//! into an [`Analysis`] of one picture, so that the report's views and outputs (text,
//! HTML, folded, pprof, diff) render it as they render a capture. The stacks of all the
//! clusters share one [`StackTable`], symbolised once: each build ID's binary and debug
//! file are found once, each (build ID, offset) named once.
//!
//! The model counts resident memory in pages; an aggregate's picture also keeps each
//! site's exact mean bytes ([`Picture::site_resident_bytes`]), which the site tables,
//! folded stacks, flame graphs and pprof show (its classes and totals are rounded to
//! pages). Snapshots have no swap figures, so an aggregate shows none.

use std::collections::{BTreeMap, HashMap};

use crate::export::StackFrame;
use crate::report::model::class::{Class, PageKind};
use crate::report::model::moment::Holdings;
use crate::report::model::picture::Picture;
use crate::report::model::replay::{Analysis, Replay, ReplayOptions};
use crate::report::model::sites::{self, Frame, SiteId, SiteTable};
use crate::report::output::pprof::{encode, site_values, ProfileBuilder};
use crate::report::symbolize::short_name::Naming;
use crate::report::symbolize::symbols::{SymbolOptions, Symbols};
use crate::report::view::memory::{build, Prepared, ViewOptions};
use crate::report::view::own_code::OwnCode;
use crate::report::{Moment, ReportError};

/// One stack's values in an aggregate (means over a cluster, in bytes and faults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackValues {
    /// Resident bytes.
    pub resident: u64,
    /// Mapped bytes.
    pub mapped: u64,
    /// Faults by type ([`crate::export::FAULT_COLUMNS`] order).
    pub faults: [u64; 5],
}

/// A cluster's aggregate: its mean snapshot.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    /// How the moment is named (`the mean of 120 snapshots`).
    pub label: String,
    /// Snapshots merged.
    pub snapshots: u64,
    /// Values by stack id.
    pub stacks: Vec<(i64, StackValues)>,
    /// Resident bytes by coarse class (`heap`, `file`...).
    pub class_bytes: BTreeMap<String, u64>,
}

/// The label frames the report knows, by name (others are made static once each).
fn static_label(name: &str, made: &mut HashMap<String, &'static str>) -> &'static str {
    const KNOWN: [&str; 8] = [
        sites::LABEL_KERNEL,
        sites::LABEL_BEFORE,
        sites::LABEL_RESIDENT_BEFORE,
        sites::LABEL_EXEC,
        sites::LABEL_NO_STACK,
        sites::LABEL_PYTHON_UNNAMED,
        sites::LABEL_MEMMON,
        sites::LABEL_DROPPED,
    ];
    if let Some(known) = KNOWN.iter().find(|known| **known == name) {
        return known;
    }
    made.entry(name.to_owned())
        .or_insert_with(|| Box::leak(name.to_owned().into_boxed_str()))
}

/// The stacks of a run, as sites of one site table (objects by build ID).
#[derive(Debug, Clone, Default)]
pub struct StackTable {
    sites: SiteTable,
    by_stack: HashMap<i64, SiteId>,
    labels: HashMap<String, &'static str>,
    /// The objects that are programs rather than libraries (no `.so` in the name): own
    /// code.
    executables: Vec<String>,
}

impl StackTable {
    /// An empty table.
    pub fn new() -> StackTable {
        StackTable::default()
    }

    /// Adds stack `id` of `frames` (innermost first).
    pub fn add(&mut self, id: i64, frames: &[StackFrame]) {
        if self.by_stack.contains_key(&id) {
            return;
        }
        let frames: Vec<Frame> = frames
            .iter()
            .map(|frame| match frame {
                StackFrame::Code {
                    build_id,
                    file_offset,
                    object,
                } => {
                    let before = self.sites.objects().len();
                    let object_id = self.sites.object_with_build_id(object, Some(build_id));
                    if self.sites.objects().len() > before && !object.contains(".so") {
                        self.executables.push(object.clone());
                    }
                    // Stored at the instruction: a return address was moved into its
                    // call already.
                    Frame::Code {
                        object: object_id,
                        offset: *file_offset,
                        ret: false,
                    }
                }
                StackFrame::Label(name) => Frame::Label(static_label(name, &mut self.labels)),
            })
            .collect();
        let site = self.sites.intern(frames);
        self.by_stack.insert(id, site);
    }

    /// Stacks in the table.
    pub fn len(&self) -> usize {
        self.by_stack.len()
    }

    /// Whether it has no stack.
    pub fn is_empty(&self) -> bool {
        self.by_stack.is_empty()
    }

    /// The function chain of stack `id`, innermost first, as the views name frames (short
    /// names, inlined functions expanded): what matches a stack across builds, where
    /// addresses and source lines drift. `None` for a stack not in the table.
    pub fn functions(&self, symbols: &Symbols, id: i64) -> Option<Vec<String>> {
        let site = *self.by_stack.get(&id)?;
        let frames = Naming::Short.frames(&symbols.site(&self.sites, site));
        Some(frames.into_iter().map(|frame| frame.function).collect())
    }

    /// Names every code frame: once per (build ID, offset), each build's files found once.
    pub fn symbolize(&self, options: &SymbolOptions) -> Symbols {
        Symbols::new(&self.sites, options)
    }

    /// The analysis of one aggregate: one picture (the mean) at the end, stacks unknown to
    /// the table being an error.
    pub fn analysis(&self, aggregate: &Aggregate) -> Result<Analysis, ReportError> {
        let mut analysis = Replay::new(ReplayOptions::default()).finish();
        analysis.sites = self.sites.clone();
        analysis.has_stacks = true;
        analysis.executables = self.executables.clone();
        let mut picture = Picture::default();
        for (stack, values) in &aggregate.stacks {
            let site = *self.by_stack.get(stack).ok_or_else(|| {
                ReportError(format!("stack {stack:016x} is not in the stacks table"))
            })?;
            // Two stack ids of one site (the same frames) add up.
            let bytes = picture.site_resident_bytes.get(&site).copied().unwrap_or(0);
            let bytes = bytes.saturating_add(values.resident);
            let pages = analysis.page.pages_nearest(bytes);
            if bytes > 0 {
                picture.site_resident_bytes.insert(site, bytes);
            }
            if pages > 0 {
                picture.site_resident.insert(site, pages);
            }
            if values.mapped > 0 {
                *picture.site_mapped.entry(site).or_insert(0) += values.mapped;
            }
            let stats = analysis.stats.site(site);
            for (total, faults) in stats.faults.iter_mut().zip(values.faults) {
                *total = total.saturating_add(faults);
            }
            stats.pages_in = pages;
            stats.peak_resident = pages;
        }
        for (name, &bytes) in &aggregate.class_bytes {
            let (kind, class) = match name.as_str() {
                "heap" => (PageKind::Anon, Class::Heap),
                "anon_mmap" => (PageKind::Anon, Class::AnonMmap),
                "stack" => (PageKind::Anon, Class::Stack),
                "file" => (PageKind::File, Class::File("file pages".to_owned())),
                "shmem" => (PageKind::Shmem, Class::Shmem("shared memory".to_owned())),
                "special" => (PageKind::Anon, Class::Special("[special]".to_owned())),
                _ => (PageKind::Anon, Class::Unknown),
            };
            let pages = analysis.page.pages_nearest(bytes);
            let id = analysis.classes.len() as u32;
            analysis.classes.push(class);
            picture.class_resident.insert((kind, id), pages);
            picture.kinds[kind.index()] += pages;
        }
        let mut holdings = Holdings::default();
        holdings.add((0, 0), picture, analysis.page);
        analysis.end = holdings;
        analysis.events = aggregate.snapshots;
        Ok(analysis)
    }

    /// The aggregate symbolised and viewed, as `memmon report` prepares a capture.
    pub fn prepare(
        &self,
        symbols: &Symbols,
        aggregate: &Aggregate,
        own_code: &OwnCode,
        naming: Naming,
    ) -> Result<Prepared, ReportError> {
        let analysis = self.analysis(aggregate)?;
        let mut own_code = own_code.clone();
        own_code.add_executables(&analysis.executables);
        let mut view = build(
            &analysis,
            symbols,
            &ViewOptions {
                at: Moment::End,
                spike: None,
                group_by: None,
                own_code,
                naming,
            },
        )
        .map_err(|e| ReportError(e.to_string()))?;
        view.aggregate_of = Some(format!("{} snapshots", aggregate.snapshots));
        // A mean has no history: its sites' peak is what they hold.
        for row in &mut view.sites {
            row.peak = row.peak.max(row.resident);
        }
        // The mapped bytes of the stacks (snapshots have no class of mapped bytes).
        view.mapped = aggregate
            .stacks
            .iter()
            .fold(0, |sum, (_, values)| sum.saturating_add(values.mapped));
        view.shown.moment = "mean".to_owned();
        view.shown.moment_label = aggregate.label.clone();
        view.shown.end.label = aggregate.label.clone();
        view.shown.peak.label = aggregate.label.clone();
        Ok(Prepared {
            analysis,
            symbols: symbols.clone(),
            view,
        })
    }
}

/// The pprof profile of prepared aggregates, each with its sign (a diff's base is
/// negated), as `memmon report --format pprof` writes one.
pub fn pprof(parts: &[(&Prepared, i64)], options: &SymbolOptions) -> Result<Vec<u8>, ReportError> {
    let mut builder = ProfileBuilder::new();
    for &(prepared, sign) in parts {
        let values = site_values(&prepared.analysis, &prepared.view);
        builder.add(
            &prepared.analysis,
            &prepared.symbols,
            options,
            &values,
            sign,
        );
    }
    encode(&builder.finish()).map_err(|e| ReportError(format!("cannot compress: {e}")))
}
