// SPDX-License-Identifier: GPL-2.0

//! [`core::fmt::Write`] into a growable byte vector: text built with `write!` in a [`Vec`]
//! of any allocator ([`kernel::alloc::KVec`] by default, [`kernel::alloc::KVVec`] for text
//! that may grow past what `kmalloc` gives contiguously).

use crate::kernel_ext::kcrate::alloc::{allocator::Kmalloc, flags::GFP_KERNEL, Allocator, Vec};
use core::fmt::Write;

/// `core::fmt::Write` into a growable byte vector.
pub(crate) struct ByteWriter<A: Allocator = Kmalloc>(pub(crate) Vec<u8, A>);

impl<A: Allocator> Write for ByteWriter<A> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0
            .extend_from_slice(s.as_bytes(), GFP_KERNEL)
            .map_err(|_| core::fmt::Error)
    }
}
