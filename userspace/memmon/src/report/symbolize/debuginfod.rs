//! Debug files from debuginfod servers, by build ID, with the client of the `debuginfod`
//! crate (blazesym's author's) over reqwest, cached as elfutils caches them
//! (`CACHE/BUILDID/debuginfo`, `CACHE/BUILDID/executable`). A download is checked: a file
//! whose build ID is not the one asked for is refused and not cached. A server that
//! cannot be reached or fails gives one warning on stderr, and no more requests in that
//! report: the objects it would have named show as offsets.
//!
//! The time limits take the variables of elfutils's debuginfod-client (which gdb and perf
//! use), with close meanings (docs/report.md says where they differ):
//! `DEBUGINFOD_TIMEOUT` is how long a server may take to start sending, and then to send
//! more (a transfer that makes no progress for that long ends), not a cap on the whole
//! transfer; `DEBUGINFOD_MAXTIME` caps a whole download and is unset by default. A
//! download runs on a thread of its own that passes the body on in chunks, so that the
//! overall cap holds even while a read waits.

#[cfg(feature = "debuginfod")]
use std::io::Read;
use std::io::Write;
use std::path::PathBuf;
#[cfg(feature = "debuginfod")]
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;
#[cfg(feature = "debuginfod")]
use std::time::Instant;

use super::debug_file::build_id;

/// Which servers, where the cache is, how long a download may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebuginfodOptions {
    /// Server URLs, tried in order.
    pub urls: Vec<String>,
    /// The cache directory.
    pub cache: PathBuf,
    /// How long a server may take to start sending, and then to send more
    /// (`DEBUGINFOD_TIMEOUT`): the connection, the response's headers and each read of
    /// its body must come within it. `None`: no limit.
    pub timeout: Option<Duration>,
    /// How long one download may take as a whole, from its request to its last byte
    /// (`DEBUGINFOD_MAXTIME`). `None` (the default): no limit.
    pub maxtime: Option<Duration>,
}

/// The default of `DEBUGINFOD_TIMEOUT` in seconds, elfutils's.
pub const DEFAULT_TIMEOUT_SECS: u64 = 90;

/// A number of seconds as elfutils reads its variables: more than 0 is a limit, 0 or less
/// is none; unset or not a number, `default`.
fn seconds(value: Option<String>, default: Option<u64>) -> Option<Duration> {
    match value.and_then(|v| v.trim().parse::<i64>().ok()) {
        Some(secs) if secs > 0 => Some(Duration::from_secs(secs.unsigned_abs())),
        Some(_) => None,
        None => default.map(Duration::from_secs),
    }
}

impl DebuginfodOptions {
    /// The options as elfutils takes them from the environment: `url` (`--debuginfod
    /// URL`) or else `DEBUGINFOD_URLS` (URLs separated by spaces); the cache in
    /// `DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
    /// `~/.cache/debuginfod_client`; the time limits in `DEBUGINFOD_TIMEOUT` (seconds,
    /// default [`DEFAULT_TIMEOUT_SECS`]) and `DEBUGINFOD_MAXTIME` (seconds, default none),
    /// 0 or less meaning no limit. `None` without any URL.
    pub fn from_env(url: Option<&str>) -> Option<DebuginfodOptions> {
        DebuginfodOptions::from_vars(url, |name| std::env::var(name).ok())
    }

    /// [`DebuginfodOptions::from_env`] with the variables from `var`.
    pub fn from_vars(
        url: Option<&str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Option<DebuginfodOptions> {
        let env = |name: &str| var(name).filter(|v| !v.trim().is_empty());
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
        Some(DebuginfodOptions {
            urls,
            cache,
            timeout: seconds(env("DEBUGINFOD_TIMEOUT"), Some(DEFAULT_TIMEOUT_SECS)),
            maxtime: seconds(env("DEBUGINFOD_MAXTIME"), None),
        })
    }
}

#[cfg(feature = "debuginfod")]
/// The HTTP client and the debuginfod client over it, shared with the download threads.
struct Clients {
    debuginfod: debuginfod::Client,
    /// The same HTTP client, for executables (the crate asks for debug info only).
    http: debuginfod::reqwest::blocking::Client,
    urls: Vec<String>,
}

/// A debuginfod client for one report.
pub struct Debuginfod {
    options: DebuginfodOptions,
    #[cfg(feature = "debuginfod")]
    clients: Option<Arc<Clients>>,
    /// Set by the first failure: no more requests.
    failed: bool,
    /// The lines for stderr are kept here instead (tests).
    captured: Option<Arc<Mutex<Vec<String>>>>,
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
    #[cfg(feature = "debuginfod")]
    fn what(self) -> &'static str {
        match self {
            Kind::DebugInfo => "the debug info",
            Kind::Executable => "the executable",
        }
    }
}

#[cfg(feature = "debuginfod")]
/// What a download thread tells the report.
enum Message {
    /// A server answered with the file: its URL as given (for the progress line) and as
    /// the warnings name it.
    Start { url: String, server: String },
    /// The next bytes of the file.
    Data(Vec<u8>),
    /// The whole file was sent.
    Done,
    /// No server has the file.
    NotFound,
    /// The request or the transfer failed.
    Failed(String),
}

#[cfg(feature = "debuginfod")]
/// The innermost cause of an error, for the warnings.
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(feature = "debuginfod")]
/// The URL of `urls` that the crate's `server` (the URL parsed, a `/` added) is, as given.
fn given_url(urls: &[String], server: &str) -> String {
    urls.iter()
        .find(|url| {
            url.as_str() == server
                || debuginfod::reqwest::Url::parse(url.trim())
                    .is_ok_and(|parsed| parsed.as_str() == server)
        })
        .cloned()
        .unwrap_or_else(|| server.to_owned())
}

#[cfg(feature = "debuginfod")]
/// A response body, the server's URL as given and as the warnings name it.
type Body<'c> = (Box<dyn Read + 'c>, String, String);

#[cfg(feature = "debuginfod")]
/// One request: `Ok(None)` when no server has the file.
fn request<'c>(clients: &'c Clients, id: &str, kind: Kind) -> Result<Option<Body<'c>>, String> {
    match kind {
        Kind::DebugInfo => {
            let wanted = debuginfod::BuildId::Formatted(id.to_owned().into());
            match clients.debuginfod.fetch_debug_info(&wanted) {
                Ok(Some(response)) => {
                    let server = response.server_url.to_owned();
                    let url = given_url(&clients.urls, &server);
                    Ok(Some((Box::new(response.data), url, server)))
                }
                Ok(None) => Ok(None),
                Err(e) => Err(e.root_cause().to_string()),
            }
        }
        Kind::Executable => {
            let mut error = None;
            for url in &clients.urls {
                let target = format!("{}/buildid/{id}/executable", url.trim_end_matches('/'));
                match clients.http.get(&target).send() {
                    Ok(response) if response.status().is_success() => {
                        return Ok(Some((Box::new(response), url.clone(), url.clone())));
                    }
                    Ok(response) if response.status().as_u16() == 404 => {}
                    Ok(response) => {
                        error.get_or_insert(format!("HTTP status {}", response.status()));
                    }
                    Err(e) => {
                        error.get_or_insert(root_cause(&e));
                    }
                }
            }
            error.map_or(Ok(None), Err)
        }
    }
}

#[cfg(feature = "debuginfod")]
/// A download thread: asks the servers, then passes the body on in chunks until it ends,
/// fails or the report stops listening.
fn download(clients: &Clients, id: &str, kind: Kind, to: &SyncSender<Message>) {
    let (mut body, url, server) = match request(clients, id, kind) {
        Ok(Some(body)) => body,
        Ok(None) => {
            let _ = to.send(Message::NotFound);
            return;
        }
        Err(e) => {
            let _ = to.send(Message::Failed(e));
            return;
        }
    };
    if to.send(Message::Start { url, server }).is_err() {
        return;
    }
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let message = match body.read(&mut buffer) {
            Ok(0) => Message::Done,
            Ok(n) => Message::Data(buffer[..n].to_vec()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => Message::Failed(root_cause(&e)),
        };
        let last = !matches!(message, Message::Data(_));
        if to.send(message).is_err() || last {
            return;
        }
    }
}

#[cfg(feature = "debuginfod")]
/// How long a partial download of a process that is gone must have been left unchanged
/// before another memmon removes it (the process may live in another pid namespace).
const STALE_PARTIAL: Duration = Duration::from_secs(600);

#[cfg(feature = "debuginfod")]
/// Removes from cache directory `dir` the partial downloads (`.KIND.partial-PID`) that a
/// memmon left when it was interrupted: those whose process is gone and that have not
/// changed for [`STALE_PARTIAL`] before `now`.
fn remove_stale_partials(dir: &std::path::Path, now: std::time::SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((_, pid)) = name.to_str().and_then(|name| name.split_once(".partial-")) else {
            continue;
        };
        if !name.to_str().is_some_and(|name| name.starts_with('.'))
            || pid.parse::<u32>().is_err()
            || std::path::Path::new("/proc").join(pid).exists()
        {
            continue;
        }
        let unchanged = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok());
        if unchanged.is_some_and(|age| age >= STALE_PARTIAL) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(feature = "debuginfod")]
/// The next message of a download thread, unless the download's time is up
/// (`deadline`: when, and `DEBUGINFOD_MAXTIME`).
fn receive(from: &Receiver<Message>, deadline: Option<(Instant, Duration)>) -> Message {
    let stopped = || Message::Failed("the download thread stopped".to_owned());
    let Some((at, maxtime)) = deadline else {
        return from.recv().unwrap_or_else(|_| stopped());
    };
    let over = || {
        Message::Failed(format!(
            "not done within DEBUGINFOD_MAXTIME ({} s)",
            maxtime.as_secs()
        ))
    };
    let left = at.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return over();
    }
    match from.recv_timeout(left) {
        Ok(message) => message,
        Err(RecvTimeoutError::Timeout) => over(),
        Err(RecvTimeoutError::Disconnected) => stopped(),
    }
}

impl Debuginfod {
    /// Without the `debuginfod` feature: a client of the cache only, with one warning.
    #[cfg(not(feature = "debuginfod"))]
    pub fn new(options: &DebuginfodOptions) -> Debuginfod {
        let this = Debuginfod {
            options: options.clone(),
            failed: true,
            captured: None,
        };
        this.warn(
            "debuginfod: this memmon was built without the `debuginfod` feature; objects without symbols show as offsets",
        );
        this
    }

    /// A client for `options` (no request is made yet).
    #[cfg(feature = "debuginfod")]
    pub fn new(options: &DebuginfodOptions) -> Debuginfod {
        // reqwest's blocking `timeout` bounds the wait for the response's headers
        // (connecting included) and then each read of the body, each from its own start:
        // elfutils's DEBUGINFOD_TIMEOUT. `None` turns off reqwest's default of 30 s.
        let mut builder = debuginfod::reqwest::blocking::Client::builder().timeout(options.timeout);
        if let Some(timeout) = options.timeout {
            builder = builder.connect_timeout(timeout);
        }
        let clients = builder.build().map_err(|e| e.to_string()).and_then(|http| {
            debuginfod::Client::builder()
                .http_client(http.clone())
                .build(options.urls.iter().map(String::as_str))
                .map_err(|e| format!("{e:#}"))
                .and_then(|client| client.ok_or_else(|| "no server URL".to_owned()))
                .map(|debuginfod| Clients {
                    debuginfod,
                    http,
                    urls: options.urls.clone(),
                })
        });
        let mut this = Debuginfod {
            options: options.clone(),
            clients: None,
            failed: false,
            captured: None,
        };
        match clients {
            Ok(clients) => this.clients = Some(Arc::new(clients)),
            Err(e) => {
                this.failed = true;
                this.warn(&format!(
                    "debuginfod: {e}; objects without symbols show as offsets"
                ));
            }
        }
        this
    }

    /// One line for stderr.
    fn say(&self, line: String) {
        match &self.captured {
            Some(lines) => lines.lock().unwrap_or_else(|e| e.into_inner()).push(line),
            None => {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        }
    }

    fn warn(&self, line: &str) {
        self.say(format!("memmon: warning: {line}"));
    }

    /// The debug file of build ID `id` (of the object at `path`, for the messages):
    /// from the cache, else downloaded (one progress line on stderr once a server sends
    /// it) and cached.
    pub fn debug_file(&mut self, id: &str, path: &str) -> Option<PathBuf> {
        self.fetch(id, path, Kind::DebugInfo)
    }

    /// The executable of build ID `id`, as [`Debuginfod::debug_file`] (for an object
    /// missing here or here in another build: its program headers map the capture's
    /// file offsets).
    pub fn executable(&mut self, id: &str, path: &str) -> Option<PathBuf> {
        self.fetch(id, path, Kind::Executable)
    }

    #[cfg(feature = "debuginfod")]
    /// A request failed: one warning, no more requests.
    fn request_failed(&mut self, error: &str) {
        self.failed = true;
        self.warn(&format!(
            "debuginfod: {}: {}; objects without symbols show as offsets",
            self.options.urls.join(" "),
            error.replace('\n', " ")
        ));
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
        self.download_from_servers(id, path, kind, cached)
    }

    /// Without the `debuginfod` feature, nothing is downloaded.
    #[cfg(not(feature = "debuginfod"))]
    fn download_from_servers(
        &mut self,
        _id: &str,
        _path: &str,
        _kind: Kind,
        _cached: PathBuf,
    ) -> Option<PathBuf> {
        None
    }

    /// Downloads the file of build ID `id` into `cached`.
    #[cfg(feature = "debuginfod")]
    fn download_from_servers(
        &mut self,
        id: &str,
        path: &str,
        kind: Kind,
        cached: PathBuf,
    ) -> Option<PathBuf> {
        let clients = Arc::clone(self.clients.as_ref()?);
        let deadline = self
            .options
            .maxtime
            .map(|maxtime| (Instant::now() + maxtime, maxtime));
        let (to, from) = mpsc::sync_channel(16);
        let wanted = id.to_owned();
        let spawned = std::thread::Builder::new()
            .name("memmon-debuginfod".to_owned())
            .spawn(move || download(&clients, &wanted, kind, &to));
        if let Err(e) = spawned {
            self.request_failed(&e.to_string());
            return None;
        }
        let server = match receive(&from, deadline) {
            Message::Start { url, server } => {
                self.say(format!(
                    "memmon: debuginfod: downloading {} of {path} (build ID {id}) from {url}",
                    kind.what()
                ));
                server
            }
            Message::NotFound => return None,
            Message::Failed(e) => {
                self.request_failed(&e);
                return None;
            }
            Message::Data(_) | Message::Done => {
                self.request_failed("an answer out of order");
                return None;
            }
        };
        let dir = cached.parent()?.to_path_buf();
        remove_stale_partials(&dir, std::time::SystemTime::now());
        let partial = dir.join(format!(".{}.partial-{}", kind.name(), std::process::id()));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::File::create(&partial))
            .map_err(|e| e.to_string())
            .and_then(|mut file| loop {
                match receive(&from, deadline) {
                    Message::Data(bytes) => file.write_all(&bytes).map_err(|e| e.to_string())?,
                    Message::Done => break Ok(()),
                    Message::Failed(e) => break Err(e),
                    Message::Start { .. } | Message::NotFound => {
                        break Err("an answer out of order".to_owned())
                    }
                }
            });
        // The thread stops at its next chunk.
        drop(from);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&partial);
            let _ = std::fs::remove_dir(&dir);
            self.failed = true;
            self.warn(&format!(
                "debuginfod: {server}: the download for {path} failed ({e}); objects without symbols show as offsets"
            ));
            return None;
        }
        let got = build_id(&partial);
        if got.as_deref() != Some(id) {
            let _ = std::fs::remove_file(&partial);
            // Leave no empty directory behind: the cache holds checked files only.
            let _ = std::fs::remove_dir(&dir);
            self.warn(&format!(
                "debuginfod: {server} sent a file of build ID {} for {path} (build ID {id}): refused",
                got.as_deref().unwrap_or("none")
            ));
            return None;
        }
        std::fs::rename(&partial, &cached).ok()?;
        Some(cached)
    }
}

#[cfg(all(test, feature = "debuginfod"))]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;

    /// An ELF file with a build ID (the alloc_sites fixture) and its build ID.
    fn elf() -> &'static (Vec<u8>, String) {
        static ELF: OnceLock<(Vec<u8>, String)> = OnceLock::new();
        ELF.get_or_init(|| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/alloc_sites.gz");
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
                .read_to_end(&mut bytes)
                .unwrap();
            let file =
                std::env::temp_dir().join(format!("memmon-debuginfod-{}-elf", std::process::id()));
            std::fs::write(&file, &bytes).unwrap();
            let id = build_id(&file).unwrap();
            let _ = std::fs::remove_file(&file);
            (bytes, id)
        })
    }

    /// An interrupted memmon's partial download is removed by the next one once its process
    /// is gone and it has been left unchanged long enough; a live process's is kept.
    #[test]
    fn stale_partials_are_removed() {
        let dir = cache("stale");
        std::fs::create_dir_all(&dir).unwrap();
        // Above any pid_max (at most 2^22).
        let gone = dir.join(".debuginfo.partial-4294967");
        let live = dir.join(format!(".debuginfo.partial-{}", std::process::id()));
        let other = dir.join("debuginfo");
        for file in [&gone, &live, &other] {
            std::fs::write(file, b"x").unwrap();
        }
        let now = std::time::SystemTime::now();
        remove_stale_partials(&dir, now);
        assert!(gone.exists(), "a recent partial download is kept");
        remove_stale_partials(&dir, now + STALE_PARTIAL + Duration::from_secs(1));
        assert!(
            !gone.exists(),
            "a stale partial download of a process that is gone"
        );
        assert!(live.exists() && other.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A fresh cache directory.
    fn cache(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("memmon-debuginfod-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// A server on 127.0.0.1 that hands each request (its path and connection) to
    /// `answer` on a thread of its own: its URL and how many connections it accepted.
    fn serve(
        answer: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static,
    ) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let count = Arc::new(AtomicUsize::new(0));
        let (answer, counted) = (Arc::new(answer), Arc::clone(&count));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let answer = Arc::clone(&answer);
                std::thread::spawn(move || {
                    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                    let mut first = String::new();
                    if reader.read_line(&mut first).is_err() {
                        return;
                    }
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                        line.clear();
                    }
                    let path = first.split(' ').nth(1).unwrap_or("").to_owned();
                    answer(&path, &mut stream);
                });
            }
        });
        (url, count)
    }

    fn headers(stream: &mut TcpStream, status: &str, length: usize) {
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
        );
    }

    fn not_found(stream: &mut TcpStream) {
        headers(stream, "404 Not Found", 0);
    }

    /// Sends the ELF file in `parts` parts, `pause` apart.
    fn send_slowly(stream: &mut TcpStream, parts: usize, pause: Duration) {
        let bytes = &elf().0;
        headers(stream, "200 OK", bytes.len());
        for part in bytes.chunks(bytes.len().div_ceil(parts)) {
            std::thread::sleep(pause);
            if stream
                .write_all(part)
                .and_then(|()| stream.flush())
                .is_err()
            {
                return;
            }
        }
    }

    fn client(options: DebuginfodOptions) -> (Debuginfod, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut client = Debuginfod::new(&options);
        client.captured = Some(Arc::clone(&lines));
        (client, lines)
    }

    fn options(urls: &[&str], cache: PathBuf, timeout: u64, maxtime: u64) -> DebuginfodOptions {
        DebuginfodOptions {
            urls: urls.iter().map(|u| (*u).to_owned()).collect(),
            cache,
            timeout: Some(Duration::from_secs(timeout)),
            maxtime: (maxtime > 0).then(|| Duration::from_secs(maxtime)),
        }
    }

    fn lines(captured: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
        captured.lock().unwrap().clone()
    }

    #[test]
    fn options_follow_elfutils() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(DebuginfodOptions::from_vars(None, vars(&[])), None);
        let base = DebuginfodOptions::from_vars(
            None,
            vars(&[("DEBUGINFOD_URLS", "http://a http://b/"), ("HOME", "/h")]),
        )
        .unwrap();
        assert_eq!(base.urls, ["http://a", "http://b/"]);
        assert_eq!(base.cache, PathBuf::from("/h/.cache/debuginfod_client"));
        assert_eq!(base.timeout, Some(Duration::from_secs(90)));
        assert_eq!(base.maxtime, None);
        let limits = |timeout: &'static str, maxtime: &'static str| {
            let pairs: &'static [(&'static str, &'static str)] = Box::leak(Box::new([
                ("DEBUGINFOD_TIMEOUT", timeout),
                ("DEBUGINFOD_MAXTIME", maxtime),
            ]));
            let o = DebuginfodOptions::from_vars(Some("http://c"), vars(pairs)).unwrap();
            (
                o.timeout.map(|d| d.as_secs()),
                o.maxtime.map(|d| d.as_secs()),
            )
        };
        assert_eq!(limits("2", "30"), (Some(2), Some(30)));
        assert_eq!(limits("0", "0"), (None, None));
        assert_eq!(limits("-1", "-5"), (None, None));
        assert_eq!(limits("soon", ""), (Some(90), None));
    }

    #[test]
    fn progress_line_only_for_a_file_being_sent() {
        let (bytes, id) = elf();
        let (missing, _) = serve(|_, stream| not_found(stream));
        let (has, _) = serve(|path, stream| {
            if path.ends_with("/debuginfo") {
                send_slowly(stream, 1, Duration::ZERO);
            } else {
                not_found(stream);
            }
        });
        let dir = cache("progress");
        let (mut client, captured) = client(options(&[&missing, &has], dir.clone(), 10, 0));
        // 404 from both: no line, no warning, and the report goes on asking.
        assert_eq!(client.executable(id, "/bin/x"), None);
        assert_eq!(lines(&captured), Vec::<String>::new());
        // The first server 404s, the second sends: one line, naming the second as given.
        let got = client.debug_file(id, "/bin/x").unwrap();
        assert_eq!(got, dir.join(id).join("debuginfo"));
        assert_eq!(&std::fs::read(&got).unwrap(), bytes);
        assert_eq!(
            lines(&captured),
            [format!(
                "memmon: debuginfod: downloading the debug info of /bin/x (build ID {id}) from {has}"
            )]
        );
        // From the cache: no line.
        assert_eq!(client.debug_file(id, "/bin/x"), Some(got));
        assert_eq!(lines(&captured).len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn timeout_bounds_the_waits_not_the_whole_transfer() {
        let (bytes, id) = elf();
        // Four parts 700 ms apart: 2.8 s in all, with DEBUGINFOD_TIMEOUT=2.
        let (url, _) = serve(|_, stream| send_slowly(stream, 4, Duration::from_millis(700)));
        let dir = cache("slow");
        let (mut client, captured) = client(options(&[&url], dir.clone(), 2, 0));
        let start = Instant::now();
        let got = client.executable(id, "/bin/x");
        let took = start.elapsed();
        assert_eq!(
            got,
            Some(dir.join(id).join("executable")),
            "{:?}",
            lines(&captured)
        );
        assert_eq!(&std::fs::read(got.unwrap()).unwrap(), bytes);
        assert!(took >= Duration::from_millis(2800), "{took:?}");
        assert!(!lines(&captured).iter().any(|l| l.contains("warning")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_transfer_without_progress_ends_after_the_timeout() {
        let (bytes, id) = elf();
        let (url, _) = serve(|_, stream| {
            headers(stream, "200 OK", bytes.len());
            let _ = stream.write_all(&bytes[..bytes.len() / 2]);
            std::thread::sleep(Duration::from_secs(60));
        });
        let dir = cache("stall");
        let (mut client, captured) = client(options(&[&url], dir.clone(), 1, 0));
        let start = Instant::now();
        assert_eq!(client.debug_file(id, "/bin/x"), None);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(5), "{took:?}");
        let lines = lines(&captured);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("memmon: debuginfod: downloading the debug info of /bin/x"));
        assert!(
            lines[1].starts_with(&format!(
                "memmon: warning: debuginfod: {url}/: the download for /bin/x failed ("
            )) && lines[1].ends_with("; objects without symbols show as offsets"),
            "{lines:?}"
        );
        assert!(!dir.join(id).exists(), "something cached");
    }

    #[test]
    fn a_server_that_never_answers_gives_one_warning_after_the_timeout() {
        let (_, id) = elf();
        let (url, count) = serve(|_, _| std::thread::sleep(Duration::from_secs(60)));
        let dir = cache("silent");
        let (mut client, captured) = client(options(&[&url], dir.clone(), 1, 0));
        let start = Instant::now();
        assert_eq!(client.debug_file(id, "/bin/x"), None);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(5),
            "{took:?}"
        );
        // No more requests after a failure.
        assert_eq!(client.executable(id, "/bin/x"), None);
        assert_eq!(count.load(Ordering::SeqCst), 1);
        let lines = lines(&captured);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(&format!("memmon: warning: debuginfod: {url}: "))
                && lines[0].ends_with("objects without symbols show as offsets"),
            "{lines:?}"
        );
        assert!(!dir.join(id).exists());
    }

    #[test]
    fn maxtime_caps_a_download_that_keeps_progressing() {
        let (_, id) = elf();
        // A part every 200 ms, 100 parts: always within DEBUGINFOD_TIMEOUT=5, never
        // within DEBUGINFOD_MAXTIME=1.
        let (url, _) = serve(|_, stream| send_slowly(stream, 100, Duration::from_millis(200)));
        let dir = cache("maxtime");
        let (mut client, captured) = client(options(&[&url], dir.clone(), 5, 1));
        let start = Instant::now();
        assert_eq!(client.executable(id, "/bin/x"), None);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(3),
            "{took:?}"
        );
        let lines = lines(&captured);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[1],
            format!("memmon: warning: debuginfod: {url}: the download for /bin/x failed (not done within DEBUGINFOD_MAXTIME (1 s)); objects without symbols show as offsets")
        );
        assert!(!dir.join(id).exists(), "something cached");
    }
}
