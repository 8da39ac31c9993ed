//! The module's own parser of `/proc/memmon/unwind` writes (`src/unwind/format.rs`, free of
//! the kernel), compiled here: it accepts every write this crate encodes, and refuses every
//! fuzz case the crate's validator refuses for the format (EINVAL), so that the two cannot
//! drift apart.

#[allow(dead_code, clippy::all)]
#[path = "../../../src/unwind/format.rs"]
mod format;

use memmon_unwind::fuzz::{generate, FuzzContext};
use memmon_unwind::protocol::Reject;

#[test]
fn the_module_parser_agrees_with_the_crate_on_every_fuzz_case() {
    let context = FuzzContext::new(100, 200);
    for write in context.setup_writes() {
        assert!(
            format::parse(&write, format::TableArch::X86_64).is_ok(),
            "the setup write is refused"
        );
    }
    let cases = generate(7, 10_000, &context);
    let mut format_errors = 0;
    for (i, case) in cases.iter().enumerate() {
        let parsed = format::parse(&case.bytes, format::TableArch::X86_64);
        match &case.reject {
            Reject::Invalid(_) => {
                format_errors += 1;
                assert!(
                    parsed.is_err(),
                    "case {i} ({}): the module accepts it",
                    case.mutation
                );
            }
            // Refused later, for the module's state (unknown key, process not watched): the
            // format itself is valid.
            _ => assert!(
                parsed.is_ok(),
                "case {i} ({}): the module refuses its format: {:?}",
                case.mutation,
                parsed.err()
            ),
        }
    }
    assert!(format_errors > 5_000, "only {format_errors} format cases");
}

/// The module refuses a write from its first bytes (`parse_prefix`, before it copies the
/// rest in) for exactly the reasons the crate finds there (`Invalid::in_prefix`), with the
/// same text as its whole-write parser, and accepts the prefix of every other write.
#[test]
fn the_module_prefix_parser_refuses_what_the_crate_finds_in_a_prefix() {
    let context = FuzzContext::new(100, 200);
    let mut writes: Vec<(Vec<u8>, Option<Reject>)> = context
        .setup_writes()
        .into_iter()
        .map(|write| (write, None))
        .collect();
    writes.extend(
        generate(11, 10_000, &context)
            .into_iter()
            .map(|case| (case.bytes, Some(case.reject))),
    );
    let mut prefix_errors = 0;
    for (i, (bytes, reject)) in writes.iter().enumerate() {
        let prefix = &bytes[..bytes.len().min(format::PREFIX_BYTES)];
        let parsed = format::parse_prefix(prefix, bytes.len(), format::TableArch::X86_64);
        match reject {
            Some(Reject::Invalid(invalid)) if invalid.in_prefix() => {
                prefix_errors += 1;
                let why = parsed.expect_err("the prefix parser accepts it");
                assert_eq!(
                    format::parse(bytes, format::TableArch::X86_64).err(),
                    Some(why),
                    "case {i}"
                );
            }
            _ => assert!(parsed.is_ok(), "case {i}: {:?}", parsed.err()),
        }
    }
    assert!(prefix_errors > 2_000, "only {prefix_errors} prefix cases");
}

/// The module reads the index shape of a write's rows from its first and last row alone:
/// the same as from all of them.
#[test]
fn the_module_reads_the_index_shape_of_a_write() {
    let context = FuzzContext::new(100, 200);
    for write in context.setup_writes() {
        let Ok(format::Command::AddTable { rows, .. }) =
            format::parse(&write, format::TableArch::X86_64)
        else {
            panic!("the setup write is not an ADD_TABLE");
        };
        let all: Vec<format::Row> = rows.iter().collect();
        let (first, last) = (all[0].pc, all[all.len() - 1].pc);
        assert_eq!(
            rows.index_shape(),
            Some(memmon_unwind::protocol::index_shape(first, last, all.len()))
        );
    }
}

/// The index the module keeps over a table has the shape, and so the memory, the crate's
/// model counts (`memory_unwind` in stats is checked against the model in the VM).
#[test]
fn the_module_index_shape_is_the_crates() {
    let spans = [
        0u32,
        1,
        15,
        16,
        17,
        255,
        4096,
        65_535,
        1 << 20,
        3 << 24,
        u32::MAX,
    ];
    for rows in [1usize, 2, 3, 4, 5, 17, 100, 1000, 28_274, 4 << 20] {
        for &span in &spans {
            for first in [0u32, 0x1000, u32::MAX - span] {
                let Some(last) = first.checked_add(span) else {
                    continue;
                };
                let module = format::index_shape(first, last, rows);
                assert_eq!(
                    module,
                    memmon_unwind::protocol::index_shape(first, last, rows),
                    "rows {rows} first {first:#x} last {last:#x}"
                );
                // At most one entry per INDEX_ROWS rows, plus one; every pc falls in a bucket.
                assert!(module.1 <= rows / memmon_unwind::protocol::INDEX_ROWS + 1);
                assert_eq!(u64::from(span) >> module.0, module.1 as u64 - 1);
            }
        }
    }
}

/// The module takes the descriptions this crate makes of 3.11 and 3.13 interpreters (their
/// thread states found in the thread lists), the older kinds, and a forget.
#[test]
fn the_module_takes_a_python_description() {
    use memmon_unwind::protocol::{encode_set_python, ThreadState};
    use memmon_unwind::python::{describe, PythonSymbols, LAYOUT_3_11, LAYOUT_3_13};
    for (layout, list, frame) in [
        (LAYOUT_3_11, (40, 0, 16, 8, 160), (32, 48, 56, 68, 0xff)),
        (
            LAYOUT_3_13,
            (632, 7264, 7344, 8, 160),
            (0, 8, 56, 0xffff, 3),
        ),
    ] {
        let symbols = PythonSymbols {
            version: layout.version,
            runtime: 0x00a5_b740,
            code_type: 0x0095_9440,
            eval: (0x0050_0000, 0x0051_0000),
            layout,
            own_offsets: false,
        };
        let description = describe(&symbols, 0x1000).expect("a layout");
        match format::parse(
            &encode_set_python(1234, Some(&description)),
            format::TableArch::X86_64,
        ) {
            Ok(format::Command::SetPython {
                pid: 1234,
                python: Some(spec),
            }) => {
                assert_eq!(
                    spec.thread_state,
                    format::ThreadStateAt::List(format::ThreadList {
                        head: 0x00a5_b740 + 0x1000 + list.0,
                        interp_next: list.1,
                        interp_threads: list.2,
                        thread_next: list.3,
                        thread_native_id: list.4,
                    })
                );
                assert_eq!(spec.code_type, 0x0095_a440);
                assert_eq!(
                    (spec.frame_code, spec.frame_previous, spec.frame_instr),
                    (frame.0, frame.1, frame.2)
                );
                assert_eq!((spec.frame_is_entry, spec.owner_cstack), (frame.3, frame.4));
            }
            other => panic!(
                "the module refuses the {:?} description: {:?}",
                layout.version,
                other.err()
            ),
        }
        // The older kinds (a global thread state with its thread id, a thread-local one)
        // are still taken.
        let mut global = description;
        global.thread_state = ThreadState::Global(0x00a5_b740 + 576);
        global.thread_id = 152;
        assert!(format::parse(
            &encode_set_python(1234, Some(&global)),
            format::TableArch::X86_64
        )
        .is_ok());
        let mut tls = description;
        tls.thread_state = ThreadState::ThreadLocal(-16);
        tls.thread_id = memmon_unwind::protocol::NO_OFFSET;
        assert!(format::parse(
            &encode_set_python(1234, Some(&tls)),
            format::TableArch::X86_64
        )
        .is_ok());
    }
    assert!(matches!(
        format::parse(&encode_set_python(1234, None), format::TableArch::X86_64),
        Ok(format::Command::SetPython { python: None, .. })
    ));
}

/// The module refuses every one of the Python fuzz cases the crate refuses for the format
/// (vm-38's 10 000 descriptions), and takes the format of the others.
#[test]
fn the_module_parser_agrees_on_the_python_fuzz_cases() {
    use memmon_unwind::fuzz::generate_python;
    let context = FuzzContext::new(100, 200);
    let mut format_errors = 0;
    for (i, case) in generate_python(9, 10_000, &context).iter().enumerate() {
        let parsed = format::parse(&case.bytes, format::TableArch::X86_64);
        match &case.reject {
            Reject::Invalid(_) => {
                format_errors += 1;
                assert!(
                    parsed.is_err(),
                    "case {i} ({}): the module accepts it",
                    case.mutation
                );
            }
            _ => assert!(
                parsed.is_ok(),
                "case {i} ({}): the module refuses its format: {:?}",
                case.mutation,
                parsed.err()
            ),
        }
    }
    assert!(format_errors > 8_000, "only {format_errors} format cases");
}

/// The module and the crate check every row the same way for both architectures: every rule
/// byte (rule and flags), every slot and the CFA offsets at the bounds, in a table of that
/// row and the end marker, written for x86_64 and for arm64, each to a module of each.
#[test]
fn the_module_checks_rows_of_both_architectures_as_the_crate() {
    use memmon_unwind::protocol::{decode, encode_add_table, Row, Rule};
    use memmon_unwind::Arch;
    let key = memmon_unwind::Key([9; 16]);
    let archs = [
        (Arch::X86_64, format::TableArch::X86_64),
        (Arch::Aarch64, format::TableArch::Arm64),
    ];
    let (mut taken, mut refused) = (0usize, 0usize);
    for code in 0..=255u8 {
        for slot in i8::MIN..=i8::MAX {
            for cfa in [0u16, 7, 8, 15, 16, 17, 1024, u16::MAX] {
                // A row whose rule byte is `code`, written as the crate writes rows (rule and
                // flags or'ed), then patched to the raw byte.
                let row = Row {
                    pc: 0x1000,
                    cfa,
                    rule: Rule::Sp,
                    flags: 0,
                    slot,
                };
                for (table, _) in archs {
                    let mut bytes =
                        encode_add_table(&key, table, &[row, Row::bare(0x2000, Rule::NoInfo)]);
                    bytes[40 + 6] = code;
                    for (module, module_format) in archs {
                        let crate_says = decode(&bytes, module).is_ok();
                        let module_says = format::parse(&bytes, module_format).is_ok();
                        assert_eq!(
                            crate_says, module_says,
                            "rule byte {code:#x}, slot {slot}, cfa {cfa}, a {table:?} table for a {module:?} module"
                        );
                        if module_says {
                            taken += 1;
                        } else {
                            refused += 1;
                        }
                    }
                }
            }
        }
    }
    // x86_64: rule 0 (cfa >= 8) or 1 (cfa >= 16), slot 0 or -128..=-2, no flags; rules 2-4
    // bare. arm64: rule 0 (any cfa) or 1 (cfa >= 16), slot -128..=0, with the flag 0x10 or
    // not, with 0x08 only for slot -127..=-1; rules 2-4 bare.
    // Of the 8 CFA offsets, x86_64's rule 0 takes 6, rule 1 4, each with 128 slots; arm64's
    // rule 0 all 8, rule 1 4, each with 129 slots under 2 flag sets (none, signed) and 127
    // under the 2 with X29 below the return address.
    let x86 = (6 + 4) * 128 + 3;
    let arm = (8 + 4) * (2 * 129 + 2 * 127) + 3;
    assert_eq!(taken, x86 + arm, "{refused} refused");
}
