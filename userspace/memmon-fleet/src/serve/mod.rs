//! `memmon serve`: the fleet's clusters as a web service (axum), on the same queries,
//! symbolisation and renderers as `memmon fleet` ([`crate::query`], [`crate::run`]).
//!
//! - answers are cached per dataset version (the parquet files' names, sizes and
//!   modification times) and question (labels, time range, tiers): a dataset that grows or
//!   changes under the service is read again, and a request never sees half of two;
//! - read-only: no URL names a file: clusters are looked up by name among the answers,
//!   snapshots and stacks by their ids in the dataset, the daily pages among the daily
//!   directory's listing;
//! - each request's queries run in their own DataFusion session, whose memory pool is the
//!   engine's limit, and within a time limit; a bound hit, a bad parameter or an unknown
//!   name is an error page (or JSON error) with its status, and the service goes on.

mod pages;
mod params;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use memmon::export::schema::TABLES;
use memmon::report::symbolize::symbols::SymbolOptions;
use memmon::report::Prepared;
use serde_json::{json, Value};
use tokio::sync::{OnceCell, Semaphore};

use crate::dataset::Dataset;
use crate::engine::Engine;
use crate::query::{self, Answers, Question};
use crate::run::{self, Measure, Symbolised};

pub use params::Params;

/// How the service is set up.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The dataset directory.
    pub dataset: PathBuf,
    /// The engine (the embedded one's memory limit is each request's).
    pub engine: Engine,
    /// Symbol sources.
    pub symbols: SymbolOptions,
    /// The clusters' labels when a URL gives none.
    pub by: Vec<String>,
    /// The tiers when a URL gives none.
    pub top: Vec<u64>,
    /// Each request's queries and symbolisation must end within this.
    pub query_timeout: Duration,
    /// Rows per table of the report's pages.
    pub rows: usize,
    /// The diffs' threshold when a URL gives none.
    pub diff_threshold: u64,
    /// The daily job's results (`memmon fleet daily`), shown under `/daily`.
    pub daily: Option<PathBuf>,
    /// Answers kept (per question, for the dataset's current version).
    pub cache_entries: usize,
    /// Queries at once (each with its memory pool).
    pub concurrent_queries: usize,
}

/// The clusters' labels by default.
pub const DEFAULT_BY: [&str; 3] = ["model", "version", "group"];

impl ServeOptions {
    /// The defaults for a dataset on an engine.
    pub fn new(dataset: PathBuf, engine: Engine) -> ServeOptions {
        ServeOptions {
            dataset,
            engine,
            symbols: SymbolOptions::default(),
            by: DEFAULT_BY.iter().map(|s| (*s).to_owned()).collect(),
            top: Vec::new(),
            query_timeout: Duration::from_secs(30),
            rows: 20,
            diff_threshold: crate::compare::DEFAULT_THRESHOLD,
            daily: None,
            cache_entries: 16,
            concurrent_queries: 2,
        }
    }
}

/// A request that could not be answered: its status and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub message: String,
}

impl Failure {
    fn new(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    /// A bad parameter (400).
    pub fn bad(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::BAD_REQUEST, message)
    }

    /// Nothing of that name (404).
    pub fn missing(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::NOT_FOUND, message)
    }

    fn unavailable(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }
}

/// A failure as a JSON error, for `/api/`.
struct JsonFailure(Failure);

/// A failure of the service's own (5xx) is logged on stderr; a client's (4xx) is not.
fn log(failure: &Failure) {
    if failure.status.is_server_error() {
        eprintln!("memmon serve: {}: {}", failure.status, failure.message);
    }
}

impl IntoResponse for JsonFailure {
    fn into_response(self) -> Response {
        log(&self.0);
        let body = json!({ "error": self.0.message, "status": self.0.status.as_u16() });
        (self.0.status, Json(body)).into_response()
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        log(&self);
        (
            self.status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            pages::error_page(&self),
        )
            .into_response()
    }
}

/// The answers to one question on one version of the dataset, symbolised, with each
/// cluster's views and its row of `clusters.csv`.
pub struct Computed {
    /// The dataset's version.
    pub version: String,
    /// The question.
    pub question: Question,
    /// The engine's answers.
    pub answers: Answers,
    /// The clusters' stacks, symbolised.
    pub symbolised: Symbolised,
    /// Each stack's function chain.
    pub chains: BTreeMap<i64, String>,
    /// The clusters by name.
    pub names: BTreeMap<String, Vec<String>>,
    /// Each cluster's views, by key and measure.
    pub prepared: BTreeMap<(Vec<String>, Measure), Prepared>,
    /// Each cluster's row of `clusters.csv` (by key).
    pub records: BTreeMap<Vec<String>, Vec<String>>,
    /// Snapshots in the dataset's good parts.
    pub snapshots: u64,
    /// The parts skipped, one line each.
    pub skipped: Vec<String>,
}

impl Computed {
    /// The key of the cluster named `name`, or a 404.
    pub fn cluster(&self, name: &str) -> Result<&Vec<String>, Failure> {
        self.names
            .get(name)
            .ok_or_else(|| Failure::missing(format!("no cluster {name:?} in these answers")))
    }

    /// Whether any cluster has this measure.
    pub fn has(&self, measure: Measure) -> bool {
        self.answers
            .clusters
            .values()
            .any(|sums| measure.count(sums) > 0)
    }

    /// The measure asked, else the cluster's own (resident where it has it).
    pub fn measure_of(&self, key: &[String], asked: Option<Measure>) -> Result<Measure, Failure> {
        let sums = &self.answers.clusters[key];
        match asked {
            Some(measure) if measure.shown(sums) => Ok(measure),
            Some(measure) => Err(Failure::missing(format!(
                "cluster {} has no {} figures",
                run::cluster_name(key),
                measure.name()
            ))),
            None => Ok(if Measure::Resident.shown(sums) {
                Measure::Resident
            } else {
                Measure::Allocated
            }),
        }
    }
}

struct Cache {
    version: String,
    dataset: Option<Arc<Dataset>>,
    entries: Vec<(Question, Arc<OnceCell<Arc<Computed>>>)>,
}

/// The service's state.
pub struct Service {
    options: ServeOptions,
    cache: Mutex<Cache>,
    queries: Semaphore,
}

/// The dataset's version: a hash of its parquet files' names, sizes and modification
/// times (a new export, a file replaced or removed: a new version).
pub fn dataset_version(dir: &Path) -> Result<String, String> {
    let mut files = Vec::new();
    for table in TABLES {
        let entries = std::fs::read_dir(dir.join(table))
            .map_err(|e| format!("the dataset cannot be read ({table}: {e})"))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".parquet") {
                continue;
            }
            let (size, modified) = entry.metadata().map_or((0, 0), |m| {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                (m.len(), modified)
            });
            files.push((table, name, size, modified));
        }
    }
    files.sort();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    files.hash(&mut hasher);
    Ok(format!("{:016x}-{}", hasher.finish(), files.len()))
}

impl Service {
    /// The service of `options`.
    pub fn new(options: ServeOptions) -> Service {
        let permits = options.concurrent_queries.max(1);
        Service {
            options,
            cache: Mutex::new(Cache {
                version: String::new(),
                dataset: None,
                entries: Vec::new(),
            }),
            queries: Semaphore::new(permits),
        }
    }

    /// Its options.
    pub fn options(&self) -> &ServeOptions {
        &self.options
    }

    /// The dataset's current version and good parts (read again when it changed).
    fn dataset(&self) -> Result<(String, Arc<Dataset>), Failure> {
        let dir = &self.options.dataset;
        let version = dataset_version(dir).map_err(Failure::unavailable)?;
        if let Ok(cache) = self.cache.lock() {
            if cache.version == version {
                if let Some(dataset) = &cache.dataset {
                    return Ok((version, dataset.clone()));
                }
            }
        }
        let dataset = Arc::new(Dataset::open(dir).map_err(Failure::unavailable)?);
        // Changed while it was read: the next request reads it again.
        let after = dataset_version(dir).map_err(Failure::unavailable)?;
        if after != version {
            return Err(Failure::unavailable(
                "the dataset changed while it was read: ask again",
            ));
        }
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| Failure::unavailable("the cache is poisoned"))?;
        if cache.version != version {
            cache.version = version.clone();
            cache.entries.clear();
        }
        cache.dataset = Some(dataset.clone());
        Ok((version, dataset))
    }

    /// The bounds of a query, applied to `work`: the time limit (the memory limit is the
    /// engine's pool, per session), at most `concurrent_queries` at once.
    async fn bounded<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, Failure> {
        let limit = self.options.query_timeout;
        let bounded = async {
            let _permit = self
                .queries
                .acquire()
                .await
                .map_err(|_| "the service is stopping".to_owned())?;
            work.await
        };
        match tokio::time::timeout(limit, bounded).await {
            Err(_) => Err(Failure::unavailable(format!(
                "the query took longer than its limit of {} ms (--query-timeout): narrow it \
                 (a day, fewer labels) or raise the limit",
                limit.as_millis()
            ))),
            Ok(Err(message)) => Err(Failure::unavailable(bound_message(message))),
            Ok(Ok(value)) => Ok(value),
        }
    }

    /// A session on the dataset's current version.
    async fn session(
        &self,
    ) -> Result<(String, Arc<Dataset>, datafusion::prelude::SessionContext), Failure> {
        let (version, dataset) = self.dataset()?;
        let context = self
            .options
            .engine
            .session(&dataset)
            .await
            .map_err(Failure::unavailable)?;
        Ok((version, dataset, context))
    }

    /// The answers to `question` on the dataset's current version, computed once.
    pub async fn computed(&self, question: &Question) -> Result<Arc<Computed>, Failure> {
        let (version, _) = self.dataset()?;
        let cell = {
            let mut cache = self
                .cache
                .lock()
                .map_err(|_| Failure::unavailable("the cache is poisoned"))?;
            if cache.version != version {
                cache.version = version.clone();
                cache.entries.clear();
                cache.dataset = None;
            }
            match cache.entries.iter().find(|(q, _)| q == question) {
                Some((_, cell)) => cell.clone(),
                None => {
                    if cache.entries.len() >= self.options.cache_entries.max(1) {
                        cache.entries.remove(0);
                    }
                    let cell = Arc::new(OnceCell::new());
                    cache.entries.push((question.clone(), cell.clone()));
                    cell
                }
            }
        };
        cell.get_or_try_init(|| self.compute(question))
            .await
            .cloned()
    }

    async fn compute(&self, question: &Question) -> Result<Arc<Computed>, Failure> {
        let symbols = self.options.symbols.clone();
        let question = question.clone();
        self.bounded(async {
            let (version, dataset, context) = self.session().await.map_err(|f| f.message)?;
            let answers = query::answer(&context, &question).await?;
            let skipped = dataset.skipped.clone();
            let snapshots = dataset.snapshots;
            tokio::task::spawn_blocking(move || {
                prepare_all(version, question, answers, &symbols, snapshots, skipped)
            })
            .await
            .map_err(|e| format!("the symbolisation failed: {e}"))?
            .map(Arc::new)
        })
        .await
    }

    /// The drill-down's snapshots.
    pub async fn holders(
        &self,
        question: &Question,
        cluster: Option<&[String]>,
        stacks: &[i64],
        limit: usize,
    ) -> Result<Vec<query::Holder>, Failure> {
        self.bounded(async {
            let (_, _, context) = self.session().await.map_err(|f| f.message)?;
            query::holders(&context, question, cluster, stacks, limit).await
        })
        .await
    }

    /// One snapshot, symbolised and viewed as a cluster of one.
    pub async fn snapshot(
        &self,
        id: i64,
    ) -> Result<(query::SnapshotRow, Option<Prepared>, Measure), Failure> {
        let symbols = self.options.symbols.clone();
        let found = self
            .bounded(async {
                let (_, _, context) = self.session().await.map_err(|f| f.message)?;
                let Some((row, answers)) = query::snapshot(&context, id).await? else {
                    return Ok(None);
                };
                tokio::task::spawn_blocking(move || {
                    let symbolised = run::symbolise(&answers, &symbols);
                    let sums = answers
                        .clusters
                        .values()
                        .next()
                        .ok_or_else(|| "no snapshot".to_owned())?;
                    let measure = if Measure::Resident.shown(sums) {
                        Measure::Resident
                    } else {
                        Measure::Allocated
                    };
                    let by = vec!["snapshot".to_owned()];
                    let prepared =
                        run::prepare(&symbolised, &by, &[id.to_string()], sums, measure, false)?;
                    Ok(Some((row, prepared, measure)))
                })
                .await
                .map_err(|e| format!("the symbolisation failed: {e}"))?
            })
            .await?;
        found.ok_or_else(|| Failure::missing(format!("no snapshot {id} in the dataset")))
    }
}

/// An engine's error, with what to do when it is the memory bound.
fn bound_message(message: String) -> String {
    if message.contains("Resources exhausted") || message.contains("memory") {
        format!(
            "the query needed more than its memory limit (--memory-limit): narrow it (a day, \
             fewer labels) or raise the limit ({message})"
        )
    } else {
        message
    }
}

/// The answers symbolised, each cluster viewed and its row made (blocking work).
fn prepare_all(
    version: String,
    question: Question,
    answers: Answers,
    symbols: &SymbolOptions,
    snapshots: u64,
    skipped: Vec<String>,
) -> Result<Computed, String> {
    let symbolised = run::symbolise(&answers, symbols);
    let mut prepared = BTreeMap::new();
    let mut records = BTreeMap::new();
    for (values, sums) in &answers.clusters {
        let mut top_sites = Vec::new();
        for measure in Measure::ALL {
            let Some(cluster) =
                run::prepare(&symbolised, &question.by, values, sums, measure, false)?
            else {
                continue;
            };
            if top_sites.is_empty() {
                top_sites = run::top_functions(&cluster);
            }
            prepared.insert((values.clone(), measure), cluster);
        }
        records.insert(
            values.clone(),
            run::cluster_record(values, sums, &top_sites),
        );
    }
    let chains = run::chains(&answers, &symbolised);
    let names = run::cluster_names(&answers);
    Ok(Computed {
        version,
        question,
        answers,
        symbolised,
        chains,
        names,
        prepared,
        records,
        snapshots,
        skipped,
    })
}

type Shared = Arc<Service>;
type Asked = Result<Query<Vec<(String, String)>>, QueryRejection>;

fn params(asked: Asked, service: &Service) -> Result<Params, Failure> {
    let Query(pairs) = asked.map_err(|e| Failure::bad(format!("bad query string: {e}")))?;
    Params::parse(&pairs, service.options())
}

fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// The service's routes.
pub fn router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/", get(home))
        .route("/cluster", get(cluster_page))
        .route("/cluster/pprof", get(cluster_pprof))
        .route("/cluster/folded", get(cluster_folded))
        .route("/compare", get(compare_page))
        .route("/drill", get(drill_page))
        .route("/snapshot", get(snapshot_page))
        .route("/search", get(search_page))
        .route("/daily", get(daily_list))
        .route("/daily/{day}", get(daily_page))
        .route("/api/version", get(api_version))
        .route("/api/clusters", get(api_clusters))
        .route("/api/cluster", get(api_cluster))
        .route("/api/compare", get(api_compare))
        .route("/api/drill", get(api_drill))
        .route("/api/snapshot", get(api_snapshot))
        .route("/api/search", get(api_search))
        .route("/api/daily", get(api_daily))
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
        .with_state(service)
}

/// Serves on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, options: ServeOptions) -> Result<(), String> {
    let service = Arc::new(Service::new(options));
    axum::serve(listener, router(service))
        .await
        .map_err(|e| format!("the service stopped: {e}"))
}

/// Read-only: any method but GET (and HEAD) is refused.
async fn not_allowed(method: axum::http::Method, uri: Uri) -> Response {
    let failure = Failure::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{method} {}: the service is read-only (GET only)",
            uri.path()
        ),
    );
    let mut response = if uri.path().starts_with("/api/") {
        JsonFailure(failure).into_response()
    } else {
        failure.into_response()
    };
    response.headers_mut().insert(
        header::ALLOW,
        axum::http::HeaderValue::from_static("GET, HEAD"),
    );
    response
}

async fn not_found(uri: Uri) -> Response {
    let failure = Failure::missing(format!("no page {}", uri.path()));
    if uri.path().starts_with("/api/") {
        JsonFailure(failure).into_response()
    } else {
        failure.into_response()
    }
}

async fn home(State(service): State<Shared>, asked: Asked) -> Result<Response, Failure> {
    let params = params(asked, &service)?;
    params.only(&[])?;
    let computed = service.computed(&params.question).await?;
    Ok(html(pages::home(&computed, &params)))
}

async fn api_version(State(service): State<Shared>) -> Result<Json<Value>, JsonFailure> {
    let version = dataset_version(&service.options.dataset)
        .map_err(|e| JsonFailure(Failure::unavailable(e)))?;
    Ok(Json(json!({ "version": version })))
}

async fn api_clusters(
    State(service): State<Shared>,
    asked: Asked,
) -> Result<Json<Value>, JsonFailure> {
    let params = params(asked, &service).map_err(JsonFailure)?;
    params.only(&[]).map_err(JsonFailure)?;
    let computed = service
        .computed(&params.question)
        .await
        .map_err(JsonFailure)?;
    Ok(Json(pages::clusters_json(&computed, &params)))
}

async fn cluster_page(State(service): State<Shared>, asked: Asked) -> Result<Response, Failure> {
    let params = params(asked, &service)?;
    params.only(&["c", "measure", "reversed"])?;
    let computed = service.computed(&params.question).await?;
    Ok(html(pages::cluster(&computed, &params, service.options())?))
}

async fn api_cluster(
    State(service): State<Shared>,
    asked: Asked,
) -> Result<Json<Value>, JsonFailure> {
    let params = params(asked, &service).map_err(JsonFailure)?;
    params.only(&["c", "measure"]).map_err(JsonFailure)?;
    let computed = service
        .computed(&params.question)
        .await
        .map_err(JsonFailure)?;
    pages::cluster_json(&computed, &params)
        .map(Json)
        .map_err(JsonFailure)
}

async fn cluster_pprof(State(service): State<Shared>, asked: Asked) -> Result<Response, Failure> {
    let params = params(asked, &service)?;
    params.only(&["c", "measure"])?;
    let computed = service.computed(&params.question).await?;
    let symbols = service.options.symbols.clone();
    let (name, bytes) = tokio::task::spawn_blocking(move || {
        let (name, prepared) = pages::prepared_of(&computed, &params)?;
        memmon::report::aggregate::pprof(&[(prepared, 1)], &symbols)
            .map(|bytes| (name, bytes))
            .map_err(|e| Failure::unavailable(e.0))
    })
    .await
    .map_err(|e| Failure::unavailable(e.to_string()))??;
    let file = format!("{}.pb.gz", name.replace('/', "."));
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file}\""),
            ),
        ],
        bytes,
    )
        .into_response())
}

async fn cluster_folded(State(service): State<Shared>, asked: Asked) -> Result<Response, Failure> {
    let params = params(asked, &service)?;
    params.only(&["c", "measure", "reversed"])?;
    let computed = service.computed(&params.question).await?;
    let (_, prepared) = pages::prepared_of(&computed, &params)?;
    let mut view = prepared.view.clone();
    view.reversed = params.reversed;
    let text = memmon::report::output::folded::render_folded(
        &view,
        memmon::report::output::folded::Weight::Resident,
    );
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

async fn compare_page(State(service): State<Shared>, asked: Asked) -> Result<Response, Failure> {
    let params = params(asked, &service)?;
    params.only(&["base", "new", "measure", "threshold"])?;
    let computed = service.computed(&params.question).await?;
    Ok(html(pages::compare(&computed, &params, service.options())?))
}

async fn api_compare(
    State(service): State<Shared>,
    asked: Asked,
) -> Result<Json<Value>, JsonFailure> {
    let params = params(asked, &service).map_err(JsonFailure)?;
    params
        .only(&["base", "new", "measure", "threshold"])
        .map_err(JsonFailure)?;
    let computed = service
        .computed(&params.question)
        .await
        .map_err(JsonFailure)?;
    pages::compare_json(&computed, &params, service.options())
        .map(Json)
        .map_err(JsonFailure)
}

/// The stacks a drill-down asks for (`stack`, `chain` or `function`), and the cluster it
/// is restricted to.
fn drill_stacks(computed: &Computed, params: &Params) -> Result<(Vec<i64>, String), Failure> {
    if let Some(stack) = params.stack {
        let what = match computed.chains.get(&stack) {
            Some(chain) => format!("stack {stack}: {chain}"),
            None => format!("stack {stack}"),
        };
        return Ok((vec![stack], what));
    }
    if let Some(chain) = &params.chain {
        let stacks: Vec<i64> = computed
            .chains
            .iter()
            .filter(|(_, c)| *c == chain)
            .map(|(id, _)| *id)
            .collect();
        if stacks.is_empty() {
            return Err(Failure::missing(format!(
                "no stack has the chain {chain:?}"
            )));
        }
        return Ok((stacks, format!("the chain {chain}")));
    }
    if let Some(function) = &params.function {
        let stacks: Vec<i64> = computed
            .chains
            .iter()
            .filter(|(_, c)| c.split(';').any(|f| f == function))
            .map(|(id, _)| *id)
            .collect();
        if stacks.is_empty() {
            return Err(Failure::missing(format!(
                "no stack has the function {function:?}"
            )));
        }
        return Ok((stacks, format!("the function {function}")));
    }
    Err(Failure::bad("give stack=ID, chain=CHAIN or function=NAME"))
}

async fn drilled(
    service: &Service,
    params: &Params,
) -> Result<(Arc<Computed>, String, Vec<query::Holder>), Failure> {
    let computed = service.computed(&params.question).await?;
    let (stacks, what) = drill_stacks(&computed, params)?;
    let cluster = match &params.cluster {
        Some(name) => Some(computed.cluster(name)?.clone()),
        None => None,
    };
    let holders = service
        .holders(&params.question, cluster.as_deref(), &stacks, params.limit)
        .await?;
    Ok((computed, what, holders))
}

const DRILL: [&str; 5] = ["stack", "chain", "function", "c", "limit"];

async fn drill_page(State(service): State<Shared>, asked: Asked) -> Result<Response, Failure> {
    let params = params(asked, &service)?;
    params.only(&DRILL)?;
    let (_, what, holders) = drilled(&service, &params).await?;
    Ok(html(pages::drill(&params, &what, &holders)))
}

async fn api_drill(
    State(service): State<Shared>,
    asked: Asked,
) -> Result<Json<Value>, JsonFailure> {
    let params = params(asked, &service).map_err(JsonFailure)?;
    params.only(&DRILL).map_err(JsonFailure)?;
    let (_, what, holders) = drilled(&service, &params).await.map_err(JsonFailure)?;
    Ok(Json(json!({ "what": what, "snapshots": holders })))
}

async fn snapshot_page(State(service): State<Shared>, asked: Asked) -> Result<Response, Failure> {
    let params = params(asked, &service)?;
    params.only(&["id"])?;
    let id = params
        .id
        .ok_or_else(|| Failure::bad("give id=SNAPSHOT_ID"))?;
    let (row, prepared, _) = service.snapshot(id).await?;
    Ok(html(pages::snapshot(
        &params,
        &row,
        prepared.as_ref(),
        service.options(),
    )))
}

async fn api_snapshot(
    State(service): State<Shared>,
    asked: Asked,
) -> Result<Json<Value>, JsonFailure> {
    let params = params(asked, &service).map_err(JsonFailure)?;
    params.only(&["id"]).map_err(JsonFailure)?;
    let id = params
        .id
        .ok_or_else(|| JsonFailure(Failure::bad("give id=SNAPSHOT_ID")))?;
    let (row, prepared, measure) = service.snapshot(id).await.map_err(JsonFailure)?;
    Ok(Json(pages::snapshot_json(&row, prepared.as_ref(), measure)))
}

async fn search_page(State(service): State<Shared>, asked: Asked) -> Result<Response, Failure> {
    let params = params(asked, &service)?;
    params.only(&["q"])?;
    let computed = service.computed(&params.question).await?;
    Ok(html(pages::search(&computed, &params)))
}

async fn api_search(
    State(service): State<Shared>,
    asked: Asked,
) -> Result<Json<Value>, JsonFailure> {
    let params = params(asked, &service).map_err(JsonFailure)?;
    params.only(&["q"]).map_err(JsonFailure)?;
    let computed = service
        .computed(&params.question)
        .await
        .map_err(JsonFailure)?;
    Ok(Json(pages::search_json(&computed, &params)))
}

/// The daily pages: `DAY.html` files of the daily directory, by day, as listed (a URL's
/// day is looked up among them, never made into a path).
pub fn daily_pages(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(day) = name.strip_suffix(".html") {
            if query::parse_time(day).is_ok() && day.len() == 10 {
                out.insert(day.to_owned(), entry.path());
            }
        }
    }
    out
}

fn daily_dir(service: &Service) -> Result<&Path, Failure> {
    service
        .options
        .daily
        .as_deref()
        .ok_or_else(|| Failure::missing("no daily results here (memmon serve --daily DIR)"))
}

async fn daily_list(State(service): State<Shared>) -> Result<Response, Failure> {
    let dir = daily_dir(&service)?;
    Ok(html(pages::daily_list(&daily_pages(dir))))
}

async fn api_daily(State(service): State<Shared>) -> Result<Json<Value>, JsonFailure> {
    let dir = daily_dir(&service).map_err(JsonFailure)?;
    let days: Vec<String> = daily_pages(dir).into_keys().rev().collect();
    Ok(Json(json!({ "days": days })))
}

async fn daily_page(
    State(service): State<Shared>,
    axum::extract::Path(day): axum::extract::Path<String>,
) -> Result<Response, Failure> {
    let dir = daily_dir(&service)?;
    let pages = daily_pages(dir);
    let path = pages
        .get(&day)
        .ok_or_else(|| Failure::missing(format!("no daily results for {day:?}")))?;
    let body = std::fs::read_to_string(path)
        .map_err(|e| Failure::unavailable(format!("the day's page cannot be read: {e}")))?;
    Ok(html(body))
}
