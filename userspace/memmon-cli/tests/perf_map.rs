//! Perf maps (JIT and interpreter frames): `memmon record` copies the `/tmp/perf-PID.map`
//! of the recorded process into the capture, and `memmon report` names the frames in
//! generated code from it. The program is tests/fixtures/jit.c (built here with gcc): it
//! copies a function into an anonymous executable mapping, writes its perf map and runs
//! it over 64 KiB. The module is faked (an empty event stream under --proc-root), so the
//! faults of that run are added to the recorded capture by hand, at the addresses the
//! program printed: 16 first-touch faults with ip and stack in the generated code.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memmon-perf-map-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A directory with plain files named like the module's (no events).
fn fake_proc_root(dir: &Path) -> PathBuf {
    let root = dir.join("memmon");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("events"), "").unwrap();
    fs::write(root.join("watch-pids"), "\n").unwrap();
    fs::write(root.join("stats"), "produced 0\ndelivered 0\n").unwrap();
    fs::write(root.join("marker"), "").unwrap();
    root
}

fn hex(text: &str) -> u64 {
    u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
}

/// The recorded capture with the program's faults added, the program's pid, and the
/// code's address.
fn record_jit(dir: &Path) -> (String, u32, u64) {
    let program = dir.join("jit");
    let status = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&program)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jit.c"))
        .status()
        .expect("gcc");
    assert!(status.success());
    let capture = dir.join("capture.txt");
    let output = Command::new(env!("CARGO_BIN_EXE_memmon"))
        .env_remove("MEMMON_PROC_ROOT")
        .arg("--proc-root")
        .arg(fake_proc_root(dir))
        .args(["record", "--quiet", "-o"])
        .arg(&capture)
        .arg("--")
        .arg(&program)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // "code 0xADDR buffer 0xADDR"
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words.len(), 4, "{stdout}");
    let (code, buffer) = (hex(words[1]), hex(words[3]));
    let mut text = fs::read_to_string(&capture).unwrap();
    let pid: u32 = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("# snapshot maps ")?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .unwrap();
    let _ = fs::remove_file(format!("/tmp/perf-{pid}.map"));
    // The copied perf map: the program's one line.
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!("# snapshot perf-map {pid} ")))
        .collect();
    assert!(!block.is_empty(), "no perf-map snapshot of {pid}:\n{text}");
    assert!(block[0].ends_with(" end"), "{}", block[0]);
    assert_eq!(block[1], format!("#| {code:x} 14 jit_touch"));
    assert!(!block[2].starts_with("#|"), "{}", block[2]);
    // The faults the module would have sent: the buffer's mmap, then one write fault
    // per page from the generated code's store (code + 7).
    let start: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("# start ")?.parse().ok())
        .unwrap();
    let ip = code + 7;
    let mut events = format!(
        "{:.9} {pid}/{pid} mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret={buffer:#x}\n",
        start + 0.001
    );
    for page in 0..16u64 {
        events.push_str(&format!(
            "{:.9} {pid}/{pid} fault type=anon access=W addr={:#x} ip={ip:#x} stack={ip:#x}\n",
            start + 0.002 + page as f64 * 1e-6,
            buffer + page * 4096
        ));
    }
    let at = text.find("# end ").unwrap();
    text.insert_str(at, &events);
    (text, pid, code)
}

/// The top site's innermost function and resident bytes in `memmon report --format json`.
fn top_site(capture: &Path) -> (String, u64) {
    let output = Command::new(env!("CARGO_BIN_EXE_memmon"))
        .args(["report", "--format", "json", "--no-debuginfod"])
        .arg(capture)
        .output()
        .unwrap();
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let site = &json["sites"][0];
    (
        site["frames"][0]["function"].as_str().unwrap().to_owned(),
        site["resident"].as_u64().unwrap(),
    )
}

#[test]
fn record_copies_the_perf_map_and_report_names_the_jit_frames() {
    let dir = temp_dir("jit");
    let (text, pid, code) = record_jit(&dir);
    let capture = dir.join("with-map.txt");
    fs::write(&capture, &text).unwrap();
    assert_eq!(top_site(&capture), ("jit_touch".to_owned(), 65536));
    // The control: without the perf map the same frames are bare addresses.
    let (header, map_line) = (
        format!("# snapshot perf-map {pid} "),
        format!("#| {code:x} 14 jit_touch"),
    );
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with(&header) && *l != map_line)
        .map(|l| format!("{l}\n"))
        .collect();
    let capture = dir.join("without-map.txt");
    fs::write(&capture, without).unwrap();
    assert_eq!(top_site(&capture), (format!("[{:#x}]", code + 7), 65536));
    let _ = fs::remove_dir_all(&dir);
}
