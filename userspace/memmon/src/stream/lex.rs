//! The number lexers of the line format (decimal, signed decimal, hex), shared by the
//! parser, the flags and the other readers of the module's text (maps, pid lists).

/// Parses a decimal `u64` without sign or leading `+`.
pub fn parse_dec(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for byte in text.bytes() {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    Some(value)
}

/// Parses a signed decimal (`-1`, `4096`) into an `i64`.
pub fn parse_signed_dec(text: &str) -> Option<i64> {
    match text.strip_prefix('-') {
        Some(digits) => {
            let magnitude = parse_dec(digits)?;
            0i64.checked_sub_unsigned(magnitude)
        }
        None => i64::try_from(parse_dec(text)?).ok(),
    }
}

/// Parses hex digits (after `0x`), either case, into a `u64`.
pub fn parse_hex_digits(digits: &str) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        // More than 16 digits only fits with leading zeros, which the format never has.
        return None;
    }
    let mut value: u64 = 0;
    for byte in digits.bytes() {
        let digit = match byte {
            b'0'..=b'9' => byte - b'0',
            b'a'..=b'f' => byte - b'a' + 10,
            b'A'..=b'F' => byte - b'A' + 10,
            _ => return None,
        };
        value = value << 4 | u64::from(digit);
    }
    Some(value)
}

/// Parses `0x` and hex digits into a `u64`.
pub fn parse_hex(text: &str) -> Option<u64> {
    parse_hex_digits(text.strip_prefix("0x")?)
}

/// Parses a decimal `u32` without sign or leading `+`.
pub fn parse_u32(text: &str) -> Option<u32> {
    u32::try_from(parse_dec(text)?).ok()
}
