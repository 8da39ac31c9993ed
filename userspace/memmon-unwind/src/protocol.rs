//! The binary format of writes to `/proc/memmon/unwind`, version 1 (docs/unwind.md):
//! encoders for the three commands, and a decoder that validates a write by the same rules,
//! in the same order, as the module, plus [`KernelModel`], which also keeps the module's
//! state (tables loaded, processes watched, memory) to say which errno a write gets.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::arch::Arch;
use crate::key::{Key, KEY_BYTES};

/// `MMUW`, the first four bytes of every write.
pub const MAGIC: [u8; 4] = *b"MMUW";
/// The version of the format this crate writes.
pub const VERSION: u16 = 1;
/// Bytes of the header every write starts with.
pub const HEADER_BYTES: usize = 16;
/// Bytes of one row.
pub const ROW_BYTES: usize = 8;
/// Bytes of one range.
pub const RANGE_BYTES: usize = 40;
/// Most rows in one table.
pub const ROWS_MAX: usize = 4 << 20;
/// Most ranges of one process.
pub const RANGES_MAX: usize = 4096;
/// Bytes of an `ADD_TABLE` before its rows: header, key, row count, architecture.
pub const ADD_TABLE_FIXED: usize = HEADER_BYTES + KEY_BYTES + 8;
/// Bytes of a `SET_MAPS` before its ranges: header, pid, range count.
pub const SET_MAPS_FIXED: usize = HEADER_BYTES + 8;
/// Bytes of a `DROP_TABLE`.
pub const DROP_TABLE_BYTES: usize = HEADER_BYTES + KEY_BYTES;
/// Bytes of a write the module reads before the rest: the header, and an `ADD_TABLE`'s key
/// and counts.
pub const PREFIX_BYTES: usize = ADD_TABLE_FIXED;
/// Writes in flight may hold at least this much copied in together in the module, whatever
/// `unwind_max_kb` is ([`KernelModel::staging_max`]).
pub const STAGING_MIN: usize = 256 * 1024;

/// The command numbers of the header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u16)]
pub enum CommandCode {
    /// Load a table.
    AddTable = 1,
    /// Replace a process's ranges.
    SetMaps = 2,
    /// Remove a table from the set loaded.
    DropTable = 3,
    /// Describe (or forget) a process's Python interpreter.
    SetPython = 4,
}

/// Bytes of a `SET_PYTHON`: header, pid and description, with a global or thread-local
/// thread state (kinds 1 and 2), or forgetting.
pub const SET_PYTHON_BYTES: usize = HEADER_BYTES + 48;
/// Bytes of a `SET_PYTHON` whose thread states are found in the thread lists (kind 3): the
/// 48 bytes of the others' body and the lists' four offsets.
pub const SET_PYTHON_LIST_BYTES: usize = HEADER_BYTES + 56;
/// An offset field of a `SET_PYTHON` that says "none".
pub const NO_OFFSET: u16 = 0xffff;
/// Most bytes of a frame the module reads.
pub const PYTHON_FRAME_MAX: u16 = 128;
/// User addresses a description may name are below this.
pub const PYTHON_ADDRESS_LIMIT: u64 = 1 << 47;

/// Where the module finds the current thread's Python thread state.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ThreadState {
    /// A global pointer at this address (3.11: the GIL holder's).
    Global(u64),
    /// A static TLS variable this far from the thread pointer (negative).
    ThreadLocal(i64),
    /// The interpreters' thread lists: the thread state whose native thread id is the
    /// faulting thread's.
    List(ThreadList),
}

/// Where the interpreters' thread lists are (kind 3): `head` is the address of the pointer
/// to the first interpreter (`_PyRuntime.interpreters.head`); then the offsets of an
/// interpreter's `next` and `threads.head`, and of a thread state's `next` and
/// `native_thread_id`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ThreadList {
    pub head: u64,
    pub interp_next: u16,
    pub interp_threads: u16,
    pub thread_next: u16,
    pub thread_native_id: u16,
}

/// The description of one process's CPython that a `SET_PYTHON` gives (docs/unwind.md).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PythonDescription {
    /// `major << 8 | minor`.
    pub version: u16,
    /// Where the thread state is.
    pub thread_state: ThreadState,
    /// Run-time address of `PyCode_Type`.
    pub code_type: u64,
    /// Offsets: the thread state's thread id ([`NO_OFFSET`]: not checked), its link to the
    /// innermost frame, and the second link ([`NO_OFFSET`]: none).
    pub thread_id: u16,
    pub frame_link: u16,
    pub frame_link2: u16,
    /// Offsets in a frame: code, previous frame, instruction pointer, owner byte, entry
    /// flag byte ([`NO_OFFSET`]: none).
    pub frame_code: u16,
    pub frame_previous: u16,
    pub frame_instr: u16,
    pub frame_owner: u16,
    pub frame_is_entry: u16,
    /// Offset of a code object's first instruction.
    pub code_start: u16,
    /// The owner value of the eval loop's entry frames (0xff: none).
    pub owner_cstack: u8,
    /// Bytes of a frame read.
    pub frame_bytes: u16,
}

/// How a row finds the caller's frame: the low 3 bits of a row's rule byte.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum Rule {
    /// CFA = the stack pointer (RSP, SP) + `cfa`.
    Sp = 0,
    /// CFA = the frame pointer (RBP, X29) + `cfa`.
    Fp = 1,
    /// Information the walker cannot follow: it takes a frame-pointer step.
    NotFollowable = 2,
    /// No unwind information (a gap, or the end of the table): a frame-pointer step.
    NoInfo = 3,
    /// The outermost frame (return address undefined): the stack is complete.
    Outermost = 4,
}

impl Rule {
    /// All rules, by number.
    pub const ALL: [Rule; 5] = [
        Rule::Sp,
        Rule::Fp,
        Rule::NotFollowable,
        Rule::NoInfo,
        Rule::Outermost,
    ];

    /// The rule numbered `value`, if there is one.
    pub fn from_u8(value: u8) -> Option<Rule> {
        Rule::ALL.get(usize::from(value)).copied()
    }
}

/// The bits of a row's rule byte that hold the rule; the others are flags
/// ([`crate::arch::aarch64::FLAG_FP_BELOW_RA`], [`crate::arch::aarch64::FLAG_RA_SIGNED`]).
pub const RULE_MASK: u8 = 0x07;

/// One row of a table: it applies from object address `pc` to the next row's.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Row {
    /// Object address (ELF virtual address) where the row starts.
    pub pc: u32,
    /// Offset added to the CFA register (rules 0 and 1; else 0).
    pub cfa: u16,
    /// How the CFA is found.
    pub rule: Rule,
    /// The flags of the rule byte (arm64's; 0 on x86_64).
    pub flags: u8,
    /// The saved register's slot, by the table's architecture ([`Arch::saves`]): x86_64's
    /// RBP saved at CFA + 8 × `slot` (0: unchanged, else −128 to −2); arm64's return address
    /// saved at CFA + 8 × `slot` (0: still in X30, else −128 to −1).
    pub slot: i8,
}

impl Row {
    /// A row of rule 2, 3 or 4 (no CFA offset, no saved register, no flags) at `pc`.
    pub fn bare(pc: u32, rule: Rule) -> Row {
        Row {
            pc,
            cfa: 0,
            rule,
            flags: 0,
            slot: 0,
        }
    }

    /// The 8 bytes of the row.
    pub fn to_bytes(&self) -> [u8; ROW_BYTES] {
        let mut out = [0u8; ROW_BYTES];
        out[0..4].copy_from_slice(&self.pc.to_le_bytes());
        out[4..6].copy_from_slice(&self.cfa.to_le_bytes());
        out[6] = self.rule as u8 | self.flags;
        out[7] = self.slot.to_le_bytes()[0];
        out
    }

    /// Whether the row, on its own, obeys the format's rules for a table of `arch` (cfa,
    /// slot and flags against the rule).
    pub fn check(&self, arch: Arch) -> Result<(), Invalid> {
        arch.check_row(self)
    }
}

/// One executable mapping of a process and the table of the object mapped there.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Range {
    /// First address of the mapping.
    pub start: u64,
    /// Its end (exclusive).
    pub end: u64,
    /// Run-time address minus object address (wrapping).
    pub bias: u64,
    /// The table of the object.
    pub key: Key,
}

impl Range {
    /// The 40 bytes of the range.
    pub fn to_bytes(&self) -> [u8; RANGE_BYTES] {
        let mut out = [0u8; RANGE_BYTES];
        out[0..8].copy_from_slice(&self.start.to_le_bytes());
        out[8..16].copy_from_slice(&self.end.to_le_bytes());
        out[16..24].copy_from_slice(&self.bias.to_le_bytes());
        out[24..40].copy_from_slice(&self.key.0);
        out
    }
}

fn header(command: CommandCode, length: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(length);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(command as u16).to_le_bytes());
    // CAST: callers bound `length` (at most ADD_TABLE_FIXED + ROWS_MAX rows); a longer write
    // is refused by the module for its length field anyway.
    out.extend_from_slice(&(length as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out
}

/// The `ADD_TABLE` write that loads `rows`, of a table of `arch`, as the table `key`. The
/// rows are written as given: [`decode`] says whether the module will take them.
pub fn encode_add_table(key: &Key, arch: Arch, rows: &[Row]) -> Vec<u8> {
    let mut out = header(
        CommandCode::AddTable,
        ADD_TABLE_FIXED + rows.len() * ROW_BYTES,
    );
    out.extend_from_slice(&key.0);
    // CAST: see `header`.
    out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    out.extend_from_slice(&(arch as u32).to_le_bytes());
    for row in rows {
        out.extend_from_slice(&row.to_bytes());
    }
    out
}

/// The `SET_MAPS` write that replaces the ranges of process `pid` by `ranges` (none: forget).
pub fn encode_set_maps(pid: u32, ranges: &[Range]) -> Vec<u8> {
    let mut out = header(
        CommandCode::SetMaps,
        SET_MAPS_FIXED + ranges.len() * RANGE_BYTES,
    );
    out.extend_from_slice(&pid.to_le_bytes());
    // CAST: see `header`.
    out.extend_from_slice(&(ranges.len() as u32).to_le_bytes());
    for range in ranges {
        out.extend_from_slice(&range.to_bytes());
    }
    out
}

/// The `SET_PYTHON` write that describes the interpreter of process `pid` (`None`: forgets
/// it).
pub fn encode_set_python(pid: u32, python: Option<&PythonDescription>) -> Vec<u8> {
    let list = match python.map(|p| p.thread_state) {
        Some(ThreadState::List(list)) => Some(list),
        _ => None,
    };
    let bytes = if list.is_some() {
        SET_PYTHON_LIST_BYTES
    } else {
        SET_PYTHON_BYTES
    };
    let mut out = header(CommandCode::SetPython, bytes);
    out.extend_from_slice(&pid.to_le_bytes());
    let Some(p) = python else {
        out.resize(bytes, 0);
        return out;
    };
    out.extend_from_slice(&p.version.to_le_bytes());
    let (kind, at) = match p.thread_state {
        ThreadState::Global(addr) => (1u16, addr),
        // CAST: the offset's bits.
        ThreadState::ThreadLocal(offset) => (2u16, offset as u64),
        ThreadState::List(list) => (3u16, list.head),
    };
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&p.code_type.to_le_bytes());
    for offset in [
        p.thread_id,
        p.frame_link,
        p.frame_link2,
        p.frame_code,
        p.frame_previous,
        p.frame_instr,
        p.frame_owner,
        p.frame_is_entry,
        p.code_start,
    ] {
        out.extend_from_slice(&offset.to_le_bytes());
    }
    out.push(p.owner_cstack);
    out.push(0);
    out.extend_from_slice(&p.frame_bytes.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    if let Some(list) = list {
        for offset in [
            list.interp_next,
            list.interp_threads,
            list.thread_next,
            list.thread_native_id,
        ] {
            out.extend_from_slice(&offset.to_le_bytes());
        }
    }
    out
}

/// The `DROP_TABLE` write that removes the table `key`.
pub fn encode_drop_table(key: &Key) -> Vec<u8> {
    let mut out = header(CommandCode::DropTable, DROP_TABLE_BYTES);
    out.extend_from_slice(&key.0);
    out
}

/// Why the module refuses a write with `EINVAL`, in the order it checks.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
pub enum Invalid {
    /// Shorter than the 16-byte header.
    #[error("a write shorter than the 16-byte header")]
    ShortHeader,
    /// Does not start with `MMUW`.
    #[error("a write that does not start with MMUW")]
    Magic,
    /// A version other than 1.
    #[error("a write of a version other than 1")]
    Version,
    /// The length field is not the write's size.
    #[error("a write whose length field is not its size")]
    Length,
    /// The header's reserved field is not 0.
    #[error("a header whose reserved field is not 0")]
    HeaderReserved,
    /// The command is not 1, 2 or 3.
    #[error("an unknown command")]
    Command,
    /// An `ADD_TABLE` shorter than its key and counts.
    #[error("an ADD_TABLE shorter than its key and counts")]
    AddTableShort,
    /// An `ADD_TABLE` of 0 rows or more than 4194304.
    #[error("an ADD_TABLE of 0 rows or more than 4194304")]
    RowCount,
    /// An `ADD_TABLE` of another architecture than the module's, or of an unknown one.
    #[error("an ADD_TABLE of another architecture than the module's (0 x86_64, 1 arm64)")]
    AddTableArch,
    /// An `ADD_TABLE` whose size is not that of its rows.
    #[error("an ADD_TABLE whose size is not that of its rows")]
    RowsSize,
    /// A row of a rule other than 0 to 4.
    #[error("a row of an unknown rule")]
    RowRule,
    /// A rule 0 row of x86_64 with a CFA offset below 8.
    #[error("a row's CFA is RSP plus less than 8")]
    RspCfa,
    /// A rule 1 row with a CFA offset below 16 (the frame pointer: RBP, X29).
    #[error("a row's CFA is RBP plus less than 16")]
    RbpCfa,
    /// A row of rule 2, 3 or 4 with a CFA offset, a saved register or flags.
    #[error("a row without a CFA rule has a CFA offset, a saved register or flags")]
    BareRow,
    /// An x86_64 row whose slot is −1 or positive.
    #[error("a row saves RBP at or above the return address")]
    RbpSlot,
    /// A row with flags its table's architecture does not have.
    #[error("a row with flags its table's architecture does not have")]
    RowFlags,
    /// An arm64 row whose return address slot is positive.
    #[error("a row saves the return address above the CFA")]
    RaSlot,
    /// An arm64 row that saves X29 below a return address that is not saved (or below −1024).
    #[error("a row saves X29 below a return address that is not saved, or below -1024")]
    FpBelowRa,
    /// Rows whose `pc` does not strictly increase.
    #[error("rows not in strictly increasing order of pc")]
    RowsOrder,
    /// A table whose last row is not of rule 3.
    #[error("a table whose last row is not the end (rule 3)")]
    LastRow,
    /// A `SET_MAPS` shorter than its pid and count.
    #[error("a SET_MAPS shorter than its pid and count")]
    SetMapsShort,
    /// A `SET_MAPS` of more than 4096 ranges.
    #[error("a SET_MAPS of more than 4096 ranges")]
    RangeCount,
    /// A `SET_MAPS` whose size is not that of its ranges.
    #[error("a SET_MAPS whose size is not that of its ranges")]
    RangesSize,
    /// A `SET_MAPS` of pid 0 or above `i32::MAX`.
    #[error("a SET_MAPS of pid 0 or out of range")]
    Pid,
    /// A range whose start is not below its end.
    #[error("a range that does not start before its end")]
    EmptyRange,
    /// Ranges not sorted by start, or overlapping.
    #[error("ranges not sorted, or overlapping")]
    RangesOrder,
    /// A `DROP_TABLE` whose body is not one key.
    #[error("a DROP_TABLE whose body is not one key")]
    DropTableSize,
    /// A `SET_PYTHON` whose body is neither 48 nor 56 bytes.
    #[error("a SET_PYTHON whose body is not 48 or 56 bytes")]
    PythonSize,
    /// A `SET_PYTHON` of pid 0 or above `i32::MAX`.
    #[error("a SET_PYTHON of pid 0 or out of range")]
    PythonPid,
    /// A `SET_PYTHON` of version 0 (forget) with other fields set.
    #[error("a SET_PYTHON that forgets has fields that are not 0")]
    PythonForget,
    /// A `SET_PYTHON` of kind 3 that is not 56 bytes, or of another kind (or forgetting)
    /// that is not 48.
    #[error("a SET_PYTHON whose size is not its kind's (kind 3: 56 bytes, else 48)")]
    PythonKindSize,
    /// Reserved fields not 0.
    #[error("a SET_PYTHON whose reserved fields are not 0")]
    PythonReserved,
    /// A version other than 3.11 to 3.13.
    #[error("a SET_PYTHON of a Python version other than 3.11 to 3.13")]
    PythonVersion,
    /// A thread-local offset not below the thread pointer by at most 1 MiB, 8-aligned.
    #[error("a SET_PYTHON whose thread-local offset is not below the thread pointer by at most 1 MiB, 8-aligned")]
    PythonTls,
    /// A global thread state address 0, unaligned or too high.
    #[error("a SET_PYTHON whose thread state address is 0, unaligned or too high")]
    PythonThreadState,
    /// A thread state kind other than 1 to 3.
    #[error("a SET_PYTHON of a thread state kind other than 1 to 3")]
    PythonKind,
    /// A thread list head (kind 3) 0, unaligned or too high.
    #[error("a SET_PYTHON whose thread list head is 0, unaligned or too high")]
    PythonListHead,
    /// A code type address 0, unaligned or too high.
    #[error("a SET_PYTHON whose code type address is 0, unaligned or too high")]
    PythonCodeType,
    /// Thread state offsets unaligned or past 4096.
    #[error(
        "a SET_PYTHON whose thread state offsets are unaligned or past 4096, or a global \
         thread state without its thread id's"
    )]
    PythonThreadOffsets,
    /// Thread list offsets unaligned or too far, or a thread id offset with them.
    #[error(
        "a SET_PYTHON whose thread list offsets are unaligned or too far (interpreter: \
         65528, thread state: 4088), or that gives a thread id's too"
    )]
    PythonListOffsets,
    /// A code start odd or past 4096.
    #[error("a SET_PYTHON whose code start is odd or past 4096")]
    PythonCodeStart,
    /// A frame size not 8 to 128, 8-aligned.
    #[error("a SET_PYTHON whose frame size is not 8 to 128 bytes, 8-aligned")]
    PythonFrameBytes,
    /// Frame pointers unaligned or past the frame size.
    #[error("a SET_PYTHON whose frame pointers are unaligned or past the frame size")]
    PythonFramePointers,
    /// Owner or entry flag past the frame size.
    #[error("a SET_PYTHON whose frame owner or entry flag is past the frame size")]
    PythonFrameBytesFields,
    /// Neither or both of an entry flag and a C stack owner.
    #[error("a SET_PYTHON needs one of an entry flag offset and a C stack owner")]
    PythonEntry,
}

impl Invalid {
    /// Whether the module finds it in a write's first [`PREFIX_BYTES`] (its header and
    /// counts, checked against its size), which it reads before the rest: such a write is
    /// refused before any memory check; the others (rows and ranges) after them.
    pub fn in_prefix(&self) -> bool {
        !matches!(
            self,
            Invalid::RowRule
                | Invalid::RspCfa
                | Invalid::RbpCfa
                | Invalid::BareRow
                | Invalid::RbpSlot
                | Invalid::RowFlags
                | Invalid::RaSlot
                | Invalid::FpBelowRa
                | Invalid::RowsOrder
                | Invalid::LastRow
                | Invalid::EmptyRange
                | Invalid::RangesOrder
                | Invalid::PythonForget
                | Invalid::PythonKindSize
                | Invalid::PythonListHead
                | Invalid::PythonListOffsets
                | Invalid::PythonReserved
                | Invalid::PythonVersion
                | Invalid::PythonTls
                | Invalid::PythonThreadState
                | Invalid::PythonKind
                | Invalid::PythonCodeType
                | Invalid::PythonThreadOffsets
                | Invalid::PythonCodeStart
                | Invalid::PythonFrameBytes
                | Invalid::PythonFramePointers
                | Invalid::PythonFrameBytesFields
                | Invalid::PythonEntry
        )
    }
}

/// Why the module refuses a write, with the errno it returns.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
pub enum Reject {
    /// `EINVAL`: the write breaks the format.
    #[error("invalid: {0}")]
    Invalid(#[from] Invalid),
    /// `ENOENT`: a `SET_MAPS` names, or a `DROP_TABLE` drops, a table not loaded.
    #[error("a table not loaded")]
    UnknownKey,
    /// `ESRCH`: a `SET_MAPS` of a process that does not exist or is not watched.
    #[error("a process not watched")]
    NotWatched,
    /// `ENOSPC`: the table memory would pass `unwind_max_kb`, or the write is larger than
    /// writes may copy in ([`KernelModel::staging_max`]).
    #[error("the table memory would pass unwind_max_kb")]
    NoSpace,
    /// `EBUSY`: a `DROP_TABLE` of a table that ranges still use (the module's behaviour;
    /// docs/unwind.md says the ranges keep it instead).
    #[error("a table that ranges use")]
    Busy,
}

impl Reject {
    /// The errno the module returns.
    pub fn errno(&self) -> i32 {
        match self {
            Reject::Invalid(_) => libc_errno::EINVAL,
            Reject::UnknownKey => libc_errno::ENOENT,
            Reject::NotWatched => libc_errno::ESRCH,
            Reject::NoSpace => libc_errno::ENOSPC,
            Reject::Busy => libc_errno::EBUSY,
        }
    }
}

/// The Linux errno values the module returns.
pub mod libc_errno {
    /// No such file or directory.
    pub const ENOENT: i32 = 2;
    /// No such process.
    pub const ESRCH: i32 = 3;
    /// Try again.
    pub const EAGAIN: i32 = 11;
    /// Device or resource busy.
    pub const EBUSY: i32 = 16;
    /// Invalid argument.
    pub const EINVAL: i32 = 22;
    /// No space left on device.
    pub const ENOSPC: i32 = 28;
}

/// A write that passed [`decode`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Command {
    /// Load the table `key`.
    AddTable {
        /// The table's key.
        key: Key,
        /// Its rows, valid.
        rows: Vec<Row>,
    },
    /// Replace the ranges of process `pid`.
    SetMaps {
        /// The process (thread-group id).
        pid: u32,
        /// Its ranges, valid on their own (the keys are not checked).
        ranges: Vec<Range>,
    },
    /// Remove the table `key`.
    DropTable {
        /// The table's key.
        key: Key,
    },
    /// Describe the interpreter of process `pid` (`None`: forget it).
    SetPython {
        /// The process.
        pid: u32,
        /// Its interpreter.
        python: Option<PythonDescription>,
    },
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::AddTable { key, rows } => write!(f, "ADD_TABLE {key} rows={}", rows.len()),
            Command::SetMaps { pid, ranges } => {
                write!(f, "SET_MAPS pid={pid} ranges={}", ranges.len())
            }
            Command::DropTable { key } => write!(f, "DROP_TABLE {key}"),
            Command::SetPython { pid, python } => match python {
                Some(p) => write!(f, "SET_PYTHON pid={pid} version={:#x}", p.version),
                None => write!(f, "SET_PYTHON pid={pid} none"),
            },
        }
    }
}

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
    Key(key)
}

/// Validates a whole write by the format's rules, in the module's order, for a module that
/// walks `arch`'s stacks, and says what it asks for. What depends on the module's state
/// (keys loaded, pids watched, memory) is [`KernelModel::apply`]'s.
pub fn decode(bytes: &[u8], arch: Arch) -> Result<Command, Invalid> {
    if bytes.len() < HEADER_BYTES {
        return Err(Invalid::ShortHeader);
    }
    if bytes.get(..4) != Some(&MAGIC[..]) {
        return Err(Invalid::Magic);
    }
    if u16_at(bytes, 4) != VERSION {
        return Err(Invalid::Version);
    }
    if usize::try_from(u32_at(bytes, 8)).ok() != Some(bytes.len()) {
        return Err(Invalid::Length);
    }
    if u32_at(bytes, 12) != 0 {
        return Err(Invalid::HeaderReserved);
    }
    let body = bytes.get(HEADER_BYTES..).unwrap_or(&[]);
    match u16_at(bytes, 6) {
        1 => decode_add_table(body, arch),
        2 => decode_set_maps(body),
        3 => {
            if body.len() != KEY_BYTES {
                return Err(Invalid::DropTableSize);
            }
            Ok(Command::DropTable {
                key: key_at(body, 0),
            })
        }
        4 => decode_set_python(body),
        _ => Err(Invalid::Command),
    }
}

fn decode_set_python(body: &[u8]) -> Result<Command, Invalid> {
    let list_body = body.len() == SET_PYTHON_LIST_BYTES - HEADER_BYTES;
    if body.len() != SET_PYTHON_BYTES - HEADER_BYTES && !list_body {
        return Err(Invalid::PythonSize);
    }
    let pid = u32_at(body, 0);
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(Invalid::PythonPid);
    }
    let version = u16_at(body, 4);
    let kind = u16_at(body, 6);
    let at = u64_at(body, 8);
    let code_type = u64_at(body, 16);
    let offset = |i: usize| u16_at(body, 24 + 2 * i);
    if version == 0 {
        if kind != 0 || at != 0 || code_type != 0 || body.iter().skip(24).any(|&b| b != 0) {
            return Err(Invalid::PythonForget);
        }
        if list_body {
            return Err(Invalid::PythonKindSize);
        }
        return Ok(Command::SetPython { pid, python: None });
    }
    if (kind == 3) != list_body {
        return Err(Invalid::PythonKindSize);
    }
    if body[43] != 0 || u16_at(body, 46) != 0 {
        return Err(Invalid::PythonReserved);
    }
    if !(0x030b..=0x030d).contains(&version) {
        return Err(Invalid::PythonVersion);
    }
    let thread_state = match kind {
        1 if at != 0 && at.is_multiple_of(8) && at < PYTHON_ADDRESS_LIMIT => {
            ThreadState::Global(at)
        }
        2 => {
            let offset = at as i64;
            if !(-(1 << 20)..0).contains(&offset) || offset % 8 != 0 {
                return Err(Invalid::PythonTls);
            }
            ThreadState::ThreadLocal(offset)
        }
        3 => {
            if at == 0 || !at.is_multiple_of(8) || at >= PYTHON_ADDRESS_LIMIT {
                return Err(Invalid::PythonListHead);
            }
            ThreadState::List(ThreadList {
                head: at,
                interp_next: u16_at(body, 48),
                interp_threads: u16_at(body, 50),
                thread_next: u16_at(body, 52),
                thread_native_id: u16_at(body, 54),
            })
        }
        1 => return Err(Invalid::PythonThreadState),
        _ => return Err(Invalid::PythonKind),
    };
    if code_type == 0 || !code_type.is_multiple_of(8) || code_type >= PYTHON_ADDRESS_LIMIT {
        return Err(Invalid::PythonCodeType);
    }
    let p = PythonDescription {
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
        owner_cstack: body[42],
        frame_bytes: u16_at(body, 44),
    };
    check_python(&p)?;
    Ok(Command::SetPython {
        pid,
        python: Some(p),
    })
}

/// The module's checks of a description's offsets, in its order.
pub fn check_python(p: &PythonDescription) -> Result<(), Invalid> {
    let in_object = |offset: u16, none: bool| {
        (none && offset == NO_OFFSET) || (offset.is_multiple_of(8) && offset <= 4088)
    };
    let global = matches!(p.thread_state, ThreadState::Global(_));
    if !in_object(p.thread_id, !global)
        || !in_object(p.frame_link, false)
        || !in_object(p.frame_link2, true)
    {
        return Err(Invalid::PythonThreadOffsets);
    }
    if let ThreadState::List(list) = p.thread_state {
        let in_interp = |offset: u16| offset.is_multiple_of(8) && offset <= 65528;
        if !in_interp(list.interp_next)
            || !in_interp(list.interp_threads)
            || !in_object(list.thread_next, false)
            || !in_object(list.thread_native_id, false)
            || p.thread_id != NO_OFFSET
        {
            return Err(Invalid::PythonListOffsets);
        }
    }
    if p.code_start > 4096 || !p.code_start.is_multiple_of(2) {
        return Err(Invalid::PythonCodeStart);
    }
    if p.frame_bytes == 0 || p.frame_bytes > PYTHON_FRAME_MAX || !p.frame_bytes.is_multiple_of(8) {
        return Err(Invalid::PythonFrameBytes);
    }
    let fits = |offset: u16, width: u16| {
        offset
            .checked_add(width)
            .is_some_and(|end| end <= p.frame_bytes)
    };
    let pointer = |offset: u16| offset.is_multiple_of(8) && fits(offset, 8);
    if !pointer(p.frame_code) || !pointer(p.frame_previous) || !pointer(p.frame_instr) {
        return Err(Invalid::PythonFramePointers);
    }
    if !fits(p.frame_owner, 1) || !(p.frame_is_entry == NO_OFFSET || fits(p.frame_is_entry, 1)) {
        return Err(Invalid::PythonFrameBytesFields);
    }
    if (p.frame_is_entry == NO_OFFSET) == (p.owner_cstack == 0xff) {
        return Err(Invalid::PythonEntry);
    }
    Ok(())
}

fn decode_add_table(body: &[u8], arch: Arch) -> Result<Command, Invalid> {
    let fixed = KEY_BYTES + 8;
    if body.len() < fixed {
        return Err(Invalid::AddTableShort);
    }
    let count = usize::try_from(u32_at(body, KEY_BYTES)).unwrap_or(usize::MAX);
    if count == 0 || count > ROWS_MAX {
        return Err(Invalid::RowCount);
    }
    if Arch::from_u32(u32_at(body, KEY_BYTES + 4)) != Some(arch) {
        return Err(Invalid::AddTableArch);
    }
    let raw = body.get(fixed..).unwrap_or(&[]);
    if raw.len() != count * ROW_BYTES {
        return Err(Invalid::RowsSize);
    }
    let mut rows: Vec<Row> = Vec::with_capacity(count);
    for bytes in raw.chunks_exact(ROW_BYTES) {
        let rule = Rule::from_u8(bytes[6] & RULE_MASK).ok_or(Invalid::RowRule)?;
        let row = Row {
            pc: u32_at(bytes, 0),
            cfa: u16_at(bytes, 4),
            rule,
            flags: bytes[6] & !RULE_MASK,
            slot: i8::from_le_bytes([bytes[7]]),
        };
        row.check(arch)?;
        if rows.last().is_some_and(|last| last.pc >= row.pc) {
            return Err(Invalid::RowsOrder);
        }
        rows.push(row);
    }
    if rows.last().map(|row| row.rule) != Some(Rule::NoInfo) {
        return Err(Invalid::LastRow);
    }
    Ok(Command::AddTable {
        key: key_at(body, 0),
        rows,
    })
}

fn decode_set_maps(body: &[u8]) -> Result<Command, Invalid> {
    if body.len() < 8 {
        return Err(Invalid::SetMapsShort);
    }
    let pid = u32_at(body, 0);
    let count = usize::try_from(u32_at(body, 4)).unwrap_or(usize::MAX);
    if count > RANGES_MAX {
        return Err(Invalid::RangeCount);
    }
    let raw = body.get(8..).unwrap_or(&[]);
    if raw.len() != count * RANGE_BYTES {
        return Err(Invalid::RangesSize);
    }
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(Invalid::Pid);
    }
    let mut ranges: Vec<Range> = Vec::with_capacity(count);
    for bytes in raw.chunks_exact(RANGE_BYTES) {
        let range = Range {
            start: u64_at(bytes, 0),
            end: u64_at(bytes, 8),
            bias: u64_at(bytes, 16),
            key: key_at(bytes, 24),
        };
        if range.start >= range.end {
            return Err(Invalid::EmptyRange);
        }
        if ranges.last().is_some_and(|last| range.start < last.end) {
            return Err(Invalid::RangesOrder);
        }
        ranges.push(range);
    }
    Ok(Command::SetMaps { pid, ranges })
}

/// Memory the module counts for a table beyond its rows and index (src/unwind/store.rs).
pub const TABLE_OVERHEAD: usize = 64;
/// Memory the module counts for one entry of a table's index.
pub const INDEX_ENTRY_BYTES: usize = 4;
/// Rows of a table per entry of its index, at least.
pub const INDEX_ROWS: usize = 1;

/// The index the module keeps over a table (src/unwind/format.rs `index_shape`): entry `b`
/// is the first row whose pc is at least the first row's plus `b << shift`; buckets of code
/// as small as 16 bytes, at most one entry per [`INDEX_ROWS`] rows, plus one. Returns
/// `shift` and the number of entries.
pub fn index_shape(first: u32, last: u32, rows: usize) -> (u32, usize) {
    let span = u64::from(last.saturating_sub(first));
    let most = (rows / INDEX_ROWS) as u64 + 1;
    let mut shift = 4;
    while (span >> shift) + 1 > most {
        shift += 1;
    }
    (shift, ((span >> shift) + 1) as usize)
}

/// Memory the module counts for a table of `rows` (sorted by pc, as a valid write has them).
pub fn table_bytes(rows: &[Row]) -> usize {
    let index = match (rows.first(), rows.last()) {
        (Some(first), Some(last)) => index_shape(first.pc, last.pc, rows.len()).1,
        _ => 0,
    };
    TABLE_OVERHEAD + rows.len() * ROW_BYTES + index * INDEX_ENTRY_BYTES
}
/// Memory the module counts for a process's ranges beyond the ranges themselves.
pub const PROCESS_OVERHEAD: usize = 64;
/// Memory the module counts for one range (three u64 and a pointer to the table).
pub const RANGE_COST: usize = 32;

/// The module's unwind state as a write sees it: the tables loaded, the processes watched,
/// their ranges and the memory bound. [`KernelModel::apply`] takes a write the way the
/// module does, changing nothing when it refuses it.
#[derive(Clone, Debug)]
pub struct KernelModel {
    /// The architecture whose tables the module walks (its own).
    pub arch: Arch,
    /// Tables loaded, by key.
    pub tables: BTreeMap<Key, Vec<Row>>,
    /// Processes watched (thread-group ids).
    pub watched: BTreeSet<u32>,
    /// Ranges of each process that has some.
    pub processes: BTreeMap<u32, Vec<Range>>,
    /// The interpreters described, by process.
    pub pythons: BTreeMap<u32, PythonDescription>,
    /// The bound on table memory, in bytes (`unwind_max_kb` × 1024).
    pub max_bytes: usize,
    /// Whether a `DROP_TABLE` of a table that ranges use is refused with `EBUSY` (as the
    /// module does) rather than left to the ranges (as docs/unwind.md says).
    pub busy_on_drop: bool,
}

impl Default for KernelModel {
    fn default() -> Self {
        KernelModel {
            arch: Arch::native(),
            tables: BTreeMap::new(),
            watched: BTreeSet::new(),
            processes: BTreeMap::new(),
            pythons: BTreeMap::new(),
            max_bytes: 32768 * 1024,
            busy_on_drop: true,
        }
    }
}

impl KernelModel {
    /// A model with the default bound and nothing loaded or watched.
    pub fn new() -> KernelModel {
        KernelModel::default()
    }

    /// Memory in use, as the module counts it.
    pub fn bytes(&self) -> usize {
        let tables: usize = self.tables.values().map(|rows| table_bytes(rows)).sum();
        let processes: usize = self
            .processes
            .values()
            .map(|ranges| PROCESS_OVERHEAD + ranges.len() * RANGE_COST)
            .sum();
        tables + processes
    }

    /// The largest write the module copies in: `unwind_max_kb`, or [`STAGING_MIN`] if
    /// larger (writes in flight together may hold that much; this model has one at a
    /// time).
    pub fn staging_max(&self) -> usize {
        self.max_bytes.max(STAGING_MIN)
    }

    /// Takes one write the way the module does: its header and counts ([`Invalid::in_prefix`]),
    /// then, for an `ADD_TABLE` of a table not loaded, whether the table can fit with the
    /// smallest index (one entry), and whether the write can be copied in at all, both
    /// before its rows are read; then the rest, in full; then applies it, or refuses it and
    /// changes nothing.
    pub fn apply(&mut self, bytes: &[u8]) -> Result<Command, Reject> {
        let decoded = decode(bytes, self.arch);
        if let Err(invalid) = decoded {
            if invalid.in_prefix() {
                return Err(invalid.into());
            }
        }
        if u16_at(bytes, 6) == CommandCode::AddTable as u16
            && !self.tables.contains_key(&key_at(bytes, HEADER_BYTES))
        {
            let rows = u32_at(bytes, HEADER_BYTES + KEY_BYTES) as usize;
            let least = TABLE_OVERHEAD + rows * ROW_BYTES + INDEX_ENTRY_BYTES;
            if self.bytes().saturating_add(least) > self.max_bytes {
                return Err(Reject::NoSpace);
            }
        }
        if bytes.len() > self.staging_max() {
            return Err(Reject::NoSpace);
        }
        let command = decoded?;
        match &command {
            Command::AddTable { key, rows } => {
                if self.tables.contains_key(key) {
                    return Ok(command);
                }
                let needed = table_bytes(rows);
                if self.bytes().saturating_add(needed) > self.max_bytes {
                    return Err(Reject::NoSpace);
                }
                self.tables.insert(*key, rows.clone());
            }
            Command::SetMaps { pid, ranges } => {
                if !self.watched.contains(pid) {
                    return Err(Reject::NotWatched);
                }
                if ranges.iter().any(|r| !self.tables.contains_key(&r.key)) {
                    return Err(Reject::UnknownKey);
                }
                let old = self
                    .processes
                    .get(pid)
                    .map_or(0, |r| PROCESS_OVERHEAD + r.len() * RANGE_COST);
                let new = if ranges.is_empty() {
                    0
                } else {
                    PROCESS_OVERHEAD + ranges.len() * RANGE_COST
                };
                if new > old && (self.bytes() - old).saturating_add(new) > self.max_bytes {
                    return Err(Reject::NoSpace);
                }
                if ranges.is_empty() {
                    self.processes.remove(pid);
                    self.pythons.remove(pid);
                } else {
                    self.processes.insert(*pid, ranges.clone());
                }
            }
            Command::DropTable { key } => {
                if !self.tables.contains_key(key) {
                    return Err(Reject::UnknownKey);
                }
                let used = self
                    .processes
                    .values()
                    .any(|ranges| ranges.iter().any(|r| r.key == *key));
                if used && self.busy_on_drop {
                    return Err(Reject::Busy);
                }
                self.tables.remove(key);
            }
            Command::SetPython { pid, python } => {
                if !self.watched.contains(pid) {
                    return Err(Reject::NotWatched);
                }
                match python {
                    Some(python) => {
                        self.pythons.insert(*pid, *python);
                    }
                    None => {
                        self.pythons.remove(pid);
                    }
                }
            }
        }
        Ok(command)
    }

    /// The row that applies at run-time address `pc` of process `pid`: its range's table,
    /// binary-searched at `pc - bias`, as the walker looks it up. `None` where no range
    /// covers `pc` or the address is below the table's first row.
    pub fn lookup(&self, pid: u32, pc: u64) -> Option<Row> {
        let ranges = self.processes.get(&pid)?;
        let at = ranges.partition_point(|r| r.start <= pc).checked_sub(1)?;
        let range = ranges.get(at).filter(|r| pc < r.end)?;
        let rows = self.tables.get(&range.key)?;
        lookup_row(rows, pc.wrapping_sub(range.bias))
    }
}

/// The row of `rows` (sorted by `pc`) that applies at object address `address`: the last
/// one whose `pc` is not above it. `None` below the first row, or for an address beyond
/// 32 bits (which is past every table's end).
pub fn lookup_row(rows: &[Row], address: u64) -> Option<Row> {
    let Ok(address) = u32::try_from(address) else {
        return rows.last().copied();
    };
    let at = rows.partition_point(|r| r.pc <= address).checked_sub(1)?;
    rows.get(at).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row> {
        vec![
            Row {
                pc: 0x1000,
                cfa: 8,
                rule: Rule::Sp,
                flags: 0,
                slot: 0,
            },
            Row {
                pc: 0x1001,
                cfa: 16,
                rule: Rule::Sp,
                flags: 0,
                slot: -2,
            },
            Row {
                pc: 0x1004,
                cfa: 16,
                rule: Rule::Fp,
                flags: 0,
                slot: -2,
            },
            Row::bare(0x1100, Rule::NotFollowable),
            Row::bare(0x1200, Rule::Outermost),
            Row::bare(0x1300, Rule::NoInfo),
        ]
    }

    #[test]
    fn round_trip() {
        let key = Key([7; 16]);
        let bytes = encode_add_table(&key, Arch::X86_64, &rows());
        assert_eq!(bytes.len(), 16 + 24 + 6 * 8);
        assert_eq!(&bytes[..4], b"MMUW");
        // An x86_64 table is written as before arm64's: its architecture field is 0.
        assert_eq!(&bytes[36..40], &[0, 0, 0, 0]);
        assert_eq!(
            decode(&bytes, Arch::X86_64),
            Ok(Command::AddTable { key, rows: rows() })
        );
        // A module of the other architecture refuses it, and an arm64 table of the same rows.
        assert_eq!(decode(&bytes, Arch::Aarch64), Err(Invalid::AddTableArch));
        let arm = encode_add_table(&key, Arch::Aarch64, &rows());
        assert_eq!(&arm[36..40], &[1, 0, 0, 0]);
        assert_eq!(decode(&arm, Arch::X86_64), Err(Invalid::AddTableArch));
        let ranges = vec![
            Range {
                start: 0x5555_0000_0000,
                end: 0x5555_0000_1000,
                bias: 0x5555_0000_0000,
                key,
            },
            Range {
                start: 0x5555_0000_1000,
                end: 0x5555_0000_3000,
                bias: 0x5555_0000_0000,
                key,
            },
        ];
        let bytes = encode_set_maps(42, &ranges);
        assert_eq!(bytes.len(), 16 + 8 + 80);
        assert_eq!(
            decode(&bytes, Arch::X86_64),
            Ok(Command::SetMaps { pid: 42, ranges })
        );
        let bytes = encode_drop_table(&key);
        assert_eq!(bytes.len(), 32);
        assert_eq!(decode(&bytes, Arch::X86_64), Ok(Command::DropTable { key }));
        let bytes = encode_set_maps(42, &[]);
        assert_eq!(
            decode(&bytes, Arch::X86_64),
            Ok(Command::SetMaps {
                pid: 42,
                ranges: vec![]
            })
        );
    }

    #[test]
    fn row_layout() {
        let row = Row {
            pc: 0x0102_0304,
            cfa: 0x0506,
            rule: Rule::Fp,
            flags: 0,
            slot: -3,
        };
        assert_eq!(row.to_bytes(), [4, 3, 2, 1, 6, 5, 1, 0xfd]);
        // arm64: CFA = SP + 32, the return address at CFA - 24, X29 below it, signed.
        let row = Row {
            pc: 0x10,
            cfa: 32,
            rule: Rule::Sp,
            flags: crate::arch::aarch64::FLAG_FP_BELOW_RA | crate::arch::aarch64::FLAG_RA_SIGNED,
            slot: -3,
        };
        assert_eq!(row.to_bytes(), [0x10, 0, 0, 0, 32, 0, 0x18, 0xfd]);
        assert_eq!(row.check(Arch::Aarch64), Ok(()));
        assert_eq!(row.check(Arch::X86_64), Err(Invalid::RowFlags));
        assert_eq!(
            Arch::Aarch64.saves(&row),
            crate::arch::Saves {
                fp: -4,
                ra: -3,
                signed: true
            }
        );
    }

    #[test]
    fn model_semantics() {
        let mut model = KernelModel::new();
        let key = Key([1; 16]);
        let table = encode_add_table(&key, Arch::X86_64, &rows());
        let range = Range {
            start: 0x1000,
            end: 0x2000,
            bias: 0,
            key,
        };
        assert_eq!(
            model.apply(&encode_set_maps(5, &[range])),
            Err(Reject::NotWatched)
        );
        model.watched.insert(5);
        assert_eq!(
            model.apply(&encode_set_maps(5, &[range])),
            Err(Reject::UnknownKey)
        );
        assert!(model.apply(&table).is_ok());
        assert!(model.apply(&table).is_ok());
        assert!(model.apply(&encode_set_maps(5, &[range])).is_ok());
        assert_eq!(model.lookup(5, 0x1002).map(|r| r.cfa), Some(16));
        assert_eq!(model.lookup(5, 0x0fff), None);
        assert_eq!(model.apply(&encode_drop_table(&key)), Err(Reject::Busy));
        assert!(model.apply(&encode_set_maps(5, &[])).is_ok());
        assert!(model.apply(&encode_drop_table(&key)).is_ok());
        assert_eq!(
            model.apply(&encode_drop_table(&key)),
            Err(Reject::UnknownKey)
        );
        model.max_bytes = 100;
        assert_eq!(model.apply(&table), Err(Reject::NoSpace));
        assert_eq!(Reject::NoSpace.errno(), 28);
    }

    /// A table that cannot fit is refused for its memory before its rows are read (so even
    /// with bad rows); one that fits is refused for its bad rows; a write larger than the
    /// module copies in is refused for its size, even of a table loaded.
    #[test]
    fn model_refuses_memory_before_rows() {
        let mut model = KernelModel::new();
        let key = Key([2; 16]);
        let mut bad = rows();
        bad[0].cfa = 0;
        let bad_table = encode_add_table(&key, Arch::X86_64, &bad);
        assert_eq!(
            model.apply(&bad_table),
            Err(Reject::Invalid(Invalid::RspCfa))
        );
        model.max_bytes = TABLE_OVERHEAD + bad.len() * ROW_BYTES + INDEX_ENTRY_BYTES - 1;
        assert_eq!(model.apply(&bad_table), Err(Reject::NoSpace));
        // A bad header is still refused first.
        let mut short = bad_table.clone();
        short.truncate(HEADER_BYTES + 4);
        assert_eq!(model.apply(&short), Err(Reject::Invalid(Invalid::Length)));

        let mut model = KernelModel::new();
        model.max_bytes = 1024;
        let big: Vec<Row> = (0..STAGING_MIN / ROW_BYTES)
            .map(|i| Row::bare(0x1000 + 16 * i as u32, Rule::NoInfo))
            .collect();
        assert_eq!(
            model.apply(&encode_add_table(&key, Arch::X86_64, &big)),
            Err(Reject::NoSpace)
        );
    }
}
