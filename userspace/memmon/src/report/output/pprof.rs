//! `--format pprof`: a gzipped profile.proto with sample types resident/bytes,
//! faults/count, mapped/bytes and swapin/bytes, one sample per site, mappings with
//! build IDs and file offsets so that `go tool pprof`, Pyroscope and Parca can read and
//! re-symbolise it.

use std::collections::HashMap;
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

use crate::report::model::replay::Analysis;
use crate::report::model::sites::{Frame, SiteId};
use crate::report::output::profile_proto::{
    Function, Line, Location, Mapping, Profile, Sample, ValueType,
};
use crate::report::symbolize::symbols::{FrameInfo, SymbolOptions, Symbols};
use crate::report::view::memory::View;

/// Each object's addresses live at `(id + 1) << OBJECT_SHIFT + file offset`.
const OBJECT_SHIFT: u32 = 40;

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut strings = Strings::default();
        strings.get("");
        strings
    }

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

/// Values of one sample: resident, faults, mapped, swapin.
pub type Values = [i64; 4];

/// Builds one profile from one or more analyses (several for a diff: the base with its
/// values negated, as `go tool pprof -diff_base` does).
pub struct ProfileBuilder {
    strings: Strings,
    sample_type: Vec<ValueType>,
    mappings: Vec<Mapping>,
    mapping_ids: HashMap<String, u64>,
    functions: Vec<Function>,
    function_ids: HashMap<(String, String), u64>,
    locations: Vec<Location>,
    location_ids: HashMap<(usize, Frame), u64>,
    samples: Vec<Sample>,
    analyses: usize,
}

impl Default for ProfileBuilder {
    fn default() -> Self {
        ProfileBuilder::new()
    }
}

impl ProfileBuilder {
    /// An empty profile with the four sample types.
    pub fn new() -> ProfileBuilder {
        let mut strings = Strings::new();
        let sample_type = [
            "resident:bytes",
            "faults:count",
            "mapped:bytes",
            "swapin:bytes",
        ]
        .iter()
        .map(|spec| {
            let (kind, unit) = spec.split_once(':').unwrap_or((spec, ""));
            ValueType {
                r#type: strings.get(kind),
                unit: strings.get(unit),
            }
        })
        .collect();
        ProfileBuilder {
            strings,
            sample_type,
            mappings: Vec::new(),
            mapping_ids: HashMap::new(),
            functions: Vec::new(),
            function_ids: HashMap::new(),
            locations: Vec::new(),
            location_ids: HashMap::new(),
            samples: Vec::new(),
            analyses: 0,
        }
    }

    fn mapping(&mut self, path: &str, known: Option<&str>, options: &SymbolOptions) -> u64 {
        let key = known.map_or_else(|| path.to_owned(), |id| format!("build-id:{id}"));
        if let Some(&id) = self.mapping_ids.get(&key) {
            return id;
        }
        let id = self.mappings.len() as u64 + 1;
        let file = crate::report::symbolize::symbols::resolve(path, known, options);
        let build_id = match known {
            Some(known) => known.to_owned(),
            None if file.is_file() => {
                crate::report::symbolize::debug_file::build_id(&file).unwrap_or_default()
            }
            None => String::new(),
        };
        let mapping = Mapping {
            id,
            memory_start: id << OBJECT_SHIFT,
            memory_limit: (id + 1) << OBJECT_SHIFT,
            file_offset: 0,
            filename: self.strings.get(path),
            build_id: self.strings.get(&build_id),
            has_functions: true,
            has_filenames: true,
            has_line_numbers: true,
            has_inline_frames: true,
        };
        self.mappings.push(mapping);
        self.mapping_ids.insert(key, id);
        id
    }

    fn function(&mut self, info: &FrameInfo) -> u64 {
        let file = info.file.clone().unwrap_or_default();
        let key = (info.function.clone(), file);
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let function = Function {
            id,
            name: self.strings.get(&info.function),
            system_name: self.strings.get(&info.function),
            filename: self.strings.get(&key.1),
            start_line: 0,
        };
        self.functions.push(function);
        self.function_ids.insert(key, id);
        id
    }

    /// Adds one sample per site with non-zero values, multiplied by `sign`.
    pub fn add(
        &mut self,
        analysis: &Analysis,
        symbols: &Symbols,
        options: &SymbolOptions,
        values: &HashMap<SiteId, Values>,
        sign: i64,
    ) {
        let which = self.analyses;
        self.analyses += 1;
        let mut sites: Vec<(&SiteId, &Values)> = values.iter().collect();
        sites.sort();
        for (&site, values) in sites {
            if values.iter().all(|&v| v == 0) {
                continue;
            }
            let mut ids = Vec::new();
            for frame in analysis.sites.frames(site) {
                if let Some(&id) = self.location_ids.get(&(which, *frame)) {
                    ids.push(id);
                    continue;
                }
                let (mapping_id, address) = match *frame {
                    Frame::Code { object, offset, .. } => {
                        let mapping = self.mapping(
                            analysis.sites.object_path(object),
                            analysis.sites.object_build_id(object),
                            options,
                        );
                        (mapping, (mapping << OBJECT_SHIFT).wrapping_add(offset))
                    }
                    Frame::Address { addr, .. } => (0, addr),
                    Frame::Python { code, line } => (0, (u64::from(code) << 32) | u64::from(line)),
                    Frame::Label(_) => (0, 0),
                };
                let infos = symbols.frame_infos(&analysis.sites, frame);
                let line = infos
                    .iter()
                    .map(|info| Line {
                        function_id: self.function(info),
                        line: i64::from(info.line.unwrap_or(0)),
                        column: 0,
                    })
                    .collect();
                let id = self.locations.len() as u64 + 1;
                self.locations.push(Location {
                    id,
                    mapping_id,
                    address,
                    line,
                    is_folded: false,
                });
                self.location_ids.insert((which, *frame), id);
                ids.push(id);
            }
            self.samples.push(Sample {
                location_id: ids,
                value: values.iter().map(|v| v.saturating_mul(sign)).collect(),
                label: Vec::new(),
            });
        }
    }

    /// The finished profile.
    pub fn finish(mut self) -> Profile {
        let default_sample_type = self.strings.get("resident");
        // pprof takes the first mapping for the main binary: the most used one.
        let mut uses: HashMap<u64, usize> = HashMap::new();
        for location in &self.locations {
            *uses.entry(location.mapping_id).or_insert(0) += 1;
        }
        self.mappings.sort_by_key(|m| {
            (
                std::cmp::Reverse(uses.get(&m.id).copied().unwrap_or(0)),
                m.id,
            )
        });
        Profile {
            sample_type: self.sample_type,
            sample: self.samples,
            mapping: self.mappings,
            location: self.locations,
            function: self.functions,
            string_table: self.strings.table,
            default_sample_type,
            ..Profile::default()
        }
    }
}

/// Per-site values of a view's moment, from the analysis.
pub fn site_values(analysis: &Analysis, view: &View) -> HashMap<SiteId, Values> {
    let picture = analysis
        .at(&view.shown.at)
        .map_or(&analysis.end.total, |shown| &shown.holdings.total);
    let mut values = HashMap::new();
    for id in 0..analysis.sites.len() {
        let id = id as SiteId;
        let resident = picture.site_bytes(id, analysis.page);
        let mapped = picture.site_mapped.get(&id).copied().unwrap_or(0);
        let (faults, swapin) = analysis.stats.get(id).map_or((0, 0), |s| {
            (s.total_faults(), analysis.page.of(s.swapped_in))
        });
        values.insert(
            id,
            [resident, faults, mapped, swapin].map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
        );
    }
    values
}

/// The profile encoded and gzipped.
pub fn encode(profile: &Profile) -> std::io::Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(&profile.encode_to_vec())?;
    encoder.finish()
}
