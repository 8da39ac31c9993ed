//! Python code objects in a capture: the `# python` and `# pycode` headers the recorder
//! writes (docs/events.md), and CPython's line table (`co_linetable`, 3.11 and later), which
//! gives the line of an instruction.

use serde::{Deserialize, Serialize};

/// A code object as its `# pycode` header gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CodeInfo {
    /// `co_qualname`.
    pub name: String,
    /// `co_filename`.
    pub file: String,
    /// `co_firstlineno`.
    pub line: u32,
    /// `[start, end, line]`: the code units from `start` to `end` are at `line` (0: none).
    #[serde(default)]
    pub lines: Vec<[u32; 3]>,
}

impl CodeInfo {
    /// The line of the instruction `offset` code units from the first, the first line when
    /// the table does not say.
    pub fn line_at(&self, offset: u16) -> u32 {
        let offset = u32::from(offset);
        self.lines
            .iter()
            .find(|[start, end, _]| (*start..*end).contains(&offset))
            .map(|[.., line]| *line)
            .filter(|line| *line != 0)
            .unwrap_or(self.line)
    }
}

/// An interpreter as its `# python` header gives it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Interpreter {
    /// `3.11`.
    pub version: String,
    /// Run-time address ranges of the eval loop (`_PyEval_EvalFrameDefault`).
    pub eval: Vec<[u64; 2]>,
}

/// `PID {json}` of a `# python` header.
pub fn parse_python_header(value: &str) -> Option<(u32, Interpreter)> {
    let (pid, json) = value.split_once(' ')?;
    Some((pid.parse().ok()?, serde_json::from_str(json).ok()?))
}

/// `PID 0xADDR {json}` of a `# pycode` header.
pub fn parse_code_header(value: &str) -> Option<(u32, u64, CodeInfo)> {
    let mut parts = value.splitn(3, ' ');
    let pid = parts.next()?.parse().ok()?;
    let addr = u64::from_str_radix(parts.next()?.strip_prefix("0x")?, 16).ok()?;
    Some((pid, addr, serde_json::from_str(parts.next()?).ok()?))
}

/// CPython's location table (3.11 to 3.13) decoded into lines by code unit: `[start, end,
/// line]`, 0 for instructions without a line; `first_line` is `co_firstlineno`. A table
/// that ends early gives the lines up to there.
pub fn decode_line_table(table: &[u8], first_line: u32) -> Vec<[u32; 3]> {
    let mut out: Vec<[u32; 3]> = Vec::new();
    let mut bytes = table.iter().copied();
    let mut line = i64::from(first_line);
    let mut unit = 0u32;
    let varint = |bytes: &mut dyn Iterator<Item = u8>| -> Option<u64> {
        let mut byte = bytes.next()?;
        let mut value = u64::from(byte & 63);
        let mut shift = 6;
        while byte & 64 != 0 && shift < 64 {
            byte = bytes.next()?;
            value |= u64::from(byte & 63) << shift;
            shift += 6;
        }
        Some(value)
    };
    let signed = |value: u64| -> i64 {
        // CAST: half of a u64 fits an i64.
        let half = (value >> 1) as i64;
        if value & 1 != 0 {
            -half
        } else {
            half
        }
    };
    while let Some(byte) = bytes.next() {
        if byte & 0x80 == 0 {
            break;
        }
        let code = (byte >> 3) & 15;
        let len = u32::from(byte & 7) + 1;
        let located = match code {
            15 => false,
            14 => {
                let Some(delta) = varint(&mut bytes) else {
                    break;
                };
                line += signed(delta);
                for _ in 0..3 {
                    varint(&mut bytes);
                }
                true
            }
            13 => {
                let Some(delta) = varint(&mut bytes) else {
                    break;
                };
                line += signed(delta);
                true
            }
            10..=12 => {
                line += i64::from(code - 10);
                bytes.next();
                bytes.next();
                true
            }
            _ => {
                bytes.next();
                true
            }
        };
        let at = if located {
            u32::try_from(line).unwrap_or(0)
        } else {
            0
        };
        match out.last_mut() {
            Some(last) if last[2] == at && last[1] == unit => last[1] = unit + len,
            _ => out.push([unit, unit + len, at]),
        }
        unit += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_table() {
        // RESUME at the first line (short form, no line change), then a one-line form
        // moving 2 lines, then no location, then a long form back 1 line.
        let table = [
            0x80,
            0x00,
            0x80 | (12 << 3) | 1,
            0x01,
            0x02,
            0x80 | (15 << 3),
            0x80 | (14 << 3),
            0x03,
            0x00,
            0x01,
            0x01,
        ];
        let lines = decode_line_table(&table, 10);
        assert_eq!(lines, vec![[0, 1, 10], [1, 3, 12], [3, 4, 0], [4, 5, 11]]);
        let code = CodeInfo {
            name: "f".into(),
            file: "a.py".into(),
            line: 10,
            lines,
        };
        assert_eq!(code.line_at(2), 12);
        assert_eq!(code.line_at(3), 10);
        assert_eq!(code.line_at(4), 11);
        assert_eq!(code.line_at(99), 10);
    }

    #[test]
    fn headers() {
        let (pid, addr, code) = parse_code_header(
            r#"12 0x7f00 {"name":"load","file":"/a.py","line":3,"lines":[[0,4,5]]}"#,
        )
        .unwrap();
        assert_eq!((pid, addr, code.line_at(1)), (12, 0x7f00, 5));
        let (pid, python) = parse_python_header(r#"12 {"version":"3.11","eval":[[1,2]]}"#).unwrap();
        assert_eq!((pid, python.eval), (12, vec![[1, 2]]));
    }
}
