//! The "Your code" table of the text form: resident bytes by function of the program's
//! own code, the report's first table.

use std::fmt::Write;

use super::{size, Table};
use crate::report::view::your_code::YourCode;

/// Writes the table (its `top` first functions), and what no own code holds.
pub fn write_your_code(out: &mut String, code: &YourCode, top: usize) -> std::fmt::Result {
    if code.functions.is_empty() {
        if code.outside > 0 {
            writeln!(
                out,
                "\nYour code: no function of the program's own code holds resident memory ({} is the system's: --own GLOB says which objects are yours)",
                size(code.outside)
            )?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "\nYour code: resident bytes by function of the program, with the library code it called"
    )?;
    let table = Table {
        columns: [("resident", 10), ("inclusive", 10)],
        last: "function",
    };
    table.header(out)?;
    for row in code.functions.iter().take(top) {
        let name = match &row.library {
            Some(library) => format!("{} → {library}", row.name()),
            None => row.name(),
        };
        table.row(out, [size(row.resident), size(row.inclusive)], name)?;
    }
    let more = code.functions.len().saturating_sub(top);
    if more > 0 {
        writeln!(out, "  ({more} more functions: --top N)")?;
    }
    if code.outside > 0 {
        writeln!(
            out,
            "  {} resident with no function of the program on its stack (start-up, the libraries' own)",
            size(code.outside)
        )?;
    }
    Ok(())
}
