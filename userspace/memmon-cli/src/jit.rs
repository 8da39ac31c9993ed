//! JIT runtimes' perf maps for `record -- CMD` and `run -- CMD`: a runtime names its
//! generated code in `/tmp/perf-PID.map` only when asked (Node.js `--perf-basic-prof
//! --interpreted-frames-native-stack`, Java `-XX:+DumpPerfMapAtExit`, Python 3.12+ `-X
//! perf`), and without the names a report cannot say which of the script's functions
//! holds memory. Without `--jit-maps`, a command that is such a runtime without its switch
//! gets one line saying how; with `--jit-maps`, the switches' environment variables are
//! set for the command (and every process it starts), and one line says so.

use memmon::report::view::runtimes::{JitSwitch, JIT_SWITCHES};

/// Before running `command`: with `jit_maps`, sets every JIT runtime's variable
/// (`NODE_OPTIONS`, `JAVA_TOOL_OPTIONS`, `PYTHONPERFSUPPORT`) that does not already turn
/// its perf map on, and says which; without, says how when the command's program is a JIT
/// runtime whose switch is off.
pub fn prepare(command: &[String], jit_maps: bool) {
    if jit_maps {
        let set: Vec<String> = JIT_SWITCHES
            .iter()
            .filter_map(|switch| {
                let current = std::env::var(switch.variable).ok();
                if switch.is_on(&[], current.as_deref()) {
                    return None;
                }
                let value = switch.environment_value(current.as_deref());
                // memmon has started no thread yet: nothing reads the environment meanwhile.
                std::env::set_var(switch.variable, &value);
                Some(format!("{}={value:?}", switch.variable))
            })
            .collect();
        if !set.is_empty() {
            eprintln!(
                "memmon: --jit-maps: {} for the command, so that JIT runtimes name their code in /tmp/perf-PID.map",
                set.join(" ")
            );
        }
        return;
    }
    if command
        .first()
        .is_some_and(|program| walked_python(program))
    {
        return;
    }
    if let Some(hint) = hint(command, |variable| std::env::var(variable).ok()) {
        eprintln!("memmon: {hint}");
    }
}

/// Whether `program` (a path, or a name looked up in `PATH`) is a CPython whose frames
/// memmon walks itself (docs/unwind.md, `SET_PYTHON`): it needs no perf map.
fn walked_python(program: &str) -> bool {
    let path = if program.contains('/') {
        Some(std::path::PathBuf::from(program))
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|candidate| candidate.is_file())
        })
    };
    let Some(path) = path.and_then(|path| std::fs::canonicalize(path).ok()) else {
        return false;
    };
    memmon_unwind::python::version_of_path(&path.to_string_lossy())
        .and_then(memmon_unwind::python::layout)
        .is_some()
}

/// The line telling how to get a JIT runtime's names, when `command` runs one without its
/// switch (on its command line or in its variable, whose value `environment` gives).
fn hint(command: &[String], environment: impl Fn(&str) -> Option<String>) -> Option<String> {
    let (program, args) = command.split_first()?;
    let switch: &JitSwitch = JitSwitch::for_program(program)?;
    let current = environment(switch.variable);
    if switch.is_on(args, current.as_deref()) {
        return None;
    }
    Some(format!(
        "{} names its functions in a perf map only with {} (or {}={}): without that the report cannot name the script's functions; give it after {}, or record with --jit-maps",
        switch.runtime,
        switch.flags,
        switch.variable,
        switch.value,
        basename(program)
    ))
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn hints_for_runtimes_without_their_switch() {
        let unset = |_: &str| None;
        let line = hint(&command(&["node", "app.js"]), unset).unwrap();
        assert!(
            line.starts_with(
                "node names its functions in a perf map only with --perf-basic-prof --interpreted-frames-native-stack"
            ),
            "{line}"
        );
        assert!(line.contains("--jit-maps"), "{line}");
        assert_eq!(
            hint(
                &command(&[
                    "/usr/bin/node",
                    "--perf-basic-prof",
                    "--interpreted-frames-native-stack",
                    "app.js"
                ]),
                unset
            ),
            None
        );
        let switched_on = |variable: &str| {
            (variable == "NODE_OPTIONS")
                .then(|| "--perf-basic-prof --interpreted-frames-native-stack".to_owned())
        };
        assert_eq!(hint(&command(&["node", "app.js"]), switched_on), None);
        let python = hint(&command(&["python3.12", "app.py"]), unset).unwrap();
        assert!(python.contains("-X perf"), "{python}");
        assert_eq!(
            hint(&command(&["python3.12", "-X", "perf", "app.py"]), unset),
            None
        );
        assert_eq!(hint(&command(&["./a.out"]), unset), None);
        assert_eq!(hint(&command(&[]), unset), None);
    }
}
