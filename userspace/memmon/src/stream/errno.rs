//! Linux errno values as they appear in `ret=` fields (`-ENOMEM`, `-E600`).

use std::fmt;

/// A Linux error number (always ≥ 1), as returned by a failed system call.
///
/// Printed as its symbolic name (`ENOMEM`) when known, otherwise as `E<number>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Errno(u32);

/// Names of the x86-64 Linux errno values 1..=133, index = number - 1 (41 and 58 are unused).
/// The module prints `ret=` with its own copy of this table (`ERRNO_NAMES` in
/// src/record/text.rs); the test `same_names_as_the_module` keeps the two in step.
const NAMES: [&str; 133] = [
    "EPERM",
    "ENOENT",
    "ESRCH",
    "EINTR",
    "EIO",
    "ENXIO",
    "E2BIG",
    "ENOEXEC",
    "EBADF",
    "ECHILD",
    "EAGAIN",
    "ENOMEM",
    "EACCES",
    "EFAULT",
    "ENOTBLK",
    "EBUSY",
    "EEXIST",
    "EXDEV",
    "ENODEV",
    "ENOTDIR",
    "EISDIR",
    "EINVAL",
    "ENFILE",
    "EMFILE",
    "ENOTTY",
    "ETXTBSY",
    "EFBIG",
    "ENOSPC",
    "ESPIPE",
    "EROFS",
    "EMLINK",
    "EPIPE",
    "EDOM",
    "ERANGE",
    "EDEADLK",
    "ENAMETOOLONG",
    "ENOLCK",
    "ENOSYS",
    "ENOTEMPTY",
    "ELOOP",
    "",
    "ENOMSG",
    "EIDRM",
    "ECHRNG",
    "EL2NSYNC",
    "EL3HLT",
    "EL3RST",
    "ELNRNG",
    "EUNATCH",
    "ENOCSI",
    "EL2HLT",
    "EBADE",
    "EBADR",
    "EXFULL",
    "ENOANO",
    "EBADRQC",
    "EBADSLT",
    "",
    "EBFONT",
    "ENOSTR",
    "ENODATA",
    "ETIME",
    "ENOSR",
    "ENONET",
    "ENOPKG",
    "EREMOTE",
    "ENOLINK",
    "EADV",
    "ESRMNT",
    "ECOMM",
    "EPROTO",
    "EMULTIHOP",
    "EDOTDOT",
    "EBADMSG",
    "EOVERFLOW",
    "ENOTUNIQ",
    "EBADFD",
    "EREMCHG",
    "ELIBACC",
    "ELIBBAD",
    "ELIBSCN",
    "ELIBMAX",
    "ELIBEXEC",
    "EILSEQ",
    "ERESTART",
    "ESTRPIPE",
    "EUSERS",
    "ENOTSOCK",
    "EDESTADDRREQ",
    "EMSGSIZE",
    "EPROTOTYPE",
    "ENOPROTOOPT",
    "EPROTONOSUPPORT",
    "ESOCKTNOSUPPORT",
    "EOPNOTSUPP",
    "EPFNOSUPPORT",
    "EAFNOSUPPORT",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "ENETDOWN",
    "ENETUNREACH",
    "ENETRESET",
    "ECONNABORTED",
    "ECONNRESET",
    "ENOBUFS",
    "EISCONN",
    "ENOTCONN",
    "ESHUTDOWN",
    "ETOOMANYREFS",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "EHOSTDOWN",
    "EHOSTUNREACH",
    "EALREADY",
    "EINPROGRESS",
    "ESTALE",
    "EUCLEAN",
    "ENOTNAM",
    "ENAVAIL",
    "EISNAM",
    "EREMOTEIO",
    "EDQUOT",
    "ENOMEDIUM",
    "EMEDIUMTYPE",
    "ECANCELED",
    "ENOKEY",
    "EKEYEXPIRED",
    "EKEYREVOKED",
    "EKEYREJECTED",
    "EOWNERDEAD",
    "ENOTRECOVERABLE",
    "ERFKILL",
    "EHWPOISON",
];

/// Alternative names the kernel headers define for the same numbers.
const ALIASES: [(&str, u32); 3] = [("EWOULDBLOCK", 11), ("EDEADLOCK", 35), ("ENOTSUP", 95)];

impl Errno {
    /// The errno with this number, or `None` for 0 (not an error).
    pub fn new(number: u32) -> Option<Errno> {
        (number != 0).then_some(Errno(number))
    }

    /// The errno number (≥ 1).
    pub fn number(self) -> u32 {
        self.0
    }

    /// The symbolic name (`"ENOMEM"`), if this number has one.
    pub fn name(self) -> Option<&'static str> {
        let index = usize::try_from(self.0).ok()?.checked_sub(1)?;
        NAMES.get(index).copied().filter(|name| !name.is_empty())
    }

    /// Parses `ENOMEM`, an alias such as `EWOULDBLOCK`, or the numeric form `E600`.
    pub fn from_name(text: &str) -> Option<Errno> {
        let digits = text.strip_prefix('E')?;
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if digits.len() > 1 && digits.starts_with('0') {
                return None;
            }
            return digits.parse().ok().and_then(Errno::new);
        }
        if let Some(index) = NAMES.iter().position(|name| *name == text) {
            // The table has 133 entries, so index + 1 fits in u32.
            return Some(Errno(index as u32 + 1));
        }
        ALIASES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|&(_, number)| Errno(number))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "E{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for number in 1..=200 {
            let errno = Errno::new(number).unwrap();
            assert_eq!(Errno::from_name(&errno.to_string()), Some(errno));
        }
        assert_eq!(Errno::from_name("ENOMEM").unwrap().number(), 12);
        assert_eq!(Errno::from_name("EHWPOISON").unwrap().number(), 133);
        assert_eq!(Errno::from_name("EWOULDBLOCK").unwrap().number(), 11);
        assert_eq!(Errno::new(41).unwrap().to_string(), "E41");
        assert_eq!(Errno::from_name("E512").unwrap().to_string(), "E512");
    }

    #[test]
    fn rejects_non_errnos() {
        for bad in [
            "",
            "E",
            "E0",
            "E012",
            "ENOPE",
            "nomem",
            "E99999999999",
            "E-1",
        ] {
            assert_eq!(Errno::from_name(bad), None, "{bad}");
        }
    }

    /// The module's table (`ERRNO_NAMES` in src/record/text.rs) names the same numbers.
    #[test]
    fn same_names_as_the_module() {
        let source = include_str!("../../../../src/record/text.rs");
        let table = source
            .split_once("const ERRNO_NAMES")
            .and_then(|(_, rest)| rest.split_once("= ["))
            .and_then(|(_, rest)| rest.split_once("];"))
            .map(|(table, _)| table)
            .expect("the module's ERRNO_NAMES table");
        let module: Vec<&str> = table
            .lines()
            .map(|line| line.trim().trim_end_matches(','))
            .filter(|line| !line.is_empty())
            .map(|name| name.trim_matches('"'))
            .collect();
        assert_eq!(module, NAMES);
    }
}
