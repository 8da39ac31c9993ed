//! Which cgroups the agent watches: the directories of the cgroup2 hierarchy that the
//! config's globs match, found again every second (cgroups created after the start are
//! picked up, removed ones dropped), and the cgroup files the agent reads
//! (`memory.current`, `memory.max`).
//!
//! A cgroup is named by its path from the root of the hierarchy with a leading `/`, as
//! `/proc/PID/cgroup` and the module's `cgroup path=` lines name it
//! (`/system.slice/foo.service`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use glob::{MatchOptions, Pattern};
use memmon::capture::cgroup::is_glob;

/// How deep below the root the walk looks, at most.
const MAX_DEPTH: usize = 16;
/// Directories the walk looks at, at most (a bound on its cost).
pub const MAX_DIRECTORIES: usize = 100_000;

/// How the globs match: `*`, `?` and `[...]` within one path component.
const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// The config's globs.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// Each glob as the config has it, and its pattern.
    patterns: Vec<(String, Pattern)>,
}

impl Matcher {
    /// The globs (relative to the root, placed and checked by
    /// [`crate::config::Config::merge`]); a bad one matches nothing.
    pub fn new(globs: &[String]) -> Matcher {
        Matcher {
            patterns: globs
                .iter()
                .filter_map(|glob| {
                    let glob = glob.trim_start_matches('/');
                    Some((glob.to_owned(), Pattern::new(glob).ok()?))
                })
                .collect(),
        }
    }

    /// Whether the cgroup `name` (`/a/b`) matches a glob. `*`, `?` and `[...]` match
    /// within one path component; `**` any number of them.
    pub fn matches(&self, name: &str) -> bool {
        let relative = name.trim_start_matches('/');
        !relative.is_empty()
            && self
                .patterns
                .iter()
                .any(|(_, pattern)| pattern.matches_with(relative, OPTIONS))
    }

    /// Whether the config's glob `glob` matches the cgroup `name`.
    fn glob_matches(&self, glob: &str, name: &str) -> bool {
        self.patterns.iter().any(|(text, pattern)| {
            text == glob && pattern.matches_with(name.trim_start_matches('/'), OPTIONS)
        })
    }

    /// The globs that match none of the cgroups `found` ([`Matcher::discover`]), in the
    /// config's order. A glob whose cgroups are below a found one (watched through it,
    /// so not listed) matches.
    pub fn unmatched(&self, found: &BTreeSet<String>) -> Vec<&str> {
        self.patterns
            .iter()
            .filter(|(glob, pattern)| {
                let below_found = || {
                    let literal: Vec<&str> = glob.split('/').take_while(|c| !is_glob(c)).collect();
                    !literal.is_empty()
                        && owner(found, &format!("/{}", literal.join("/"))).is_some()
                };
                !found
                    .iter()
                    .any(|name| pattern.matches_with(name.trim_start_matches('/'), OPTIONS))
                    && !below_found()
            })
            .map(|(glob, _)| glob.as_str())
            .collect()
    }

    /// The cgroups under `root` (the cgroup2 mount) that match: walks the hierarchy.
    /// A cgroup below a matching one is not listed (watching the upper one covers it).
    pub fn discover(&self, root: &Path) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        let mut stack: Vec<(PathBuf, String, usize)> = vec![(root.to_owned(), String::new(), 0)];
        let mut visited = 0;
        while let Some((dir, name, depth)) = stack.pop() {
            visited += 1;
            if visited > MAX_DIRECTORIES {
                break;
            }
            if !name.is_empty() && self.matches(&name) {
                found.insert(name);
                continue;
            }
            if depth >= MAX_DEPTH {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let child = format!("{name}/{}", entry.file_name().to_string_lossy());
                    stack.push((entry.path(), child, depth + 1));
                }
            }
        }
        found
    }
}

/// The globs that match no cgroup, each said once in the log, and once again when it
/// matches one (then once more if it matches none again).
#[derive(Debug, Default)]
pub struct UnmatchedGlobs {
    said: BTreeSet<String>,
}

impl UnmatchedGlobs {
    /// The log lines after a walk of `root` that found `found` with `matcher`: one per glob
    /// that has just stopped matching (or matches nothing from the start), one per glob
    /// said so before that matches now.
    pub fn lines(
        &mut self,
        matcher: &Matcher,
        found: &BTreeSet<String>,
        root: &Path,
    ) -> Vec<String> {
        let unmatched: BTreeSet<&str> = matcher.unmatched(found).into_iter().collect();
        let mut lines = Vec::new();
        for (glob, _) in &matcher.patterns {
            let none = unmatched.contains(glob.as_str());
            if none && self.said.insert(glob.clone()) {
                lines.push(format!(
                    "cgroup glob {glob}: matches no cgroup under {} (said again when one \
                     appears)",
                    root.display()
                ));
            } else if !none && self.said.remove(glob) {
                let names: Vec<&str> = found
                    .iter()
                    .filter(|name| matcher.glob_matches(glob, name))
                    .map(String::as_str)
                    .collect();
                let names = if names.is_empty() {
                    "a cgroup below a watched one".to_owned()
                } else {
                    names.join(", ")
                };
                lines.push(format!("cgroup glob {glob}: now matches {names}"));
            }
        }
        lines
    }

    /// Forgets what was said (after a reload: said again for the new globs).
    pub fn clear(&mut self) {
        self.said.clear();
    }
}

/// The watched cgroup that a process in cgroup `path` belongs to: `path` itself or its
/// nearest ancestor among `watched`.
pub fn owner<'w>(watched: &'w BTreeSet<String>, path: &str) -> Option<&'w String> {
    let mut candidate = path;
    loop {
        if let Some(found) = watched.get(candidate) {
            return Some(found);
        }
        match candidate.rfind('/') {
            Some(0) | None => return None,
            Some(cut) => candidate = &candidate[..cut],
        }
    }
}

/// The systemd unit a cgroup is (its last component when it ends in `.service`,
/// `.scope`, `.slice`, `.socket` or `.mount`), else `""`.
pub fn unit(name: &str) -> &str {
    let last = name.rsplit('/').next().unwrap_or("");
    let units = [".service", ".scope", ".slice", ".socket", ".mount"];
    if units.iter().any(|suffix| last.ends_with(suffix)) {
        last
    } else {
        ""
    }
}

/// `memory.current` and `memory.max` of a cgroup (max None: `max`, no limit, or no
/// memory controller).
pub fn memory_use(root: &Path, name: &str) -> Option<(u64, Option<u64>)> {
    let dir = root.join(name.trim_start_matches('/'));
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).ok();
    let current = read("memory.current")?.trim().parse().ok()?;
    let max = read("memory.max").and_then(|text| text.trim().parse().ok());
    Some((current, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(globs: &[&str]) -> Matcher {
        Matcher::new(&globs.iter().map(|g| g.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn globs_match_within_components() {
        let m = matcher(&["system.slice/*.service", "/work/job-?", "pods/**/app"]);
        assert!(m.matches("/system.slice/foo.service"));
        assert!(m.matches("system.slice/foo.service"));
        assert!(!m.matches("/system.slice/foo.scope"));
        assert!(!m.matches("/system.slice/a/b.service"));
        assert!(!m.matches("/system.slice"));
        assert!(m.matches("/work/job-1"));
        assert!(!m.matches("/work/job-12"));
        assert!(m.matches("/pods/a/b/app"));
        assert!(m.matches("/pods/app"));
        assert!(!m.matches("/"));
    }

    /// A tree of directories: the matching ones are found, not those below them, not the
    /// others; a directory made later is found by the next walk, a removed one is gone.
    #[test]
    fn discovery_walks_the_tree() {
        let root = std::env::temp_dir().join(format!("memmon-agent-cg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in [
            "system.slice/a.service/sub",
            "system.slice/b.service",
            "system.slice/c.scope",
            "user.slice/d.service",
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("system.slice/e.service"), "a file").unwrap();
        let m = matcher(&["system.slice/*.service"]);
        let found: Vec<String> = m.discover(&root).into_iter().collect();
        assert_eq!(
            found,
            ["/system.slice/a.service", "/system.slice/b.service"]
        );
        std::fs::create_dir(root.join("system.slice/f.service")).unwrap();
        std::fs::remove_dir(root.join("system.slice/b.service")).unwrap();
        let found: Vec<String> = m.discover(&root).into_iter().collect();
        assert_eq!(
            found,
            ["/system.slice/a.service", "/system.slice/f.service"]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A glob matching nothing: one line saying which glob and where it looked, not
    /// repeated at the next walks; one line when a cgroup appears that it matches; again
    /// when it matches nothing any more. A glob whose cgroups are below a watched one
    /// matches.
    #[test]
    fn unmatched_globs_said_once() {
        let m = matcher(&["w*", "jobs/*", "jobs/a/deep"]);
        let root = Path::new("/sys/fs/cgroup");
        let set =
            |names: &[&str]| -> BTreeSet<String> { names.iter().map(|n| n.to_string()).collect() };
        let mut said = UnmatchedGlobs::default();
        assert_eq!(
            said.lines(&m, &set(&["/jobs/a"]), root),
            ["cgroup glob w*: matches no cgroup under /sys/fs/cgroup (said again when one appears)"]
        );
        for _ in 0..3 {
            assert!(said.lines(&m, &set(&["/jobs/a"]), root).is_empty());
        }
        assert_eq!(
            said.lines(&m, &set(&["/jobs/a", "/wa", "/wb"]), root),
            ["cgroup glob w*: now matches /wa, /wb"]
        );
        assert!(said.lines(&m, &set(&["/jobs/a", "/wa"]), root).is_empty());
        assert_eq!(
            said.lines(&m, &set(&[]), root),
            [
                "cgroup glob w*: matches no cgroup under /sys/fs/cgroup (said again when one appears)",
                "cgroup glob jobs/*: matches no cgroup under /sys/fs/cgroup (said again when one appears)",
                "cgroup glob jobs/a/deep: matches no cgroup under /sys/fs/cgroup (said again when one appears)",
            ]
        );
        assert!(said.lines(&m, &set(&[]), root).is_empty());
        said.clear();
        assert_eq!(said.lines(&m, &set(&["/jobs/x", "/wa"]), root).len(), 1);
    }

    #[test]
    fn owners_and_units() {
        let watched: BTreeSet<String> = ["/a", "/a/b/c", "/x.service"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            owner(&watched, "/a/b/c/d").map(String::as_str),
            Some("/a/b/c")
        );
        assert_eq!(owner(&watched, "/a/b").map(String::as_str), Some("/a"));
        assert_eq!(
            owner(&watched, "/x.service").map(String::as_str),
            Some("/x.service")
        );
        assert_eq!(owner(&watched, "/ab"), None);
        assert_eq!(owner(&watched, "/"), None);
        assert_eq!(unit("/system.slice/foo.service"), "foo.service");
        assert_eq!(unit("/work/job"), "");
    }
}
