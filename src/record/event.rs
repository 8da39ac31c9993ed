// SPDX-License-Identifier: GPL-2.0

//! Event records: what the write path stores in the ring.
//!
//! A record is a fixed-size, plain-data copy of everything its line will need, so that the
//! producers (fault hook, probes) only fill in integers and copy a few bytes, in atomic context,
//! without allocating. The text form is produced on the read side, in [`crate::record::text`].

use crate::record::copy::copy_to;
use core::mem::MaybeUninit;

/// Most return addresses a record's user call stack can have: 127, perf's default most
/// (`kernel.perf_event_max_stack`), and the most the packed record's 7-bit length holds.
pub(crate) const STACK_MAX: usize = 127;

/// Why a user call stack ends where it does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum StackEnd {
    /// At the outermost frame: the stack is whole (no `stack_end=` in the line).
    Complete = 0,
    /// At `stack_depth` entries: it goes on.
    Depth = 1,
    /// A frame's return address or saved registers could not be read (or lay outside the
    /// stack).
    Unreadable = 2,
    /// No unwind table covers the frame, and its frame pointer led nowhere.
    NoTable = 3,
    /// The frame's table row cannot be followed (an expression, a signal frame), and its
    /// frame pointer led nowhere; or the task's frames cannot be walked at all (arm64's
    /// AArch32 tasks: the stack is the pc alone).
    Unsupported = 4,
    /// Cut short, or not walked at all, because a reader had fallen behind and the ring was
    /// filling ([`crate::ring::Pressure`]); the event itself is whole.
    Shed = 5,
}

impl StackEnd {
    /// Every reason, indexed by discriminant.
    pub(crate) const ALL: [Self; 6] = [
        Self::Complete,
        Self::Depth,
        Self::Unreadable,
        Self::NoTable,
        Self::Unsupported,
        Self::Shed,
    ];

    /// Its name in the line's `stack_end=`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Depth => "depth",
            Self::Unreadable => "unreadable",
            Self::NoTable => "no_table",
            Self::Unsupported => "unsupported",
            Self::Shed => "shed",
        }
    }
}

/// Most Python frames a record's stack can have, after its native entries.
pub(crate) const PYTHON_MAX: usize = 32;

/// Why the Python frames of a stack end where they do (docs/events.md, `pystack_end=`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum PythonEnd {
    /// At the thread's outermost frame, or no Python frames to walk.
    Complete = 0,
    /// At the most frames there was room for: it goes on.
    Depth = 1,
    /// The thread state or a frame could not be read.
    Unreadable = 2,
    /// A frame's code is no code object, or an address lies outside user space: the
    /// description's offsets, or the frames, are wrong.
    Invalid = 3,
    /// The thread has no Python thread state now (another thread holds the GIL, or it runs
    /// no Python code).
    NoThread = 4,
}

impl PythonEnd {
    /// Every reason, indexed by discriminant.
    pub(crate) const ALL: [Self; 5] = [
        Self::Complete,
        Self::Depth,
        Self::Unreadable,
        Self::Invalid,
        Self::NoThread,
    ];

    /// Its name in the line's `pystack_end=`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Depth => "depth",
            Self::Unreadable => "unreadable",
            Self::Invalid => "invalid",
            Self::NoThread => "no_thread",
        }
    }
}

/// One Python frame as a stack entry holds it: the code object's address (below 2^47) in
/// the low 48 bits, the instruction offset in code units in the next 15, and in the top bit
/// whether it is the outermost frame of one run of the eval loop (the frame a C caller
/// entered it with).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct PythonFrame {
    pub(crate) code: u64,
    /// Code units from the code's first instruction; [`PythonFrame::OFFSET_UNKNOWN`] when
    /// out of range.
    pub(crate) offset: u16,
    pub(crate) entry: bool,
}

impl PythonFrame {
    /// The offset of an instruction pointer outside the code's first 32 767 code units.
    pub(crate) const OFFSET_UNKNOWN: u16 = 0x7fff;
    const CODE_MASK: u64 = (1 << 48) - 1;

    /// Its stack entry.
    pub(crate) fn pack(self) -> u64 {
        (self.code & Self::CODE_MASK)
            | (u64::from(self.offset & Self::OFFSET_UNKNOWN) << 48)
            | (u64::from(self.entry) << 63)
    }

    /// The frame of a stack entry.
    pub(crate) fn unpack(entry: u64) -> Self {
        Self {
            code: entry & Self::CODE_MASK,
            // CAST: 15 bits.
            offset: ((entry >> 48) & u64::from(Self::OFFSET_UNKNOWN)) as u16,
            entry: entry >> 63 != 0,
        }
    }
}

/// Bytes of inline text a record can carry (file path, marker text, exec file name).
pub(crate) const TEXT_CAPACITY: usize = 112;

/// What happened. The discriminant indexes the per-kind counters of [`crate::ring::Stats`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum Kind {
    Fault = 0,
    Mmap,
    Munmap,
    Mremap,
    Brk,
    Mprotect,
    Madvise,
    Mlock,
    Mlock2,
    Munlock,
    Mlockall,
    Munlockall,
    Fsync,
    Msync,
    PkeyMprotect,
    Mseal,
    ProcessMadvise,
    Shmat,
    Shmdt,
    Mark,
    Exec,
    Fork,
    Exit,
    Rss,
    Gen,
    Cgroup,
    Dropped,
}

impl Kind {
    /// Number of kinds.
    pub(crate) const COUNT: usize = Kind::Dropped as usize + 1;

    /// Every kind, in discriminant order.
    pub(crate) const ALL: [Kind; Kind::COUNT] = [
        Kind::Fault,
        Kind::Mmap,
        Kind::Munmap,
        Kind::Mremap,
        Kind::Brk,
        Kind::Mprotect,
        Kind::Madvise,
        Kind::Mlock,
        Kind::Mlock2,
        Kind::Munlock,
        Kind::Mlockall,
        Kind::Munlockall,
        Kind::Fsync,
        Kind::Msync,
        Kind::PkeyMprotect,
        Kind::Mseal,
        Kind::ProcessMadvise,
        Kind::Shmat,
        Kind::Shmdt,
        Kind::Mark,
        Kind::Exec,
        Kind::Fork,
        Kind::Exit,
        Kind::Rss,
        Kind::Gen,
        Kind::Cgroup,
        Kind::Dropped,
    ];

    /// Whether the kind is a system call (its line ends with `dur=`).
    pub(crate) fn is_syscall(self) -> bool {
        !matches!(
            self,
            Kind::Fault
                | Kind::Mark
                | Kind::Exec
                | Kind::Fork
                | Kind::Exit
                | Kind::Rss
                | Kind::Gen
                | Kind::Cgroup
                | Kind::Dropped
        )
    }

    /// How many of [`Event::args`] the kind uses (its line shows no other): the rest are
    /// neither stored in the ring nor read back. For a system call, the arguments its line
    /// shows.
    #[inline]
    pub(crate) fn args(self) -> usize {
        match self {
            Kind::Munlockall | Kind::Mark | Kind::Exit => 0,
            Kind::Brk
            | Kind::Mlockall
            | Kind::Fsync
            | Kind::Shmdt
            | Kind::Fork
            | Kind::Cgroup
            | Kind::Dropped => 1,
            Kind::Munmap | Kind::Mlock | Kind::Munlock | Kind::Gen => 2,
            Kind::Fault
            | Kind::Mprotect
            | Kind::Madvise
            | Kind::Mlock2
            | Kind::Msync
            | Kind::Mseal
            | Kind::Shmat
            | Kind::Exec => 3,
            Kind::PkeyMprotect => 4,
            Kind::Mremap | Kind::ProcessMadvise => 5,
            Kind::Mmap | Kind::Rss => 6,
        }
    }

    /// The kind's name in the event stream.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Fault => "fault",
            Kind::Mmap => "mmap",
            Kind::Munmap => "munmap",
            Kind::Mremap => "mremap",
            Kind::Brk => "brk",
            Kind::Mprotect => "mprotect",
            Kind::Madvise => "madvise",
            Kind::Mlock => "mlock",
            Kind::Mlock2 => "mlock2",
            Kind::Munlock => "munlock",
            Kind::Mlockall => "mlockall",
            Kind::Munlockall => "munlockall",
            Kind::Fsync => "fsync",
            Kind::Msync => "msync",
            Kind::PkeyMprotect => "pkey_mprotect",
            Kind::Mseal => "mseal",
            Kind::ProcessMadvise => "process_madvise",
            Kind::Shmat => "shmat",
            Kind::Shmdt => "shmdt",
            Kind::Mark => "mark",
            Kind::Exec => "exec",
            Kind::Fork => "fork",
            Kind::Exit => "exit",
            Kind::Rss => "rss",
            Kind::Gen => "gen",
            Kind::Cgroup => "cgroup",
            Kind::Dropped => "dropped",
        }
    }
}

/// What resolved a fault (`enum mm_fault_handler` of the kernel patch).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum FaultType {
    Anon = 0,
    File,
    Swap,
    WriteProtect,
    Spurious,
    Numa,
    Hugetlb,
    Other,
    Access,
}

impl FaultType {
    /// The type's name in the event stream.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultType::Anon => "anon",
            FaultType::File => "file",
            FaultType::Swap => "swap",
            FaultType::WriteProtect => "wp",
            FaultType::Spurious => "spurious",
            FaultType::Numa => "numa",
            FaultType::Hugetlb => "hugetlb",
            FaultType::Other => "other",
            FaultType::Access => "access",
        }
    }

    /// The type of discriminant `value`.
    pub(crate) fn from_u8(value: u8) -> Option<Self> {
        [
            FaultType::Anon,
            FaultType::File,
            FaultType::Swap,
            FaultType::WriteProtect,
            FaultType::Spurious,
            FaultType::Numa,
            FaultType::Hugetlb,
            FaultType::Other,
            FaultType::Access,
        ]
        .get(usize::from(value))
        .copied()
    }

    /// Whether the type maps pages, so that its lines report `pages=` when not 1.
    pub(crate) fn maps_pages(self) -> bool {
        matches!(
            self,
            FaultType::Anon | FaultType::File | FaultType::Swap | FaultType::WriteProtect
        )
    }
}

/// Bits of [`Event::flags`] for [`Kind::Fault`].
pub(crate) mod fault_flags {
    /// The access was a write.
    pub(crate) const WRITE: u32 = 1 << 0;
    /// The access was an instruction fetch.
    pub(crate) const EXEC: u32 = 1 << 1;
    /// The fault came from user mode.
    pub(crate) const USER: u32 = 1 << 2;
    /// The fault was handled at PMD level.
    pub(crate) const HUGE: u32 = 1 << 3;
    /// The fault needed I/O.
    pub(crate) const MAJOR: u32 = 1 << 4;
    /// This attempt repeats one that returned `VM_FAULT_RETRY`.
    pub(crate) const RETRY: u32 = 1 << 5;
}

/// One event, as the producers fill it in and the reader formats it ([`crate::record::packed`] is
/// its compact form in the ring).
///
/// The meaning of `args`, `ret` and `text` depends on `kind`; [`crate::record::text`] documents it by
/// printing it. All fields are plain data: a zeroed record is valid (and prints as a fault).
#[derive(Clone, Copy)]
pub(crate) struct Event {
    /// CLOCK_MONOTONIC, nanoseconds. The ring stamps a record with the time it is written;
    /// a system call's event, until then, holds the time the call began.
    pub(crate) time_ns: u64,
    /// Thread-group id in the initial pid namespace.
    pub(crate) pid: i32,
    /// Thread id in the initial pid namespace.
    pub(crate) tid: i32,
    pub(crate) kind: Kind,
    /// For faults: the [`FaultType`].
    pub(crate) fault_type: FaultType,
    /// Number of valid bytes in `text`.
    text_len: u8,
    /// `text` was cut to fit: its end is missing.
    pub(crate) text_truncated: bool,
    /// `text` was cut to fit: its start is missing (a path keeps its file name).
    pub(crate) text_head_cut: bool,
    /// Kind-specific flag bits ([`fault_flags`]).
    pub(crate) flags: u32,
    /// Why the record's user call stack ends where it does (with a stack only).
    pub(crate) stack_end: StackEnd,
    /// How many of the stack's entries, after the native ones, are Python frames.
    pub(crate) python_frames: u8,
    /// Why the Python frames end where they do.
    pub(crate) python_end: PythonEnd,
    /// Kind-specific arguments (syscall arguments in order; fault address, ip and pages, or
    /// for an access its generation).
    pub(crate) args: [u64; 6],
    /// Syscall return value, exit code, child pid.
    pub(crate) ret: i64,
    /// Syscalls: nanoseconds spent in the call. When 0 as the event is written, the record's
    /// duration is its time stamp minus `time_ns`, the call's start ([`crate::record::packed::encode`]):
    /// the exit handler leaves it 0 unless something slow (a user stack walk) comes between
    /// the call's return and the record.
    pub(crate) dur_ns: u64,
    /// Kind-specific text (not NUL-terminated): the first `text_len` bytes are initialised.
    /// The rest is left uninitialised, so that making an event does not clear (and copying
    /// one need not copy) bytes no kind uses but a few.
    text: MaybeUninit<[u8; TEXT_CAPACITY]>,
}

impl Event {
    /// A record of `kind` for thread `tid` of process `pid`. The ring stamps its time when it
    /// is written.
    pub(crate) fn new(kind: Kind, pid: i32, tid: i32) -> Self {
        Self {
            time_ns: 0,
            pid,
            tid,
            kind,
            ..Self::zeroed()
        }
    }

    /// An empty event.
    pub(crate) const fn zeroed() -> Self {
        Self {
            time_ns: 0,
            pid: 0,
            tid: 0,
            kind: Kind::Fault,
            fault_type: FaultType::Anon,
            text_len: 0,
            text_truncated: false,
            text_head_cut: false,
            flags: 0,
            stack_end: StackEnd::Complete,
            python_frames: 0,
            python_end: PythonEnd::Complete,
            args: [0; 6],
            ret: 0,
            dur_ns: 0,
            // INVARIANT: `text_len` is 0.
            text: MaybeUninit::uninit(),
        }
    }

    /// Makes this an empty event, as [`Event::zeroed`] is, without writing the text's bytes.
    pub(crate) fn clear(&mut self) {
        self.time_ns = 0;
        self.pid = 0;
        self.tid = 0;
        self.kind = Kind::Fault;
        self.fault_type = FaultType::Anon;
        // INVARIANT: no byte of `text` is valid.
        self.text_len = 0;
        self.text_truncated = false;
        self.text_head_cut = false;
        self.flags = 0;
        self.stack_end = StackEnd::Complete;
        self.python_frames = 0;
        self.python_end = PythonEnd::Complete;
        self.args = [0; 6];
        self.ret = 0;
        self.dur_ns = 0;
    }

    /// Stores `bytes` as the record's text, cut to [`TEXT_CAPACITY`].
    pub(crate) fn set_text(&mut self, bytes: &[u8]) {
        let kept = bytes.get(..TEXT_CAPACITY).unwrap_or(bytes);
        let len = kept.len();
        // SAFETY: `text` has room for `TEXT_CAPACITY >= len` bytes, and does not overlap `kept`
        // (borrowed while `self` is mutably borrowed).
        unsafe { copy_to(self.text.as_mut_ptr().cast::<u8>(), kept) };
        // INVARIANT: the first `len` bytes of `text` were just written.
        // CAST: `len <= TEXT_CAPACITY < 256`.
        self.text_len = len as u8;
        self.text_truncated = len < bytes.len();
    }

    /// Stores the end of `bytes` as the record's text: all of it, or its last
    /// [`TEXT_CAPACITY`] bytes with the start marked as cut.
    pub(crate) fn set_text_tail(&mut self, bytes: &[u8]) {
        let skip = bytes.len().saturating_sub(TEXT_CAPACITY);
        self.set_text(&bytes[skip..]);
        self.text_head_cut = skip > 0;
    }

    /// Stores a NUL-terminated kernel string as the record's text.
    ///
    /// # Safety
    ///
    /// `ptr` must be null or point to a NUL-terminated string valid for reads.
    pub(crate) unsafe fn set_text_from_c(&mut self, ptr: *const u8) {
        if ptr.is_null() {
            return;
        }
        let mut len = 0;
        // SAFETY: The caller guarantees a NUL-terminated string; reading stops at the NUL or
        // after one byte past the capacity.
        while len <= TEXT_CAPACITY && unsafe { *ptr.add(len) } != 0 {
            len += 1;
        }
        let stored = len.min(TEXT_CAPACITY);
        // SAFETY: `stored` bytes before the NUL (or the capacity) were just read.
        let bytes = unsafe { core::slice::from_raw_parts(ptr, stored) };
        self.set_text(bytes);
        self.text_truncated = len > TEXT_CAPACITY;
    }

    /// The record's text.
    pub(crate) fn text(&self) -> &[u8] {
        // SAFETY: The first `text_len <= TEXT_CAPACITY` bytes of `text` are initialised (see
        // the field).
        unsafe {
            core::slice::from_raw_parts(
                self.text.as_ptr().cast::<u8>(),
                usize::from(self.text_len).min(TEXT_CAPACITY),
            )
        }
    }
}
