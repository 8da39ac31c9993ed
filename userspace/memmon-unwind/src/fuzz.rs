//! Invalid writes to `/proc/memmon/unwind`, made deterministically from a seed, each with
//! the refusal (and so the errno) the module must answer it with.
//!
//! A test of the module loads [`FuzzContext::setup_writes`] (one table, key
//! [`FuzzContext::loaded_key`]), watches [`FuzzContext::watched_pid`], makes sure
//! [`FuzzContext::unwatched_pid`] is not watched, then writes every case of [`generate`] and
//! expects each to fail with [`FuzzCase::errno`] and to change nothing. The cases are
//! mutations of valid writes — truncated, extended, a wrong magic, version, command or
//! length, reserved fields set, counts of 0, past the limits or wrapping 32-bit arithmetic,
//! unsorted rows, rows of a bad rule, CFA or RBP, empty, unsorted or overlapping ranges, a
//! pid out of range or not watched, an unknown key — and each is checked against
//! [`KernelModel`]: a mutation the model takes is discarded, so every case is refused.

use crate::arch::Arch;
use crate::key::Key;
use crate::protocol::{
    encode_add_table, encode_drop_table, encode_set_maps, encode_set_python, KernelModel, Range,
    Reject, Row, Rule, HEADER_BYTES, RANGES_MAX, RANGE_BYTES, ROWS_MAX, ROW_BYTES,
};

/// The module state the cases are made for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzContext {
    /// The key of the one table loaded (by [`FuzzContext::setup_writes`]).
    pub loaded_key: Key,
    /// A key no table has.
    pub unknown_key: Key,
    /// A process that is watched.
    pub watched_pid: u32,
    /// A process (that exists, or not) that is not watched.
    pub unwatched_pid: u32,
}

impl FuzzContext {
    /// A context with fixed keys, for processes `watched_pid` and `unwatched_pid`.
    pub fn new(watched_pid: u32, unwatched_pid: u32) -> FuzzContext {
        FuzzContext {
            loaded_key: Key(*b"memmon-fuzz-tabl"),
            unknown_key: Key(*b"memmon-fuzz-none"),
            watched_pid,
            unwatched_pid,
        }
    }

    /// The writes that put the module in the state the cases are made for (the pids
    /// aside): the `ADD_TABLE` of [`FuzzContext::loaded_key`].
    pub fn setup_writes(&self) -> Vec<Vec<u8>> {
        vec![encode_add_table(
            &self.loaded_key,
            Arch::X86_64,
            &base_rows(&mut Rng(1), 16),
        )]
    }

    /// The model of that state.
    pub fn model(&self) -> KernelModel {
        let mut model = KernelModel::new();
        model.arch = Arch::X86_64;
        model.watched.insert(self.watched_pid);
        for write in self.setup_writes() {
            // The setup writes are valid by construction (see the tests).
            let _ = model.apply(&write);
        }
        model
    }
}

/// One invalid write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzCase {
    /// The bytes, to be written in one `write()`.
    pub bytes: Vec<u8>,
    /// Why the module refuses them.
    pub reject: Reject,
    /// What was done to a valid write to make them.
    pub mutation: String,
}

impl FuzzCase {
    /// The errno the write must get (`EINVAL`, `ENOENT` or `ESRCH`).
    pub fn errno(&self) -> i32 {
        self.reject.errno()
    }
}

/// splitmix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        // CAST: the remainder is below `n`, a usize.
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A valid table of `count` rows or so: rows of every rule, the last of rule 3.
fn base_rows(rng: &mut Rng, count: usize) -> Vec<Row> {
    let mut rows = Vec::with_capacity(count + 1);
    let mut pc: u32 = 0x1000 + (rng.below(256) as u32) * 16;
    for _ in 0..count.max(1) {
        let row = match rng.below(6) {
            0 => Row {
                pc,
                cfa: 8,
                rule: Rule::Sp,
                flags: 0,
                slot: 0,
            },
            1 => Row {
                pc,
                cfa: 16 + 8 * rng.below(40) as u16,
                rule: Rule::Sp,
                flags: 0,
                slot: rng.pick(&[0, -2, -3, -7]),
            },
            2 => Row {
                pc,
                cfa: 16,
                rule: Rule::Fp,
                flags: 0,
                slot: -2,
            },
            3 => Row::bare(pc, Rule::NotFollowable),
            4 => Row::bare(pc, Rule::Outermost),
            _ => Row::bare(pc, Rule::NoInfo),
        };
        rows.push(row);
        pc += 1 + rng.below(64) as u32;
    }
    rows.push(Row::bare(pc, Rule::NoInfo));
    rows
}

/// Valid, sorted ranges, all of `key`.
fn base_ranges(rng: &mut Rng, count: usize, key: Key) -> Vec<Range> {
    let mut start = 0x5555_0000_0000u64 + (rng.below(1 << 16) as u64) * 4096;
    (0..count.max(1))
        .map(|_| {
            let end = start + 4096 * (1 + rng.below(64) as u64);
            let range = Range {
                start,
                end,
                bias: start.wrapping_sub(0x1000 * rng.below(4) as u64),
                key,
            };
            start = end + 4096 * rng.below(4) as u64;
            range
        })
        .collect()
}

fn put_u16(bytes: &mut [u8], at: usize, value: u16) {
    if let Some(dst) = bytes.get_mut(at..at + 2) {
        dst.copy_from_slice(&value.to_le_bytes());
    }
}

fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    if let Some(dst) = bytes.get_mut(at..at + 4) {
        dst.copy_from_slice(&value.to_le_bytes());
    }
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    if let Some(dst) = bytes.get_mut(at..at + 8) {
        dst.copy_from_slice(&value.to_le_bytes());
    }
}

/// Sets the header's length field to the write's size.
fn fix_length(bytes: &mut [u8]) {
    // CAST: the cases are far below 4 GiB.
    let len = bytes.len() as u32;
    put_u32(bytes, 8, len);
}

/// Offsets in an `ADD_TABLE`: of the row count, the architecture, and row `i`.
const ADD_COUNT: usize = HEADER_BYTES + 16;
const ADD_ARCH: usize = ADD_COUNT + 4;
const fn add_row(i: usize) -> usize {
    ADD_ARCH + 4 + i * ROW_BYTES
}
/// Offsets in a `SET_MAPS`: of the pid, the range count, and range `i`.
const SET_PID: usize = HEADER_BYTES;
const SET_COUNT: usize = SET_PID + 4;
const fn set_range(i: usize) -> usize {
    SET_COUNT + 4 + i * RANGE_BYTES
}

/// A mutation of a valid write that makes it, most of the time, one the module refuses.
fn mutate(rng: &mut Rng, ctx: &FuzzContext) -> (Vec<u8>, String) {
    let new_key = Key(*b"memmon-fuzz-new!");
    if rng.below(5) == 0 {
        return python_case(rng, ctx);
    }
    match rng.below(4) {
        // A table: of the key loaded (valid: succeeds, changes nothing) or a new one.
        0 | 1 => {
            let key = if rng.below(2) == 0 {
                ctx.loaded_key
            } else {
                new_key
            };
            let count = 1 + rng.below(24);
            let rows = base_rows(rng, count);
            let mut b = encode_add_table(&key, Arch::X86_64, &rows);
            let n = rows.len();
            let i = rng.below(n);
            let what = match rng.below(20) {
                0 => generic(rng, &mut b),
                1 => {
                    put_u32(&mut b, ADD_COUNT, 0);
                    b.truncate(add_row(0));
                    fix_length(&mut b);
                    "ADD_TABLE of 0 rows".into()
                }
                2 => {
                    let count = rng.pick(&[ROWS_MAX as u32 + 1, u32::MAX, 0x8000_0000]);
                    put_u32(&mut b, ADD_COUNT, count);
                    format!("ADD_TABLE row count {count:#x}")
                }
                3 => {
                    // 16 + 24 + 8 × count wraps to the size of one row in 32 bits.
                    put_u32(&mut b, ADD_COUNT, 0x2000_0001);
                    b.truncate(add_row(1));
                    put_u32(&mut b, add_row(0), 0x1000);
                    put_u64(
                        &mut b,
                        add_row(0),
                        u64::from_le_bytes([0, 0x10, 0, 0, 0, 0, 3, 0]),
                    );
                    fix_length(&mut b);
                    "ADD_TABLE row count 0x20000001 (8 × count wraps 32 bits)".into()
                }
                4 => {
                    let count = if rng.below(2) == 0 { n + 1 } else { n - 1 };
                    // CAST: small.
                    put_u32(&mut b, ADD_COUNT, count as u32);
                    format!("ADD_TABLE row count {count} for {n} rows")
                }
                5 => {
                    // Tables of x86_64 (0), for a module of x86_64: another architecture
                    // (1, arm64) or an unknown one.
                    put_u32(&mut b, ADD_ARCH, 1 + rng.below(1000) as u32);
                    "ADD_TABLE of another architecture".into()
                }
                6 if n >= 2 => {
                    let j = rng.below(n - 1);
                    let pc = u32::from_le_bytes(
                        b[add_row(j)..add_row(j) + 4].try_into().unwrap_or_default(),
                    );
                    put_u32(&mut b, add_row(j + 1), pc.wrapping_sub(rng.below(2) as u32));
                    format!("ADD_TABLE row {} not after row {j}", j + 1)
                }
                7 => {
                    let rule = rng.pick(&[0u8, 1, 2, 4]);
                    b[add_row(n - 1) + 6] = rule;
                    if rule <= 1 {
                        put_u16(&mut b, add_row(n - 1) + 4, 16);
                    }
                    format!("ADD_TABLE last row of rule {rule}")
                }
                8 | 9 => {
                    let rule = 5 + rng.below(251) as u8;
                    b[add_row(i) + 6] = rule;
                    format!("ADD_TABLE row {i} of rule {rule}")
                }
                10 => {
                    b[add_row(i) + 6] = 0;
                    put_u16(&mut b, add_row(i) + 4, rng.below(8) as u16);
                    format!("ADD_TABLE row {i}: rule 0 with CFA below 8")
                }
                11 => {
                    b[add_row(i) + 6] = 1;
                    put_u16(&mut b, add_row(i) + 4, rng.below(16) as u16);
                    format!("ADD_TABLE row {i}: rule 1 with CFA below 16")
                }
                12 => {
                    let rule = rng.pick(&[2u8, 3, 4]);
                    b[add_row(i) + 6] = rule;
                    put_u16(&mut b, add_row(i) + 4, 1 + rng.below(4096) as u16);
                    format!("ADD_TABLE row {i}: rule {rule} with a CFA offset")
                }
                13 => {
                    let rule = rng.pick(&[2u8, 3, 4]);
                    b[add_row(i) + 6] = rule;
                    put_u16(&mut b, add_row(i) + 4, 0);
                    b[add_row(i) + 7] = rng.pick(&[0xfeu8, 0xf0, 0x80]);
                    format!("ADD_TABLE row {i}: rule {rule} with a saved RBP")
                }
                14 => {
                    b[add_row(i) + 6] = 0;
                    put_u16(&mut b, add_row(i) + 4, 16);
                    let rbp = rng.pick(&[-1i8, 1, 2, 127]);
                    b[add_row(i) + 7] = rbp.to_le_bytes()[0];
                    format!("ADD_TABLE row {i}: RBP slot {rbp}")
                }
                15 => {
                    let cut = rng.below(b.len());
                    b.truncate(cut);
                    if cut >= HEADER_BYTES && rng.below(2) == 0 {
                        fix_length(&mut b);
                    }
                    format!("ADD_TABLE truncated to {cut} bytes")
                }
                16 => {
                    let extra = 1 + rng.below(16);
                    b.extend((0..extra).map(|_| rng.next() as u8));
                    fix_length(&mut b);
                    format!("ADD_TABLE with {extra} bytes more")
                }
                _ => generic(rng, &mut b),
            };
            (b, what)
        }
        // Ranges of a process.
        2 => {
            let count = 1 + rng.below(8);
            let mut ranges = base_ranges(rng, count, ctx.loaded_key);
            let n = ranges.len();
            let i = rng.below(n);
            let mut pid = ctx.watched_pid;
            let what = match rng.below(11) {
                0 => {
                    pid = ctx.unwatched_pid;
                    "SET_MAPS of a process not watched".into()
                }
                1 => {
                    ranges[i].key = ctx.unknown_key;
                    format!("SET_MAPS range {i} of a table not loaded")
                }
                2 => {
                    ranges[i].end = ranges[i].start - 4096 * rng.below(2) as u64;
                    format!("SET_MAPS range {i} empty or reversed")
                }
                3 if n >= 2 => {
                    ranges.swap(i, (i + 1) % n);
                    "SET_MAPS ranges not sorted".into()
                }
                4 if n >= 2 => {
                    let j = 1 + rng.below(n - 1);
                    ranges[j].start = ranges[j - 1].end - 4096;
                    format!("SET_MAPS range {j} overlaps range {}", j - 1)
                }
                5 => {
                    pid = rng.pick(&[0, 0x8000_0000, u32::MAX]);
                    format!("SET_MAPS of pid {pid:#x}")
                }
                _ => String::new(),
            };
            let mut b = encode_set_maps(pid, &ranges);
            let what = if what.is_empty() {
                match rng.below(6) {
                    0 => {
                        let count = rng.pick(&[RANGES_MAX as u32 + 1, 0x2000_0001, u32::MAX]);
                        put_u32(&mut b, SET_COUNT, count);
                        format!("SET_MAPS range count {count:#x}")
                    }
                    1 => {
                        // CAST: small.
                        put_u32(&mut b, SET_COUNT, (n + 1) as u32);
                        format!("SET_MAPS range count {} for {n} ranges", n + 1)
                    }
                    2 => {
                        let cut = HEADER_BYTES + rng.below(b.len() - HEADER_BYTES);
                        b.truncate(cut);
                        fix_length(&mut b);
                        format!("SET_MAPS truncated to {cut} bytes, length fixed")
                    }
                    3 => {
                        put_u64(&mut b, set_range(i) + 8, 0);
                        format!("SET_MAPS range {i} ends at 0")
                    }
                    _ => generic(rng, &mut b),
                }
            } else {
                what
            };
            (b, what)
        }
        // Drops.
        _ => {
            let mut b = encode_drop_table(&ctx.unknown_key);
            let what = match rng.below(4) {
                0 => "DROP_TABLE of a table not loaded".into(),
                1 => {
                    let mut b2 = encode_drop_table(&ctx.loaded_key);
                    let extra = 1 + rng.below(8);
                    b2.extend((0..extra).map(|_| 0u8));
                    fix_length(&mut b2);
                    b = b2;
                    format!("DROP_TABLE with {extra} bytes more")
                }
                2 => {
                    b = encode_drop_table(&ctx.loaded_key);
                    let cut = HEADER_BYTES + rng.below(16);
                    b.truncate(cut);
                    fix_length(&mut b);
                    format!("DROP_TABLE of a key cut to {} bytes", cut - HEADER_BYTES)
                }
                _ => {
                    b = encode_drop_table(&ctx.loaded_key);
                    generic(rng, &mut b)
                }
            };
            (b, what)
        }
    }
}

/// A `SET_PYTHON` of a valid 3.11 or 3.13 description (thread states in the thread lists)
/// with one field made wrong (an offset, the version, the thread state or its list, the
/// code type, the frame size, the size for its kind, reserved bytes), for a pid out of range
/// or not watched, or mutated as any write.
fn python_case(rng: &mut Rng, ctx: &FuzzContext) -> (Vec<u8>, String) {
    let layout = rng.pick(&[crate::python::LAYOUT_3_11, crate::python::LAYOUT_3_13]);
    let symbols = crate::python::PythonSymbols {
        version: layout.version,
        runtime: 0x00a5_b740,
        code_type: 0x0095_9440,
        eval: (0x0050_0000, 0x0051_0000),
        layout,
        own_offsets: false,
    };
    let Some(valid) = crate::python::describe(&symbols, 0) else {
        return (Vec::new(), "no layout".into());
    };
    let mut p = valid;
    let mut pid = ctx.watched_pid;
    let what: String = match rng.below(20) {
        0 => {
            p.version = rng.pick(&[0x0300u16, 0x030a, 0x030f, 0x0400, u16::MAX]);
            format!("version {:#x}", p.version)
        }
        1 => {
            p.thread_state = crate::protocol::ThreadState::Global(rng.pick(&[
                0u64,
                0x00a5_b741,
                1 << 47,
                u64::MAX - 7,
            ]));
            "global thread state address 0, unaligned or too high".into()
        }
        2 => {
            p.thread_state = crate::protocol::ThreadState::ThreadLocal(rng.pick(&[
                0i64,
                8,
                -4,
                -(1 << 20) - 8,
                i64::MIN,
            ]));
            "thread-local offset not negative, unaligned or too far".into()
        }
        3 => {
            p.code_type = rng.pick(&[0u64, 0x0095_9441, 1 << 47, u64::MAX]);
            "code type 0, unaligned or too high".into()
        }
        4 => {
            p.thread_id = rng.pick(&[1u16, 4089, 4096, 0xfff8]);
            "thread id offset unaligned or past 4096".into()
        }
        5 => {
            p.frame_link = rng.pick(&[3u16, 4096, 0xffff]);
            "frame link unaligned, past 4096 or none".into()
        }
        6 => {
            p.frame_code = rng.pick(&[1u16, 72, 68, 0xffff]);
            "frame code pointer unaligned or past the frame".into()
        }
        7 => {
            p.frame_previous = rng.pick(&[2u16, 72, 128]);
            "previous frame pointer unaligned or past the frame".into()
        }
        8 => {
            p.frame_owner = rng.pick(&[72u16, 200, 0xffff]);
            "owner past the frame".into()
        }
        9 => {
            p.frame_bytes = rng.pick(&[0u16, 4, 60, 136, 0xfff8]);
            format!("frame size {}", p.frame_bytes)
        }
        10 => {
            p.owner_cstack = rng.pick(&[0u8, 3, 0xfe]);
            "both an entry flag and a C stack owner".into()
        }
        11 => {
            p.code_start = rng.pick(&[1u16, 4097, 4098, u16::MAX]);
            "code start odd or past 4096".into()
        }
        12 => {
            pid = rng.pick(&[0u32, 1 << 31, u32::MAX]);
            format!("pid {pid}")
        }
        13 => {
            pid = ctx.unwatched_pid;
            "a process not watched".into()
        }
        14 => {
            let mut b = encode_set_python(pid, Some(&p));
            let at = rng.pick(&[HEADER_BYTES + 43, HEADER_BYTES + 46, HEADER_BYTES + 47]);
            b[at] = 1 + rng.below(255) as u8;
            return (b, "reserved byte set".into());
        }
        15 => {
            if let crate::protocol::ThreadState::List(list) = &mut p.thread_state {
                list.head = rng.pick(&[0u64, 0x00a5_b741, 1 << 47, u64::MAX - 7]);
            }
            "thread list head 0, unaligned or too high".into()
        }
        16 => {
            if let crate::protocol::ThreadState::List(list) = &mut p.thread_state {
                match rng.below(4) {
                    0 => list.interp_next = rng.pick(&[1u16, 65530, 0xffff]),
                    1 => list.interp_threads = rng.pick(&[4u16, 65535, 7345]),
                    2 => list.thread_next = rng.pick(&[3u16, 4096, 0xfff8]),
                    _ => list.thread_native_id = rng.pick(&[161u16, 4096, 0xffff]),
                }
            }
            "thread list offset unaligned or too far".into()
        }
        17 => {
            p.thread_id = rng.pick(&[0u16, 152, 4088]);
            "a thread list with a thread id offset".into()
        }
        18 => {
            // A thread list's body cut to 48 bytes, or another kind's grown to 56.
            let mut b = encode_set_python(pid, Some(&p));
            if rng.below(2) == 0 {
                b.truncate(b.len() - 8);
            } else {
                b[HEADER_BYTES + 6] = rng.pick(&[1u8, 2]);
            }
            fix_length(&mut b);
            return (b, "SET_PYTHON whose size is not its kind's".into());
        }
        _ => {
            let mut b = encode_set_python(pid, if rng.below(2) == 0 { None } else { Some(&p) });
            let what = generic(rng, &mut b);
            return (b, format!("SET_PYTHON {what}"));
        }
    };
    (
        encode_set_python(pid, Some(&p)),
        format!("SET_PYTHON {what}"),
    )
}

/// A mutation of the header, the length or any byte, good for any command.
fn generic(rng: &mut Rng, b: &mut Vec<u8>) -> String {
    match rng.below(9) {
        0 => {
            let cut = rng.below(HEADER_BYTES);
            b.truncate(cut);
            format!("truncated to {cut} bytes, shorter than the header")
        }
        1 => {
            let cut = HEADER_BYTES + rng.below(b.len().saturating_sub(HEADER_BYTES).max(1));
            b.truncate(cut.min(b.len().saturating_sub(1)));
            "truncated, length field kept".into()
        }
        2 => {
            let at = rng.below(4);
            b[at] ^= 1 << rng.below(8);
            format!("magic byte {at} changed")
        }
        3 => {
            let version = rng.pick(&[0u16, 2, 3, 0x100, u16::MAX]);
            put_u16(b, 4, version);
            format!("version {version}")
        }
        4 => {
            let command = rng.pick(&[0u16, 4, 5, 0x101, u16::MAX]);
            put_u16(b, 6, command);
            format!("command {command}")
        }
        5 => {
            // CAST: the writes are far below 4 GiB.
            let len = b.len() as u32;
            let field = rng.pick(&[0, len - 1, len + 1, len + 8, len.wrapping_neg(), u32::MAX]);
            put_u32(b, 8, field);
            format!("length field {field} for {len} bytes")
        }
        6 => {
            put_u32(b, 12, 1 << rng.below(32));
            "header reserved field set".into()
        }
        7 => {
            let extra = 1 + rng.below(64);
            b.extend((0..extra).map(|_| rng.next() as u8));
            format!("{extra} bytes appended, length field kept")
        }
        _ => {
            let flips = 1 + rng.below(4);
            for _ in 0..flips {
                let at = rng.below(b.len());
                b[at] ^= 1 << rng.below(8);
            }
            if rng.below(2) == 0 {
                fix_length(b);
            }
            format!("{flips} bits flipped")
        }
    }
}

/// `count` invalid writes made from `seed` for the state of `ctx`, each with why it must
/// be refused. The same seed and context give the same cases.
pub fn generate(seed: u64, count: usize, ctx: &FuzzContext) -> Vec<FuzzCase> {
    generate_with(seed, count, ctx, mutate)
}

/// [`generate`] of `SET_PYTHON` writes only: descriptions of an interpreter with a field
/// wrong, for a pid out of range or not watched, or mutated as any write.
pub fn generate_python(seed: u64, count: usize, ctx: &FuzzContext) -> Vec<FuzzCase> {
    generate_with(seed, count, ctx, python_case)
}

fn generate_with(
    seed: u64,
    count: usize,
    ctx: &FuzzContext,
    mutate: fn(&mut Rng, &FuzzContext) -> (Vec<u8>, String),
) -> Vec<FuzzCase> {
    let mut rng = Rng(seed);
    let model = ctx.model();
    let mut cases = Vec::with_capacity(count);
    while cases.len() < count {
        let (bytes, mutation) = mutate(&mut rng, ctx);
        // The model's state is only read: `apply` changes nothing when it refuses.
        let mut probe = model.clone();
        if let Err(reject) = probe.apply(&bytes) {
            cases.push(FuzzCase {
                bytes,
                reject,
                mutation,
            });
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{libc_errno, Invalid};
    use std::collections::HashSet;

    #[test]
    fn setup_is_valid() {
        let ctx = FuzzContext::new(100, 200);
        let mut model = KernelModel::new();
        for write in ctx.setup_writes() {
            model.apply(&write).expect("valid setup");
        }
        assert!(model.tables.contains_key(&ctx.loaded_key));
    }

    #[test]
    fn cases_are_refused_and_deterministic() {
        let ctx = FuzzContext::new(100, 200);
        let cases = generate(42, 10_000, &ctx);
        assert_eq!(cases, generate(42, 10_000, &ctx));
        assert_ne!(cases, generate(43, 10_000, &ctx));
        let model = ctx.model();
        let mut reasons = HashSet::new();
        for case in &cases {
            let mut m = model.clone();
            assert_eq!(m.apply(&case.bytes), Err(case.reject), "{}", case.mutation);
            assert!(
                [libc_errno::EINVAL, libc_errno::ENOENT, libc_errno::ESRCH].contains(&case.errno()),
                "{}: {:?}",
                case.mutation,
                case.reject
            );
            reasons.insert(case.reject);
        }
        for reason in [
            Reject::UnknownKey,
            Reject::NotWatched,
            Reject::Invalid(Invalid::ShortHeader),
            Reject::Invalid(Invalid::Magic),
            Reject::Invalid(Invalid::Version),
            Reject::Invalid(Invalid::Length),
            Reject::Invalid(Invalid::HeaderReserved),
            Reject::Invalid(Invalid::Command),
            Reject::Invalid(Invalid::AddTableShort),
            Reject::Invalid(Invalid::RowCount),
            Reject::Invalid(Invalid::AddTableArch),
            Reject::Invalid(Invalid::RowsSize),
            Reject::Invalid(Invalid::RowRule),
            Reject::Invalid(Invalid::RspCfa),
            Reject::Invalid(Invalid::RbpCfa),
            Reject::Invalid(Invalid::BareRow),
            Reject::Invalid(Invalid::RbpSlot),
            Reject::Invalid(Invalid::RowsOrder),
            Reject::Invalid(Invalid::LastRow),
            Reject::Invalid(Invalid::SetMapsShort),
            Reject::Invalid(Invalid::RangeCount),
            Reject::Invalid(Invalid::RangesSize),
            Reject::Invalid(Invalid::Pid),
            Reject::Invalid(Invalid::EmptyRange),
            Reject::Invalid(Invalid::RangesOrder),
            Reject::Invalid(Invalid::DropTableSize),
        ] {
            assert!(reasons.contains(&reason), "no case for {reason:?}");
        }
    }
}
