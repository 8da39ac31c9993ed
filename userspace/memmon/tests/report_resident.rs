//! The pages a process held when memmon started watching it (a `pages` snapshot, `record
//! -p`): seeded into the model as pages of their own site, per class, and taken away by
//! later unmaps, frees, swap-outs and the exit exactly as faulted pages are.

use memmon::capture::resident::PageRun;
use memmon::report::model::moment::Moment;
use memmon::report::model::picture::PageSize;

/// The page size of these captures (none names one: 4 KiB).
const PAGE: u64 = PageSize::DEFAULT.bytes();
use memmon::report::model::replay::{Replay, ReplayOptions};
use memmon::report::model::sites::LABEL_RESIDENT_BEFORE;
use memmon::report::symbolize::symbols::{SymbolOptions, Symbols};
use memmon::report::view::memory::{build, View, ViewOptions};
use memmon::report::view::reconcile::reconcile;

/// A running process as `record -p` finds it: its program (2 file pages), heap (16
/// anonymous pages), an anonymous mapping (24 anonymous pages, 4 zero pages, 4 swapped), a
/// read-only data file (16 pages), a /dev/shm ring (4 pages) and one page of stack. The
/// status snapshot says the same: 41 anonymous pages (164 kB), 18 file (72 kB), 4 shmem
/// (16 kB), 4 swapped (16 kB).
const START: &str = "\
# memmon-capture 1
# start 1.000000000
# pids 100
# snapshot maps 100 1.000000000 start
#| 00400000-00402000 r-xp 00000000 08:01 5 /bin/prog
#| 01000000-01010000 rw-p 00000000 00:00 0 [heap]
#| 7f0000000000-7f0000020000 rw-p 00000000 00:00 0 
#| 7f1000000000-7f1000010000 r--p 00000000 08:01 9 /data/table
#| 7f2000000000-7f2000004000 rw-s 00000000 00:05 3 /dev/shm/ring
#| 7ffc0000-7ffc2000 rw-p 00000000 00:00 0 [stack]
# snapshot pages 100 1.000000000 start
#| 400000-402000 file
#| 1000000-1010000 anon
#| 7f0000000000-7f0000018000 anon
#| 7f0000018000-7f000001c000 zero
#| 7f000001c000-7f0000020000 swap
#| 7f1000000000-7f1000010000 file
#| 7f2000000000-7f2000004000 shmem
#| 7ffc1000-7ffc2000 anon
# snapshot status 100 1.000000000 start
#| VmRSS:	     252 kB
#| RssAnon:	     164 kB
#| RssFile:	      72 kB
#| RssShmem:	      16 kB
#| VmSwap:	      16 kB
";

/// What the process does once watched: a write to a zero page and a swap-in of a swapped
/// page (each a page of its fault's now), a fault on a page already resident (counted
/// once), then it unmaps half its anonymous mapping, frees half the file's pages, shrinks
/// its heap by half and pages 4 more anonymous pages out; `record -p` ends (Ctrl-C) with
/// the end snapshots.
const LATER: &str = "\
1.100000000 100/100 fault type=wp access=W addr=0x7f0000018010 ip=0x401010
1.200000000 100/100 fault type=swap access=R addr=0x7f000001c000 ip=0x401020
1.250000000 100/100 fault type=anon access=W addr=0x7f0000000000 ip=0x401030
1.300000000 100/100 munmap addr=0x7f0000000000 len=65536 ret=0
1.400000000 100/100 madvise addr=0x7f1000000000 len=32768 advice=DONTNEED ret=0
1.500000000 100/100 brk req=0x1008000 ret=0x1008000
1.600000000 100/100 madvise addr=0x7f0000010000 len=16384 advice=PAGEOUT ret=0
# snapshot status 100 1.700000000 end
#| VmRSS:	     116 kB
#| RssAnon:	      60 kB
#| RssFile:	      40 kB
#| RssShmem:	      16 kB
#| VmSwap:	      28 kB
# end 1.800000000
";

fn view(capture: &str, at: Moment) -> View {
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(capture.as_bytes()).unwrap();
    let analysis = replay.finish();
    let symbols = Symbols::new(&analysis.sites, &SymbolOptions::default());
    let options = ViewOptions {
        at,
        ..ViewOptions::default()
    };
    build(&analysis, &symbols, &options).unwrap()
}

/// Resident bytes of the RSS tree's row of `label` (a class).
fn class_bytes(view: &View, label: &str) -> u64 {
    view.tree
        .iter()
        .filter(|row| row.label == label)
        .map(|row| row.resident)
        .sum()
}

/// Resident bytes of the site whose function is `name`.
fn site_bytes(view: &View, name: &str) -> u64 {
    view.sites
        .iter()
        .filter(|row| row.function() == name)
        .map(|row| row.resident)
        .sum()
}

#[test]
fn the_start_is_what_the_process_held() {
    let view = view(START, Moment::End);
    assert_eq!(view.totals.anon, 41 * PAGE);
    assert_eq!(view.totals.file, 18 * PAGE);
    assert_eq!(view.totals.shmem, 4 * PAGE);
    assert_eq!(view.totals.swap, 4 * PAGE);
    assert_eq!(view.totals.resident(), 63 * PAGE);
    // By class: the zero pages are mapped, not resident.
    assert_eq!(class_bytes(&view, "heap (brk)"), 16 * PAGE);
    assert_eq!(class_bytes(&view, "anonymous mmap"), 24 * PAGE);
    assert_eq!(class_bytes(&view, "stacks"), PAGE);
    assert_eq!(class_bytes(&view, "/data/table"), 16 * PAGE);
    assert_eq!(class_bytes(&view, "/bin/prog"), 2 * PAGE);
    assert_eq!(class_bytes(&view, "/dev/shm/ring"), 4 * PAGE);
    // All of it is the one site of what was there before.
    assert_eq!(site_bytes(&view, LABEL_RESIDENT_BEFORE), 63 * PAGE);
}

#[test]
fn later_calls_take_the_seeded_pages_away_exactly() {
    let capture = format!("{START}{LATER}");
    let view = view(&capture, Moment::End);
    // Anonymous: heap 8 (shrunk from 16); mapping 6 (pages 16-19 paged out, 20-23, the
    // written zero page 24 and the swapped-in page 28; 0-15 unmapped); stack 1.
    assert_eq!(class_bytes(&view, "heap (brk)"), 8 * PAGE);
    assert_eq!(class_bytes(&view, "anonymous mmap"), 6 * PAGE);
    assert_eq!(view.totals.anon, 15 * PAGE);
    // File: the program's 2 pages and the 8 not freed of the table.
    assert_eq!(class_bytes(&view, "/data/table"), 8 * PAGE);
    assert_eq!(view.totals.file, 10 * PAGE);
    assert_eq!(view.totals.shmem, 4 * PAGE);
    // Swap: 3 of the 4 swapped at the start, and the 4 paged out.
    assert_eq!(view.totals.swap, 7 * PAGE);
    // The two pages faults brought in are their sites'; the fault on a resident page
    // counted nothing (and was unmapped with the rest).
    assert_eq!(site_bytes(&view, LABEL_RESIDENT_BEFORE), 27 * PAGE);
    assert_eq!(view.totals.resident(), 29 * PAGE);
    // That fault took its page over from the start's site (a fault read after the snapshot
    // was taken), then the unmap freed it.
    let refault = view
        .sites
        .iter()
        .find(|row| row.function() == "prog+0x1030")
        .unwrap();
    assert_eq!(
        (refault.brought_in, refault.resident, refault.released),
        (PAGE, 0, PAGE)
    );
    // The end's status snapshot agrees to the byte: no warning, and none that blames pages
    // from before watching.
    assert_eq!(view.reconciliation.len(), 1);
    let check = &view.reconciliation[0];
    assert_eq!(check.model.anon, check.counters.anon);
    assert_eq!(
        check.model.file + check.model.shmem,
        check.counters.file + check.counters.shmem
    );
    assert_eq!(check.model.swap, check.counters.swap);
    assert!(check.warnings.is_empty(), "{:?}", check.warnings);
    // The peak: the start's 63 pages and the two the faults brought in, before the unmap.
    assert_eq!(view.shown.peak.resident, 65 * PAGE);
    assert_eq!(view.shown.peak.when[0].time.to_string(), "1.200000000");
}

#[test]
fn the_exit_releases_the_seeded_pages() {
    let capture = format!("{START}1.100000000 100/100 exit code=0\n");
    let mut replay = Replay::new(ReplayOptions::default());
    replay.capture(capture.as_bytes()).unwrap();
    assert_eq!(replay.live_pictures().count(), 0);
    let analysis = replay.finish();
    // The end is its last state, before the exit released it.
    assert_eq!(
        analysis.end.total.kind_bytes(analysis.page).resident(),
        63 * PAGE
    );
    // And with the exit, nothing stays in the chart's series.
    assert_eq!(
        analysis
            .series
            .last()
            .map(|point| point.bytes.iter().sum::<u64>()),
        Some(0)
    );
}

#[test]
fn a_snapshot_missing_the_pages_counts_as_before() {
    // Without the pages snapshot (a capture of an older memmon): the model has no page, and
    // the difference with the counters is blamed on pages from before watching.
    let old: String = START
        .lines()
        .filter(|line| {
            !line.starts_with("# snapshot pages")
                && PageRun::parse(&line[3.min(line.len())..]).is_none()
        })
        .map(|line| format!("{line}\n"))
        .collect();
    let view = view(&format!("{old}{LATER}"), Moment::End);
    assert_eq!(view.totals.resident(), 2 * PAGE);
    let analysis = {
        let mut replay = Replay::new(ReplayOptions::default());
        replay.capture(format!("{old}{LATER}").as_bytes()).unwrap();
        replay.finish()
    };
    let checks = reconcile(&analysis);
    assert!(
        checks[0].warnings[0].contains("before watching began"),
        "{:?}",
        checks[0].warnings
    );
}

#[test]
fn a_file_on_tmpfs_counts_as_shmem_from_its_start_on() {
    // /tmp/data is on tmpfs (the pages snapshot says shmem, as the frames' flags did):
    // its pages count as RssShmem, those read later too; a write to the private mapping
    // copies a page, anonymous.
    let capture = "\
# memmon-capture 1
# pids 100
# snapshot maps 100 1.000000000 start
#| 7f0000010000-7f0000014000 rw-p 00000000 00:1a 77 /tmp/data
# snapshot pages 100 1.000000000 start
#| 7f0000010000-7f0000011000 shmem
1.100000000 100/100 fault type=file access=R addr=0x7f0000011000 ip=0x401010
1.200000000 100/100 fault type=file access=W addr=0x7f0000012000 ip=0x401010
1.300000000 100/100 fault type=wp access=W addr=0x7f0000010000 ip=0x401010
";
    let view = view(capture, Moment::End);
    assert_eq!(view.totals.shmem, PAGE);
    assert_eq!(view.totals.anon, 2 * PAGE);
    assert_eq!(view.totals.file, 0);
    assert_eq!(class_bytes(&view, "/tmp/data"), 3 * PAGE);
}

#[test]
fn a_fault_around_read_after_the_snapshot_maps_its_pages_not_others() {
    // record --cgroup and the agent read a process's pages when they first see it; faults
    // made before that read but applied after it mapped pages of the snapshot: a
    // fault-around of 16 pages takes the 16 of its window, not 16 more of the file.
    let capture = "\
# memmon-capture 1
# pids 100
# snapshot maps 100 1.000000000 start
#| 00400000-00440000 r-xp 00000000 08:01 5 /bin/prog
# snapshot pages 100 1.000000000 start
#| 400000-410000 file
1.100000000 100/100 fault type=file access=X addr=0x400010 ip=0x400010 pages=16
";
    let view = view(capture, Moment::End);
    assert_eq!(view.totals.file, 16 * PAGE);
    assert_eq!(site_bytes(&view, LABEL_RESIDENT_BEFORE), 0);
    let fault = view
        .sites
        .iter()
        .find(|row| row.function() == "prog+0x10")
        .unwrap();
    assert_eq!((fault.resident, fault.brought_in), (16 * PAGE, 16 * PAGE));
}

#[test]
fn the_start_is_a_moment_of_its_own() {
    // A process that only frees once watched: its peak is what it held at the start.
    let capture =
        format!("{START}1.300000000 100/100 munmap addr=0x7f0000000000 len=65536 ret=0\n");
    let view = view(&capture, Moment::Peak);
    assert_eq!(view.shown.peak.resident, 63 * PAGE);
    assert_eq!(view.shown.peak.when[0].time.to_string(), "1.000000000");
    assert_eq!(view.totals.resident(), 63 * PAGE);
}
