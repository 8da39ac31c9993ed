// SPDX-License-Identifier: GPL-2.0

//! [`core::fmt::Write`] into a growable byte vector: text built with `write!` in a [`KVec`].

use core::fmt::Write;
use kernel::alloc::{flags::GFP_KERNEL, KVec};

/// `core::fmt::Write` into a growable byte vector.
pub(crate) struct ByteWriter(pub(crate) KVec<u8>);

impl Write for ByteWriter {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0
            .extend_from_slice(s.as_bytes(), GFP_KERNEL)
            .map_err(|_| core::fmt::Error)
    }
}
