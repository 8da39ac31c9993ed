//! Compiles an ELF object's DWARF call frame information (`.eh_frame`, through
//! `.eh_frame_hdr` when present, and `.debug_frame`) into the rows of docs/unwind.md.
//!
//! Each FDE's table, as gimli's [`UnwindTable`] evaluates it, is turned row by row into a
//! [`Row`] by the object's architecture ([`crate::arch`]: x86_64 or arm64):
//! - a signal frame (CIE augmentation `S`) is rule 2 (not followable);
//! - a return address whose rule is `Undefined` (`_start`, a thread's first frame) is
//!   rule 4 (outermost);
//! - CFA = the stack pointer + n is rule 0, CFA = the frame pointer + n rule 1, when n fits
//!   the row; any other CFA (another register, an expression as PLT stubs have) is rule 2;
//! - where the return address and the frame pointer were saved, by the architecture's rules
//!   ([`crate::arch::x86_64`], [`crate::arch::aarch64`]); any other rule is rule 2.
//!
//! `.eh_frame` wins where both sections describe an address, and the first FDE wins where
//! FDEs of one section overlap. Addresses that no FDE covers between two FDEs get a rule 3
//! row, and so does the end of the last FDE, which ends the table. Adjacent equal rows are
//! merged.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use gimli::{
    BaseAddresses, CieOrFde, CommonInformationEntry, DebugFrame, EhFrame, EhFrameHdr,
    FrameDescriptionEntry, LittleEndian, UnwindContext, UnwindSection, UnwindTable,
};
use object::{Architecture, Object, ObjectSection};

use crate::arch::{Arch, Slice};
use crate::protocol::{lookup_row, Row, Rule, ROWS_MAX, ROW_BYTES};

/// Why an object cannot be compiled.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The bytes are no ELF object object can read.
    #[error("not an ELF object: {0}")]
    Object(#[from] object::Error),
    /// The object is neither x86-64 nor arm64.
    #[error("not an x86-64 or arm64 object ({0:?})")]
    Architecture(Architecture),
    /// The object has no call frame information (no `.eh_frame` or `.debug_frame` FDE).
    #[error("no call frame information")]
    NoCallFrameInfo,
    /// An FDE covers addresses that do not fit the format's 32-bit `pc`.
    #[error("address {0:#x} does not fit 32 bits")]
    AddressTooLarge(u64),
    /// More rows than a table may have.
    #[error("{0} rows, more than a table may have ({ROWS_MAX})")]
    TooManyRows(usize),
    /// A section as a whole could not be read (not one FDE: those are skipped).
    #[error("{section}: {error}")]
    Section {
        /// The section's name.
        section: &'static str,
        /// What gimli said.
        error: gimli::Error,
    },
}

/// Counts of what a compilation met.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// FDEs of `.eh_frame` compiled.
    pub eh_frame_fdes: usize,
    /// FDEs of `.debug_frame` compiled.
    pub debug_frame_fdes: usize,
    /// FDEs skipped because gimli could not parse or evaluate them.
    pub fdes_skipped: usize,
    /// Whether the `.eh_frame` FDEs were found through the `.eh_frame_hdr` table.
    pub used_eh_frame_hdr: bool,
}

/// The compiled table of one object: its rows, sorted by `pc`, the last of rule 3.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// The architecture whose registers and rules the rows follow: the object's.
    pub arch: Arch,
    /// The rows.
    pub rows: Vec<Row>,
    /// What the compilation met.
    pub stats: CompileStats,
}

impl Table {
    /// How many rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is no row (never, for a table [`compile`] returns).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Bytes of the rows in the format (8 a row).
    pub fn bytes(&self) -> usize {
        self.rows.len() * ROW_BYTES
    }

    /// Rows of each rule, by rule number.
    pub fn rule_counts(&self) -> [usize; 5] {
        let mut counts = [0usize; 5];
        for row in &self.rows {
            counts[row.rule as usize] += 1;
        }
        counts
    }

    /// The row that applies at object address `address`.
    pub fn lookup(&self, address: u64) -> Option<Row> {
        lookup_row(&self.rows, address)
    }
}

/// What one row of a table says, without its address.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Cell {
    pub(crate) cfa: u16,
    pub(crate) rule: Rule,
    pub(crate) flags: u8,
    pub(crate) slot: i8,
}

impl Cell {
    pub(crate) const NOT_FOLLOWABLE: Cell = Cell::bare(Rule::NotFollowable);
    pub(crate) const OUTERMOST: Cell = Cell::bare(Rule::Outermost);
    const NO_INFO: Cell = Cell::bare(Rule::NoInfo);

    const fn bare(rule: Rule) -> Cell {
        Cell {
            cfa: 0,
            rule,
            flags: 0,
            slot: 0,
        }
    }
}

/// The addresses already described, by an earlier FDE or the section that wins.
#[derive(Default)]
struct Coverage {
    /// Disjoint, non-adjacent intervals: start to end (exclusive).
    intervals: BTreeMap<u64, u64>,
}

impl Coverage {
    /// The parts of `start..end` not yet covered, in order; then covers all of it.
    fn claim(&mut self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut touching: Vec<(u64, u64)> = Vec::new();
        if let Some((&s, &e)) = self.intervals.range(..start).next_back() {
            if e >= start {
                touching.push((s, e));
            }
        }
        touching.extend(self.intervals.range(start..=end).map(|(&s, &e)| (s, e)));
        let mut free = Vec::new();
        let mut at = start;
        let (mut merged_start, mut merged_end) = (start, end);
        for &(s, e) in &touching {
            if s > at {
                free.push((at, s));
            }
            at = at.max(e);
            merged_start = merged_start.min(s);
            merged_end = merged_end.max(e);
            self.intervals.remove(&s);
        }
        if at < end {
            free.push((at, end));
        }
        self.intervals.insert(merged_start, merged_end);
        free
    }
}

/// Rows in the making: pieces of address space, each with its cell.
struct Builder {
    arch: Arch,
    coverage: Coverage,
    pieces: Vec<(u64, u64, Cell)>,
    stats: CompileStats,
    ctx: Box<UnwindContext<usize>>,
}

impl Builder {
    fn new(arch: Arch) -> Builder {
        Builder {
            arch,
            coverage: Coverage::default(),
            pieces: Vec::new(),
            stats: CompileStats::default(),
            ctx: Box::new(UnwindContext::new()),
        }
    }

    /// Evaluates one FDE and keeps its rows where nothing earlier covers them. Returns
    /// false, keeping nothing, if gimli cannot evaluate it.
    fn add_fde<'a, S: UnwindSection<Slice<'a>>>(
        &mut self,
        section: &S,
        bases: &BaseAddresses,
        fde: &FrameDescriptionEntry<Slice<'a>>,
    ) -> Result<bool, CompileError> {
        let (start, end) = (fde.initial_address(), fde.end_address());
        if end <= start {
            return Ok(true);
        }
        let mut cells = Vec::new();
        let arch = self.arch;
        let evaluated = (|| -> gimli::Result<()> {
            let mut table = UnwindTable::new(section, bases, &mut self.ctx, fde)?;
            while let Some(row) = table.next_row()? {
                let (s, e) = (row.start_address().max(start), row.end_address().min(end));
                if s < e {
                    cells.push((s, e, arch.cell(row, fde.cie())));
                }
            }
            Ok(())
        })();
        if evaluated.is_err() {
            return Ok(false);
        }
        if end > u64::from(u32::MAX) {
            return Err(CompileError::AddressTooLarge(end));
        }
        self.claim(start, end, &cells);
        Ok(true)
    }

    /// Covers `start..end` and keeps `cells` (start, end, cell) where nothing earlier
    /// covered them.
    fn claim(&mut self, start: u64, end: u64, cells: &[(u64, u64, Cell)]) {
        for (fs, fe) in self.coverage.claim(start, end) {
            for &(s, e, c) in cells {
                let (s, e) = (s.max(fs), e.min(fe));
                if s < e {
                    self.pieces.push((s, e, c));
                }
            }
        }
    }

    fn finish(mut self) -> Result<Table, CompileError> {
        self.pieces.sort_by_key(|&(s, _, _)| s);
        let mut rows: Vec<Row> = Vec::new();
        let mut last: Option<Cell> = None;
        let mut push = |rows: &mut Vec<Row>, pc: u64, c: Cell| -> Result<(), CompileError> {
            if last == Some(c) {
                return Ok(());
            }
            let pc = u32::try_from(pc).map_err(|_| CompileError::AddressTooLarge(pc))?;
            rows.push(Row {
                pc,
                cfa: c.cfa,
                rule: c.rule,
                flags: c.flags,
                slot: c.slot,
            });
            last = Some(c);
            Ok(())
        };
        let mut end: Option<u64> = None;
        for &(s, e, c) in &self.pieces {
            if let Some(prev) = end.filter(|&prev| prev < s) {
                push(&mut rows, prev, Cell::NO_INFO)?;
            }
            push(&mut rows, s, c)?;
            end = Some(e);
        }
        let Some(end) = end else {
            return Err(CompileError::NoCallFrameInfo);
        };
        push(&mut rows, end, Cell::NO_INFO)?;
        if rows.len() > ROWS_MAX {
            return Err(CompileError::TooManyRows(rows.len()));
        }
        Ok(Table {
            arch: self.arch,
            rows,
            stats: self.stats,
        })
    }
}

/// A CIE parser that parses each CIE once.
struct Cies<'a, S: UnwindSection<Slice<'a>>> {
    cache: HashMap<S::Offset, CommonInformationEntry<Slice<'a>>>,
}

impl<'a, S> Cies<'a, S>
where
    S: UnwindSection<Slice<'a>>,
    S::Offset: std::hash::Hash,
{
    fn new() -> Self {
        Cies {
            cache: HashMap::new(),
        }
    }

    fn fde(
        &mut self,
        partial: gimli::PartialFrameDescriptionEntry<'_, S, Slice<'a>>,
    ) -> gimli::Result<FrameDescriptionEntry<Slice<'a>>> {
        partial.parse(|section, bases, offset| {
            if let Some(cie) = self.cache.get(&offset) {
                return Ok(cie.clone());
            }
            let cie = section.cie_from_offset(bases, offset)?;
            self.cache.insert(offset, cie.clone());
            Ok(cie)
        })
    }
}

/// Compiles the call frame information of the x86-64 or arm64 ELF object in `data`, by its
/// architecture's rules.
pub fn compile(data: &[u8]) -> Result<Table, CompileError> {
    let file = object::File::parse(data)?;
    let arch = Arch::of_object(file.architecture())
        .ok_or(CompileError::Architecture(file.architecture()))?;
    let section = |name: &str| -> Option<(u64, Cow<'_, [u8]>)> {
        let section = file.section_by_name(name)?;
        let bytes = section.uncompressed_data().ok()?;
        Some((section.address(), bytes))
    };
    let mut bases = BaseAddresses::default();
    if let Some(text) = file.section_by_name(".text") {
        bases = bases.set_text(text.address());
    }
    if let Some(got) = file.section_by_name(".got") {
        bases = bases.set_got(got.address());
    }
    let eh_frame = section(".eh_frame");
    let eh_frame_hdr = section(".eh_frame_hdr");
    let debug_frame = section(".debug_frame");

    let mut builder = Builder::new(arch);
    if let Some((address, bytes)) = &eh_frame {
        let mut bases = bases.clone().set_eh_frame(*address);
        if let Some((hdr_address, _)) = &eh_frame_hdr {
            bases = bases.set_eh_frame_hdr(*hdr_address);
        }
        let mut section = EhFrame::new(bytes, LittleEndian);
        section.set_address_size(8);
        section.set_vendor(arch.vendor());
        let through_hdr = match &eh_frame_hdr {
            Some((_, hdr)) => eh_frame_through_hdr(&mut builder, &section, &bases, hdr)?,
            None => false,
        };
        if !through_hdr {
            all_fdes(&mut builder, &section, &bases, ".eh_frame", false)?;
        }
    }
    if let Some((_, bytes)) = &debug_frame {
        let mut section = DebugFrame::new(bytes, LittleEndian);
        section.set_address_size(8);
        section.set_vendor(arch.vendor());
        all_fdes(&mut builder, &section, &bases, ".debug_frame", true)?;
    }
    // `.init` and `.fini` are put together from crti's and crtn's pieces, which carry no
    // call frame information; where no FDE covers them, their fixed shape gives their rows.
    for name in [".init", ".fini"] {
        if builder.pieces.is_empty() {
            break;
        }
        if let Some((address, bytes)) = section(name) {
            if let Some(cells) = arch.init_section_cells(address, &bytes) {
                if let (Some(first), Some(last)) = (cells.first(), cells.last()) {
                    builder.claim(first.0, last.1, &cells);
                }
            }
        }
    }
    builder.finish()
}

/// Adds the FDEs that the `.eh_frame_hdr` search table lists. Returns false (having added
/// nothing) when the header has no table or cannot be read, so that the caller walks the
/// whole section instead.
fn eh_frame_through_hdr<'a>(
    builder: &mut Builder,
    section: &EhFrame<Slice<'a>>,
    bases: &BaseAddresses,
    hdr: &'a [u8],
) -> Result<bool, CompileError> {
    let Ok(parsed) = EhFrameHdr::new(hdr, LittleEndian).parse(bases, 8) else {
        return Ok(false);
    };
    let Some(table) = parsed.table() else {
        return Ok(false);
    };
    let mut offsets = Vec::new();
    let mut iter = table.iter(bases);
    loop {
        match iter.next() {
            Ok(Some((_, pointer))) => match table.pointer_to_offset(pointer) {
                Ok(offset) => offsets.push(offset),
                Err(_) => return Ok(false),
            },
            Ok(None) => break,
            Err(_) => return Ok(false),
        }
    }
    let mut cies = Cies::new();
    for offset in offsets {
        let fde = section
            .partial_fde_from_offset(bases, offset)
            .and_then(|partial| cies.fde(partial));
        match fde {
            Ok(fde) if builder.add_fde(section, bases, &fde)? => builder.stats.eh_frame_fdes += 1,
            _ => builder.stats.fdes_skipped += 1,
        }
    }
    builder.stats.used_eh_frame_hdr = true;
    Ok(true)
}

/// Adds every FDE of a section, in the order they are written.
fn all_fdes<'a, S>(
    builder: &mut Builder,
    section: &S,
    bases: &BaseAddresses,
    name: &'static str,
    debug: bool,
) -> Result<(), CompileError>
where
    S: UnwindSection<Slice<'a>>,
    S::Offset: std::hash::Hash,
{
    let mut cies = Cies::new();
    let mut entries = section.entries(bases);
    loop {
        let entry = match entries.next() {
            Ok(Some(entry)) => entry,
            Ok(None) => break,
            // An entry whose length cannot be read ends the walk: what follows is lost.
            Err(error) if builder.pieces.is_empty() && !debug => {
                return Err(CompileError::Section {
                    section: name,
                    error,
                })
            }
            Err(_) => {
                builder.stats.fdes_skipped += 1;
                break;
            }
        };
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        match cies.fde(partial) {
            Ok(fde) if builder.add_fde(section, bases, &fde)? => {
                if debug {
                    builder.stats.debug_frame_fdes += 1;
                } else {
                    builder.stats.eh_frame_fdes += 1;
                }
            }
            _ => builder.stats.fdes_skipped += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::x86_64::{init_section_cells, ENDBR64};

    #[test]
    fn coverage_claims_free_parts() {
        let mut c = Coverage::default();
        assert_eq!(c.claim(10, 20), vec![(10, 20)]);
        assert_eq!(c.claim(30, 40), vec![(30, 40)]);
        assert_eq!(c.claim(5, 45), vec![(5, 10), (20, 30), (40, 45)]);
        assert_eq!(c.claim(10, 20), vec![]);
        assert_eq!(c.claim(45, 50), vec![(45, 50)]);
        assert_eq!(c.intervals.len(), 1);
        let mut c = Coverage::default();
        assert_eq!(c.claim(10, 20), vec![(10, 20)]);
        assert_eq!(c.claim(15, 25), vec![(20, 25)]);
        assert_eq!(c.claim(0, 12), vec![(0, 10)]);
        assert_eq!(c.claim(100, 110), vec![(100, 110)]);
        assert_eq!(c.claim(50, 100), vec![(50, 100)]);
        assert_eq!(c.claim(0, 200), vec![(25, 50), (110, 200)]);
    }

    #[test]
    fn init_sections_by_their_shape() {
        // glibc's, as in Debian's libsqlite3: sub; mov; test; je; call; add; ret.
        let glibc = [
            0x48, 0x83, 0xec, 0x08, 0x48, 0x8b, 0x05, 0x9d, 0x4e, 0x13, 0x00, 0x48, 0x85, 0xc0,
            0x74, 0x02, 0xff, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0xc3,
        ];
        let cell = |cfa| Cell {
            cfa,
            rule: Rule::Sp,
            flags: 0,
            slot: 0,
        };
        assert_eq!(
            init_section_cells(0x26000, &glibc),
            Some([
                (0x26000, 0x26004, cell(8)),
                (0x26004, 0x26016, cell(16)),
                (0x26016, 0x26017, cell(8)),
            ])
        );
        let mut with_endbr = ENDBR64.to_vec();
        with_endbr.extend_from_slice(&glibc);
        assert_eq!(
            init_section_cells(0x1000, &with_endbr),
            Some([
                (0x1000, 0x1008, cell(8)),
                (0x1008, 0x101a, cell(16)),
                (0x101a, 0x101b, cell(8)),
            ])
        );
        // musl's: push %rax; pop %rax; ret.
        assert_eq!(
            init_section_cells(0x10, &[0x50, 0x58, 0xc3]),
            Some([
                (0x10, 0x11, cell(8)),
                (0x11, 0x12, cell(16)),
                (0x12, 0x13, cell(8))
            ])
        );
        for other in [
            &[0xc3][..],
            &[0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3],
            &[],
            &[0x48, 0x83, 0xec, 0x08],
        ] {
            assert_eq!(init_section_cells(0x10, other), None, "{other:x?}");
        }
    }

    /// Debian's libsqlite3 (the unwinding tests' library): its `.init` gets rows.
    #[test]
    fn a_library_init_is_covered() {
        let data = std::fs::read("/usr/lib/x86_64-linux-gnu/libsqlite3.so.0")
            .expect("libsqlite3 (make deps installs it)");
        let file = object::File::parse(&*data).expect("ELF");
        let init = file.section_by_name(".init").expect(".init").address();
        let table = compile(&data).expect("compiles");
        let row = table.lookup(init).expect("a row at _init");
        assert_eq!((row.rule, row.cfa), (Rule::Sp, 8));
        let row = table.lookup(init + 4).expect("a row after sub $8, %rsp");
        assert_eq!((row.rule, row.cfa), (Rule::Sp, 16));
    }

    #[test]
    fn not_an_object() {
        assert!(matches!(compile(b"nope"), Err(CompileError::Object(_))));
    }
}
