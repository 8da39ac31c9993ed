//! `memmon top` against a fake /proc root (plain files standing in for the module's):
//! `-- CMD` watches the command with its children (`+PID`), and with stdout not a
//! terminal prints a plain table every interval until the command exits.

use std::fs;
use std::process::{Command, Stdio};

#[test]
fn top_command_plain_tables_until_it_exits() {
    let dir = std::env::temp_dir().join(format!("memmon-cli-top-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let root = dir.join("memmon");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("events"), "").unwrap();
    fs::write(root.join("watch-pids"), "").unwrap();
    fs::write(root.join("stats"), "produced 0\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_memmon"))
        .env_remove("MEMMON_PROC_ROOT")
        .arg("--proc-root")
        .arg(&root)
        .args(["--no-unwind-tables", "top", "--interval", "0.2", "--"])
        .args(["sh", "-c", "sleep 0.5"])
        .stdin(Stdio::null())
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
    fs::remove_dir_all(&dir).unwrap();
}
