//! The address-space model of `memmon report` on small hand-written captures that use the
//! later stream additions (stack=, pages=, dur=, rss lines).

use memmon::report::model::moment::Moment;
use memmon::report::model::replay::{Replay, ReplayOptions};
use memmon::report::symbolize::symbols::{SymbolOptions, Symbols};
use memmon::report::view::memory::{build, View, ViewOptions};

const KIB: u64 = 1024;

/// The view at the end: the model as the process left it, which the rss line at exit
/// checks.
fn view(capture: &str) -> View {
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(capture.as_bytes()).unwrap();
    let analysis = replay.finish();
    let symbols = Symbols::new(&analysis.sites, &SymbolOptions::default());
    let options = ViewOptions {
        at: Moment::End,
        ..ViewOptions::default()
    };
    build(&analysis, &symbols, &options).unwrap()
}

const HEADER: &str = "\
# memmon-capture 1
# snapshot maps 100 1.000000000 start
#| 00400000-00401000 r--p 00000000 00:03 5 /bin/prog
#| 00401000-00402000 r-xp 00001000 00:03 5 /bin/prog
#| 7ffc0000-7ffc2000 rw-p 00000000 00:00 0 [stack]
";

#[test]
fn stacks_pages_mremap_madvise_and_rss() {
    let capture = format!(
        "{HEADER}\
1.100000000 100/100 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000 dur=1000 stack=0x401100,0x401200
1.100000001 100/100 fault type=anon access=W addr=0x7f0000000010 ip=0x401010 pages=16 stack=0x401010,0x401100,0x401200
1.200000000 100/100 mremap old=0x7f0000000000 old_len=65536 new_len=131072 flags=MAYMOVE new=0x0 ret=0x7f1000000000 dur=10 stack=0x401300
1.300000000 100/100 mmap addr=0x0 len=65536 prot=r-- flags=PRIVATE fd=3 off=0 ret=0x7f2000000000 file=/data/table stack=0x401400
1.300000001 100/100 fault type=file access=R addr=0x7f2000000000 ip=0x401020 pages=16 stack=0x401020,0x401500
1.400000000 100/100 madvise addr=0x7f1000000000 len=32768 advice=DONTNEED ret=0 dur=5
1.500000000 100/100 rss anon=32768 file=65536 shmem=0 swap=0 peak=131072 at=exit
1.500000001 100/100 exit code=0
"
    );
    let view = view(&capture);
    assert!(view.stacks && view.pages_key);
    assert_eq!(view.totals.anon, 32 * KIB);
    assert_eq!(view.totals.file, 64 * KIB);
    // The peak: before the madvise, 64 KiB of each kind.
    assert_eq!(view.shown.peak.resident, 128 * KIB);
    assert_eq!(view.shown.peak.when[0].time.to_string(), "1.300000001");
    // The anonymous pages moved with mremap and half were released: a mixed site whose
    // frames are the fault ip (exact) and its callers, normalised to file offsets.
    let anon = view
        .sites
        .iter()
        .find(|row| row.function() == "prog+0x1010")
        .unwrap();
    assert_eq!(anon.chain(8), "prog+0x1010 < prog+0x1100 < prog+0x1200");
    assert_eq!((anon.resident, anon.released), (32 * KIB, 32 * KIB));
    assert_eq!(anon.brought_in, 64 * KIB);
    // Mapped bytes go to the stack of the call that mapped them: the mmap, then the
    // growth to the moved region's site.
    let mapper = view
        .sites
        .iter()
        .find(|row| row.function() == "prog+0x1100")
        .unwrap();
    assert_eq!(mapper.mapped, 128 * KIB);
    let table = view
        .tree
        .iter()
        .find(|row| row.label == "/data/table")
        .unwrap();
    assert_eq!(table.resident, 64 * KIB);
    // The rss line at exit agrees with the model.
    assert_eq!(view.reconciliation.len(), 1);
    assert!(view.reconciliation[0].warnings.is_empty());
}

#[test]
fn populate_faults_before_the_call_and_a_wrong_rss_line() {
    let capture = format!(
        "{HEADER}\
1.100000000 100/100 fault type=anon access=W addr=0x7f0000000000 ip=0x0 user=0
1.100000001 100/100 fault type=anon access=W addr=0x7f0000001000 ip=0x0 user=0
1.100000002 100/100 mmap addr=0x0 len=8192 prot=rw- flags=PRIVATE|ANONYMOUS|POPULATE fd=-1 off=0 ret=0x7f0000000000 stack=0x401100
1.200000000 100/100 brk req=0x0 ret=0x1000000
1.200000001 100/100 brk req=0x1003000 ret=0x1003000 stack=0x401200
1.200000002 100/100 fault type=anon access=R addr=0x1000000 ip=0x401030
1.200000002 100/100 fault type=anon access=R addr=0x1002000 ip=0x401030 pages=0
1.200000002 100/100 fault type=other access=W addr=0x1002000 ip=0x401030
1.200000003 100/100 fault type=wp access=W addr=0x1000000 ip=0x401040
1.200000004 100/100 fault type=anon access=W addr=0x1001000 ip=0x401040
1.200000005 100/100 fault type=spurious access=W addr=0x1001000 ip=0x401040
1.200000006 100/100 brk req=0x1001000 ret=0x1001000 stack=0x401200
1.300000000 100/100 mark text=m
1.300000001 100/100 rss anon=1048576 file=0 shmem=0 swap=0 peak=1048576 at=mark
1.300000002 100/100 exit code=0
"
    );
    let view = view(&capture);
    // The populate faults take the mmap's class and its call's site.
    let populate = view
        .sites
        .iter()
        .find(|row| row.function() == "prog+0x1100")
        .unwrap();
    assert_eq!(populate.resident, 8 * KIB);
    let heap = view
        .tree
        .iter()
        .find(|row| row.label == "heap (brk)")
        .unwrap();
    // The read mapped the zero page; the write copied it; the shrink freed the second page.
    assert_eq!(heap.resident, 4 * KIB);
    assert_eq!(view.totals.anon, 12 * KIB);
    let check = &view.reconciliation[0];
    assert_eq!(check.label, "mark \"m\"");
    assert_eq!(check.warnings.len(), 1);
    assert!(
        check.warnings[0].contains(&format!("+{} bytes", 1048576 - 12 * KIB)),
        "{}",
        check.warnings[0]
    );
}

mod never_panics {
    use memmon::report::model::replay::{Replay, ReplayOptions};
    use memmon::report::{report, Format, ReportOptions};
    use proptest::prelude::*;

    fn address() -> impl Strategy<Value = u64> {
        prop_oneof![
            (0u64..64).prop_map(|n| 0x7f00_0000_0000 + n * 0x1000),
            (0u64..64).prop_map(|n| 0x40_0000 + n * 0x800),
            Just(0),
            Just(u64::MAX),
            Just(u64::MAX - 4095),
            any::<u64>(),
        ]
    }

    fn length() -> impl Strategy<Value = u64> {
        prop_oneof![
            (0u64..40).prop_map(|n| n * 0x1000),
            Just(u64::MAX),
            any::<u64>()
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        let secs = prop_oneof![1u64..3, Just(u64::MAX / 2_000_000_000), any::<u64>()];
        let head = (secs, 0u32..999_999_999, 1u32..4)
            .prop_map(|(s, n, pid)| format!("{s}.{n:09} {pid}/{pid}"));
        let kind = prop_oneof![
            (address(), any::<u64>(), 0u8..8, 0u8..4, any::<u64>(), any::<bool>()).prop_map(
                |(addr, ip, kind, access, pages, stack)| {
                    let kind = ["anon", "file", "swap", "wp", "spurious", "numa", "hugetlb", "access"][kind as usize];
                    let access = ["R", "W", "X", "R"][access as usize];
                    let stack = if stack { format!(" stack={ip:#x},0x401000") } else { String::new() };
                    format!("fault type={kind} access={access} addr={addr:#x} ip={ip:#x} pages={}{stack}", pages % 600)
                }
            ),
            (address(), length(), any::<bool>(), any::<bool>()).prop_map(|(ret, len, file, shared)| {
                let flags = if shared { "SHARED" } else { "PRIVATE|ANONYMOUS" };
                let file = if file { " file=/lib/x.so" } else { "" };
                format!("mmap addr=0x0 len={len} prot=rwx flags={flags} fd=3 off=-4096 ret={ret:#x}{file}")
            }),
            (address(), length()).prop_map(|(addr, len)| format!("munmap addr={addr:#x} len={len} ret=0")),
            (address(), length(), length(), address(), 0u8..8).prop_map(|(old, old_len, new_len, new, flags)| {
                format!("mremap old={old:#x} old_len={old_len} new_len={new_len} flags={flags:#x} new=0x0 ret={new:#x}")
            }),
            address().prop_map(|ret| format!("brk req=0x0 ret={ret:#x}")),
            (address(), length(), prop_oneof![Just(4), Just(8), Just(9), Just(21)]).prop_map(
                |(addr, len, advice)| format!("madvise addr={addr:#x} len={len} advice={advice} ret=0")
            ),
            Just("exec comm=x filename=/bin/x".to_owned()),
            Just("exit code=0".to_owned()),
            (1u32..4).prop_map(|child| format!("fork child={child} watched=1")),
            Just("mark text=m".to_owned()),
            (any::<u64>(), 0u8..3).prop_map(|(n, at)| {
                let at = ["exit", "exec", "mark"][at as usize];
                format!("rss anon={n} file={n} shmem=0 swap=0 peak={n} at={at}")
            }),
        ];
        (head, kind).prop_map(|(head, kind)| format!("{head} {kind}"))
    }

    fn capture() -> impl Strategy<Value = String> {
        proptest::collection::vec(line(), 0..60).prop_map(|lines| {
            let mut text = String::from(
                "# command x\n# snapshot maps 1 1.000000000 start\n\
                 #| 00400000-00401000 r-xp 00000000 00:03 5 /bin/x\n\
                 #| ffffffffff600000-ffffffffff601000 --xp ffffffffffff0000 00:00 0 [vsyscall]\n\
                 # snapshot status 1 1.000000000 mark\n#| RssAnon: 99999999999999999999 kB\n",
            );
            for line in lines {
                text.push_str(&line);
                text.push('\n');
            }
            text
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn replaying_any_sequence_never_panics(text in capture()) {
            let mut replay = Replay::new(ReplayOptions::default());
            replay.capture(text.as_bytes()).unwrap();
            let analysis = replay.finish();
            let symbols = memmon::report::symbolize::symbols::Symbols::new(
                &analysis.sites,
                &memmon::report::symbolize::symbols::SymbolOptions::default(),
            );
            let view = memmon::report::view::memory::build(&analysis, &symbols, &Default::default()).unwrap();
            let _ = memmon::report::output::text::memory::render(&view, memmon::report::output::text::memory::TextOptions { top: 5, timeline: true });
        }
    }

    #[test]
    fn every_format_on_a_tricky_capture() {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tricky.cap");
        std::fs::write(
            &dir,
            "1.000000000 1/1 fault type=anon access=W addr=0xffffffffffffffff ip=0x1 pages=512\n\
             1.000000001 1/1 mremap old=0xfffffffffffff000 old_len=18446744073709551615 new_len=1 flags=MAYMOVE new=0x0 ret=0x1000\n\
             garbage line\n",
        )
        .unwrap();
        for format in [
            Format::Text,
            Format::Json,
            Format::Folded,
            Format::Svg,
            Format::Pprof,
            Format::Html,
        ] {
            let options = ReportOptions {
                format,
                ..ReportOptions::default()
            };
            let _ = report(std::slice::from_ref(&dir), &options);
        }
    }
}

/// A JIT's code is executable through mprotect (V8 maps its code space read-write, then
/// makes it `rwx`): a stack goes through it to its callers; once it is not executable any
/// more, a chain stops there (it could be data read as a return address). mprotect maps
/// nothing: the mapped bytes stay.
#[test]
fn code_made_executable_by_mprotect() {
    let capture = format!(
        "{HEADER}\
1.100000000 100/100 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7e0000000000 dur=1000 stack=0x401100
1.100000001 100/100 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000 dur=1000 stack=0x401100
1.200000000 100/100 fault type=anon access=W addr=0x7f0000000000 ip=0x401010 stack=0x401010,0x7e0000001100,0x401200
1.300000000 100/100 mprotect addr=0x7e0000001000 len=4096 prot=rwx ret=0 dur=10 stack=0x401100
1.400000000 100/100 fault type=anon access=W addr=0x7f0000001000 ip=0x401020 stack=0x401020,0x7e0000001100,0x401200
1.500000000 100/100 mprotect addr=0x7e0000001000 len=4096 prot=rw- ret=0 dur=10 stack=0x401100
1.600000000 100/100 fault type=anon access=W addr=0x7f0000002000 ip=0x401030 stack=0x401030,0x7e0000001100,0x401200
"
    );
    let view = view(&capture);
    let chain = |function: &str| {
        view.sites
            .iter()
            .find(|row| row.function() == function)
            .unwrap_or_else(|| panic!("no site {function}"))
            .chain(8)
    };
    assert_eq!(chain("prog+0x1010"), "prog+0x1010");
    assert_eq!(
        chain("prog+0x1020"),
        "prog+0x1020 < [0x7e0000001100] < prog+0x1200"
    );
    assert_eq!(chain("prog+0x1030"), "prog+0x1030");
    // The two regions and the snapshot's three (8 KiB of the program, its 8 KiB stack).
    assert_eq!(view.mapped, 128 * KIB + 16 * KIB);
}

/// A capture of a kernel of 16 KiB pages (Debian's arm64-16k): its `# page-size` header
/// makes every count of pages one of 16 KiB. The same process as above in 16 KiB pages: 4
/// pages of anonymous memory faulted at once, 4 of a file, half the anonymous ones freed;
/// a PMD huge page is 2048 pages (32 MiB). The kernel's counters at exit agree.
#[test]
fn pages_of_16_kib() {
    let events = "\
1.100000000 100/100 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
1.100000001 100/100 fault type=anon access=W addr=0x7f0000000010 ip=0x401010 pages=4
1.300000000 100/100 mmap addr=0x0 len=65536 prot=r-- flags=PRIVATE fd=3 off=0 ret=0x7f2000000000 file=/data/table
1.300000001 100/100 fault type=file access=R addr=0x7f2000000000 ip=0x401020 pages=4
1.400000000 100/100 madvise addr=0x7f0000000000 len=32768 advice=DONTNEED ret=0
1.450000000 100/100 mmap addr=0x0 len=67108864 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f4000000000
1.450000001 100/100 fault type=anon access=W addr=0x7f4000000000 ip=0x401030 huge=1
1.500000000 100/100 rss anon=33587200 file=65536 shmem=0 swap=0 peak=33652736 at=exit
1.500000001 100/100 exit code=0
";
    let header = HEADER.replace(
        "# memmon-capture 1\n",
        "# memmon-capture 1\n# page-size 16384\n",
    );
    let in_16_kib = view(&format!("{header}{events}"));
    // 2 anonymous pages of 16 KiB and the huge page's 2048; 4 file pages.
    assert_eq!(in_16_kib.totals.anon, 32 * KIB + (32 << 20));
    assert_eq!(in_16_kib.totals.file, 64 * KIB);
    assert_eq!(in_16_kib.reconciliation.len(), 1);
    assert!(
        in_16_kib.reconciliation[0].warnings.is_empty(),
        "{:?}",
        in_16_kib.reconciliation[0].warnings
    );
    // Without the header the same lines are read as 4 KiB pages: the 4 anonymous pages lie
    // in the 32 KiB freed, the huge page is 2 MiB, the file 16 KiB; the kernel's counters
    // disagree.
    let in_4_kib = view(&format!("{HEADER}{events}"));
    assert_eq!(in_4_kib.totals.anon, 2 << 20);
    assert_eq!(in_4_kib.totals.file, 16 * KIB);
    assert!(!in_4_kib.reconciliation[0].warnings.is_empty());
}
