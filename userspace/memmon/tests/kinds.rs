//! Per-kind parser tests: valid lines decode to the right fields and format back exactly;
//! truncated and garbage lines are errors that name the problem, never panics.

use memmon::{
    parse_line, parse_line_bytes, Access, Advice, Errno, Event, EventKind, FaultType, Mlock2Flags,
    MlockallFlags, MmapFlags, MremapFlags, ParseError, Prot, Timestamp,
};

/// One valid line per kind (several for kinds with optional keys), as the module writes them.
const VALID: &[&str] = &[
    "12.000123456 1234/1234 fault type=anon access=W addr=0x7f0000001000 ip=0x401136",
    "12.000124000 1234/1234 fault type=file access=R addr=0x7f0000200000 ip=0x0 user=0",
    "12.000125000 1234/1235 fault type=anon access=W addr=0x7f0000400000 ip=0x401200 huge=1",
    "12.000125001 1234/1234 fault type=swap access=X addr=0x1 ip=0x2 user=0 huge=1 major=1 retry=1",
    "12.000125002 1234/1234 fault type=wp access=W addr=0x7f0000400008 ip=0x401200",
    "5.103884211 212/212 mmap addr=0x0 len=139264 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f5a2c1e4000",
    "5.103884212 212/212 mmap addr=0x0 len=8192 prot=r-x flags=PRIVATE|DENYWRITE fd=3 off=4096 ret=0x7f5a2c000000 file=/usr/lib/libc.so.6",
    "5.103884213 212/212 mmap addr=0x10000 len=4096 prot=--- flags=SHARED_VALIDATE|FIXED|0x800000 fd=4 off=0 ret=-EINVAL file=/tmp/a\\x20b...",
    "5.104010777 212/212 munmap addr=0x7f5a2c1e4000 len=139264 ret=0",
    "5.104010778 212/212 mremap old=0x7f5a2c1e4000 old_len=4096 new_len=8192 flags=MAYMOVE new=0x0 ret=0x7f5a2c1f0000",
    "5.104010779 212/212 mremap old=0x7f5a2c1e4000 old_len=4096 new_len=8192 flags=0 new=0x0 ret=-ENOMEM",
    "5.104010780 212/212 brk req=0x0 ret=0x555555559000",
    "5.104010781 212/212 mprotect addr=0x7f5a2c1e4000 len=4096 prot=r-- ret=0",
    "5.104010782 212/212 madvise addr=0x7f5a2c1e4000 len=4096 advice=DONTNEED ret=0",
    "5.104010783 212/212 madvise addr=0x7f5a2c1e4000 len=4096 advice=77 ret=-EINVAL",
    "5.104010784 212/212 mlock addr=0x7f5a2c1e4000 len=4096 ret=0",
    "5.104010785 212/212 mlock2 addr=0x7f5a2c1e4000 len=4096 flags=ONFAULT ret=-EPERM",
    "5.104010786 212/212 munlock addr=0x7f5a2c1e4000 len=4096 ret=0",
    "5.104010787 212/212 mlockall flags=CURRENT|FUTURE ret=-E600",
    "5.104010788 212/212 munlockall ret=0",
    "5.104012000 212/212 fsync fd=1 ret=0",
    "5.104012001 300/300 mark text=hello\\x20world",
    "5.104012002 300/300 mark text=",
    "5.104012003 212/212 exec comm=true filename=/usr/bin/true",
    "5.104012004 212/212 fork child=213 watched=1",
    "5.104012005 212/212 exit code=768",
    "5.104012006 0/0 lost count=12",
    // Later stream additions: pages=, dur=, stack=, new fault types and kinds.
    "12.000125003 1234/1234 fault type=file access=R addr=0x7f0000200000 ip=0x401136 pages=16",
    "12.000125004 1234/1234 fault type=anon access=W addr=0x7f0000400000 ip=0x401200 huge=1 pages=512 stack=0x401200,0x401300,0x7f0000001234",
    "12.000125005 1234/1234 fault type=spurious access=R addr=0x1000 ip=0x401136 stack=",
    "12.000125006 1234/1234 fault type=numa access=R addr=0x1000 ip=0x401136",
    "12.000125007 1234/1234 fault type=hugetlb access=W addr=0x1000 ip=0x401136",
    "12.000125008 1234/1234 fault type=access access=R addr=0x1000 ip=0x401136",
    "5.104010789 212/212 mmap addr=0x0 len=4096 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f5a2c1e4000 dur=1234 stack=0x401136,0x401200",
    "5.104010790 212/212 fsync fd=1 ret=0 dur=77",
    "5.104012007 212/212 msync addr=0x7f5a2c1e4000 len=4096 flags=ASYNC|INVALIDATE ret=0",
    "5.104012008 212/212 msync addr=0x7f5a2c1e4000 len=4096 flags=SYNC ret=-ENOMEM dur=5000",
    "5.104012009 212/212 pkey_mprotect addr=0x7f5a2c1e4000 len=4096 prot=r-- pkey=-1 ret=0",
    "5.104012010 212/212 mseal addr=0x7f5a2c1e4000 len=4096 flags=0 ret=-EPERM",
    "5.104012011 212/212 process_madvise pidfd=3 vec=0x7ffd1000 vlen=2 advice=PAGEOUT flags=0 ret=8192",
    "5.104012012 212/212 shmat shmid=32768 addr=0x0 flags=RDONLY|RND ret=0x7f5a2c000000 dur=10 stack=0x401136",
    "5.104012013 212/212 shmat shmid=1 addr=0x0 flags=0 ret=-EINVAL",
    "5.104012014 212/212 shmdt addr=0x7f5a2c000000 ret=0",
    "5.104012015 212/212 rss anon=4096 file=8192 shmem=0 swap=0 peak=16384 at=exit",
    "5.104012016 300/300 rss anon=0 file=0 shmem=0 swap=4096 peak=4096 at=mark",
    "12.000125009 1234/1234 fault type=other access=W addr=0x1000 ip=0x401136",
    "12.000125010 1234/1234 fault type=anon access=R addr=0x1000 ip=0x401136 pages=0 stack=0x401136,0x401200",
    // Access sampling: the gen line and type=access with gen=.
    "20.100000000 4242/4242 gen n=3 armed=4096",
    "20.100000100 4242/4243 fault type=access access=R addr=0x7f0000003010 ip=0x401136 gen=3",
    "20.100000200 4242/4242 fault type=access access=W addr=0x7f0000200000 ip=0x401136 huge=1 gen=3 stack=0x401136,0x401200",
    // The cgroup of a process watched by cgroup: a path, the root, a long one cut at its start.
    "21.000000000 5000/5000 cgroup id=4242 path=/system.slice/foo.service",
    "21.000000001 5001/5001 cgroup id=1 path=/",
    "21.000000002 5002/5002 cgroup id=77 path=...aaaa/bbbb/ctr\\x20x",
    // Shedding under pressure: faults of a process not recorded, stacks shed whole or cut.
    "22.000000000 212/212 dropped faults=4733",
    "22.000000001 1234/1234 fault type=anon access=W addr=0x1000 ip=0x401136 stack_end=shed",
    "22.000000002 1234/1234 fault type=anon access=W addr=0x1000 ip=0x401136 stack=0x401136,0x401200 stack_end=shed",
];

/// Keys that may be absent.
const OPTIONAL_KEYS: &[&str] = &[
    "file",
    "user",
    "huge",
    "major",
    "retry",
    "pages",
    "gen",
    "dur",
    "stack",
    "stack_end",
];

#[test]
fn every_kind_has_a_valid_sample() {
    let mut seen: Vec<&str> = VALID
        .iter()
        .map(|line| parse_line(line).unwrap().kind.name())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    let mut all = memmon::KIND_NAMES.to_vec();
    all.sort_unstable();
    assert_eq!(seen, all);
}

#[test]
fn valid_lines_format_back_exactly() {
    for line in VALID {
        let event = parse_line(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(event.to_string(), *line);
        let with_newline = format!("{line}\n");
        assert_eq!(parse_line(&with_newline).unwrap(), event);
        assert_eq!(parse_line_bytes(with_newline.as_bytes()).unwrap(), event);
        assert_eq!(event.clone().into_owned(), event);
    }
}

#[test]
fn unknown_trailing_keys_are_ignored() {
    for line in VALID {
        let extended = format!("{line} future=1 other=0xabc");
        assert_eq!(
            parse_line(&extended).unwrap(),
            parse_line(line).unwrap(),
            "{line}"
        );
    }
}

#[test]
fn missing_required_keys_are_named() {
    for line in VALID {
        let tokens: Vec<&str> = line.split(' ').collect();
        for skip in 3..tokens.len() {
            let key = tokens[skip].split('=').next().unwrap();
            if OPTIONAL_KEYS.contains(&key) {
                continue;
            }
            let without: Vec<&str> = tokens
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, t)| *t)
                .collect();
            let error = parse_line(&without.join(" ")).unwrap_err();
            match &error {
                ParseError::MissingKey { key: missing, kind } => {
                    assert_eq!(*missing, key, "{line}");
                    assert_eq!(*kind, tokens[2]);
                }
                other => panic!("{line} without {key}: {other:?}"),
            }
            assert!(error.to_string().contains(key));
        }
    }
}

#[test]
fn garbage_values_are_named() {
    for line in VALID {
        let tokens: Vec<&str> = line.split(' ').collect();
        for index in 3..tokens.len() {
            let key = tokens[index].split('=').next().unwrap();
            for garbage in ["\\q!", "-", "0xg", "99999999999999999999999"] {
                let mut changed: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
                changed[index] = format!("{key}={garbage}");
                let text = changed.join(" ");
                match parse_line(&text) {
                    Err(ParseError::BadValue {
                        key: bad, value, ..
                    }) => {
                        assert_eq!(bad, key, "{text}");
                        assert_eq!(value, garbage);
                    }
                    // Every form rejects these, except str values, where `-`, `0xg` and
                    // digits are ordinary text.
                    Ok(_)
                        if garbage != "\\q!"
                            && ["text", "comm", "filename", "file", "path"].contains(&key) => {}
                    other => panic!("{text}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn truncated_lines_never_panic() {
    for line in VALID {
        for end in 0..line.len() {
            // Every prefix: either an error or (when cut after a complete optional key or
            // inside a trailing value) some event; never a panic.
            let _ = parse_line(&line[..end]);
        }
        // Cut inside the frame: errors that say what is missing.
        let frame_cut: Vec<&str> = line.splitn(3, ' ').collect();
        assert_eq!(
            parse_line(frame_cut[0]),
            Err(ParseError::MissingFrame("pid/tid"))
        );
        let two = format!("{} {}", frame_cut[0], frame_cut[1]);
        assert_eq!(parse_line(&two), Err(ParseError::MissingFrame("kind")));
    }
}

#[test]
fn truncated_required_keys_are_errors() {
    // Dropping the last key of each kind (always required) must fail.
    for line in VALID {
        let mut tokens: Vec<&str> = line.split(' ').collect();
        while tokens.len() > 3 {
            let key = tokens.last().unwrap().split('=').next().unwrap();
            tokens.pop();
            if !OPTIONAL_KEYS.contains(&key) {
                break;
            }
        }
        assert!(parse_line(&tokens.join(" ")).is_err(), "{line}");
    }
}

#[test]
fn garbage_lines_are_errors() {
    type Check = fn(&ParseError) -> bool;
    let cases: &[(&str, Check)] = &[
        ("", |e| *e == ParseError::Empty),
        ("\n", |e| *e == ParseError::Empty),
        ("hello", |e| matches!(e, ParseError::BadTimestamp(_))),
        ("5.1 1/1 fsync fd=1 ret=0", |e| {
            matches!(e, ParseError::BadTimestamp(_))
        }),
        ("5.1234567890 1/1 fsync fd=1 ret=0", |e| {
            matches!(e, ParseError::BadTimestamp(_))
        }),
        ("x.123456789 1/1 fsync fd=1 ret=0", |e| {
            matches!(e, ParseError::BadTimestamp(_))
        }),
        ("5.123456789 1 fsync fd=1 ret=0", |e| {
            matches!(e, ParseError::BadPidTid(_))
        }),
        ("5.123456789 1/x fsync fd=1 ret=0", |e| {
            matches!(e, ParseError::BadPidTid(_))
        }),
        ("5.123456789 -1/1 fsync fd=1 ret=0", |e| {
            matches!(e, ParseError::BadPidTid(_))
        }),
        ("5.123456789 4294967296/1 fsync fd=1 ret=0", |e| {
            matches!(e, ParseError::BadPidTid(_))
        }),
        (
            "5.123456789 1/1 frobnicate a=1",
            |e| matches!(e, ParseError::UnknownKind(k) if k == "frobnicate"),
        ),
        ("5.123456789 1/1 FSYNC fd=1 ret=0", |e| {
            matches!(e, ParseError::UnknownKind(_))
        }),
        (
            "5.123456789 1/1 fsync fd=1 ret",
            |e| matches!(e, ParseError::NotKeyValue(k) if k == "ret"),
        ),
        ("5.123456789 1/1 fsync fd=1 ret=+0", |e| {
            matches!(e, ParseError::BadValue { key: "ret", .. })
        }),
        ("5.123456789 1/1 fsync fd=1 ret=-", |e| {
            matches!(e, ParseError::BadValue { key: "ret", .. })
        }),
        ("5.123456789 1/1 fsync fd=1 ret=-ENOTANERRNO", |e| {
            matches!(e, ParseError::BadValue { key: "ret", .. })
        }),
        ("5.123456789 1/1 fsync fd=1 ret=-E0", |e| {
            matches!(e, ParseError::BadValue { key: "ret", .. })
        }),
        (
            "5.123456789 1/1 fault type=anon access=w addr=0x1 ip=0x1",
            |e| matches!(e, ParseError::BadValue { key: "access", .. }),
        ),
        (
            "5.123456789 1/1 fault type=huge access=W addr=0x1 ip=0x1",
            |e| matches!(e, ParseError::BadValue { key: "type", .. }),
        ),
        (
            "5.123456789 1/1 fault type=anon access=W addr=1 ip=0x1",
            |e| matches!(e, ParseError::BadValue { key: "addr", .. }),
        ),
        (
            "5.123456789 1/1 fault type=anon access=W addr=0x1 ip=0x1 huge=2",
            |e| matches!(e, ParseError::BadValue { key: "huge", .. }),
        ),
        (
            "5.123456789 1/1 fault type=anon access=W addr=0x10000000000000000 ip=0x1",
            |e| matches!(e, ParseError::BadValue { key: "addr", .. }),
        ),
        ("5.123456789 1/1 brk req=0x0 ret=-ENOMEM", |e| {
            matches!(e, ParseError::BadValue { key: "ret", .. })
        }),
        ("5.123456789 1/1 fork child=2 watched=yes", |e| {
            matches!(e, ParseError::BadValue { key: "watched", .. })
        }),
        (
            "5.123456789 1/1 mmap addr=0x0 len=1 prot=rwxx flags=0 fd=-1 off=0 ret=0x1",
            |e| matches!(e, ParseError::BadValue { key: "prot", .. }),
        ),
        (
            "5.123456789 1/1 mmap addr=0x0 len=1 prot=rwx flags=PRIVATE|BOGUS fd=-1 off=0 ret=0x1",
            |e| matches!(e, ParseError::BadValue { key: "flags", .. }),
        ),
        (
            "5.123456789 1/1 mmap addr=0x0 len=-1 prot=rwx flags=0 fd=-1 off=0 ret=0x1",
            |e| matches!(e, ParseError::BadValue { key: "len", .. }),
        ),
        ("5.123456789 1/1 mark text=tab\there", |e| {
            matches!(e, ParseError::NotKeyValue(_))
        }),
    ];
    for (line, check) in cases {
        let error = parse_line(line).expect_err(line);
        assert!(check(&error), "{line:?}: {error:?}");
        assert!(!error.to_string().is_empty());
    }
    assert_eq!(
        parse_line_bytes(b"5.123456789 1/1 mark text=\xff"),
        Err(ParseError::NotText)
    );
}

#[test]
fn error_messages_say_what_is_wrong() {
    let error = parse_line("5.123456789 1/1 munmap addr=0x10 ret=0").unwrap_err();
    assert_eq!(error.to_string(), "munmap event without required key `len`");
    let error = parse_line("5.123456789 1/1 munmap addr=16 len=1 ret=0").unwrap_err();
    assert_eq!(
        error.to_string(),
        "bad value \"16\" for key `addr`: expected a hex number like 0x7f12a000"
    );
    let long = "x".repeat(1000);
    let error = parse_line(&format!("5.123456789 1/1 {long}")).unwrap_err();
    assert!(error.to_string().len() < 200);
}

fn parse(line: &str) -> Event<'_> {
    parse_line(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
fn fault_fields() {
    let event = parse(VALID[0]);
    assert_eq!(
        event.time,
        Timestamp {
            secs: 12,
            nanos: 123456
        }
    );
    assert_eq!((event.pid, event.tid), (1234, 1234));
    assert_eq!(
        event.kind,
        EventKind::Fault {
            fault_type: FaultType::Anon,
            access: Access::Write,
            addr: 0x7f0000001000,
            ip: 0x401136,
            user: true,
            huge: false,
            major: false,
            retry: false,
            pages: 1,
            gen: None,
        }
    );
    assert!(matches!(
        parse(VALID[1]).kind,
        EventKind::Fault {
            user: false,
            fault_type: FaultType::File,
            access: Access::Read,
            ..
        }
    ));
    assert!(matches!(
        parse(VALID[2]).kind,
        EventKind::Fault { huge: true, .. }
    ));
    assert!(matches!(
        parse(VALID[3]).kind,
        EventKind::Fault {
            fault_type: FaultType::Swap,
            access: Access::Exec,
            user: false,
            huge: true,
            major: true,
            retry: true,
            ..
        }
    ));
    assert!(matches!(
        parse(VALID[4]).kind,
        EventKind::Fault {
            fault_type: FaultType::Wp,
            ..
        }
    ));
}

#[test]
fn mmap_fields() {
    let EventKind::Mmap {
        addr,
        len,
        prot,
        flags,
        fd,
        off,
        ret,
        file,
    } = parse(VALID[5]).kind
    else {
        panic!()
    };
    assert_eq!((addr, len, fd, off), (0, 139264, -1, 0));
    assert_eq!(prot, Prot::READ | Prot::WRITE);
    assert_eq!(flags, MmapFlags::PRIVATE | MmapFlags::ANONYMOUS);
    assert_eq!(ret, Ok(0x7f5a2c1e4000));
    assert_eq!(file, None);
    let EventKind::Mmap { file, .. } = parse(VALID[6]).kind else {
        panic!()
    };
    assert_eq!(file.unwrap().to_string_lossy(), "/usr/lib/libc.so.6");
    let EventKind::Mmap {
        flags,
        ret,
        file,
        prot,
        ..
    } = parse(VALID[7]).kind
    else {
        panic!()
    };
    assert_eq!(flags.bits(), 0x800013);
    assert!(flags.contains(MmapFlags::SHARED_VALIDATE));
    assert_eq!(ret, Err(Errno::new(22).unwrap()));
    assert_eq!(prot, Prot::empty());
    let file = file.unwrap();
    assert_eq!(file.unescape(), b"/tmp/a b...");
    assert!(file.is_possibly_truncated());
}

#[test]
fn syscall_fields() {
    assert_eq!(
        parse(VALID[8]).kind,
        EventKind::Munmap {
            addr: 0x7f5a2c1e4000,
            len: 139264,
            ret: Ok(0)
        }
    );
    assert_eq!(
        parse(VALID[9]).kind,
        EventKind::Mremap {
            old: 0x7f5a2c1e4000,
            old_len: 4096,
            new_len: 8192,
            flags: MremapFlags::MAYMOVE,
            new: 0,
            ret: Ok(0x7f5a2c1f0000)
        }
    );
    assert!(
        matches!(parse(VALID[10]).kind, EventKind::Mremap { ret: Err(e), .. } if e.name() == Some("ENOMEM"))
    );
    assert_eq!(
        parse(VALID[11]).kind,
        EventKind::Brk {
            req: 0,
            ret: 0x555555559000
        }
    );
    assert_eq!(
        parse(VALID[12]).kind,
        EventKind::Mprotect {
            addr: 0x7f5a2c1e4000,
            len: 4096,
            prot: Prot::READ,
            ret: Ok(0)
        }
    );
    assert!(matches!(
        parse(VALID[13]).kind,
        EventKind::Madvise {
            advice: Advice(4),
            ..
        }
    ));
    assert!(matches!(
        parse(VALID[14]).kind,
        EventKind::Madvise {
            advice: Advice(77),
            ret: Err(_),
            ..
        }
    ));
    assert!(matches!(
        parse(VALID[15]).kind,
        EventKind::Mlock {
            len: 4096,
            ret: Ok(0),
            ..
        }
    ));
    assert!(
        matches!(parse(VALID[16]).kind, EventKind::Mlock2 { flags: Mlock2Flags::ONFAULT, ret: Err(e), .. } if e.number() == 1)
    );
    assert!(matches!(parse(VALID[17]).kind, EventKind::Munlock { .. }));
    let EventKind::Mlockall { flags, ret } = parse(VALID[18]).kind else {
        panic!()
    };
    assert_eq!(flags, MlockallFlags::CURRENT | MlockallFlags::FUTURE);
    assert_eq!(ret.unwrap_err().number(), 600);
    assert_eq!(parse(VALID[19]).kind, EventKind::Munlockall { ret: Ok(0) });
    assert_eq!(
        parse(VALID[20]).kind,
        EventKind::Fsync { fd: 1, ret: Ok(0) }
    );
}

#[test]
fn lifecycle_and_control_fields() {
    let EventKind::Mark { text } = parse(VALID[21]).kind else {
        panic!()
    };
    assert_eq!(text.to_string_lossy(), "hello world");
    assert_eq!(text.as_escaped(), "hello\\x20world");
    let EventKind::Mark { text } = parse(VALID[22]).kind else {
        panic!()
    };
    assert_eq!(text.unescape(), b"");
    let EventKind::Exec { comm, filename } = parse(VALID[23]).kind else {
        panic!()
    };
    assert_eq!(
        (comm.as_escaped(), filename.as_escaped()),
        ("true", "/usr/bin/true")
    );
    assert_eq!(
        parse(VALID[24]).kind,
        EventKind::Fork {
            child: 213,
            watched: true
        }
    );
    assert_eq!(parse(VALID[25]).kind, EventKind::Exit { code: 768 });
    let lost = parse(VALID[26]);
    assert_eq!(
        (lost.pid, lost.tid, lost.kind),
        (0, 0, EventKind::Lost { count: 12 })
    );
}

#[test]
fn human_form_reads_like_memmon() {
    let human = |line: &str| parse(line).human().to_string();
    assert_eq!(
        human("1.000000000 29305/29305 fault type=anon access=W addr=0x804a004 ip=0x8048000"),
        "29305: anon page @0x804a004 (W)"
    );
    assert_eq!(
        human("1.000000000 29305/29305 mmap addr=0x0 len=139264 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f5a2c1e4000"),
        "29305: mmap(0x0, 139264, rw-, PRIVATE|ANONYMOUS, fd -1) -> 0x7f5a2c1e4000"
    );
    assert_eq!(
        human("1.000000000 29305/29305 munmap addr=0x7f5a2c1e4000 len=139264 ret=0"),
        "29305: munmap(0x7f5a2c1e4000, 139264) -> 0"
    );
    assert_eq!(
        human("1.000000000 29305/29305 fsync fd=1 ret=0"),
        "29305: fsync(1) -> 0"
    );
    // Python frames, innermost first, and why they end early.
    assert_eq!(
        human("1.000000000 29305/29306 fault type=anon access=W addr=0x7f3c00000000 ip=0x4a5b6c stack=0x4a5b6c,0x4a0000 pystack=0x7f3c1a2b4c30+18,0x7f3c1a2b5e10+42* pystack_end=depth"),
        "29305/29306: anon page @0x7f3c00000000 (W) python 0x7f3c1a2b4c30+18 < 0x7f3c1a2b5e10+42* (python frames end: depth)"
    );
    assert_eq!(
        human("1.000000000 29305/29305 fault type=anon access=W addr=0x7f3c00000000 ip=0x4a5b6c stack=0x4a5b6c pystack_end=no_thread"),
        "29305: anon page @0x7f3c00000000 (W) (python frames end: no_thread)"
    );
    assert_eq!(
        human("1.000000000 29305/29305 exit code=768"),
        "29305: exit: exited 3"
    );
    assert_eq!(
        human("1.000000000 29305/29305 exit code=9"),
        "29305: exit: killed by signal 9"
    );
    assert_eq!(
        human(VALID[2]),
        "1234/1235: anon page @0x7f0000400000 (W) [huge]"
    );
    assert_eq!(
        parse(VALID[26]).human_with_time().to_string(),
        "5.104012006 *** 12 events lost (overwritten before they were read) ***"
    );
    for line in VALID {
        assert!(!human(line).is_empty());
    }
}

#[test]
fn json_form() {
    let json = |line: &str| serde_json::to_value(parse(line)).unwrap();
    let fault = json(VALID[0]);
    assert_eq!(fault["kind"], "fault");
    assert_eq!(fault["type"], "anon");
    assert_eq!(fault["access"], "W");
    assert_eq!(fault["addr"], "0x7f0000001000");
    assert_eq!(fault["time"], "12.000123456");
    assert_eq!(fault["pid"], 1234);
    let mmap = json(VALID[7]);
    assert_eq!(mmap["ret"], "-EINVAL");
    assert_eq!(mmap["flags"], "SHARED_VALIDATE|FIXED|0x800000");
    assert_eq!(mmap["file"], "/tmp/a b...");
    assert_eq!(json(VALID[5])["ret"], "0x7f5a2c1e4000");
    assert_eq!(json(VALID[8])["ret"], 0);
    assert_eq!(json(VALID[21])["text"], "hello world");
    for line in VALID {
        assert_eq!(json(line)["kind"], parse(line).kind.name());
    }
}

#[test]
fn stream_additions_json_and_human() {
    let json = |line: &str| serde_json::to_value(parse(line)).unwrap();
    let fault = json(VALID[28]);
    assert_eq!(fault["pages"], 512);
    assert_eq!(
        fault["stack"],
        serde_json::json!(["0x401200", "0x401300", "0x7f0000001234"])
    );
    assert!(fault.get("dur").is_none());
    assert!(
        fault.get("stack_end").is_none(),
        "a whole stack has no stack_end"
    );
    let early = json(
        "5.000000000 10/10 fault type=anon access=W addr=0x1000 ip=0x401000 \
         stack=0x401000,0x402000 stack_end=no_table",
    );
    assert_eq!(early["stack"], serde_json::json!(["0x401000", "0x402000"]));
    assert_eq!(early["stack_end"], "no_table");
    let mmap = json(VALID[33]);
    assert_eq!(mmap["dur"], 1234);
    let rss = json(VALID[43]);
    assert_eq!(rss["kind"], "rss");
    assert_eq!(rss["at"], "exit");
    assert_eq!(rss["file"], 8192);
    assert_eq!(json(VALID[37])["kind"], "pkey_mprotect");
    assert_eq!(json(VALID[40])["ret"], "0x7f5a2c000000");
    assert_eq!(
        parse(VALID[27]).human().to_string(),
        "1234: file page @0x7f0000200000 (R) [16 pages]"
    );
    assert_eq!(
        parse(VALID[34]).human().to_string(),
        "212: fsync(1) -> 0 in 77 ns"
    );
    assert_eq!(
        parse(VALID[43]).human().to_string(),
        "212: rss at exit: anon 4096, file 8192, shmem 0, swap 0, peak 16384"
    );
    // dur= and stack= on kinds that do not take them are unknown keys: ignored.
    let mark = parse("1.000000000 1/1 mark text=x dur=5 stack=0x1");
    assert_eq!((mark.dur, mark.stack), (None, None));
    // pages=1 is the default and formats as absent.
    let one = parse("1.000000000 1/1 fault type=anon access=W addr=0x1 ip=0x2 pages=1");
    assert_eq!(
        one.to_string(),
        "1.000000000 1/1 fault type=anon access=W addr=0x1 ip=0x2"
    );
    assert!(
        parse_line("1.000000000 1/1 fault type=anon access=W addr=0x1 ip=0x2 stack=0x1,zz")
            .is_err()
    );
}

#[test]
fn access_sampling_lines() {
    let gen = parse(VALID[47]);
    assert_eq!((gen.pid, gen.tid), (4242, 4242));
    assert_eq!(gen.kind, EventKind::Gen { n: 3, armed: 4096 });
    assert_eq!(gen.stack, None);
    let access = parse(VALID[48]);
    assert_eq!(
        access.kind,
        EventKind::Fault {
            fault_type: FaultType::Access,
            access: Access::Read,
            addr: 0x7f0000003010,
            ip: 0x401136,
            user: true,
            huge: false,
            major: false,
            retry: false,
            pages: 1,
            gen: Some(3),
        }
    );
    let huge = parse(VALID[49]);
    assert!(matches!(
        huge.kind,
        EventKind::Fault {
            fault_type: FaultType::Access,
            access: Access::Write,
            huge: true,
            gen: Some(3),
            ..
        }
    ));
    assert_eq!(huge.stack.as_ref().map(|s| s.0.len()), Some(2));
    // gen= is written after ip= and before huge=, stack= last, as the module writes it.
    assert_eq!(huge.to_string(), VALID[49]);

    let json = |line: &str| serde_json::to_value(parse(line)).unwrap();
    assert_eq!(
        json(VALID[47]),
        serde_json::json!({"time": "20.100000000", "pid": 4242, "tid": 4242,
                           "kind": "gen", "n": 3, "armed": 4096})
    );
    let fault = json(VALID[49]);
    assert_eq!(fault["type"], "access");
    assert_eq!(fault["gen"], 3);
    assert_eq!(fault["huge"], true);
    // Absent gen= stays absent in JSON.
    assert!(json(VALID[0]).get("gen").is_none());

    assert_eq!(
        gen.human().to_string(),
        "4242: generation 3: 4096 pages armed for access sampling"
    );
    assert_eq!(
        access.human().to_string(),
        "4242/4243: access page @0x7f0000003010 (R) [generation 3]"
    );
    assert_eq!(
        huge.human_with_time().to_string(),
        "20.100000200 4242: access page @0x7f0000200000 (W) [huge] [generation 3]"
    );
    for bad in [
        "20.1 4242/4242 gen n=3",
        "20.100000000 4242/4242 gen armed=1",
        "20.100000000 4242/4242 gen n=-1 armed=1",
        "20.100000000 4242/4242 fault type=access access=R addr=0x1 ip=0x2 gen=0x3",
    ] {
        assert!(parse_line(bad).is_err(), "{bad}");
    }
}

#[test]
fn cgroup_lines_name_the_cgroup() {
    let event = parse_line(VALID[50]).unwrap();
    assert_eq!((event.pid, event.tid), (5000, 5000));
    let EventKind::Cgroup { id, ref path } = event.kind else {
        panic!("not a cgroup line: {:?}", event.kind)
    };
    assert_eq!(id, 4242);
    assert_eq!(path.to_string_lossy(), "/system.slice/foo.service");
    assert!(!event.kind.is_syscall());
    assert!(!event.kind.may_have_stack());
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        serde_json::json!({"time": "21.000000000", "pid": 5000, "tid": 5000,
                           "kind": "cgroup", "id": 4242, "path": "/system.slice/foo.service"})
    );
    assert_eq!(
        event.human().to_string(),
        "5000: in cgroup /system.slice/foo.service (id 4242)"
    );
    // A path cut at its start keeps its `...`, and escapes decode.
    let cut = parse_line(VALID[52]).unwrap();
    let EventKind::Cgroup { ref path, .. } = cut.kind else {
        panic!("not a cgroup line")
    };
    assert_eq!(path.to_string_lossy(), "...aaaa/bbbb/ctr x");
    for bad in [
        "21.000000000 5000/5000 cgroup path=/a",
        "21.000000000 5000/5000 cgroup id=4242",
        "21.000000000 5000/5000 cgroup id=-1 path=/a",
        "21.000000000 5000/5000 cgroup id=0x10 path=/a",
    ] {
        assert!(parse_line(bad).is_err(), "{bad}");
    }
}
