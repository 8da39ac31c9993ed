// SPDX-License-Identifier: GPL-2.0

//! The binary format of `/proc/memmon/unwind` writes (docs/unwind.md), free of the kernel:
//! [`parse`] validates a whole write and says what it asks for, or why it is refused.

/// `MMUW`, the first four bytes of every write.
pub(crate) const MAGIC: [u8; 4] = *b"MMUW";
/// The one version of the format.
pub(crate) const VERSION: u16 = 1;
/// Bytes of the header every write starts with.
pub(crate) const HEADER_BYTES: usize = 16;
/// Bytes of a table key.
pub(crate) const KEY_BYTES: usize = 16;
/// Bytes of one row.
pub(crate) const ROW_BYTES: usize = 8;
/// Bytes of one range.
pub(crate) const RANGE_BYTES: usize = 40;
/// Most rows in one table.
pub(crate) const ROWS_MAX: usize = 4 << 20;
/// Most ranges of one process.
pub(crate) const RANGES_MAX: usize = 4096;
/// Largest write: a header, a table's key and counts, and its rows.
pub(crate) const WRITE_MAX: usize = HEADER_BYTES + KEY_BYTES + 8 + ROWS_MAX * ROW_BYTES;

/// Rows of a table per entry of its index, at least ([`index_shape`]).
pub(crate) const INDEX_ROWS: usize = 1;
/// Bytes of one entry of a table's index.
pub(crate) const INDEX_ENTRY_BYTES: usize = 4;

/// The shape of the index the module keeps over a table of `rows` rows whose pcs go from
/// `first` to `last`, so that a lookup searches a few rows instead of all: entry `b` is the
/// first row whose pc is at least `first + (b << shift)`. Returns `shift` and the number of
/// entries: buckets of code as small as 16 bytes, as long as there is at most one entry per
/// [`INDEX_ROWS`] rows, plus one.
pub(crate) fn index_shape(first: u32, last: u32, rows: usize) -> (u32, usize) {
    let span = u64::from(last.saturating_sub(first));
    // CAST: usize to u64 is lossless on 64-bit.
    let most = (rows / INDEX_ROWS) as u64 + 1;
    let mut shift = 4;
    // Ends by shift 32 at the latest: `span` is below 2^32, and `most` at least 1.
    while (span >> shift) + 1 > most {
        shift += 1;
    }
    // CAST: at most `most`, a usize.
    (shift, ((span >> shift) + 1) as usize)
}

const COMMAND_ADD_TABLE: u16 = 1;
const COMMAND_SET_MAPS: u16 = 2;
const COMMAND_DROP_TABLE: u16 = 3;
const COMMAND_SET_PYTHON: u16 = 4;

/// Bytes of a `SET_PYTHON`'s body: the pid and the interpreter's description, with a
/// global or thread-local thread state (kinds 1 and 2).
pub(crate) const SET_PYTHON_BODY: usize = 48;
/// Bytes of a `SET_PYTHON`'s body whose thread states are found in the interpreter's thread
/// list (kind 3): the 48 bytes of [`SET_PYTHON_BODY`] and the list's four offsets.
pub(crate) const SET_PYTHON_LIST_BODY: usize = 56;
/// An offset field that says "none".
pub(crate) const PYTHON_NO_OFFSET: u16 = 0xffff;
/// Most bytes of an interpreter frame the walker reads within: every field it reads lies
/// in them.
pub(crate) const PYTHON_FRAME_MAX: usize = 128;
/// Largest offset of a field in a thread state or a code object.
const PYTHON_OBJECT_OFFSET_MAX: u16 = 4096;
/// User addresses are below 2^47 with 4-level page tables; a description naming an address
/// above is refused (the walker packs code addresses in 47 bits).
pub(crate) const PYTHON_ADDRESS_LIMIT: u64 = 1 << 47;
/// Farthest below the thread pointer a static TLS variable is looked for.
const PYTHON_TLS_MAX: i64 = 1 << 20;
/// Largest offset of a field in an interpreter state (`PyInterpreterState` is large: 3.13's
/// thread list is 7344 bytes in).
const PYTHON_INTERP_OFFSET_MAX: u16 = 65528;

/// A table key: the object's build ID, or its device and inode (userspace chooses).
pub(crate) type Key = [u8; KEY_BYTES];

/// The architecture whose registers and rules a table's rows follow: the `ADD_TABLE` field
/// after the row count (reserved, 0, before arm64's tables: an x86_64 table is written as it
/// was).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub(crate) enum TableArch {
    /// x86_64: the stack pointer is RSP, the frame pointer RBP; the return address is at
    /// CFA - 8; a row's `slot` says where RBP was saved.
    X86_64 = 0,
    /// arm64 (AArch64): the stack pointer is SP, the frame pointer X29; a row's `slot` says
    /// where the return address (X30) was saved, 0 while it is still in X30; its flags say
    /// whether X29 was saved just below it ([`FLAG_FP_BELOW_RA`]) and whether it is signed by
    /// pointer authentication ([`FLAG_RA_SIGNED`]).
    Arm64 = 1,
}

impl TableArch {
    fn from_u32(value: u32) -> Option<Self> {
        Some(match value {
            0 => Self::X86_64,
            1 => Self::Arm64,
            _ => return None,
        })
    }

    /// Where a row of this architecture says the caller's registers are.
    pub(crate) fn saves(self, row: &Row) -> Saves {
        match self {
            Self::X86_64 => Saves {
                fp: row.slot,
                ra: -1,
            },
            Self::Arm64 => Saves {
                fp: if row.flags() & FLAG_FP_BELOW_RA != 0 {
                    row.slot.saturating_sub(1)
                } else {
                    0
                },
                ra: row.slot,
            },
        }
    }

    /// Checks one row of this architecture on its own.
    fn check_row(self, row: &Row) -> Result<(), Refusal> {
        let flags = match self {
            Self::X86_64 => 0,
            Self::Arm64 => FLAG_FP_BELOW_RA | FLAG_RA_SIGNED,
        };
        if row.flags() & !flags != 0 {
            return Err("a row with flags its table's architecture does not have");
        }
        let followable = matches!(row.rule(), Rule::Sp | Rule::Fp);
        // The least CFA offset: x86_64's return address is at CFA - 8, above RSP; arm64's may
        // still be in X30, with nothing pushed.
        let least_sp = match self {
            Self::X86_64 => 8,
            Self::Arm64 => 0,
        };
        match row.rule() {
            Rule::Sp if row.cfa < least_sp => return Err("a row's CFA is RSP plus less than 8"),
            Rule::Fp if row.cfa < 16 => {
                return Err("a row's CFA is the frame pointer plus less than 16")
            }
            _ if !followable && (row.cfa != 0 || row.slot != 0 || row.flags() != 0) => {
                return Err("a row without a CFA rule has a CFA offset, a saved register or flags")
            }
            _ => {}
        }
        match self {
            Self::X86_64 if row.slot > -2 && row.slot != 0 => {
                Err("a row saves RBP at or above the return address")
            }
            Self::Arm64 if row.slot > 0 => Err("a row saves the return address above the CFA"),
            Self::Arm64
                if row.flags() & FLAG_FP_BELOW_RA != 0 && !(-127..=-1).contains(&row.slot) =>
            {
                Err("a row saves X29 below a return address that is not saved, or below -1024")
            }
            _ => Ok(()),
        }
    }
}

/// arm64 rows: X29 was saved at CFA + 8 × (`slot` - 1), just below the return address (as
/// `stp x29, x30` saves them).
pub(crate) const FLAG_FP_BELOW_RA: u8 = 0x08;
/// arm64 rows: the return address is signed by pointer authentication (the row's
/// `RA_SIGN_STATE` is 1, `DW_CFA_AARCH64_negate_ra_state`). Accepted, not needed: the walk
/// strips a code from every return address it reads, as the kernel's
/// `ptrauth_strip_user_insn_pac()` does (an unsigned address has none).
pub(crate) const FLAG_RA_SIGNED: u8 = 0x10;
/// The bits of a row's rule byte that hold the rule; the others are flags.
const RULE_MASK: u8 = 0x07;

/// Where a row says the caller's frame pointer and the return address are: `fp` 0 when the
/// frame pointer is unchanged, else saved at CFA + 8 × `fp`; `ra` 0 when the return address
/// is still in the link register (arm64's X30), else saved at CFA + 8 × `ra`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Saves {
    pub(crate) fp: i8,
    pub(crate) ra: i8,
}

/// How a row finds the caller's frame: the low 3 bits of a row's rule byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum Rule {
    /// CFA = the stack pointer (RSP, SP) + `cfa`.
    Sp = 0,
    /// CFA = the frame pointer (RBP, X29) + `cfa`.
    Fp = 1,
    /// Information the walker cannot follow: take a frame-pointer step.
    NotFollowable = 2,
    /// No unwind information: take a frame-pointer step.
    NoInfo = 3,
    /// The outermost frame: the stack is complete.
    Outermost = 4,
}

impl Rule {
    fn from_u8(value: u8) -> Option<Self> {
        Some(match value {
            0 => Self::Sp,
            1 => Self::Fp,
            2 => Self::NotFollowable,
            3 => Self::NoInfo,
            4 => Self::Outermost,
            _ => return None,
        })
    }
}

/// One row of a table: from object address `pc` to the next row's. 8 bytes, as written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Row {
    pub(crate) pc: u32,
    pub(crate) cfa: u16,
    /// The rule (low 3 bits, a valid [`Rule`]: [`parse`] checked it) and the flags.
    pub(crate) code: u8,
    /// The saved register's slot, by the table's architecture ([`TableArch`]).
    pub(crate) slot: i8,
}

impl Row {
    /// Its rule ([`Rule::NoInfo`] for a code no valid row has).
    pub(crate) fn rule(&self) -> Rule {
        Rule::from_u8(self.code & RULE_MASK).unwrap_or(Rule::NoInfo)
    }

    /// Its flags.
    pub(crate) fn flags(&self) -> u8 {
        self.code & !RULE_MASK
    }
}

/// One executable mapping of a process and the table that describes it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct RangeSpec {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Run-time address minus object address.
    pub(crate) bias: u64,
    pub(crate) key: Key,
}

/// What a valid write asks for.
pub(crate) enum Command<'a> {
    /// Load the table `key` with `rows` rows, given valid in `rows`.
    AddTable { key: Key, rows: Rows<'a> },
    /// Replace the ranges of process `pid`.
    SetMaps { pid: u32, ranges: Ranges<'a> },
    /// Remove the table `key` from the set loaded.
    DropTable { key: Key },
    /// Describe the Python interpreter of process `pid` (none: forget it).
    SetPython {
        pid: u32,
        python: Option<PythonSpec>,
    },
}

/// Where the walker finds the current thread's Python thread state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ThreadStateAt {
    /// In a global pointer at this address (3.11: `_PyRuntime.gilstate.tstate_current`, the
    /// thread holding the GIL).
    Global(u64),
    /// In a static TLS variable this far from the thread pointer (3.12 and later:
    /// `_Py_tss_tstate`), negative on x86_64.
    ThreadLocal(i64),
    /// In the interpreters' thread lists: the thread state whose native thread id is the
    /// faulting thread's id (whether it holds the GIL or not).
    List(ThreadList),
}

/// Where the interpreters' thread lists are (kind 3): from the pointer at `head`
/// (`_PyRuntime.interpreters.head`), each interpreter's `next` and first thread state
/// (`threads.head`), each thread state's `next` and native thread id (`gettid()`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct ThreadList {
    pub(crate) head: u64,
    pub(crate) interp_next: u16,
    pub(crate) interp_threads: u16,
    pub(crate) thread_next: u16,
    pub(crate) thread_native_id: u16,
}

/// What the walker needs to read one CPython's interpreter frames (docs/unwind.md).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct PythonSpec {
    /// `major << 8 | minor`, 3.11 to 3.14.
    pub(crate) version: u16,
    pub(crate) thread_state: ThreadStateAt,
    /// Run-time address of `PyCode_Type`: the first recorded frame's code object must be of
    /// this type.
    pub(crate) code_type: u64,
    /// Offset in the thread state of the id of its thread (`pthread_self()`, the thread
    /// pointer), or [`PYTHON_NO_OFFSET`].
    pub(crate) thread_id: u16,
    /// Offset in the thread state of the pointer to the innermost frame, or to the
    /// structure that holds it (3.11's `cframe`).
    pub(crate) frame_link: u16,
    /// Offset of the innermost frame's pointer in the structure `frame_link` points to, or
    /// [`PYTHON_NO_OFFSET`] when `frame_link` points to the frame itself.
    pub(crate) frame_link2: u16,
    /// Offsets in an interpreter frame: its code object, the previous frame, the
    /// instruction pointer, its owner (a byte), its entry flag (a byte, or
    /// [`PYTHON_NO_OFFSET`]).
    pub(crate) frame_code: u16,
    pub(crate) frame_previous: u16,
    pub(crate) frame_instr: u16,
    pub(crate) frame_owner: u16,
    pub(crate) frame_is_entry: u16,
    /// Offset of the first instruction in a code object.
    pub(crate) code_start: u16,
    /// The owner value of the frames the eval loop's entry pushes on the C stack (3.12 and
    /// later), or 0xff.
    pub(crate) owner_cstack: u8,
    /// Bytes of a frame the walker reads within (all the fields above lie in them; it reads
    /// only the 8-byte words holding them).
    pub(crate) frame_bytes: u16,
}

/// The rows of a validated `ADD_TABLE`.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a>(&'a [u8]);

impl Rows<'_> {
    /// How many rows.
    pub(crate) fn len(&self) -> usize {
        self.0.len() / ROW_BYTES
    }

    /// The rows, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Row> + '_ {
        // `parse` checked every row.
        self.0.chunks_exact(ROW_BYTES).filter_map(row)
    }

    /// The shape of the index over these rows ([`index_shape`]), from the first and the last
    /// row's pc without decoding the others; `None` for no rows.
    pub(crate) fn index_shape(&self) -> Option<(u32, usize)> {
        let first = row(self.0.get(..ROW_BYTES)?)?;
        let last = row(self.0.get(self.0.len().checked_sub(ROW_BYTES)?..)?)?;
        Some(index_shape(first.pc, last.pc, self.len()))
    }
}

/// The ranges of a validated `SET_MAPS`.
#[derive(Clone, Copy)]
pub(crate) struct Ranges<'a>(&'a [u8]);

impl Ranges<'_> {
    /// How many ranges.
    pub(crate) fn len(&self) -> usize {
        self.0.len() / RANGE_BYTES
    }

    /// The ranges, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = RangeSpec> + '_ {
        self.0.chunks_exact(RANGE_BYTES).map(range)
    }
}

/// Why a write is refused: the text of its kernel log line.
pub(crate) type Refusal = &'static str;

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    let mut word = [0u8; 2];
    if let Some(src) = bytes.get(at..at + 2) {
        word.copy_from_slice(src);
    }
    u16::from_le_bytes(word)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(src) = bytes.get(at..at + 4) {
        word.copy_from_slice(src);
    }
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    if let Some(src) = bytes.get(at..at + 8) {
        word.copy_from_slice(src);
    }
    u64::from_le_bytes(word)
}

fn key_at(bytes: &[u8], at: usize) -> Key {
    let mut key = [0u8; KEY_BYTES];
    if let Some(src) = bytes.get(at..at + KEY_BYTES) {
        key.copy_from_slice(src);
    }
    key
}

/// The row coded in `bytes` (8 of them), if its rule is known.
fn row(bytes: &[u8]) -> Option<Row> {
    let code = *bytes.get(6)?;
    Rule::from_u8(code & RULE_MASK)?;
    Some(Row {
        pc: u32_at(bytes, 0),
        cfa: u16_at(bytes, 4),
        code,
        slot: i8::from_le_bytes([*bytes.get(7)?]),
    })
}

/// The range coded in `bytes` (40 of them).
fn range(bytes: &[u8]) -> RangeSpec {
    RangeSpec {
        start: u64_at(bytes, 0),
        end: u64_at(bytes, 8),
        bias: u64_at(bytes, 16),
        key: key_at(bytes, 24),
    }
}

/// Bytes of a write that [`parse_prefix`] reads: the header and an `ADD_TABLE`'s key and
/// counts (a `SET_MAPS`'s pid and count, a `DROP_TABLE`'s key, are shorter).
pub(crate) const PREFIX_BYTES: usize = HEADER_BYTES + KEY_BYTES + 8;
/// Largest `SET_MAPS` write: its header, pid and count, and [`RANGES_MAX`] ranges.
pub(crate) const SET_MAPS_WRITE_MAX: usize = HEADER_BYTES + 8 + RANGES_MAX * RANGE_BYTES;

/// What the first [`PREFIX_BYTES`] of a write say, checked against its size.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Prefix {
    /// An `ADD_TABLE` of `rows` rows (from 1 to [`ROWS_MAX`]) of table `key`.
    AddTable { key: Key, rows: usize },
    /// A `SET_MAPS` (at most [`SET_MAPS_WRITE_MAX`] bytes).
    SetMaps,
    /// A `DROP_TABLE`.
    DropTable,
    /// A `SET_PYTHON`.
    SetPython,
}

/// Checks what a write's first bytes say, before the rest is read: `prefix` is its first
/// [`PREFIX_BYTES`] (all of it, if shorter) and `len` its size. Every refusal [`parse`]
/// makes for a write's header, counts and size is made here, first and in the same order:
/// what is left to [`parse`] is the rows and ranges themselves.
///
/// `arch` is the architecture whose tables the module walks: a table of another one is
/// refused here, before its rows are copied in.
pub(crate) fn parse_prefix(prefix: &[u8], len: usize, arch: TableArch) -> Result<Prefix, Refusal> {
    if len < HEADER_BYTES || prefix.len() < HEADER_BYTES {
        return Err("a write shorter than the 16-byte header");
    }
    if prefix.get(..4) != Some(&MAGIC[..]) {
        return Err("a write that does not start with MMUW");
    }
    if u16_at(prefix, 4) != VERSION {
        return Err("a write of a version other than 1");
    }
    // CAST: u32 to usize is lossless on 64-bit.
    let field = u32_at(prefix, 8) as usize;
    if field > len {
        // What a command split over several writes looks like: writev(2) on a proc file
        // makes one write of each of its buffers.
        return Err(
            "a write shorter than its header's length field: a command is one \
                    write() (writev's buffers are separate writes)",
        );
    }
    if field != len {
        return Err("a write whose length field is not its size");
    }
    if u32_at(prefix, 12) != 0 {
        return Err("a header whose reserved field is not 0");
    }
    let body = len - HEADER_BYTES;
    let fields = prefix.get(HEADER_BYTES..).unwrap_or(&[]);
    match u16_at(prefix, 6) {
        COMMAND_ADD_TABLE => {
            if body < KEY_BYTES + 8 {
                return Err("an ADD_TABLE shorter than its key and counts");
            }
            // CAST: u32 to usize is lossless on 64-bit.
            let rows = u32_at(fields, KEY_BYTES) as usize;
            if rows == 0 || rows > ROWS_MAX {
                return Err("an ADD_TABLE of 0 rows or more than 4194304");
            }
            match TableArch::from_u32(u32_at(fields, KEY_BYTES + 4)) {
                Some(table) if table == arch => {}
                Some(TableArch::X86_64) => {
                    return Err(
                        "an ADD_TABLE of x86_64 rows (architecture 0): this module walks \
                                arm64 stacks",
                    )
                }
                Some(TableArch::Arm64) => {
                    return Err(
                        "an ADD_TABLE of arm64 rows (architecture 1): this module walks \
                                x86_64 stacks",
                    )
                }
                None => return Err("an ADD_TABLE of an unknown architecture (0 x86_64, 1 arm64)"),
            }
            if body - (KEY_BYTES + 8) != rows * ROW_BYTES {
                return Err("an ADD_TABLE whose size is not that of its rows");
            }
            Ok(Prefix::AddTable {
                key: key_at(fields, 0),
                rows,
            })
        }
        COMMAND_SET_MAPS => {
            if body < 8 {
                return Err("a SET_MAPS shorter than its pid and count");
            }
            let pid = u32_at(fields, 0);
            // CAST: u32 to usize is lossless on 64-bit.
            let count = u32_at(fields, 4) as usize;
            if count > RANGES_MAX {
                return Err("a SET_MAPS of more than 4096 ranges");
            }
            if body - 8 != count * RANGE_BYTES {
                return Err("a SET_MAPS whose size is not that of its ranges");
            }
            // CAST: i32::MAX is positive.
            if pid == 0 || pid > i32::MAX as u32 {
                return Err("a SET_MAPS of pid 0 or out of range");
            }
            Ok(Prefix::SetMaps)
        }
        COMMAND_DROP_TABLE => {
            if body != KEY_BYTES {
                return Err("a DROP_TABLE whose body is not one key");
            }
            Ok(Prefix::DropTable)
        }
        COMMAND_SET_PYTHON => {
            if body != SET_PYTHON_BODY && body != SET_PYTHON_LIST_BODY {
                return Err("a SET_PYTHON whose body is not 48 or 56 bytes");
            }
            let pid = u32_at(fields, 0);
            // CAST: i32::MAX is positive.
            if pid == 0 || pid > i32::MAX as u32 {
                return Err("a SET_PYTHON of pid 0 or out of range");
            }
            Ok(Prefix::SetPython)
        }
        _ => Err("an unknown command"),
    }
}

/// Validates a whole write and says what it asks for: [`parse_prefix`] of its first bytes,
/// then its rows or ranges.
pub(crate) fn parse(bytes: &[u8], arch: TableArch) -> Result<Command<'_>, Refusal> {
    let prefix = bytes.get(..PREFIX_BYTES.min(bytes.len())).unwrap_or(&[]);
    let body = bytes.get(HEADER_BYTES..).unwrap_or(&[]);
    match parse_prefix(prefix, bytes.len(), arch)? {
        Prefix::AddTable { key, .. } => {
            parse_rows(key, body.get(KEY_BYTES + 8..).unwrap_or(&[]), arch)
        }
        Prefix::SetMaps => parse_ranges(u32_at(body, 0), body.get(8..).unwrap_or(&[])),
        Prefix::DropTable => Ok(Command::DropTable {
            key: key_at(body, 0),
        }),
        Prefix::SetPython => parse_python(body),
    }
}

/// The body of a `SET_PYTHON` whose prefix is valid: pid, then at 4 the version (u16, 0:
/// forget), the thread state's kind (u16: 1 global, 2 thread-local, 3 thread list) and at 8
/// its address, offset or list head (u64), at 16 `PyCode_Type`'s address, at 24 nine u16
/// offsets (`thread_id`, `frame_link`, `frame_link2`, `frame_code`, `frame_previous`,
/// `frame_instr`, `frame_owner`, `frame_is_entry`, `code_start`), at 42 `owner_cstack`
/// (u8), a reserved byte, at 44 `frame_bytes` (u16) and 2 reserved bytes; with kind 3 (a
/// 56-byte body, the others 48) at 48 the thread list's four u16 offsets (`interp_next`,
/// `interp_threads`, `thread_next`, `thread_native_id`).
fn parse_python(body: &[u8]) -> Result<Command<'_>, Refusal> {
    let pid = u32_at(body, 0);
    let version = u16_at(body, 4);
    let kind = u16_at(body, 6);
    let at = u64_at(body, 8);
    let code_type = u64_at(body, 16);
    let offset = |i: usize| u16_at(body, 24 + 2 * i);
    let reserved = body.get(43).copied().unwrap_or(0) != 0 || u16_at(body, 46) != 0;
    if version == 0 {
        if kind != 0 || at != 0 || code_type != 0 || body.iter().skip(24).any(|&b| b != 0) {
            return Err("a SET_PYTHON that forgets has fields that are not 0");
        }
        if body.len() != SET_PYTHON_BODY {
            return Err("a SET_PYTHON whose size is not its kind's (kind 3: 56 bytes, else 48)");
        }
        return Ok(Command::SetPython { pid, python: None });
    }
    if (kind == 3) != (body.len() == SET_PYTHON_LIST_BODY) {
        return Err("a SET_PYTHON whose size is not its kind's (kind 3: 56 bytes, else 48)");
    }
    if reserved {
        return Err("a SET_PYTHON whose reserved fields are not 0");
    }
    if !(0x030b..=0x030d).contains(&version) {
        return Err("a SET_PYTHON of a Python version other than 3.11 to 3.13");
    }
    let thread_state = match kind {
        1 if at != 0 && at % 8 == 0 && at < PYTHON_ADDRESS_LIMIT => ThreadStateAt::Global(at),
        2 => {
            // CAST: the field's bits, read as signed.
            let offset = at as i64;
            if !(-PYTHON_TLS_MAX..0).contains(&offset) || offset % 8 != 0 {
                return Err(
                    "a SET_PYTHON whose thread-local offset is not below the thread \
                            pointer by at most 1 MiB, 8-aligned",
                );
            }
            ThreadStateAt::ThreadLocal(offset)
        }
        3 => {
            if at == 0 || at % 8 != 0 || at >= PYTHON_ADDRESS_LIMIT {
                return Err("a SET_PYTHON whose thread list head is 0, unaligned or too high");
            }
            ThreadStateAt::List(ThreadList {
                head: at,
                interp_next: u16_at(body, 48),
                interp_threads: u16_at(body, 50),
                thread_next: u16_at(body, 52),
                thread_native_id: u16_at(body, 54),
            })
        }
        1 => return Err("a SET_PYTHON whose thread state address is 0, unaligned or too high"),
        _ => return Err("a SET_PYTHON of a thread state kind other than 1 to 3"),
    };
    if code_type == 0 || code_type % 8 != 0 || code_type >= PYTHON_ADDRESS_LIMIT {
        return Err("a SET_PYTHON whose code type address is 0, unaligned or too high");
    }
    let spec = PythonSpec {
        version,
        thread_state,
        code_type,
        thread_id: offset(0),
        frame_link: offset(1),
        frame_link2: offset(2),
        frame_code: offset(3),
        frame_previous: offset(4),
        frame_instr: offset(5),
        frame_owner: offset(6),
        frame_is_entry: offset(7),
        code_start: offset(8),
        owner_cstack: body.get(42).copied().unwrap_or(0),
        frame_bytes: u16_at(body, 44),
    };
    check_python(&spec)?;
    Ok(Command::SetPython {
        pid,
        python: Some(spec),
    })
}

/// Checks the offsets of a description: pointers 8-aligned, objects' fields within
/// 4096 bytes (an interpreter state's thread list fields within 65528), the frame's within
/// the bytes read of it.
fn check_python(spec: &PythonSpec) -> Result<(), Refusal> {
    let in_object = |offset: u16, none: bool| {
        (none && offset == PYTHON_NO_OFFSET)
            || (offset % 8 == 0 && offset <= PYTHON_OBJECT_OFFSET_MAX - 8)
    };
    // A global thread state is the GIL holder's: without its thread id, the walk could not
    // tell it is the faulting thread's, and would give every thread its stack.
    let global = matches!(spec.thread_state, ThreadStateAt::Global(_));
    if !in_object(spec.thread_id, !global)
        || !in_object(spec.frame_link, false)
        || !in_object(spec.frame_link2, true)
    {
        return Err(
            "a SET_PYTHON whose thread state offsets are unaligned or past 4096, or a global \
             thread state without its thread id's",
        );
    }
    if let ThreadStateAt::List(list) = spec.thread_state {
        let in_interp = |offset: u16| offset % 8 == 0 && offset <= PYTHON_INTERP_OFFSET_MAX;
        if !in_interp(list.interp_next)
            || !in_interp(list.interp_threads)
            || !in_object(list.thread_next, false)
            || !in_object(list.thread_native_id, false)
            || spec.thread_id != PYTHON_NO_OFFSET
        {
            return Err(
                "a SET_PYTHON whose thread list offsets are unaligned or too far (interpreter: \
                 65528, thread state: 4088), or that gives a thread id's too",
            );
        }
    }
    if spec.code_start > PYTHON_OBJECT_OFFSET_MAX || spec.code_start % 2 != 0 {
        return Err("a SET_PYTHON whose code start is odd or past 4096");
    }
    // CAST: at most 128, below u16::MAX.
    if spec.frame_bytes == 0
        || spec.frame_bytes > PYTHON_FRAME_MAX as u16
        || spec.frame_bytes % 8 != 0
    {
        return Err("a SET_PYTHON whose frame size is not 8 to 128 bytes, 8-aligned");
    }
    let fits = |offset: u16, width: u16| {
        offset
            .checked_add(width)
            .is_some_and(|end| end <= spec.frame_bytes)
    };
    let pointer = |offset: u16| offset % 8 == 0 && fits(offset, 8);
    if !pointer(spec.frame_code) || !pointer(spec.frame_previous) || !pointer(spec.frame_instr) {
        return Err("a SET_PYTHON whose frame pointers are unaligned or past the frame size");
    }
    if !fits(spec.frame_owner, 1)
        || !(spec.frame_is_entry == PYTHON_NO_OFFSET || fits(spec.frame_is_entry, 1))
    {
        return Err("a SET_PYTHON whose frame owner or entry flag is past the frame size");
    }
    if (spec.frame_is_entry == PYTHON_NO_OFFSET) == (spec.owner_cstack == 0xff) {
        return Err("a SET_PYTHON needs one of an entry flag offset and a C stack owner");
    }
    Ok(())
}

/// The rows of an `ADD_TABLE` whose prefix is valid.
fn parse_rows(key: Key, rows: &[u8], arch: TableArch) -> Result<Command<'_>, Refusal> {
    let mut last: Option<Row> = None;
    for bytes in rows.chunks_exact(ROW_BYTES) {
        let row = row(bytes).ok_or("a row of an unknown rule")?;
        arch.check_row(&row)?;
        if last.is_some_and(|last| last.pc >= row.pc) {
            return Err("rows not in strictly increasing order of pc");
        }
        last = Some(row);
    }
    if last.map(|row| row.rule()) != Some(Rule::NoInfo) {
        return Err("a table whose last row is not the end (rule 3)");
    }
    Ok(Command::AddTable {
        key,
        rows: Rows(rows),
    })
}

/// The ranges of a `SET_MAPS` whose prefix is valid.
fn parse_ranges(pid: u32, ranges: &[u8]) -> Result<Command<'_>, Refusal> {
    let mut last_end = 0;
    for (i, bytes) in ranges.chunks_exact(RANGE_BYTES).enumerate() {
        let range = range(bytes);
        if range.start >= range.end {
            return Err("a range that does not start before its end");
        }
        if i > 0 && range.start < last_end {
            return Err("ranges not sorted, or overlapping");
        }
        last_end = range.end;
    }
    Ok(Command::SetMaps {
        pid,
        ranges: Ranges(ranges),
    })
}
