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

/// How deep below the root the walk looks, at most.
const MAX_DEPTH: usize = 16;
/// Directories the walk looks at, at most (a bound on its cost).
const MAX_DIRECTORIES: usize = 100_000;

/// The config's globs.
#[derive(Debug, Clone)]
pub struct Matcher {
    patterns: Vec<Pattern>,
}

impl Matcher {
    /// The globs (relative to the root, checked by [`crate::config::Config::merge`]); a bad
    /// one matches nothing.
    pub fn new(globs: &[String]) -> Matcher {
        Matcher {
            patterns: globs
                .iter()
                .filter_map(|glob| Pattern::new(glob.trim_start_matches('/')).ok())
                .collect(),
        }
    }

    /// Whether the cgroup `name` (`/a/b`) matches a glob. `*`, `?` and `[...]` match
    /// within one path component; `**` any number of them.
    pub fn matches(&self, name: &str) -> bool {
        let relative = name.trim_start_matches('/');
        let options = MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        !relative.is_empty()
            && self
                .patterns
                .iter()
                .any(|pattern| pattern.matches_with(relative, options))
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
