//! An agent snapshot (`memmon agent`'s spool: gzipped profile.proto, see
//! memmon-agent/src/profile.rs) as one snapshot: its labels, time, resident bytes by class
//! (the `class_resident` samples) and its sites' stacks. A location's file offset is its
//! address minus its mapping's start plus the mapping's file offset (pprof's rule).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use flate2::read::MultiGzDecoder;
use prost::Message;

use crate::report::output::profile_proto::Profile;

use super::{snapshot_id, SnapshotData, StackFrame, StackSample};

/// The sample types an agent snapshot has: resident, mapped, the faults (in
/// [`super::FAULT_COLUMNS`] order) and the classes' resident bytes.
pub const SAMPLE_TYPES: [&str; 8] = [
    "resident",
    "mapped",
    "faults_anon",
    "faults_file",
    "faults_swap",
    "faults_wp",
    "faults_other",
    "class_resident",
];

/// The gzipped `bytes` decompressed.
pub fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut raw = Vec::new();
    MultiGzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .map_err(|e| format!("truncated or not gzip: {e}"))?;
    Ok(raw)
}

/// The profile.proto in the decompressed `raw` bytes.
pub fn decode_raw(raw: &[u8]) -> Result<Profile, String> {
    Profile::decode(raw).map_err(|e| format!("not a profile.proto (wrong schema): {e}"))
}

/// The profile in the gzipped `bytes`.
pub fn decode(bytes: &[u8]) -> Result<Profile, String> {
    decode_raw(&gunzip(bytes)?)
}

/// The snapshot in the gzipped profile `bytes` (named `name`).
pub fn snapshot(bytes: &[u8], name: &str) -> Result<SnapshotData, String> {
    snapshot_of(&decode(bytes)?, bytes, name)
}

/// The snapshot of `profile`, decoded from `bytes` (named `name`).
pub fn snapshot_of(profile: &Profile, bytes: &[u8], name: &str) -> Result<SnapshotData, String> {
    let text = |index: i64| -> Result<&str, String> {
        usize::try_from(index)
            .ok()
            .and_then(|i| profile.string_table.get(i))
            .map(String::as_str)
            .ok_or_else(|| format!("string {index} out of the table (corrupt profile)"))
    };
    let mut columns = [usize::MAX; 8];
    for (index, value_type) in profile.sample_type.iter().enumerate() {
        let kind = text(value_type.r#type)?;
        if let Some(slot) = SAMPLE_TYPES.iter().position(|t| *t == kind) {
            columns[slot] = index;
        }
    }
    if let Some(missing) = SAMPLE_TYPES
        .iter()
        .zip(columns)
        .find(|(_, column)| *column == usize::MAX)
    {
        return Err(format!(
            "wrong schema: no sample type {:?} (not a memmon agent snapshot)",
            missing.0
        ));
    }
    let mappings: HashMap<u64, _> = profile.mapping.iter().map(|m| (m.id, m)).collect();
    let functions: HashMap<u64, _> = profile.function.iter().map(|f| (f.id, f)).collect();
    let mut locations: HashMap<u64, StackFrame> = HashMap::new();
    for location in &profile.location {
        let frame = if location.mapping_id != 0 {
            let mapping = mappings
                .get(&location.mapping_id)
                .ok_or_else(|| format!("location {} has no mapping", location.id))?;
            let build_id = text(mapping.build_id)?;
            let object = text(mapping.filename)?;
            if build_id.is_empty() {
                return Err(format!(
                    "unknown build ID of {object} (its mapping has none)"
                ));
            }
            StackFrame::Code {
                build_id: build_id.to_ascii_lowercase(),
                file_offset: location
                    .address
                    .wrapping_sub(mapping.memory_start)
                    .wrapping_add(mapping.file_offset),
                object: object.to_owned(),
            }
        } else {
            let name = match location.line.first() {
                Some(line) => functions
                    .get(&line.function_id)
                    .map(|f| text(f.name))
                    .transpose()?
                    .unwrap_or("?"),
                None => "?",
            };
            StackFrame::Label(name.to_owned())
        };
        locations.insert(location.id, frame);
    }
    let mut labels = BTreeMap::new();
    let mut class_bytes: BTreeMap<String, u64> = BTreeMap::new();
    let mut samples = Vec::new();
    let value = |values: &[i64], slot: usize| -> u64 {
        values
            .get(columns[slot])
            .map_or(0, |&v| u64::try_from(v).unwrap_or(0))
    };
    for sample in &profile.sample {
        let mut class = None;
        for label in &sample.label {
            let key = text(label.key)?;
            if key == "class" {
                class = Some(text(label.str)?);
            } else if !labels.contains_key(key) {
                labels.insert(key.to_owned(), text(label.str)?.to_owned());
            }
        }
        if let Some(class) = class {
            *class_bytes.entry(class.to_owned()).or_insert(0) += value(&sample.value, 7);
            continue;
        }
        let frames = sample
            .location_id
            .iter()
            .map(|id| {
                locations
                    .get(id)
                    .cloned()
                    .ok_or_else(|| format!("sample names location {id}, which is not there"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        samples.push(StackSample {
            frames,
            resident: value(&sample.value, 0),
            mapped: value(&sample.value, 1),
            faults: [2, 3, 4, 5, 6].map(|slot| value(&sample.value, slot)),
            allocated: 0,
        });
    }
    let class = |name: &str| class_bytes.get(name).copied().unwrap_or(0);
    Ok(SnapshotData {
        // An agent snapshot is a cgroup's: of several processes, started at various times.
        process_start_unix_ns: None,
        id: snapshot_id(bytes, 0, 0),
        source: name.to_owned(),
        labels,
        time_unix_ns: profile.time_nanos,
        anon: class("heap") + class("anon_mmap") + class("stack"),
        file: class("file"),
        shmem: class("shmem"),
        resident_known: true,
        allocated: None,
        class_bytes,
        samples,
    })
}
