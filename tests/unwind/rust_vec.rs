// rust_vec PAGES: a Rust program (its standard library is built without frame pointers) whose
// pages are brought in through std: a Vec grown by push (realloc, memcpy) in grow_vec, and a
// String built by format! in build_strings, between the markers fsync(1001) and fsync(1002).
use std::hint::black_box;

extern "C" {
    fn fsync(fd: i32) -> i32;
}

#[inline(never)]
fn grow_vec(pages: usize) -> Vec<u64> {
    let mut v = Vec::new();
    for i in 0..pages * 512 {
        v.push(i as u64 * 3);
    }
    v
}

#[inline(never)]
fn build_strings(pages: usize) -> Vec<String> {
    (0..pages * 64).map(|i| format!("{i:>56}")).collect()
}

fn main() {
    let pages: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    // SAFETY: fsync on a bad descriptor only fails (EBADF): memmon's in-stream marker.
    unsafe { fsync(1001) };
    let v = grow_vec(pages);
    let s = build_strings(pages);
    // SAFETY: as above.
    unsafe { fsync(1002) };
    black_box((v, s));
}
