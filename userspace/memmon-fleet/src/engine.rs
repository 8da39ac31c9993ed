//! The query engines: DataFusion in this process (default), or a Ballista cluster
//! (`ballista://HOST:PORT`, its scheduler), running the same SQL.

use std::sync::Arc;
use std::time::Duration;

use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use memmon::export::schema::{self, TABLES};

use crate::dataset::Dataset;

/// Where the queries run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// DataFusion in this process, its memory pool capped at this many bytes (operators
    /// spill to disk past it).
    Local {
        /// The memory pool's size.
        memory_limit: usize,
    },
    /// A Ballista scheduler.
    Ballista {
        /// Its `host:port`.
        address: String,
        /// How long each query may take: Ballista 55 does not always end a job whose
        /// executor died mid-way (docs/fleet.md), and a run must not wait forever.
        timeout: Duration,
    },
}

/// A Ballista query's time limit by default: an hour.
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(3600);

/// The memory pool of the embedded engine by default: 512 MiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 512 << 20;

impl Engine {
    /// Parses `local` or `ballista://HOST:PORT`.
    pub fn parse(text: &str, memory_limit: usize, timeout: Duration) -> Result<Engine, String> {
        if text == "local" {
            return Ok(Engine::Local { memory_limit });
        }
        match text.strip_prefix("ballista://") {
            Some(address) if address.contains(':') => Ok(Engine::Ballista {
                address: address.to_owned(),
                timeout,
            }),
            _ => Err(format!(
                "--engine {text:?}: give local or ballista://HOST:PORT"
            )),
        }
    }

    /// A session on this engine with the dataset's tables registered.
    pub async fn session(&self, dataset: &Dataset) -> Result<SessionContext, String> {
        let context = match self {
            Engine::Local { memory_limit } => {
                let runtime = RuntimeEnvBuilder::new()
                    .with_memory_pool(Arc::new(FairSpillPool::new(*memory_limit)))
                    .build_arc()
                    .map_err(|e| format!("cannot start DataFusion: {e}"))?;
                SessionContext::new_with_config_rt(session_config(), runtime)
            }
            #[cfg(not(feature = "ballista"))]
            Engine::Ballista { .. } => return Err(WITHOUT_BALLISTA.to_owned()),
            #[cfg(feature = "ballista")]
            Engine::Ballista { address, .. } => {
                use ballista::prelude::SessionContextExt;
                let state = datafusion::execution::SessionStateBuilder::new()
                    .with_config(ballista_config())
                    .with_default_features()
                    .build();
                SessionContext::remote_with_state(&format!("df://{address}"), state)
                    .await
                    .map_err(|e| format!("cannot reach the Ballista scheduler at {address}: {e}"))?
            }
        };
        for (index, table) in TABLES.iter().enumerate() {
            register(&context, table, &dataset.files[index])?;
        }
        Ok(context)
    }

    /// How long a query may take (the embedded engine: no limit).
    pub fn timeout(&self) -> Option<Duration> {
        match self {
            Engine::Local { .. } => None,
            Engine::Ballista { timeout, .. } => Some(*timeout),
        }
    }
}

fn session_config() -> SessionConfig {
    // Strings as the files have them (Utf8), so that both engines give the same types.
    let mut config = SessionConfig::new();
    config
        .options_mut()
        .execution
        .parquet
        .schema_force_view_types = false;
    config
}

/// What a binary built without the `ballista` feature says when asked for Ballista.
pub const WITHOUT_BALLISTA: &str = "this memmon-fleet was built without Ballista (cargo's \
    --no-default-features): build it with `make fleet`";

#[cfg(feature = "ballista")]
fn ballista_config() -> SessionConfig {
    use ballista::prelude::SessionConfigExt;
    let mut config = SessionConfig::new_with_ballista();
    config
        .options_mut()
        .execution
        .parquet
        .schema_force_view_types = false;
    config
}

fn register(
    context: &SessionContext,
    table: &str,
    files: &[std::path::PathBuf],
) -> Result<(), String> {
    let urls = files
        .iter()
        .map(|path| {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            ListingTableUrl::parse(absolute.to_string_lossy())
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options =
        ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    let schema = schema::of(table).unwrap_or_else(schema::snapshots);
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(schema);
    let listing = ListingTable::try_new(config).map_err(|e| format!("table {table}: {e}"))?;
    context
        .register_table(table, Arc::new(listing))
        .map_err(|e| format!("table {table}: {e}"))?;
    Ok(())
}
