// SPDX-License-Identifier: GPL-2.0

//! stock_hello: the smallest Rust module that uses the kernel crate's allocation, formatting
//! and parameter code, so that loading it on Debian's kernel proves the module's references
//! to Rust symbols (mangled with the crates' hashes) resolve against that kernel's exports.

use kernel::prelude::*;

module! {
    type: StockHello,
    name: "stock_hello",
    authors: ["memmon"],
    description: "memmon: stock-kernel toolchain check",
    license: "GPL",
    params: {
        greeting_count: u32 {
            default: 3,
            description: "how many numbers to keep",
        },
    },
}

struct StockHello {
    numbers: KVec<u32>,
}

impl kernel::Module for StockHello {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // `value()` gives the value from 7.3 on and a reference to it before: `clone()`
        // makes a `u32` of either.
        let count: u32 = module_parameters::greeting_count.value().clone();
        let mut numbers = KVec::new();
        for i in 0..count {
            numbers.push(i * 7, GFP_KERNEL)?;
        }
        pr_info!("hello from Rust on the stock kernel: {:?}\n", numbers);
        Ok(StockHello { numbers })
    }
}

impl Drop for StockHello {
    fn drop(&mut self) {
        pr_info!("goodbye ({} numbers)\n", self.numbers.len());
    }
}
