//! The walk of docs/unwind.md ("The walk"), in userspace: a reference for the module's,
//! and what the tests unwind real stacks with.
//!
//! At each frame the row for the pc (the instruction pointer in the innermost frame, the
//! return address minus 1 above it) is looked up. Rule 0 or 1: CFA = the stack or the frame
//! pointer plus the row's offset; the return address and the frame pointer are where the
//! row says by the table's architecture ([`Arch::saves`]: x86_64's return address at
//! CFA − 8, RBP at CFA + 8 × slot when saved; arm64's return address at CFA + 8 × slot, or
//! still in X30 in the innermost frame, X29 below it when saved, stripped of its pointer
//! authentication code when signed), and the stack pointer becomes the CFA. Rule 4: the
//! stack is complete. Anything else (no row, rule 2 or
//! 3): the frame-pointer step of the module's walk without tables — the next RBP at [RBP],
//! the return address at [RBP + 8], RSP = RBP + 16 — with its checks: RBP non-zero and
//! 8-aligned, a return address that is non-zero and not in the stack walked (from the
//! first RSP to RBP + 4096), and a next RBP above this one.

use crate::arch::{Arch, Saves};
use crate::protocol::{Row, Rule};

/// The registers a walk starts from (named as x86_64's; arm64's PC, SP, X29).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs {
    /// Instruction pointer.
    pub rip: u64,
    /// Stack pointer.
    pub rsp: u64,
    /// Frame pointer (or whatever RBP holds).
    pub rbp: u64,
}

/// How one frame was stepped over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// By a table row (rule 0 or 1).
    Table,
    /// By the frame pointer (no row, rule 2 or 3).
    FramePointer,
}

/// Why a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// A rule 4 row: the stack is complete.
    Outermost,
    /// `depth` frames were found.
    Depth,
    /// A word the step needed could not be read.
    Unreadable,
    /// A table step whose CFA overflowed or was not above RSP.
    BadCfa,
    /// A return address of 0 (the end of a stack without rule 4).
    ZeroReturn,
    /// A frame-pointer step found no chain: RBP 0 or unaligned, a return address in the
    /// stack, or a next RBP not above this one.
    FramePointerEnd,
}

/// A walked stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    /// The instruction pointer, then the return addresses, innermost first.
    pub frames: Vec<u64>,
    /// How each return address was found: `steps[i]` found `frames[i + 1]`.
    pub steps: Vec<Step>,
    /// Why the walk ended.
    pub end: End,
}

/// Walks the x86_64 stack of `regs`: at most `depth` frames (counting the instruction
/// pointer), with `lookup` giving the row for a run-time pc (`None` where no range covers
/// it) and `read` the 8-byte word at an address (`None` where it cannot be read).
pub fn walk<L, M>(lookup: L, read: M, regs: Regs, depth: usize) -> Walk
where
    L: Fn(u64) -> Option<Row>,
    M: FnMut(u64) -> Option<u64>,
{
    walk_arch(Arch::X86_64, lookup, read, regs, None, depth)
}

/// Walks the stack of `regs` by the rows of a table of `arch`, as [`walk`]; `lr` is the
/// link register (arm64's X30), where the innermost frame's return address is while a row
/// says it is not saved.
pub fn walk_arch<L, M>(
    arch: Arch,
    lookup: L,
    mut read: M,
    regs: Regs,
    lr: Option<u64>,
    depth: usize,
) -> Walk
where
    L: Fn(u64) -> Option<Row>,
    M: FnMut(u64) -> Option<u64>,
{
    let user_limit = arch.user_limit();
    let mut walk = Walk {
        frames: Vec::new(),
        steps: Vec::new(),
        end: End::Depth,
    };
    if depth == 0 {
        return walk;
    }
    walk.frames.push(regs.rip);
    let (mut rsp, mut rbp) = (regs.rsp, regs.rbp);
    let mut pc = regs.rip;
    while walk.frames.len() < depth {
        let row = lookup(pc);
        let (ra, step) = match row {
            // A return address still in the link register is known in the innermost frame
            // only: above it, such a row takes the frame-pointer step.
            Some(row)
                if matches!(row.rule, Rule::Sp | Rule::Fp)
                    && (arch.saves(&row).ra != 0
                        || (arch.saves(&row).fp == 0
                            && lr.is_some()
                            && walk.frames.len() == 1)) =>
            {
                let base = if row.rule == Rule::Sp { rsp } else { rbp };
                let Saves { fp, ra, signed } = arch.saves(&row);
                let slot = |cfa: u64, slot: i8| cfa.checked_add_signed(8 * i64::from(slot));
                let lowest = base.checked_add(u64::from(row.cfa)).and_then(|cfa| {
                    if ra == 0 {
                        Some(cfa)
                    } else {
                        slot(cfa, ra)
                    }
                });
                let cfa = base.wrapping_add(u64::from(row.cfa));
                if lowest.is_none_or(|lowest| lowest < rsp) || cfa < rsp {
                    walk.end = End::BadCfa;
                    return walk;
                }
                let word = if ra == 0 {
                    lr
                } else {
                    slot(cfa, ra).and_then(&mut read)
                };
                let Some(word) = word else {
                    walk.end = End::Unreadable;
                    return walk;
                };
                if fp != 0 {
                    let Some(saved) = slot(cfa, fp).and_then(&mut read) else {
                        walk.end = End::Unreadable;
                        return walk;
                    };
                    rbp = saved;
                }
                rsp = cfa;
                let ra = if signed {
                    word & (user_limit - 1)
                } else {
                    word
                };
                (ra, Step::Table)
            }
            Some(row) if row.rule == Rule::Outermost => {
                walk.end = End::Outermost;
                return walk;
            }
            _ => {
                let frame = rbp;
                if frame == 0 || frame % 8 != 0 || frame >= user_limit - 16 {
                    walk.end = End::FramePointerEnd;
                    return walk;
                }
                let (Some(next), Some(ra)) = (read(frame), read(frame + 8)) else {
                    walk.end = End::Unreadable;
                    return walk;
                };
                let ra = match arch {
                    Arch::Aarch64 => ra & (user_limit - 1),
                    Arch::X86_64 => ra,
                };
                let in_stack = (regs.rsp..=frame.saturating_add(4096)).contains(&ra);
                if ra >= user_limit || in_stack {
                    walk.end = End::FramePointerEnd;
                    return walk;
                }
                if ra != 0 {
                    walk.frames.push(ra);
                    walk.steps.push(Step::FramePointer);
                }
                if ra == 0 || next <= frame {
                    walk.end = if ra == 0 {
                        End::ZeroReturn
                    } else {
                        End::FramePointerEnd
                    };
                    return walk;
                }
                rsp = frame + 16;
                rbp = next;
                pc = ra - 1;
                continue;
            }
        };
        if ra == 0 {
            walk.end = End::ZeroReturn;
            return walk;
        }
        walk.frames.push(ra);
        walk.steps.push(step);
        pc = ra - 1;
    }
    walk.end = End::Depth;
    walk
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn row(pc: u32, rule: Rule, cfa: u16, slot: i8) -> Row {
        Row {
            pc,
            cfa,
            rule,
            flags: 0,
            slot,
        }
    }

    #[test]
    fn mixed_stack() {
        // leaf (frameless, CFA = RSP + 8) -> mid (RBP frame by table) -> fp (no table, frame
        // pointer) -> start (outermost).
        let rows = [
            row(0x1000, Rule::Sp, 8, 0),   // leaf
            row(0x2000, Rule::Fp, 16, -2), // mid
            row(0x3000, Rule::NoInfo, 0, 0),
            row(0x4000, Rule::Outermost, 0, 0),
            row(0x5000, Rule::NoInfo, 0, 0),
        ];
        let lookup = |pc: u64| crate::protocol::lookup_row(&rows, pc);
        let mut stack = HashMap::new();
        // leaf: RSP = 0x7000; return address into mid.
        stack.insert(0x7000u64, 0x2010u64);
        // mid's frame: saved RBP at 0x7010 (= CFA - 16), return address at 0x7018.
        stack.insert(0x7010, 0x7100);
        stack.insert(0x7018, 0x3010);
        // fp's frame at RBP = 0x7100: next RBP, return address into start.
        stack.insert(0x7100, 0x7200);
        stack.insert(0x7108, 0x4010);
        let regs = Regs {
            rip: 0x1004,
            rsp: 0x7000,
            rbp: 0x7010,
        };
        let w = walk(lookup, |a| stack.get(&a).copied(), regs, 16);
        assert_eq!(w.frames, [0x1004, 0x2010, 0x3010, 0x4010]);
        assert_eq!(w.steps, [Step::Table, Step::Table, Step::FramePointer]);
        assert_eq!(w.end, End::Outermost);
        let w = walk(lookup, |a| stack.get(&a).copied(), regs, 2);
        assert_eq!(w.frames, [0x1004, 0x2010]);
        assert_eq!(w.end, End::Depth);
    }
}
