//! A synthetic fleet dataset for `make bench-fleet`: N snapshots derived from the real
//! captures of memmon/tests/fixtures (their stacks, each also in variants at other
//! offsets of the same builds: a pool of distinct stacks), each snapshot a random subset
//! of the pool, scaled, labelled over 4 models, 3 versions and 2 groups.
//!
//! Usage: fleet-dataset OUT_DIR SNAPSHOTS [STACKS_PER_SNAPSHOT] [POOL]

use std::collections::BTreeMap;
use std::path::Path;

use memmon::export::{capture, write::DatasetWriter, SnapshotData, StackFrame, StackSample};

/// A small deterministic generator (xorshift64*).
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, out, count, rest @ ..] = args.as_slice() else {
        return Err("usage: fleet-dataset OUT_DIR SNAPSHOTS [STACKS_PER_SNAPSHOT] [POOL]".into());
    };
    let count: u64 = count.parse().map_err(|e| format!("{count}: {e}"))?;
    let per_snapshot: usize = rest
        .first()
        .map_or(Ok(200), |v| v.parse())
        .map_err(|e| format!("{e}"))?;
    let pool_size: usize = rest
        .get(1)
        .map_or(Ok(2000), |v| v.parse())
        .map_err(|e| format!("{e}"))?;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../memmon/tests/fixtures");
    let mut real: Vec<StackSample> = Vec::new();
    for name in ["base.cap", "grown.cap"] {
        let bytes = std::fs::read(fixtures.join(name)).map_err(|e| format!("{name}: {e}"))?;
        for snapshot in capture::snapshots(&bytes, name, None)? {
            real.extend(snapshot.samples.into_iter().filter(|s| s.resident > 0));
        }
    }
    // The pool: the real stacks, then variants with their innermost code frame moved.
    let mut pool: Vec<StackSample> = Vec::with_capacity(pool_size);
    let mut variant = 0u64;
    while pool.len() < pool_size {
        for sample in &real {
            if pool.len() == pool_size {
                break;
            }
            let mut sample = sample.clone();
            if variant > 0 {
                if let Some(StackFrame::Code { file_offset, .. }) = sample.frames.first_mut() {
                    *file_offset += 16 * variant;
                }
            }
            pool.push(sample);
        }
        variant += 1;
    }
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let models = ["s1", "s2", "s3", "s4"];
    let versions = ["1.0", "1.1", "2.0"];
    let groups = ["baseline", "test"];
    let mut written = 0u64;
    while written < count {
        let mut writer = DatasetWriter::create(Path::new(out)).map_err(|e| e.to_string())?;
        let part = (count - written).min(10_000);
        for _ in 0..part {
            written += 1;
            let factor = 1 + random.below(8);
            let mut samples = Vec::with_capacity(per_snapshot);
            let start = random.below(pool.len() as u64) as usize;
            let step = 1 + random.below(7) as usize;
            for i in 0..per_snapshot.min(pool.len()) {
                let mut sample = pool[(start + i * step) % pool.len()].clone();
                sample.resident *= factor;
                sample.mapped *= factor;
                samples.push(sample);
            }
            let anon: u64 = samples.iter().map(|s| s.resident).sum();
            let labels = BTreeMap::from([
                (
                    "model".to_owned(),
                    models[random.below(4) as usize].to_owned(),
                ),
                (
                    "version".to_owned(),
                    versions[random.below(3) as usize].to_owned(),
                ),
                (
                    "group".to_owned(),
                    groups[random.below(2) as usize].to_owned(),
                ),
                ("host".to_owned(), format!("h{}", random.below(100_000))),
            ]);
            writer
                .add(&SnapshotData {
                    id: written as i64,
                    source: format!("synthetic-{written}"),
                    labels,
                    time_unix_ns: 1_800_000_000_000_000_000 + written as i64,
                    resident_known: true,
                    anon,
                    file: 4096 * random.below(1000),
                    shmem: 0,
                    allocated: None,
                    // Processes up to 2 days old at the snapshot.
                    process_start_unix_ns: Some(
                        1_800_000_000_000_000_000 + written as i64
                            - 1_000_000_000 * random.below(172_800) as i64,
                    ),
                    class_bytes: BTreeMap::from([("heap".to_owned(), anon)]),
                    samples,
                })
                .map_err(|e| e.to_string())?;
        }
        writer.finish().map_err(|e| e.to_string())?;
    }
    eprintln!("fleet-dataset: {written} snapshots in {out}");
    Ok(())
}
