//! `memmon fleet daily`: a day's snapshots aggregated and compared (by default every
//! model's `release_baseline` against its `release_test`), the results stored for
//! `memmon serve` to show as a dated page, and a short summary of the flagged rows POSTed
//! to a webhook (chat systems take these).
//!
//! The day's results are written before anything is sent: `RESULTS/DAY/` (the outputs of
//! `memmon fleet`, diffs included), `RESULTS/DAY.json` (the comparisons' flagged rows) and
//! `RESULTS/DAY.html` (the page), each replaced whole (written beside, then renamed). The
//! message waits in `RESULTS/DAY.webhook.json` until a POST of it succeeds: a failed POST
//! is logged and retried, and what is still pending is sent first by the next run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use memmon::report::output::html::markup::escape;
use memmon::report::output::text::{signed_size, size};
use serde_json::{json, Value};

use crate::compare;
use crate::query::parse_time;
use crate::run::{run, Compared, RunOptions};

/// What the daily job is asked.
#[derive(Debug, Clone)]
pub struct DailyOptions {
    /// The run: dataset, labels, diffs and comparisons, engine, symbols (its time range
    /// and output are the day's).
    pub run: RunOptions,
    /// The day, `YYYY-MM-DD` (UTC).
    pub day: String,
    /// Where the days' results are kept (`memmon serve --daily`).
    pub results: PathBuf,
    /// Where the summary is POSTed.
    pub webhook: Option<String>,
    /// POSTs per message before it is left pending for the next run.
    pub attempts: u32,
    /// The wait before the first retry, doubled for each next one.
    pub retry_delay: Duration,
    /// The address of `memmon serve` for the summary's links (`http://host:port`).
    pub serve_url: Option<String>,
}

/// What the daily job did.
#[derive(Debug)]
pub struct DailyReport {
    /// The day's page.
    pub page: PathBuf,
    /// Rows flagged over all comparisons.
    pub flagged: usize,
    /// Comparisons made.
    pub comparisons: usize,
    /// Messages still pending after this run (a POST that failed every attempt).
    pub pending: Vec<PathBuf>,
}

/// The day before `now` (UTC), as `YYYY-MM-DD`.
pub fn yesterday(now: std::time::SystemTime) -> String {
    let seconds = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    day_text(seconds.div_euclid(86_400) - 1)
}

/// The date of a day since the epoch (Howard Hinnant's civil-from-days).
pub(crate) fn day_text(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Replaces `path` whole with `bytes` (written beside, then renamed).
fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, bytes)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A comparison's serve link.
fn compare_link(options: &DailyOptions, compared: &Compared) -> String {
    let pairs = [
        ("by", options.run.question.by.join(",")),
        ("day", options.day.clone()),
        ("base", compared.base.clone()),
        ("new", compared.new.clone()),
        ("measure", compared.measure.name().to_owned()),
    ];
    format!(
        "{}/compare?{}",
        options
            .serve_url
            .as_deref()
            .unwrap_or("")
            .trim_end_matches('/'),
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    )
}

fn row_json(row: &compare::Row) -> Value {
    json!({
        "stack": row.chain,
        "base_mean_bytes": row.base,
        "new_mean_bytes": row.new,
        "change_bytes": row.change.change,
        "change_low_bytes": row.change.interval.map(|i| i.0),
        "change_high_bytes": row.change.interval.map(|i| i.1),
    })
}

/// The day's results as JSON: each comparison with its flagged rows.
fn results_json(options: &DailyOptions, compared: &[Compared]) -> Value {
    let comparisons: Vec<Value> = compared
        .iter()
        .map(|c| {
            let flagged: Vec<Value> = c.rows.iter().filter(|r| r.flagged).map(row_json).collect();
            json!({
                "base": c.base,
                "new": c.new,
                "measure": c.measure.name(),
                "rows": c.rows.len(),
                "flagged": flagged,
                "link": compare_link(options, c),
            })
        })
        .collect();
    json!({ "day": options.day, "comparisons": comparisons })
}

/// The day's page.
fn page(options: &DailyOptions, compared: &[Compared], snapshots: u64) -> String {
    let mut body = format!(
        "<h1>memmon daily: {}</h1><p id=\"daily-summary\">{} comparisons of the day's clusters \
         (by {}; {} snapshots in the dataset), {} stacks flagged.</p>",
        escape(&options.day),
        compared.len(),
        escape(&options.run.question.by.join(",")),
        snapshots,
        compared
            .iter()
            .map(|c| c.rows.iter().filter(|r| r.flagged).count())
            .sum::<usize>()
    );
    for c in compared {
        let _ = write!(
            body,
            "<h2><a href=\"{}\">{} → {}</a> ({})</h2>",
            escape(&compare_link(options, c)),
            escape(&c.base),
            escape(&c.new),
            c.measure.name()
        );
        let flagged: Vec<&compare::Row> = c.rows.iter().filter(|r| r.flagged).collect();
        if flagged.is_empty() {
            body.push_str("<p class=\"muted\">Nothing flagged.</p>");
            continue;
        }
        body.push_str(
            "<table class=\"daily\"><thead><tr><th>change</th><th>base mean</th><th>new mean</th>\
             <th>stack (outermost first)</th></tr></thead><tbody>",
        );
        for row in flagged {
            let _ = write!(
                body,
                "<tr class=\"flagged\"><td data-v=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                compare::bytes_text(row.change.change),
                escape(&signed_size(row.change.change.round() as i64)),
                escape(&size(row.base.round() as u64)),
                escape(&size(row.new.round() as u64)),
                escape(&row.chain)
            );
        }
        body.push_str("</tbody></table>");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>memmon daily {}</title>\
         <style>body{{font:14px/1.4 system-ui,sans-serif;margin:1em 1.5em}}td,th{{padding:.2em .6em;\
         text-align:left;border-bottom:1px solid #e3e6ea}}.muted{{color:#777}}</style><script>\
         window.addEventListener('error',function(e){{document.body.setAttribute('data-script-errors',\
         String(e.message));}});document.addEventListener('DOMContentLoaded',function(){{\
         document.body.setAttribute('data-ready','true');}});</script></head>\
         <body data-script-errors=\"\"><nav><a href=\"/\">clusters</a> · <a href=\"/daily\">daily</a></nav>\
         \n{body}\n</body></html>\n",
        escape(&options.day)
    )
}

/// The chat message: one line per flagged row (the first 20), with the comparisons' links.
fn message(options: &DailyOptions, compared: &[Compared]) -> Value {
    let flagged: usize = compared
        .iter()
        .map(|c| c.rows.iter().filter(|r| r.flagged).count())
        .sum();
    let mut text = format!(
        "memmon daily {}: {flagged} stacks flagged in {} comparisons",
        options.day,
        compared.len()
    );
    let mut lines = 0;
    for c in compared {
        for row in c.rows.iter().filter(|r| r.flagged) {
            lines += 1;
            if lines > 20 {
                continue;
            }
            let _ = write!(
                text,
                "\n{} → {} ({}): {} {} ({} → {}) {}",
                c.base,
                c.new,
                c.measure.name(),
                signed_size(row.change.change.round() as i64),
                row.chain,
                size(row.base.round() as u64),
                size(row.new.round() as u64),
                compare_link(options, c)
            );
        }
    }
    if lines > 20 {
        let _ = write!(text, "\n… and {} more", lines - 20);
    }
    json!({ "text": text, "day": options.day, "flagged": flagged })
}

/// POSTs `body` to `url`, `attempts` times at most, waiting `delay` (doubled each time)
/// between; each failure logged on stderr.
pub async fn post(url: &str, body: &[u8], attempts: u32, delay: Duration) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let mut wait = delay;
    let mut last = String::new();
    for attempt in 1..=attempts.max(1) {
        let sent = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => return Ok(()),
            Ok(response) => last = format!("HTTP {}", response.status()),
            Err(error) => last = error.to_string(),
        }
        eprintln!(
            "memmon fleet daily: POST to {url} failed (attempt {attempt} of {attempts}): {last}"
        );
        if attempt < attempts {
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
    }
    Err(last)
}

/// The messages waiting to be sent, oldest first.
fn pending(results: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(results)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".webhook.json"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Runs the day: the results stored first, then the message sent (with the ones still
/// pending from earlier runs).
pub async fn daily(options: &DailyOptions) -> Result<DailyReport, String> {
    let start = parse_time(&options.day)
        .ok()
        .filter(|_| options.day.len() == 10)
        .ok_or_else(|| format!("--day {:?}: give YYYY-MM-DD", options.day))?;
    std::fs::create_dir_all(&options.results)
        .map_err(|e| format!("cannot create {}: {e}", options.results.display()))?;
    // The day's outputs, beside, then in place of the last ones.
    let final_dir = options.results.join(&options.day);
    let partial = options
        .results
        .join(format!(".{}.partial-{}", options.day, std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let mut run_options = options.run.clone();
    run_options.question.since = Some(start);
    run_options.question.until = Some(start + 86_400 * 1_000_000_000);
    run_options.output = partial.clone();
    let summary = run(&run_options).await?;
    let old = options
        .results
        .join(format!(".{}.old-{}", options.day, std::process::id()));
    if final_dir.exists() {
        std::fs::rename(&final_dir, &old)
            .map_err(|e| format!("cannot replace {}: {e}", final_dir.display()))?;
    }
    std::fs::rename(&partial, &final_dir)
        .map_err(|e| format!("cannot write {}: {e}", final_dir.display()))?;
    let _ = std::fs::remove_dir_all(&old);
    let compared = &summary.compared;
    let json_path = options.results.join(format!("{}.json", options.day));
    let results =
        serde_json::to_vec_pretty(&results_json(options, compared)).map_err(|e| e.to_string())?;
    replace_file(&json_path, &results)?;
    let page_path = options.results.join(format!("{}.html", options.day));
    replace_file(
        &page_path,
        page(options, compared, summary.snapshots).as_bytes(),
    )?;
    let flagged = compared
        .iter()
        .map(|c| c.rows.iter().filter(|r| r.flagged).count())
        .sum();
    let mut still = Vec::new();
    if let Some(url) = &options.webhook {
        let body = serde_json::to_vec(&message(options, compared)).map_err(|e| e.to_string())?;
        replace_file(
            &options
                .results
                .join(format!("{}.webhook.json", options.day)),
            &body,
        )?;
        for path in pending(&options.results) {
            let body =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            match post(url, &body, options.attempts, options.retry_delay).await {
                Ok(()) => {
                    let _ = std::fs::remove_file(&path);
                }
                Err(error) => {
                    eprintln!(
                        "memmon fleet daily: {} not sent ({error}): kept, sent by the next run",
                        path.display()
                    );
                    still.push(path);
                }
            }
        }
    }
    Ok(DailyReport {
        page: page_path,
        flagged,
        comparisons: compared.len(),
        pending: still,
    })
}

#[cfg(test)]
mod tests {
    use super::{day_text, yesterday};

    #[test]
    fn days_are_utc_dates() {
        assert_eq!(day_text(0), "1970-01-01");
        assert_eq!(day_text(20_794), "2026-12-07");
        assert_eq!(day_text(11_016), "2000-02-29");
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_650_000);
        assert_eq!(yesterday(now), "2026-12-06");
    }
}
