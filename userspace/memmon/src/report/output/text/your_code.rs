//! The "Your code" table of the text form: resident bytes by function of the program's
//! own code, the report's first table.

use std::fmt::Write;

use super::{size, Table};
use crate::report::view::your_code::{UnnamedCode, YourCode};

/// The most characters of a function's row after its sizes (a row stays within 200).
const FUNCTION_WIDTH: usize = 170;

/// `text` cut to `width` characters, its end `…` when it was longer.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Writes the table (its `top` first functions), the runtime's work, what no own code
/// holds, and why generated code is unnamed.
pub fn write_your_code(out: &mut String, code: &YourCode, top: usize) -> std::fmt::Result {
    if code.functions.is_empty() {
        let elsewhere = code
            .runtime_work
            .iter()
            .fold(code.outside, |sum, work| sum.saturating_add(work.resident));
        if elsewhere == 0 && code.before_start == 0 {
            return Ok(());
        }
        let system = if elsewhere > 0 {
            format!(
                " ({} is the system's: --own GLOB says which objects are yours)",
                size(elsewhere)
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "\nYour code: no function of the program's own code holds resident memory{system}"
        )?;
        write_runtime_work(out, code)?;
        write_before_start(out, code)?;
        return write_unnamed_code(out, code);
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
        table.row(
            out,
            [size(row.resident), size(row.inclusive)],
            cut(&name, FUNCTION_WIDTH),
        )?;
    }
    let more = code.functions.len().saturating_sub(top);
    if more > 0 {
        writeln!(out, "  ({more} more functions: --top N)")?;
    }
    write_runtime_work(out, code)?;
    if code.outside > 0 {
        writeln!(
            out,
            "  {} resident with no function of the program on its stack (start-up, the runtime's and the libraries' own)",
            size(code.outside)
        )?;
    }
    write_before_start(out, code)?;
    write_unnamed_code(out, code)
}

/// One line for what was resident before memmon started watching (`record -p`).
fn write_before_start(out: &mut String, code: &YourCode) -> std::fmt::Result {
    if let Some(line) = before_start_line(code) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// What was resident before memmon started watching, in a sentence (the text and HTML
/// reports' line), when something was.
pub fn before_start_line(code: &YourCode) -> Option<String> {
    (code.before_start > 0).then(|| {
        format!(
            "{} was resident before memmon started: its sizes and kinds are exact (the RSS tree), the code that brought it in is not known",
            size(code.before_start)
        )
    })
}

/// One line for each of the runtime's and the loader's work: `  28.5 MiB moved by V8's
/// garbage collector`.
fn write_runtime_work(out: &mut String, code: &YourCode) -> std::fmt::Result {
    for work in &code.runtime_work {
        writeln!(out, "  {} {}", size(work.resident), work.label)?;
    }
    Ok(())
}

/// One line when stacks went through generated code that no perf map names: why, and how
/// the runtime names it.
fn write_unnamed_code(out: &mut String, code: &YourCode) -> std::fmt::Result {
    if let Some(note) = lost_mappings_note(code) {
        writeln!(out, "  note: {note}")?;
    }
    let Some(unnamed) = &code.unnamed_code else {
        return Ok(());
    };
    writeln!(out, "  note: {}", unnamed_code_note(unnamed))
}

/// What went through code whose mapping's events were lost, in a sentence (the text and
/// HTML reports' note), when something did.
pub fn lost_mappings_note(code: &YourCode) -> Option<String> {
    (code.lost_mappings > 0).then(|| {
        format!(
            "{} resident went through code memmon cannot name: its mapping's events were lost (its frames show as addresses; not generated code)",
            size(code.lost_mappings)
        )
    })
}

/// Why generated code is unnamed and how to name it, in a sentence (the text and HTML
/// reports' note).
pub fn unnamed_code_note(unnamed: &UnnamedCode) -> String {
    let how = match (&unnamed.runtime, &unnamed.switch) {
        (Some(runtime), Some(switch)) => format!(
            "run {runtime} with {switch}, or record with memmon record --jit-maps"
        ),
        _ => "a runtime writes one when asked (node --perf-basic-prof --interpreted-frames-native-stack, java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit, python3.12 -X perf; memmon record --jit-maps)".to_owned(),
    };
    format!(
        "{} resident went through generated (JIT) code that no perf map (/tmp/perf-PID.map) names (its frames show as addresses): {how}",
        size(unnamed.resident)
    )
}
