//! `memmon report` throughput: replay, symbolisation (objects not found, so
//! `object+0xoffset`) and the view of a generated 1 M-event capture with stacks.
//!
//! Run with `cargo bench -p memmon --bench report` (see docs/performance.md).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use memmon::report::model::replay::{Replay, ReplayOptions};
use memmon::report::symbolize::symbols::{SymbolOptions, Symbols};
use memmon::report::view::memory::{build, ViewOptions};

#[path = "support/generate.rs"]
mod generate;

use generate::{generate_capture, EVENTS};

fn report(capture: &str) -> usize {
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(capture.as_bytes()).unwrap_or_default();
    let analysis = replay.finish();
    let symbols = Symbols::new(&analysis.sites, &SymbolOptions::default());
    build(&analysis, &symbols, &ViewOptions::default())
        .map(|view| view.sites.len())
        .unwrap_or(0)
}

fn bench_report(c: &mut Criterion) {
    let capture = generate_capture();
    let mut group = c.benchmark_group("report");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("replay+symbols+view 1M events", |b| {
        b.iter(|| black_box(report(black_box(&capture))))
    });
    group.finish();
}

criterion_group!(benches, bench_report);
criterion_main!(benches);
