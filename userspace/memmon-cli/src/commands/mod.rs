//! The subcommands, one file per command or group of commands.

pub mod control;
pub mod fleet;
pub mod follow;
pub mod report;
pub mod tail;
pub mod top;
