// SPDX-License-Identifier: GPL-2.0

//! What the producers (probes) and the readers share: the [`State`] of rings, watch set and
//! unwind store. The probes take it, and so does the [`crate::monitor::Monitor`] that the
//! `/proc/memmon` files serve; it takes none of them.

use crate::kernel_ext::prelude::*;
use crate::probes::stack::WalkBuffers;
use crate::ring::Ring;
use crate::unwind::store::UnwindStore;
use crate::watch::WatchSet;

/// What the producers (fault hook, probes) and the readers share.
#[pin_data]
pub(crate) struct State {
    #[pin]
    pub(crate) ring: Ring,
    #[pin]
    pub(crate) watch: WatchSet,
    /// The unwind tables and the ranges of the processes that use them.
    #[pin]
    pub(crate) unwind: UnwindStore,
    /// The producers' per-CPU buffers for the user stack walks.
    pub(crate) walks: WalkBuffers,
}
