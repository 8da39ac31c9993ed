//! arm64 (AArch64): see [`super`].
//!
//! - CFA = SP + n (0 to 65535) is rule 0, CFA = X29 + n (16 to 65535) rule 1; any other CFA
//!   (another register, an expression) is rule 2.
//! - The return address (X30, the CIE's return address register) `Undefined` is rule 4
//!   (outermost); without a rule or `SameValue` it is still in X30 (slot 0: a leaf, a
//!   prologue before it is saved, an epilogue after it is restored); saved at CFA + n with n
//!   a multiple of 8 from −1016 to −8, slot n / 8; anything else is rule 2.
//! - X29 without a rule, `SameValue` or `Undefined` is unchanged; saved just below the
//!   return address (`stp x29, x30`, every frame record) is the flag [`FLAG_FP_BELOW_RA`];
//!   saved elsewhere, or while the return address is in X30, rule 2.
//! - `RA_SIGN_STATE` 1 (`DW_CFA_AARCH64_negate_ra_state` after `paciasp`, gimli's
//!   [`AArch64::RA_SIGN_STATE`]) is [`FLAG_RA_SIGNED`]: the walker strips the return
//!   address's authentication code.

use gimli::{AArch64, CfaRule, CommonInformationEntry, RegisterRule, UnwindTableRow};

use super::Slice;
use crate::compile::Cell;
use crate::protocol::Rule;

/// A row's flag: X29 was saved at CFA + 8 × (slot − 1), just below the return address.
pub const FLAG_FP_BELOW_RA: u8 = 0x08;
/// A row's flag: the return address is signed by pointer authentication.
pub const FLAG_RA_SIGNED: u8 = 0x10;

/// Where ld.so looks after the run paths, on Debian arm64.
pub(super) const SYSTEM_DIRS: [&str; 4] = [
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib",
    "/usr/lib",
];

/// The cell of one gimli row.
pub(super) fn cell(row: &UnwindTableRow<usize>, cie: &CommonInformationEntry<Slice<'_>>) -> Cell {
    let slot = match row.register(cie.return_address_register()) {
        Some(RegisterRule::Undefined) => return Cell::OUTERMOST,
        None | Some(RegisterRule::SameValue) => 0,
        Some(RegisterRule::Offset(n)) if n % 8 == 0 && (-1016..=-8).contains(&n) => {
            match i8::try_from(n / 8) {
                Ok(slot) => slot,
                Err(_) => return Cell::NOT_FOLLOWABLE,
            }
        }
        _ => return Cell::NOT_FOLLOWABLE,
    };
    let (rule, offset) = match *row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } if register == AArch64::SP => {
            (Rule::Sp, offset)
        }
        CfaRule::RegisterAndOffset { register, offset } if register == AArch64::X29 => {
            (Rule::Fp, offset)
        }
        _ => return Cell::NOT_FOLLOWABLE,
    };
    let least = if rule == Rule::Sp { 0 } else { 16 };
    let Some(cfa) = u16::try_from(offset).ok().filter(|&cfa| cfa >= least) else {
        return Cell::NOT_FOLLOWABLE;
    };
    let mut flags = match row.register(AArch64::X29) {
        None | Some(RegisterRule::Undefined) | Some(RegisterRule::SameValue) => 0,
        Some(RegisterRule::Offset(n)) if slot != 0 && n == 8 * (i64::from(slot) - 1) => {
            FLAG_FP_BELOW_RA
        }
        _ => return Cell::NOT_FOLLOWABLE,
    };
    match row.register(AArch64::RA_SIGN_STATE) {
        None | Some(RegisterRule::Constant(0)) => {}
        Some(RegisterRule::Constant(1)) => flags |= FLAG_RA_SIGNED,
        _ => return Cell::NOT_FOLLOWABLE,
    }
    Cell {
        cfa,
        rule,
        flags,
        slot,
    }
}
