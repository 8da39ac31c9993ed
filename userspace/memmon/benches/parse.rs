//! Parse throughput on a generated 1 M-line capture with a realistic mix of kinds:
//! mostly faults, some mmap/munmap/brk, a few of the rest.
//!
//! Run with `cargo bench -p memmon --bench parse` (see docs/performance.md).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use memmon::{parse_line, CaptureReader};

/// Number of lines in the generated capture.
const LINES: usize = 1_000_000;

/// A deterministic capture: per 100 lines, 86 faults, 5 mmap (2 file-backed), 4 munmap,
/// 3 brk, 1 mprotect, 1 fsync.
fn generate_capture() -> String {
    let mut text = String::with_capacity(LINES * 90);
    let mut state: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        // xorshift64: cheap, deterministic pseudo-random numbers.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for index in 0..LINES {
        let secs = 100 + index / 100_000;
        let nanos = (index % 100_000) * 10_000 + 1;
        let pid = 4000 + (index % 3) as u64;
        let tid = pid + (index % 7 == 0) as u64;
        let random = next();
        let addr = 0x7f00_0000_0000 + (random & 0xff_ffff_f000) + (random >> 52);
        let head = format!("{secs}.{nanos:09} {pid}/{tid}");
        let line = match index % 100 {
            0..=85 => {
                let (kind, access) = match random % 10 {
                    0..=5 => ("anon", "W"),
                    6..=7 => ("file", "R"),
                    8 => ("wp", "W"),
                    _ => ("file", "X"),
                };
                let extra = if random % 31 == 0 { " user=0" } else { "" };
                format!(
                    "{head} fault type={kind} access={access} addr={addr:#x} ip={:#x}{extra}",
                    0x401000 + (random >> 40 & 0xffff)
                )
            }
            86..=88 => format!(
                "{head} mmap addr=0x0 len={} prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret={:#x}",
                (random % 64 + 1) * 4096,
                addr & !0xfff
            ),
            89..=90 => format!(
                "{head} mmap addr=0x0 len=1835008 prot=r-x flags=PRIVATE|DENYWRITE fd=3 off=4096 ret={:#x} file=/usr/lib/x86_64-linux-gnu/libc.so.6",
                addr & !0xfff
            ),
            91..=94 => format!(
                "{head} munmap addr={:#x} len={} ret=0",
                addr & !0xfff,
                (random % 64 + 1) * 4096
            ),
            95..=97 => format!(
                "{head} brk req={:#x} ret={:#x}",
                0x5555_5555_9000 + index as u64 * 4096,
                0x5555_5555_9000 + index as u64 * 4096
            ),
            98 => format!("{head} mprotect addr={:#x} len=4096 prot=r-- ret=0", addr & !0xfff),
            _ => format!("{head} fsync fd=1 ret=0"),
        };
        text.push_str(&line);
        text.push('\n');
    }
    text
}

fn parse_throughput(c: &mut Criterion) {
    let capture = generate_capture();
    // Every generated line must parse, or the figure would be meaningless.
    assert!(capture.lines().all(|line| parse_line(line).is_ok()));

    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Elements(LINES as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("parse_line 1M lines", |b| {
        b.iter(|| {
            let mut faults = 0usize;
            for line in capture.lines() {
                if let Ok(event) = parse_line(black_box(line)) {
                    faults += usize::from(event.kind.name() == "fault");
                }
            }
            black_box(faults)
        })
    });
    group.bench_function("CaptureReader 1M lines", |b| {
        b.iter(|| {
            let mut reader = CaptureReader::new(black_box(capture.as_bytes()));
            let mut events = 0usize;
            while let Some(Ok(_)) = reader.next_event() {
                events += 1;
            }
            black_box(events)
        })
    });
    group.finish();
}

criterion_group!(benches, parse_throughput);
criterion_main!(benches);
