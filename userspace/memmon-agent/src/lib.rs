//! `memmon agent`: the always-on service. It watches the cgroups that the config's globs
//! match (and those created later), keeps a bounded model of each ([`model`]), writes pprof
//! snapshots into a capped spool ([`profile`], [`spool`]) at every interval and when a
//! cgroup nears its memory.max, and serves Prometheus metrics ([`metrics`]). Its loop is
//! [`agent::run`]; the configuration, [`config`]; docs/agent.md describes it for users.

pub mod agent;
pub mod cgroups;
pub mod config;
pub mod metrics;
pub mod model;
pub mod profile;
pub mod spool;

pub use agent::{check_config, run, Start};
pub use config::{Config, FileConfig, Overrides};
