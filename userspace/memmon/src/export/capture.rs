//! A capture's snapshots: each process at the report's default moment, the peak (the
//! replay of `memmon report`), with its stacks' resident and mapped bytes and the sites'
//! faults over the capture.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::capture::file::{CaptureReader, Record};
use crate::report::model::class::{Class, PageKind};
use crate::report::model::replay::{Replay, ReplayOptions};
use crate::report::model::sites::{Frame, SiteId, SiteTable};
use crate::report::Moment;
use crate::stream::event::{EventKind, Timestamp};

use super::{snapshot_id, SnapshotData, StackFrame, StackSample};

/// The coarse class of a mapping class (the agent's `class` label values).
pub fn coarse_class(class: &Class) -> &'static str {
    match class {
        Class::Heap => "heap",
        Class::AnonMmap => "anon_mmap",
        Class::Stack => "stack",
        Class::File(_) => "file",
        Class::Shmem(_) => "shmem",
        Class::Special(_) => "special",
        Class::Unknown => "unknown",
    }
}

/// The `# start-unix` header of a capture, in nanoseconds.
fn start_unix_ns(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(&bytes[..bytes.len().min(4096)]).ok()?;
    let value = text
        .lines()
        .take_while(|line| line.starts_with('#'))
        .find_map(|line| line.strip_prefix("# start-unix "))?;
    parse_unix_ns(value)
}

/// A wall-clock time as the headers write it (`SECONDS.NANOSECONDS`), in nanoseconds.
fn parse_unix_ns(value: &str) -> Option<i64> {
    let (seconds, fraction) = value.trim().split_once('.').unwrap_or((value.trim(), "0"));
    let mut nanos: String = fraction.chars().take(9).collect();
    while nanos.len() < 9 {
        nanos.push('0');
    }
    Some(seconds.parse::<i64>().ok()? * 1_000_000_000 + nanos.parse::<i64>().ok()?)
}

/// Nanoseconds since the epoch of `time` (CLOCK_MONOTONIC, the events' clock), by the
/// capture's `# start` (monotonic) and `# start-unix` (the same moment on the wall clock).
fn unix_ns_of(time: Timestamp, start: Timestamp, start_unix: i64) -> i64 {
    let since = i128::try_from(time.as_nanos()).unwrap_or(i128::MAX)
        - i128::try_from(start.as_nanos()).unwrap_or(i128::MAX);
    i64::try_from(i128::from(start_unix).saturating_add(since)).unwrap_or(0)
}

/// When each process of the capture `bytes` started, nanoseconds since the epoch: its
/// `# process-start PID NS` header (a process memmon began to watch while it ran: `record
/// -p`, a member of a watched cgroup), the time of the `fork` line that made it (a child
/// seen forked), or, in a capture of a command memmon started (`# command`), the capture's
/// start for the first process of its events (memmon forked it then). Processes none of
/// these names are left out; so are all without `# start` and `# start-unix`.
pub fn process_starts(bytes: &[u8]) -> HashMap<u32, i64> {
    let mut reader = CaptureReader::new(bytes);
    let (mut start, mut start_unix, mut command) = (None, None, false);
    let mut starts = HashMap::new();
    let mut first = None;
    while let Some(record) = reader.next_record() {
        let Ok((_, record)) = record else {
            continue;
        };
        match record {
            Record::Header { key, value } => match key.as_str() {
                "start" => start = Timestamp::parse(value.trim()),
                "start-unix" => start_unix = parse_unix_ns(&value),
                "command" => command = true,
                "process-start" => {
                    let mut words = value.split_whitespace();
                    if let (Some(Ok(pid)), Some(Ok(ns))) = (
                        words.next().map(str::parse::<u32>),
                        words.next().map(str::parse::<i64>),
                    ) {
                        starts.insert(pid, ns);
                    }
                }
                _ => {}
            },
            Record::Event(event) => {
                first.get_or_insert(event.pid);
                if let (EventKind::Fork { child, .. }, Some(start), Some(start_unix)) =
                    (&event.kind, start, start_unix)
                {
                    starts
                        .entry(*child)
                        .or_insert_with(|| unix_ns_of(event.time, start, start_unix));
                }
            }
            Record::Snapshot(_) => {}
        }
    }
    if let (true, Some(pid), Some(_), Some(start_unix)) = (command, first, start, start_unix) {
        starts.entry(pid).or_insert(start_unix);
    }
    starts
}

/// Build IDs of objects, from the capture's `# buildid` headers (in the site table) or
/// read from the binaries (under `sysroot`, as `memmon report` finds them).
struct BuildIds<'a> {
    sysroot: Option<&'a Path>,
    read: HashMap<String, Option<String>>,
}

impl BuildIds<'_> {
    fn of(&mut self, sites: &SiteTable, object: u32) -> Option<String> {
        if let Some(id) = sites.object_build_id(object) {
            return Some(id.to_owned());
        }
        let path = sites.object_path(object);
        self.read
            .entry(path.to_owned())
            .or_insert_with(|| {
                let file = match self.sysroot {
                    Some(root) => root.join(path.trim_start_matches('/')),
                    None => Path::new(path).to_path_buf(),
                };
                memmon_objects::elf::build_id(&file)
            })
            .clone()
    }
}

/// The frames of a site as the tables store them; an error names an object without a
/// build ID.
fn frames(
    sites: &SiteTable,
    site: SiteId,
    build_ids: &mut BuildIds<'_>,
) -> Result<Vec<StackFrame>, String> {
    sites
        .frames(site)
        .iter()
        .map(|frame| match *frame {
            Frame::Code {
                object,
                offset,
                ret,
            } => {
                let path = sites.object_path(object);
                let build_id = build_ids.of(sites, object).ok_or_else(|| {
                    format!(
                        "unknown build ID of {path} (no `# buildid` header; give --sysroot \
                         where the binary is)"
                    )
                })?;
                Ok(StackFrame::Code {
                    build_id,
                    file_offset: if ret {
                        offset.saturating_sub(1)
                    } else {
                        offset
                    },
                    object: path.to_owned(),
                })
            }
            Frame::Address { .. } => Ok(StackFrame::Label("[code outside files]".to_owned())),
            Frame::Python { code, line } => {
                Ok(StackFrame::Label(sites.python_code(code).map_or_else(
                    || "[Python code]".to_owned(),
                    |info| format!("{} (Python, line {line})", info.name),
                )))
            }
            Frame::Label(label) => Ok(StackFrame::Label(label.to_owned())),
        })
        .collect()
}

/// The snapshots of the capture `bytes` (named `name`): one per process, at the peak.
pub fn snapshots(
    bytes: &[u8],
    name: &str,
    sysroot: Option<&Path>,
) -> Result<Vec<SnapshotData>, String> {
    let mut replay = Replay::new(ReplayOptions::default());
    replay
        .capture(bytes)
        .map_err(|e| format!("not a capture: {e}"))?;
    let analysis = replay.finish();
    if analysis.bad_lines > 0 {
        return Err(format!(
            "{} lines do not parse (truncated or not a capture)",
            analysis.bad_lines
        ));
    }
    if analysis.events == 0 {
        return Err("no event (not a capture?)".to_owned());
    }
    let shown = analysis
        .at(&Moment::Peak)
        .map_err(|e| format!("no peak: {e}"))?;
    let start = start_unix_ns(bytes).unwrap_or(0);
    let peak_ns = shown.when.first().map_or(0, |when| when.since_start_ns);
    let command = analysis
        .commands
        .first()
        .and_then(|command| command.split_whitespace().next())
        .map(|program| program.rsplit('/').next().unwrap_or(program).to_owned());
    let mut build_ids = BuildIds {
        sysroot,
        read: HashMap::new(),
    };
    let mut out = Vec::new();
    let page = analysis.page;
    let process_starts = process_starts(bytes);
    for (key, picture) in &shown.holdings.processes {
        let mut class_bytes: BTreeMap<String, u64> = BTreeMap::new();
        for (&(_, class), &pages) in &picture.class_resident {
            let coarse = analysis
                .classes
                .get(class as usize)
                .map_or("unknown", coarse_class);
            *class_bytes.entry(coarse.to_owned()).or_insert(0) += page.of(pages);
        }
        let mut sites: Vec<SiteId> = picture
            .site_resident
            .keys()
            .chain(picture.site_mapped.keys())
            .copied()
            .collect();
        sites.sort_unstable();
        sites.dedup();
        let mut samples = Vec::with_capacity(sites.len());
        for site in sites {
            let resident = page.of(picture.site_resident.get(&site).copied().unwrap_or(0));
            let mapped = picture.site_mapped.get(&site).copied().unwrap_or(0);
            let faults = analysis
                .stats
                .get(site)
                .map_or([0; 5], |stats| stats.faults);
            samples.push(StackSample {
                frames: frames(&analysis.sites, site, &mut build_ids)?,
                resident,
                mapped,
                faults,
                allocated: 0,
            });
        }
        let mut labels = BTreeMap::new();
        if let Some(command) = &command {
            labels.insert("command".to_owned(), command.clone());
        }
        out.push(SnapshotData {
            id: snapshot_id(bytes, key.0, key.1),
            source: format!("{name}#{}", key.1),
            labels,
            time_unix_ns: if start > 0 {
                start.saturating_add(i64::try_from(peak_ns).unwrap_or(0))
            } else {
                0
            },
            anon: page.of(picture.kinds[PageKind::Anon.index()]),
            file: page.of(picture.kinds[PageKind::File.index()]),
            shmem: page.of(picture.kinds[PageKind::Shmem.index()]),
            resident_known: true,
            allocated: None,
            process_start_unix_ns: process_starts.get(&key.1).copied(),
            class_bytes,
            samples,
        });
    }
    if out.is_empty() {
        return Err("no process held memory at the peak".to_owned());
    }
    Ok(out)
}
