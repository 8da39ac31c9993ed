// SPDX-License-Identifier: GPL-2.0

//! Unwind tables that userspace compiles from each object's DWARF call frame information and
//! writes to `/proc/memmon/unwind` (docs/unwind.md): their format, and the store the stack
//! walker reads without locks.

pub(crate) mod format;
pub(crate) mod store;
