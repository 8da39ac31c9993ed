//! Reading event streams and capture files.

use memmon::capture::file::{write_header, write_snapshot};
use memmon::{CaptureReader, EventKind, ParseError, ReadError, Record, SnapshotSource, Timestamp};

const CAPTURE: &str = "\
# memmon-capture 1
# kernel 6.8.0-45-generic
# module-version unknown
# start 5.100000000
# snapshot maps 212 5.100020000 start
#| 00400000-00401000 r-xp 00000000 08:01 1234 /bin/true
#| 7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]
# snapshot status 212 5.100020000 start
#| VmPeak:\t    2400 kB
5.103884211 212/212 mmap addr=0x0 len=139264 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x7f5a2c1e4000

#comment without space is ignored
5.104100000 212/212 exit code=0
# snapshot maps 212 5.104200000 end unavailable: process has exited
# end 5.104300000
";

#[test]
fn reads_headers_snapshots_and_events() {
    let mut reader = CaptureReader::new(CAPTURE.as_bytes());
    let mut headers = Vec::new();
    let mut snapshots = Vec::new();
    let mut events = Vec::new();
    while let Some(record) = reader.next_record() {
        match record.unwrap() {
            (line, Record::Header { key, value }) => headers.push((line, key, value)),
            (line, Record::Snapshot(snapshot)) => snapshots.push((line, snapshot)),
            (line, Record::Event(event)) => events.push((line, event.into_owned())),
        }
    }
    assert_eq!(headers.len(), 5);
    assert_eq!(
        headers[1],
        (2, "kernel".to_owned(), "6.8.0-45-generic".to_owned())
    );
    assert_eq!(headers[4].1, "end");
    assert_eq!(snapshots.len(), 3);
    let (line, maps) = &snapshots[0];
    assert_eq!(*line, 5);
    assert_eq!(maps.source, SnapshotSource::Maps);
    assert_eq!(maps.pid, 212);
    assert_eq!(
        maps.time,
        Timestamp {
            secs: 5,
            nanos: 100020000
        }
    );
    assert_eq!(maps.reason, "start");
    assert_eq!(maps.note, None);
    assert_eq!(maps.lines.len(), 2);
    assert!(maps.lines[1].ends_with("[stack]"));
    assert_eq!(snapshots[1].1.lines, ["VmPeak:\t    2400 kB"]);
    assert_eq!(
        snapshots[2].1.note.as_deref(),
        Some("unavailable: process has exited")
    );
    assert!(snapshots[2].1.lines.is_empty());
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].0, 10);
    assert_eq!(events[1].0, 13);
    assert_eq!(events[1].1.kind, EventKind::Exit { code: 0 });
}

#[test]
fn event_iterator_skips_non_events() {
    let events: Vec<_> = CaptureReader::new(CAPTURE.as_bytes())
        .into_events()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(events.len(), 2);
    let mut reader = CaptureReader::new(CAPTURE.as_bytes());
    let (line, event) = reader.next_event().unwrap().unwrap();
    assert_eq!((line, event.pid), (10, 212));
}

#[test]
fn errors_name_the_line() {
    let input = "1.000000000 1/1 fsync fd=1 ret=0\n1.000000000 1/1 fsync fd=1\n1.000000000 1/1 lost count=1\n";
    let mut reader = CaptureReader::new(input.as_bytes());
    assert!(reader.next_event().unwrap().is_ok());
    let error = reader.next_event().unwrap().unwrap_err();
    assert!(matches!(
        error,
        ReadError::Parse {
            line: 2,
            source: ParseError::MissingKey { key: "ret", .. }
        }
    ));
    assert_eq!(
        error.to_string(),
        "line 2: fsync event without required key `ret`"
    );
    // The reader continues after an error.
    assert!(reader.next_event().unwrap().is_ok());
    assert!(reader.next_event().is_none());

    let mut reader = CaptureReader::new(&b"# snapshot maps x 1.0 start\n"[..]);
    let error = reader.next_record().unwrap().unwrap_err();
    assert!(
        matches!(error, ReadError::BadSnapshotHeader { line: 1, .. }),
        "{error}"
    );

    let mut reader = CaptureReader::new(&b"1.000000000 1/1 mark text=\xff\n"[..]);
    let error = reader.next_event().unwrap().unwrap_err();
    assert_eq!(error.to_string(), "line 1: line is not ASCII text");
}

#[test]
fn last_line_without_newline_is_read() {
    let mut reader = CaptureReader::new(&b"1.000000000 1/1 exit code=0"[..]);
    assert!(reader.next_event().unwrap().is_ok());
    assert!(reader.next_event().is_none());
}

#[test]
fn writer_output_reads_back() {
    let mut out = Vec::new();
    write_header(&mut out, "kernel", "6.1\nextra").unwrap();
    write_snapshot(
        &mut out,
        SnapshotSource::Status,
        7,
        Timestamp { secs: 1, nanos: 5 },
        "mark",
        None,
        ["VmRSS:\t 100 kB", ""],
    )
    .unwrap();
    out.extend_from_slice(b"1.000000006 7/7 fsync fd=1 ret=0\n");
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("# kernel 6.1 extra\n# snapshot status 7 1.000000005 mark\n#| VmRSS:"));
    let mut reader = CaptureReader::new(text.as_bytes());
    assert!(matches!(
        reader.next_record().unwrap().unwrap().1,
        Record::Header { .. }
    ));
    let Record::Snapshot(snapshot) = reader.next_record().unwrap().unwrap().1 else {
        panic!()
    };
    assert_eq!(snapshot.lines, ["VmRSS:\t 100 kB", ""]);
    assert!(matches!(
        reader.next_record().unwrap().unwrap().1,
        Record::Event(_)
    ));
    assert!(reader.next_record().is_none());
}
