//! A C program built here with `cc -O2 -fomit-frame-pointer`: its frameless leaf gets
//! rule 0 with CFA = RSP + 8 at every address, its function with a variable-sized frame
//! (`alloca`) gets CFA = RBP + 16 with RBP saved at CFA − 16 in its body, and `_start`
//! (return address undefined) is the outermost frame. Built again with its CFI in
//! `.debug_frame` only, the leaf gets the same rows from there.

use std::path::{Path, PathBuf};
use std::process::Command;

use memmon_unwind::{compile, Row, Rule, Table};
use object::{Object, ObjectSymbol};

const SOURCE: &str = r#"
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void touch_pages(char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
}

__attribute__((noinline)) int variable_frame(int n)
{
	char *buf = __builtin_alloca(n);
	touch_pages(buf, n);
	return buf[0];
}

int main(int argc, char **argv)
{
	(void)argv;
	size_t n = (size_t)argc << 20;
	char *p = malloc(n);
	touch_pages(p, n);
	return p[0] + variable_frame(argc * 4096);
}
"#;

/// Builds the fixture with `flags`; `None` when there is no C compiler.
fn build(name: &str, flags: &[&str]) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memmon-unwind-c-fixture");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let source = dir.join("fixture.c");
    std::fs::write(&source, SOURCE).expect("write the source");
    let out = dir.join(name);
    let status = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&source)
        .status()
        .ok()?;
    assert!(status.success(), "cc {flags:?} failed");
    Some(out)
}

/// The address and size of symbol `name`.
fn symbol(data: &[u8], name: &str) -> (u64, u64) {
    let file = object::File::parse(data).expect("ELF");
    let symbol = file
        .symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("no symbol {name}"));
    (symbol.address(), symbol.size())
}

fn rows_over(table: &Table, (start, size): (u64, u64)) -> Vec<Row> {
    (start..start + size)
        .map(|a| table.lookup(a).expect("a row"))
        .collect()
}

fn check_leaf(table: &Table, data: &[u8]) {
    let leaf = symbol(data, "touch_pages");
    assert!(leaf.1 > 0);
    for (i, row) in rows_over(table, leaf).iter().enumerate() {
        assert_eq!(
            (row.rule, row.cfa, row.slot),
            (Rule::Sp, 8, 0),
            "touch_pages+{i:#x}"
        );
    }
}

#[test]
fn frameless_leaf_and_alloca() {
    let Some(path) = build("omit-fp", &["-O2", "-fomit-frame-pointer"]) else {
        panic!("no C compiler (cc): make deps installs gcc");
    };
    let data = std::fs::read(&path).expect("read");
    let table = compile(&data).expect("compiles");
    assert!(table.stats.eh_frame_fdes > 0);
    check_leaf(&table, &data);

    let rows = rows_over(&table, symbol(&data, "variable_frame"));
    assert!(
        rows.iter()
            .any(|r| (r.rule, r.cfa, r.slot) == (Rule::Fp, 16, -2)),
        "variable_frame has CFA = RBP + 16, RBP at CFA - 16: {rows:?}"
    );
    assert!(rows.iter().all(|r| matches!(r.rule, Rule::Sp | Rule::Fp)));

    let start = symbol(&data, "_start");
    let rows = rows_over(&table, start);
    assert!(
        rows.iter().any(|r| r.rule == Rule::Outermost),
        "_start is the outermost frame: {rows:?}"
    );
}

#[test]
fn debug_frame_only() {
    let Some(path) = build(
        "debug-frame",
        &[
            "-O2",
            "-fomit-frame-pointer",
            "-g",
            "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables",
        ],
    ) else {
        panic!("no C compiler (cc): make deps installs gcc");
    };
    let data = std::fs::read(&path).expect("read");
    let table = compile(&data).expect("compiles");
    assert!(table.stats.debug_frame_fdes > 0, "{:?}", table.stats);
    check_leaf(&table, &data);
}
