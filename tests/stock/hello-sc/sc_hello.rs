// SPDX-License-Identifier: GPL-2.0

//! sc_hello: the smallest Rust module of the self-contained build. It uses the kernel crate's
//! allocation (`KVec`), `core::fmt` and the module macro, compiled from the kernel's source into
//! the module, on a kernel whose vmlinux has no Rust at all. It prints through `_printk("%s")`:
//! such a kernel's `vsprintf` refuses the kernel crate's `%pA` (`pr_info!`).

use core::fmt::{self, Write};
use kernel::prelude::*;

module! {
    type: ScHello,
    name: "sc_hello",
    author: "memmon",
    description: "memmon: self-contained build check",
    license: "GPL",
}

/// A line formatted on the stack, NUL-terminated, cut at its capacity.
struct Line {
    buf: [u8; 128],
    len: usize,
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - 1 - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

fn say(args: fmt::Arguments<'_>) {
    let mut line = Line {
        buf: [0; 128],
        len: 0,
    };
    let _ = line.write_fmt(args);
    line.buf[line.len] = 0;
    // SAFETY: both strings are NUL-terminated and live through the call.
    unsafe {
        kernel::bindings::_printk(
            c"\x016sc_hello: %s\n".as_ptr().cast(),
            line.buf.as_ptr(),
        )
    };
}

struct ScHello {
    numbers: KVec<u32>,
}

impl kernel::Module for ScHello {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut numbers = KVec::new();
        for i in 0..4u32 {
            numbers.push(i * 7, GFP_KERNEL)?;
        }
        say(format_args!("hello from Rust, self-contained: {:?}", numbers));
        Ok(ScHello { numbers })
    }
}

impl Drop for ScHello {
    fn drop(&mut self) {
        say(format_args!("goodbye ({} numbers)", self.numbers.len()));
    }
}
