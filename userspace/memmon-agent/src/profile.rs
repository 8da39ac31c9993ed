//! A snapshot of one cgroup's model as a pprof profile (gzipped profile.proto).
//!
//! Sample types: `resident:bytes`, `mapped:bytes` and the faults by type (`faults_anon`,
//! `faults_file`, `faults_swap`, `faults_wp`, `faults_other`: the report's fault classes,
//! counted since the site appeared) per site; `class_resident:bytes` per mapping class, on
//! samples of their own (one location each, a function named `[class] LABEL`), zero in
//! the site samples and the site types zero in them. Default sample type: resident.
//!
//! Locations are build ID + file offset, not addresses: every object is one mapping whose
//! `build_id` and `filename` name it, placed at `(mapping id) << 40` with `file_offset` 0,
//! so that a location's address minus its mapping's start plus its `file_offset` is the
//! file offset (pprof's rule; as `memmon report --format pprof` does). The offset is the
//! instruction's: a return address is moved one byte back, into its call, so that every
//! frame is symbolised at its own line and `memmon export` reads the same (build ID,
//! offset) as from a capture. Profiles of different machines merge by build ID and offset; `go tool
//! pprof` symbolises them from the binaries. Every sample carries the labels `host`,
//! `cgroup`, `unit`, `reason` and the config's; the comments list them and the build IDs.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use memmon::report::model::replay::Replay;
use memmon::report::model::sites::{Frame, ObjectId};
use memmon::report::output::profile_proto::{
    Function, Label, Line, Location, Mapping, Profile, Sample, ValueType,
};
use prost::Message;

/// Each object's addresses live at `id << OBJECT_SHIFT + file offset`.
const OBJECT_SHIFT: u32 = 40;

/// The sample types, in order.
pub const SAMPLE_TYPES: [(&str, &str); 8] = [
    ("resident", "bytes"),
    ("mapped", "bytes"),
    ("faults_anon", "count"),
    ("faults_file", "count"),
    ("faults_swap", "count"),
    ("faults_wp", "count"),
    ("faults_other", "count"),
    ("class_resident", "bytes"),
];

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn get(&mut self, text: &str) -> i64 {
        if let Some(&index) = self.index.get(text) {
            return index;
        }
        let index = self.table.len() as i64;
        self.table.push(text.to_owned());
        self.index.insert(text.to_owned(), index);
        index
    }
}

/// What goes with a snapshot besides the model.
pub struct SnapshotInfo<'a> {
    /// Labels of every sample: host, cgroup, unit, reason, the config's.
    pub labels: &'a BTreeMap<String, String>,
    /// Wall-clock time, nanoseconds since the epoch.
    pub time_nanos: i64,
}

/// The profile of `replay`'s live processes.
pub fn build(replay: &Replay, info: &SnapshotInfo<'_>) -> Profile {
    let mut strings = Strings::default();
    strings.get("");
    let sample_type = SAMPLE_TYPES
        .iter()
        .map(|(kind, unit)| ValueType {
            r#type: strings.get(kind),
            unit: strings.get(unit),
        })
        .collect();
    let labels: Vec<Label> = info
        .labels
        .iter()
        .map(|(key, value)| Label {
            key: strings.get(key),
            str: strings.get(value),
            num: 0,
            num_unit: 0,
        })
        .collect();
    let mut picture = memmon::report::model::picture::Picture::default();
    for (_, process) in replay.live_pictures() {
        picture.merge(process, replay.page_size());
    }
    let table = replay.sites();
    let mut mappings: Vec<Mapping> = Vec::new();
    let mut mapping_ids: HashMap<ObjectId, u64> = HashMap::new();
    let mut functions: Vec<Function> = Vec::new();
    let mut function_ids: HashMap<(String, String), u64> = HashMap::new();
    let mut locations: Vec<Location> = Vec::new();
    let mut location_ids: HashMap<Frame, u64> = HashMap::new();
    let mut samples = Vec::new();
    // A function by name, and for Python code by file and first line too ("" and 0 for
    // the others).
    let mut function = |strings: &mut Strings, name: &str, file: &str, start_line: u32| -> u64 {
        let key = (name.to_owned(), file.to_owned());
        if let Some(&id) = function_ids.get(&key) {
            return id;
        }
        let id = functions.len() as u64 + 1;
        functions.push(Function {
            id,
            name: strings.get(name),
            system_name: strings.get(name),
            filename: if file.is_empty() {
                0
            } else {
                strings.get(file)
            },
            start_line: i64::from(start_line),
        });
        function_ids.insert(key, id);
        id
    };
    let mut sites: Vec<u32> = picture
        .site_resident
        .keys()
        .chain(picture.site_mapped.keys())
        .copied()
        .collect();
    sites.sort_unstable();
    sites.dedup();
    for site in sites {
        let resident =
            replay
                .page_size()
                .of(picture.site_resident.get(&site).copied().unwrap_or(0));
        let mapped = picture.site_mapped.get(&site).copied().unwrap_or(0);
        let faults = replay
            .stats()
            .get(site)
            .map_or([0; 5], |stats| stats.faults);
        let mut ids = Vec::new();
        for frame in table.frames(site) {
            if let Some(&id) = location_ids.get(frame) {
                ids.push(id);
                continue;
            }
            let id = locations.len() as u64 + 1;
            let location = match *frame {
                Frame::Code {
                    object,
                    offset,
                    ret,
                } => {
                    let mapping = *mapping_ids.entry(object).or_insert_with(|| {
                        let id = mappings.len() as u64 + 1;
                        mappings.push(Mapping {
                            id,
                            memory_start: id << OBJECT_SHIFT,
                            memory_limit: (id + 1) << OBJECT_SHIFT,
                            file_offset: 0,
                            filename: strings.get(table.object_path(object)),
                            build_id: strings.get(table.object_build_id(object).unwrap_or("")),
                            has_functions: false,
                            has_filenames: false,
                            has_line_numbers: false,
                            has_inline_frames: false,
                        });
                        id
                    });
                    Location {
                        id,
                        mapping_id: mapping,
                        // A return address at the byte before it, inside its call (what
                        // symbolisers look up, and `memmon export` stores).
                        address: (mapping << OBJECT_SHIFT)
                            .wrapping_add(offset.saturating_sub(u64::from(ret))),
                        line: Vec::new(),
                        is_folded: false,
                    }
                }
                Frame::Address { addr, .. } => Location {
                    id,
                    mapping_id: 0,
                    address: addr,
                    line: Vec::new(),
                    is_folded: false,
                },
                // Named, with its file and first line, where the model knows the code
                // object (the agent reads each from the process: else "[Python code]"),
                // with the frame's line.
                Frame::Python { code, line } => {
                    let (name, file, first) = table
                        .python_code(code)
                        .map_or(("[Python code]", "", 0), |info| {
                            (info.name.as_str(), info.file.as_str(), info.line)
                        });
                    Location {
                        id,
                        mapping_id: 0,
                        address: 0,
                        line: vec![Line {
                            function_id: function(&mut strings, name, file, first),
                            line: i64::from(line),
                            column: 0,
                        }],
                        is_folded: false,
                    }
                }
                Frame::Label(label) => Location {
                    id,
                    mapping_id: 0,
                    address: 0,
                    line: vec![Line {
                        function_id: function(&mut strings, label, "", 0),
                        line: 0,
                        column: 0,
                    }],
                    is_folded: false,
                },
            };
            locations.push(location);
            location_ids.insert(*frame, id);
            ids.push(id);
        }
        let value = [
            resident, mapped, faults[0], faults[1], faults[2], faults[3], faults[4], 0,
        ]
        .map(|v| i64::try_from(v).unwrap_or(i64::MAX));
        if value.iter().all(|&v| v == 0) {
            continue;
        }
        samples.push(Sample {
            location_id: ids,
            value: value.to_vec(),
            label: labels.clone(),
        });
    }
    let classes = replay.classes();
    let mut by_class: BTreeMap<String, (u64, &'static str)> = BTreeMap::new();
    for (&(_, class), &pages) in &picture.class_resident {
        let (label, coarse) = classes.get(class as usize).map_or_else(
            || ("[unknown region]".to_owned(), "unknown"),
            |class| (class.label(), crate::model::class_label(class)),
        );
        by_class.entry(label).or_insert((0, coarse)).0 += replay.page_size().of(pages);
    }
    for (label, (bytes, coarse)) in by_class {
        let id = locations.len() as u64 + 1;
        locations.push(Location {
            id,
            mapping_id: 0,
            address: 0,
            line: vec![Line {
                function_id: function(&mut strings, &format!("[class] {label}"), "", 0),
                line: 0,
                column: 0,
            }],
            is_folded: false,
        });
        let mut value = vec![0; SAMPLE_TYPES.len()];
        value[SAMPLE_TYPES.len() - 1] = i64::try_from(bytes).unwrap_or(i64::MAX);
        let mut sample_labels = labels.clone();
        sample_labels.push(Label {
            key: strings.get("class"),
            str: strings.get(coarse),
            num: 0,
            num_unit: 0,
        });
        samples.push(Sample {
            location_id: vec![id],
            value,
            label: sample_labels,
        });
    }
    let mut comment: Vec<i64> = info
        .labels
        .iter()
        .map(|(key, value)| strings.get(&format!("{key}={value}")))
        .collect();
    for mapping in &mappings {
        let path = strings.table[mapping.filename as usize].clone();
        let build_id = strings.table[mapping.build_id as usize].clone();
        if !build_id.is_empty() {
            comment.push(strings.get(&format!("build_id {build_id} {path}")));
        }
    }
    let default_sample_type = strings.get("resident");
    Profile {
        sample_type,
        sample: samples,
        mapping: mappings,
        location: locations,
        function: functions,
        string_table: strings.table,
        time_nanos: info.time_nanos,
        comment,
        default_sample_type,
        ..Profile::default()
    }
}

/// The profile encoded and gzipped.
pub fn encode(profile: &Profile) -> std::io::Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(&profile.encode_to_vec())?;
    encoder.finish()
}

/// The spool file name of a snapshot: the wall time (sortable), the cgroup, the reason.
pub fn file_name(time: std::time::Duration, cgroup: &str, reason: &str) -> String {
    let cgroup: String = cgroup
        .trim_start_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let cgroup = if cgroup.is_empty() {
        "root".to_owned()
    } else {
        cgroup
    };
    format!(
        "{:012}.{:03}-{cgroup}-{reason}{}",
        time.as_secs(),
        time.subsec_millis(),
        crate::spool::SUFFIX
    )
}
