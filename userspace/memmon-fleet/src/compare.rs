//! The diff that says what matters: per function chain, the change in mean bytes between
//! two clusters, Welch's 95 % interval of that change from the per-snapshot values (a
//! stack absent from a snapshot counting 0 there), and a flag where the change is both
//! larger than a threshold and outside the noise (the interval excludes 0).

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The default of `--diff-threshold`: a change in mean bytes of a stack under this is not
/// flagged, however certain.
pub const DEFAULT_THRESHOLD: u64 = 64 << 10;

/// The confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;

/// One function chain's figures in one cluster: the sum over its snapshots and the sum
/// of the squares, and the cluster's count of snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Moments {
    /// Snapshots of the cluster (with this measure).
    pub count: u64,
    /// The sum of the chain's bytes over them.
    pub sum: f64,
    /// The sum of the squares.
    pub squares: f64,
}

impl Moments {
    /// The mean.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// The sample variance (n − 1), 0 under two snapshots.
    pub fn variance(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        ((self.squares - self.sum * self.sum / n) / (n - 1.0)).max(0.0)
    }
}

/// The change of the mean from `base` to `new` and Welch's interval of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// New mean minus base mean.
    pub change: f64,
    /// The interval's bounds (`None` where a cluster has under two snapshots).
    pub interval: Option<(f64, f64)>,
}

/// Welch's interval at [`CONFIDENCE`]: change ± t(df) · √(s²ₐ/nₐ + s²ᵦ/nᵦ), df by
/// Welch–Satterthwaite.
pub fn welch(base: &Moments, new: &Moments) -> Change {
    let change = new.mean() - base.mean();
    if base.count < 2 || new.count < 2 {
        return Change {
            change,
            interval: None,
        };
    }
    let a = base.variance() / base.count as f64;
    let b = new.variance() / new.count as f64;
    let se2 = a + b;
    if se2 <= 0.0 {
        return Change {
            change,
            interval: Some((change, change)),
        };
    }
    let df = se2 * se2 / (a * a / (base.count as f64 - 1.0) + b * b / (new.count as f64 - 1.0));
    let half = student_t_quantile(0.5 + CONFIDENCE / 2.0, df) * se2.sqrt();
    Change {
        change,
        interval: Some((change - half, change + half)),
    }
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        sum += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of the regularised incomplete beta function (Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function Iₓ(a, b).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile (p > 0.5) of Student's t with `df` degrees of freedom, by bisection.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    let (mut low, mut high) = (0.0, 1e7);
    for _ in 0..200 {
        let middle = 0.5 * (low + high);
        if student_t_cdf(middle, df) < p {
            low = middle;
        } else {
            high = middle;
        }
    }
    0.5 * (low + high)
}

/// One row of a diff: a function chain (outermost first, `;`-joined as in the folded
/// files) and its figures in the two clusters.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The function chain.
    pub chain: String,
    /// Its mean bytes in the base cluster.
    pub base: f64,
    /// In the new cluster.
    pub new: f64,
    /// The change and its interval.
    pub change: Change,
    /// The change is over the threshold and the interval excludes 0.
    pub flagged: bool,
}

/// The rows of a diff: every chain of either cluster, flagged ones first, then by the size
/// of the change, then by chain.
pub fn rows(
    base: &BTreeMap<String, Moments>,
    new: &BTreeMap<String, Moments>,
    base_count: u64,
    new_count: u64,
    threshold: u64,
) -> Vec<Row> {
    let mut chains: Vec<&String> = base.keys().chain(new.keys()).collect();
    chains.sort();
    chains.dedup();
    let mut out: Vec<Row> = chains
        .into_iter()
        .map(|chain| {
            let of = |side: &BTreeMap<String, Moments>, count: u64| Moments {
                count,
                ..side.get(chain).copied().unwrap_or_default()
            };
            let (a, b) = (of(base, base_count), of(new, new_count));
            let change = welch(&a, &b);
            let flagged = change.change.abs() > threshold as f64
                && change
                    .interval
                    .is_some_and(|(low, high)| low > 0.0 || high < 0.0);
            Row {
                chain: chain.clone(),
                base: a.mean(),
                new: b.mean(),
                change,
                flagged,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.flagged
            .cmp(&x.flagged)
            .then(y.change.change.abs().total_cmp(&x.change.change.abs()))
            .then(x.chain.cmp(&y.chain))
    });
    out
}

/// A number of bytes with up to three decimals (trailing zeros dropped).
pub fn bytes_text(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// The diff as CSV: `flagged,base_mean_bytes,new_mean_bytes,change_bytes,change_low_bytes,
/// change_high_bytes,stack` (bounds empty where a cluster has under two snapshots).
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "flagged,base_mean_bytes,new_mean_bytes,change_bytes,change_low_bytes,\
         change_high_bytes,stack\n",
    );
    for row in rows {
        let (low, high) = match row.change.interval {
            Some((low, high)) => (bytes_text(low), bytes_text(high)),
            None => (String::new(), String::new()),
        };
        let chain = if row.chain.contains([',', '"', '\n']) {
            format!("\"{}\"", row.chain.replace('"', "\"\""))
        } else {
            row.chain.clone()
        };
        let _ = writeln!(
            out,
            "{},{},{},{},{low},{high},{chain}",
            if row.flagged { "yes" } else { "" },
            bytes_text(row.base),
            bytes_text(row.new),
            bytes_text(row.change.change),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_are_the_tables() {
        // Student's t, two-sided 95 % (the tables' values).
        for (df, t) in [
            (1.0, 12.706_204_736),
            (4.0, 2.776_445_105),
            (8.0, 2.306_004_135),
            (30.0, 2.042_272_456),
            (1e6, 1.959_966_4),
        ] {
            let q = student_t_quantile(0.975, df);
            assert!((q - t).abs() < 1e-6, "df {df}: {q} against {t}");
        }
    }

    #[test]
    fn welch_of_two_samples() {
        // base 1, 2, 3 (mean 2, s² 1); new 4, 6, 8, 10 (mean 7, s² 20/3).
        let base = Moments {
            count: 3,
            sum: 6.0,
            squares: 14.0,
        };
        let new = Moments {
            count: 4,
            sum: 28.0,
            squares: 216.0,
        };
        let change = welch(&base, &new);
        assert_eq!(change.change, 5.0);
        let (a, b) = (1.0 / 3.0, 20.0 / 3.0 / 4.0);
        let df = (a + b) * (a + b) / (a * a / 2.0 + b * b / 3.0);
        let half = student_t_quantile(0.975, df) * (a + b).sqrt();
        let (low, high) = change.interval.unwrap();
        assert!((low - (5.0 - half)).abs() < 1e-9 && (high - (5.0 + half)).abs() < 1e-9);
        // df ≈ 4.15: between the tables' 2.776 (4) and 2.571 (5).
        assert!(half > 2.571 * (a + b).sqrt() && half < 2.777 * (a + b).sqrt());
    }
}
