//! x86_64: see [`super`]. CFA = RSP + n is rule 0, CFA = RBP + n rule 1 (8 to 65535 for
//! RSP, 16 to 65535 for RBP); the return address must be saved at CFA − 8 (else rule 2);
//! RBP `Undefined`, `SameValue` or without a rule is "unchanged" (slot 0), saved at CFA + n
//! with n a multiple of 8 from −1024 to −16 is slot n / 8; any other RBP rule is rule 2.

use gimli::{CfaRule, CommonInformationEntry, RegisterRule, UnwindTableRow, X86_64};

use super::Slice;
use crate::compile::Cell;
use crate::protocol::Rule;

/// Where ld.so looks after the run paths, on Debian and most x86-64 systems.
pub(super) const SYSTEM_DIRS: [&str; 6] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// The cell of one gimli row.
pub(super) fn cell(row: &UnwindTableRow<usize>, cie: &CommonInformationEntry<Slice<'_>>) -> Cell {
    match row.register(cie.return_address_register()) {
        Some(RegisterRule::Undefined) => return Cell::OUTERMOST,
        Some(RegisterRule::Offset(-8)) => {}
        _ => return Cell::NOT_FOLLOWABLE,
    }
    let (rule, offset) = match *row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } if register == X86_64::RSP => {
            (Rule::Sp, offset)
        }
        CfaRule::RegisterAndOffset { register, offset } if register == X86_64::RBP => {
            (Rule::Fp, offset)
        }
        _ => return Cell::NOT_FOLLOWABLE,
    };
    let least = if rule == Rule::Sp { 8 } else { 16 };
    let Some(cfa) = u16::try_from(offset).ok().filter(|&cfa| cfa >= least) else {
        return Cell::NOT_FOLLOWABLE;
    };
    let slot = match row.register(X86_64::RBP) {
        None | Some(RegisterRule::Undefined) | Some(RegisterRule::SameValue) => 0,
        Some(RegisterRule::Offset(n)) if n % 8 == 0 && (-1024..=-16).contains(&n) => {
            match i8::try_from(n / 8) {
                Ok(slot) => slot,
                Err(_) => return Cell::NOT_FOLLOWABLE,
            }
        }
        _ => return Cell::NOT_FOLLOWABLE,
    };
    Cell {
        cfa,
        rule,
        flags: 0,
        slot,
    }
}

/// `sub $8, %rsp` and `add $8, %rsp; ret`: glibc's crti and crtn.
const SUB_8_RSP: &[u8] = &[0x48, 0x83, 0xec, 0x08];
const ADD_8_RSP_RET: &[u8] = &[0x48, 0x83, 0xc4, 0x08, 0xc3];
/// `push %rax` and `pop %rax; ret`: musl's.
const PUSH_RAX: &[u8] = &[0x50];
const POP_RAX_RET: &[u8] = &[0x58, 0xc3];
/// `endbr64`, which may come first.
pub(crate) const ENDBR64: &[u8] = &[0xf3, 0x0f, 0x1e, 0xfa];

/// The rows of an `.init` or `.fini` section at `address` whose code is `code`, if it has
/// the shape crti and crtn give it: (`endbr64`,) 8 bytes taken from RSP, calls, the 8 bytes
/// given back and `ret`. CFA = RSP + 8 until the stack is lowered, RSP + 16 until it is
/// raised again, then RSP + 8 for the `ret`. `None` also for a section past the addresses a
/// table can hold.
pub(crate) fn init_section_cells(address: u64, code: &[u8]) -> Option<[(u64, u64, Cell); 3]> {
    let body = code.strip_prefix(ENDBR64).unwrap_or(code);
    let (lower, raise) = [(SUB_8_RSP, ADD_8_RSP_RET), (PUSH_RAX, POP_RAX_RET)]
        .into_iter()
        .find(|(lower, raise)| body.starts_with(lower) && body.ends_with(raise))?;
    let end = address
        .checked_add(u64::try_from(code.len()).ok()?)
        .filter(|&end| end <= u64::from(u32::MAX))?;
    let lowered = end - u64::try_from(body.len() - lower.len()).ok()?;
    let raised = end - 1;
    let inner = end - u64::try_from(raise.len()).ok()?;
    if lowered > inner {
        return None;
    }
    let at = |cfa| Cell {
        cfa,
        rule: Rule::Sp,
        flags: 0,
        slot: 0,
    };
    Some([
        (address, lowered, at(8)),
        (lowered, raised, at(16)),
        (raised, end, at(8)),
    ])
}
