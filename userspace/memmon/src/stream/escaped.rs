//! `str` values (`file=`, `comm=`, `filename=`, `text=`): escaped text kept as it came.

use std::borrow::Cow;
use std::fmt;

/// A `str` field value in its escaped wire form, borrowed from the line when possible.
///
/// The wire form has bytes 0x21..=0x7e except `\` as is and every other byte as
/// `\xNN` (lowercase hex). A value cut short by the module ends with `...`.
/// Construction validates the form, so [`EscapedStr::unescape`] cannot fail.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EscapedStr<'a>(Cow<'a, str>);

const TRUNCATION_MARK: &str = "...";

impl<'a> EscapedStr<'a> {
    /// Wraps an escaped value after checking that it is well-formed.
    pub fn from_escaped(text: &'a str) -> Option<EscapedStr<'a>> {
        is_well_formed(text.as_bytes()).then_some(EscapedStr(Cow::Borrowed(text)))
    }

    /// Escapes raw bytes into the wire form (the inverse of [`EscapedStr::unescape`]).
    pub fn escape(raw: &[u8]) -> EscapedStr<'static> {
        let mut text = String::with_capacity(raw.len());
        for &byte in raw {
            if (0x21..=0x7e).contains(&byte) && byte != b'\\' {
                text.push(char::from(byte));
            } else {
                text.push_str(&format!("\\x{byte:02x}"));
            }
        }
        EscapedStr(Cow::Owned(text))
    }

    /// The escaped wire form.
    pub fn as_escaped(&self) -> &str {
        &self.0
    }

    /// Decodes the `\xNN` escapes into the original bytes. A truncation mark (`...`)
    /// stays part of the result: it cannot be told apart from a value ending in dots.
    pub fn unescape(&self) -> Vec<u8> {
        let bytes = self.0.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut index = 0;
        while index < bytes.len() {
            if bytes[index] == b'\\' {
                // Well-formedness (checked at construction) guarantees `\xNN` here.
                let high = hex_value(bytes[index + 2]).unwrap_or(0);
                let low = hex_value(bytes[index + 3]).unwrap_or(0);
                out.push(high << 4 | low);
                index += 4;
            } else {
                out.push(bytes[index]);
                index += 1;
            }
        }
        out
    }

    /// The unescaped value as text, with invalid UTF-8 replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(&self.unescape()).into_owned()
    }

    /// Whether the value ends with the truncation mark `...` (it may also simply end in dots).
    pub fn is_possibly_truncated(&self) -> bool {
        self.0.ends_with(TRUNCATION_MARK)
    }

    /// An owned copy that no longer borrows from the line.
    pub fn into_owned(self) -> EscapedStr<'static> {
        EscapedStr(Cow::Owned(self.0.into_owned()))
    }
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    }
}

fn is_well_formed(bytes: &[u8]) -> bool {
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => {
                let escape = bytes.get(index + 1..index + 4);
                match escape {
                    Some([b'x', high, low])
                        if hex_value(*high).is_some() && hex_value(*low).is_some() =>
                    {
                        index += 4
                    }
                    _ => return false,
                }
            }
            0x21..=0x7e => index += 1,
            _ => return false,
        }
    }
    true
}

impl fmt::Display for EscapedStr<'_> {
    /// Writes the escaped wire form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for EscapedStr<'_> {
    /// Serialises the unescaped value (lossy UTF-8).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string_lossy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes() {
        let text = EscapedStr::from_escaped("hello\\x20world\\x5c\\xff").unwrap();
        assert_eq!(text.unescape(), b"hello world\\\xff");
        assert_eq!(text.to_string_lossy(), "hello world\\\u{fffd}");
        assert!(!text.is_possibly_truncated());
        assert!(EscapedStr::from_escaped("/very/long...")
            .unwrap()
            .is_possibly_truncated());
        assert_eq!(EscapedStr::from_escaped("").unwrap().unescape(), b"");
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "a b",
            "\\",
            "\\x",
            "\\x4",
            "\\x4G",
            "\\X41",
            "\\xAB",
            "tab\there",
            "é",
        ] {
            assert!(EscapedStr::from_escaped(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn escape_round_trips() {
        let raw: Vec<u8> = (0..=255).collect();
        let escaped = EscapedStr::escape(&raw);
        assert_eq!(
            EscapedStr::from_escaped(escaped.as_escaped())
                .unwrap()
                .unescape(),
            raw
        );
    }
}
