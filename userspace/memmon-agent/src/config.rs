//! The agent's configuration: a TOML file (docs/agent.md) and the flags that override it.
//!
//! Every key has a default; the file may give any of them; a flag given on the command line
//! wins over the file (`--cgroup` replaces the file's whole list, `--label` one label).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use memmon::capture::cgroup::{cgroup2_mounts, mountinfo, place};
use serde::Deserialize;

/// The snapshot interval, by default (seconds).
pub const DEFAULT_INTERVAL: u64 = 600;
/// The Prometheus listen address, by default (loopback only).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";
/// The spool directory, by default.
pub const DEFAULT_SPOOL: &str = "/var/spool/memmon";
/// The spool's size cap, by default (bytes).
pub const DEFAULT_SPOOL_MAX_BYTES: u64 = 256 << 20;
/// Sites (call stacks) kept per cgroup, by default.
pub const DEFAULT_MAX_SITES: usize = 4096;
/// Own-code sites per cgroup in `/metrics`, by default.
pub const DEFAULT_TOP_SITES: usize = 5;
/// memory.current at or above this share of memory.max takes a snapshot, by default.
pub const DEFAULT_NEAR_LIMIT: f64 = 0.9;
/// At most one near-the-limit snapshot per cgroup this often, by default (seconds).
pub const DEFAULT_NEAR_LIMIT_EVERY: u64 = 60;
/// User stack depth the module records, by default (its `stack_depth`).
pub const DEFAULT_STACK_DEPTH: u32 = 32;

/// The configuration file as written: every key optional.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Cgroups to watch: paths or globs, the cgroup2 mount's own (`/sys/fs/cgroup/w*`) or
    /// relative to its root (`w*`, `/w*`).
    pub cgroups: Option<Vec<String>>,
    /// Snapshot interval in seconds.
    pub interval: Option<u64>,
    /// Prometheus listen address (`ADDR:PORT`), or `""` for none.
    pub listen: Option<String>,
    /// Also write the metrics text to this file at every refresh.
    pub metrics_file: Option<PathBuf>,
    /// The cgroup2 mount (by default the first of /proc/self/mountinfo).
    pub cgroup_root: Option<PathBuf>,
    /// User stack depth (module parameter `stack_depth`, 0 to 127).
    pub stack_depth: Option<u32>,
    /// The spool.
    #[serde(default)]
    pub spool: SpoolSection,
    /// Labels added to every snapshot.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The model's and the metrics' bounds.
    #[serde(default)]
    pub limits: LimitsSection,
}

/// `[spool]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpoolSection {
    /// The directory.
    pub dir: Option<PathBuf>,
    /// The size cap: bytes, or a number with K, M, G (KiB, MiB, GiB).
    pub max_size: Option<Size>,
}

/// `[limits]`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    /// Sites kept per cgroup.
    pub max_sites: Option<usize>,
    /// Own-code sites per cgroup in `/metrics`.
    pub top_sites: Option<usize>,
    /// memory.current / memory.max at which a snapshot is taken (0.5 to 1).
    pub near_limit: Option<f64>,
    /// Seconds between two near-the-limit snapshots of one cgroup, at least.
    pub near_limit_every: Option<u64>,
}

/// A size in bytes, written as a number or as a string with a unit (`"256M"`, `"1GiB"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SizeText")]
pub struct Size(pub u64);

#[derive(Deserialize)]
#[serde(untagged)]
enum SizeText {
    Number(u64),
    Text(String),
}

impl TryFrom<SizeText> for Size {
    type Error = String;
    fn try_from(text: SizeText) -> Result<Size, String> {
        match text {
            SizeText::Number(bytes) => Ok(Size(bytes)),
            SizeText::Text(text) => parse_size(&text).map(Size),
        }
    }
}

/// `4096`, `64K`, `256M`, `1G`, `1GiB`, `512MB` (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size (bytes, or a number with K, M or G)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("{text:?}: unknown unit {unit:?} (K, M or G)")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// The flags of `memmon agent` that override the file (None / empty: not given).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Overrides {
    /// `--cgroup GLOB`, repeated (as typed: placed as [`FileConfig::cgroups`]).
    pub cgroups: Vec<String>,
    /// `--listen ADDR:PORT`.
    pub listen: Option<String>,
    /// `--spool DIR`.
    pub spool: Option<PathBuf>,
    /// `--interval SECONDS`.
    pub interval: Option<u64>,
    /// `--label KEY=VALUE`, repeated.
    pub labels: Vec<(String, String)>,
    /// `--metrics-file FILE`.
    pub metrics_file: Option<PathBuf>,
}

/// The configuration in effect.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Cgroup globs, relative to `cgroup_root` (no leading `/`; a glob given as the
    /// mount's own path has the mount taken off).
    pub cgroups: Vec<String>,
    /// Snapshot interval, seconds (at least 1).
    pub interval: u64,
    /// Where `/metrics` is served; None: nowhere.
    pub listen: Option<SocketAddr>,
    /// Where the metrics text is also written.
    pub metrics_file: Option<PathBuf>,
    /// The cgroup2 mount: the file's `cgroup_root`, else the first cgroup2 mount of
    /// /proc/self/mountinfo (empty when there is none and nothing is to be watched).
    pub cgroup_root: PathBuf,
    /// Module `stack_depth` the agent sets.
    pub stack_depth: u32,
    /// Spool directory.
    pub spool_dir: PathBuf,
    /// Spool size cap in bytes.
    pub spool_max_bytes: u64,
    /// Labels of every snapshot (the host's name under `host` unless given).
    pub labels: BTreeMap<String, String>,
    /// Sites kept per cgroup.
    pub max_sites: usize,
    /// Own-code sites per cgroup in `/metrics`.
    pub top_sites: usize,
    /// memory.current / memory.max that takes a snapshot.
    pub near_limit: f64,
    /// Seconds between two near-the-limit snapshots of one cgroup, at least.
    pub near_limit_every: u64,
}

/// `KEY=VALUE` of `--label`.
pub fn parse_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if valid_label_name(key) => Ok((key.to_owned(), value.to_owned())),
        Some((key, _)) => Err(format!(
            "label name {key:?}: letters, digits and _ only, not starting with a digit"
        )),
        None => Err(format!("{text:?}: give KEY=VALUE")),
    }
}

/// A Prometheus / pprof label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl FileConfig {
    /// Parses a configuration text.
    pub fn parse(text: &str) -> Result<FileConfig> {
        Ok(toml::from_str(text)?)
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<FileConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        FileConfig::parse(&text).with_context(|| format!("{}", path.display()))
    }
}

impl Config {
    /// The file's keys, then the flags over them, then the defaults for what neither gave;
    /// `host` names the machine when no `host` label is given; `mountinfo` (a
    /// `/proc/self/mountinfo` text) gives the cgroup2 mounts: the root when the file names
    /// none, and the mount paths taken off globs given as the mount's own paths.
    pub fn merge(
        file: FileConfig,
        flags: &Overrides,
        host: &str,
        mountinfo: &str,
    ) -> Result<Config> {
        let given = if flags.cgroups.is_empty() {
            file.cgroups.unwrap_or_default()
        } else {
            flags.cgroups.clone()
        };
        let mounts = cgroup2_mounts(mountinfo);
        let cgroup_root = match (file.cgroup_root, mounts.first()) {
            (Some(root), _) => root,
            (None, Some(mount)) => mount.clone(),
            (None, None) if given.is_empty() => PathBuf::new(),
            (None, None) => bail!(
                "no cgroup v2 file system is mounted (none in /proc/self/mountinfo): mount \
                 one, or give cgroup_root"
            ),
        };
        let mut cgroups = Vec::new();
        for text in &given {
            let placed = place(text, &mounts, &cgroup_root)?;
            if placed.mount != cgroup_root {
                bail!(
                    "cgroup {text:?}: below the cgroup2 mount {}, not cgroup_root {}",
                    placed.mount.display(),
                    cgroup_root.display()
                );
            }
            let glob = placed.relative;
            if glob.is_empty() {
                bail!("cgroup {text:?}: give a path or glob below the cgroup2 root");
            }
            glob::Pattern::new(&glob).with_context(|| format!("cgroup glob {text:?}"))?;
            cgroups.push(glob);
        }
        let interval = flags.interval.or(file.interval).unwrap_or(DEFAULT_INTERVAL);
        if interval == 0 {
            bail!("interval: give at least 1 second");
        }
        let listen_text = flags
            .listen
            .clone()
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let listen = if listen_text.is_empty() {
            None
        } else {
            Some(
                listen_text
                    .parse::<SocketAddr>()
                    .with_context(|| format!("listen {listen_text:?}: give ADDR:PORT"))?,
            )
        };
        let mut labels = BTreeMap::new();
        labels.insert("host".to_owned(), host.to_owned());
        for (key, value) in file.labels {
            parse_label(&format!("{key}={value}")).map_err(anyhow::Error::msg)?;
            labels.insert(key, value);
        }
        for (key, value) in &flags.labels {
            labels.insert(key.clone(), value.clone());
        }
        for reserved in ["cgroup", "unit", "reason"] {
            if labels.contains_key(reserved) {
                bail!("label {reserved:?} is the agent's own; choose another name");
            }
        }
        let stack_depth = file.stack_depth.unwrap_or(DEFAULT_STACK_DEPTH);
        if stack_depth > 127 {
            bail!("stack_depth {stack_depth}: 0 to 127");
        }
        let near_limit = file.limits.near_limit.unwrap_or(DEFAULT_NEAR_LIMIT);
        if !(0.5..=1.0).contains(&near_limit) {
            bail!("near_limit {near_limit}: 0.5 to 1");
        }
        Ok(Config {
            cgroups,
            interval,
            listen,
            metrics_file: flags.metrics_file.clone().or(file.metrics_file),
            cgroup_root,
            stack_depth,
            spool_dir: flags
                .spool
                .clone()
                .or(file.spool.dir)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_SPOOL)),
            spool_max_bytes: file
                .spool
                .max_size
                .map_or(DEFAULT_SPOOL_MAX_BYTES, |size| size.0),
            labels,
            max_sites: file.limits.max_sites.unwrap_or(DEFAULT_MAX_SITES).max(8),
            top_sites: file.limits.top_sites.unwrap_or(DEFAULT_TOP_SITES),
            near_limit,
            near_limit_every: file
                .limits
                .near_limit_every
                .unwrap_or(DEFAULT_NEAR_LIMIT_EVERY),
        })
    }

    /// The file (if any) merged with the flags, over this process's mounts.
    pub fn load(path: Option<&Path>, flags: &Overrides, host: &str) -> Result<Config> {
        let file = match path {
            Some(path) => FileConfig::load(path)?,
            None => FileConfig::default(),
        };
        Config::merge(file, flags, host, &mountinfo())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mounts of a machine with its cgroup2 hierarchy at /srv/cg2 (not the usual
    /// /sys/fs/cgroup: the root is found, not assumed) and a cgroup v1 one.
    const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
31 22 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 22 0:38 / /srv/cg2 rw,nosuid,relatime shared:7 - cgroup2 cgroup2 rw,nsdelegate
";

    const FILE: &str = r#"
cgroups = ["system.slice/*.service", "/machine.slice/*"]
interval = 300
listen = "0.0.0.0:9100"
stack_depth = 16

[spool]
dir = "/srv/spool"
max_size = "64M"

[labels]
model = "speaker-3"
group = "canary"

[limits]
max_sites = 1000
top_sites = 3
near_limit = 0.95
"#;

    /// The file alone: its values, globs without a leading `/`, the host label added.
    #[test]
    fn file_values() {
        let config = Config::merge(
            FileConfig::parse(FILE).unwrap(),
            &Overrides::default(),
            "box1",
            MOUNTINFO,
        )
        .unwrap();
        assert_eq!(
            config.cgroups,
            ["system.slice/*.service", "machine.slice/*"]
        );
        assert_eq!(config.interval, 300);
        assert_eq!(config.listen, Some("0.0.0.0:9100".parse().unwrap()));
        assert_eq!(config.spool_dir, PathBuf::from("/srv/spool"));
        assert_eq!(config.spool_max_bytes, 64 << 20);
        assert_eq!(config.stack_depth, 16);
        assert_eq!(config.max_sites, 1000);
        assert_eq!(config.top_sites, 3);
        assert_eq!(config.near_limit, 0.95);
        assert_eq!(config.near_limit_every, DEFAULT_NEAR_LIMIT_EVERY);
        let labels: Vec<(&str, &str)> = config
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                ("group", "canary"),
                ("host", "box1"),
                ("model", "speaker-3")
            ]
        );
    }

    /// Flags win: --cgroup replaces the list, --label one label (host too), the others
    /// their key.
    #[test]
    fn flags_win() {
        let flags = Overrides {
            cgroups: vec!["work/*".to_owned()],
            listen: Some("127.0.0.1:9999".to_owned()),
            spool: Some(PathBuf::from("/tmp/s")),
            interval: Some(5),
            labels: vec![
                ("group".to_owned(), "prod".to_owned()),
                ("host".to_owned(), "named".to_owned()),
            ],
            metrics_file: Some(PathBuf::from("/tmp/m.prom")),
        };
        let config =
            Config::merge(FileConfig::parse(FILE).unwrap(), &flags, "box1", MOUNTINFO).unwrap();
        assert_eq!(config.cgroups, ["work/*"]);
        assert_eq!(config.interval, 5);
        assert_eq!(config.listen, Some("127.0.0.1:9999".parse().unwrap()));
        assert_eq!(config.spool_dir, PathBuf::from("/tmp/s"));
        assert_eq!(config.spool_max_bytes, 64 << 20);
        assert_eq!(config.metrics_file, Some(PathBuf::from("/tmp/m.prom")));
        assert_eq!(config.labels["group"], "prod");
        assert_eq!(config.labels["host"], "named");
        assert_eq!(config.labels["model"], "speaker-3");
    }

    /// Nothing given: the defaults.
    #[test]
    fn defaults() {
        let config =
            Config::merge(FileConfig::default(), &Overrides::default(), "h", MOUNTINFO).unwrap();
        assert!(config.cgroups.is_empty());
        assert_eq!(config.interval, 600);
        assert_eq!(config.listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(config.spool_dir, PathBuf::from("/var/spool/memmon"));
        assert_eq!(config.spool_max_bytes, 256 << 20);
        assert_eq!(config.max_sites, 4096);
        assert_eq!(config.top_sites, 5);
        assert_eq!(config.stack_depth, 32);
        assert_eq!(config.cgroup_root, PathBuf::from("/srv/cg2"));
        // An empty listen address: no HTTP server.
        let flags = Overrides {
            listen: Some(String::new()),
            ..Overrides::default()
        };
        let config = Config::merge(FileConfig::default(), &flags, "h", MOUNTINFO).unwrap();
        assert_eq!(config.listen, None);
    }

    /// Bad input is refused with what is wrong.
    #[test]
    fn refused() {
        let error = |text: &str| {
            let file = match FileConfig::parse(text) {
                Ok(file) => file,
                Err(error) => return format!("{error:#}"),
            };
            format!(
                "{:#}",
                Config::merge(file, &Overrides::default(), "h", MOUNTINFO).unwrap_err()
            )
        };
        assert!(error("interval = 0").contains("at least 1 second"));
        assert!(error("intervall = 5").contains("unknown field `intervall`"));
        assert!(error("cgroups = [\"../x\"]").contains("\"..\" is not allowed"));
        assert!(error("cgroups = [\"a/[\"]").contains("cgroup glob"));
        assert!(error("listen = \"localhost\"").contains("give ADDR:PORT"));
        assert!(error("[spool]\nmax_size = \"3T\"").contains("unknown unit"));
        assert!(error("[labels]\ncgroup = \"x\"").contains("the agent's own"));
        assert!(error("[labels]\n\"a-b\" = \"x\"").contains("letters, digits and _"));
        assert!(error("[limits]\nnear_limit = 0.2").contains("0.5 to 1"));
        assert!(error("stack_depth = 128").contains("0 to 127"));
        let deepest = FileConfig::parse("stack_depth = 127").unwrap();
        let deepest = Config::merge(deepest, &Overrides::default(), "h", MOUNTINFO).unwrap();
        assert_eq!(deepest.stack_depth, 127);
    }

    /// `--cgroup` as users type it: the mount's own path and the path relative to its root
    /// are the same glob; the root is the mount of mountinfo unless the file gives one.
    #[test]
    fn cgroups_as_typed() {
        let globs = |given: &[&str]| -> Result<Vec<String>> {
            let flags = Overrides {
                cgroups: given.iter().map(|g| g.to_string()).collect(),
                ..Overrides::default()
            };
            Ok(Config::merge(FileConfig::default(), &flags, "h", MOUNTINFO)?.cgroups)
        };
        assert_eq!(
            globs(&[
                "/srv/cg2/wa",
                "wa",
                "/wa",
                "/srv/cg2/w*",
                "/srv/cg2//jobs/./*/"
            ])
            .unwrap(),
            ["wa", "wa", "wa", "w*", "jobs/*"]
        );
        // The mount's own path of another machine's layout, a cgroup v1 path, /tmp: not in
        // the cgroup2 mount, one error naming it.
        for given in ["/sys/fs/cgroup/w*", "/sys/fs/cgroup/memory/wa", "/tmp/wa"] {
            assert_eq!(
                format!("{:#}", globs(&[given]).unwrap_err()),
                format!(
                    "--cgroup {given}: not in a cgroup v2 file system (cgroup2 mounts: /srv/cg2)"
                )
            );
        }
        assert!(
            format!("{:#}", globs(&["/srv/cg2"]).unwrap_err()).contains("below the cgroup2 root")
        );
        // The file's cgroup_root: relative globs are below it, its own paths lose it.
        let file =
            FileConfig::parse("cgroup_root = \"/srv/cg2\"\ncgroups = [\"/srv/cg2/a\", \"b\"]")
                .unwrap();
        let config = Config::merge(file, &Overrides::default(), "h", "").unwrap();
        assert_eq!(config.cgroups, ["a", "b"]);
        assert_eq!(config.cgroup_root, PathBuf::from("/srv/cg2"));
        // No cgroup2 mount and no cgroup_root: refused when there is something to watch.
        let flags = Overrides {
            cgroups: vec!["wa".to_owned()],
            ..Overrides::default()
        };
        let error = Config::merge(FileConfig::default(), &flags, "h", "").unwrap_err();
        assert!(format!("{error:#}").contains("no cgroup v2 file system is mounted"));
        assert!(Config::merge(FileConfig::default(), &Overrides::default(), "h", "").is_ok());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("256 MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("M").is_err());
        assert_eq!(parse_label("model=x=y"), Ok(("model".into(), "x=y".into())));
        assert!(parse_label("9a=b").is_err());
    }
}
