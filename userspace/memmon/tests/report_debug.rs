//! Split debug files: the fixture capture base.cap (tests/report/, the program
//! alloc_sites, built with gcc -g) reported with the binary stripped and its debug info
//! in a file of `objcopy --only-keep-debug`, found by build ID or by `.gnu_debuglink`,
//! names every frame of every site as the unstripped binary does. Needs binutils
//! (objcopy, strip) on the host. And names stored in the capture by
//! `record --symbolize` ([`symbolize_capture`]) serve a report without the binaries.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use memmon::report::symbolize::symbols::{FrameInfo, SymbolOptions};
use memmon::report::{prepare, symbolize_capture, Moment, ReportOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn run(program: &str, args: &[&str], dir: &Path) {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap_or_else(|e| panic!("{program}: {e} (the test needs binutils)"));
    assert!(status.success(), "{program} {args:?} failed");
}

/// The build ID base.cap records for /host/alloc_sites.
fn capture_build_id() -> String {
    std::fs::read_to_string(fixture("base.cap"))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("# buildid ")?
                .strip_suffix(" /host/alloc_sites")
        })
        .expect("a build ID for /host/alloc_sites in the capture")
        .to_owned()
}

/// The files of the test, in one directory made once: `full` (the unstripped fixture),
/// `alloc_sites.debug` (its debug info), `stripped` (no symbols, no debuglink),
/// `linked` (stripped, with a .gnu_debuglink to alloc_sites.debug), and
/// `other.debug` (the debug info of the other build, alloc_sites5).
fn files() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("report-debug-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (gz, name) in [("alloc_sites.gz", "full"), ("alloc_sites5.gz", "full5")] {
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(std::fs::File::open(fixture(gz)).unwrap())
                .read_to_end(&mut bytes)
                .unwrap();
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        run(
            "objcopy",
            &["--only-keep-debug", "full", "alloc_sites.debug"],
            &dir,
        );
        run(
            "objcopy",
            &["--only-keep-debug", "full5", "other.debug"],
            &dir,
        );
        run("strip", &["--strip-all", "-o", "stripped", "full"], &dir);
        run(
            "objcopy",
            &[
                "--add-gnu-debuglink=alloc_sites.debug",
                "stripped",
                "linked",
            ],
            &dir,
        );
        dir
    })
    .clone()
}

/// A fresh root for one case.
fn root(name: &str) -> PathBuf {
    let root = files().join(name);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    root
}

fn put(from: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(files().join(from), to).unwrap();
}

/// Every site's frames (innermost first) and resident bytes at the end (what the program
/// kept: keep_cache, reheat and load_table lead), in the report's order, and the symbol
/// warnings about /host/alloc_sites (the capture's /usr/bin/memmon, the recorder before its
/// exec, is not in the test's roots).
fn report(sysroot: &Path, debug_dirs: &[PathBuf]) -> (Vec<(Vec<FrameInfo>, u64)>, Vec<String>) {
    report_of(&fixture("base.cap"), sysroot, debug_dirs)
}

fn report_of(
    capture: &Path,
    sysroot: &Path,
    debug_dirs: &[PathBuf],
) -> (Vec<(Vec<FrameInfo>, u64)>, Vec<String>) {
    let options = ReportOptions {
        sysroot: Some(sysroot.to_path_buf()),
        debug_dirs: debug_dirs.to_vec(),
        at: Some(Moment::End),
        ..ReportOptions::default()
    };
    let view = prepare(&[capture.to_path_buf()], &options).unwrap().view;
    (
        view.sites
            .iter()
            .map(|row| (row.frames.clone(), row.resident))
            .collect(),
        view.symbol_warnings
            .into_iter()
            .filter(|w| w.contains("/host/alloc_sites"))
            .collect(),
    )
}

/// The report with the unstripped binary: what every split case must give.
fn baseline() -> &'static Vec<(Vec<FrameInfo>, u64)> {
    static BASE: OnceLock<Vec<(Vec<FrameInfo>, u64)>> = OnceLock::new();
    BASE.get_or_init(|| {
        let root = root("unstripped");
        put("full", &root.join("host/alloc_sites"));
        let (sites, warnings) = report(&root, &[]);
        assert_eq!(warnings, Vec::<String>::new());
        sites
    })
}

/// What the split debug file must give as the unstripped binary does: every site's
/// resident bytes and the frames that debug info names with file:line (all of
/// alloc_sites.c's), in a stable order. Frames of the static glibc, which has symbols
/// but no DWARF, are only required to be named (not `alloc_sites+0x...`): of aliases
/// at one address (`mmap`, `__mmap64`) blazesym picks either.
fn same_as_baseline(sites: &[(Vec<FrameInfo>, u64)]) {
    fn located(sites: &[(Vec<FrameInfo>, u64)]) -> Vec<(u64, Vec<FrameInfo>)> {
        let mut out: Vec<(u64, Vec<FrameInfo>)> = sites
            .iter()
            .map(|(frames, resident)| {
                (
                    *resident,
                    frames
                        .iter()
                        .filter(|f| f.location().is_some())
                        .cloned()
                        .collect(),
                )
            })
            .collect();
        out.sort();
        out
    }
    assert_eq!(sites.len(), baseline().len());
    assert_eq!(located(sites), located(baseline()));
    let unnamed: Vec<&FrameInfo> = sites
        .iter()
        .flat_map(|(frames, _)| frames)
        .filter(|f| f.function.starts_with("alloc_sites+"))
        .collect();
    assert_eq!(unnamed, Vec::<&FrameInfo>::new());
}

/// The innermost function and file:line of the site holding the most.
fn top(sites: &[(Vec<FrameInfo>, u64)]) -> (String, Option<String>) {
    let frame = &sites[0].0[0];
    (frame.function.clone(), frame.location())
}

#[test]
fn baseline_names_the_sites_with_lines() {
    let base = baseline();
    assert_eq!(
        top(base),
        (
            "keep_cache".to_owned(),
            Some("/work/main/tests/report/alloc_sites.c:63".to_owned())
        )
    );
    // 31 sites (memmon's own image before the exec is one label, where its frames were
    // 7 sites), 6 of them with alloc_sites.c frames (the fixture's file names its build
    // directory), none unnamed.
    assert_eq!(base.len(), 31);
    let with_lines = base
        .iter()
        .filter(|(frames, _)| frames.iter().any(|f| f.location().is_some()))
        .count();
    assert_eq!(with_lines, 6);
    assert!(base.iter().all(|(frames, _)| frames
        .iter()
        .all(|f| !f.function.starts_with("alloc_sites+"))));
    let functions: Vec<&str> = base
        .iter()
        .take(3)
        .map(|(frames, _)| frames[0].function.as_str())
        .collect();
    assert_eq!(functions, ["keep_cache", "reheat", "load_table"]);
}

#[test]
fn the_stripped_binary_alone_gives_offsets() {
    // The control: without a debug file nothing names keep_cache.
    let root = root("stripped-alone");
    put("stripped", &root.join("host/alloc_sites"));
    let (sites, _) = report(&root, &[]);
    assert!(sites
        .iter()
        .all(|(frames, _)| frames.iter().all(|f| f.function != "keep_cache")));
    assert!(
        sites[0].0[0].function.starts_with("alloc_sites+0x"),
        "{:?}",
        sites[0].0[0]
    );
}

#[test]
fn debuglink_beside_the_binary() {
    let root = root("link-beside");
    put("linked", &root.join("host/alloc_sites"));
    put("alloc_sites.debug", &root.join("host/alloc_sites.debug"));
    let (sites, warnings) = report(&root, &[]);
    assert_eq!(warnings, Vec::<String>::new());
    same_as_baseline(&sites);
}

#[test]
fn debuglink_in_the_binarys_debug_directory() {
    let root = root("link-dot-debug");
    put("linked", &root.join("host/alloc_sites"));
    put(
        "alloc_sites.debug",
        &root.join("host/.debug/alloc_sites.debug"),
    );
    let (sites, _) = report(&root, &[]);
    same_as_baseline(&sites);
}

#[test]
fn debuglink_under_a_debug_dir() {
    // gdb's layout: DIR/<the binary's directory>/NAME.
    let root = root("link-debug-dir");
    put("linked", &root.join("host/alloc_sites"));
    let dir = root.join("debug");
    put("alloc_sites.debug", &dir.join("host/alloc_sites.debug"));
    let (sites, _) = report(&root, &[dir]);
    same_as_baseline(&sites);
}

#[test]
fn build_id_under_a_debug_dir() {
    let id = capture_build_id();
    let root = root("build-id-debug-dir");
    put("stripped", &root.join("host/alloc_sites"));
    let dir = root.join("debug");
    let file = dir
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]));
    put("alloc_sites.debug", &file);
    // An empty --debug-dir first: the search goes on to the next.
    let (sites, warnings) = report(&root, &[root.join("empty"), dir]);
    assert_eq!(warnings, Vec::<String>::new());
    same_as_baseline(&sites);
}

#[test]
fn build_id_under_the_sysroots_usr_lib_debug() {
    let id = capture_build_id();
    let root = root("build-id-sysroot");
    put("stripped", &root.join("host/alloc_sites"));
    put(
        "alloc_sites.debug",
        &root
            .join("usr/lib/debug/.build-id")
            .join(&id[..2])
            .join(format!("{}.debug", &id[2..])),
    );
    let (sites, _) = report(&root, &[]);
    same_as_baseline(&sites);
}

#[test]
fn a_debug_file_of_another_build_is_not_used() {
    // The debuglink's name, the other build's debug info: refused by build ID.
    let root = root("link-other-build");
    put("linked", &root.join("host/alloc_sites"));
    put("other.debug", &root.join("host/alloc_sites.debug"));
    let (sites, _) = report(&root, &[]);
    assert!(sites[0].0[0].function.starts_with("alloc_sites+0x"));
}

#[test]
fn a_debug_file_without_its_binary_is_named_in_a_warning() {
    // The file offsets of the capture need the binary's program headers.
    let id = capture_build_id();
    let root = root("debug-only");
    let dir = root.join("debug");
    put(
        "alloc_sites.debug",
        &dir.join(".build-id")
            .join(&id[..2])
            .join(format!("{}.debug", &id[2..])),
    );
    let (sites, warnings) = report(&root, &[dir]);
    assert!(sites[0].0[0].function.starts_with("alloc_sites+0x"));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("/host/alloc_sites: only its debug file ")
            && warnings[0].contains("it needs the binary"),
        "{warnings:?}"
    );
}

/// base.cap with the names of its frames stored by [`symbolize_capture`] with the
/// unstripped binary (as `record --symbolize` does on the record machine).
fn symbolized_capture() -> (PathBuf, usize) {
    static CAPTURE: OnceLock<(PathBuf, usize)> = OnceLock::new();
    CAPTURE
        .get_or_init(|| {
            let root = root("symbolize-source");
            put("full", &root.join("host/alloc_sites"));
            let capture = files().join("symbolized.cap");
            std::fs::copy(fixture("base.cap"), &capture).unwrap();
            let options = SymbolOptions {
                sysroot: Some(root),
                ..SymbolOptions::default()
            };
            let count = symbolize_capture(&capture, &options).unwrap();
            (capture, count)
        })
        .clone()
}

#[test]
fn symbolize_stores_one_symbol_line_per_named_frame() {
    let (capture, count) = symbolized_capture();
    let text = std::fs::read_to_string(&capture).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("# symbol "))
        .collect();
    assert_eq!(lines.len(), count);
    // Every code frame of /host/alloc_sites the sites use (the capture's /usr/bin/memmon
    // is not in the root: its frames are not stored).
    assert_eq!(count, 42);
    assert!(lines.iter().all(|l| l.starts_with("# symbol {\"frames\":[")
        && l.contains("\"object\":\"/host/alloc_sites\"")));
    assert!(lines.iter().any(|l| l.contains(
        "{\"file\":\"/work/main/tests/report/alloc_sites.c\",\"function\":\"keep_cache\",\"line\":63}"
    )));
    // The capture still reads as before: the original lines come first, unchanged.
    let original = std::fs::read_to_string(fixture("base.cap")).unwrap();
    assert!(text.starts_with(&original));
}

#[test]
fn stored_names_serve_a_report_without_the_binary() {
    let (capture, _) = symbolized_capture();
    let root = root("symbolized-no-binary");
    let (sites, warnings) = report_of(&capture, &root, &[]);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(&sites, baseline());
}

#[test]
fn stored_names_win_over_another_build() {
    let (capture, _) = symbolized_capture();
    let root = root("symbolized-other-build");
    put("full5", &root.join("host/alloc_sites"));
    let (sites, warnings) = report_of(&capture, &root, &[]);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(&sites, baseline());
    // The control: without stored names the other build is used, with the warning.
    let (_, warnings) = report(&root, &[]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("/host/alloc_sites: build ID "));
}

#[test]
fn the_capture_build_resymbolises() {
    // Stored names renamed: the binary of the capture's build names afresh; without it
    // the stored (renamed) names are used.
    let (capture, _) = symbolized_capture();
    let text = std::fs::read_to_string(&capture)
        .unwrap()
        .lines()
        .map(|l| {
            if l.starts_with("# symbol ") {
                l.replace("\"keep_cache\"", "\"stored_keep_cache\"")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let renamed = files().join("renamed.cap");
    std::fs::write(&renamed, text + "\n").unwrap();
    let root = root("resymbolise");
    put("full", &root.join("host/alloc_sites"));
    let (sites, _) = report_of(&renamed, &root, &[]);
    assert_eq!(&sites, baseline());
    let (sites, _) = report_of(&renamed, &files().join("no-such-root"), &[]);
    assert_eq!(sites[0].0[0].function, "stored_keep_cache");
    assert_eq!(
        sites[0].0[0].location().as_deref(),
        Some("/work/main/tests/report/alloc_sites.c:63")
    );
}
