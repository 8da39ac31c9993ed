//! Property tests of the parser: `parse(format(e)) == e` for every event, and no input
//! makes it panic.

use memmon::{
    parse_line, parse_line_bytes, Access, Advice, CaptureReader, Errno, EscapedStr, Event,
    EventKind, FaultType, Mlock2Flags, MlockallFlags, MmapFlags, MremapFlags, MsyncFlags,
    OtherFlags, Prot, RssAt, ShmatFlags, Stack, StackEnd, SyscallResult, Timestamp,
};
use proptest::prelude::*;

fn timestamp() -> impl Strategy<Value = Timestamp> {
    (any::<u64>(), 0u32..1_000_000_000).prop_map(|(secs, nanos)| Timestamp { secs, nanos })
}

fn syscall_result() -> impl Strategy<Value = SyscallResult> + Clone {
    prop_oneof![
        any::<u64>().prop_map(Ok),
        (1u32..5000).prop_map(|n| Err(Errno::new(n).unwrap())),
    ]
}

fn escaped() -> impl Strategy<Value = EscapedStr<'static>> {
    proptest::collection::vec(any::<u8>(), 0..40).prop_map(|bytes| EscapedStr::escape(&bytes))
}

fn prot() -> impl Strategy<Value = Prot> {
    (0u64..8).prop_map(Prot::from_bits_truncate)
}

fn fault() -> impl Strategy<Value = EventKind<'static>> {
    (
        prop_oneof![
            Just(FaultType::Anon),
            Just(FaultType::File),
            Just(FaultType::Swap),
            Just(FaultType::Wp),
            Just(FaultType::Spurious),
            Just(FaultType::Numa),
            Just(FaultType::Hugetlb),
            Just(FaultType::Access),
            Just(FaultType::Other)
        ],
        prop_oneof![Just(Access::Read), Just(Access::Write), Just(Access::Exec)],
        any::<u64>(),
        any::<u64>(),
        any::<[bool; 4]>(),
        prop_oneof![Just(1u64), any::<u64>()],
        proptest::option::of(any::<u64>()),
    )
        .prop_map(
            |(fault_type, access, addr, ip, [user, huge, major, retry], pages, gen)| {
                EventKind::Fault {
                    fault_type,
                    access,
                    addr,
                    ip,
                    user,
                    huge,
                    major,
                    retry,
                    pages,
                    gen,
                }
            },
        )
}

fn syscall() -> impl Strategy<Value = EventKind<'static>> {
    let region = (any::<u64>(), any::<u64>(), syscall_result());
    prop_oneof![
        (
            any::<u64>(),
            any::<u64>(),
            prot(),
            any::<u64>(),
            any::<i64>(),
            any::<i64>(),
            syscall_result(),
            proptest::option::of(escaped())
        )
            .prop_map(
                |(addr, len, prot, flags, fd, off, ret, file)| EventKind::Mmap {
                    addr,
                    len,
                    prot,
                    flags: MmapFlags::from_bits_retain(flags),
                    fd,
                    off,
                    ret,
                    file
                }
            ),
        region
            .clone()
            .prop_map(|(addr, len, ret)| EventKind::Munmap { addr, len, ret }),
        region
            .clone()
            .prop_map(|(addr, len, ret)| EventKind::Mlock { addr, len, ret }),
        region.prop_map(|(addr, len, ret)| EventKind::Munlock { addr, len, ret }),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            syscall_result()
        )
            .prop_map(
                |(old, old_len, new_len, flags, new, ret)| EventKind::Mremap {
                    old,
                    old_len,
                    new_len,
                    flags: MremapFlags::from_bits_retain(flags),
                    new,
                    ret
                }
            ),
        (any::<u64>(), any::<u64>()).prop_map(|(req, ret)| EventKind::Brk { req, ret }),
        (any::<u64>(), any::<u64>(), prot(), syscall_result()).prop_map(
            |(addr, len, prot, ret)| EventKind::Mprotect {
                addr,
                len,
                prot,
                ret
            }
        ),
        (any::<u64>(), any::<u64>(), any::<i32>(), syscall_result()).prop_map(
            |(addr, len, advice, ret)| EventKind::Madvise {
                addr,
                len,
                advice: Advice(advice),
                ret
            }
        ),
        (any::<u64>(), any::<u64>(), any::<u64>(), syscall_result()).prop_map(
            |(addr, len, flags, ret)| EventKind::Mlock2 {
                addr,
                len,
                flags: Mlock2Flags::from_bits_retain(flags),
                ret
            }
        ),
        (any::<u64>(), syscall_result()).prop_map(|(flags, ret)| EventKind::Mlockall {
            flags: MlockallFlags::from_bits_retain(flags),
            ret
        }),
        syscall_result().prop_map(|ret| EventKind::Munlockall { ret }),
        (any::<i64>(), syscall_result()).prop_map(|(fd, ret)| EventKind::Fsync { fd, ret }),
        new_syscall(),
    ]
}

/// The system calls added after the first eighteen.
fn new_syscall() -> impl Strategy<Value = EventKind<'static>> {
    prop_oneof![
        (any::<u64>(), any::<u64>(), any::<u64>(), syscall_result()).prop_map(
            |(addr, len, flags, ret)| EventKind::Msync {
                addr,
                len,
                flags: MsyncFlags::from_bits_retain(flags),
                ret
            }
        ),
        (
            any::<u64>(),
            any::<u64>(),
            prot(),
            any::<i64>(),
            syscall_result()
        )
            .prop_map(|(addr, len, prot, pkey, ret)| EventKind::PkeyMprotect {
                addr,
                len,
                prot,
                pkey,
                ret
            }),
        (any::<u64>(), any::<u64>(), any::<u64>(), syscall_result()).prop_map(
            |(addr, len, flags, ret)| EventKind::Mseal {
                addr,
                len,
                flags: OtherFlags::from_bits_retain(flags),
                ret
            }
        ),
        (
            any::<i64>(),
            any::<u64>(),
            any::<u64>(),
            any::<i32>(),
            any::<u64>(),
            syscall_result()
        )
            .prop_map(
                |(pidfd, vec, vlen, advice, flags, ret)| EventKind::ProcessMadvise {
                    pidfd,
                    vec,
                    vlen,
                    advice: Advice(advice),
                    flags: OtherFlags::from_bits_retain(flags),
                    ret
                }
            ),
        (any::<i64>(), any::<u64>(), any::<u64>(), syscall_result()).prop_map(
            |(shmid, addr, flags, ret)| EventKind::Shmat {
                shmid,
                addr,
                flags: ShmatFlags::from_bits_retain(flags),
                ret
            }
        ),
        (any::<u64>(), syscall_result()).prop_map(|(addr, ret)| EventKind::Shmdt { addr, ret }),
    ]
}

fn lifecycle() -> impl Strategy<Value = EventKind<'static>> {
    prop_oneof![
        escaped().prop_map(|text| EventKind::Mark { text }),
        (escaped(), escaped()).prop_map(|(comm, filename)| EventKind::Exec { comm, filename }),
        (any::<u32>(), any::<bool>())
            .prop_map(|(child, watched)| EventKind::Fork { child, watched }),
        any::<i32>().prop_map(|code| EventKind::Exit { code }),
        any::<u64>().prop_map(|count| EventKind::Lost { count }),
        (any::<u64>(), any::<u64>()).prop_map(|(n, armed)| EventKind::Gen { n, armed }),
        (
            any::<[u64; 5]>(),
            prop_oneof![Just(RssAt::Exit), Just(RssAt::Exec), Just(RssAt::Mark)]
        )
            .prop_map(|([anon, file, shmem, swap, peak], at)| EventKind::Rss {
                anon,
                file,
                shmem,
                swap,
                peak,
                at
            }),
    ]
}

fn event() -> impl Strategy<Value = Event<'static>> {
    (
        timestamp(),
        any::<u32>(),
        any::<u32>(),
        prop_oneof![fault(), syscall(), lifecycle()],
        proptest::option::of(any::<u64>()),
        proptest::option::of(proptest::collection::vec(any::<u64>(), 0..20)),
    )
        .prop_map(|(time, pid, tid, kind, dur, stack)| {
            // dur= belongs to system calls, stack= to faults and system calls.
            let dur = dur.filter(|_| kind.is_syscall());
            let stack = stack.filter(|_| kind.may_have_stack()).map(|frames| {
                // Every reason, for a stack that has entries (as the module writes it).
                let end = frames
                    .first()
                    .map_or(StackEnd::Complete, |f| StackEnd::ALL[(f % 5) as usize]);
                Stack(frames, end)
            });
            Event {
                time,
                pid,
                tid,
                kind,
                dur,
                stack,
                python: None,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn format_then_parse_round_trips(event in event()) {
        let line = event.to_string();
        let parsed = parse_line(&line);
        prop_assert_eq!(parsed.as_ref(), Ok(&event), "line: {}", line);
        // Formatting is canonical: the parsed event formats to the same line.
        prop_assert_eq!(parsed.unwrap().to_string(), line);
    }

    #[test]
    fn human_and_json_forms_never_panic(event in event()) {
        let _ = event.human().to_string();
        let _ = serde_json::to_string(&event).unwrap();
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        let _ = parse_line(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_line_bytes(&bytes);
        let mut reader = CaptureReader::new(&bytes[..]);
        let mut records = 0;
        while let Some(record) = reader.next_record() {
            let _ = record;
            records += 1;
            prop_assert!(records <= bytes.len() + 1);
        }
    }

    #[test]
    fn mutated_lines_never_panic(
        event in event(),
        cut in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        position in any::<prop::sample::Index>(),
    ) {
        let mut line = event.to_string().into_bytes();
        let at = position.index(line.len());
        line[at] = byte;
        let _ = parse_line_bytes(&line);
        let end = cut.index(line.len() + 1);
        let _ = parse_line_bytes(&line[..end]);
    }

    #[test]
    fn plausible_token_soup_never_panics(
        tokens in proptest::collection::vec(
            "(fault|mmap|brk|lost|[a-z_]{1,8})=?(0x[0-9a-f]{0,17}|-?[0-9]{0,21}|[A-Z|_]{0,12}|[rwx-]{3})",
            0..10,
        ),
        kind in prop::sample::select(memmon::KIND_NAMES.to_vec()),
    ) {
        let line = format!("1.000000000 1/1 {kind} {}", tokens.join(" "));
        let _ = parse_line(&line);
    }
}
