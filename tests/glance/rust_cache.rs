// A Rust program of two functions that hold memory through the standard library's
// collections: fill_cache keeps about 12 MiB of boxed values in a HashMap, build_journal
// about 6 MiB of strings in a Vec, held until the program exits. Built static and dynamic
// (tests/glance/build.sh).
use std::collections::HashMap;
use std::hint::black_box;

#[inline(never)]
fn fill_cache(entries: u64) -> HashMap<u64, Box<[u8; 1024]>> {
    let mut cache = HashMap::new();
    for key in 0..entries {
        cache.insert(key, Box::new([key as u8; 1024]));
    }
    cache
}

#[inline(never)]
fn build_journal(lines: usize) -> Vec<String> {
    (0..lines)
        .map(|i| format!("{i:>8}: {}", "x".repeat(240)))
        .collect()
}

fn main() {
    let cache = black_box(fill_cache(12 * 1024));
    let journal = black_box(build_journal(24 * 1024));
    println!("{} {}", cache.len(), journal.len());
    // Held to the end, as a server's caches are: exit without dropping them.
    std::process::exit(0);
}
