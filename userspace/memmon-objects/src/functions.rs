//! Where an ELF object's functions start, from its call frame information: each FDE of
//! `.eh_frame` covers one function (or one part of it, for a function the compiler split),
//! and its start is what names a function that no symbol names (`libc.so.6+0x153480`, the
//! same for every instruction of it). Ranges are kept as file offsets, as memmon's frames
//! are.

use std::path::Path;

use gimli::{BaseAddresses, CieOrFde, EhFrame, LittleEndian, UnwindSection};
use object::{Object, ObjectSection, ObjectSegment};

/// The functions of an object, as sorted, disjoint ranges of file offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionRanges {
    /// `(start, end)`, end exclusive, sorted by start; an FDE that overlaps one kept before
    /// it (by start, then by its place in the section) is left out.
    ranges: Vec<(u64, u64)>,
}

impl FunctionRanges {
    /// The ranges of the ELF file at `path`; `None` when it cannot be read or parsed, empty
    /// when it has no `.eh_frame`.
    pub fn read(path: &Path) -> Option<FunctionRanges> {
        let data = std::fs::read(path).ok()?;
        Self::of_data(&data)
    }

    /// The ranges of the ELF object in `data`.
    pub fn of_data(data: &[u8]) -> Option<FunctionRanges> {
        let file = object::File::parse(data).ok()?;
        let Some(section) = file.section_by_name(".eh_frame") else {
            return Some(FunctionRanges::default());
        };
        let bytes = section.data().ok()?;
        let mut bases = BaseAddresses::default().set_eh_frame(section.address());
        if let Some(text) = file.section_by_name(".text") {
            bases = bases.set_text(text.address());
        }
        if let Some(got) = file.section_by_name(".got") {
            bases = bases.set_got(got.address());
        }
        let eh_frame = EhFrame::new(bytes, LittleEndian);
        // (file offset, virtual address, size) of each loaded segment.
        let segments: Vec<(u64, u64, u64)> = file
            .segments()
            .map(|s| (s.file_range().0, s.address(), s.file_range().1))
            .collect();
        let to_offset = |address: u64| {
            segments
                .iter()
                .find(|(_, vaddr, size)| address >= *vaddr && address - vaddr < *size)
                .map(|(offset, vaddr, _)| address - vaddr + offset)
        };
        let mut ranges = Vec::new();
        let mut entries = eh_frame.entries(&bases);
        while let Ok(Some(entry)) = entries.next() {
            let CieOrFde::Fde(partial) = entry else {
                continue;
            };
            let Ok(fde) = partial.parse(EhFrame::cie_from_offset) else {
                continue;
            };
            let (start, len) = (fde.initial_address(), fde.len());
            if len == 0 {
                continue;
            }
            if let Some(offset) = to_offset(start) {
                ranges.push((offset, offset.saturating_add(len)));
            }
        }
        // By start; among FDEs of one start, the first in the section stays first.
        ranges.sort_by_key(|&(start, _)| start);
        let mut kept: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for range in ranges {
            if kept.last().is_none_or(|last| range.0 >= last.1) {
                kept.push(range);
            }
        }
        Some(FunctionRanges { ranges: kept })
    }

    /// The start of the function whose code holds `offset`, if an FDE covers it.
    pub fn start_of(&self, offset: u64) -> Option<u64> {
        let index = self.ranges.partition_point(|(start, _)| *start <= offset);
        let (start, end) = *self.ranges.get(index.checked_sub(1)?)?;
        (offset < end).then_some(start)
    }

    /// How many functions (FDEs) there are.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instruction_of_a_libc_function_has_its_start() {
        let path = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let Some(ranges) = FunctionRanges::read(path) else {
            return;
        };
        assert!(ranges.len() > 1000, "{} FDEs", ranges.len());
        let &(start, end) = &ranges.ranges[ranges.len() / 2];
        assert!(end > start + 1);
        for offset in [start, start + 1, end - 1] {
            assert_eq!(ranges.start_of(offset), Some(start));
        }
        assert_ne!(ranges.start_of(end), Some(start));
        assert_eq!(ranges.start_of(0), None);
    }

    #[test]
    fn no_object_no_ranges() {
        assert_eq!(FunctionRanges::of_data(b"not an ELF file"), None);
    }
}
