//! The typed event model of docs/events.md (its line form, `Display`, is
//! [`crate::stream::line`]'s).

use std::fmt;

use serde::{Serialize, Serializer};

use crate::stream::errno::Errno;
use crate::stream::escaped::EscapedStr;
use crate::stream::flags::{
    Advice, Mlock2Flags, MlockallFlags, MmapFlags, MremapFlags, MsyncFlags, OtherFlags, Prot,
    ShmatFlags,
};
use crate::stream::writer::Ret;

/// A CLOCK_MONOTONIC time: `<seconds>.<nanoseconds>` with nine nanosecond digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Timestamp {
    /// Whole seconds.
    pub secs: u64,
    /// Nanoseconds, 0..=999_999_999.
    pub nanos: u32,
}

impl Timestamp {
    /// Nanoseconds per second.
    pub const NANOS_PER_SEC: u32 = 1_000_000_000;

    /// The time as nanoseconds since the clock's origin (saturating).
    pub fn as_nanos(self) -> u128 {
        u128::from(self.secs) * u128::from(Self::NANOS_PER_SEC) + u128::from(self.nanos)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.secs, self.nanos)
    }
}

impl Serialize for Timestamp {
    /// Serialised as the exact text form (`"5.103884211"`): a JSON float would lose digits.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The result of a system call: the returned value, or the errno of a failure.
pub type SyscallResult = Result<u64, Errno>;

/// `type=` of a fault: which kernel path handled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultType {
    /// First touch of anonymous memory (`do_anonymous_page`).
    Anon,
    /// A file-backed or shmem page (`do_fault`).
    File,
    /// A swap-in (`do_swap_page`).
    Swap,
    /// A write to a present, write-protected page (`do_wp_page`): CoW or write-notify.
    Wp,
    /// The entry was already present: nothing was mapped.
    Spurious,
    /// A NUMA hinting fault.
    Numa,
    /// A hugetlbfs fault.
    Hugetlb,
    /// An access-sampling fault.
    Access,
    /// Anything else the kernel accounts (userfaultfd write-protect, device-private PMDs).
    Other,
}

impl FaultType {
    /// Every fault type, in the order of docs/events.md.
    pub const ALL: [FaultType; 9] = [
        FaultType::Anon,
        FaultType::File,
        FaultType::Swap,
        FaultType::Wp,
        FaultType::Spurious,
        FaultType::Numa,
        FaultType::Hugetlb,
        FaultType::Access,
        FaultType::Other,
    ];

    /// The wire name (`anon`, `file`, `swap`, `wp`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FaultType::Anon => "anon",
            FaultType::File => "file",
            FaultType::Swap => "swap",
            FaultType::Wp => "wp",
            FaultType::Spurious => "spurious",
            FaultType::Numa => "numa",
            FaultType::Hugetlb => "hugetlb",
            FaultType::Access => "access",
            FaultType::Other => "other",
        }
    }

    /// Parses the wire name.
    pub fn parse(text: &str) -> Option<FaultType> {
        FaultType::ALL
            .into_iter()
            .find(|fault_type| fault_type.as_str() == text)
    }
}

/// `at=` of an `rss` line: why the counters were taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RssAt {
    /// The address space is released at exit.
    Exit,
    /// The old address space is released by exec.
    Exec,
    /// After a `mark` line.
    Mark,
}

impl RssAt {
    /// The wire name (`exit`, `exec`, `mark`).
    pub fn as_str(self) -> &'static str {
        match self {
            RssAt::Exit => "exit",
            RssAt::Exec => "exec",
            RssAt::Mark => "mark",
        }
    }

    /// Parses the wire name.
    pub fn parse(text: &str) -> Option<RssAt> {
        match text {
            "exit" => Some(RssAt::Exit),
            "exec" => Some(RssAt::Exec),
            "mark" => Some(RssAt::Mark),
            _ => None,
        }
    }
}

/// `stack=`: user return addresses, innermost first (`0xA,0xB,...`), and why the stack ends
/// there (`stack_end=`, absent for a whole stack).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Stack(pub Vec<u64>, pub StackEnd);

/// `stack_end=`: why a user call stack ends before its outermost frame (docs/events.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StackEnd {
    /// No `stack_end=`: the stack reaches its outermost frame.
    #[default]
    Complete,
    /// `depth`: `stack_depth` entries were reached and the stack goes on.
    Depth,
    /// `unreadable`: a return address or saved register could not be read.
    Unreadable,
    /// `no_table`: no unwind table covers the frame and its frame pointer led nowhere.
    NoTable,
    /// `unsupported`: the frame's table row cannot be followed and its frame pointer led
    /// nowhere.
    Unsupported,
    /// `shed`: the module cut the stack short, or did not walk it (no `stack=` then), because
    /// the reader had fallen behind and the ring was filling: the event itself is whole.
    Shed,
}

impl StackEnd {
    /// Every reason, in order.
    pub const ALL: [StackEnd; 6] = [
        StackEnd::Complete,
        StackEnd::Depth,
        StackEnd::Unreadable,
        StackEnd::NoTable,
        StackEnd::Unsupported,
        StackEnd::Shed,
    ];

    /// Its name in `stack_end=` (`complete` for a whole stack, which has none).
    pub fn name(self) -> &'static str {
        match self {
            StackEnd::Complete => "complete",
            StackEnd::Depth => "depth",
            StackEnd::Unreadable => "unreadable",
            StackEnd::NoTable => "no_table",
            StackEnd::Unsupported => "unsupported",
            StackEnd::Shed => "shed",
        }
    }

    /// The reason named `text` in a line (`complete` is never written).
    pub fn parse(text: &str) -> Option<StackEnd> {
        StackEnd::ALL
            .into_iter()
            .skip(1)
            .find(|end| end.name() == text)
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, address) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{address:#x}")?;
        }
        Ok(())
    }
}

impl Serialize for Stack {
    /// The fields of an event's stack (flattened into it): `stack`, an array of hex
    /// strings, innermost first, and `stack_end` (its `stack_end=` name) when the stack
    /// ends before its outermost frame.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let addresses: Vec<String> = self.0.iter().map(|a| format!("{a:#x}")).collect();
        let whole = self.1 == StackEnd::Complete;
        let mut map = serializer.serialize_map(Some(if whole { 1 } else { 2 }))?;
        map.serialize_entry("stack", &addresses)?;
        if !whole {
            map.serialize_entry("stack_end", self.1.name())?;
        }
        map.end()
    }
}

/// One Python frame of `pystack=`: `0xCODE+OFFSET`, `*` after it for the outermost frame of
/// one run of the interpreter's eval loop (docs/events.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PythonFrame {
    /// The code object's address.
    pub code: u64,
    /// The instruction's offset in code units from the code's first
    /// ([`PythonFrame::OFFSET_UNKNOWN`]: out of range).
    pub offset: u16,
    /// The outermost frame of its run of the eval loop (a C function called into it there).
    pub entry: bool,
}

impl PythonFrame {
    /// The offset the module writes for an instruction it cannot place.
    pub const OFFSET_UNKNOWN: u16 = 0x7fff;
}

/// `pystack_end=`: why the Python frames end where they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PythonEnd {
    /// No `pystack_end=`: at the thread's outermost frame.
    #[default]
    Complete,
    /// `depth`: the most frames there was room for.
    Depth,
    /// `unreadable`: the thread state or a frame could not be read.
    Unreadable,
    /// `invalid`: a frame's code is no code object, or an address is out of range.
    Invalid,
    /// `no_thread`: the thread has no Python thread state now.
    NoThread,
}

impl PythonEnd {
    /// Every reason, in order.
    pub const ALL: [PythonEnd; 5] = [
        PythonEnd::Complete,
        PythonEnd::Depth,
        PythonEnd::Unreadable,
        PythonEnd::Invalid,
        PythonEnd::NoThread,
    ];

    /// Its name in `pystack_end=`.
    pub fn name(self) -> &'static str {
        match self {
            PythonEnd::Complete => "complete",
            PythonEnd::Depth => "depth",
            PythonEnd::Unreadable => "unreadable",
            PythonEnd::Invalid => "invalid",
            PythonEnd::NoThread => "no_thread",
        }
    }

    /// The reason named `text` (`complete` is never written).
    pub fn parse(text: &str) -> Option<PythonEnd> {
        PythonEnd::ALL
            .into_iter()
            .skip(1)
            .find(|end| end.name() == text)
    }
}

/// `pystack=` and `pystack_end=`: the Python frames of a stack, innermost first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PythonStack(pub Vec<PythonFrame>, pub PythonEnd);

impl Serialize for PythonStack {
    /// `pystack`: `0xCODE+OFFSET` strings (`*` marking an entry frame), and `pystack_end`
    /// when they end early.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let frames: Vec<String> = self
            .0
            .iter()
            .map(|f| {
                let star = if f.entry { "*" } else { "" };
                format!("{:#x}+{}{star}", f.code, f.offset)
            })
            .collect();
        let whole = self.1 == PythonEnd::Complete;
        let mut map = serializer.serialize_map(Some(if whole { 1 } else { 2 }))?;
        map.serialize_entry("pystack", &frames)?;
        if !whole {
            map.serialize_entry("pystack_end", self.1.name())?;
        }
        map.end()
    }
}

/// `access=` of a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Access {
    /// `R`: a read.
    #[serde(rename = "R")]
    Read,
    /// `W`: a write.
    #[serde(rename = "W")]
    Write,
    /// `X`: an instruction fetch.
    #[serde(rename = "X")]
    Exec,
}

impl Access {
    /// The wire letter (`R`, `W`, `X`).
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "R",
            Access::Write => "W",
            Access::Exec => "X",
        }
    }
}

/// One line of the event stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Event<'a> {
    /// When the module recorded the event (CLOCK_MONOTONIC).
    pub time: Timestamp,
    /// Process id (thread-group id) in the initial pid namespace; 0 for `lost`.
    pub pid: u32,
    /// Thread id; 0 for `lost`.
    pub tid: u32,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind<'a>,
    /// `dur=`: nanoseconds spent in the call (system-call kinds only; `None` when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<u64>,
    /// `stack=`: the user call stack (fault and system-call kinds only; `None` when absent);
    /// in JSON `stack` and, for a stack that ends early, `stack_end`.
    #[serde(flatten)]
    pub stack: Option<Stack>,
    /// `pystack=`: the Python frames beside the stack (`None` when absent: no interpreter
    /// described); in JSON `pystack` and `pystack_end`.
    #[serde(flatten)]
    pub python: Option<PythonStack>,
}

/// Defines [`EventKind`] from one table: each variant with its wire name, its class
/// (`fault`, `syscall` or `other`) and its fields. From the table come the enum (with the
/// wire name as its JSON `kind`), [`KIND_NAMES`], [`EventKind::name`],
/// [`EventKind::is_syscall`], [`EventKind::may_have_stack`] and [`EventKind::into_owned`].
macro_rules! event_kinds {
    (@syscall syscall) => { true };
    (@syscall $class:ident) => { false };
    (@stack other) => { false };
    (@stack $class:ident) => { true };
    (
        $(#[$meta:meta])*
        pub enum $name:ident<$lt:lifetime> {
            $(
                $(#[$variant_meta:meta])*
                $wire:literal $class:ident $variant:ident {
                    $( $(#[$field_meta:meta])* $field:ident : $ty:ty ),* $(,)?
                }
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum $name<$lt> {
            $(
                $(#[$variant_meta])*
                #[serde(rename = $wire)]
                $variant { $( $(#[$field_meta])* $field: $ty ),* },
            )*
        }

        /// The kind names, in the order of docs/events.md.
        pub const KIND_NAMES: [&str; <[&str]>::len(&[$($wire),*])] = [$($wire),*];

        impl $name<'_> {
            /// The wire name of the kind (`fault`, `mmap`, ...).
            pub fn name(&self) -> &'static str {
                match self {
                    $( $name::$variant { .. } => $wire, )*
                }
            }

            /// True for the memory-management system calls (the kinds that may carry
            /// `dur=`).
            pub fn is_syscall(&self) -> bool {
                match self {
                    $( $name::$variant { .. } => event_kinds!(@syscall $class), )*
                }
            }

            /// True for the kinds that may carry `stack=`: faults and system calls.
            pub fn may_have_stack(&self) -> bool {
                match self {
                    $( $name::$variant { .. } => event_kinds!(@stack $class), )*
                }
            }

            /// A copy that no longer borrows from the line.
            pub fn into_owned(self) -> $name<'static> {
                match self {
                    $(
                        $name::$variant { $($field),* } => $name::$variant {
                            $( $field: IntoOwned::into_owned($field) ),*
                        },
                    )*
                }
            }
        }
    };
}

/// A field of an [`EventKind`] that can stop borrowing from the line.
trait IntoOwned {
    type Owned;
    fn into_owned(self) -> Self::Owned;
}

/// Field types that own their value already.
macro_rules! owned_as_is {
    ($($ty:ty),* $(,)?) => {
        $(
            impl IntoOwned for $ty {
                type Owned = $ty;
                fn into_owned(self) -> $ty {
                    self
                }
            }
        )*
    };
}

owned_as_is!(
    u32,
    i32,
    u64,
    i64,
    bool,
    Option<u64>,
    SyscallResult,
    FaultType,
    Access,
    RssAt,
    Prot,
    Advice,
    MmapFlags,
    MremapFlags,
    Mlock2Flags,
    MlockallFlags,
    MsyncFlags,
    OtherFlags,
    ShmatFlags,
);

impl IntoOwned for EscapedStr<'_> {
    type Owned = EscapedStr<'static>;
    fn into_owned(self) -> EscapedStr<'static> {
        EscapedStr::into_owned(self)
    }
}

impl IntoOwned for Option<EscapedStr<'_>> {
    type Owned = Option<EscapedStr<'static>>;
    fn into_owned(self) -> Option<EscapedStr<'static>> {
        self.map(EscapedStr::into_owned)
    }
}

event_kinds! {
    /// The kind of an event with its typed fields, one variant per kind of docs/events.md.
    ///
    /// Syscall variants carry the raw arguments the process passed and the call's result.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    pub enum EventKind<'a> {
        /// A page fault taken by a watched process.
        "fault" fault Fault {
            /// Which fault path handled it.
            #[serde(rename = "type")]
            fault_type: FaultType,
            /// The faulting access.
            access: Access,
            /// Faulting virtual address (exact).
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// User instruction pointer (0 when `user` is false).
            #[serde(serialize_with = "hex")]
            ip: u64,
            /// False (`user=0`) when the kernel faulted on the process's behalf.
            user: bool,
            /// A PMD-level (transparent huge page) fault (`huge=1`).
            huge: bool,
            /// The fault needed I/O (`major=1`).
            major: bool,
            /// A repeat after VM_FAULT_RETRY (`retry=1`).
            retry: bool,
            /// Pages this fault mapped (`pages=`; 1 when absent, 0 when it mapped nothing).
            pages: u64,
            /// `gen=`: the access-sampling generation of a `type=access` fault (its first
            /// access to a page armed in generation N); `None` when absent.
            #[serde(skip_serializing_if = "Option::is_none")]
            gen: Option<u64>,
        },
        /// `mmap(addr, len, prot, flags, fd, off)`.
        "mmap" syscall Mmap {
            /// Requested address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// Requested protection.
            prot: Prot,
            /// `MAP_*` flags.
            flags: MmapFlags,
            /// File descriptor (-1 for anonymous mappings).
            fd: i64,
            /// File offset.
            off: i64,
            /// Mapped address or error.
            #[serde(serialize_with = "ret_hex_json")]
            ret: SyscallResult,
            /// Path of the mapped file, for a file mapping.
            #[serde(skip_serializing_if = "Option::is_none")]
            file: Option<EscapedStr<'a>>,
        },
        /// `munmap(addr, len)`.
        "munmap" syscall Munmap {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `mremap(old, old_len, new_len, flags, new)`.
        "mremap" syscall Mremap {
            /// Old address.
            #[serde(serialize_with = "hex")]
            old: u64,
            /// Old length.
            old_len: u64,
            /// New length.
            new_len: u64,
            /// `MREMAP_*` flags.
            flags: MremapFlags,
            /// Requested new address (with MREMAP_FIXED).
            #[serde(serialize_with = "hex")]
            new: u64,
            /// New address or error.
            #[serde(serialize_with = "ret_hex_json")]
            ret: SyscallResult,
        },
        /// `brk(req)`: never fails, returns the resulting break.
        "brk" syscall Brk {
            /// Requested break.
            #[serde(serialize_with = "hex")]
            req: u64,
            /// The resulting break.
            #[serde(serialize_with = "hex")]
            ret: u64,
        },
        /// `mprotect(addr, len, prot)`.
        "mprotect" syscall Mprotect {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// New protection.
            prot: Prot,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `madvise(addr, len, advice)`.
        "madvise" syscall Madvise {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// The advice.
            advice: Advice,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `mlock(addr, len)`.
        "mlock" syscall Mlock {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `mlock2(addr, len, flags)`.
        "mlock2" syscall Mlock2 {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// `MLOCK_*` flags.
            flags: Mlock2Flags,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `munlock(addr, len)`.
        "munlock" syscall Munlock {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `mlockall(flags)`.
        "mlockall" syscall Mlockall {
            /// `MCL_*` flags.
            flags: MlockallFlags,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `munlockall()`.
        "munlockall" syscall Munlockall {
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `fsync(fd)`, used as an in-stream marker.
        "fsync" syscall Fsync {
            /// File descriptor.
            fd: i64,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `msync(addr, len, flags)`.
        "msync" syscall Msync {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// `MS_*` flags.
            flags: MsyncFlags,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `pkey_mprotect(addr, len, prot, pkey)`.
        "pkey_mprotect" syscall PkeyMprotect {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// New protection.
            prot: Prot,
            /// Protection key.
            pkey: i64,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `mseal(addr, len, flags)`.
        "mseal" syscall Mseal {
            /// Start address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Length in bytes.
            len: u64,
            /// Flags (none defined).
            flags: OtherFlags,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `process_madvise(pidfd, vec, vlen, advice, flags)`.
        "process_madvise" syscall ProcessMadvise {
            /// The target's pidfd.
            pidfd: i64,
            /// Address of the iovec array.
            #[serde(serialize_with = "hex")]
            vec: u64,
            /// Number of iovecs.
            vlen: u64,
            /// The advice.
            advice: Advice,
            /// Flags (none defined).
            flags: OtherFlags,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// `shmat(shmid, addr, flags)`.
        "shmat" syscall Shmat {
            /// The segment.
            shmid: i64,
            /// Requested address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// `SHM_*` flags.
            flags: ShmatFlags,
            /// Attach address or error.
            #[serde(serialize_with = "ret_hex_json")]
            ret: SyscallResult,
        },
        /// `shmdt(addr)`.
        "shmdt" syscall Shmdt {
            /// The attach address.
            #[serde(serialize_with = "hex")]
            addr: u64,
            /// Result.
            #[serde(serialize_with = "ret_dec_json")]
            ret: SyscallResult,
        },
        /// A line written to `/proc/memmon/marker`.
        "mark" other Mark {
            /// The text (trailing newline removed).
            text: EscapedStr<'a>,
        },
        /// The address space was replaced by a new program.
        "exec" other Exec {
            /// The new command name.
            comm: EscapedStr<'a>,
            /// The executed file.
            filename: EscapedStr<'a>,
        },
        /// The process forked a new process.
        "fork" other Fork {
            /// The child's pid.
            child: u32,
            /// Whether the child is watched too (follow-children).
            watched: bool,
        },
        /// The last thread of the process exited.
        "exit" other Exit {
            /// Exit status as wait(2) encodes it.
            code: i32,
        },
        /// The process's memory counters when its address space is released or after a mark.
        "rss" other Rss {
            /// RssAnon in bytes.
            anon: u64,
            /// RssFile in bytes.
            file: u64,
            /// RssShmem in bytes.
            shmem: u64,
            /// VmSwap in bytes.
            swap: u64,
            /// VmHWM in bytes.
            peak: u64,
            /// Why the counters were taken.
            at: RssAt,
        },
        /// An access-sampling generation starts for the process: `armed` of its resident
        /// pages now trap on their next access (`fault type=access ... gen=N`).
        "gen" other Gen {
            /// The generation (counts from 1 per module load).
            n: u64,
            /// Pages armed in this process for this generation.
            armed: u64,
        },
        /// The process is watched as a member of a watched cgroup (from the `c:PATH` write,
        /// its fork or exec in it), or was moved while in one: the cgroup it is in.
        "cgroup" other Cgroup {
            /// The cgroup's id (the inode number of its directory).
            id: u64,
            /// Its path from the root of the hierarchy, as the initial cgroup namespace sees
            /// it; a longer one than fits keeps its end (`...` before it).
            path: EscapedStr<'a>,
        },
        /// This reader missed `count` events that were overwritten.
        "lost" other Lost {
            /// Number of events missed.
            count: u64,
        },
        /// The module did not record `faults` faults of the process (the line's pid; 0: of
        /// processes it could not keep apart), because a reader had fallen behind and the
        /// ring was nearly full: it keeps room for the calls, execs, forks and exits the
        /// address-space model needs. Every reader sees it.
        "dropped" other Dropped {
            /// Number of faults not recorded.
            faults: u64,
        },
    }
}

impl Event<'_> {
    /// A copy that no longer borrows from the line.
    pub fn into_owned(self) -> Event<'static> {
        Event {
            time: self.time,
            pid: self.pid,
            tid: self.tid,
            kind: self.kind.into_owned(),
            dur: self.dur,
            stack: self.stack,
            python: self.python,
        }
    }
}

fn hex<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("{value:#x}"))
}

/// JSON form of an address-returning result: `"0x7f.."` or `"-ENOMEM"`.
fn ret_hex_json<S: Serializer>(ret: &SyscallResult, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&Ret::hex(*ret))
}

/// JSON form of other results: a number on success, `"-ENOMEM"` on failure.
fn ret_dec_json<S: Serializer>(ret: &SyscallResult, serializer: S) -> Result<S::Ok, S::Error> {
    match ret {
        Ok(value) => serializer.serialize_u64(*value),
        Err(_) => serializer.collect_str(&Ret::dec(*ret)),
    }
}
