// SPDX-License-Identifier: GPL-2.0

//! The record format, free of the kernel: events, their packed form in the ring, and their
//! text lines (compiled on the host too, by the userspace codec test).

pub(crate) mod copy;
pub(crate) mod event;
pub(crate) mod packed;
pub(crate) mod text;
