//! `memmon report --access [--cold K]`: the hot/cold picture of access sampling, per
//! generation and per site, from the [`AccessLog`](crate::report::model::access::AccessLog) of the
//! replay. A sampled access is *hot* when the page was used in the previous generation
//! too (idle 0), *cold* when it had gone untouched for at least K whole generations
//! (idle ≥ K), *warm* in between; see [`crate::report::model::access`] for idle.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;

use crate::report::model::access::IDLE_BUCKETS;
use crate::report::model::replay::Analysis;
use crate::report::model::sites::{SiteId, LABEL_RESIDENT_BEFORE};
use crate::report::model::ProcessKey;
use crate::report::symbolize::short_name::Naming;
use crate::report::symbolize::symbols::{name, FrameInfo, Symbols};
use crate::stream::event::Timestamp;

/// The default of `--cold`.
pub const DEFAULT_COLD: u64 = 3;

/// The largest `--cold` (the resident histograms stop there).
pub const MAX_COLD: u64 = IDLE_BUCKETS as u64 - 1;

/// Pages one site touched in one generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenerationSite {
    /// The site's functions, innermost first, joined by ` < ` (at most 2).
    pub site: String,
    /// Pages it touched first in the generation.
    pub pages: u64,
    /// Of which cold.
    pub cold: u64,
}

/// One generation, all sampled processes together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenerationRow {
    /// The generation number (`gen n=`).
    pub n: u64,
    /// Its first `gen` line, if the capture has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<Timestamp>,
    /// Pages armed (`armed=`, summed over the processes).
    pub armed: u64,
    /// Pages the model held resident when the generation started (stacks excepted).
    pub resident: u64,
    /// Of which cold (untouched for K generations or more).
    pub resident_cold: u64,
    /// Distinct pages touched (first accesses sampled).
    pub touched: u64,
    /// Touched pages used in the previous generation too.
    pub hot: u64,
    /// Touched pages idle for 1 to K−1 generations.
    pub warm: u64,
    /// Touched pages idle for K generations or more.
    pub cold: u64,
    /// A process's `armed=` reached the module's page budget (`sample_pages`): pages
    /// beyond it were not armed, their accesses not seen.
    pub budget_reached: bool,
    /// The sites that touched pages in it, by pages.
    pub sites: Vec<GenerationSite>,
}

/// One site (sites with the same function chain, as the report names it, merged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessSiteRow {
    /// The frames, innermost first, with their full names.
    pub frames: Vec<FrameInfo>,
    /// The frames as the report names them (short unless `--full-names`).
    #[serde(skip)]
    pub shown: Vec<FrameInfo>,
    /// Distinct pages it touched over the capture.
    pub pages: u64,
    /// Distinct pages it touched while they were cold.
    pub cold_pages: u64,
    /// Sampled accesses (a page touched in three generations counts three times).
    pub accesses: u64,
    /// Of which cold.
    pub cold_accesses: u64,
    /// The generations in which it touched pages.
    pub generations: Vec<u64>,
    /// Distinct pages it touched that were resident before memmon started (the site
    /// [`LABEL_RESIDENT_BEFORE`]: `record -p` of a running process): the code that uses
    /// them.
    pub before_start_pages: u64,
}

impl AccessSiteRow {
    /// Functions innermost first, joined by ` < `, at most `depth`.
    pub fn chain(&self, depth: usize) -> String {
        name::chain(&self.shown, depth)
    }

    /// `chain (file:line)` of the innermost frame with a location.
    pub fn name(&self) -> String {
        name::site(&self.shown)
    }
}

/// The access report.
#[derive(Debug, Clone, Serialize)]
pub struct AccessView {
    /// K: a touch is cold when the page went untouched for K generations or more.
    pub cold_after: u64,
    /// `fault type=access` lines.
    pub access_faults: u64,
    /// Sampled page accesses (a huge-page access counts its 512 pages).
    pub accesses: u64,
    /// Processes with sampling.
    pub pids: Vec<u32>,
    /// Whether the accesses had stacks (else sites are instruction addresses).
    pub stacks: bool,
    /// Events lost by the reader (accesses may be missing).
    pub lost: u64,
    /// Binaries not found or not the capture's build.
    pub symbol_warnings: Vec<String>,
    /// The module's per-generation page budget, when the capture says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<u64>,
    /// Distinct pages resident before memmon started ([`LABEL_RESIDENT_BEFORE`]) that
    /// sampled accesses touched; the sites' `before_start_pages` say by which code.
    pub before_start_touched: u64,
    /// Per generation.
    pub generations: Vec<GenerationRow>,
    /// Per site: those touching cold pages first (by cold pages), then by pages.
    pub sites: Vec<AccessSiteRow>,
}

#[derive(Default)]
struct GenAcc {
    start: Option<Timestamp>,
    armed: u64,
    resident: u64,
    resident_cold: u64,
    seen: HashSet<(ProcessKey, u64)>,
    hot: u64,
    warm: u64,
    cold: u64,
    budget_reached: bool,
    sites: HashMap<usize, (u64, u64)>,
}

#[derive(Default)]
struct SiteAcc {
    frames: Vec<FrameInfo>,
    shown: Vec<FrameInfo>,
    pages: HashSet<(ProcessKey, u64)>,
    cold_pages: HashSet<(ProcessKey, u64)>,
    accesses: u64,
    cold_accesses: u64,
    generations: BTreeSet<u64>,
    before_start: HashSet<(ProcessKey, u64)>,
}

/// Builds the access report with `cold_after` = K (at least 1), its sites named by
/// `naming`.
pub fn build(
    analysis: &Analysis,
    symbols: &Symbols,
    cold_after: u64,
    naming: Naming,
) -> AccessView {
    let k = cold_after.clamp(1, MAX_COLD);
    let log = &analysis.access;
    let mut generations: BTreeMap<u64, GenAcc> = BTreeMap::new();
    let mut pids: BTreeSet<u32> = BTreeSet::new();
    for line in &log.generations {
        pids.insert(line.key.1);
        let row = generations.entry(line.n).or_default();
        row.start = Some(row.start.map_or(line.time, |t| t.min(line.time)));
        row.armed += line.armed;
        row.budget_reached |= log.budget.is_some_and(|budget| line.armed >= budget);
        row.resident += line.resident_idle.iter().sum::<u64>();
        row.resident_cold += line.resident_idle[k as usize..].iter().sum::<u64>();
    }
    // Sites merged by function chain.
    let mut site_index: HashMap<SiteId, usize> = HashMap::new();
    let mut chain_index: HashMap<Vec<String>, usize> = HashMap::new();
    let mut sites: Vec<SiteAcc> = Vec::new();
    let before_start_site = analysis.sites.label_id(LABEL_RESIDENT_BEFORE);
    let mut before_start: HashSet<(ProcessKey, u64)> = HashSet::new();
    for touch in &log.touches {
        pids.insert(touch.key.1);
        let index = *site_index.entry(touch.site).or_insert_with(|| {
            let frames = symbols.site(&analysis.sites, touch.site);
            let shown = naming.frames(&frames);
            let key: Vec<String> = shown.iter().map(|f| f.function.clone()).collect();
            *chain_index.entry(key).or_insert_with(|| {
                sites.push(SiteAcc {
                    frames,
                    shown,
                    ..SiteAcc::default()
                });
                sites.len() - 1
            })
        });
        let row = generations.entry(touch.gen).or_default();
        let page = (touch.key, touch.vpn);
        if before_start_site.is_some() && touch.owner == before_start_site {
            before_start.insert(page);
            sites[index].before_start.insert(page);
        }
        if !row.seen.insert(page) {
            continue; // the page's first access in the generation was counted
        }
        let cold = touch.idle >= k;
        match touch.idle {
            0 => row.hot += 1,
            _ if cold => row.cold += 1,
            _ => row.warm += 1,
        }
        let per_site = row.sites.entry(index).or_default();
        per_site.0 += 1;
        per_site.1 += u64::from(cold);
        let site = &mut sites[index];
        site.pages.insert(page);
        site.accesses += 1;
        site.generations.insert(touch.gen);
        if cold {
            site.cold_pages.insert(page);
            site.cold_accesses += 1;
        }
    }
    let generations = generations
        .into_iter()
        .map(|(n, row)| generation_row(n, row, &sites))
        .collect();
    let sites = site_rows(sites);
    AccessView {
        cold_after: k,
        access_faults: log.access_faults,
        accesses: log.touches.len() as u64,
        pids: pids.into_iter().collect(),
        stacks: analysis.has_stacks,
        lost: analysis.lost,
        symbol_warnings: symbols.warnings.clone(),
        budget: log.budget,
        before_start_touched: before_start.len() as u64,
        generations,
        sites,
    }
}

/// The row of generation `n`, its sites named after `sites`.
fn generation_row(n: u64, row: GenAcc, sites: &[SiteAcc]) -> GenerationRow {
    let mut per_site: Vec<GenerationSite> = row
        .sites
        .iter()
        .map(|(&index, &(pages, cold))| GenerationSite {
            site: name::functions(&sites[index].shown, 2),
            pages,
            cold,
        })
        .collect();
    per_site.sort_by(|a, b| {
        (b.pages, b.cold)
            .cmp(&(a.pages, a.cold))
            .then(a.site.cmp(&b.site))
    });
    GenerationRow {
        n,
        start: row.start,
        armed: row.armed,
        resident: row.resident,
        resident_cold: row.resident_cold,
        touched: row.seen.len() as u64,
        hot: row.hot,
        warm: row.warm,
        cold: row.cold,
        budget_reached: row.budget_reached,
        sites: per_site,
    }
}

/// The site rows: those touching cold pages first (by cold pages), then by pages.
fn site_rows(sites: Vec<SiteAcc>) -> Vec<AccessSiteRow> {
    let mut sites: Vec<AccessSiteRow> = sites
        .into_iter()
        .map(|site| AccessSiteRow {
            frames: site.frames,
            shown: site.shown,
            pages: site.pages.len() as u64,
            cold_pages: site.cold_pages.len() as u64,
            accesses: site.accesses,
            cold_accesses: site.cold_accesses,
            generations: site.generations.into_iter().collect(),
            before_start_pages: site.before_start.len() as u64,
        })
        .collect();
    sites.sort_by(|a, b| {
        (b.cold_pages, b.pages, b.accesses)
            .cmp(&(a.cold_pages, a.pages, a.accesses))
            .then_with(|| a.chain(64).cmp(&b.chain(64)))
    });
    sites
}
