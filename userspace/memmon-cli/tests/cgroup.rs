//! `--cgroup PATH` of attach, detach, tail, run, record and top against a fake /proc root (plain
//! files standing in for the module's, as in cli.rs): the path is checked before anything
//! is written (one `memmon: error:` line), the module gets `c:PATH` / `-c:PATH` (PATH the
//! cgroup2 mount's own path, also for a path given relative to its root), and
//! `record --cgroup` writes the cgroup of each recorded process into the capture.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use memmon::capture::cgroup::{cgroup2_root, unified_cgroup};
use memmon::{CaptureReader, Record, SnapshotSource};

mod common;
use common::memmon;

fn run(command: &mut Command) -> (i32, String, String) {
    let output = command.stdin(Stdio::null()).output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn fake_proc_root(name: &str) -> PathBuf {
    common::fake_proc_root("cgroup", name)
}

/// A cgroup2 mount of this machine (none: the tests that need one fail, saying so).
fn cgroup2_mount() -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mount = cgroup2_root(&mounts);
    if mount.is_none() {
        eprintln!("no cgroup2 mount on this machine");
    }
    mount.map(|m| fs::canonicalize(m).unwrap())
}

#[test]
fn bad_cgroup_paths_are_one_error_line_and_nothing_written() {
    let root = fake_proc_root("bad");
    let file = root.parent().unwrap().join("plain-file");
    fs::write(&file, "").unwrap();
    let not_cgroup = fs::canonicalize(std::env::temp_dir()).unwrap();
    // Relative to the cgroup2 root (a leading / too when its first component is no
    // directory of the file system): looked for there.
    let missing = |given: &str| {
        match cgroup2_mount() {
        Some(mount) => format!(
            "memmon: error: --cgroup {given}: no such cgroup ({}/{} does not exist)",
            mount.display(),
            given.trim_start_matches('/')
        ),
        None => format!(
            "memmon: error: --cgroup {given}: no cgroup v2 file system is mounted (none in /proc/self/mountinfo)"
        ),
    }
    };
    let outside = |path: &std::path::Path| {
        (
            path.display().to_string(),
            format!(
                "memmon: error: --cgroup {}: not in a cgroup v2 file system (cgroup2 mounts: ",
                path.display()
            ),
        )
    };
    let mut cases = vec![
        ("relative/dir".to_owned(), missing("relative/dir")),
        (
            "/nonexistent/memmon-cgroup".to_owned(),
            missing("/nonexistent/memmon-cgroup"),
        ),
        // Paths of the file system outside the cgroup2 mount, a directory or not.
        outside(&file),
        outside(&not_cgroup),
    ];
    if let Some(mount) = cgroup2_mount() {
        let procs = mount.join("cgroup.procs");
        cases.push((
            procs.display().to_string(),
            format!(
                "memmon: error: --cgroup {}: not a directory",
                procs.display()
            ),
        ));
    }
    let capture = root.parent().unwrap().join("capture.txt");
    for (path, expected) in &cases {
        let commands: [Vec<String>; 5] = [
            vec!["attach".into(), "--cgroup".into(), path.clone()],
            vec!["run".into(), "--cgroup".into(), path.clone()],
            vec!["tail".into(), "--cgroup".into(), path.clone()],
            vec![
                "record".into(),
                "-o".into(),
                capture.display().to_string(),
                "--cgroup".into(),
                path.clone(),
            ],
            vec!["top".into(), "--cgroup".into(), path.clone()],
        ];
        for args in commands {
            let (code, stdout, stderr) = run(memmon(&root).args(&args));
            assert_eq!(code, 1, "{args:?}: {stderr}");
            assert_eq!(stdout, "", "{args:?}");
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
            assert!(stderr.starts_with(expected.as_str()), "{args:?}: {stderr}");
            assert_eq!(fs::read_to_string(root.join("watch-pids")).unwrap(), "\n");
            assert!(!capture.exists(), "{args:?}: the capture was created");
        }
    }
}

#[test]
fn attach_and_detach_write_c_items() {
    let mount = cgroup2_mount().expect("a cgroup2 mount on this machine");
    let root = fake_proc_root("attach");
    let written = |args: &[&str]| {
        fs::write(root.join("watch-pids"), "").unwrap();
        let (code, _, stderr) = run(memmon(&root).args(args));
        assert_eq!(code, 0, "{args:?}: {stderr}");
        fs::read_to_string(root.join("watch-pids")).unwrap()
    };
    let path = mount.display().to_string();
    assert_eq!(
        written(&["attach", "--cgroup", &path]),
        format!("c:{path}\n")
    );
    assert_eq!(
        written(&["detach", "--cgroup", &path]),
        format!("-c:{path}\n")
    );
    // The root cgroup by its path relative to the root: the same item.
    assert_eq!(written(&["attach", "--cgroup", "/"]), format!("c:{path}\n"));
    // A cgroup relative to the root that is gone: detached by its mount path.
    assert_eq!(
        written(&["detach", "--cgroup", "gone.scope"]),
        format!("-c:{path}/gone.scope\n")
    );
    // `list` reads the pid line and leaves the `c:` lines alone.
    fs::write(root.join("watch-pids"), format!("\nc:{path}\n")).unwrap();
    let (code, stdout, stderr) = run(memmon(&root).arg("list"));
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
}

#[test]
fn record_cgroup_writes_each_process_cgroup() {
    let mount = cgroup2_mount().expect("a cgroup2 mount on this machine");
    let root = fake_proc_root("record");
    let capture = root.parent().unwrap().join("capture.txt");
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id();
    // Far in the future of CLOCK_MONOTONIC: after the recording's start.
    fs::write(
        root.join("events"),
        format!(
            "9999999.000000000 {pid}/{pid} fault type=anon access=W addr=0x7f0000001000 ip=0x401000\n\
             9999999.000000100 {pid}/{pid} fault type=anon access=W addr=0x7f0000002000 ip=0x401000\n"
        ),
    )
    .unwrap();
    let path = mount.display().to_string();
    let recorder = memmon(&root)
        .args(["--no-unwind-tables", "record", "-o"])
        .arg(&capture)
        .args(["--cgroup", &path])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // While recording: the module was asked to watch the cgroup.
    let during = fs::read_to_string(root.join("watch-pids")).unwrap();
    assert!(Command::new("kill")
        .args(["-INT", &recorder.id().to_string()])
        .status()
        .unwrap()
        .success());
    let output = recorder.wait_with_output().unwrap();
    let expected_cgroup =
        unified_cgroup(&fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap())
            .unwrap()
            .to_owned();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(during, format!("c:{path}\n"));
    assert_eq!(
        fs::read_to_string(root.join("watch-pids")).unwrap(),
        format!("-c:{path}\n")
    );
    let reader = std::io::BufReader::new(fs::File::open(&capture).unwrap());
    let mut reader = CaptureReader::new(reader);
    let (mut headers, mut snapshots, mut events) = (Vec::new(), Vec::new(), 0);
    while let Some(record) = reader.next_record() {
        match record.unwrap().1 {
            Record::Header { key, value } => headers.push((key, value)),
            Record::Snapshot(s) => snapshots.push((s.pid, s.reason, s.source)),
            Record::Event(_) => events += 1,
        }
    }
    let header = |key: &str| -> Vec<String> {
        headers
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    };
    assert_eq!(header("cgroup-watched"), [path]);
    assert_eq!(header("cgroup"), [format!("{pid} {expected_cgroup}")]);
    assert_eq!(events, 2);
    let reasons: Vec<(u32, &str, SnapshotSource)> = snapshots
        .iter()
        .map(|(p, r, source)| (*p, r.as_str(), *source))
        .collect();
    // A process found running: its maps, the pages it held, its status.
    assert_eq!(
        reasons,
        [
            (pid, "start", SnapshotSource::Maps),
            (pid, "start", SnapshotSource::Pages),
            (pid, "start", SnapshotSource::Status),
            (pid, "end", SnapshotSource::Maps),
            (pid, "end", SnapshotSource::Status)
        ]
    );
}

#[test]
fn run_cgroup_prints_the_cgroup_events_until_interrupted() {
    let mount = cgroup2_mount().expect("a cgroup2 mount on this machine");
    let root = fake_proc_root("run");
    fs::write(
        root.join("events"),
        "9999999.000000000 4242/4242 fault type=anon access=W addr=0x7f0000001000 ip=0x401000\n\
         9999999.000000100 4242/4243 fault type=file access=R addr=0x7f0000002000 ip=0x401000\n",
    )
    .unwrap();
    let path = mount.display().to_string();
    let runner = memmon(&root)
        .args(["--no-unwind-tables", "run", "--cgroup", &path])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let during = fs::read_to_string(root.join("watch-pids")).unwrap();
    assert!(Command::new("kill")
        .args(["-INT", &runner.id().to_string()])
        .status()
        .unwrap()
        .success());
    let output = runner.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(during, format!("c:{path}\n"));
    assert_eq!(
        fs::read_to_string(root.join("watch-pids")).unwrap(),
        format!("-c:{path}\n")
    );
    assert_eq!(
        stdout,
        "4242: anon page @0x7f0000001000 (W)\n4242/4243: file page @0x7f0000002000 (R)\n"
    );
    assert!(stderr.contains("memmon: interrupted"), "{stderr}");
    // A command and --cgroup together: one error line.
    let (code, _, stderr) = run(memmon(&root).args(["run", "--cgroup", &path, "--", "true"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}
