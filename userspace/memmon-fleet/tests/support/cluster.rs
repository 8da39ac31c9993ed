//! A loopback Ballista cluster for the tests: a scheduler and two executors of this
//! crate's binary, killed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The cluster's processes.
pub struct Cluster {
    /// The scheduler, then the executors.
    pub processes: Vec<Child>,
    /// The scheduler's port.
    pub port: u16,
    logs: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in &mut self.processes {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Cluster {
    /// Waits until something listens on `port`, failing at once if one of the cluster's
    /// processes has exited (a port taken, a crash: its log says).
    fn wait_for_port(&mut self, port: u16) {
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            for child in &mut self.processes {
                if let Some(status) = child.try_wait().unwrap() {
                    panic!(
                        "a cluster process ended ({status}); logs in {}",
                        self.logs.display()
                    );
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "nothing listens on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Five consecutive free ports (the scheduler's, then each executor's Flight and gRPC
/// ports), from a place that depends on this process, so that a cluster left behind by an
/// earlier run is never taken for this one.
fn free_ports() -> u16 {
    let first = 20_000 + (std::process::id() % 2_000) as u16 * 20;
    (0..1_000u16)
        .map(|step| first.wrapping_add(step * 5) % 40_000 + 20_000)
        .find(|&base| {
            (base..base + 5).all(|port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        })
        .expect("no five free ports")
}

pub fn start_cluster(logs: &Path) -> Cluster {
    let binary = env!("CARGO_BIN_EXE_memmon-fleet");
    let spawn = |args: &[String], name: &str| {
        Command::new(binary)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(
                std::fs::File::create(logs.join(format!("{name}.out"))).unwrap(),
            ))
            .stderr(Stdio::from(
                std::fs::File::create(logs.join(format!("{name}.err"))).unwrap(),
            ))
            .spawn()
            .unwrap()
    };
    let base_port = free_ports();
    let mut cluster = Cluster {
        processes: Vec::new(),
        port: base_port,
        logs: logs.to_owned(),
    };
    cluster.processes.push(spawn(
        &[
            "scheduler".into(),
            "--port".into(),
            base_port.to_string(),
            // The executor killed below is taken for dead 10 s after its last
            // heartbeat, its tasks run again on the other.
            "--executor-timeout".into(),
            "10".into(),
        ],
        "scheduler",
    ));
    cluster.wait_for_port(base_port);
    for i in 0..2u16 {
        let port = base_port + 1 + 2 * i;
        let work = logs.join(format!("executor{i}"));
        std::fs::create_dir_all(&work).unwrap();
        cluster.processes.push(spawn(
            &[
                "executor".into(),
                "--port".into(),
                port.to_string(),
                "--scheduler-port".into(),
                base_port.to_string(),
                "--slots".into(),
                "2".into(),
                "--work-dir".into(),
                work.to_string_lossy().into_owned(),
            ],
            &format!("executor{i}"),
        ));
        cluster.wait_for_port(port);
    }
    // The executors register with their first heartbeat.
    std::thread::sleep(Duration::from_secs(3));
    cluster
}
