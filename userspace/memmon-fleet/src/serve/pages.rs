//! The service's pages and JSON answers. The report's own pages (a cluster's, a diff's, a
//! snapshot's) are rendered by `memmon::report`'s HTML renderer, with the service's
//! navigation put in; every text from the dataset (labels, sources, function names) is
//! escaped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use memmon::report::output::html::markup::escape;
use memmon::report::output::text::size;
use memmon::report::Prepared;
use serde_json::{json, Map, Value};

use crate::compare;
use crate::query::{Holder, SnapshotRow};
use crate::run::{self, Measure, CLUSTER_COLUMNS};

use super::{Computed, Failure, Params, ServeOptions};

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 2em;color:#222}\
nav.mm{background:#f2f4f7;border-bottom:1px solid #ccd;padding:.5em 1em;margin:0 -1.5em 1em;\
display:flex;flex-wrap:wrap;gap:1em;align-items:center;font:14px system-ui,sans-serif}\
nav.mm a{color:#124}nav.mm form{display:inline-flex;gap:.3em;margin:0}\
table.mm{border-collapse:collapse;margin:.5em 0}table.mm td,table.mm th{padding:.2em .6em;\
border-bottom:1px solid #e3e6ea;text-align:left;vertical-align:top}\
table.mm td.n,table.mm th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
table.mm tr.sub td{color:#555}table.mm tr.sub td.name{padding-left:1.6em}\
tr.flagged td{background:#fff1ef}.muted{color:#777}.error{color:#a00}\
pre.mm{background:#f7f7f9;padding:.6em;overflow:auto;max-height:30em}\
.chain{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}";

/// The pages' script: script errors and readiness in attributes of the body, as the
/// report's page does (the tests read them).
const SCRIPT: &str = "window.memmonErrors=[];window.addEventListener('error',function(e){\
window.memmonErrors.push(String(e.message));document.body.setAttribute('data-script-errors',\
window.memmonErrors.join(' | '));});document.addEventListener('DOMContentLoaded',function(){\
document.body.setAttribute('data-ready','true');});";

/// The navigation bar of every page: home, the search box, the daily results.
fn nav(params: &Params) -> String {
    let mut hidden = String::new();
    for (name, value) in &params.question_pairs {
        let _ = write!(
            hidden,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            escape(name),
            escape(value)
        );
    }
    format!(
        "<nav class=\"mm\" id=\"mm-nav\"><b>memmon serve</b><a href=\"{}\">clusters</a>\
         <form action=\"/search\" method=\"get\" id=\"search\">{hidden}<input name=\"q\" \
         placeholder=\"function or label value\" value=\"{}\" size=\"28\"><button>search</button>\
         </form><a href=\"/daily\">daily</a></nav>",
        params.link("/", &[]),
        escape(params.q.as_deref().unwrap_or(""))
    )
}

fn shell(title: &str, params: &Params, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}</style><script>{SCRIPT}</script></head><body data-script-errors=\"\">\n\
         {}\n{body}\n</body></html>\n",
        escape(title),
        nav(params)
    )
}

/// The page of a failure.
pub fn error_page(failure: &Failure) -> String {
    shell(
        &format!("memmon serve: {}", failure.status),
        &Params::default(),
        &format!(
            "<h1>{}</h1><p class=\"error\" id=\"error\">{}</p><p><a href=\"/\">the clusters</a></p>",
            escape(&failure.status.to_string()),
            escape(&failure.message)
        ),
    )
}

/// The report's page with the service's bar after `<body ...>` and `bottom` before
/// `</body>`.
fn inject(page: &str, params: &Params, top: &str, bottom: &str) -> String {
    let style = format!("<style>{STYLE}</style>");
    let head_end = page.find("</head>").unwrap_or(0);
    let body_start = page[head_end..]
        .find("<body")
        .and_then(|at| {
            page[head_end + at..]
                .find('>')
                .map(|end| head_end + at + end + 1)
        })
        .unwrap_or(head_end);
    let body_end = page.rfind("</body>").unwrap_or(page.len()).max(body_start);
    format!(
        "{}{style}{}{}{top}{}{bottom}{}",
        &page[..head_end],
        &page[head_end..body_start],
        nav(params),
        &page[body_start..body_end],
        &page[body_end..]
    )
}

/// A byte figure of `clusters.csv` (decimal, maybe empty) as a cell: its size, the exact
/// value in `data-v` and the tooltip.
fn figure_cell(text: &str) -> String {
    if text.is_empty() {
        return "<td class=\"n muted\"></td>".to_owned();
    }
    let bytes = text.parse::<f64>().unwrap_or(0.0).round() as u64;
    format!(
        "<td class=\"n\" data-v=\"{}\" title=\"{} bytes\">{}</td>",
        escape(text),
        escape(text),
        escape(&size(bytes))
    )
}

/// The record's value of `column`.
fn column<'r>(computed: &Computed, record: &'r [String], name: &str) -> &'r str {
    let at =
        computed.question.by.len() + CLUSTER_COLUMNS.iter().position(|c| *c == name).unwrap_or(0);
    record.get(at).map_or("", String::as_str)
}

/// The clusters the filter keeps, in key order (a cluster then its sub-clusters).
fn kept<'c>(computed: &'c Computed, params: &Params) -> Vec<(&'c Vec<String>, &'c Vec<String>)> {
    computed
        .records
        .iter()
        .filter(|(key, _)| params.keeps(key))
        .collect()
}

/// The stats columns the dataset has: (CSV column, heading).
fn stats_columns(computed: &Computed) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    if computed.has(Measure::Allocated) {
        out.push(("mean_allocated_bytes", "mean allocated"));
    }
    if computed.has(Measure::Resident) {
        out.extend([
            ("mean_resident_bytes", "mean RSS"),
            ("mean_anon_bytes", "RSS anon"),
            ("mean_file_bytes", "RSS file"),
            ("p95_resident_bytes", "p95 RSS"),
        ]);
    }
    if computed
        .answers
        .clusters
        .values()
        .any(|sums| sums.lifetime_snapshots > 0)
    {
        out.push(("mean_lifetime_seconds", "mean lifetime (s)"));
    }
    out
}

/// The home page: the clusters (and their tiers) with their stats, the question's form,
/// the comparison's form.
pub fn home(computed: &Computed, params: &Params) -> String {
    let by = &computed.question.by;
    let mut body = String::from("<h1>Clusters</h1>");
    let value = |name: &str| {
        params
            .question_pairs
            .iter()
            .find(|(k, _)| k == name)
            .map_or(String::new(), |(_, v)| escape(v))
    };
    let _ = write!(
        body,
        "<form method=\"get\" action=\"/\" id=\"question\">by <input name=\"by\" value=\"{}\" \
         size=\"22\"> day <input name=\"day\" value=\"{}\" placeholder=\"YYYY-MM-DD\" size=\"10\"> \
         filter <input name=\"filter\" value=\"{}\" placeholder=\"LABEL=VALUE,...\" size=\"22\"> \
         tiers <input name=\"top\" value=\"{}\" placeholder=\"50000,10000,2000\" size=\"16\"> \
         <button>show</button></form>",
        escape(&by.join(",")),
        value("day"),
        value("filter"),
        value("top"),
    );
    let _ = write!(
        body,
        "<p class=\"muted\" id=\"summary\">{} clusters and tiers of {} snapshots in the dataset \
         (version {}){}.</p>",
        computed.records.len(),
        computed.snapshots,
        escape(&computed.version),
        if computed.skipped.is_empty() {
            String::new()
        } else {
            format!("; {} parts skipped", computed.skipped.len())
        }
    );
    for line in &computed.skipped {
        let _ = write!(body, "<p class=\"error skipped\">{}</p>", escape(line));
    }
    let stats = stats_columns(computed);
    body.push_str("<table class=\"mm\" id=\"clusters\"><thead><tr><th>cluster</th>");
    for label in by {
        let _ = write!(body, "<th>{}</th>", escape(label));
    }
    body.push_str("<th>tier</th><th class=\"n\">snapshots</th>");
    for (_, heading) in &stats {
        let _ = write!(body, "<th class=\"n\">{heading}</th>");
    }
    body.push_str("<th>top own functions</th></tr></thead><tbody>");
    for (key, record) in kept(computed, params) {
        let name = run::cluster_name(key);
        let subset = key.last().map_or("", String::as_str);
        let _ = write!(
            body,
            "<tr{} data-cluster=\"{}\"><td class=\"name\"><a href=\"{}\">{}</a></td>",
            if subset.is_empty() {
                ""
            } else {
                " class=\"sub\""
            },
            escape(&name),
            params.link("/cluster", &[("c", &name)]),
            escape(&name)
        );
        for value in &key[..by.len()] {
            let _ = write!(body, "<td>{}</td>", escape(value));
        }
        let _ = write!(
            body,
            "<td>{}</td><td class=\"n\" data-v=\"{}\">{}</td>",
            escape(if subset.is_empty() { "all" } else { subset }),
            escape(column(computed, record, "snapshots")),
            escape(column(computed, record, "snapshots"))
        );
        for (csv_column, _) in &stats {
            body.push_str(&figure_cell(column(computed, record, csv_column)));
        }
        let _ = write!(
            body,
            "<td class=\"muted\">{}</td></tr>",
            escape(column(computed, record, "top_own_sites"))
        );
    }
    body.push_str("</tbody></table>");
    // Compare any two.
    let mut options = String::new();
    for name in computed.names.keys() {
        let _ = write!(
            options,
            "<option value=\"{}\">{}</option>",
            escape(name),
            escape(name)
        );
    }
    let mut hidden = String::new();
    for (name, value) in &params.question_pairs {
        let _ = write!(
            hidden,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            escape(name),
            escape(value)
        );
    }
    let _ = write!(
        body,
        "<h2>Compare</h2><form method=\"get\" action=\"/compare\" id=\"compare\">{hidden}base \
         <select name=\"base\">{options}</select> new <select name=\"new\">{options}</select> \
         <button>compare</button></form>"
    );
    shell("memmon serve: clusters", params, &body)
}

/// `/api/clusters`: each cluster's name and its row of `clusters.csv` (the same names and
/// values, as text; empty where the cluster has no snapshot with the figure).
pub fn clusters_json(computed: &Computed, params: &Params) -> Value {
    let by = &computed.question.by;
    let mut columns: Vec<String> = by.clone();
    columns.extend(CLUSTER_COLUMNS.iter().map(|c| (*c).to_owned()));
    let clusters: Vec<Value> = kept(computed, params)
        .into_iter()
        .map(|(key, record)| {
            let mut object = Map::new();
            object.insert("cluster".to_owned(), json!(run::cluster_name(key)));
            for (name, value) in columns.iter().zip(record) {
                object.insert(name.clone(), json!(value));
            }
            Value::Object(object)
        })
        .collect();
    json!({
        "version": computed.version,
        "snapshots_in_dataset": computed.snapshots,
        "skipped": computed.skipped,
        "columns": columns,
        "clusters": clusters,
    })
}

/// The cluster asked (`c`) and its views in the measure asked.
pub fn prepared_of<'c>(
    computed: &'c Computed,
    params: &Params,
) -> Result<(String, &'c Prepared), Failure> {
    let name = params
        .cluster
        .as_deref()
        .ok_or_else(|| Failure::bad("give c=CLUSTER"))?;
    let key = computed.cluster(name)?;
    let measure = computed.measure_of(key, params.measure)?;
    let prepared = computed
        .prepared
        .get(&(key.clone(), measure))
        .ok_or_else(|| {
            Failure::missing(format!("cluster {name:?} has no {} view", measure.name()))
        })?;
    Ok((name.to_owned(), prepared))
}

/// A cluster's stacks by their mean in `measure`, most first: (stack, chain, mean bytes).
fn stacks_of(computed: &Computed, key: &[String], measure: Measure) -> Vec<(i64, String, u64)> {
    let sums = &computed.answers.clusters[key];
    let count = measure.count(sums);
    let mut out: Vec<(i64, String, u64)> = sums
        .stacks
        .iter()
        .map(|(stack, values)| {
            (
                *stack,
                computed
                    .chains
                    .get(stack)
                    .cloned()
                    .unwrap_or_else(|| run::unnamed_chain(*stack)),
                run::mean(values[measure.column()], count),
            )
        })
        .filter(|(_, _, bytes)| *bytes > 0)
        .collect();
    out.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    out
}

/// pprof's top: per function, its flat bytes (the stacks it is the innermost function of)
/// and its cumulative bytes (the stacks it is on), most cumulative first.
fn function_top(stacks: &[(i64, String, u64)]) -> Vec<(String, u64, u64)> {
    let mut flat: BTreeMap<&str, u64> = BTreeMap::new();
    let mut cumulative: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, chain, bytes) in stacks {
        let functions: Vec<&str> = chain.split(';').collect();
        if let Some(leaf) = functions.last() {
            *flat.entry(leaf).or_default() += bytes;
        }
        let mut seen: Vec<&str> = functions.clone();
        seen.sort_unstable();
        seen.dedup();
        for function in seen {
            *cumulative.entry(function).or_default() += bytes;
        }
    }
    let mut out: Vec<(String, u64, u64)> = cumulative
        .into_iter()
        .map(|(f, cum)| (f.to_owned(), flat.get(f).copied().unwrap_or(0), cum))
        .collect();
    out.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
    out
}

/// A cluster's page: the report's page of its mean with the service's bar (the reversed
/// flame graph's toggle, pprof, the other measure), then its stacks and pprof's top with
/// links to the drill-down.
pub fn cluster(
    computed: &Computed,
    params: &Params,
    options: &ServeOptions,
) -> Result<String, Failure> {
    let (name, prepared) = prepared_of(computed, params)?;
    let key = computed.cluster(&name)?;
    let measure = computed.measure_of(key, params.measure)?;
    // Reversed: the same mean viewed again, rooted at the allocator.
    let reversed = if params.reversed {
        run::prepare(
            &computed.symbolised,
            &computed.question.by,
            key,
            &computed.answers.clusters[key],
            measure,
            true,
        )
        .map_err(|e| Failure::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e))?
    } else {
        None
    };
    let page = memmon::report::output::html::render(
        reversed.as_ref().unwrap_or(prepared),
        options.rows,
        memmon::report::view::access::DEFAULT_COLD,
        memmon::report::symbolize::short_name::Naming::Short,
    );
    let measure_text = measure.name();
    let mut top = format!(
        "<div id=\"mm-cluster\" data-cluster=\"{}\" data-measure=\"{measure_text}\"><h1>Cluster {}</h1><p>{} · ",
        escape(&name),
        escape(&name),
        escape(&run::labels_text(&computed.question.by, key)),
    );
    let _ = write!(
        top,
        "<a id=\"reverse\" href=\"{}\">{}</a> · <a id=\"pprof\" href=\"{}\">pprof</a> · \
         <a href=\"{}\">folded</a>",
        params.link(
            "/cluster",
            &[
                ("c", &name),
                ("measure", measure_text),
                ("reversed", if params.reversed { "0" } else { "1" })
            ]
        ),
        if params.reversed {
            "flame graph root to allocator"
        } else {
            "flame graph reversed (all callers of each function)"
        },
        params.link("/cluster/pprof", &[("c", &name), ("measure", measure_text)]),
        params.link(
            "/cluster/folded",
            &[
                ("c", &name),
                ("measure", measure_text),
                ("reversed", if params.reversed { "1" } else { "0" })
            ]
        ),
    );
    for other in Measure::ALL {
        if other != measure && other.shown(&computed.answers.clusters[key]) {
            let _ = write!(
                top,
                " · <a id=\"other-measure\" href=\"{}\">its {} bytes</a>",
                params.link("/cluster", &[("c", &name), ("measure", other.name())]),
                other.name()
            );
        }
    }
    top.push_str("</p></div>");
    let stacks = stacks_of(computed, key, measure);
    let mut bottom = format!(
        "<section id=\"mm-top\"><h2>Top functions (pprof's top)</h2><table class=\"mm\" id=\"functions\">\
         <thead><tr><th>function</th><th class=\"n\">flat {measure_text}</th><th class=\"n\">cumulative</th>\
         <th></th></tr></thead><tbody>"
    );
    for (function, flat, cumulative) in function_top(&stacks).iter().take(options.rows.max(20)) {
        let _ = write!(
            bottom,
            "<tr><td class=\"chain\">{}</td><td class=\"n\" data-v=\"{flat}\">{}</td>\
             <td class=\"n\" data-v=\"{cumulative}\">{}</td><td><a href=\"{}\">snapshots</a></td></tr>",
            escape(function),
            escape(&size(*flat)),
            escape(&size(*cumulative)),
            params.link("/drill", &[("function", function), ("c", &name)])
        );
    }
    bottom.push_str(
        "</tbody></table></section><section id=\"mm-stacks\"><h2>Stacks</h2><table class=\"mm\" \
         id=\"stacks\"><thead><tr><th class=\"n\">mean bytes</th><th>stack (outermost first)</th>\
         <th></th></tr></thead><tbody>",
    );
    for (stack, chain, bytes) in stacks.iter().take(options.rows.max(50)) {
        let _ = write!(
            bottom,
            "<tr data-stack=\"{stack}\"><td class=\"n\" data-v=\"{bytes}\">{}</td><td class=\"chain\">{}</td>\
             <td><a href=\"{}\">snapshots</a></td></tr>",
            escape(&size(*bytes)),
            escape(chain),
            params.link("/drill", &[("stack", &stack.to_string()), ("c", &name)])
        );
    }
    bottom.push_str("</tbody></table></section>");
    Ok(inject(&page, params, &top, &bottom))
}

/// `/api/cluster`: its row, its top functions (the report's "your code") and its stacks'
/// means.
pub fn cluster_json(computed: &Computed, params: &Params) -> Result<Value, Failure> {
    let (name, prepared) = prepared_of(computed, params)?;
    let key = computed.cluster(&name)?;
    let measure = computed.measure_of(key, params.measure)?;
    let by = &computed.question.by;
    let mut labels = Map::new();
    for (label, value) in by.iter().zip(key) {
        labels.insert(label.clone(), json!(value));
    }
    let mut record = Map::new();
    for (column, value) in by
        .iter()
        .map(String::as_str)
        .chain(CLUSTER_COLUMNS)
        .zip(&computed.records[key])
    {
        record.insert(column.to_owned(), json!(value));
    }
    let your_code: Vec<Value> = prepared
        .view
        .your_code
        .functions
        .iter()
        .map(|f| json!({"function": f.function, "file": f.file, "bytes": f.resident, "inclusive_bytes": f.inclusive}))
        .collect();
    let stacks = stacks_of(computed, key, measure);
    let functions: Vec<Value> = function_top(&stacks)
        .into_iter()
        .map(|(function, flat, cumulative)| json!({"function": function, "flat_bytes": flat, "cumulative_bytes": cumulative}))
        .collect();
    let stacks: Vec<Value> = stacks
        .into_iter()
        .map(
            |(stack, chain, bytes)| json!({"stack_id": stack, "chain": chain, "mean_bytes": bytes}),
        )
        .collect();
    Ok(json!({
        "cluster": name,
        "labels": labels,
        "subset": key.last(),
        "measure": measure.name(),
        "record": record,
        "your_code": your_code,
        "functions": functions,
        "stacks": stacks,
    }))
}

/// The two clusters of a comparison and its measure.
struct Pair<'c> {
    base_name: String,
    new_name: String,
    base: &'c Vec<String>,
    new: &'c Vec<String>,
    measure: Measure,
    rows: Vec<compare::Row>,
}

fn pair<'c>(computed: &'c Computed, params: &Params) -> Result<Pair<'c>, Failure> {
    let (Some(base_name), Some(new_name)) = (&params.base, &params.new) else {
        return Err(Failure::bad("give base=CLUSTER and new=CLUSTER"));
    };
    let base = computed.cluster(base_name)?;
    let new = computed.cluster(new_name)?;
    let measure = computed.measure_of(base, params.measure)?;
    let rows = run::diff_rows(
        &computed.answers.clusters[base],
        &computed.answers.clusters[new],
        &computed.chains,
        measure,
        params.threshold,
    )
    .ok_or_else(|| {
        Failure::missing(format!(
            "cluster {new_name} has no {} figures to compare",
            measure.name()
        ))
    })?;
    Ok(Pair {
        base_name: base_name.clone(),
        new_name: new_name.clone(),
        base,
        new,
        measure,
        rows,
    })
}

fn row_json(row: &compare::Row) -> Value {
    json!({
        "flagged": row.flagged,
        "base_mean_bytes": row.base,
        "new_mean_bytes": row.new,
        "change_bytes": row.change.change,
        "change_low_bytes": row.change.interval.map(|i| i.0),
        "change_high_bytes": row.change.interval.map(|i| i.1),
        "stack": row.chain,
    })
}

/// `/api/compare`: the diff's rows, flagged first, as `diff-…stacks.csv` has them.
pub fn compare_json(
    computed: &Computed,
    params: &Params,
    _options: &ServeOptions,
) -> Result<Value, Failure> {
    let pair = pair(computed, params)?;
    let rows: Vec<Value> = pair.rows.iter().map(row_json).collect();
    Ok(json!({
        "base": pair.base_name,
        "new": pair.new_name,
        "measure": pair.measure.name(),
        "threshold_bytes": params.threshold,
        "flagged": pair.rows.iter().filter(|r| r.flagged).count(),
        "rows": rows,
        "csv": compare::csv(&pair.rows),
    }))
}

/// The flagged diff's table.
fn diff_table(params: &Params, rows: &[compare::Row], most: usize) -> String {
    let mut out = String::from(
        "<table class=\"mm\" id=\"diff-rows\"><thead><tr><th>flagged</th><th class=\"n\">base mean</th>\
         <th class=\"n\">new mean</th><th class=\"n\">change</th><th class=\"n\">95 % interval</th>\
         <th>stack (outermost first)</th><th></th></tr></thead><tbody>",
    );
    for row in rows.iter().take(most) {
        let interval = match row.change.interval {
            Some((low, high)) => format!(
                "{} … {}",
                compare::bytes_text(low),
                compare::bytes_text(high)
            ),
            None => String::new(),
        };
        let _ = write!(
            out,
            "<tr{}><td>{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\">{}</td><td class=\"chain\">{}</td>\
             <td><a href=\"{}\">snapshots</a></td></tr>",
            if row.flagged { " class=\"flagged\"" } else { "" },
            if row.flagged { "yes" } else { "" },
            compare::bytes_text(row.base),
            escape(&size(row.base.round() as u64)),
            compare::bytes_text(row.new),
            escape(&size(row.new.round() as u64)),
            compare::bytes_text(row.change.change),
            escape(&memmon::report::output::text::signed_size(row.change.change.round() as i64)),
            escape(&interval),
            escape(&row.chain),
            params.link("/drill", &[("chain", &row.chain)])
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// The comparison's page: the flagged diff, then the report's diff page (its
/// differential flame graph and change tables), then the text diff.
pub fn compare(
    computed: &Computed,
    params: &Params,
    options: &ServeOptions,
) -> Result<String, Failure> {
    let pair = pair(computed, params)?;
    let base = computed.prepared.get(&(pair.base.clone(), pair.measure));
    let new = computed.prepared.get(&(pair.new.clone(), pair.measure));
    let (Some(base), Some(new)) = (base, new) else {
        return Err(Failure::missing("the clusters have no views to compare"));
    };
    let (text, page, _) = run::diff_outputs(base, new, options.rows, &options.symbols)
        .map_err(|e| Failure::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e))?;
    let flagged = pair.rows.iter().filter(|r| r.flagged).count();
    let top = format!(
        "<div id=\"mm-compare\"><h1>{} → {}</h1><p>{} bytes; {flagged} stacks flagged (a change over \
         {} bytes whose Welch 95 % interval excludes 0), flagged first.</p>{}</div>",
        escape(&pair.base_name),
        escape(&pair.new_name),
        pair.measure.name(),
        params.threshold,
        diff_table(params, &pair.rows, options.rows.max(50)),
    );
    let bottom = format!(
        "<h2>Text diff</h2><pre class=\"mm\" id=\"text-diff\">{}</pre>",
        escape(&text)
    );
    Ok(inject(&page, params, &top, &bottom))
}

fn time_text(ns: i64) -> String {
    if ns <= 0 {
        return "unknown".to_owned();
    }
    let seconds = ns / 1_000_000_000;
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    format!(
        "{} {:02}:{:02}:{:02}",
        crate::daily::day_text(days),
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

fn labels_cell(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The drill-down's page: the snapshots holding the stacks, most bytes first.
pub fn drill(params: &Params, what: &str, holders: &[Holder]) -> String {
    let mut body = format!(
        "<h1>Snapshots holding {}</h1><p>{}{} snapshots, most bytes of it first{}.</p>",
        escape(what),
        params
            .cluster
            .as_ref()
            .map(|c| format!("In cluster {}: ", escape(c)))
            .unwrap_or_default(),
        holders.len(),
        if holders.len() == params.limit {
            " (the first ones: limit=N for more)"
        } else {
            ""
        }
    );
    body.push_str(
        "<table class=\"mm\" id=\"holders\"><thead><tr><th>snapshot</th><th class=\"n\">bytes of it</th>\
         <th class=\"n\">snapshot's RSS</th><th class=\"n\">allocated</th><th>time (UTC)</th><th>labels</th>\
         <th>source</th></tr></thead><tbody>",
    );
    for holder in holders {
        let s = &holder.snapshot;
        let _ = write!(
            body,
            "<tr data-snapshot=\"{}\"><td><a href=\"/snapshot?id={}\">{}</a></td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            s.snapshot_id,
            s.snapshot_id,
            s.snapshot_id,
            holder.bytes(),
            escape(&size(holder.bytes().max(0) as u64)),
            s.resident_bytes
                .map_or(String::new(), |b| escape(&size(b.max(0) as u64))),
            s.allocated_bytes
                .map_or(String::new(), |b| escape(&size(b.max(0) as u64))),
            escape(&time_text(s.time_unix_ns)),
            labels_cell(&s.labels),
            escape(&s.source),
        );
    }
    body.push_str("</tbody></table>");
    shell("memmon serve: drill-down", params, &body)
}

/// A snapshot's own page: the report's page of it.
pub fn snapshot(
    params: &Params,
    row: &SnapshotRow,
    prepared: Option<&Prepared>,
    options: &ServeOptions,
) -> String {
    let top = format!(
        "<div id=\"mm-snapshot\"><h1>Snapshot {}</h1><p>{} · {} · {}</p></div>",
        row.snapshot_id,
        escape(&row.source),
        escape(&time_text(row.time_unix_ns)),
        labels_cell(&row.labels)
    );
    match prepared {
        Some(prepared) => {
            let page = memmon::report::output::html::render(
                prepared,
                options.rows,
                memmon::report::view::access::DEFAULT_COLD,
                memmon::report::symbolize::short_name::Naming::Short,
            );
            inject(&page, params, &top, "")
        }
        None => shell("memmon serve: snapshot", params, &top),
    }
}

/// `/api/snapshot`: the snapshot's row and its own code's functions.
pub fn snapshot_json(row: &SnapshotRow, prepared: Option<&Prepared>, measure: Measure) -> Value {
    let your_code: Vec<Value> = prepared
        .map(|p| {
            p.view
                .your_code
                .functions
                .iter()
                .map(|f| json!({"function": f.function, "bytes": f.resident, "inclusive_bytes": f.inclusive}))
                .collect()
        })
        .unwrap_or_default();
    json!({ "snapshot": row, "measure": measure.name(), "your_code": your_code })
}

/// What a search finds: the clusters with a label value containing the text, the
/// function chains with a function containing it (with their means per cluster).
struct Found<'c> {
    clusters: Vec<&'c Vec<String>>,
    stacks: Vec<FoundStack>,
}

/// A function chain found: the functions of it that match, and its mean bytes per
/// cluster (most first).
struct FoundStack {
    chain: String,
    functions: Vec<String>,
    means: Vec<(String, u64)>,
}

fn find<'c>(computed: &'c Computed, params: &Params) -> Found<'c> {
    let needle = params.q.as_deref().unwrap_or("").trim().to_lowercase();
    if needle.is_empty() {
        return Found {
            clusters: Vec::new(),
            stacks: Vec::new(),
        };
    }
    let by = computed.question.by.len();
    let clusters: Vec<&Vec<String>> = computed
        .records
        .keys()
        .filter(|key| params.keeps(key))
        .filter(|key| key[..by].iter().any(|v| v.to_lowercase().contains(&needle)))
        .collect();
    // Chains with a matching function, with each cluster's mean of them.
    let mut chains: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (stack, chain) in &computed.chains {
        if chain.split(';').any(|f| f.to_lowercase().contains(&needle)) {
            chains.entry(chain.as_str()).or_default().push(*stack);
        }
    }
    let mut stacks: Vec<FoundStack> = chains
        .into_iter()
        .map(|(chain, ids)| {
            let functions: Vec<String> = chain
                .split(';')
                .filter(|f| f.to_lowercase().contains(&needle))
                .map(str::to_owned)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let mut means: Vec<(String, u64)> = computed
                .answers
                .clusters
                .iter()
                .filter(|(key, _)| params.keeps(key) && key.last().is_some_and(String::is_empty))
                .filter_map(|(key, sums)| {
                    let measure = if Measure::Resident.shown(sums) {
                        Measure::Resident
                    } else {
                        Measure::Allocated
                    };
                    let sum: i64 = ids
                        .iter()
                        .filter_map(|id| sums.stacks.get(id))
                        .map(|v| v[measure.column()])
                        .sum();
                    let bytes = run::mean(sum, measure.count(sums));
                    (bytes > 0).then(|| (run::cluster_name(key), bytes))
                })
                .collect();
            means.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            FoundStack {
                chain: chain.to_owned(),
                functions,
                means,
            }
        })
        .filter(|found| !found.means.is_empty())
        .collect();
    stacks.sort_by(|a, b| {
        let most = |s: &FoundStack| s.means.first().map_or(0, |m| m.1);
        most(b).cmp(&most(a)).then(a.chain.cmp(&b.chain))
    });
    stacks.truncate(100);
    Found { clusters, stacks }
}

/// The search's page.
pub fn search(computed: &Computed, params: &Params) -> String {
    let found = find(computed, params);
    let q = params.q.as_deref().unwrap_or("");
    let mut body = format!(
        "<h1>Search: {}</h1><h2>Clusters</h2><ul id=\"found-clusters\">",
        escape(q)
    );
    for key in &found.clusters {
        let name = run::cluster_name(key);
        let _ = write!(
            body,
            "<li><a href=\"{}\">{}</a></li>",
            params.link("/cluster", &[("c", &name)]),
            escape(&name)
        );
    }
    if found.clusters.is_empty() {
        body.push_str("<li class=\"muted\">none</li>");
    }
    body.push_str(
        "</ul><h2>Stacks</h2><table class=\"mm\" id=\"found-stacks\"><thead><tr><th>stack (outermost first)</th>\
         <th>functions</th><th>mean bytes per cluster</th></tr></thead><tbody>",
    );
    for FoundStack {
        chain,
        functions,
        means,
    } in &found.stacks
    {
        let functions: Vec<String> = functions
            .iter()
            .map(|f| {
                format!(
                    "<a class=\"function\" href=\"{}\">{}</a>",
                    params.link("/drill", &[("function", f)]),
                    escape(f)
                )
            })
            .collect();
        let means: Vec<String> = means
            .iter()
            .take(8)
            .map(|(cluster, bytes)| {
                format!(
                    "<a href=\"{}\">{}</a> {}",
                    params.link("/cluster", &[("c", cluster)]),
                    escape(cluster),
                    escape(&size(*bytes))
                )
            })
            .collect();
        let _ = write!(
            body,
            "<tr><td class=\"chain\"><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td></tr>",
            params.link("/drill", &[("chain", chain)]),
            escape(chain),
            functions.join(", "),
            means.join("; ")
        );
    }
    body.push_str("</tbody></table>");
    shell("memmon serve: search", params, &body)
}

/// `/api/search`.
pub fn search_json(computed: &Computed, params: &Params) -> Value {
    let found = find(computed, params);
    let clusters: Vec<String> = found
        .clusters
        .iter()
        .map(|k| run::cluster_name(k))
        .collect();
    let stacks: Vec<Value> = found
        .stacks
        .iter()
        .map(
            |FoundStack {
                 chain,
                 functions,
                 means,
             }| {
                let means: Vec<Value> = means
                    .iter()
                    .map(|(cluster, bytes)| json!({"cluster": cluster, "mean_bytes": bytes}))
                    .collect();
                json!({"chain": chain, "functions": functions, "clusters": means})
            },
        )
        .collect();
    json!({ "q": params.q, "clusters": clusters, "stacks": stacks })
}

/// The daily results' list.
pub fn daily_list(days: &BTreeMap<String, PathBuf>) -> String {
    let mut body = String::from("<h1>Daily comparisons</h1><ul id=\"days\">");
    for day in days.keys().rev() {
        let _ = write!(
            body,
            "<li><a href=\"/daily/{}\">{}</a></li>",
            escape(day),
            escape(day)
        );
    }
    if days.is_empty() {
        body.push_str("<li class=\"muted\">none yet</li>");
    }
    body.push_str("</ul>");
    shell("memmon serve: daily", &Params::default(), &body)
}
