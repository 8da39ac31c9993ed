//! The subcommands, one file per command or group of commands.

pub mod follow;
