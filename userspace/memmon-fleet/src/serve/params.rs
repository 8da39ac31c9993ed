//! A request's parameters, checked: the question (labels, day or time range, tiers,
//! reasons, a label filter) and the page's own (a cluster, a stack, a search...). An
//! unknown parameter, a repeated one or a bad value is a 400 naming it.

use std::collections::BTreeMap;

use crate::query::{parse_time, Question};
use crate::run::Measure;

use super::{Failure, ServeOptions};

/// The parameters of the question, which every page takes.
const QUESTION: [&str; 7] = ["by", "day", "since", "until", "top", "reason", "filter"];

/// The page's parameters.
const PAGE: [&str; 12] = [
    "c",
    "measure",
    "reversed",
    "base",
    "new",
    "threshold",
    "stack",
    "chain",
    "function",
    "limit",
    "id",
    "q",
];

/// The longest text a parameter may have.
const LONGEST: usize = 4096;

/// A request's parameters.
#[derive(Debug, Clone, Default)]
pub struct Params {
    /// The question.
    pub question: Question,
    /// The question's parameters as given (for the pages' links).
    pub question_pairs: Vec<(String, String)>,
    /// Only the clusters whose labels have these values (`filter=LABEL=VALUE,...`).
    pub filter: BTreeMap<String, String>,
    /// A cluster (`c`).
    pub cluster: Option<String>,
    /// The base cluster of a comparison.
    pub base: Option<String>,
    /// Its new cluster.
    pub new: Option<String>,
    /// The measure asked.
    pub measure: Option<Measure>,
    /// The flame graph reversed.
    pub reversed: bool,
    /// The diff's threshold.
    pub threshold: u64,
    /// A stack id.
    pub stack: Option<i64>,
    /// A function chain.
    pub chain: Option<String>,
    /// A function.
    pub function: Option<String>,
    /// The most rows of a drill-down.
    pub limit: usize,
    /// A snapshot id.
    pub id: Option<i64>,
    /// A search.
    pub q: Option<String>,
    given: Vec<String>,
}

/// Whether `name` is a label's name the service takes: letters, digits, `_.:-/`.
fn label_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:-/".contains(c))
}

fn integer(name: &str, text: &str) -> Result<i64, Failure> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).map(|v| v as i64).ok(),
        None => text.parse::<i64>().ok(),
    };
    parsed.ok_or_else(|| Failure::bad(format!("{name}={text:?}: not a number")))
}

impl Params {
    /// Checks and reads `pairs`, the question's defaults from `options`.
    pub fn parse(pairs: &[(String, String)], options: &ServeOptions) -> Result<Params, Failure> {
        let mut params = Params {
            question: Question {
                by: options.by.clone(),
                top: options.top.clone(),
                ..Question::default()
            },
            threshold: options.diff_threshold,
            limit: 1000,
            ..Params::default()
        };
        for (name, value) in pairs {
            if !QUESTION.contains(&name.as_str()) && !PAGE.contains(&name.as_str()) {
                return Err(Failure::bad(format!("unknown parameter {name:?}")));
            }
            if params.given.contains(name) {
                return Err(Failure::bad(format!("parameter {name:?} given twice")));
            }
            if value.len() > LONGEST {
                return Err(Failure::bad(format!(
                    "parameter {name:?} is longer than {LONGEST} bytes"
                )));
            }
            params.given.push(name.clone());
            if QUESTION.contains(&name.as_str()) && !value.is_empty() {
                params.question_pairs.push((name.clone(), value.clone()));
            }
            let text = value.as_str();
            match name.as_str() {
                "by" if !text.is_empty() => {
                    let by: Vec<String> = text.split(',').map(str::to_owned).collect();
                    if by.len() > 8 {
                        return Err(Failure::bad("by: at most 8 labels"));
                    }
                    if let Some(bad) = by.iter().find(|l| !label_name(l)) {
                        return Err(Failure::bad(format!(
                            "by: {bad:?} is not a label's name (letters, digits, _.:-/)"
                        )));
                    }
                    params.question.by = by;
                }
                "day" if !text.is_empty() => {
                    let start = parse_time(text)
                        .ok()
                        .filter(|_| text.len() == 10)
                        .ok_or_else(|| Failure::bad(format!("day={text:?}: give YYYY-MM-DD")))?;
                    params.question.since = Some(start);
                    params.question.until = Some(start + 86_400 * 1_000_000_000);
                }
                "since" if !text.is_empty() => {
                    params.question.since =
                        Some(parse_time(text).map_err(|e| Failure::bad(format!("since: {e}")))?);
                }
                "until" if !text.is_empty() => {
                    params.question.until =
                        Some(parse_time(text).map_err(|e| Failure::bad(format!("until: {e}")))?);
                }
                "top" => {
                    let mut top = Vec::new();
                    for part in text.split(',').filter(|p| !p.is_empty()) {
                        match part.parse::<u64>() {
                            Ok(n) if n >= 1 => top.push(n),
                            _ => {
                                return Err(Failure::bad(format!(
                                    "top={text:?}: give N[,N...], each at least 1"
                                )))
                            }
                        }
                    }
                    if top.len() > 8 {
                        return Err(Failure::bad("top: at most 8 tiers"));
                    }
                    params.question.top = top;
                }
                "reason" => {
                    let reasons: Vec<String> = if text.is_empty() {
                        vec!["near-limit".to_owned(), "kill".to_owned()]
                    } else {
                        text.split(',').map(str::to_owned).collect()
                    };
                    if let Some(bad) = reasons.iter().find(|r| !label_name(r)) {
                        return Err(Failure::bad(format!("reason: {bad:?} is not a reason")));
                    }
                    if text.is_empty() {
                        params
                            .question_pairs
                            .push((name.clone(), reasons.join(",")));
                    }
                    params.question.reasons = reasons;
                }
                "filter" => {
                    for part in text.split(',').filter(|p| !p.is_empty()) {
                        let (label, value) = part.split_once('=').ok_or_else(|| {
                            Failure::bad(format!("filter={text:?}: give LABEL=VALUE[,...]"))
                        })?;
                        params.filter.insert(label.to_owned(), value.to_owned());
                    }
                }
                "c" => params.cluster = Some(value.clone()),
                "base" => params.base = Some(value.clone()),
                "new" => params.new = Some(value.clone()),
                "measure" => {
                    params.measure = match text {
                        "resident" => Some(Measure::Resident),
                        "allocated" => Some(Measure::Allocated),
                        "" => None,
                        _ => {
                            return Err(Failure::bad(format!(
                                "measure={text:?}: give resident or allocated"
                            )))
                        }
                    }
                }
                "reversed" => {
                    params.reversed = match text {
                        "1" | "true" | "yes" | "on" => true,
                        "0" | "false" | "no" | "off" | "" => false,
                        _ => return Err(Failure::bad(format!("reversed={text:?}: give 1 or 0"))),
                    }
                }
                "threshold" => {
                    params.threshold = text.parse().map_err(|_| {
                        Failure::bad(format!("threshold={text:?}: give a number of bytes"))
                    })?;
                }
                "stack" => params.stack = Some(integer(name, text)?),
                "id" => params.id = Some(integer(name, text)?),
                "chain" if !text.is_empty() => params.chain = Some(value.clone()),
                "function" if !text.is_empty() => params.function = Some(value.clone()),
                "q" => params.q = Some(value.clone()),
                "limit" => {
                    params.limit = match text.parse::<usize>() {
                        Ok(n) if (1..=10_000).contains(&n) => n,
                        _ => return Err(Failure::bad(format!("limit={text:?}: give 1 to 10000"))),
                    }
                }
                _ => {}
            }
        }
        if let Some(label) = params
            .filter
            .keys()
            .find(|label| !params.question.by.contains(label))
        {
            return Err(Failure::bad(format!(
                "filter: {label:?} is not one of the clusters' labels (by={})",
                params.question.by.join(",")
            )));
        }
        Ok(params)
    }

    /// A 400 for a page parameter the page does not take.
    pub fn only(&self, allowed: &[&str]) -> Result<(), Failure> {
        match self
            .given
            .iter()
            .find(|name| !QUESTION.contains(&name.as_str()) && !allowed.contains(&name.as_str()))
        {
            Some(name) => Err(Failure::bad(format!(
                "parameter {name:?} is not one of this page's"
            ))),
            None => Ok(()),
        }
    }

    /// Whether the cluster of `values` passes the label filter.
    pub fn keeps(&self, values: &[String]) -> bool {
        self.filter.iter().all(|(label, value)| {
            self.question
                .by
                .iter()
                .position(|l| l == label)
                .is_some_and(|i| values.get(i) == Some(value))
        })
    }

    /// A URL of `path` with the question's parameters and `more`, HTML-escaped for an
    /// attribute.
    pub fn link(&self, path: &str, more: &[(&str, &str)]) -> String {
        let mut pairs: Vec<(&str, &str)> = self
            .question_pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        pairs.extend(more.iter().copied());
        let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        let url = if query.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{query}")
        };
        memmon::report::output::html::markup::escape(&url)
    }
}
