//! Heap profiles' parser: jemalloc's `heap_v2` and gperftools' `heap profile:` dumps,
//! unbiased as jeprof does, normalised through their maps; malformed dumps each give one
//! error naming the line; random and mutated dumps never panic (proptest).

use std::collections::BTreeMap;

use memmon::export::heap_profile::{
    is_text_dump, parse_text, round, HeapFormat, HeapProfile, Sampling, OUTSIDE_FILES,
};
use memmon::export::{read_input, StackFrame};
use proptest::prelude::*;

/// A jemalloc dump of a 32-bit ARM process (a speaker's): 8-digit addresses and maps.
const ARM_DUMP: &str = "heap_v2/524288
  t*: 3: 1100000 [0: 0]
  t0: 2: 1000000 [0: 0]
  t1: 1: 100000 [0: 0]
@ 0xb6f01234 0x00010a41 0x00010b07
  t*: 2: 1000000 [0: 0]
  t0: 2: 1000000 [0: 0]
@ 0xb6f01234 0x000109f1 0xbe800010
  t*: 1: 100000 [0: 0]
  t1: 1: 100000 [0: 0]

MAPPED_LIBRARIES:
00010000-00012000 r-xp 00000000 b3:02 1234       /usr/bin/speakerd
00021000-00022000 rw-p 00001000 b3:02 1234       /usr/bin/speakerd
b6f00000-b6f80000 r-xp 00010000 b3:02 777        /usr/lib/libjemalloc.so.2
be7df000-be800000 rw-p 00000000 00:00 0          [stack]
";

fn build_ids(path: &str) -> Option<String> {
    match path {
        "/usr/bin/speakerd" => Some("aa01".to_owned()),
        "/usr/lib/libjemalloc.so.2" => Some("bb02".to_owned()),
        _ => None,
    }
}

fn parse(text: &str) -> HeapProfile {
    parse_text(text.as_bytes()).unwrap()
}

fn error(text: &str) -> String {
    parse_text(text.as_bytes()).unwrap_err().to_string()
}

/// jeprof's AdjustSamples for version 2, written out as in its Perl.
fn jeprof_v2(n: f64, s: f64, rate: f64) -> f64 {
    let ratio = ((s * 1.0) / n) / rate;
    let scale_factor = 1.0 / (1.0 - (-ratio).exp());
    s * scale_factor
}

#[test]
fn a_32_bit_arm_dump_is_normalised_through_its_own_maps() {
    let dump = parse(ARM_DUMP);
    assert_eq!(dump.format, HeapFormat::Jemalloc);
    assert_eq!(dump.sampling, Sampling::Poisson { period: 524288.0 });
    assert_eq!(dump.stacks.len(), 2);
    assert_eq!(dump.stacks[0].line, 5);
    assert_eq!(dump.stacks[0].addresses, [0xb6f0_1234, 0x10a41, 0x10b07]);
    // Only the t* lines count; the per-thread and header lines do not.
    assert_eq!(
        (dump.stacks[0].objects, dump.stacks[0].bytes),
        (2, 1_000_000)
    );
    assert_eq!((dump.stacks[1].objects, dump.stacks[1].bytes), (1, 100_000));
    assert_eq!(
        dump.stacks[0].unbiased_bytes,
        jeprof_v2(2.0, 1_000_000.0, 524_288.0)
    );
    assert_eq!(round(dump.stacks[0].unbiased_bytes), 1_626_870);
    assert_eq!(round(dump.stacks[1].unbiased_bytes), 575_876);
    let frames = dump
        .frames(&dump.stacks[1], &mut |path| build_ids(path))
        .unwrap();
    assert_eq!(
        frames,
        [
            StackFrame::Code {
                build_id: "bb02".to_owned(),
                // 0xb6f01233 - 0xb6f00000 + 0x10000
                file_offset: 0x11233,
                object: "/usr/lib/libjemalloc.so.2".to_owned(),
            },
            StackFrame::Code {
                build_id: "aa01".to_owned(),
                file_offset: 0x9f0,
                object: "/usr/bin/speakerd".to_owned(),
            },
            // An address in the stack's anonymous mapping: code outside files.
            StackFrame::Label(OUTSIDE_FILES.to_owned()),
        ]
    );
    let snapshot = dump
        .snapshot(ARM_DUMP.as_bytes(), "speaker.heap", &mut |path| {
            build_ids(path)
        })
        .unwrap();
    assert_eq!(snapshot.allocated, Some(1_626_870 + 575_876));
    assert!(!snapshot.resident_known);
    assert_eq!(snapshot.labels["command"], "speakerd");
    assert_eq!(snapshot.labels["profiler"], "jemalloc");
    assert_eq!(snapshot.samples[0].allocated, 1_626_870);
    // The same code loaded elsewhere: the same frames.
    let moved = ARM_DUMP
        .replace("0x00010a41", "0x00400a41")
        .replace("0x00010b07", "0x00400b07")
        .replace("00010000-00012000", "00400000-00402000");
    let moved = parse(&moved);
    let frames = |dump: &HeapProfile| {
        dump.frames(&dump.stacks[0], &mut |path| build_ids(path))
            .unwrap()
    };
    assert_eq!(frames(&dump), frames(&moved));
}

#[test]
fn unbiasing_follows_jeprof_for_every_rate_and_count() {
    let poisson = Sampling::Poisson { period: 1.0 };
    // R = 1: k = 1/(1 - e^-(s/c)).
    assert_eq!(poisson.unbias(4, 64).1, jeprof_v2(4.0, 64.0, 1.0));
    // c = 0: no adjustment (jeprof's `if ($n1 != 0)`).
    assert_eq!(poisson.unbias(0, 64), (0.0, 64.0));
    // R = 0 (heap_v2/0): no adjustment (jeprof's `if ($sample_adjustment)`).
    let dump = parse("heap_v2/0\n@ 0x10\n t*: 2: 100 [0: 0]\nMAPPED_LIBRARIES:\n");
    assert_eq!(dump.sampling, Sampling::Poisson { period: 0.0 });
    assert_eq!(dump.stacks[0].unbiased_bytes, 100.0);
    // heap_v2/1: every byte sampled; a big block is unchanged to the byte.
    let dump = parse("heap_v2/1\n@ 0x10\n t*: 1: 4096 [0: 0]\nMAPPED_LIBRARIES:\n");
    assert_eq!(dump.stacks[0].unbiased_bytes, 4096.0);
    // gperftools' own heap profiler: exact counts.
    let dump = parse(
        "heap profile:    3:  3000 [    5:  4000] @ heapprofile\n\
         3: 3000 [5: 4000] @ 0x10 0x20\n\nMAPPED_LIBRARIES:\n",
    );
    assert_eq!(dump.format, HeapFormat::Gperftools);
    assert_eq!(dump.sampling, Sampling::Exact);
    assert_eq!(dump.stacks[0].unbiased_bytes, 3000.0);
    // tcmalloc's sampled heap (v2) and the old v1 (half the figure, divided where the mean
    // size is under it).
    let v2 = parse("heap profile: 1: 100 [1: 100] @ heap_v2/524288\n1: 100 [1: 100] @ 0x10\n--- Memory map: ---\n");
    assert_eq!(v2.sampling, Sampling::Poisson { period: 524288.0 });
    assert_eq!(v2.stacks[0].unbiased_bytes, jeprof_v2(1.0, 100.0, 524288.0));
    let v1 = parse(
        "heap profile: 1: 100 [1: 100] @ heap/1000\n1: 100 [1: 100] @ 0x10\nMAPPED_LIBRARIES:\n",
    );
    assert_eq!(v1.sampling, Sampling::Uniform { period: 500.0 });
    assert_eq!(v1.stacks[0].unbiased_bytes, 500.0);
    // No type and equal pairs: v1 at 128 KiB; unequal: exact.
    let old = parse("heap profile: 1: 100 [1: 100]\n1: 100 [1: 100] @ 0x10\nMAPPED_LIBRARIES:\n");
    assert_eq!(old.sampling, Sampling::Uniform { period: 131072.0 });
    let exact = parse("heap profile: 1: 100 [2: 200]\n1: 100 [2: 200] @ 0x10\nMAPPED_LIBRARIES:\n");
    assert_eq!(exact.sampling, Sampling::Exact);
}

#[test]
fn malformed_dumps_each_give_one_line_naming_the_line() {
    // Truncated: cut inside the maps, inside a stack, before its t* line, before the maps.
    let cut = &ARM_DUMP[..ARM_DUMP.len() - 20];
    assert_eq!(
        error(cut),
        "line 16: truncated: the last line has no newline"
    );
    let before_maps = ARM_DUMP.split("MAPPED_LIBRARIES:").next().unwrap();
    assert_eq!(
        error(before_maps),
        "line 11: no MAPPED_LIBRARIES section (truncated?)"
    );
    let stack_cut = ARM_DUMP.split("  t*: 1: 100000").next().unwrap();
    assert_eq!(
        error(stack_cut),
        "line 8: a stack without its `t*:` line (truncated?)"
    );
    let missing_total = ARM_DUMP.replacen("  t*: 2: 1000000 [0: 0]\n", "", 1);
    assert_eq!(
        error(&missing_total),
        "line 5: a stack without its `t*:` line"
    );
    // Bad counts.
    assert_eq!(
        error(&ARM_DUMP.replace("t*: 2: 1000000", "t*: 2: 1e6")),
        "line 6: bad count \"1e6\" (not a number)"
    );
    assert_eq!(
        error(&ARM_DUMP.replace("t*: 2: 1000000", "t*: -2: 1000000")),
        "line 6: bad count \"-2\" (not a number)"
    );
    assert_eq!(
        error(&ARM_DUMP.replace("t*: 2: 1000000", "t*: 2: 99999999999999999999")),
        "line 6: bad count \"99999999999999999999\" (over 64 bits)"
    );
    assert_eq!(
        error(&ARM_DUMP.replace("t*: 2: 1000000 [0: 0]", "t*: 2: 1000000")),
        "line 6: bad counts \" 2: 1000000\" (not `C: S [C: S]`)"
    );
    assert_eq!(
        error(&ARM_DUMP.replacen("  t0: 2: 1000000 [0: 0]\n", "  t*: 2: 1000000 [0: 0]\n", 2)),
        "line 7: a second `t*:` line for one stack"
    );
    assert_eq!(
        error(&ARM_DUMP.replace("0x00010a41", "0xzz")),
        "line 5: bad address \"0xzz\" in a stack"
    );
    assert_eq!(
        error(&ARM_DUMP.replace("00021000-00022000 rw-p", "00021000 rw-p")),
        "line 14: bad maps line \"00021000 rw-p 00001000 b3:02 1234       /usr/bin/speakerd\""
    );
    assert_eq!(
        error("heap_v3/100\n"),
        "line 1: not a heap profile (no `heap_v2/R` nor `heap profile:` header)"
    );
    // A stack whose object's build ID is unknown.
    let dump = parse(ARM_DUMP);
    let unknown = dump
        .frames(&dump.stacks[0], &mut |path| {
            (path != "/usr/bin/speakerd").then(|| "bb02".to_owned())
        })
        .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "line 5: unknown build ID of /usr/bin/speakerd (give --sysroot where the binary is)"
    );
}

#[test]
fn export_names_the_file_and_line_of_a_bad_dump() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("heap-profile-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("speaker.0.f.heap");
    std::fs::write(&path, ARM_DUMP.replace("t*: 2: 1000000", "t*: 2: x")).unwrap();
    let bad = read_input(&path, &BTreeMap::new(), None).unwrap_err();
    assert_eq!(
        bad.to_string(),
        format!("{}: line 6: bad count \"x\" (not a number)", path.display())
    );
    // Gzipped, the same line.
    let gzipped = dir.join("speaker.1.f.heap.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(
        &mut encoder,
        ARM_DUMP.replace("t*: 2: 1000000", "t*: 2: x").as_bytes(),
    )
    .unwrap();
    std::fs::write(&gzipped, encoder.finish().unwrap()).unwrap();
    let bad = read_input(&gzipped, &BTreeMap::new(), None).unwrap_err();
    assert_eq!(
        bad.to_string(),
        format!(
            "{}: line 6: bad count \"x\" (not a number)",
            gzipped.display()
        )
    );
    // The binaries are not here: the build ID is what is missing.
    std::fs::write(&path, ARM_DUMP).unwrap();
    let bad = read_input(&path, &BTreeMap::new(), None).unwrap_err();
    assert_eq!(
        bad.to_string(),
        format!(
            "{}: line 5: unknown build ID of /usr/lib/libjemalloc.so.2 (give --sysroot where \
             the binary is)",
            path.display()
        )
    );
}

/// A valid dump of `stacks` (addresses within the one mapping, counts).
fn dump_of(rate: u64, stacks: &[(Vec<u64>, u64, u64)]) -> String {
    let mut text = format!("heap_v2/{rate}\n  t*: 0: 0 [0: 0]\n");
    for (addresses, objects, bytes) in stacks {
        text.push('@');
        for address in addresses {
            text.push_str(&format!(" 0x{address:x}"));
        }
        text.push_str(&format!(
            "\n  t*: {objects}: {bytes} [0: 0]\n  t3: {objects}: {bytes} [0: 0]\n"
        ));
    }
    text.push_str("\nMAPPED_LIBRARIES:\n00400000-00800000 r-xp 00001000 08:01 42 /usr/bin/app\n");
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random valid dumps read back with their counts, unbiased as jeprof does, and
    /// normalised to offsets in the program.
    #[test]
    fn valid_dumps_read_back(
        rate_log in 0u32..24,
        stacks in prop::collection::vec(
            (prop::collection::vec(0x40_0001u64..0x80_0000, 1..8), 0u64..1000, 0u64..1 << 40),
            0..20,
        ),
    ) {
        let rate = 1u64 << rate_log;
        let dump = parse(&dump_of(rate, &stacks));
        prop_assert_eq!(dump.stacks.len(), stacks.len());
        for (read, (addresses, objects, bytes)) in dump.stacks.iter().zip(&stacks) {
            prop_assert_eq!(&read.addresses, addresses);
            prop_assert_eq!((read.objects, read.bytes), (*objects, *bytes));
            let expected = if *objects == 0 {
                *bytes as f64
            } else {
                jeprof_v2(*objects as f64, *bytes as f64, rate as f64)
            };
            prop_assert_eq!(read.unbiased_bytes, expected);
            prop_assert!(read.unbiased_bytes >= *bytes as f64);
            let frames = dump.frames(read, &mut |_| Some("ab".to_owned())).unwrap();
            for (frame, address) in frames.iter().zip(addresses) {
                let expected = StackFrame::Code {
                    build_id: "ab".to_owned(),
                    file_offset: address - 1 - 0x40_0000 + 0x1000,
                    object: "/usr/bin/app".to_owned(),
                };
                prop_assert_eq!(frame, &expected);
            }
        }
    }

    /// Any bytes, and any valid dump cut or with a byte changed: an error or a dump, never
    /// a panic; a cut dump is never read as whole, but where it is cut at the end of a line
    /// of its maps (which can end at any line: the stacks are all there).
    #[test]
    fn mutated_dumps_never_panic(
        stacks in prop::collection::vec(
            (prop::collection::vec(0x40_0001u64..0x80_0000, 1..4), 1u64..100, 1u64..1 << 20),
            1..6,
        ),
        cut in 0usize..1000,
        position in 0usize..1000,
        byte in any::<u8>(),
        noise in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let text = dump_of(4096, &stacks);
        let _ = parse_text(&noise);
        let mut prefixed = b"heap_v2/4096\n".to_vec();
        prefixed.extend(&noise);
        let _ = parse_text(&prefixed);
        let cut = cut % text.len();
        let maps = text.find("MAPPED_LIBRARIES:\n").unwrap() + "MAPPED_LIBRARIES:\n".len();
        match parse_text(&text.as_bytes()[..cut]) {
            Ok(dump) => {
                prop_assert!(cut >= maps && text.as_bytes()[cut - 1] == b'\n', "cut at {}", cut);
                prop_assert_eq!(dump.stacks.len(), stacks.len());
            }
            Err(_) => prop_assert!(cut < maps || text.as_bytes()[cut - 1] != b'\n'),
        }
        let mut changed = text.clone().into_bytes();
        let position = position % changed.len();
        changed[position] = byte;
        if let Ok(dump) = parse_text(&changed) {
            for stack in &dump.stacks {
                let _ = dump.frames(stack, &mut |_| Some("ab".to_owned()));
                prop_assert!(stack.unbiased_bytes.is_finite() || stack.objects == 0);
            }
        }
        prop_assert!(is_text_dump(text.as_bytes()));
    }
}
