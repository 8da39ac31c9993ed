// SPDX-License-Identifier: GPL-2.0

//! One file per kernel hook: what each records, and the user stacks it takes.

use crate::kernel_ext::task::current_ids;
use crate::record::event::{Event, Kind};

pub(crate) mod fault;
pub(crate) mod lifecycle;
pub(crate) mod python;
pub(crate) mod rss;
pub(crate) mod sample;
pub(crate) mod stack;
pub(crate) mod syscalls;

/// A record of `kind` for the current task.
pub(crate) fn current_event(kind: Kind) -> Event {
    let (pid, tid) = current_ids();
    Event::new(kind, pid, tid)
}
