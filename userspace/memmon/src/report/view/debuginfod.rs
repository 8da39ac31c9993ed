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
    /// The same HTTP client, for executables (the crate asks for debug info only).
    http: Option<debuginfod::reqwest::blocking::Client>,
    /// Set by the first failure: no more requests.
    failed: bool,
}

fn warn(line: &str) {
    let _ = writeln!(std::io::stderr(), "memmon: warning: {line}");
}

/// What is asked for: `/buildid/ID/debuginfo` or `/buildid/ID/executable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    DebugInfo,
    Executable,
}

impl Kind {
    /// The name in URLs and in the cache.
    fn name(self) -> &'static str {
        match self {
            Kind::DebugInfo => "debuginfo",
            Kind::Executable => "executable",
        }
    }

    /// For the progress line.
    fn what(self) -> &'static str {
        match self {
            Kind::DebugInfo => "the debug info",
            Kind::Executable => "the executable",
        }
    }
}

/// A response body and the server that sent it.
type Body = (Box<dyn std::io::Read>, String);

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
                    .http_client(http.clone())
                    .build(options.urls.iter().map(String::as_str))
                    .map(|client| (client, http))
                    .map_err(|e| format!("{e:#}"))
            });
        let (client, http, failed) = match client {
            Ok((client, http)) => (client, Some(http), false),
            Err(e) => {
                warn(&format!(
                    "debuginfod: {e}; objects without symbols show as offsets"
                ));
                (None, None, true)
            }
        };
        Debuginfod {
            options: options.clone(),
            client,
            http,
            failed,
        }
    }

    /// The debug file of build ID `id` (of the object at `path`, for the messages):
    /// from the cache, else downloaded (one progress line on stderr) and cached.
    pub fn debug_file(&mut self, id: &str, path: &str) -> Option<PathBuf> {
        self.fetch(id, path, Kind::DebugInfo)
    }

    /// The executable of build ID `id`, as [`Debuginfod::debug_file`] (for an object
    /// missing here or here in another build: its program headers map the capture's
    /// file offsets).
    pub fn executable(&mut self, id: &str, path: &str) -> Option<PathBuf> {
        self.fetch(id, path, Kind::Executable)
    }

    /// One request: `Ok(None)` when no server has the file.
    fn request(&self, id: &str, kind: Kind) -> Result<Option<Body>, String> {
        match kind {
            Kind::DebugInfo => {
                let client = self.client.as_ref().ok_or("no client")?;
                let wanted = debuginfod::BuildId::Formatted(id.to_owned().into());
                match client.fetch_debug_info(&wanted) {
                    Ok(Some(response)) => {
                        let server = response.server_url.to_owned();
                        Ok(Some((Box::new(response.data), server)))
                    }
                    Ok(None) => Ok(None),
                    Err(e) => Err(e.root_cause().to_string()),
                }
            }
            Kind::Executable => {
                let http = self.http.as_ref().ok_or("no client")?;
                let mut error = None;
                for url in &self.options.urls {
                    let target = format!("{}/buildid/{id}/executable", url.trim_end_matches('/'));
                    match http.get(&target).send() {
                        Ok(response) if response.status().is_success() => {
                            return Ok(Some((Box::new(response), url.clone())));
                        }
                        Ok(response) if response.status().as_u16() == 404 => {}
                        Ok(response) => {
                            error.get_or_insert(format!("HTTP status {}", response.status()));
                        }
                        Err(e) => {
                            let mut cause: &dyn std::error::Error = &e;
                            while let Some(next) = cause.source() {
                                cause = next;
                            }
                            error.get_or_insert(cause.to_string());
                        }
                    }
                }
                error.map_or(Ok(None), Err)
            }
        }
    }

    fn fetch(&mut self, id: &str, path: &str, kind: Kind) -> Option<PathBuf> {
        if id.len() < 4 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let cached = self.options.cache.join(id).join(kind.name());
        if cached.is_file() && build_id(&cached).as_deref() == Some(id) {
            return Some(cached);
        }
        if self.failed {
            return None;
        }
        let _ = writeln!(
            std::io::stderr(),
            "memmon: debuginfod: downloading {} of {path} (build ID {id}) from {}",
            kind.what(),
            self.options.urls.join(" ")
        );
        let (mut data, server) = match self.request(id, kind) {
            Ok(Some(body)) => body,
            Ok(None) => return None,
            Err(e) => {
                self.failed = true;
                warn(&format!(
                    "debuginfod: {}: {}; objects without symbols show as offsets",
                    self.options.urls.join(" "),
                    e.replace('\n', " ")
                ));
                return None;
            }
        };
        let dir = cached.parent()?.to_path_buf();
        let partial = dir.join(format!(".{}.partial-{}", kind.name(), std::process::id()));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::File::create(&partial))
            .and_then(|mut file| std::io::copy(&mut data, &mut file));
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
