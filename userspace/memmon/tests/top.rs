//! `memmon top`'s model: samples of the report's replay between events.

use memmon::top::{render_plain, ProcessOrder, SiteOrder, TopModel};
use memmon::{CaptureReader, Record};

const PART_ONE: &str = "\
# memmon-capture 1
# snapshot maps 212 5.000000000 start
#| 00400000-00401000 r-xp 00000000 08:01 1234 /bin/a
5.100000000 212/212 mmap addr=0x0 len=16384 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
5.200000000 212/212 fault type=anon access=W addr=0x7f0000000000 ip=0x400100
5.200000001 212/212 fault type=anon access=W addr=0x7f0000001000 ip=0x400100
5.300000000 0/0 lost count=7
";

const PART_TWO: &str = "\
6.100000000 212/212 fault type=anon access=W addr=0x7f0000002000 ip=0x400180
6.200000000 212/212 fault type=swap access=R addr=0x7f0000003000 ip=0x400180
6.300000000 212/212 madvise addr=0x7f0000000000 len=4096 advice=DONTNEED ret=0
";

fn feed(model: &mut TopModel, text: &str) {
    let mut reader = CaptureReader::new(text.as_bytes());
    while let Some(record) = reader.next_record() {
        let (_, record) = record.unwrap();
        if let Record::Event(event) = &record {
            assert!(!matches!(event.kind, memmon::EventKind::Fork { .. }));
        }
        model.record(&record);
    }
}

#[test]
fn samples_growth_rates_sites_and_lost() {
    let mut model = TopModel::new(Default::default());
    let start = model.sample(1.0);
    assert!(start.processes.is_empty() && start.sites.is_empty());
    model.name(212, "grow");
    feed(&mut model, PART_ONE);
    let one = model.sample(2.0);
    assert_eq!((one.events, one.lost, one.lost_in_interval), (4, 7, 7));
    assert_eq!(one.processes.len(), 1);
    let process = &one.processes[0];
    assert_eq!((process.pid, process.command.as_str()), (212, "grow"));
    assert_eq!((process.resident.anon, process.growth), (8192, 8192));
    assert_eq!(process.faults_per_second, [1.0, 0.0, 0.0, 0.0, 0.0]);
    let sites: Vec<(&str, i64, i64, u64)> = one
        .sites
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.interval_growth,
                s.start_growth,
                s.resident,
            )
        })
        .collect();
    assert_eq!(sites, [("a+0x100", 8192, 8192, 8192)]);

    feed(&mut model, PART_TWO);
    let mut two = model.sample(1.0);
    assert_eq!((two.lost, two.lost_in_interval), (7, 0));
    let process = &two.processes[0];
    // +2 pages (the anon fault and the swap-in), -1 (DONTNEED).
    assert_eq!((process.resident.anon, process.growth), (12288, 4096));
    assert_eq!(process.faults_per_second, [1.0, 0.0, 1.0, 0.0, 0.0]);
    assert_eq!(process.swap_ins, 1);
    two.sort_sites(SiteOrder::IntervalGrowth);
    let sites: Vec<(&str, i64, i64, u64)> = two
        .sites
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.interval_growth,
                s.start_growth,
                s.resident,
            )
        })
        .collect();
    assert_eq!(
        sites,
        [
            ("a+0x180", 8192, 8192, 8192),
            ("a+0x100", -4096, 4096, 4096)
        ]
    );
    two.sort_sites(SiteOrder::Resident);
    assert_eq!(two.sites[0].function, "a+0x180");
    two.sort_processes(ProcessOrder::Faults);
    let plain = render_plain(&two, 10);
    assert_eq!(
        plain,
        "memmon top: events 7  lost 7 (0 in the last 1.0 s)\n\
         PID  COMMAND    ANON  FILE  SHMEM  GROWTH  1ST-TOUCH/s  FILE/s  COW/s  OTHER/s  SWAP-INS\n\
         212  grow     12 KiB   0 B    0 B  +4 KiB            1       0      0        0         1\n\
         INTERVAL  SINCE START  RESIDENT  SITE\n  \
         +8 KiB       +8 KiB     8 KiB  a+0x180\n  \
         -4 KiB       +4 KiB     4 KiB  a+0x100\n\n"
    );
}

/// A program at /usr/bin/prog calling into libsqlite3, which calls libc's malloc: the
/// stack of the fault is malloc, sqlite3, prog's load_rows (0x401100), prog's main.
const OWN_CODE: &str = "\
# memmon-capture 1
# snapshot maps 300 1.000000000 start
#| 00400000-00402000 r-xp 00000000 08:01 1 /usr/bin/prog
#| 7f1000000000-7f1000010000 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libsqlite3.so.0
#| 7f2000000000-7f2000010000 r-xp 00000000 08:01 3 /lib/x86_64-linux-gnu/libc.so.6
1.100000000 300/300 mmap addr=0x0 len=65536 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f0000000000
1.200000000 300/300 fault type=anon access=W addr=0x7f0000000000 ip=0x7f2000000100 stack=0x7f2000000100,0x7f1000000200,0x401100,0x401200
1.200000001 300/300 fault type=anon access=W addr=0x7f0000001000 ip=0x7f2000000100 stack=0x7f2000000100,0x7f1000000200,0x401100,0x401200
1.200000002 300/300 fault type=anon access=W addr=0x7f0000002000 ip=0x401180 stack=0x401180,0x401200
";

#[test]
fn sites_are_named_by_own_code() {
    let mut model = TopModel::new(Default::default());
    feed(&mut model, OWN_CODE);
    let mut sample = model.sample(1.0);
    sample.sort_sites(SiteOrder::Resident);
    let sites: Vec<(&str, &str, u64)> = sample
        .sites
        .iter()
        .map(|s| (s.name.as_str(), s.function.as_str(), s.resident))
        .collect();
    // No symbols (the files are not here): the frames show as object+offset; the site is
    // named from prog's frame, libsqlite3 and libc summarised after it.
    assert_eq!(
        sites,
        [
            (
                "prog+0x1100 < prog+0x1200 → [libsqlite3.so.0+0x200 … libc.so.6+0x100]",
                "prog+0x1100",
                8192
            ),
            ("prog+0x1180 < prog+0x1200", "prog+0x1180", 4096),
        ]
    );
}

/// The process of [`PART_ONE`] and [`PART_TWO`] exits.
const EXIT: &str = "\
7.000000000 212/212 exit code=0
";

#[test]
fn the_sample_after_an_exit_shows_what_the_process_had() {
    let mut model = TopModel::new(Default::default());
    model.name(212, "grow");
    feed(&mut model, PART_ONE);
    model.sample(1.0);
    feed(&mut model, PART_TWO);
    feed(&mut model, EXIT);
    // The sample taken after the exit (the last table when the watched command ends): the
    // process as it exited, its pages in its sites, nothing negative since the start.
    let mut last = model.sample(1.0);
    last.sort_sites(SiteOrder::IntervalGrowth);
    assert_eq!(last.processes.len(), 1);
    let process = &last.processes[0];
    assert_eq!(
        (process.pid, process.command.as_str(), process.exited),
        (212, "grow", true)
    );
    assert_eq!((process.resident.anon, process.growth), (12288, 4096));
    assert_eq!(process.faults_per_second, [1.0, 0.0, 1.0, 0.0, 0.0]);
    assert_eq!(
        render_plain(&last, 10),
        "memmon top: events 8  lost 7 (0 in the last 1.0 s)\n\
         PID  COMMAND          ANON  FILE  SHMEM  GROWTH  1ST-TOUCH/s  FILE/s  COW/s  OTHER/s  SWAP-INS\n\
         212  grow [exited]  12 KiB   0 B    0 B  +4 KiB            1       0      0        0         1\n\
         INTERVAL  SINCE START  RESIDENT  SITE\n  \
         +8 KiB       +8 KiB     8 KiB  a+0x180\n  \
         -4 KiB       +4 KiB     4 KiB  a+0x100\n\n"
    );
    // Once shown, it is gone: its pages went with it.
    let after = model.sample(1.0);
    assert!(after.processes.is_empty());
    let sites: Vec<(&str, i64, i64, u64)> = after
        .sites
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.interval_growth,
                s.start_growth,
                s.resident,
            )
        })
        .collect();
    assert_eq!(sites, [("a+0x100", -4096, 0, 0), ("a+0x180", -8192, 0, 0)]);
}

/// The plain loop takes no sample at the start: the first table's figures since the start
/// are from the model's creation, and so are the next ones'.
#[test]
fn since_start_is_from_the_model_creation() {
    let mut model = TopModel::new(Default::default());
    feed(&mut model, PART_ONE);
    let one = model.sample(1.0);
    assert_eq!(one.sites[0].start_growth, 8192);
    feed(&mut model, PART_TWO);
    let mut two = model.sample(1.0);
    two.sort_sites(SiteOrder::StartGrowth);
    let since: Vec<(&str, i64)> = two
        .sites
        .iter()
        .map(|s| (s.name.as_str(), s.start_growth))
        .collect();
    assert_eq!(since, [("a+0x180", 8192), ("a+0x100", 4096)]);
}
