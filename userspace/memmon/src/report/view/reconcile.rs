//! Reconciliation: the model's resident bytes against the process's own counters (`rss`
//! lines, else status snapshots). A difference of more than 1 % (and at least one page)
//! gives a warning with the difference in bytes and the likely cause.

use serde::Serialize;

use crate::report::model::class::PageKind;
use crate::report::model::maps::Counters;
use crate::report::model::picture::{KindBytes, PAGE};
use crate::report::model::replay::{Analysis, Comparison, CounterSource};

/// One comparison and its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What moment and process.
    pub label: String,
    /// Where the counters came from.
    pub source: CounterSource,
    /// The model's totals.
    pub model: KindBytes,
    /// The kernel's counters.
    pub counters: Counters,
    /// One line per kind that differs too much.
    pub warnings: Vec<String>,
}

/// True when `model` and `counter` differ by more than 1 % of the counter and by more
/// than one page.
pub fn differs(model: u64, counter: u64) -> bool {
    let difference = model.abs_diff(counter);
    difference > PAGE && u128::from(difference) * 100 > u128::from(counter)
}

fn cause(comparison: &Comparison, kind: PageKind, missing: bool, has_pages: bool) -> String {
    if missing {
        let before = comparison
            .at_start
            .map(|c| match kind {
                PageKind::Anon => c.anon,
                _ => c.file.saturating_add(c.shmem),
            })
            .unwrap_or(0);
        if before > 0 {
            return format!(
                "pages faulted before watching began (the process had {before} bytes of them resident when the capture started)"
            );
        }
        if kind == PageKind::File && !has_pages {
            return "fault-around and large folios map several pages per fault, and this stream has no pages= counts".to_owned();
        }
        "pages faulted before watching began, or brought in outside the process's own faults (exec, another process's access, shared pages)".to_owned()
    } else {
        match kind {
            PageKind::Anon => "reclaim or swap-out the stream does not show, or MADV_FREE pages the kernel still counts as freed".to_owned(),
            _ => "page-cache reclaim the stream does not show, or pages shared with another process".to_owned(),
        }
    }
}

/// The checks of an analysis. Anonymous memory is compared on its own; file and shmem
/// together, since files on tmpfs (and ramfs-like root filesystems) count as RssShmem
/// although the model sees file mappings.
pub fn reconcile(analysis: &Analysis) -> Vec<Check> {
    analysis
        .comparisons
        .iter()
        .map(|comparison| {
            let mut warnings = Vec::new();
            let pairs = [
                (
                    PageKind::Anon,
                    "anon",
                    comparison.model.anon,
                    comparison.counters.anon,
                ),
                (
                    PageKind::File,
                    "file+shmem",
                    comparison.model.file.saturating_add(comparison.model.shmem),
                    comparison.counters.file.saturating_add(comparison.counters.shmem),
                ),
            ];
            for (kind, name, model, counter) in pairs {
                if !differs(model, counter) {
                    continue;
                }
                let difference = counter as i128 - model as i128;
                warnings.push(format!(
                    "{}: {} {counter} bytes {name} resident, the model {model} (difference {}{difference} bytes): likely {}",
                    comparison.label,
                    match comparison.source {
                        CounterSource::RssLine => "the rss line says",
                        CounterSource::StatusSnapshot => "the status snapshot says",
                    },
                    if difference > 0 { "+" } else { "" },
                    cause(comparison, kind, model < counter, analysis.has_pages)
                ));
            }
            Check {
                label: comparison.label.clone(),
                source: comparison.source,
                model: comparison.model,
                counters: comparison.counters,
                warnings,
            }
        })
        .collect()
}
