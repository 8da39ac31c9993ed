//! A hint for stripped binaries: when the report's top sites or own-code rows are raw
//! addresses in an object without symbols (`xz+0x5230`, Debian's stripped binaries), one
//! line says where the names are: the Debian debug package (`P-dbgsym` of the package
//! that owns the file, from the `debian-debug` archive) when it can be known and its
//! debug file is not installed, and `--debuginfod`.

use std::collections::HashMap;
use std::path::Path;

use crate::report::model::sites::SiteTable;
use crate::report::symbolize::symbols::{basename, is_unnamed};
use crate::report::view::memory::{shown_sites, View};

/// The most objects the hint names.
const NAMED: usize = 3;

/// An object with unnamed frames among the rows a report shows first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnnamedObject {
    /// Its path, as the capture names it.
    pub path: String,
    /// Its build ID, when the capture recorded one.
    pub build_id: Option<String>,
}

/// The objects whose frames are unnamed (`object+0xoffset`) among the first `top` site
/// rows and own-code rows of `view`, in the order they first appear.
pub fn unnamed_objects(view: &View, sites: &SiteTable, top: usize) -> Vec<UnnamedObject> {
    let rows = shown_sites(&view.sites, &view.runtime_work);
    // Every object of the view's rows by file name: own-code rows name a function only.
    let mut by_name: HashMap<&str, u32> = HashMap::new();
    for row in &view.sites {
        for object in row.objects.iter().flatten() {
            by_name
                .entry(basename(sites.object_path(*object)))
                .or_insert(*object);
        }
    }
    let mut found: Vec<u32> = Vec::new();
    let mut add = |object: u32| {
        if !found.contains(&object) {
            found.push(object);
        }
    };
    for function in view.your_code.functions.iter().take(top) {
        let name = function.function.split("+0x").next().unwrap_or_default();
        if let Some(&object) = by_name.get(name) {
            if is_unnamed(&function.function, sites.object_path(object)) {
                add(object);
            }
        }
    }
    for row in rows.iter().take(top) {
        for (frame, object) in row.frames.iter().zip(&row.objects) {
            if let Some(object) = *object {
                if is_unnamed(&frame.function, sites.object_path(object)) {
                    add(object);
                }
            }
        }
    }
    found
        .into_iter()
        .map(|object| UnnamedObject {
            path: sites.object_path(object).to_owned(),
            build_id: sites.object_build_id(object).map(str::to_owned),
        })
        .collect()
}

/// The hint line for `objects` (none without any): `owner` gives the Debian package that
/// owns a file (`dpkg -S`: [`dpkg_owner`]), `debug_installed` whether the debug file of
/// a build ID is installed ([`debug_file_installed`]); `debuginfod` whether the report
/// already asked a debuginfod server.
pub fn stripped_hint(
    objects: &[UnnamedObject],
    owner: &dyn Fn(&str) -> Option<String>,
    debug_installed: &dyn Fn(&str) -> bool,
    debuginfod: bool,
) -> Option<String> {
    if objects.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = objects
        .iter()
        .take(NAMED)
        .map(|o| basename(&o.path))
        .collect();
    let more = objects.len().saturating_sub(NAMED);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    names.dedup();
    let mut packages: Vec<String> = Vec::new();
    for object in objects {
        if object.build_id.as_deref().is_some_and(debug_installed) {
            continue;
        }
        if let Some(package) = owner(&object.path) {
            let debug = format!("{package}-dbgsym");
            if !packages.contains(&debug) && packages.len() < NAMED {
                packages.push(debug);
            }
        }
    }
    let mut ways = Vec::new();
    if !packages.is_empty() {
        ways.push(format!(
            "install {} (Debian's debian-debug archive)",
            packages.join(", ")
        ));
    }
    ways.push(if debuginfod {
        "the debuginfod server asked had no debug file for them: try another (--debuginfod URL)"
            .to_owned()
    } else {
        "use --debuginfod (e.g. https://debuginfod.debian.net)".to_owned()
    });
    Some(format!(
        "hint: no symbols for {}{more} (frames shown as object+offset): {}",
        names.join(", "),
        ways.join(", or ")
    ))
}

/// The Debian package that owns `path` (`dpkg -S PATH`), for a file under `/usr` (or
/// `/bin`, `/sbin`, `/lib*`, which merged-/usr Debian installs under `/usr`); none
/// without dpkg or when no package owns it.
pub fn dpkg_owner(path: &str) -> Option<String> {
    let under_usr = ["/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/"]
        .iter()
        .any(|prefix| path.starts_with(prefix));
    if !under_usr {
        return None;
    }
    let mut tries = vec![path.to_owned()];
    if !path.starts_with("/usr/") {
        tries.push(format!("/usr{path}"));
    }
    tries.into_iter().find_map(|path| {
        let output = std::process::Command::new("dpkg")
            .args(["-S", &path])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !output.status.success() {
            return None;
        }
        parse_dpkg_owner(&String::from_utf8_lossy(&output.stdout))
    })
}

/// The package of `dpkg -S`'s first line (`xz-utils: /usr/bin/xz`,
/// `liblzma5:amd64: /usr/lib/x86_64-linux-gnu/liblzma.so.5.6.4`), without its
/// architecture; none for a diversion's line or several packages.
pub fn parse_dpkg_owner(output: &str) -> Option<String> {
    let line = output.lines().find(|line| !line.starts_with("diversion"))?;
    let (packages, _) = line.split_once(": ")?;
    if packages.contains(',') {
        return None;
    }
    let package = packages.split(':').next()?.trim();
    (!package.is_empty()).then(|| package.to_owned())
}

/// Whether `/usr/lib/debug/.build-id/xx/yyyy.debug` exists for build ID `id` under
/// `root` (`/` here, or a sysroot).
pub fn debug_file_installed(root: &Path, id: &str) -> bool {
    if id.len() < 3 {
        return false;
    }
    root.join("usr/lib/debug/.build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]))
        .is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpkg_lines_give_their_package() {
        assert_eq!(
            parse_dpkg_owner("xz-utils: /usr/bin/xz\n").as_deref(),
            Some("xz-utils")
        );
        assert_eq!(
            parse_dpkg_owner("liblzma5:amd64: /usr/lib/x86_64-linux-gnu/liblzma.so.5\n").as_deref(),
            Some("liblzma5")
        );
        assert_eq!(parse_dpkg_owner("a, b: /usr/share/x\n"), None);
        assert_eq!(parse_dpkg_owner(""), None);
        // Not under /usr: dpkg is not asked.
        assert_eq!(dpkg_owner("/tmp/prog"), None);
    }

    #[test]
    fn one_line_names_the_objects_and_their_debug_packages() {
        let object = |path: &str, id: &str| UnnamedObject {
            path: path.to_owned(),
            build_id: Some(id.to_owned()),
        };
        let objects = [
            object("/usr/bin/xz", "aa01"),
            object("/usr/lib/x86_64-linux-gnu/liblzma.so.5", "bb02"),
            object("/opt/tool", "cc03"),
        ];
        let owner = |path: &str| match path {
            "/usr/bin/xz" => Some("xz-utils".to_owned()),
            "/usr/lib/x86_64-linux-gnu/liblzma.so.5" => Some("liblzma5".to_owned()),
            _ => None,
        };
        // liblzma's debug file is installed (its names are not the missing ones).
        let installed = |id: &str| id == "bb02";
        assert_eq!(
            stripped_hint(&objects, &owner, &installed, false).unwrap(),
            "hint: no symbols for xz, liblzma.so.5, tool (frames shown as object+offset): install xz-utils-dbgsym (Debian's debian-debug archive), or use --debuginfod (e.g. https://debuginfod.debian.net)"
        );
        let nothing = |_: &str| None;
        let never = |_: &str| false;
        assert_eq!(
            stripped_hint(&objects[2..], &nothing, &never, true).unwrap(),
            "hint: no symbols for tool (frames shown as object+offset): the debuginfod server asked had no debug file for them: try another (--debuginfod URL)"
        );
        assert_eq!(stripped_hint(&[], &owner, &never, false), None);
    }
}
