//! `memmon agent` against a fake /proc root and a fake cgroup tree (plain files and
//! directories; `cgroup_root` names the tree): `--cgroup` as users type it (the mount's own
//! path and the path relative to its root watch the same cgroup; a path outside is one
//! `memmon: error:` line), a glob matching nothing said once and again when it matches,
//! and a process already in a watched cgroup adopted when the cgroup is watched, counted in
//! the metrics at once (issue 51).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::memmon;

/// A fake /proc root, a cgroup tree beside it with `dirs`, and a config naming the tree.
fn setup(name: &str, dirs: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let root = common::fake_proc_root("agent", name);
    let dir = root.parent().unwrap().to_owned();
    let tree = dir.join("cg");
    for sub in dirs {
        fs::create_dir_all(tree.join(sub)).unwrap();
        fs::write(tree.join(sub).join("cgroup.procs"), "").unwrap();
    }
    let config = dir.join("agent.toml");
    fs::write(
        &config,
        format!("cgroup_root = \"{}\"\nlisten = \"\"\n", tree.display()),
    )
    .unwrap();
    (root, tree, config)
}

fn agent(root: &Path, config: &Path, args: &[&str]) -> Command {
    let mut command = memmon(root);
    command
        .args(["--no-unwind-tables", "agent", "--config"])
        .arg(config)
        .args(args);
    command
}

/// Waits up to 20 s for `done`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running agent, killed if a test fails before it is stopped.
struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// SIGTERM: it exits 0; its log.
fn stop(mut running: Running) -> String {
    let mut child = running.0.take().unwrap();
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    err
}

#[test]
fn cgroup_paths_as_typed() {
    let (root, tree, config) = setup("paths", &["wa"]);
    let check = |args: &[&str]| {
        let output = agent(&root, &config, args)
            .arg("--check-config")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    // The mount's own path, relative, with a leading /: the same glob.
    let own = format!("{}/wa", tree.display());
    let own_glob = format!("{}/w*", tree.display());
    let (code, stdout, stderr) = check(&["--cgroup", &own, "--cgroup", "wa", "--cgroup", "/wa"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "cgroups [\"wa\", \"wa\", \"wa\"] under {}",
            tree.display()
        )),
        "{stdout}"
    );
    let (code, stdout, stderr) = check(&["--cgroup", &own_glob]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("cgroups [\"w*\"]"), "{stdout}");
    // A directory of the file system outside the cgroup2 mounts: one error line.
    let outside = format!("{}/elsewhere", root.display());
    let (code, stdout, stderr) = check(&["--cgroup", &outside]);
    assert_eq!((code, stdout.as_str()), (Some(1), ""), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "memmon: error: --cgroup {outside}: not in a cgroup v2 file system (cgroup2 mounts: "
        )),
        "{stderr}"
    );
    assert!(stderr.contains(&tree.display().to_string()), "{stderr}");
}

/// A process in the cgroup when it is watched: adopted then (the metrics count it and what
/// it held at once, not at the next sample); a glob matching nothing: one line, and one
/// when a cgroup it matches appears.
#[test]
fn adoption_and_unmatched_globs() {
    let (root, tree, config) = setup("adopt", &["wa"]);
    let metrics = root.parent().unwrap().join("metrics.prom");
    let spool = root.parent().unwrap().join("spool");
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    fs::write(tree.join("wa/cgroup.procs"), format!("{}\n", sleeper.id())).unwrap();
    let own = format!("{}/wa", tree.display());
    let child = Running(Some(
        agent(&root, &config, &["--cgroup", &own, "--cgroup", "x*"])
            .arg("--metrics-file")
            .arg(&metrics)
            .arg("--spool")
            .arg(&spool)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let value = |series: &str| -> Option<f64> {
        let text = fs::read_to_string(&metrics).ok()?;
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
    };
    let started = Instant::now();
    wait_for("the process in the model", || {
        value("memmon_processes{cgroup=\"/wa\"}") == Some(1.0)
    });
    // Applied once the stream was read past the adoption, not at the 10 s sample.
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_eq!(
        value("memmon_processes_adopted_total{cgroup=\"/wa\"}"),
        Some(1.0)
    );
    assert!(value("memmon_adopted_resident_bytes{cgroup=\"/wa\"}").unwrap() > 0.0);
    assert_eq!(
        fs::read_to_string(root.join("watch-pids")).unwrap(),
        format!("c:{own}\n")
    );
    std::thread::sleep(Duration::from_millis(2500));
    fs::create_dir(tree.join("x1")).unwrap();
    wait_for("x1 watched", || {
        value("memmon_processes{cgroup=\"/x1\"}").is_some()
    });
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let err = stop(child);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("cgroup glob")).collect();
    assert_eq!(
        said,
        [
            format!(
                "memmon agent: cgroup glob x*: matches no cgroup under {} (said again when one appears)",
                tree.display()
            ),
            "memmon agent: cgroup glob x*: now matches /x1".to_owned(),
        ],
        "{err}"
    );
}
