//! Command-line tests that run without the kernel module: decoding captures, error
//! messages and exit codes, and the control commands against a fake /proc root (plain
//! files standing in for the module's).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use memmon::{CaptureReader, Record, SnapshotSource};

const CAPTURE: &str = "\
# memmon-capture 1
# kernel 6.8.0
# snapshot maps 212 5.100020000 start
#| 00400000-00401000 r-xp 00000000 08:01 1234 /bin/true
5.103884211 212/212 mmap addr=0x0 len=139264 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f5a2c1e4000
5.103901002 212/212 fault type=anon access=W addr=0x7f5a2c1e4010 ip=0x401d2f
5.103901003 300/300 fault type=file access=R addr=0x400000 ip=0x0 user=0
5.104010777 212/212 munmap addr=0x7f5a2c1e4000 len=139264 ret=0
5.104012000 212/212 fsync fd=1 ret=0
5.104012001 0/0 lost count=3
5.104100000 212/212 exit code=768
";

fn memmon() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memmon"));
    command.env_remove("MEMMON_PROC_ROOT");
    command
}

fn run(command: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = command.stdin(Stdio::null()).output().unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8(stdout).unwrap(),
        String::from_utf8(stderr).unwrap(),
    )
}

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memmon-cli-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A directory with plain files named like the module's.
fn fake_proc_root(name: &str) -> PathBuf {
    let root = temp_dir(name).join("memmon");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("events"), "").unwrap();
    fs::write(root.join("watch-pids"), "\n").unwrap();
    fs::write(
        root.join("stats"),
        "produced 123\ndelivered 120\noverwritten 3\nfault 100\n",
    )
    .unwrap();
    fs::write(root.join("marker"), "").unwrap();
    root
}

fn capture_file(name: &str) -> PathBuf {
    let path = temp_dir(name).join("capture.txt");
    fs::write(&path, CAPTURE).unwrap();
    path
}

#[test]
fn help_lists_the_commands() {
    let (code, stdout, _) = run(memmon().arg("--help"));
    assert_eq!(code, 0);
    for command in ["run", "attach", "detach", "list", "tail", "record", "stats"] {
        assert!(
            stdout.contains(command),
            "{command} missing from:\n{stdout}"
        );
    }
    let (code, stdout, _) = run(memmon().args(["record", "--help"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("--pid"));
}

#[test]
fn tail_decodes_a_capture_file() {
    let path = capture_file("tail-human");
    let (code, stdout, stderr) = run(memmon().arg("tail").arg("--input").arg(&path));
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "212: mmap(0x0, 139264, rw-, PRIVATE|ANONYMOUS, fd -1) -> 0x7f5a2c1e4000",
            "212: anon page @0x7f5a2c1e4010 (W)",
            "300: file page @0x400000 (R) [kernel]",
            "212: munmap(0x7f5a2c1e4000, 139264) -> 0",
            "212: fsync(1) -> 0",
            "*** 3 events lost (overwritten before they were read) ***",
            "212: exit: exited 3",
        ]
    );
    assert!(stderr.contains("3 events were lost"), "{stderr}");
}

#[test]
fn tail_filters_by_pid_and_kind() {
    let path = capture_file("tail-filter");
    let (code, stdout, _) = run(memmon()
        .args([
            "tail",
            "--pid",
            "212",
            "--kind",
            "fault,fsync",
            "--time",
            "--input",
        ])
        .arg(&path));
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "5.103901002 212: anon page @0x7f5a2c1e4010 (W)\n\
         5.104012000 212: fsync(1) -> 0\n\
         5.104012001 *** 3 events lost (overwritten before they were read) ***\n"
    );
    let (code, _, stderr) = run(memmon().args(["tail", "--kind", "bogus", "--input", "-"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("bogus"), "{stderr}");
}

#[test]
fn tail_prints_json_from_stdin() {
    let mut child = memmon()
        .args(["tail", "--json", "--input", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(CAPTURE.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    let objects: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(objects.len(), 7);
    assert_eq!(objects[0]["kind"], "mmap");
    assert_eq!(objects[0]["ret"], "0x7f5a2c1e4000");
    assert_eq!(objects[1]["type"], "anon");
    assert_eq!(objects[6]["code"], 768);
}

#[test]
fn tail_reports_bad_lines_with_their_number() {
    let path = temp_dir("tail-bad").join("bad.txt");
    fs::write(
        &path,
        "5.104012000 212/212 fsync fd=1 ret=0\n5.104012000 212/212 fsync fd=one ret=0\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(memmon().arg("tail").arg("-i").arg(&path));
    assert_eq!(code, 1);
    assert_eq!(stdout, "212: fsync(1) -> 0\n");
    assert!(
        stderr.contains("line 2: bad value \"one\" for key `fd`"),
        "{stderr}"
    );
    assert!(stderr.contains("memmon: error:"), "{stderr}");
    let (code, _, stderr) = run(memmon().args(["tail", "--input", "/nonexistent/capture"]));
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("memmon: error: cannot open /nonexistent/capture"),
        "{stderr}"
    );
}

#[test]
fn missing_module_is_one_clear_error() {
    for args in [
        &["list"][..],
        &["stats"],
        &["attach", "1"],
        &["detach", "--all"],
        &["tail"],
        &["mark", "hello"],
        &["run", "--", "true"],
    ] {
        let (code, stdout, stderr) = run(memmon()
            .args(["--proc-root", "/nonexistent/memmon"])
            .args(args));
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(stdout, "");
        assert_eq!(
            stderr,
            "memmon: error: memmon module not loaded (/nonexistent/memmon does not exist)\n",
            "{args:?}"
        );
    }
    // The environment variable works too.
    let (code, _, stderr) = run(memmon()
        .env("MEMMON_PROC_ROOT", "/nonexistent/x")
        .arg("list"));
    assert_eq!(code, 1);
    assert!(stderr.contains("not loaded"));
}

#[test]
fn control_commands_write_the_module_syntax() {
    let root = fake_proc_root("control");
    // Plain files are not truncated by a write the way the module's are: empty them first.
    let written = |args: &[&str], name: &str| {
        fs::write(root.join(name), "").unwrap();
        let (code, _, stderr) = run(memmon().arg("--proc-root").arg(&root).args(args));
        assert_eq!(code, 0, "{args:?}: {stderr}");
        fs::read_to_string(root.join(name)).unwrap()
    };
    assert_eq!(written(&["attach", "42", "43"], "watch-pids"), "42 43\n");
    assert_eq!(
        written(&["attach", "--follow", "44"], "watch-pids"),
        "+44\n"
    );
    assert_eq!(written(&["detach", "42"], "watch-pids"), "-42\n");
    assert_eq!(written(&["detach", "--all"], "watch-pids"), "0\n");
    assert_eq!(written(&["mark", "phase", "two"], "marker"), "phase two\n");

    let me = std::process::id();
    fs::write(root.join("watch-pids"), format!("{me}\n")).unwrap();
    let (code, stdout, _) = run(memmon().arg("--proc-root").arg(&root).arg("list"));
    assert_eq!(code, 0);
    assert!(stdout.starts_with(&format!("{me} ")), "{stdout}");

    let (code, stdout, _) = run(memmon().arg("--proc-root").arg(&root).arg("stats"));
    assert_eq!(code, 0);
    // The kernel memmon runs on first (uname -r and -v), then the module's figures.
    let uts = nix::sys::utsname::uname().unwrap();
    assert_eq!(
        stdout,
        format!(
            "kernel       {} {}\nproduced     123\ndelivered    120\noverwritten  3\nfault        100\n",
            uts.release().to_string_lossy(),
            uts.version().to_string_lossy()
        )
    );

    fs::write(root.join("watch-pids"), "12,x\n").unwrap();
    let (code, _, stderr) = run(memmon().arg("--proc-root").arg(&root).arg("list"));
    assert_eq!(code, 1);
    assert!(stderr.contains("unexpected content"), "{stderr}");
}

#[test]
fn run_exits_with_the_command_status() {
    let root = fake_proc_root("run");
    let (code, _, stderr) = run(memmon()
        .arg("--proc-root")
        .arg(&root)
        .args(["run", "--", "sh", "-c", "exit 3"]));
    assert_eq!(code, 3, "{stderr}");
    // Without the module no exit event arrives; memmon says so and still finishes.
    assert!(stderr.contains("exit event did not arrive"), "{stderr}");
    // The last write removed the child from the watch set.
    assert!(fs::read_to_string(root.join("watch-pids"))
        .unwrap()
        .starts_with('-'));

    let (code, _, _) = run(memmon().arg("--proc-root").arg(&root).args([
        "run",
        "--follow",
        "--",
        "sh",
        "-c",
        "kill -KILL $$",
    ]));
    assert_eq!(code, 128 + 9);
}

#[test]
fn run_reports_a_command_that_cannot_start() {
    let root = fake_proc_root("run-missing");
    let (code, _, stderr) =
        run(memmon()
            .arg("--proc-root")
            .arg(&root)
            .args(["run", "--", "/nonexistent/program"]));
    assert_eq!(code, 1);
    assert_eq!(
        stderr,
        "memmon: error: cannot run /nonexistent/program: No such file or directory\n"
    );
}

#[test]
fn run_streams_the_command_events() {
    // A fake stream holding an event of an earlier process with the pid the child will
    // get is impossible to arrange; check instead that old events are skipped.
    let root = fake_proc_root("run-old");
    fs::write(root.join("events"), "0.000000001 1/1 fsync fd=1 ret=0\n").unwrap();
    let (code, stdout, _) = run(memmon()
        .arg("--proc-root")
        .arg(&root)
        .args(["run", "--", "true"]));
    assert_eq!(code, 0);
    assert_eq!(stdout, "");
}

#[test]
fn record_command_writes_a_readable_capture() {
    let root = fake_proc_root("record");
    let capture = root.parent().unwrap().join("capture.txt");
    let (code, _, stderr) = run(memmon()
        .arg("--proc-root")
        .arg(&root)
        .args(["record", "-o"])
        .arg(&capture)
        .args(["--", "sh", "-c", "exit 0"]));
    assert_eq!(code, 0, "{stderr}");
    let text = fs::read_to_string(&capture).unwrap();
    let headers = read_capture(&capture);
    let has_cgroup2_path = memmon::capture::cgroup::unified_cgroup(
        &fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
    )
    .is_some();
    // `# buildid` lines name the mapped files (memmon itself, its libraries).
    assert!(headers
        .0
        .iter()
        .any(|(key, value)| key == "buildid" && value.contains("memmon")));
    let keys: Vec<&str> = headers
        .0
        .iter()
        .map(|(key, _)| key.as_str())
        .filter(|key| *key != "buildid")
        .collect();
    assert_eq!(
        keys,
        [
            "memmon-capture",
            "kernel",
            "kernel-build",
            "page-size",
            "module-version",
            "start",
            "start-unix",
            "command",
            // The command's cgroup (issue 27), from /proc/PID/cgroup at its start.
            "cgroup",
            "end"
        ]
        .into_iter()
        .filter(|key| *key != "buflen")
        // Only where processes have a cgroup v2 path (a `0::` line).
        .filter(|key| *key != "cgroup" || has_cgroup2_path)
        .collect::<Vec<_>>(),
        "{text}"
    );
    let snapshots = headers.1;
    let reasons = snapshot_reasons(&snapshots);
    assert_eq!(
        reasons,
        [
            ("start", SnapshotSource::Maps),
            ("start", SnapshotSource::Status),
            ("end", SnapshotSource::Maps),
            ("end", SnapshotSource::Status),
        ],
        "{text}"
    );
    // The start snapshot is of the held child: it has an address space.
    assert!(!snapshots[0].2.is_empty(), "{text}");
    assert!(
        snapshots[1].2.iter().any(|line| line.starts_with("VmRSS")),
        "{text}"
    );
}

/// Headers and (reason, source, lines) of the snapshots of a capture.
type CaptureSummary = (
    Vec<(String, String)>,
    Vec<(String, SnapshotSource, Vec<String>)>,
);

/// The (reason, source) of each snapshot of a [`read_capture`], in order.
fn snapshot_reasons(
    snapshots: &[(String, SnapshotSource, Vec<String>)],
) -> Vec<(&str, SnapshotSource)> {
    snapshots
        .iter()
        .map(|(reason, source, _)| (reason.as_str(), *source))
        .collect()
}

fn read_capture(path: &Path) -> CaptureSummary {
    let file = std::io::BufReader::new(fs::File::open(path).unwrap());
    let mut reader = CaptureReader::new(file);
    let (mut headers, mut snapshots) = (Vec::new(), Vec::new());
    while let Some(record) = reader.next_record() {
        match record.unwrap().1 {
            Record::Header { key, value } => headers.push((key, value)),
            Record::Snapshot(snapshot) => {
                snapshots.push((snapshot.reason, snapshot.source, snapshot.lines))
            }
            Record::Event(_) => {}
        }
    }
    (headers, snapshots)
}

#[test]
fn record_pids_stops_cleanly_on_sigint() {
    let root = fake_proc_root("record-pids");
    let capture = root.parent().unwrap().join("capture.txt");
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    // Asleep (in clock_nanosleep or nanosleep): its start-up's pages are all in, and the
    // fake module records none of its faults.
    let syscall = format!("/proc/{}/syscall", sleeper.id());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !fs::read_to_string(&syscall)
        .is_ok_and(|text| text.starts_with("230 ") || text.starts_with("35 "))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let recorder = memmon()
        .arg("--proc-root")
        .arg(&root)
        .args(["record", "-o"])
        .arg(&capture)
        .args(["-p", &sleeper.id().to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let status = Command::new("kill")
        .args(["-INT", &recorder.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = recorder.wait_with_output().unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let (headers, snapshots) = read_capture(&capture);
    assert!(headers
        .iter()
        .any(|(key, value)| key == "pids" && *value == sleeper.id().to_string()));
    let reasons = snapshot_reasons(&snapshots);
    assert_eq!(
        reasons,
        [
            ("start", SnapshotSource::Maps),
            // What the sleeper held when memmon began to watch it.
            ("start", SnapshotSource::Pages),
            ("start", SnapshotSource::Status),
            ("end", SnapshotSource::Maps),
            ("end", SnapshotSource::Status),
        ]
    );
    // Its program's pages, in runs of its mappings.
    let sleep_code = snapshots[0]
        .2
        .iter()
        .filter_map(|line| memmon::report::model::maps::MapsLine::parse(line))
        .find(|maps| maps.path.contains("sleep"))
        .unwrap();
    let runs: Vec<memmon::capture::resident::PageRun> = snapshots[1]
        .2
        .iter()
        .map(|line| memmon::capture::resident::PageRun::parse(line).unwrap())
        .collect();
    assert!(
        runs.iter()
            .any(|run| run.start < sleep_code.end && run.end > sleep_code.start),
        "{snapshots:?}"
    );
    // The model holds what the kernel counts: the sleeper's end status, to the byte.
    let analysis =
        memmon::report::analyze(std::slice::from_ref(&capture), Default::default()).unwrap();
    let end = analysis.comparisons.last().unwrap();
    assert_eq!(end.label, format!("end of {}", sleeper.id()));
    assert_eq!(end.model.anon, end.counters.anon);
    assert_eq!(
        end.model.file + end.model.shmem,
        end.counters.file + end.counters.shmem
    );
    assert!(end.start_pages);
    // The sleeper was alive at the end: its maps are there.
    assert!(
        snapshots[3].2.iter().any(|line| line.contains("sleep")),
        "{snapshots:?}"
    );
    assert_eq!(
        fs::read_to_string(root.join("watch-pids")).unwrap(),
        format!("-{}\n", sleeper.id())
    );
}

#[test]
fn run_forwards_ctrl_c_to_the_command() {
    let root = fake_proc_root("run-sigint");
    let memmon_run = memmon()
        .arg("--proc-root")
        .arg(&root)
        .args(["run", "--", "sleep", "30"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let status = Command::new("kill")
        .args(["-INT", &memmon_run.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = memmon_run.wait_with_output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    // sleep dies of the forwarded SIGINT: 128 + 2.
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
}

fn report_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../memmon/tests/fixtures")
        .join(name)
}

#[test]
fn report_text_and_errors() {
    // No sysroot: the binaries are not found, so sites are object+offset, never an error.
    let (code, stdout, stderr) = run(memmon()
        .args(["report", "--top", "3"])
        .arg(report_fixture("base.cap")));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("RSS tree"), "{stdout}");
    assert!(stdout.contains("alloc_sites+0x"), "{stdout}");
    // The peak by default, the end in the same line; the table file came after the peak.
    assert_eq!(
        stdout.lines().nth(1),
        Some("at the peak, 826 ms: resident 11.7 MiB (anon 11.1 MiB, file 652 KiB, shmem 0 B), swapped 0 B, mapped 12.0 MiB; at the end: 5.7 MiB (--at end)"),
        "{stdout}"
    );
    assert!(!stdout.contains("/tmp/alloc_sites.table"), "{stdout}");
    let (code, peak, _) = run(memmon()
        .args(["report", "--top", "3", "--at", "peak"])
        .arg(report_fixture("base.cap")));
    assert_eq!((code, peak.as_str()), (0, stdout.as_str()));
    let (code, end, stderr) = run(memmon()
        .args(["report", "--top", "3", "--at", "end"])
        .arg(report_fixture("base.cap")));
    assert_eq!(code, 0, "{stderr}");
    assert!(end.lines().nth(1).unwrap().starts_with("at the end (each process's last state before it released its memory): resident 5.7 MiB "), "{end}");
    assert!(end.contains("/tmp/alloc_sites.table"), "{end}");
    for (at, error) in [
        ("nope", "memmon: error: no mark \"nope\" in the capture (marks: \"start\", \"after-keep\", \"after-scratch\", \"after-table\", \"after-reheat\", \"end\")\n"),
        ("9s", "memmon: error: --at 9.0 s: the capture ends 2.2 s after its start\n"),
    ] {
        let (code, _, stderr) = run(memmon()
            .args(["report", "--at", at])
            .arg(report_fixture("base.cap")));
        assert_eq!((code, stderr.as_str()), (1, error));
    }
    let (code, stdout, _) = run(memmon()
        .args(["report", "--at", "1500ms"])
        .arg(report_fixture("base.cap")));
    assert_eq!(code, 0);
    assert!(
        stdout
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("at 1.5 s: resident "),
        "{stdout}"
    );
    let (_, help, _) = run(memmon().args(["report", "--help"]));
    assert!(help.contains("--at <peak|end|MARK|TIME>"), "{help}");
    let (code, _, stderr) = run(memmon().args(["report", "/nonexistent/cap"]));
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("memmon: error: cannot open /nonexistent/cap"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1);
    let (code, _, stderr) = run(memmon()
        .args(["report", "--diff"])
        .arg(report_fixture("base.cap")));
    assert_eq!(code, 1);
    assert!(stderr.contains("--diff takes two captures"), "{stderr}");
    let dir = temp_dir("report");
    let svg = dir.join("flame.svg");
    let (code, _, stderr) = run(memmon()
        .args(["report", "--format", "svg", "--weight", "faults", "-o"])
        .arg(&svg)
        .arg(report_fixture("base.cap")));
    assert_eq!(code, 0, "{stderr}");
    assert!(fs::read_to_string(&svg).unwrap().contains("<svg"));
}

/// A large event stream for `record -p PID`: faults with stacks of `pid` (most of it),
/// of other processes (dropped), of a forked child before and after its parent's `fork`
/// line, lines older than the watch, `lost`, `mark`, `exec`, undecodable lines, and the
/// exits that end the recording. Several MiB, so lines straddle the reader's buffer.
fn large_stream(pid: u32, child: u32) -> String {
    let stack: Vec<String> = (0..16)
        .map(|depth| format!("{:#x}", 0x55d0_0040_1005_u64 + depth * 0x1000))
        .collect();
    let stack = stack.join(",");
    let mut text = String::new();
    let secs = 40_000_000; // after any CLOCK_MONOTONIC reading of the test machine
    for index in 0..40_000u64 {
        let time = format!("{}.{:09}", secs + index / 1000, index % 1000 * 1000 + 7);
        let addr = 0x7f00_0000_0010 + (index % 512) * 0x1000;
        let line = match index % 1000 {
            10 => format!("0.000000001 {pid}/{pid} fault type=anon access=W addr={addr:#x} ip=0x401005"),
            20 => format!("{time} {} fault type=file access=R addr={addr:#x} ip=0x401005 stack={stack}", pid + 1),
            30 => format!("{time} 0/0 lost count=3"),
            40 => format!("{time} {pid}/{pid} fsync fd=one ret=0"),
            50 => format!("{time} {pid}/{} fault type=anon access=W addr={addr:#x} ip=0x401005 stack={stack}", pid + 2),
            60 if index < 1000 => format!("{time} {pid}/{pid} exec comm=prog filename=/bin/prog"),
            70 => format!("{time} 77/77 mark text=phase\\x20{index}"),
            80 => format!("{time} {child}/{child} fault type=anon access=W addr={addr:#x} ip=0x401005 stack={stack} pages=1"),
            90 if index / 1000 == 5 => format!("{time} {pid}/{pid} fork child={child} watched=1"),
            95 if index / 1000 == 30 => format!("{time} {child}/{child} exit code=0"),
            100 => format!("{time} {pid}/{pid} mmap addr=0x0 len=1048576 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret={addr:#x} dur=2000 stack={stack}"),
            110 => format!("{time} {pid}/{pid} fault type=bogus access=W addr={addr:#x} ip=0x401005"),
            120 => format!("  {time} {pid}/{pid} fault type=wp access=W addr={addr:#x} ip=0x401005 stack={stack}"),
            _ => format!("{time} {pid}/{pid} fault type=anon access=W addr={addr:#x} ip=0x401005 stack={stack}"),
        };
        text.push_str(&line);
        text.push('\n');
        if index % 997 == 0 {
            text.push('\n'); // empty lines are skipped
        }
    }
    text.push_str(&format!(
        "{}.000000000 {pid}/{pid} exit code=0\n",
        secs + 41
    ));
    text
}

/// What `record -p PID` wrote before the live reader was made faster, for `stream`: the
/// old loop (full parse of every line), with snapshots as `# snapshot SOURCE PID REASON`.
fn expected_capture(stream: &str, pid: u32) -> Vec<String> {
    use std::collections::{BTreeSet, VecDeque};
    struct Old {
        out: Vec<String>,
        followed: BTreeSet<u32>,
        orphans: VecDeque<(u32, String)>,
    }
    fn snapshot(out: &mut Vec<String>, pid: u32, reason: &str) {
        out.push(format!("# snapshot maps {pid} {reason}"));
        // What the process held when the recording began (new since).
        if reason == "start" {
            out.push(format!("# snapshot pages {pid} {reason}"));
        }
        out.push(format!("# snapshot status {pid} {reason}"));
    }
    fn handle(old: &mut Old, line: &str) {
        let Ok(event) = memmon::parse_line(line) else {
            return;
        };
        match event.kind {
            memmon::EventKind::Lost { .. } => return old.out.push(line.to_owned()),
            _ if event.time.secs < 40_000_000 => return,
            memmon::EventKind::Mark { .. } => {
                old.out.push(line.to_owned());
                for pid in old.followed.clone() {
                    snapshot(&mut old.out, pid, "mark");
                }
                return;
            }
            _ => {}
        }
        if !old.followed.contains(&event.pid) {
            if old.orphans.len() == 4096 {
                old.orphans.pop_front();
            }
            old.orphans.push_back((event.pid, line.to_owned()));
            return;
        }
        old.out.push(line.to_owned());
        match event.kind {
            memmon::EventKind::Fork {
                child,
                watched: true,
            } => {
                old.followed.insert(child);
                let (early, others): (VecDeque<_>, VecDeque<_>) =
                    old.orphans.drain(..).partition(|(pid, _)| *pid == child);
                old.orphans = others;
                for (_, line) in early {
                    handle(old, &line);
                }
            }
            memmon::EventKind::Exec { .. } => snapshot(&mut old.out, event.pid, "exec"),
            memmon::EventKind::Exit { .. } => {
                old.followed.remove(&event.pid);
            }
            _ => {}
        }
    }
    let mut old = Old {
        out: Vec::new(),
        followed: BTreeSet::from([pid]),
        orphans: VecDeque::new(),
    };
    snapshot(&mut old.out, pid, "start");
    for line in stream.lines().filter(|line| !line.is_empty()) {
        handle(&mut old, line);
    }
    old.out
}

#[test]
fn record_keeps_a_large_stream_exactly() {
    let root = fake_proc_root("record-large");
    let capture = root.parent().unwrap().join("capture.txt");
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id();
    let child = pid + 1_000_000;
    let stream = large_stream(pid, child);
    assert!(stream.len() > 8 << 20, "{}", stream.len());
    fs::write(root.join("events"), &stream).unwrap();
    // The stream ends with the exits of both recorded processes: record stops by itself.
    let output = memmon()
        .arg("--proc-root")
        .arg(&root)
        .args(["record", "-q", "-o"])
        .arg(&capture)
        .args(["-p", &pid.to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("events were lost"), "{stderr}");
    assert!(stderr.contains("skipping undecodable event"), "{stderr}");
    let text = fs::read_to_string(&capture).unwrap();
    let recorded: Vec<String> = text
        .lines()
        .filter(|line| !line.starts_with("#|") && !line.starts_with("# buildid"))
        .filter_map(|line| match line.strip_prefix("# ") {
            Some(header) => {
                let fields: Vec<&str> = header.split(' ').collect();
                (fields[0] == "snapshot")
                    .then(|| format!("# snapshot {} {} {}", fields[1], fields[2], fields[4]))
            }
            None => Some(line.to_owned()),
        })
        .collect();
    let expected = expected_capture(&stream, pid);
    assert!(expected.len() > 35_000, "{}", expected.len());
    assert_eq!(recorded.len(), expected.len());
    for (index, (got, want)) in recorded.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "line {index} of the normalised capture");
    }
    assert!(text.ends_with('\n') && text.lines().last().unwrap().starts_with("# end "));
}

#[test]
fn record_sample_sets_and_restores_sample_ms() {
    let root = fake_proc_root("sample");
    let params = root.parent().unwrap().join("parameters");
    fs::create_dir_all(&params).unwrap();
    let capture = root.parent().unwrap().join("capture.txt");
    let record = |sample: &str| {
        run(memmon()
            .env("MEMMON_PARAMS_DIR", &params)
            .arg("--proc-root")
            .arg(&root)
            .args(["record", "-q", "--stacks", "0", "--sample", sample, "-o"])
            .arg(&capture)
            .args(["--", "sh", "-c", "exit 0"]))
    };
    // Out of range: a usage error that says the range, before anything is touched.
    for bad in ["5", "60001", "0", "fast"] {
        let (code, _, stderr) = record(bad);
        assert_eq!(code, 2, "{bad}: {stderr}");
        assert!(stderr.contains("from 10 to 60000"), "{bad}: {stderr}");
    }
    // A module without access sampling: one clear error.
    let (code, stdout, stderr) = record("100");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.starts_with("memmon: error: --sample: the memmon module has no access sampling ("),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // With the parameter: set for the capture (its header says so), restored after.
    fs::write(params.join("sample_ms"), "0\n").unwrap();
    fs::write(params.join("sample_pages"), "65536\n").unwrap();
    let (code, _, stderr) = record("250");
    assert_eq!(code, 0, "{stderr}");
    let headers = read_capture(&capture).0;
    assert!(
        headers.contains(&("sample-ms".to_owned(), "250".to_owned())),
        "{headers:?}"
    );
    assert!(headers.contains(&("sample-pages".to_owned(), "65536".to_owned())));
    assert_eq!(fs::read_to_string(params.join("sample_ms")).unwrap(), "0");
    // Restored when the recording fails too (the command cannot start).
    let (code, _, stderr) = run(memmon()
        .env("MEMMON_PARAMS_DIR", &params)
        .arg("--proc-root")
        .arg(&root)
        .args(["run", "-q", "--sample", "100", "--", "/nonexistent/cmd"]));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("cannot run"), "{stderr}");
    assert_eq!(fs::read_to_string(params.join("sample_ms")).unwrap(), "0");
    // Without the module: the usual error, not one about the parameter.
    let (code, _, stderr) = run(memmon()
        .env("MEMMON_PARAMS_DIR", &params)
        .args(["--proc-root", "/nonexistent/memmon"])
        .args(["record", "--sample", "100", "-o"])
        .arg(&capture)
        .args(["--", "true"]));
    assert_eq!(code, 1);
    assert_eq!(
        stderr,
        "memmon: error: memmon module not loaded (/nonexistent/memmon does not exist)\n"
    );
}

#[test]
fn report_access_options() {
    for bad in ["0", "65", "x"] {
        let (code, _, stderr) = run(memmon()
            .args(["report", "--access", "--cold", bad])
            .arg(report_fixture("base.cap")));
        assert_eq!(code, 2, "{bad}: {stderr}");
    }
    let (code, stdout, stderr) = run(memmon()
        .args(["report", "--access", "--cold", "2"])
        .arg(report_fixture("base.cap")));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("No access sampling in the capture"),
        "{stdout}"
    );
    let (code, _, stderr) = run(memmon()
        .args(["report", "--access", "--format", "folded"])
        .arg(report_fixture("base.cap")));
    assert_eq!(code, 1);
    assert_eq!(stderr, "memmon: error: --access writes text or json\n");
}

/// `record` asks the module it was pointed at: the stats under `--proc-root` (buflen for
/// the header, ring_bytes for the stack warning) and the version beside the parameters of
/// `MEMMON_PARAMS_DIR`, not /proc/memmon and /sys/module/memmon.
#[test]
fn record_reads_the_module_under_proc_root_and_params_dir() {
    let root = fake_proc_root("paths");
    fs::write(
        root.join("stats"),
        "produced 1\nbuflen 8192\nrings 2\nring_bytes 4096\n",
    )
    .unwrap();
    let dir = root.parent().unwrap();
    let params = dir.join("parameters");
    fs::create_dir_all(&params).unwrap();
    fs::write(params.join("stack_depth"), "0\n").unwrap();
    fs::write(dir.join("version"), "9.9-test\n").unwrap();
    let capture = dir.join("capture.txt");
    let (code, _, stderr) = run(memmon()
        .env("MEMMON_PARAMS_DIR", &params)
        .arg("--proc-root")
        .arg(&root)
        .args(["record", "-q", "--stacks", "16", "-o"])
        .arg(&capture)
        .args(["--", "sh", "-c", "exit 0"]));
    assert_eq!(code, 0, "{stderr}");
    let headers = read_capture(&capture).0;
    assert!(
        headers.contains(&("module-version".to_owned(), "9.9-test".to_owned())),
        "{headers:?}"
    );
    assert!(
        headers.contains(&("buflen".to_owned(), "8192".to_owned())),
        "{headers:?}"
    );
    // Rings of 4096 bytes, and a module that cannot grow them (no buflen file): the
    // warning says so, with the load option for 1 MiB per CPU.
    assert!(
        stderr.lines().any(|l| l
            == format!(
                "memmon: warning: the module's 2 event rings are 4096 bytes per CPU and a burst \
                 of faults can outrun memmon; this module cannot grow them ({}/buflen does not \
                 exist): load it with a larger buflen (insmod memmon.ko buflen=2097152)",
                root.display()
            )),
        "{stderr}"
    );
    // And stack_depth was restored.
    assert_eq!(fs::read_to_string(params.join("stack_depth")).unwrap(), "0");
}

#[test]
fn record_symbolize_appends_to_the_capture() {
    // The fake module sends no events: no frames to name, but the step runs after the
    // recording and leaves the capture readable (the names themselves: memmon's
    // tests/report_debug.rs).
    let root = fake_proc_root("record-symbolize");
    let capture = root.parent().unwrap().join("capture.txt");
    let (code, _, stderr) = run(memmon()
        .arg("--proc-root")
        .arg(&root)
        .args(["record", "--quiet", "--symbolize", "-o"])
        .arg(&capture)
        .args(["--", "sh", "-c", "exit 0"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l == format!("memmon: 0 frames symbolised into {}", capture.display())),
        "{stderr}"
    );
    let (headers, _) = read_capture(&capture);
    assert_eq!(headers.last().unwrap().0, "end");
}

/// Calls and faults the module's probes missed while recording (`probe_missed` grew) are in
/// no event and no `lost` line: record says how many, once, at the end; nothing when none.
#[test]
fn record_says_what_the_probes_missed() {
    for (name, missed_after, want) in [
        (
            "missed",
            12,
            Some("memmon: 7 calls or faults of watched or other processes were not recorded meanwhile"),
        ),
        ("missed-none", 5, None),
    ] {
        let root = fake_proc_root(name);
        let stats = root.join("stats");
        fs::write(&stats, "produced 123\ndelivered 120\nprobe_missed 5\n").unwrap();
        let capture = root.parent().unwrap().join("capture.txt");
        // The command stands for the workload during which the module missed some.
        let script = format!(
            "printf 'produced 130\\ndelivered 127\\nprobe_missed {missed_after}\\n' > '{}'",
            stats.display()
        );
        let (code, _, stderr) = run(memmon()
            .arg("--proc-root")
            .arg(&root)
            .args(["record", "-o"])
            .arg(&capture)
            .args(["--", "sh", "-c", &script]));
        assert_eq!(code, 0, "{stderr}");
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|line| line.contains("not recorded"))
            .collect();
        match want {
            Some(start) => {
                assert_eq!(lines.len(), 1, "{stderr}");
                assert!(lines[0].starts_with(start), "{stderr}");
            }
            None => assert!(lines.is_empty(), "{stderr}"),
        }
    }
}

/// `memmon export`: a real capture's processes into the dataset's three tables; a truncated
/// copy and a missing file skipped, each named on a line, counted, exit status 2.
#[test]
fn export_writes_the_tables_and_names_each_bad_input() {
    let dir = temp_dir("export");
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../memmon/tests/fixtures/base.cap");
    let text = fs::read_to_string(&capture).unwrap();
    let truncated = dir.join("truncated.cap");
    fs::write(&truncated, &text[..text.len() / 3]).unwrap();
    let missing = dir.join("missing.cap");
    let out = dir.join("dataset");
    let (code, _, stderr) = run(memmon()
        .args(["export", "--format", "parquet", "--label", "model=s1", "-o"])
        .arg(&out)
        .arg(&capture)
        .arg(&truncated)
        .arg(&missing));
    assert_eq!(code, 2, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(lines[0].starts_with(&format!("memmon: skipped {}: ", truncated.display())));
    assert!(lines[0].contains("do not parse"), "{stderr}");
    assert!(lines[1].starts_with(&format!(
        "memmon: skipped {}: cannot read",
        missing.display()
    )));
    assert!(
        lines[2].starts_with("memmon: exported ") && lines[2].ends_with("(2 skipped)"),
        "{stderr}"
    );
    for table in ["snapshots", "samples", "stacks"] {
        assert_eq!(fs::read_dir(out.join(table)).unwrap().count(), 1, "{table}");
    }
    // Nothing exported at all: an error.
    let (code, _, stderr) = run(memmon().args(["export", "-o"]).arg(&out).arg(&missing));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.ends_with("memmon: error: no snapshot exported (1 inputs skipped)\n"),
        "{stderr}"
    );
}

/// `memmon export` of heap profiles: a good jemalloc dump exported (its frames in a real
/// binary of this machine, whose build ID is read); a truncated one, one with a bad count
/// and one whose program is not here each skipped with one line naming the file, the line
/// and why; the others still exported, exit status 2.
#[test]
fn export_takes_heap_profiles_and_names_each_bad_dumps_line() {
    let dir = temp_dir("export-heap");
    let dump = "heap_v2/524288\n  t*: 3: 3000 [0: 0]\n\
                @ 0x7f0000001001 0x7f0000002001\n  t*: 2: 2000 [0: 0]\n  t0: 2: 2000 [0: 0]\n\
                @ 0x7f0000003001\n  t*: 1: 1000 [0: 0]\n\n\
                MAPPED_LIBRARIES:\n\
                7f0000000000-7f0000010000 r-xp 00000000 08:01 1234 /usr/bin/true\n";
    let good = dir.join("app.1.0.f.heap");
    fs::write(&good, dump).unwrap();
    let truncated = dir.join("app.2.0.f.heap");
    fs::write(&truncated, &dump[..dump.len() - 10]).unwrap();
    let bad_count = dir.join("app.3.0.f.heap");
    fs::write(&bad_count, dump.replace("t*: 1: 1000", "t*: 1: 1,000")).unwrap();
    let elsewhere = dir.join("app.4.0.f.heap");
    fs::write(
        &elsewhere,
        dump.replace("/usr/bin/true", "/opt/app/bin/app"),
    )
    .unwrap();
    let out = dir.join("dataset");
    let (code, _, stderr) = run(memmon()
        .args(["export", "--label", "version=1.2", "-o"])
        .arg(&out)
        .arg(&good)
        .arg(&truncated)
        .arg(&bad_count)
        .arg(&elsewhere));
    assert_eq!(code, 2, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "memmon: skipped {}: line 10: truncated: the last line has no newline",
                truncated.display()
            ),
            format!(
                "memmon: skipped {}: line 7: bad count \"1,000\" (not a number)",
                bad_count.display()
            ),
            format!(
                "memmon: skipped {}: line 3: unknown build ID of /opt/app/bin/app (give \
                 --sysroot where the binary is)",
                elsewhere.display()
            ),
            format!(
                "memmon: exported 1 snapshots from 1 inputs into {} (3 skipped)",
                out.display()
            ),
        ],
        "{stderr}"
    );
    for table in ["snapshots", "samples", "stacks"] {
        assert_eq!(fs::read_dir(out.join(table)).unwrap().count(), 1, "{table}");
    }
}

/// ETXTBSY, "Text file busy", on Linux.
const ETXTBSY: i32 = 26;

/// Runs `program ARGS` with PATH=`path`, again while exec fails with ETXTBSY (a file just
/// written may still be open for writing in a child that another test forked meanwhile,
/// until that child execs).
fn run_fresh(program: &Path, args: &[&str], path: &Path) -> Output {
    (0..100)
        .find_map(|_| {
            match Command::new(program)
                .args(args)
                .env("PATH", path)
                .stdin(Stdio::null())
                .output()
            {
                Err(e) if e.raw_os_error() == Some(ETXTBSY) => {
                    std::thread::sleep(Duration::from_millis(20));
                    None
                }
                result => Some(result.unwrap()),
            }
        })
        .expect("the copy stays busy")
}

/// `memmon fleet` and `memmon serve` without the memmon-fleet binary beside memmon or in
/// PATH: one line that says how to build it; with it, they run it (`serve` as its
/// subcommand).
#[test]
fn fleet_without_its_binary_says_how_to_build_it() {
    let dir = temp_dir("fleet-missing");
    let copy = dir.join("memmon");
    fs::copy(env!("CARGO_BIN_EXE_memmon"), &copy).unwrap();
    for (command, args) in [
        ("fleet", ["fleet", "data", "--by", "model", "-o", "out"]),
        (
            "serve",
            ["serve", "data", "--listen", "127.0.0.1:1", "--by", "model"],
        ),
    ] {
        let output = run_fresh(&copy, &args, &dir);
        let (code, stdout, stderr) = (
            output.status.code().unwrap_or(-1),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        );
        assert_eq!(code, 1);
        assert_eq!(stdout, "");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(&format!(
            "memmon: error: memmon {command} needs the memmon-fleet binary"
        )));
        assert!(stderr.contains("make fleet"), "{stderr}");
    }
    // A memmon-fleet beside it that says what it was given.
    let fake = dir.join("memmon-fleet");
    fs::write(&fake, "#!/bin/sh\necho \"$@\"\n").unwrap();
    fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = run_fresh(&copy, &["serve", "data", "--listen", "127.0.0.1:1"], &dir);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "serve data --listen 127.0.0.1:1\n"
    );
    let output = run_fresh(&copy, &["fleet", "daily", "data", "--results", "r"], &dir);
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "daily data --results r\n"
    );
}

/// Issue 50: `record` grows rings smaller than 1 MiB through `buflen` (rings * 1 MiB), and
/// leaves rings of 1 MiB alone.
#[test]
fn record_grows_the_rings_through_buflen() {
    let root = fake_proc_root("grow");
    fs::write(
        root.join("stats"),
        "produced 1\nrings 2\nring_bytes 65536\n",
    )
    .unwrap();
    fs::write(root.join("buflen"), "131072\n").unwrap();
    let capture = root.parent().unwrap().join("capture.txt");
    let record = || {
        run(memmon()
            .arg("--proc-root")
            .arg(&root)
            .args(["record", "-q", "-o"])
            .arg(&capture)
            .args(["--", "sh", "-c", "exit 0"]))
    };
    let (code, _, stderr) = record();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        fs::read_to_string(root.join("buflen")).unwrap(),
        "2097152\n"
    );
    // The fake stats do not change: record says the rings are still as they were.
    assert!(
        stderr.lines().any(|l| l
            == format!(
                "memmon: warning: wrote 2097152 to {}/buflen but the module's event rings are \
                 still 65536 bytes per CPU",
                root.display()
            )),
        "{stderr}"
    );
    // Rings of 1 MiB: nothing written, nothing said.
    fs::write(
        root.join("stats"),
        "produced 1\nrings 2\nring_bytes 1048576\n",
    )
    .unwrap();
    fs::write(root.join("buflen"), "2097152\n").unwrap();
    let (code, _, stderr) = record();
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("rings"), "{stderr}");
}

/// `--no-follow` is accepted by run and record (children are followed by default), and so
/// is the old `--follow`, the later of the two winning.
#[test]
fn no_follow_and_follow_are_accepted() {
    let root = fake_proc_root("no-follow");
    let capture = root.parent().unwrap().join("capture.txt");
    for args in [
        &["run", "-q", "--no-follow", "--"][..],
        &["run", "-q", "--follow", "--no-follow", "--"][..],
        &[
            "record",
            "-q",
            "--no-follow",
            "-o",
            capture.to_str().unwrap(),
            "--",
        ][..],
        &["record", "-q", "-f", "-o", capture.to_str().unwrap(), "--"][..],
    ] {
        let (code, _, stderr) = run(memmon()
            .arg("--proc-root")
            .arg(&root)
            .args(args)
            .args(["sh", "-c", "exit 0"]));
        assert_eq!(code, 0, "{args:?}: {stderr}");
    }
}
