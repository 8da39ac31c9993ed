//! What differs between the architectures whose unwind tables this crate compiles, one file
//! per architecture: [`x86_64`] and [`aarch64`] (arm64). Each says
//! - how one row of DWARF call frame information becomes a row of the format (its registers:
//!   the stack pointer, the frame pointer, where the return address is);
//! - what its rows may say (the module's checks, [`Arch::check_row`]) and where they say the
//!   caller's registers are ([`Arch::saves`], what the walk follows);
//! - its ELF machine, its system library directories, the gimli vendor of its CFI;
//! - the rows of code its compilers give no CFI (x86_64's `.init` and `.fini`).
//!
//! The architecture is written in each `ADD_TABLE` (docs/unwind.md); the module refuses a
//! table of another architecture than its own.

pub mod aarch64;
pub mod x86_64;

use gimli::{CommonInformationEntry, EndianSlice, LittleEndian, UnwindTableRow, Vendor};
use object::Architecture;

use crate::compile::Cell;
use crate::protocol::{Invalid, Row, Rule};

/// An architecture's tables: the number written in `ADD_TABLE`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u32)]
pub enum Arch {
    /// x86_64: CFA from RSP or RBP, the return address at CFA − 8, a row's slot where RBP
    /// was saved.
    X86_64 = 0,
    /// arm64 (AArch64): CFA from SP or X29, a row's slot where the return address (X30) was
    /// saved (0: still in X30), X29 saved below it or not, the return address signed by
    /// pointer authentication or not.
    Aarch64 = 1,
}

/// Where a row says the caller's frame pointer and return address are (the module's
/// `format::Saves`): `fp` 0 when the frame pointer is unchanged, else saved at CFA + 8 ×
/// `fp`; `ra` 0 when the return address is still in the link register (arm64's X30), else
/// saved at CFA + 8 × `ra`; `signed` when it carries a pointer authentication code.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Saves {
    /// The frame pointer's slot (0: unchanged).
    pub fp: i8,
    /// The return address's slot (0: in the link register).
    pub ra: i8,
    /// Whether the return address is signed.
    pub signed: bool,
}

pub(crate) type Slice<'a> = EndianSlice<'a, LittleEndian>;

impl Arch {
    /// The architecture this program runs on, whose module it loads tables into.
    pub const fn native() -> Arch {
        if cfg!(target_arch = "aarch64") {
            Arch::Aarch64
        } else {
            Arch::X86_64
        }
    }

    /// The architecture numbered `value` in an `ADD_TABLE`.
    pub fn from_u32(value: u32) -> Option<Arch> {
        match value {
            0 => Some(Arch::X86_64),
            1 => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// The architecture of an object, if it is one of these.
    pub fn of_object(architecture: Architecture) -> Option<Arch> {
        match architecture {
            Architecture::X86_64 => Some(Arch::X86_64),
            Architecture::Aarch64 => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// Its name, as the module's refusals say it.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "arm64",
        }
    }

    /// Its ELF machine (`e_machine`).
    pub fn elf_machine(self) -> object::elf::Machine {
        match self {
            Arch::X86_64 => object::elf::EM_X86_64,
            Arch::Aarch64 => object::elf::EM_AARCH64,
        }
    }

    /// Where ld.so looks after the run paths, on Debian.
    pub fn system_library_dirs(self) -> &'static [&'static str] {
        match self {
            Arch::X86_64 => &x86_64::SYSTEM_DIRS,
            Arch::Aarch64 => &aarch64::SYSTEM_DIRS,
        }
    }

    /// The gimli vendor its call frame instructions are read with (arm64's
    /// `DW_CFA_AARCH64_negate_ra_state` is vendor-specific).
    pub(crate) fn vendor(self) -> Vendor {
        match self {
            Arch::X86_64 => Vendor::Default,
            Arch::Aarch64 => Vendor::AArch64,
        }
    }

    /// The cell of one row of gimli's evaluation of an FDE.
    pub(crate) fn cell(
        self,
        row: &UnwindTableRow<usize>,
        cie: &CommonInformationEntry<Slice<'_>>,
    ) -> Cell {
        if cie.is_signal_trampoline() {
            return Cell::NOT_FOLLOWABLE;
        }
        match self {
            Arch::X86_64 => x86_64::cell(row, cie),
            Arch::Aarch64 => aarch64::cell(row, cie),
        }
    }

    /// The rows of an `.init` or `.fini` section at `address` whose code is `code`, where
    /// no FDE covers it, from the shape its compiler gives it.
    pub(crate) fn init_section_cells(
        self,
        address: u64,
        code: &[u8],
    ) -> Option<Vec<(u64, u64, Cell)>> {
        match self {
            Arch::X86_64 => x86_64::init_section_cells(address, code).map(Vec::from),
            // arm64's crti builds a frame record first (`stp x29, x30, [sp, #-16]!; mov
            // x29, sp`): the frame-pointer step finds `_init`'s caller.
            Arch::Aarch64 => None,
        }
    }

    /// Where `row` (of this architecture's table) says the caller's registers are.
    pub fn saves(self, row: &Row) -> Saves {
        match self {
            Arch::X86_64 => Saves {
                fp: row.slot,
                ra: -1,
                signed: false,
            },
            Arch::Aarch64 => Saves {
                fp: if row.flags & aarch64::FLAG_FP_BELOW_RA != 0 {
                    row.slot.saturating_sub(1)
                } else {
                    0
                },
                ra: row.slot,
                signed: row.flags & aarch64::FLAG_RA_SIGNED != 0,
            },
        }
    }

    /// The flags its rows may have.
    fn flags(self) -> u8 {
        match self {
            Arch::X86_64 => 0,
            Arch::Aarch64 => aarch64::FLAG_FP_BELOW_RA | aarch64::FLAG_RA_SIGNED,
        }
    }

    /// Checks one row on its own, as the module does (`TableArch::check_row`).
    pub fn check_row(self, row: &Row) -> Result<(), Invalid> {
        if row.flags & !self.flags() != 0 {
            return Err(Invalid::RowFlags);
        }
        let least_sp = match self {
            Arch::X86_64 => 8,
            Arch::Aarch64 => 0,
        };
        let followable = matches!(row.rule, Rule::Sp | Rule::Fp);
        match row.rule {
            Rule::Sp if row.cfa < least_sp => return Err(Invalid::RspCfa),
            Rule::Fp if row.cfa < 16 => return Err(Invalid::RbpCfa),
            _ if !followable && (row.cfa != 0 || row.slot != 0 || row.flags != 0) => {
                return Err(Invalid::BareRow)
            }
            _ => {}
        }
        match self {
            Arch::X86_64 if row.slot > -2 && row.slot != 0 => Err(Invalid::RbpSlot),
            Arch::Aarch64 if row.slot > 0 => Err(Invalid::RaSlot),
            Arch::Aarch64
                if row.flags & aarch64::FLAG_FP_BELOW_RA != 0
                    && !(-127..=-1).contains(&row.slot) =>
            {
                Err(Invalid::FpBelowRa)
            }
            _ => Ok(()),
        }
    }

    /// The highest user address plus one that the reference walk ([`crate::walk`]) takes a
    /// return address or frame pointer below, and the mask that strips a signed return
    /// address (arm64: the bits above the task's 48-bit address space).
    pub fn user_limit(self) -> u64 {
        match self {
            Arch::X86_64 => 0x0000_7fff_ffff_f000,
            Arch::Aarch64 => 1 << 48,
        }
    }
}
