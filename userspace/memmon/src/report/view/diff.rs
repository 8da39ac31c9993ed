//! `--diff BASE NEW`: the change per class and per site (sites matched by function chain,
//! so two builds of a program compare), ordered by absolute change, each capture at its
//! own moment (its peak unless asked).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::report::view::memory::{shown_sites, Shown, View};

/// The change of one class or site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Class label or function chain.
    pub name: String,
    /// Resident bytes in BASE.
    pub base: u64,
    /// Resident bytes in NEW.
    pub new: u64,
    /// NEW - BASE, resident bytes.
    pub resident: i64,
    /// NEW - BASE, mapped bytes.
    pub mapped: i64,
    /// NEW - BASE, faults.
    pub faults: i64,
}

/// The whole difference.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// NEW - BASE of the totals (anon, file, shmem).
    pub total: i64,
    /// The moment BASE is compared at, with its peak and end.
    pub base: Shown,
    /// The moment NEW is compared at, with its peak and end.
    pub new: Shown,
    /// Changes by class, largest absolute change first.
    pub classes: Vec<Change>,
    /// Changes by site, largest absolute change first.
    pub sites: Vec<Change>,
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn order(changes: &mut [Change]) {
    changes.sort_by(|a, b| {
        b.resident
            .abs()
            .cmp(&a.resident.abs())
            .then(b.mapped.abs().cmp(&a.mapped.abs()))
            .then(b.faults.abs().cmp(&a.faults.abs()))
            .then(a.name.cmp(&b.name))
    });
}

/// Compares two views.
pub fn diff(base: &View, new: &View) -> Diff {
    let mut classes: BTreeMap<String, Change> = BTreeMap::new();
    let blank = |name: &str| Change {
        name: name.to_owned(),
        base: 0,
        new: 0,
        resident: 0,
        mapped: 0,
        faults: 0,
    };
    for (view, sign) in [(base, -1i64), (new, 1)] {
        for row in &view.tree {
            let name = format!("{} {}", row.kind.as_str(), row.label);
            let change = classes.entry(name.clone()).or_insert_with(|| blank(&name));
            change.resident = change
                .resident
                .saturating_add(sign.saturating_mul(to_i64(row.resident)));
            if sign < 0 {
                change.base = change.base.saturating_add(row.resident);
            } else {
                change.new = change.new.saturating_add(row.resident);
            }
        }
        for row in &view.mapped_by_class {
            let name = format!("mapped {}", row.label);
            let change = classes.entry(name.clone()).or_insert_with(|| blank(&name));
            change.mapped = change
                .mapped
                .saturating_add(sign.saturating_mul(to_i64(row.mapped)));
        }
    }
    let mut sites: BTreeMap<String, Change> = BTreeMap::new();
    for (view, sign) in [(base, -1i64), (new, 1)] {
        for row in shown_sites(&view.sites, &view.runtime_work) {
            let name = row.chain(usize::MAX);
            let change = sites.entry(name.clone()).or_insert_with(|| blank(&name));
            change.resident = change
                .resident
                .saturating_add(sign.saturating_mul(to_i64(row.resident)));
            change.mapped = change
                .mapped
                .saturating_add(sign.saturating_mul(to_i64(row.mapped)));
            change.faults = change
                .faults
                .saturating_add(sign.saturating_mul(to_i64(row.faults.total())));
            if sign < 0 {
                change.base = change.base.saturating_add(row.resident);
            } else {
                change.new = change.new.saturating_add(row.resident);
            }
        }
    }
    let total = |v: &View| i64::try_from(v.totals.resident()).unwrap_or(i64::MAX);
    let mut classes: Vec<Change> = classes
        .into_values()
        .filter(|c| c.resident != 0 || c.mapped != 0)
        .collect();
    let mut sites: Vec<Change> = sites
        .into_values()
        .filter(|c| c.resident != 0 || c.mapped != 0 || c.faults != 0)
        .collect();
    order(&mut classes);
    order(&mut sites);
    Diff {
        total: total(new).saturating_sub(total(base)),
        base: base.shown.clone(),
        new: new.shown.clone(),
        classes,
        sites,
    }
}
