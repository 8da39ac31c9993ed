//! Short names: a frame's function as a person reads it in a table. The names reach the
//! report already demangled (blazesym demangles C++ with `cpp_demangle` and Rust with
//! `rustc-demangle`; `record --symbolize` stores them so; a JIT's perf map writes its own),
//! so one bracket-aware shortener serves every language:
//!
//! - C++: no parameter list (`f(int) const` is `f`), no return type (`void f<int>(int)`),
//!   template arguments elided (`std::vector<int, std::allocator<int> >::push_back` is
//!   `std::vector<…>::push_back`), ABI tags and GCC's clone suffixes gone (`f[abi:cxx11]`,
//!   `f() [clone .cold]`), `(anonymous namespace)` folded to `(anon)`, thunks named by their
//!   function, and a lambda as `outer::{lambda#1}` (its parameters and its `operator()`
//!   dropped: `outer(int)::{lambda(int)#1}::operator()(int) const`).
//! - Rust: generic arguments elided as C++'s (`core::ptr::drop_in_place::<…>`), a legacy
//!   symbol's hash gone (`::h0123456789abcdef`), and `<Type as Trait>::f` kept with the
//!   trait's last segment (`<app::Cache as Drop>::drop`); an inherent `<Type>::f` is
//!   `Type::f`.
//! - Go: as it is (`main.(*Store).Put`, `main.fill.func1`) but for a generic function's
//!   type arguments (`main.Sum[go.shape.int]` is `main.Sum[…]`).
//! - JIT code named by a perf map (V8's `JS:*holdObjects /app/main.js:3:21`, Python's
//!   `py::load:/app/load.py`): the function's name ([`super::jit_names`]).
//!
//! The full name stays in JSON, pprof, the folded stacks with `--full-names` and the HTML
//! page's tooltips. [`enclosing_function`] goes one step further for "your code": a
//! closure, a lambda or a compiler's clone is its function.

use std::borrow::Cow;

use super::jit_names::JitName;
use super::symbols::FrameInfo;

/// How the views a person reads name functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// [`short_name`]: what the tables show by default.
    #[default]
    Short,
    /// The names as symbolised (`--full-names`).
    Full,
}

impl Naming {
    /// `function` as this naming shows it.
    pub fn name(self, function: &str) -> Cow<'_, str> {
        match self {
            Naming::Short => short_name(function),
            Naming::Full => Cow::Borrowed(function),
        }
    }

    /// `frames` with their functions named so (file and line kept).
    pub fn frames(self, frames: &[FrameInfo]) -> Vec<FrameInfo> {
        frames
            .iter()
            .map(|frame| FrameInfo {
                function: self.name(&frame.function).into_owned(),
                ..frame.clone()
            })
            .collect()
    }
}

/// The name a person reads for `function`, a symbolised (demangled) function name, a JIT's
/// perf-map name, `object+0xSTART` or a label (`[kernel, for the process]`, kept as they
/// are). A name that does not parse (unbalanced brackets) is kept whole.
pub fn short_name(function: &str) -> Cow<'_, str> {
    if function.starts_with('[') {
        return Cow::Borrowed(function);
    }
    if let Some(jit) = JitName::parse(function) {
        return Cow::Owned(jit.short());
    }
    let trimmed = without_suffixes(function);
    if is_plain(trimmed) {
        return Cow::Borrowed(trimmed);
    }
    if looks_like_go(trimmed) {
        return Cow::Owned(go_short(trimmed));
    }
    match cpp_short(trimmed) {
        Some(short) if !short.is_empty() => Cow::Owned(short),
        _ => Cow::Borrowed(function),
    }
}

/// The function a person names a frame by in "your code", from its [`short_name`]: a
/// closure's or lambda's is its enclosing function's (Rust's `f::{{closure}}` and
/// `f::{closure#0}`, C++'s `f::{lambda#1}`, Go's `f.func1`, `f.func2.1` and `f.gowrap1`),
/// and a compiler's clone of a C function is the function (GCC's `f.constprop.0`,
/// `f.part.0`, `f.isra.0`, `f.cold`). `go` says the code is Go's (its source a `.go` file),
/// whose names have dots of their own (`main.part`).
pub fn enclosing_function(name: &str, go: bool) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let numbered = |s: &str, word: &str| s.strip_prefix(word).is_some_and(digits);
    let mut name = name;
    loop {
        let before = name;
        if let Some(outer) = name.strip_suffix("::{{closure}}") {
            name = outer;
        }
        for (open, close) in [("::{closure#", "}"), ("::{lambda#", "}")] {
            if let Some((outer, last)) = name.rsplit_once(open) {
                if last.strip_suffix(close).is_some_and(digits) && !outer.is_empty() {
                    name = outer;
                }
            }
        }
        if let Some((outer, last)) = name.rsplit_once('.').filter(|(outer, _)| !outer.is_empty()) {
            let fold = if go {
                // Go: `f.func1`, `f.gowrap1`, and `f.func2.1` (a closure in a closure).
                numbered(last, "func")
                    || numbered(last, "gowrap")
                    || (digits(last)
                        && outer
                            .rsplit_once('.')
                            .is_some_and(|(_, f)| numbered(f, "func")))
            } else {
                ["constprop", "isra", "part", "cold", "lto_priv"].contains(&last)
                    || (digits(last)
                        && outer.rsplit_once('.').is_some_and(|(_, kind)| {
                            ["constprop", "isra", "part", "lto_priv"].contains(&kind)
                        }))
            };
            if fold {
                name = outer;
            }
        }
        if name == before {
            return name;
        }
    }
}

/// The last `segments` scopes of a (short) name, split at its top-level `::`: what a
/// library summary names a function by, after its object's name
/// (`v8::internal::FactoryBase<…>::NewFixedArrayWithFiller` is
/// `FactoryBase<…>::NewFixedArrayWithFiller` with 2; `<app::Cache as Drop>::drop` keeps its
/// qualified path whole).
pub fn scope_tail(name: &str, segments: usize) -> &str {
    let mut depth = 0usize;
    let mut seen = 0usize;
    let bytes = name.as_bytes();
    let mut at = bytes.len();
    while at > 1 {
        at -= 1;
        match bytes[at] {
            b'>' | b')' | b'}' | b']' => depth += 1,
            b'<' | b'(' | b'{' | b'[' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && bytes[at - 1] == b':' => {
                seen += 1;
                if seen == segments {
                    return &name[at + 1..];
                }
                at -= 1;
            }
            _ => {}
        }
    }
    name
}

/// `function` without GCC's clone suffixes (`f(int) [clone .constprop.0] [clone .cold]`)
/// and a legacy Rust symbol's hash (`app::main::h0123456789abcdef`).
fn without_suffixes(function: &str) -> &str {
    let mut name = function;
    while let Some(at) = name.rfind(" [clone ").filter(|_| name.ends_with(']')) {
        name = &name[..at];
    }
    if let Some((path, hash)) = name.rsplit_once("::h") {
        if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            name = path;
        }
    }
    name
}

/// Whether `name` has nothing to shorten: no brackets, spaces or scope operators beyond
/// what C names, Go names and `object+0xSTART` have.
fn is_plain(name: &str) -> bool {
    !name.contains(['<', '(', '[', '{', ' ']) && !name.contains("::")
}

/// Whether `name` is Go's: no `::` (every C++ or Rust name with a scope has one, and a C++
/// name without one has no dot), a dot, and no `<`.
fn looks_like_go(name: &str) -> bool {
    !name.contains("::") && name.contains('.') && !name.contains('<')
}

/// A Go name with a generic function's or type's type arguments elided: `main.Sum[…]`,
/// `main.(*List[…]).Push`. An array type's length (`type:.eq.[2]string`) is kept: its `[`
/// follows no identifier.
fn go_short(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('[') {
        let (before, group) = rest.split_at(at);
        out.push_str(before);
        let instantiation = before
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        match (instantiation, group_end(group)) {
            (true, Some(end)) => {
                out.push_str("[…]");
                rest = &group[end..];
            }
            _ => {
                out.push('[');
                rest = &group[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A piece of a name at one bracket level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    /// Identifiers, `::`, spaces and punctuation.
    Text(&'a str),
    /// An operator's name, whole: `operator<<`, `operator()`, `operator new[]`, `operator
    /// bool`, `operator std::basic_string<char>`.
    Operator(&'a str),
    /// A bracketed group: its opening bracket and what is between the brackets.
    Group(char, &'a str),
}

/// C++ operators after `operator`, longest first.
const OPERATORS: &[&str] = &[
    "<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++",
    "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "->", ",", "<", ">", "=", "!", "~", "+",
    "-", "*", "/", "%", "^", "&", "|",
];

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The length of the `operator` token at the start of `text` (which starts with
/// `operator`), `None` when it is no operator (a longer identifier).
fn operator_len(text: &str) -> Option<usize> {
    const WORD: &str = "operator";
    let rest = &text[WORD.len()..];
    if rest.chars().next().is_some_and(is_ident) {
        return None;
    }
    if let Some(symbol) = OPERATORS.iter().find(|op| rest.starts_with(**op)) {
        return Some(WORD.len() + symbol.len());
    }
    if let Some(literal) = rest.strip_prefix("\"\"") {
        let literal = literal.trim_start();
        let skipped = rest.len() - literal.len();
        let ident = literal
            .find(|c: char| !is_ident(c))
            .unwrap_or(literal.len());
        return Some(WORD.len() + skipped + ident);
    }
    let Some(spelled) = rest.strip_prefix(' ') else {
        return Some(WORD.len());
    };
    for word in ["new[]", "delete[]", "new", "delete", "co_await"] {
        if spelled.starts_with(word) && !spelled[word.len()..].chars().next().is_some_and(is_ident)
        {
            return Some(WORD.len() + 1 + word.len());
        }
    }
    // A conversion operator: its type runs to the parameter list.
    let mut depth = 0usize;
    for (at, c) in spelled.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => return Some(WORD.len() + 1 + at),
            _ => {}
        }
    }
    Some(text.len())
}

/// Whether `text` has the word `operator` at `at`.
fn operator_at(text: &str, at: usize) -> Option<usize> {
    if !text[at..].starts_with("operator") {
        return None;
    }
    let starts_word = !text[..at].chars().next_back().is_some_and(is_ident);
    if !starts_word {
        return None;
    }
    operator_len(&text[at..])
}

/// The end (one past the closing bracket) of the group that opens at the start of `text`,
/// `None` when it does not close. A `>` closes only an open `<` and not after `-` (`->`);
/// operator names inside (`&X::operator<`) are skipped.
fn group_end(text: &str) -> Option<usize> {
    let mut stack: Vec<char> = Vec::new();
    let mut at = 0;
    let mut previous = ' ';
    while at < text.len() {
        if let Some(len) = operator_at(text, at) {
            at += len;
            previous = 'r';
            continue;
        }
        let c = text[at..].chars().next()?;
        match c {
            '<' | '(' | '[' | '{' => stack.push(c),
            '>' if previous != '-' && stack.last() == Some(&'<') => {
                stack.pop();
            }
            ')' | ']' | '}' => {
                let open = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                // An unclosed `<` inside is a less-than: drop it.
                while stack.last() == Some(&'<') {
                    stack.pop();
                }
                if stack.pop() != Some(open) {
                    return None;
                }
            }
            _ => {}
        }
        at += c.len_utf8();
        previous = c;
        if stack.is_empty() {
            return Some(at);
        }
    }
    None
}

/// `text` cut into pieces at its top level; `None` when a bracket does not close.
fn pieces(text: &str) -> Option<Vec<Piece<'_>>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < text.len() {
        if let Some(len) = operator_at(text, at) {
            if start < at {
                out.push(Piece::Text(&text[start..at]));
            }
            out.push(Piece::Operator(&text[at..at + len]));
            at += len;
            start = at;
            continue;
        }
        let c = text[at..].chars().next()?;
        if matches!(c, '<' | '(' | '[' | '{') {
            let end = at + group_end(&text[at..])?;
            if start < at {
                out.push(Piece::Text(&text[start..at]));
            }
            out.push(Piece::Group(c, &text[at + 1..end - 1]));
            at = end;
            start = at;
            continue;
        }
        at += c.len_utf8();
    }
    if start < text.len() {
        out.push(Piece::Text(&text[start..]));
    }
    Some(out)
}

/// Whether a group after `previous` is a parameter list: it follows a name (an identifier,
/// template arguments, an operator, an ABI tag), not a scope (`::(anonymous namespace)`,
/// Go's `.(*T)`) or the start.
fn is_parameter_list(previous: Option<&Piece<'_>>) -> bool {
    match previous {
        None => false,
        Some(Piece::Text(text)) => text.chars().next_back().is_some_and(is_ident),
        Some(Piece::Operator(_)) => true,
        Some(Piece::Group(open, _)) => matches!(open, '<' | '['),
    }
}

/// A C++ or Rust name shortened (see the module's documentation); `None` when it does not
/// parse.
fn cpp_short(name: &str) -> Option<String> {
    let name = [
        "non-virtual thunk to ",
        "virtual thunk to ",
        "covariant return thunk to ",
    ]
    .iter()
    .fold(name, |name, thunk| name.strip_prefix(thunk).unwrap_or(name));
    let all = pieces(name)?;
    // The name's pieces: parameter lists and what follows them up to a `::` (qualifiers,
    // `const`, `&&`) dropped.
    let mut kept: Vec<Piece<'_>> = Vec::with_capacity(all.len());
    let mut after_parameters = false;
    for piece in all {
        if after_parameters {
            match piece {
                Piece::Text(text) => match text.find("::") {
                    Some(scope) => {
                        after_parameters = false;
                        kept.push(Piece::Text(&text[scope..]));
                    }
                    None => continue,
                },
                _ => continue,
            }
            continue;
        }
        match piece {
            Piece::Group('(', _) if is_parameter_list(kept.last()) => after_parameters = true,
            Piece::Group('[', inner) if inner.starts_with("abi:") => {}
            _ => kept.push(piece),
        }
    }
    // Qualifiers a name carries without its parameter list (`operator() const`).
    if let Some(Piece::Text(text)) = kept.last_mut() {
        let mut rest = text.trim_end();
        while let Some(stripped) = [" const", " volatile", " &&", " &", " noexcept"]
            .iter()
            .find_map(|qualifier| rest.strip_suffix(qualifier))
        {
            rest = stripped.trim_end();
        }
        *text = rest;
        if rest.is_empty() {
            kept.pop();
        }
    }
    // The return type: everything up to the last space between pieces (not the one that
    // separates an operator from its template arguments: `std::operator<< <…>`).
    let return_type_end = kept
        .iter()
        .enumerate()
        .rposition(|(index, piece)| match piece {
            Piece::Text(text) if text.trim().is_empty() => {
                index > 0 && !matches!(kept[index - 1], Piece::Operator(_))
            }
            Piece::Text(text) => text.contains(' '),
            _ => false,
        });
    if let Some(index) = return_type_end {
        let Piece::Text(text) = kept[index] else {
            return None;
        };
        let rest = text.rsplit_once(' ').map_or("", |(_, rest)| rest);
        kept.drain(..index);
        kept[0] = Piece::Text(rest);
        if rest.is_empty() {
            kept.remove(0);
        }
    }
    let mut out = String::with_capacity(name.len().min(256));
    for (index, piece) in kept.iter().enumerate() {
        match *piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Operator(operator) => out.push_str(&conversion_short(operator)),
            Piece::Group('<', inner) if index == 0 => out.push_str(&qualified_path(inner)?),
            Piece::Group('<', _) => out.push_str("<…>"),
            Piece::Group('[', _) => out.push_str("[…]"),
            Piece::Group('(', "anonymous namespace") => out.push_str("(anon)"),
            Piece::Group('(', inner) => {
                out.push('(');
                out.push_str(inner);
                out.push(')');
            }
            Piece::Group(_, inner) => out.push_str(&braced(inner)),
        }
    }
    // A lambda is named by its closure type, without its call operator (also where a
    // lambda is inside a lambda: `f::{lambda#1}::{lambda#1}`).
    for call in ["}::operator()<…>::", "}::operator()::", "}::_FUN::"] {
        out = out.replace(call, "}::");
    }
    for call in ["::operator()<…>", "::operator()", "::_FUN"] {
        if out.ends_with(call) && out[..out.len() - call.len()].ends_with('}') {
            out.truncate(out.len() - call.len());
            break;
        }
    }
    Some(out)
}

/// A conversion operator with its type's template arguments elided (`operator
/// std::basic_string<…>`); other operators as they are.
fn conversion_short(operator: &str) -> Cow<'_, str> {
    match operator.strip_prefix("operator ") {
        Some(spelled) if spelled.contains('<') => {
            Cow::Owned(format!("operator {}", type_short(spelled)))
        }
        _ => Cow::Borrowed(operator),
    }
}

/// A braced group: a lambda's closure type without its parameters (`{lambda(int)#1}` is
/// `{lambda#1}`); Rust's closures (`{closure#0}`, `{{closure}}`) and the rest as they are.
fn braced(inner: &str) -> String {
    if let Some(rest) = inner.strip_prefix("lambda") {
        if let Some(number) = rest.rfind('#').map(|at| &rest[at..]) {
            return format!("{{lambda{number}}}");
        }
    }
    format!("{{{inner}}}")
}

/// A type or path with its template and generic arguments elided (`alloc::vec::Vec<…>`),
/// kept whole when it does not parse.
fn type_short(text: &str) -> String {
    let Some(all) = pieces(text) else {
        return text.to_owned();
    };
    let mut out = String::with_capacity(text.len());
    for (index, piece) in all.iter().enumerate() {
        match *piece {
            Piece::Text(text) | Piece::Operator(text) => out.push_str(text),
            Piece::Group('<', inner) if index == 0 => {
                out.push_str(&qualified_path(inner).unwrap_or_else(|| format!("<{inner}>")))
            }
            Piece::Group('<', _) => out.push_str("<…>"),
            Piece::Group(open, inner) => {
                let close = match open {
                    '(' => ')',
                    '[' => ']',
                    _ => '}',
                };
                out.push(open);
                out.push_str(inner);
                out.push(close);
            }
        }
    }
    out
}

/// A Rust qualified path's `<…>` at the start of a name: `<Type as Trait>` with the type's
/// generics elided and the trait's last segment (`<app::Cache as Drop>`), or an inherent
/// `<Type>` as the type itself when it is a path (`alloc::vec::Vec<…>`).
fn qualified_path(inner: &str) -> Option<String> {
    let parts = pieces(inner)?;
    let split = parts
        .iter()
        .enumerate()
        .find_map(|(index, piece)| match piece {
            Piece::Text(text) => text.find(" as ").map(|at| (index, at)),
            _ => None,
        });
    let Some((index, at)) = split else {
        let short = type_short(inner);
        let is_path = short
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_');
        return Some(if is_path && !short.contains(' ') {
            short
        } else {
            format!("<{short}>")
        });
    };
    // Where " as " is in `inner`: the lengths of the pieces before it, brackets included.
    let offset: usize = parts[..index]
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) | Piece::Operator(text) => text.len(),
            Piece::Group(_, inner) => inner.len() + 2,
        })
        .sum::<usize>()
        + at;
    let (self_type, trait_path) = (&inner[..offset], &inner[offset + " as ".len()..]);
    let trait_short = type_short(trait_path);
    let last = last_segment(&trait_short);
    Some(format!("<{} as {last}>", type_short(self_type)))
}

/// The last `::` segment of a path whose generics are elided.
fn last_segment(path: &str) -> &str {
    path.rsplit_once("::").map_or(path, |(_, last)| last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(cases: &[(&str, &str)]) {
        for (full, short) in cases {
            assert_eq!(short_name(full), *short, "{full}");
        }
    }

    #[test]
    fn c_names_and_labels_are_kept() {
        check(&[
            ("malloc", "malloc"),
            ("load_rows", "load_rows"),
            ("clear_arena.constprop.0", "clear_arena.constprop.0"),
            ("libc.so.6+0x153480", "libc.so.6+0x153480"),
            ("[kernel, for the process]", "[kernel, for the process]"),
            ("[0x7f0012345678]", "[0x7f0012345678]"),
            ("_dl_relocate_object", "_dl_relocate_object"),
            ("g_hash_table_insert", "g_hash_table_insert"),
        ]);
    }

    #[test]
    fn libstdcxx_names() {
        check(&[
            (
                "std::vector<int, std::allocator<int> >::_M_realloc_insert(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)",
                "std::vector<…>::_M_realloc_insert",
            ),
            ("operator new(unsigned long)", "operator new"),
            ("operator new[](unsigned long, std::nothrow_t const&)", "operator new[]"),
            ("operator delete(void*, unsigned long)", "operator delete"),
            (
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)",
                "std::__cxx11::basic_string<…>::_M_create",
            ),
            (
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string<std::allocator<char> >(char const*, std::allocator<char> const&)",
                "std::__cxx11::basic_string<…>::basic_string<…>",
            ),
            (
                "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
                "std::operator<< <…>",
            ),
            (
                "std::_Hashtable<int, std::pair<int const, int>, std::allocator<std::pair<int const, int> >, std::__detail::_Select1st, std::equal_to<int>, std::hash<int>, std::__detail::_Mod_range_hashing, std::__detail::_Default_ranged_hash, std::__detail::_Prime_rehash_policy, std::__detail::_Hashtable_traits<false, false, true> >::_M_rehash(unsigned long, unsigned long const&)",
                "std::_Hashtable<…>::_M_rehash",
            ),
            (
                "std::__detail::_Map_base<int, std::pair<int const, int>, std::allocator<std::pair<int const, int> >, std::__detail::_Select1st, std::equal_to<int>, std::hash<int>, std::__detail::_Mod_range_hashing, std::__detail::_Default_ranged_hash, std::__detail::_Prime_rehash_policy, std::__detail::_Hashtable_traits<false, false, true>, true>::operator[](int const&)",
                "std::__detail::_Map_base<…>::operator[]",
            ),
            (
                "std::locale::operator()(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&) const",
                "std::locale::operator()",
            ),
            (
                "std::ios_base::Init::Init()",
                "std::ios_base::Init::Init",
            ),
            (
                "std::basic_ios<char, std::char_traits<char> >::operator bool() const",
                "std::basic_ios<…>::operator bool",
            ),
            (
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::operator std::basic_string_view<char, std::char_traits<char> >() const",
                "std::__cxx11::basic_string<…>::operator std::basic_string_view<…>",
            ),
            (
                "bool std::operator< <char, std::char_traits<char>, std::allocator<char> >(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, char const*)",
                "std::operator< <…>",
            ),
            (
                "std::_Function_handler<void (), main::{lambda()#1}>::_M_invoke(std::_Any_data const&)",
                "std::_Function_handler<…>::_M_invoke",
            ),
            (
                "std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)(int), int> > >::_M_run()",
                "std::thread::_State_impl<…>::_M_run",
            ),
            (
                "void std::__uninitialized_default_n_1<true>::__uninit_default_n<int*, unsigned long>(int*, unsigned long)",
                "std::__uninitialized_default_n_1<…>::__uninit_default_n<…>",
            ),
            (
                "__gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*)",
                "__gnu_cxx::new_allocator<…>::allocate",
            ),
            (
                "std::chrono::duration<long, std::ratio<1l, 1000000000l> >::count() const",
                "std::chrono::duration<…>::count",
            ),
            (
                "std::__shared_ptr<int, (__gnu_cxx::_Lock_policy)2>::operator->() const",
                "std::__shared_ptr<…>::operator->",
            ),
            (
                "std::unique_ptr<int, std::default_delete<int> >::operator=(std::unique_ptr<int, std::default_delete<int> >&&) &",
                "std::unique_ptr<…>::operator=",
            ),
            (
                "non-virtual thunk to std::basic_stringstream<char, std::char_traits<char>, std::allocator<char> >::~basic_stringstream()",
                "std::basic_stringstream<…>::~basic_stringstream",
            ),
            (
                "std::__cxx11::to_string[abi:cxx11](int)",
                "std::__cxx11::to_string",
            ),
            (
                "operator\"\" _km(unsigned long long)",
                "operator\"\" _km",
            ),
        ]);
    }

    #[test]
    fn v8_names() {
        check(&[
            (
                "v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)",
                "v8::internal::Scavenger::ScavengePage",
            ),
            (
                "v8::internal::ScavengerCollector::JobTask::JobTask(v8::internal::ScavengerCollector*, std::vector<std::unique_ptr<v8::internal::Scavenger, std::default_delete<v8::internal::Scavenger> >, std::allocator<std::unique_ptr<v8::internal::Scavenger, std::default_delete<v8::internal::Scavenger> > > >*, std::vector<std::pair<v8::internal::ParallelWorkItem, v8::internal::MemoryChunk*>, std::allocator<std::pair<v8::internal::ParallelWorkItem, v8::internal::MemoryChunk*> > >, heap::base::Worklist<std::pair<v8::internal::HeapObject, int>, (unsigned short)256>*, v8::internal::Scavenger::PromotionList*)",
                "v8::internal::ScavengerCollector::JobTask::JobTask",
            ),
            (
                "void v8::internal::EvacuateVisitorBase::RawMigrateObject<(v8::internal::EvacuateVisitorBase::MigrationMode)0>(v8::internal::EvacuateVisitorBase*, v8::internal::HeapObject, v8::internal::HeapObject, int, v8::internal::AllocationSpace)",
                "v8::internal::EvacuateVisitorBase::RawMigrateObject<…>",
            ),
            (
                "v8::internal::MarkCompactCollector::CollectEvacuationCandidates(v8::internal::PagedSpace*) [clone .cold]",
                "v8::internal::MarkCompactCollector::CollectEvacuationCandidates",
            ),
            (
                "v8::internal::(anonymous namespace)::Invoke(v8::internal::Isolate*, v8::internal::(anonymous namespace)::InvokeParams const&)",
                "v8::internal::(anon)::Invoke",
            ),
            (
                "v8::internal::SlotCallbackResult v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>(v8::internal::FullHeapObjectSlot, v8::internal::HeapObject)",
                "v8::internal::Scavenger::ScavengeObject<…>",
            ),
            (
                "v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags)",
                "v8::internal::Heap::CollectGarbage",
            ),
            (
                "node::Start(int, char**)",
                "node::Start",
            ),
            (
                "Builtins_InterpreterEntryTrampoline",
                "Builtins_InterpreterEntryTrampoline",
            ),
        ]);
    }

    #[test]
    fn glib_and_gtkmm_names() {
        check(&[
            ("g_malloc", "g_malloc"),
            ("g_hash_table_resize.constprop.0", "g_hash_table_resize.constprop.0"),
            (
                "Glib::ustring::ustring(char const*)",
                "Glib::ustring::ustring",
            ),
            (
                "sigc::internal::slot_call0<sigc::bound_mem_functor0<void, App>, void>::call_it(sigc::internal::slot_rep*)",
                "sigc::internal::slot_call0<…>::call_it",
            ),
        ]);
    }

    #[test]
    fn anonymous_namespaces_and_lambdas() {
        check(&[
            (
                "(anonymous namespace)::Store<unsigned long>::fill(unsigned long)",
                "(anon)::Store<…>::fill",
            ),
            (
                "(anonymous namespace)::Store<unsigned int>::fill(unsigned long)",
                "(anon)::Store<…>::fill",
            ),
            (
                "main::{lambda(int)#1}::operator()(int) const",
                "main::{lambda#1}",
            ),
            (
                "build_index(unsigned long)::{lambda(unsigned long)#1}::operator()(unsigned long) const",
                "build_index::{lambda#1}",
            ),
            (
                "build_index(unsigned long)::{lambda(unsigned long)#2}::operator()(unsigned long) const",
                "build_index::{lambda#2}",
            ),
            (
                "main::{lambda()#1}::_FUN()",
                "main::{lambda#1}",
            ),
            (
                "auto run(int)::{lambda(auto:1)#1}::operator()<int>(int) const",
                "run::{lambda#1}",
            ),
            (
                "void (anonymous namespace)::visit<int>(int)::{lambda()#1}::operator()() const",
                "(anon)::visit<…>::{lambda#1}",
            ),
            (
                "foo()::Local::method(int)",
                "foo::Local::method",
            ),
            (
                "{lambda(int)#1}::operator()(int) const",
                "{lambda#1}",
            ),
            (
                "node::AsyncWrap::EmitDestroy(node::Environment*, double)::{lambda(node::Environment*)#1}::operator()(node::Environment*) const::{lambda(void*)#1}::_FUN(void*)",
                "node::AsyncWrap::EmitDestroy::{lambda#1}::{lambda#1}",
            ),
        ]);
    }

    #[test]
    fn rust_names() {
        check(&[
            ("rust_cache::fill_cache", "rust_cache::fill_cache"),
            ("alloc::alloc::alloc", "alloc::alloc::alloc"),
            ("rust_cache::main::h0123456789abcdef", "rust_cache::main"),
            ("<alloc::vec::Vec<T>>::push", "alloc::vec::Vec<…>::push"),
            (
                "<alloc::vec::Vec<u8> as core::ops::drop::Drop>::drop",
                "<alloc::vec::Vec<…> as Drop>::drop",
            ),
            (
                "<app::Cache as core::ops::drop::Drop>::drop",
                "<app::Cache as Drop>::drop",
            ),
            (
                "core::ptr::drop_in_place::<app::Cache>",
                "core::ptr::drop_in_place::<…>",
            ),
            (
                "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>",
                "core::ptr::drop_in_place<…>",
            ),
            (
                "<F as core::ops::function::FnOnce<()>>::call_once",
                "<F as FnOnce<…>>::call_once",
            ),
            ("<[u8]>::to_vec", "<[u8]>::to_vec"),
            ("<&mut W as core::fmt::Write>::write_str", "<&mut W as Write>::write_str"),
            (
                "<std::sync::once::Once>::call_once_force::<<std::sync::once_lock::OnceLock<std::io::Stdout>>::initialize<F>::{closure#0}>",
                "std::sync::once::Once::call_once_force::<…>",
            ),
            ("app::build::{closure#0}", "app::build::{closure#0}"),
            ("app::build::{{closure}}", "app::build::{{closure}}"),
            (
                "std::rt::lang_start::<()>::{closure#0}",
                "std::rt::lang_start::<…>::{closure#0}",
            ),
            (
                "<hashbrown::raw::RawTable<(u64, alloc::vec::Vec<u8>)>>::reserve_rehash::<hashbrown::map::make_hasher<u64, alloc::vec::Vec<u8>, std::hash::random::RandomState>::{closure#0}>",
                "hashbrown::raw::RawTable<…>::reserve_rehash::<…>",
            ),
        ]);
    }

    #[test]
    fn go_names() {
        check(&[
            ("main.fillCache", "main.fillCache"),
            ("main.(*Store).Put", "main.(*Store).Put"),
            ("sync.(*Pool).Get", "sync.(*Pool).Get"),
            (
                "runtime.gcBgMarkWorker.func2",
                "runtime.gcBgMarkWorker.func2",
            ),
            ("main.Sum[go.shape.int]", "main.Sum[…]"),
            ("main.(*List[go.shape.string]).Push", "main.(*List[…]).Push"),
            ("type:.eq.[2]interface {}", "type:.eq.[2]interface {}"),
            (
                "github.com/me/app/store.(*DB).Put",
                "github.com/me/app/store.(*DB).Put",
            ),
        ]);
    }

    #[test]
    fn jit_names() {
        check(&[
            ("JS:*holdObjects /tmp/app/main.js:3:21", "holdObjects"),
            ("JS:~holdObjects /tmp/app/main.js:3:21", "holdObjects"),
            ("JS:^holdBuffers /tmp/app/main.js:9:21", "holdBuffers"),
            ("JS:~ /tmp/app/main.js:1:1", "(anonymous main.js:1)"),
            ("Builtin:ArrayPrototypePush", "Builtin:ArrayPrototypePush"),
            ("py::load_rows:/srv/app/rows.py", "load_rows"),
        ]);
    }

    /// Against a real parser: for C++ symbols of libstdc++ and of Node.js's V8 (templates,
    /// operators, lambdas, anonymous namespaces, ABI tags, clones, thunks, conversion
    /// operators), the short name of the full demangling is the short name of what
    /// `cpp_demangle` gives without parameters and return type: the shortener finds the
    /// parameter lists and return types the parser does.
    #[test]
    fn agrees_with_cpp_demangle() {
        use cpp_demangle::{DemangleOptions, Symbol};
        let mangled = include_str!("../../../tests/fixtures/mangled-cxx.txt");
        let mut checked = 0;
        for line in mangled
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
        {
            let Ok(symbol) = Symbol::new(line) else {
                continue;
            };
            let Ok(full) = symbol.demangle() else {
                continue;
            };
            let Ok(bare) =
                symbol.demangle_with_options(&DemangleOptions::new().no_params().no_return_type())
            else {
                continue;
            };
            // A data symbol (a vtable, a guard variable: `{vtable(T)}`) is no function.
            if !full.contains('(') || full.starts_with('{') || line.starts_with("_ZGV") {
                continue;
            }
            let short = short_name(&full);
            assert_eq!(short, short_name(&bare), "{line}\n{full}\n{bare}");
            let rest = short.replace("operator()", "").replace("(anon)", "");
            assert!(!rest.contains('('), "{full}: {short}");
            checked += 1;
        }
        assert!(checked > 900, "{checked} symbols checked");
    }

    #[test]
    fn unbalanced_names_are_kept() {
        check(&[("a<b", "a<b"), ("f(int", "f(int"), ("x)y(", "x)y(")]);
    }

    #[test]
    fn scope_tails() {
        for (name, tail) in [
            (
                "v8::internal::FactoryBase<…>::NewFixedArrayWithFiller",
                "FactoryBase<…>::NewFixedArrayWithFiller",
            ),
            (
                "std::vector<…>::_M_realloc_insert",
                "vector<…>::_M_realloc_insert",
            ),
            ("(anon)::Store<…>::fill", "Store<…>::fill"),
            ("<app::Cache as Drop>::drop", "<app::Cache as Drop>::drop"),
            ("operator new", "operator new"),
            ("Scanner::Initialize", "Scanner::Initialize"),
            ("malloc", "malloc"),
            ("runtime.mallocgc", "runtime.mallocgc"),
        ] {
            assert_eq!(scope_tail(name, 2), tail, "{name}");
        }
    }

    #[test]
    fn closures_and_clones_are_their_function() {
        for (name, go, function) in [
            ("app::build::{{closure}}", false, "app::build"),
            ("app::build::{{closure}}::{{closure}}", false, "app::build"),
            ("app::build::{closure#0}", false, "app::build"),
            ("build_index::{lambda#1}", false, "build_index"),
            ("build_index::{lambda#1}::{lambda#2}", false, "build_index"),
            ("{lambda#1}", false, "{lambda#1}"),
            ("main.buildJournal.func1", true, "main.buildJournal"),
            ("main.buildJournal.func2.1", true, "main.buildJournal"),
            ("main.serve.gowrap1", true, "main.serve"),
            ("main.part", true, "main.part"),
            ("main.cold", true, "main.cold"),
            ("main.main", true, "main.main"),
            ("clear_arena.constprop.0", false, "clear_arena"),
            ("load.part.0", false, "load"),
            ("load.cold", false, "load"),
            ("load.isra.0.cold", false, "load"),
            ("main", false, "main"),
            ("libc.so.6+0x153480", false, "libc.so.6+0x153480"),
        ] {
            assert_eq!(enclosing_function(name, go), function, "{name}");
        }
    }

    #[test]
    fn full_naming_keeps_names() {
        let frames = vec![FrameInfo {
            function: "std::vector<int, std::allocator<int> >::push_back(int const&)".to_owned(),
            file: Some("/usr/include/c++/12/bits/stl_vector.h".to_owned()),
            line: Some(1287),
            inlined: true,
        }];
        assert_eq!(Naming::Full.frames(&frames), frames);
        let short = Naming::Short.frames(&frames);
        assert_eq!(short[0].function, "std::vector<…>::push_back");
        assert_eq!(short[0].line, Some(1287));
    }
}
