//! arm64 rows, exactly: an AArch64 program assembled here (`aarch64-linux-gnu-gcc`, which
//! make deps installs) whose call frame information is written out by hand, as GCC writes it
//! with `-mbranch-protection=standard`: a function that signs its return address
//! (`paciasp`, `.cfi_negate_ra_state`), saves X29 and X30 as a frame record and sets X29; a
//! function that saves X30 alone; a leaf that saves nothing; `_start`, whose return address
//! is undefined. Its table is then walked from a fault in the leaf (the return address still
//! in X30) through both, down to `_start`, with a signed return address stripped
//! ([`memmon_unwind::walk::walk_arch`], the module's walk in userspace).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use memmon_unwind::arch::aarch64::{FLAG_FP_BELOW_RA, FLAG_RA_SIGNED};
use memmon_unwind::walk::{walk_arch, End, Regs, Step};
use memmon_unwind::{compile, Arch, Rule, Table};
use object::{Object, ObjectSymbol};

const SOURCE: &str = r#"
	.text
	.globl _start
	.type _start, %function
_start:
	.cfi_startproc
	.cfi_undefined x30
	mov x29, #0
	bl framed
	b .
	.cfi_endproc

	.globl framed
	.type framed, %function
framed:
	.cfi_startproc
	paciasp
	.cfi_negate_ra_state
	stp x29, x30, [sp, #-48]!
	.cfi_def_cfa_offset 48
	.cfi_offset 29, -48
	.cfi_offset 30, -40
	mov x29, sp
	.cfi_def_cfa_register 29
	bl lone
	ldp x29, x30, [sp], #48
	.cfi_def_cfa 31, 0
	.cfi_restore 29
	.cfi_restore 30
	autiasp
	.cfi_negate_ra_state
	ret
	.cfi_endproc

	.globl lone
	.type lone, %function
lone:
	.cfi_startproc
	str x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 30, -16
	bl leaf
	ldr x30, [sp], #16
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc

	.globl leaf
	.type leaf, %function
leaf:
	.cfi_startproc
	strb wzr, [x0]
	ret
	.cfi_endproc
"#;

/// Assembles and links the fixture.
fn build() -> Vec<u8> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memmon-unwind-arm64-fixture");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let source = dir.join("fixture.S");
    std::fs::write(&source, SOURCE).expect("write the source");
    let out = dir.join("fixture");
    let status = Command::new("aarch64-linux-gnu-gcc")
        .args(["-nostdlib", "-static", "-Wl,--build-id=none", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .expect("aarch64-linux-gnu-gcc runs (make deps installs gcc-aarch64-linux-gnu)");
    assert!(status.success(), "aarch64-linux-gnu-gcc failed");
    std::fs::read(&out).expect("read")
}

fn symbol(data: &[u8], name: &str) -> u64 {
    let file = object::File::parse(data).expect("ELF");
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("no symbol {name}"))
        .address()
}

/// (rule, cfa, slot, flags) at `address`.
fn at(table: &Table, address: u64) -> (Rule, u16, i8, u8) {
    let row = table.lookup(address).expect("a row");
    (row.rule, row.cfa, row.slot, row.flags)
}

#[test]
fn arm64_rows_and_walk() {
    let data = build();
    let table = compile(&data).expect("compiles");
    assert_eq!(table.arch, Arch::Aarch64);
    assert_eq!(table.stats.eh_frame_fdes, 4);
    let (start, framed, lone, leaf) = (
        symbol(&data, "_start"),
        symbol(&data, "framed"),
        symbol(&data, "lone"),
        symbol(&data, "leaf"),
    );
    let both = FLAG_FP_BELOW_RA | FLAG_RA_SIGNED;
    // _start: the outermost frame.
    assert_eq!(at(&table, start), (Rule::Outermost, 0, 0, 0));
    assert_eq!(at(&table, start + 8), (Rule::Outermost, 0, 0, 0));
    // framed: paciasp; stp x29, x30, [sp, #-48]!; mov x29, sp; bl lone; ldp; autiasp; ret.
    let want = [
        (Rule::Sp, 0, 0, 0),              // paciasp: in X30, not yet signed
        (Rule::Sp, 0, 0, FLAG_RA_SIGNED), // stp: in X30, signed
        (Rule::Sp, 48, -5, both),         // mov x29, sp: saved at CFA - 40, X29 below
        (Rule::Fp, 48, -5, both),         // bl lone
        (Rule::Fp, 48, -5, both),         // ldp
        (Rule::Sp, 0, 0, FLAG_RA_SIGNED), // autiasp: back in X30, signed
        (Rule::Sp, 0, 0, 0),              // ret
    ];
    for (i, want) in want.iter().enumerate() {
        assert_eq!(
            at(&table, framed + 4 * i as u64),
            *want,
            "framed+{:#x}",
            4 * i
        );
    }
    // lone: str x30, [sp, #-16]!; bl leaf; ldr x30, [sp], #16; ret.
    let want = [
        (Rule::Sp, 0, 0, 0),
        (Rule::Sp, 16, -2, 0),
        (Rule::Sp, 16, -2, 0),
        (Rule::Sp, 0, 0, 0),
    ];
    for (i, want) in want.iter().enumerate() {
        assert_eq!(at(&table, lone + 4 * i as u64), *want, "lone+{:#x}", 4 * i);
    }
    // leaf: nothing saved, at both instructions.
    assert_eq!(at(&table, leaf), (Rule::Sp, 0, 0, 0));
    assert_eq!(at(&table, leaf + 4), (Rule::Sp, 0, 0, 0));
    for row in &table.rows {
        row.check(Arch::Aarch64).expect("every row valid for arm64");
    }

    // A fault at leaf's store, called from lone, called from framed (X29 its frame record),
    // called from _start. The return address framed saved is signed (its PAC in bits 48 and
    // up); X30 holds leaf's, into lone.
    let sp = 0x7fff_0000u64;
    let lone_sp = sp; // lone's frame: X30 at [sp]
    let framed_sp = lone_sp + 16; // framed's frame record: X29, X30
    let mut stack = HashMap::new();
    stack.insert(lone_sp, framed + 16); // lone's saved X30: after `bl lone` in framed
    stack.insert(framed_sp, 0); // framed's saved X29 (_start's, 0)
    let signed = (0x2a_u64 << 48) | (start + 8); // after `bl framed` in _start, signed
    stack.insert(framed_sp + 8, signed);
    let regs = Regs {
        rip: leaf,
        rsp: sp,
        rbp: framed_sp,
    };
    let lookup = |pc: u64| table.lookup(pc);
    let walk = walk_arch(
        Arch::Aarch64,
        lookup,
        |a| stack.get(&a).copied(),
        regs,
        Some(lone + 8),
        16,
    );
    assert_eq!(walk.frames, [leaf, lone + 8, framed + 16, start + 8]);
    assert_eq!(walk.steps, [Step::Table; 3]);
    assert_eq!(walk.end, End::Outermost);
    // Without the link register (a walk that has not got it), the leaf's row cannot be
    // followed: the frame-pointer step from X29 (framed's frame record, whose saved X29 is 0)
    // finds framed's caller, lone and framed skipped, as a walk by frame records alone does.
    let walk = walk_arch(
        Arch::Aarch64,
        lookup,
        |a| stack.get(&a).copied(),
        regs,
        None,
        16,
    );
    assert_eq!(walk.frames, [leaf, start + 8]);
    assert_eq!(walk.steps, [Step::FramePointer]);
    assert_eq!(walk.end, End::FramePointerEnd);
}
