//! Debug files from debuginfod servers, by build ID, with the client of the `debuginfod`
//! crate (blazesym's author's) over reqwest, cached as elfutils caches them
//! (`CACHE/BUILDID/debuginfo`). A download is checked: a file whose build ID is not the
//! one asked for is refused and not cached. A server that cannot be reached or fails
//! gives one warning on stderr, and no more requests in that report: the objects it
//! would have named show as offsets.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::symbols::build_id;

/// Which servers, where the cache is, how long a request may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebuginfodOptions {
    /// Server URLs, tried in order.
    pub urls: Vec<String>,
    /// The cache directory.
    pub cache: PathBuf,
    /// Time for one request (connection and transfer).
    pub timeout: Duration,
}

/// The default request timeout in seconds (`DEBUGINFOD_TIMEOUT` sets another).
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

impl DebuginfodOptions {
    /// The options as elfutils takes them from the environment: `url` (`--debuginfod
    /// URL`) or else `DEBUGINFOD_URLS` (URLs separated by spaces); the cache in
    /// `DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
    /// `~/.cache/debuginfod_client`; the timeout in `DEBUGINFOD_TIMEOUT` (seconds).
    /// `None` without any URL.
    pub fn from_env(url: Option<&str>) -> Option<DebuginfodOptions> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let urls: Vec<String> = match url {
            Some(url) => vec![url.to_owned()],
            None => env("DEBUGINFOD_URLS")?
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        };
        if urls.is_empty() {
            return None;
        }
        let cache = env("DEBUGINFOD_CACHE_PATH")
            .map(PathBuf::from)
            .or_else(|| env("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("debuginfod_client")))
            .or_else(|| env("HOME").map(|d| PathBuf::from(d).join(".cache/debuginfod_client")))
            .unwrap_or_else(|| PathBuf::from(".cache/debuginfod_client"));
        let timeout = env("DEBUGINFOD_TIMEOUT")
            .and_then(|t| t.trim().parse::<u64>().ok())
            .filter(|&t| t > 0)
            .unwrap_or(DEFAULT_TIMEOUT_SECS);
        Some(DebuginfodOptions {
            urls,
            cache,
            timeout: Duration::from_secs(timeout),
        })
    }
}

/// A debuginfod client for one report.
pub struct Debuginfod {
    options: DebuginfodOptions,
    client: Option<debuginfod::Client>,
    /// Set by the first failure: no more requests.
    failed: bool,
}

fn warn(line: &str) {
    let _ = writeln!(std::io::stderr(), "memmon: warning: {line}");
}

impl Debuginfod {
    /// A client for `options` (no request is made yet).
    pub fn new(options: &DebuginfodOptions) -> Debuginfod {
        let client = debuginfod::reqwest::blocking::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.timeout)
            .build()
            .map_err(|e| e.to_string())
            .and_then(|http| {
                debuginfod::Client::builder()
                    .http_client(http)
                    .build(options.urls.iter().map(String::as_str))
                    .map_err(|e| format!("{e:#}"))
            });
        let (client, failed) = match client {
            Ok(client) => (client, false),
            Err(e) => {
                warn(&format!(
                    "debuginfod: {e}; objects without symbols show as offsets"
                ));
                (None, true)
            }
        };
        Debuginfod {
            options: options.clone(),
            client,
            failed,
        }
    }

    fn cached(&self, id: &str) -> PathBuf {
        self.options.cache.join(id).join("debuginfo")
    }

    /// The debug file of build ID `id` (of the object at `path`, for the messages):
    /// from the cache, else downloaded (one progress line on stderr) and cached.
    pub fn debug_file(&mut self, id: &str, path: &str) -> Option<PathBuf> {
        if id.len() < 4 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let cached = self.cached(id);
        if cached.is_file() && build_id(&cached).as_deref() == Some(id) {
            return Some(cached);
        }
        if self.failed {
            return None;
        }
        let client = self.client.as_ref()?;
        let _ = writeln!(
            std::io::stderr(),
            "memmon: debuginfod: downloading the debug info of {path} (build ID {id}) from {}",
            self.options.urls.join(" ")
        );
        let wanted = debuginfod::BuildId::Formatted(id.to_owned().into());
        let mut response = match client.fetch_debug_info(&wanted) {
            Ok(Some(response)) => response,
            Ok(None) => return None,
            Err(e) => {
                self.failed = true;
                warn(&format!(
                    "debuginfod: {}: {}; objects without symbols show as offsets",
                    self.options.urls.join(" "),
                    e.root_cause().to_string().replace('\n', " ")
                ));
                return None;
            }
        };
        let server = response.server_url.to_owned();
        let dir = cached.parent()?.to_path_buf();
        let partial = dir.join(format!(".debuginfo.partial-{}", std::process::id()));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::File::create(&partial))
            .and_then(|mut file| std::io::copy(&mut response.data, &mut file));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&partial);
            self.failed = true;
            warn(&format!(
                "debuginfod: {server}: the download for {path} failed ({e}); objects without symbols show as offsets"
            ));
            return None;
        }
        let got = build_id(&partial);
        if got.as_deref() != Some(id) {
            let _ = std::fs::remove_file(&partial);
            // Leave no empty directory behind: the cache holds checked files only.
            let _ = std::fs::remove_dir(&dir);
            warn(&format!(
                "debuginfod: {server} sent a file of build ID {} for {path} (build ID {id}): refused",
                got.as_deref().unwrap_or("none")
            ));
            return None;
        }
        std::fs::rename(&partial, &cached).ok()?;
        Some(cached)
    }
}
