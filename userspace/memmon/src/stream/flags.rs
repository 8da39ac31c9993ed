//! Typed bit sets for the `flags=` and `prot=` fields, and the `advice=` value.
//!
//! Flag sets keep bits that have no name (they round-trip through the trailing hex
//! value of the text form, e.g. `PRIVATE|0x800000`).

use std::fmt;

use bitflags::bitflags;

bitflags! {
    /// `flags=` of `mmap` (the `MAP_*` bits). `SHARED_VALIDATE` is the mapping type 0x03.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct MmapFlags: u64 {
        /// MAP_SHARED.
        const SHARED = 0x01;
        /// MAP_PRIVATE.
        const PRIVATE = 0x02;
        /// MAP_SHARED_VALIDATE (the mapping type 0x03, not a separate bit).
        const SHARED_VALIDATE = 0x03;
        /// MAP_FIXED.
        const FIXED = 0x10;
        /// MAP_ANONYMOUS.
        const ANONYMOUS = 0x20;
        /// MAP_GROWSDOWN.
        const GROWSDOWN = 0x100;
        /// MAP_DENYWRITE.
        const DENYWRITE = 0x800;
        /// MAP_EXECUTABLE.
        const EXECUTABLE = 0x1000;
        /// MAP_LOCKED.
        const LOCKED = 0x2000;
        /// MAP_NORESERVE.
        const NORESERVE = 0x4000;
        /// MAP_POPULATE.
        const POPULATE = 0x8000;
        /// MAP_NONBLOCK.
        const NONBLOCK = 0x10000;
        /// MAP_STACK.
        const STACK = 0x20000;
        /// MAP_HUGETLB.
        const HUGETLB = 0x40000;
        /// MAP_SYNC.
        const SYNC = 0x80000;
        /// MAP_FIXED_NOREPLACE.
        const FIXED_NOREPLACE = 0x100000;
        /// MAP_UNINITIALIZED (bit 26, which is also the lowest MAP_HUGE_* size bit).
        const UNINITIALIZED = 0x4000000;
        // Keep every other bit (HUGETLB size bits, future flags).
        const _ = !0;
    }
}

bitflags! {
    /// `flags=` of `mremap` (the `MREMAP_*` bits).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct MremapFlags: u64 {
        /// MREMAP_MAYMOVE.
        const MAYMOVE = 0x1;
        /// MREMAP_FIXED.
        const FIXED = 0x2;
        /// MREMAP_DONTUNMAP.
        const DONTUNMAP = 0x4;
        // Keep unknown bits.
        const _ = !0;
    }
}

bitflags! {
    /// `flags=` of `mlock2` (the `MLOCK_*` bits).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Mlock2Flags: u64 {
        /// MLOCK_ONFAULT.
        const ONFAULT = 0x1;
        // Keep unknown bits.
        const _ = !0;
    }
}

bitflags! {
    /// `flags=` of `mlockall` (the `MCL_*` bits).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct MlockallFlags: u64 {
        /// MCL_CURRENT.
        const CURRENT = 0x1;
        /// MCL_FUTURE.
        const FUTURE = 0x2;
        /// MCL_ONFAULT.
        const ONFAULT = 0x4;
        // Keep unknown bits.
        const _ = !0;
    }
}

bitflags! {
    /// `flags=` of `msync` (the `MS_*` bits).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct MsyncFlags: u64 {
        /// MS_ASYNC.
        const ASYNC = 0x1;
        /// MS_INVALIDATE.
        const INVALIDATE = 0x2;
        /// MS_SYNC.
        const SYNC = 0x4;
        // Keep unknown bits.
        const _ = !0;
    }
}

bitflags! {
    /// `flags=` of `shmat` (the `SHM_*` bits).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct ShmatFlags: u64 {
        /// SHM_RDONLY.
        const RDONLY = 0o10000;
        /// SHM_RND.
        const RND = 0o20000;
        /// SHM_REMAP.
        const REMAP = 0o40000;
        /// SHM_EXEC.
        const EXEC = 0o100000;
        // Keep unknown bits.
        const _ = !0;
    }
}

bitflags! {
    /// `flags=` of calls without named flags (`mseal`, `process_madvise`): `0` or hex.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct OtherFlags: u64 {
        // Every bit is unnamed.
        const _ = !0;
    }
}

bitflags! {
    /// `prot=`: page protection, printed as three letters `rwx` with `-` for unset, then
    /// any other bits (PROT_SEM, PROT_GROWSDOWN, ...) as `|` and one hex value.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Prot: u64 {
        /// PROT_READ (`r`).
        const READ = 0x1;
        /// PROT_WRITE (`w`).
        const WRITE = 0x2;
        /// PROT_EXEC (`x`).
        const EXEC = 0x4;
        // Keep the other bits.
        const _ = !0;
    }
}

/// A flag type with a text form `NAME|NAME|0xUNNAMED`, or `0` when empty.
pub trait SymbolicFlags: Sized + Copy {
    /// Names in print order, with their masks. Multi-bit masks come before their parts.
    const NAMES: &'static [(&'static str, u64)];
    /// Raw bits.
    fn raw(self) -> u64;
    /// From raw bits, keeping all of them.
    fn from_raw(bits: u64) -> Self;

    /// Parses the text form. Returns `None` on an unknown name or a malformed part.
    fn parse_symbolic(text: &str) -> Option<Self> {
        if text == "0" {
            return Some(Self::from_raw(0));
        }
        let mut bits = 0u64;
        for part in text.split('|') {
            if let Some(hex) = part.strip_prefix("0x") {
                bits |= crate::stream::lex::parse_hex_digits(hex)?;
            } else {
                let &(_, mask) = Self::NAMES.iter().find(|(name, _)| *name == part)?;
                bits |= mask;
            }
        }
        Some(Self::from_raw(bits))
    }

    /// Writes the text form.
    fn write_symbolic(self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut remaining = self.raw();
        if remaining == 0 {
            return out.write_str("0");
        }
        let mut first = true;
        for &(name, mask) in Self::NAMES {
            if remaining & mask == mask {
                if !first {
                    out.write_str("|")?;
                }
                out.write_str(name)?;
                first = false;
                remaining &= !mask;
            }
        }
        if remaining != 0 {
            if !first {
                out.write_str("|")?;
            }
            write!(out, "{remaining:#x}")?;
        }
        Ok(())
    }
}

macro_rules! symbolic_flags {
    ($type:ty, [$($name:literal => $mask:expr),* $(,)?]) => {
        impl SymbolicFlags for $type {
            const NAMES: &'static [(&'static str, u64)] = &[$(($name, $mask)),*];
            fn raw(self) -> u64 {
                self.bits()
            }
            fn from_raw(bits: u64) -> Self {
                Self::from_bits_retain(bits)
            }
        }

        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.write_symbolic(f)
            }
        }

        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
    };
}

symbolic_flags!(MmapFlags, [
    "SHARED_VALIDATE" => 0x03,
    "SHARED" => 0x01,
    "PRIVATE" => 0x02,
    "FIXED" => 0x10,
    "ANONYMOUS" => 0x20,
    "GROWSDOWN" => 0x100,
    "DENYWRITE" => 0x800,
    "EXECUTABLE" => 0x1000,
    "LOCKED" => 0x2000,
    "NORESERVE" => 0x4000,
    "POPULATE" => 0x8000,
    "NONBLOCK" => 0x10000,
    "STACK" => 0x20000,
    "HUGETLB" => 0x40000,
    "SYNC" => 0x80000,
    "FIXED_NOREPLACE" => 0x100000,
    "UNINITIALIZED" => 0x4000000,
]);
symbolic_flags!(MremapFlags, ["MAYMOVE" => 0x1, "FIXED" => 0x2, "DONTUNMAP" => 0x4]);
symbolic_flags!(Mlock2Flags, ["ONFAULT" => 0x1]);
symbolic_flags!(MlockallFlags, ["CURRENT" => 0x1, "FUTURE" => 0x2, "ONFAULT" => 0x4]);
symbolic_flags!(MsyncFlags, ["ASYNC" => 0x1, "INVALIDATE" => 0x2, "SYNC" => 0x4]);
symbolic_flags!(ShmatFlags, [
    "RDONLY" => 0o10000,
    "RND" => 0o20000,
    "REMAP" => 0o40000,
    "EXEC" => 0o100000,
]);
symbolic_flags!(OtherFlags, []);

impl Prot {
    /// Parses the three-letter form (`rw-`, `r-x`, `---`), with other bits after `|`
    /// (`r--|0x1000000`).
    pub fn parse(text: &str) -> Option<Prot> {
        let (letters, other) = match text.split_once('|') {
            Some((letters, other)) => {
                let bits = crate::stream::lex::parse_hex_digits(other.strip_prefix("0x")?)?;
                // The form the module writes: other bits only, non-zero.
                if bits == 0 || bits & 7 != 0 {
                    return None;
                }
                (letters, bits)
            }
            None => (text, 0),
        };
        let &[r, w, x] = letters.as_bytes() else {
            return None;
        };
        let mut prot = Prot::from_bits_retain(other);
        for (byte, letter, flag) in [
            (r, b'r', Prot::READ),
            (w, b'w', Prot::WRITE),
            (x, b'x', Prot::EXEC),
        ] {
            if byte == letter {
                prot |= flag;
            } else if byte != b'-' {
                return None;
            }
        }
        Some(prot)
    }
}

impl fmt::Display for Prot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letter = |flag, c| if self.contains(flag) { c } else { '-' };
        write!(
            f,
            "{}{}{}",
            letter(Prot::READ, 'r'),
            letter(Prot::WRITE, 'w'),
            letter(Prot::EXEC, 'x')
        )?;
        let other = self.bits() & !7;
        if other != 0 {
            write!(f, "|{other:#x}")?;
        }
        Ok(())
    }
}

impl serde::Serialize for Prot {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `advice=` of `madvise`: the `MADV_*` number, printed by name when it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Advice(pub i32);

const ADVICE_NAMES: [(&str, i32); 27] = [
    ("NORMAL", 0),
    ("RANDOM", 1),
    ("SEQUENTIAL", 2),
    ("WILLNEED", 3),
    ("DONTNEED", 4),
    ("FREE", 8),
    ("REMOVE", 9),
    ("DONTFORK", 10),
    ("DOFORK", 11),
    ("MERGEABLE", 12),
    ("UNMERGEABLE", 13),
    ("HUGEPAGE", 14),
    ("NOHUGEPAGE", 15),
    ("DONTDUMP", 16),
    ("DODUMP", 17),
    ("WIPEONFORK", 18),
    ("KEEPONFORK", 19),
    ("COLD", 20),
    ("PAGEOUT", 21),
    ("POPULATE_READ", 22),
    ("POPULATE_WRITE", 23),
    ("COLLAPSE", 25),
    ("HWPOISON", 100),
    ("SOFT_OFFLINE", 101),
    ("GUARD_INSTALL", 102),
    ("GUARD_REMOVE", 103),
    // Not in docs/events.md's list (yet); accepted in case the module names it.
    ("DONTNEED_LOCKED", 24),
];

impl Advice {
    /// The `MADV_*` name without prefix, if the number has one.
    pub fn name(self) -> Option<&'static str> {
        ADVICE_NAMES
            .iter()
            .find(|(_, number)| *number == self.0)
            .map(|(name, _)| *name)
    }

    /// Parses a name from the list or a decimal number.
    pub fn parse(text: &str) -> Option<Advice> {
        if let Some(&(_, number)) = ADVICE_NAMES.iter().find(|(name, _)| *name == text) {
            return Some(Advice(number));
        }
        crate::stream::lex::parse_signed_dec(text)
            .and_then(|value| i32::try_from(value).ok())
            .map(Advice)
    }
}

impl fmt::Display for Advice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{}", self.0),
        }
    }
}

impl serde::Serialize for Advice {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mmap_flags_text() {
        let flags = MmapFlags::parse_symbolic("PRIVATE|ANONYMOUS").unwrap();
        assert_eq!(flags, MmapFlags::PRIVATE | MmapFlags::ANONYMOUS);
        assert_eq!(flags.to_string(), "PRIVATE|ANONYMOUS");
        let validate = MmapFlags::parse_symbolic("SHARED_VALIDATE|SYNC").unwrap();
        assert_eq!(validate.bits(), 0x80003);
        assert_eq!(validate.to_string(), "SHARED_VALIDATE|SYNC");
        let unknown = MmapFlags::parse_symbolic("PRIVATE|0x800000").unwrap();
        assert_eq!(unknown.bits(), 0x800002);
        assert_eq!(unknown.to_string(), "PRIVATE|0x800000");
        assert_eq!(MmapFlags::parse_symbolic("0").unwrap().to_string(), "0");
        assert_eq!(
            MmapFlags::from_bits_retain(0x80000000).to_string(),
            "0x80000000"
        );
        for bad in [
            "",
            "|",
            "PRIVATE|",
            "private",
            "0x",
            "0xZZ",
            "PRIVATE||SHARED",
            "00",
        ] {
            assert!(MmapFlags::parse_symbolic(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn other_flags_text() {
        assert_eq!(
            MremapFlags::parse_symbolic("MAYMOVE|FIXED").unwrap(),
            MremapFlags::MAYMOVE | MremapFlags::FIXED
        );
        assert_eq!(
            Mlock2Flags::parse_symbolic("ONFAULT").unwrap(),
            Mlock2Flags::ONFAULT
        );
        assert_eq!(
            MlockallFlags::from_bits_retain(0x7).to_string(),
            "CURRENT|FUTURE|ONFAULT"
        );
    }

    #[test]
    fn prot_text() {
        for text in ["---", "r--", "rw-", "r-x", "rwx", "-w-", "--x"] {
            assert_eq!(Prot::parse(text).unwrap().to_string(), text);
        }
        for bad in ["", "rw", "rwxx", "wr-", "RW-", "r w"] {
            assert!(Prot::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn advice_text() {
        assert_eq!(Advice::parse("DONTNEED"), Some(Advice(4)));
        assert_eq!(Advice::parse("77"), Some(Advice(77)));
        assert_eq!(Advice(77).to_string(), "77");
        assert_eq!(Advice(103).to_string(), "GUARD_REMOVE");
        assert_eq!(Advice::parse("dontneed"), None);
        assert_eq!(Advice::parse("99999999999"), None);
    }
}
