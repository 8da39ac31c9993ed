//! A Ballista scheduler and executor started from this crate (`memmon-fleet scheduler`,
//! `memmon-fleet executor`), with Ballista's defaults but the addresses, the executor timeout
//! and pull scheduling.

use std::sync::Arc;

use ballista_core::config::TaskSchedulingPolicy;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;

/// Runs a scheduler listening on `host:port` until killed. An executor silent for
/// `executor_timeout` seconds (its heartbeats are every 2 s) is taken for dead and its tasks
/// are run again elsewhere; Ballista's default is 180 s.
pub async fn scheduler(host: &str, port: u16, executor_timeout: u64) -> Result<(), String> {
    let mut config = SchedulerConfig::default()
        .with_hostname(host)
        .with_port(port);
    config.bind_host = host.to_owned();
    config.executor_timeout_seconds = executor_timeout;
    // Looked for at a fifth of the timeout (Ballista: every 15 s against 180 s).
    config.expire_dead_executor_interval_seconds = (executor_timeout / 5).clamp(1, 15);
    config.no_executors_grace_period_seconds = executor_timeout;
    // Executors ask for tasks (Ballista's default pushes them): a dead executor's tasks are
    // run again more often (docs/fleet.md).
    config.scheduling_policy = TaskSchedulingPolicy::PullStaged;
    let address = format!("{host}:{port}")
        .parse()
        .map_err(|e| format!("{host}:{port}: {e}"))?;
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| format!("cannot start the scheduler: {e}"))?;
    start_server(cluster, address, Arc::new(config))
        .await
        .map_err(|e| format!("scheduler: {e}"))
}

/// Where an executor listens and which scheduler it serves.
#[derive(Debug, Clone)]
pub struct ExecutorAddress {
    /// Its host (bound and advertised).
    pub host: String,
    /// Its Arrow Flight port (the gRPC port is the next one).
    pub port: u16,
    /// The scheduler's host.
    pub scheduler_host: String,
    /// The scheduler's port.
    pub scheduler_port: u16,
    /// Tasks run at once.
    pub slots: usize,
    /// Its work directory (shuffle files).
    pub work_dir: Option<String>,
}

/// Runs an executor until killed.
pub async fn executor(address: &ExecutorAddress) -> Result<(), String> {
    let config = ExecutorProcessConfig {
        bind_host: address.host.clone(),
        external_host: Some(address.host.clone()),
        port: address.port,
        grpc_port: address.port + 1,
        scheduler_host: address.scheduler_host.clone(),
        scheduler_port: address.scheduler_port,
        vcores: address.slots,
        work_dir: address.work_dir.clone(),
        executor_heartbeat_interval_seconds: 2,
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        ..ExecutorProcessConfig::default()
    };
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| format!("executor: {e}"))
}
