//! `memmon top` against a fake /proc root (plain files standing in for the module's):
//! `-- CMD` watches the command with its children (`+PID`), and with stdout not a
//! terminal prints a plain table every interval until the command exits; undecodable lines
//! are warned about once per kind; `-p` unwatches at the end every process it followed (the
//! pids and the children they forked), not those that exited nor others' children; `-p`,
//! `--cgroup` and a command are one each.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;

fn fake_proc_root(name: &str) -> PathBuf {
    common::fake_proc_root("top", name)
}

/// memmon on `root`, without unwind tables (no module to load them into), no stdin.
fn memmon(root: &Path) -> Command {
    let mut command = common::memmon(root);
    command.arg("--no-unwind-tables").stdin(Stdio::null());
    command
}

fn sleeper() -> Child {
    Command::new("sleep").arg("30").spawn().unwrap()
}

#[test]
fn top_command_plain_tables_until_it_exits() {
    let root = fake_proc_root("command");
    let output = memmon(&root)
        .args(["top", "--interval", "0.2", "--"])
        .args(["sh", "-c", "sleep 0.5"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let watched = fs::read_to_string(root.join("watch-pids")).unwrap();
    let pid: u32 = watched
        .strip_prefix('+')
        .and_then(|rest| rest.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("watch-pids: {watched:?}"));
    let tables: Vec<&str> = stdout.split_terminator("\n\n").collect();
    assert!(
        (2..=5).contains(&tables.len()),
        "{} tables:\n{stdout}",
        tables.len()
    );
    for table in tables {
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0], "memmon top: events 0  lost 0 (0 in the last 0.2 s)",
            "{table}"
        );
        assert!(
            lines[1].trim_start().starts_with("PID  COMMAND  ANON"),
            "{table}"
        );
        // The command, named from /proc/PID/comm, nothing resident (no events).
        let row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(row[..2], [pid.to_string().as_str(), "sh"], "{table}");
        assert_eq!(lines[3], "INTERVAL  SINCE START  RESIDENT  SITE", "{table}");
        assert_eq!(lines.len(), 4, "{table}");
    }
    fs::remove_dir_all(root.parent().unwrap()).unwrap();
}

#[test]
fn top_warns_once_per_kind_of_undecodable_line() {
    let root = fake_proc_root("undecodable");
    fs::write(
        root.join("events"),
        "9999999.000000000 4242/4242 fault type=bogus access=W addr=0x1000 ip=0x401000\n\
         9999999.000000001 4242/4242 fault type=anon access=W\n\
         9999999.000000002 4242/4242 frob x=1\n\
         9999999.000000003 4242/4242 fault type=anon access=W addr=0x2000 ip=0x401000\n",
    )
    .unwrap();
    let output = memmon(&root)
        .args(["top", "--interval", "0.2", "--", "sh", "-c", "sleep 0.5"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // The first line says top is printing plain tables (stdout is a pipe here); the
    // warnings follow it.
    let mut lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{stderr}");
    assert!(
        lines
            .remove(0)
            .starts_with("memmon top: stdout is not a terminal: "),
        "{stderr}"
    );
    assert!(
        lines[0].starts_with("memmon: warning: skipping undecodable event (bad value \"bogus\"")
            && lines[0].contains(": 9999999.000000000 4242/4242 fault type=bogus ")
            && lines[0].ends_with(" (further ones of this kind are counted, not shown)"),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with("memmon: warning: skipping undecodable event (unknown event kind \"frob\"): 9999999.000000002 4242/4242 frob x=1"),
        "{stderr}"
    );
    assert_eq!(
        lines[2],
        "memmon: warning: 3 undecodable events skipped in all (1 not shown)"
    );
    fs::remove_dir_all(root.parent().unwrap()).unwrap();
}

/// `-p PID`: the children PID forks (and theirs) are followed, and unwatched with PID at
/// the end; a child that exited is not, nor the child of a process top did not add. The
/// fake `watch-pids` is a FIFO, read by a thread, so that every write is seen. The thread
/// holds it open for reading and writing from before top starts: a FIFO reopened after
/// each writer's close discards a write made between the reader's end of file and its
/// close (a host busy elsewhere lost one so).
#[test]
fn top_pids_unwatches_every_followed_process() {
    let root = fake_proc_root("pids");
    let fifo = root.join("watch-pids");
    fs::remove_file(&fifo).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut held = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut chunk = [0u8; 4096];
        while !all.ends_with(b"end\n") {
            let read = held.read(&mut chunk).unwrap();
            all.extend_from_slice(&chunk[..read]);
        }
        String::from_utf8(all).unwrap()
    });
    let mut processes: Vec<Child> = (0..6).map(|_| sleeper()).collect();
    let [parent, child, grandchild, exited, other, others_child] =
        <[u32; 6]>::try_from(processes.iter().map(Child::id).collect::<Vec<_>>()).unwrap();
    fs::write(
        root.join("events"),
        format!(
            "9999999.000000000 {parent}/{parent} fork child={child} watched=1\n\
             9999999.000000001 {parent}/{parent} fork child={exited} watched=1\n\
             9999999.000000002 {child}/{child} fork child={grandchild} watched=1\n\
             9999999.000000003 {exited}/{exited} exit code=0\n\
             9999999.000000004 {other}/{other} fork child={others_child} watched=1\n\
             9999999.000000005 {parent}/{parent} fault type=anon access=W addr=0x1000 ip=0x401000\n"
        ),
    )
    .unwrap();
    let top = memmon(&root)
        .args(["top", "--interval", "0.2", "-p", &parent.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(Command::new("kill")
        .args(["-INT", &top.id().to_string()])
        .status()
        .unwrap()
        .success());
    let output = top.wait_with_output().unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .unwrap()
        .write_all(b"end\n")
        .unwrap();
    let written = reader.join().unwrap();
    for process in &mut processes {
        let _ = process.kill();
        let _ = process.wait();
    }
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let mut lines: Vec<&str> = written.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&format!("+{parent}").as_str()),
        "{written}"
    );
    assert_eq!(lines.pop(), Some("end"), "{written}");
    let mut unwatched = lines[1..].to_vec();
    unwatched.sort_unstable();
    let mut expected = vec![
        format!("-{parent}"),
        format!("-{child}"),
        format!("-{grandchild}"),
    ];
    expected.sort_unstable();
    assert_eq!(unwatched, expected, "{written}");
    fs::remove_dir_all(root.parent().unwrap()).unwrap();
}

/// `-p` with `--cgroup` or a command, or `--cgroup` with a command: clap's error, nothing
/// watched.
#[test]
fn top_targets_are_exclusive() {
    let root = fake_proc_root("exclusive");
    let cases: [&[&str]; 3] = [
        &["top", "-p", "1", "--cgroup", "/sys/fs/cgroup"],
        &["top", "-p", "1", "--", "true"],
        &["top", "--cgroup", "/sys/fs/cgroup", "--", "true"],
    ];
    for args in cases {
        let output = memmon(&root).args(args).output().unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
        let first = stderr.lines().next().unwrap_or("");
        assert!(
            first.starts_with("error: the argument '") && first.contains("' cannot be used with '"),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            fs::read_to_string(root.join("watch-pids")).unwrap(),
            "\n",
            "{args:?}"
        );
    }
    fs::remove_dir_all(root.parent().unwrap()).unwrap();
}

/// Issue 50: a replayed capture that lost events, dropped faults and shed stacks: the
/// status line says so once they are there.
#[test]
fn top_input_shows_the_loss_in_its_status_line() {
    let root = fake_proc_root("loss");
    let capture = root.join("lossy.cap");
    fs::write(
        &capture,
        "\
# memmon-capture 1
# start 1.000000000
# pids 4242
1.000000000 4242/4242 exec comm=cc1plus filename=/usr/libexec/cc1plus
1.010000000 4242/4242 mmap addr=0x0 len=1048576 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
1.015000000 0/0 lost count=3733
1.020000000 4242/4242 fault type=anon access=W addr=0x7f0000000000 ip=0x401010 pages=128 stack=0x401010
1.030000000 4242/4242 dropped faults=512
1.040000000 4242/4242 fault type=anon access=W addr=0x7f0000080000 ip=0x401010 pages=32 stack=0x401010 stack_end=shed
1.050000000 4242/4242 fault type=anon access=W addr=0x7f00000a0000 ip=0x401010 pages=32 stack_end=shed
",
    )
    .unwrap();
    let output = memmon(&root)
        .args(["top", "--interval", "0.2", "--input"])
        .arg(&capture)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let last = stdout.split_terminator("\n\n").last().unwrap();
    assert!(
        last.lines()
            .next()
            .unwrap()
            .starts_with("memmon top: events 7  lost 3733 ("),
        "{stdout}"
    );
    assert!(
        last.lines()
            .next()
            .unwrap()
            .ends_with(" s)  faults not recorded 512  stacks shed 2"),
        "{stdout}"
    );
    fs::remove_dir_all(root.parent().unwrap()).unwrap();
}
