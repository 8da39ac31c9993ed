//! The names a JIT's perf map (`/tmp/perf-PID.map`) gives its generated code, read for
//! what they say: V8's (Node.js `--perf-basic-prof`) `KIND:[TIER]NAME SCRIPT:LINE:COLUMN`
//! (`JS:*holdObjects /app/main.js:3:21`, `JS:~ /app/main.js:1:1` for an anonymous function,
//! `Builtin:ArrayPrototypePush`) and Python's (3.12 `-X perf`) `py::NAME:FILE`. Other
//! runtimes' names (the JVM's `java.lang.String::hashCode`) are names like any other.

/// What a perf-map name says about its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitName {
    /// The function's name (empty for an anonymous one); the whole name for the runtime's
    /// own code.
    pub function: String,
    /// The script or source file (`/app/main.js`, `node:internal/modules/cjs/loader`).
    pub file: Option<String>,
    /// The function's first line in it.
    pub line: Option<u32>,
    /// Code of the runtime itself (V8's builtins, bytecode handlers, stubs, regular
    /// expressions) rather than a function of a script.
    pub runtime_code: bool,
}

/// V8's kinds of code that are a script's functions (`JS` since V8 11, `LazyCompile` and
/// `Function` before).
const V8_FUNCTION_KINDS: &[&str] = &[
    "JS",
    "Function",
    "LazyCompile",
    "Script",
    "Eval",
    "InterpretedFunction",
    "NativeFunction",
    "NativeScript",
];

/// V8's kinds of code of its own.
const V8_RUNTIME_KINDS: &[&str] = &[
    "Builtin",
    "BytecodeHandler",
    "Stub",
    "Handler",
    "RegExp",
    "Callback",
    "LoadIC",
    "LoadGlobalIC",
    "KeyedLoadIC",
    "StoreIC",
    "StoreGlobalIC",
    "KeyedStoreIC",
    "StoreInArrayLiteralIC",
];

/// The tiers V8 marks a function's code with: `~` interpreted (a copy of the interpreter's
/// entry with `--interpreted-frames-native-stack`), `^` Sparkplug, `+` Maglev, `*`
/// TurboFan.
const V8_TIERS: &[char] = &['~', '^', '+', '*', '-'];

impl JitName {
    /// What `name` says, `None` when it is no V8 or Python perf-map name.
    pub fn parse(name: &str) -> Option<JitName> {
        if let Some(rest) = name.strip_prefix("py::") {
            let (function, file) = rest.split_once(':')?;
            if function.is_empty() || file.is_empty() {
                return None;
            }
            return Some(JitName {
                function: function.to_owned(),
                file: Some(file.to_owned()),
                line: None,
                runtime_code: false,
            });
        }
        let (kind, rest) = name.split_once(':')?;
        if rest.starts_with(':') {
            return None;
        }
        if V8_RUNTIME_KINDS.contains(&kind) {
            return Some(JitName {
                function: name.to_owned(),
                file: None,
                line: None,
                runtime_code: true,
            });
        }
        if !V8_FUNCTION_KINDS.contains(&kind) {
            return None;
        }
        let rest = rest.trim_start_matches(V8_TIERS);
        let (function, file, line) = match rest.rsplit_once(' ') {
            Some((function, location)) => match script_location(location) {
                Some((file, line)) => (function.trim(), Some(file.to_owned()), line),
                None => (rest.trim(), None, None),
            },
            None => match script_location(rest) {
                Some((file, line)) if rest.contains('/') => ("", Some(file.to_owned()), line),
                _ => (rest.trim(), None, None),
            },
        };
        Some(JitName {
            function: function.to_owned(),
            file,
            line,
            runtime_code: false,
        })
    }

    /// The name a person reads: the function's, `(anonymous main.js:12)` for an anonymous
    /// one, the whole name for the runtime's code.
    pub fn short(&self) -> String {
        if self.runtime_code || !self.function.is_empty() {
            return self.function.clone();
        }
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("(anonymous {}:{line})", script_name(file)),
            (Some(file), None) => format!("(anonymous {})", script_name(file)),
            _ => "(anonymous)".to_owned(),
        }
    }
}

/// `SCRIPT:LINE:COLUMN` (or `SCRIPT:LINE`) split into the script and the line.
fn script_location(location: &str) -> Option<(&str, Option<u32>)> {
    let number = |text: &str| text.parse::<u32>().ok();
    let (before, last) = location.rsplit_once(':')?;
    number(last)?;
    match before.rsplit_once(':') {
        Some((file, line)) if number(line).is_some() && !file.is_empty() => {
            Some((file, number(line)))
        }
        _ if !before.is_empty() => Some((before, number(last))),
        _ => None,
    }
}

/// A script's file name (`main.js` of `/app/main.js` or `file:///app/main.js`).
fn script_name(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v8_names() {
        let parsed = JitName::parse("JS:*holdObjects /tmp/app/main.js:3:21").unwrap();
        assert_eq!(
            parsed,
            JitName {
                function: "holdObjects".to_owned(),
                file: Some("/tmp/app/main.js".to_owned()),
                line: Some(3),
                runtime_code: false,
            }
        );
        let anonymous = JitName::parse("JS:~ /tmp/app/main.js:1:1").unwrap();
        assert_eq!(anonymous.function, "");
        assert_eq!(anonymous.short(), "(anonymous main.js:1)");
        let internal =
            JitName::parse("JS:~Module._compile node:internal/modules/cjs/loader:1100:37").unwrap();
        assert_eq!(internal.function, "Module._compile");
        assert_eq!(
            internal.file.as_deref(),
            Some("node:internal/modules/cjs/loader")
        );
        assert_eq!(internal.line, Some(1100));
        let getter = JitName::parse("JS:^get length node:buffer:640:13").unwrap();
        assert_eq!(getter.short(), "get length");
        let esm = JitName::parse("JS:+load file:///srv/app/index.mjs:7:3").unwrap();
        assert_eq!(esm.file.as_deref(), Some("file:///srv/app/index.mjs"));
        assert_eq!(esm.short(), "load");
        let older = JitName::parse("LazyCompile:*fib /home/me/fib.js:1").unwrap();
        assert_eq!((older.short(), older.line), ("fib".to_owned(), Some(1)));
        let eval = JitName::parse("Eval:~ /tmp/app/main.js:1:1").unwrap();
        assert_eq!(eval.short(), "(anonymous main.js:1)");
        let builtin = JitName::parse("Builtin:ArrayPrototypePush").unwrap();
        assert!(builtin.runtime_code);
        assert_eq!(builtin.short(), "Builtin:ArrayPrototypePush");
        assert!(JitName::parse("BytecodeHandler:Ldar").unwrap().runtime_code);
        assert!(JitName::parse("RegExp:[a-z]+").unwrap().runtime_code);
        // Without a location.
        assert_eq!(JitName::parse("JS:*run").unwrap().short(), "run");
    }

    #[test]
    fn python_names() {
        let parsed = JitName::parse("py::load_rows:/srv/app/rows.py").unwrap();
        assert_eq!(parsed.short(), "load_rows");
        assert_eq!(parsed.file.as_deref(), Some("/srv/app/rows.py"));
        assert!(!parsed.runtime_code);
    }

    #[test]
    fn other_names_are_not_perf_map_names() {
        for name in [
            "main",
            "std::vector<int>::push_back",
            "Builtin::Foo",
            "v8::internal::Heap::CollectGarbage",
            "java.lang.String::hashCode",
            "py::",
            "type:.eq.main.T",
            "libc.so.6+0x1234",
        ] {
            assert_eq!(JitName::parse(name), None, "{name}");
        }
    }
}
