//! The hint for stripped binaries (issue 50): the first rows are raw addresses in an object
//! that is here but has no symbols, and one line says where the names are.

use memmon::report::{report, Format, ReportOptions};

#[test]
fn raw_addresses_of_an_object_without_symbols_give_one_hint_line() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-stripped");
    std::fs::create_dir_all(&dir).unwrap();
    // An object with no symbols at all (not under /usr: no package to name).
    let tool = dir.join("tool");
    std::fs::write(&tool, vec![0u8; 8192]).unwrap();
    let tool = tool.to_string_lossy().into_owned();
    let capture = dir.join("stripped.cap");
    std::fs::write(
        &capture,
        format!(
            "\
# memmon-capture 1
# start 1.000000000
# pids 9
# snapshot maps 9 1.000000000 start
#| 00400000-00401000 r--p 00000000 00:03 5 {tool}
#| 00401000-00402000 r-xp 00001000 00:03 5 {tool}
1.100000000 9/9 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000 stack=0x401100
1.200000000 9/9 fault type=anon access=W addr=0x7f0000000000 ip=0x401230 pages=16 stack=0x401230,0x401100
1.300000000 9/9 exit code=0
"
        ),
    )
    .unwrap();
    let options = ReportOptions {
        format: Format::Text,
        debuginfod: None,
        ..ReportOptions::default()
    };
    let text =
        String::from_utf8(report(std::slice::from_ref(&capture), &options).unwrap()).unwrap();
    let hints: Vec<&str> = text.lines().filter(|l| l.starts_with("hint:")).collect();
    assert_eq!(
        hints,
        ["hint: no symbols for tool (frames shown as object+offset): use --debuginfod (e.g. https://debuginfod.debian.net)"],
        "{text}"
    );
    assert!(text.contains("tool+0x1230"), "{text}");
}
