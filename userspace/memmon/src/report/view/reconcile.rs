//! Reconciliation: the model's resident bytes against the process's own counters (`rss`
//! lines, else status snapshots). A difference of more than 1 % (and at least one page)
//! gives a warning with the difference in bytes and the likely cause.

use serde::Serialize;

use crate::report::model::class::PageKind;
use crate::report::model::loss::{grouped, Loss};
use crate::report::model::maps::Counters;
use crate::report::model::picture::{KindBytes, PageSize};
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
/// than one page (of `page` bytes).
pub fn differs(model: u64, counter: u64, page: PageSize) -> bool {
    let difference = model.abs_diff(counter);
    difference > page.bytes() && u128::from(difference) * 100 > u128::from(counter)
}

/// The stream's loss as the cause of a difference, when there was one that can explain
/// it: faults of the process (or of processes the module could not keep apart) not
/// recorded make the model short; events lost (any kind: faults, unmaps, exits) either
/// way.
fn loss_cause(loss: &Loss, pid: u32, missing: bool) -> Option<String> {
    let mut causes = Vec::new();
    if missing {
        let apart = loss.process(pid).filter(|_| pid != 0);
        for process in [apart, loss.process(0)].into_iter().flatten() {
            if process.dropped > 0 {
                causes.push(format!(
                    "{} faults of {} not recorded (the module dropped them while its ring was nearly full)",
                    grouped(process.dropped),
                    if process.pid == 0 {
                        process.name()
                    } else {
                        "this process".to_owned()
                    }
                ));
            }
        }
    }
    if loss.lost > 0 {
        causes.push(format!(
            "{} events lost (overwritten before memmon read them{})",
            grouped(loss.lost),
            if missing {
                ""
            } else {
                ": unmaps, frees and exits among them"
            }
        ));
    }
    (!causes.is_empty()).then(|| format!("the capture's loss: {}", causes.join(", and ")))
}

fn cause(
    comparison: &Comparison,
    kind: PageKind,
    missing: bool,
    has_pages: bool,
    loss: &Loss,
) -> String {
    if let Some(cause) = loss_cause(loss, comparison.pid, missing) {
        return cause;
    }
    if missing {
        // With the start's pages read (a `pages` snapshot), none predates the model.
        let before = comparison
            .at_start
            .filter(|_| !comparison.start_pages)
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
        if comparison.start_pages {
            return "pages brought in outside the process's own faults (another process's access, shared pages), or changed while its pages were read at the start".to_owned();
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
                if !differs(model, counter, analysis.page) {
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
                    cause(
                        comparison,
                        kind,
                        model < counter,
                        analysis.has_pages,
                        &analysis.loss
                    )
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
