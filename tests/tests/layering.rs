//! How the crates may reach into each other, checked over their sources.
//!
//! `envelope_core::__private` exists for the code `#[tool]` and `toolset!` generate, as serde's
//! does for its derives: its items change without notice. A sibling crate that needs a stage of
//! the pipeline uses the documented `envelope_core::stage` instead. Only the crate that defines
//! the module and the macro crate that emits paths into it may name it; the compile-fail
//! fixtures under `tests/compile/tests/ui` name it on purpose, to show that user code cannot.
//!
//! Each crate names the workspace crates it may depend on ([`ALLOWED`], normal and build
//! dependencies; dev dependencies aside): the real graph, not a line, so that the agent's kits
//! (envelope-client, envelope-check) cannot come to depend on the server (envelope-mcp), and
//! the dialect stage sees only core and the budget stage. The graph has no circle.
//!
//! Inside a crate, no modules import each other in a circle. Circles are looked for among
//! siblings at every level: among a crate's top-level modules (a module's submodules counted as
//! the module), and among the children of each module (their own submodules counted as them).
//! A module naming its parent or its children is no circle between siblings.
//!
//! A module names another when its code (not its comments, nor its `#[cfg(test)]` items, which
//! may reach anything) writes a path that leads there: `crate::a::b::…`, `super::…`, `self::…`,
//! or a path that starts with a name a `use` brought in. A path through an item a module
//! re-exports (`crate::Envelope`, from the crate root's `pub use envelope::Envelope`) leads to
//! the module that defines the item, for that is how a circle hides. Every crate root of every
//! member is read: libraries, binaries, integration tests, benches, examples.
//!
//! What the reading does not see: a name that only a glob (`use a::*`) brings in (the glob
//! itself names `a`); `$crate::…` in a `macro_rules!` body (the macro's caller names it); code a
//! macro or a build script generates.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Where `__private` may be named: the defining crate, the crate whose output names it, the
/// fixtures that show user code cannot, and this check.
const MAY_NAME_PRIVATE: &[&str] = &[
    "envelope-core/src/",
    "envelope-derive/src/",
    "tests/compile/tests/ui/",
    "tests/tests/layering.rs",
];

/// Each workspace crate, and the workspace crates it may depend on (normal and build
/// dependencies). Every member must be listed; a dependency not listed for its crate fails.
const ALLOWED: &[(&str, &[&str])] = &[
    ("envelope-derive", &[]),
    ("envelope-core", &["envelope-derive"]),
    ("envelope-budget", &["envelope-core"]),
    ("envelope-dialect", &["envelope-core", "envelope-budget"]),
    (
        "envelope-mcp",
        &["envelope-core", "envelope-budget", "envelope-dialect"],
    ),
    // The agent's side: it reads envelopes and dialects, never the server's code.
    (
        "envelope-client",
        &["envelope-core", "envelope-budget", "envelope-dialect"],
    ),
    (
        "envelope-check",
        &[
            "envelope-core",
            "envelope-budget",
            "envelope-dialect",
            "envelope-client",
        ],
    ),
    // Any MCP server fronted: it serves (envelope-mcp) what it reads from the upstream with the
    // checker's bounded framing (envelope-check), entered once, from above.
    (
        "envelope-proxy",
        &[
            "envelope-core",
            "envelope-budget",
            "envelope-mcp",
            "envelope-check",
        ],
    ),
    // What uses them.
    ("workspace-server", &["envelope-core", "envelope-mcp"]),
    ("envelope-conformance", &["envelope-core", "envelope-mcp"]),
    ("envelope-downstream", &["envelope-core", "envelope-mcp"]),
    (
        "xtask",
        &[
            "envelope-core",
            "envelope-budget",
            "envelope-dialect",
            "envelope-mcp",
            "envelope-check",
            "envelope-proxy",
            "workspace-server",
        ],
    ),
    ("envelope-tests", &[]),
    ("envelope-compile-tests", &[]),
];

/// The module circles that exist today, each as its crate (its label: the package, or
/// `package (bin name)`, `package (test name)`, …) and its members (sorted, comma-joined, full
/// module paths).
///
/// Empty, and meant to stay so: it is a debt, not a licence, and it can only shrink. The test
/// fails on a circle that is not listed here, and on a listed circle that no longer stands as
/// listed; a circle broken in part is listed again as what is left of it (the failure prints
/// the line to write).
const KNOWN_CIRCLES: &[(&str, &str)] = &[];

/// The workspace's root directory.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, skipping build output.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target"
                && name != "node_modules"
                && !name.to_string_lossy().starts_with('.')
            {
                rust_files(&path, found);
            }
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn only_generated_code_names_the_private_module() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(
        files.len() > 50,
        "the walk found the workspace: {}",
        files.len()
    );
    let offenders: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let relative = path
                .strip_prefix(&root)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            let allowed = MAY_NAME_PRIVATE
                .iter()
                .any(|prefix| relative.starts_with(prefix));
            let text = std::fs::read_to_string(path).ok()?;
            (!allowed && text.contains("__private")).then_some(relative)
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "these files name `envelope_core::__private`, which only generated code may use; use \
         `envelope_core::stage`: {offenders:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Reading Rust: just enough to find the paths a file names.

/// A token of Rust source, with comments, lifetimes and literals other than strings dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
    /// A string literal's text, escapes unread (for `#[path = "…"]`).
    Str(String),
}

/// The index just past the string literal whose opening `"` is at `at`.
fn skip_string(chars: &[char], at: usize) -> usize {
    let mut i = at + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// The index just past the raw string whose hashes (or opening `"`) start at `at`, or `None`
/// when no raw string starts there.
fn skip_raw_string(chars: &[char], at: usize) -> Option<usize> {
    let mut i = at;
    while chars.get(i) == Some(&'#') {
        i += 1;
    }
    if chars.get(i) != Some(&'"') {
        return None;
    }
    let hashes = i - at;
    i += 1;
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(chars.len())
}

/// The index just past the character literal, or the lifetime, whose `'` is at `at`.
fn skip_quote(chars: &[char], at: usize) -> usize {
    let next = |k: usize| chars.get(at + k).copied();
    if next(1) == Some('\\') {
        // `'\n'`, `'\''`, `'\u{1F600}'`: skip the escaped character, then up to the `'`.
        let mut i = at + 3;
        while i < chars.len() && chars[i] != '\'' {
            i += 1;
        }
        return i + 1;
    }
    if next(2) == Some('\'') {
        return at + 3;
    }
    // A lifetime or a label.
    let mut i = at + 1;
    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
        i += 1;
    }
    i
}

/// The string literal whose text runs from `start` to just before the closing quote at
/// `end - 1` (or the end of the file).
fn string_token(chars: &[char], start: usize, end: usize) -> Token {
    let end = end.saturating_sub(1).max(start).min(chars.len());
    Token::Str(chars[start.min(end)..end].iter().collect())
}

/// `path` with its `.` and `..` components taken out: `benches/../tests/x.rs` is `tests/x.rs`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|last| *last != "..") => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    parts.join("/")
}

/// The tokens of `text`.
fn lex(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let at = |k: usize| chars.get(k).copied().unwrap_or('\0');
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 1;
            i += 2;
            while i < chars.len() && depth > 0 {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            let end = skip_string(&chars, i);
            tokens.push(string_token(&chars, i + 1, end));
            i = end;
        } else if c == '\'' {
            i = skip_quote(&chars, i);
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            match (word.as_str(), at(i)) {
                ("b" | "c", '"') => {
                    let end = skip_string(&chars, i);
                    tokens.push(string_token(&chars, i + 1, end));
                    i = end;
                }
                ("b", '\'') => i = skip_quote(&chars, i),
                ("r" | "br" | "cr", '"' | '#') if skip_raw_string(&chars, i).is_some() => {
                    let end = skip_raw_string(&chars, i).unwrap_or(chars.len());
                    let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
                    tokens.push(string_token(&chars, i + hashes + 1, end - hashes));
                    i = end;
                }
                ("r", '#') if at(i + 1).is_alphabetic() || at(i + 1) == '_' => {
                    // A raw identifier, `r#type`: kept raw, so no keyword is read into it.
                    i += 1;
                    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                        i += 1;
                    }
                    tokens.push(Token::Ident(chars[start..i].iter().collect()));
                }
                _ => tokens.push(Token::Ident(word)),
            }
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (chars[i].is_alphanumeric()
                    || chars[i] == '_'
                    || (chars[i] == '.' && at(i + 1).is_ascii_digit()))
            {
                i += 1;
            }
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push(Token::PathSep);
            i += 2;
        } else {
            tokens.push(Token::Punct(c));
            i += 1;
        }
    }
    tokens
}

/// Whether `token` is the identifier `word`.
fn is_ident(token: Option<&Token>, word: &str) -> bool {
    matches!(token, Some(Token::Ident(name)) if name == word)
}

/// The index just past the item that starts at `start`: through its `;` or its closing `}`.
/// Stops before a `}` or `)` that closes what encloses the item.
fn skip_item(tokens: &[Token], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(close @ (')' | ']' | '}')) => {
                if depth == 0 {
                    return i;
                }
                depth -= 1;
                if depth == 0 && *close == '}' {
                    return i + 1;
                }
            }
            Token::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    tokens.len()
}

/// The index of the `]` that closes the `[` at `open`.
fn closing_bracket(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        match token {
            Token::Punct('[') => depth += 1,
            Token::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

/// A leaf of a `use` tree: the name it brings in (none for a glob or `as _`) and its path.
type UseLeaf = (Option<String>, Vec<String>);

/// Reads the `use` tree at `*i` under `prefix`, adding its leaves to `leaves`.
fn parse_use_tree(
    tokens: &[Token],
    i: &mut usize,
    mut prefix: Vec<String>,
    leaves: &mut Vec<UseLeaf>,
) {
    if tokens.get(*i) == Some(&Token::PathSep) {
        // `use ::serde::…` names an extern crate.
        prefix.push("::".to_owned());
        *i += 1;
    }
    loop {
        match tokens.get(*i) {
            Some(Token::Ident(segment)) => {
                *i += 1;
                if tokens.get(*i) == Some(&Token::PathSep) {
                    prefix.push(segment.clone());
                    *i += 1;
                    continue;
                }
                let (path, mut name) = if segment == "self" {
                    (prefix.clone(), prefix.last().cloned())
                } else {
                    let mut path = prefix.clone();
                    path.push(segment.clone());
                    (path, Some(segment.clone()))
                };
                if is_ident(tokens.get(*i), "as") {
                    name = match tokens.get(*i + 1) {
                        Some(Token::Ident(alias)) if alias != "_" => Some(alias.clone()),
                        _ => None,
                    };
                    *i += 2;
                }
                leaves.push((name, path));
                return;
            }
            Some(Token::Punct('{')) => {
                *i += 1;
                loop {
                    match tokens.get(*i) {
                        None => return,
                        Some(Token::Punct('}')) => {
                            *i += 1;
                            return;
                        }
                        Some(Token::Punct(',')) => *i += 1,
                        Some(_) => {
                            let before = *i;
                            parse_use_tree(tokens, i, prefix.clone(), leaves);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            Some(Token::Punct('*')) => {
                *i += 1;
                prefix.push("*".to_owned());
                leaves.push((None, prefix));
                return;
            }
            _ => return,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The module graph of one crate.

/// A module path inside a crate: `["http", "serve"]`; the crate root is empty.
type ModPath = Vec<String>;

/// What one module holds, as far as naming goes.
#[derive(Debug, Default)]
struct Module {
    /// The file its code is in.
    file: String,
    /// Its child modules, declared `mod name;` or `mod name { … }`.
    children: BTreeSet<String>,
    /// The names its item-level `use`s bring in, each with its path as written.
    uses: BTreeMap<String, Vec<String>>,
    /// The names `use`s inside its functions and blocks bring in: only its own code sees them.
    local_uses: BTreeMap<String, Vec<String>>,
    /// Every path its code writes, as written.
    named: Vec<Vec<String>>,
}

/// The modules of one crate.
#[derive(Debug, Default)]
struct ModuleGraph {
    modules: BTreeMap<ModPath, Module>,
    /// Modules declared `mod name;` whose file was not found.
    missing: Vec<String>,
}

/// The module graph of the crate whose root file is `root`, its files given as
/// `(path, text)` pairs keyed by path (`src/lib.rs`, `src/http/mod.rs`, …). Modules follow
/// the `mod` declarations from the root, as the compiler does, `#[path = "…"]` included.
fn module_graph(files: &BTreeMap<String, String>, root: &str) -> ModuleGraph {
    let mut graph = ModuleGraph::default();
    let dir = root
        .rsplit_once('/')
        .map_or(String::new(), |(dir, _)| format!("{dir}/"));
    add_file_module(&mut graph, files, Vec::new(), root, dir);
    graph
}

/// Adds the module `path` whose code is the file `file`; its child files are under `dir`.
fn add_file_module(
    graph: &mut ModuleGraph,
    files: &BTreeMap<String, String>,
    path: ModPath,
    file: &str,
    dir: String,
) {
    let Some(text) = files.get(file) else {
        // A `#[path]` out of the crate's directory includes another crate's file, whose own
        // check reads it; a file missing inside it is a mistake.
        if !file.starts_with("../") {
            graph.missing.push(file.to_owned());
        }
        return;
    };
    let tokens = lex(text);
    let mut i = 0;
    parse_module(graph, files, &tokens, &mut i, path, file, dir, false);
}

/// Reads the body of module `path` from `tokens[*i..]`: to the end of the file, or for an
/// inline module (`inline`), through the `}` that closes it.
#[allow(clippy::too_many_arguments)]
fn parse_module(
    graph: &mut ModuleGraph,
    files: &BTreeMap<String, String>,
    tokens: &[Token],
    i: &mut usize,
    path: ModPath,
    file: &str,
    dir: String,
    inline: bool,
) {
    let mut module = Module {
        file: file.to_owned(),
        ..Module::default()
    };
    // Its `mod name;` children, each with the file a `#[path]` names for it.
    let mut file_children: Vec<(String, Option<String>)> = Vec::new();
    // The `#[path = "…"]` on the item being read.
    let mut path_attribute: Option<String> = None;
    // The depth of braces inside this module's body.
    let mut depth = 0usize;
    while *i < tokens.len() {
        let here = *i;
        let previous = |back: usize| here.checked_sub(back).and_then(|k| tokens.get(k));
        match &tokens[*i] {
            Token::Punct('{') => {
                depth += 1;
                path_attribute = None;
                *i += 1;
            }
            Token::Punct(';') => {
                path_attribute = None;
                *i += 1;
            }
            Token::Punct('}') => {
                path_attribute = None;
                *i += 1;
                if depth == 0 {
                    if inline {
                        break;
                    }
                } else {
                    depth -= 1;
                }
            }
            Token::Punct('#') => {
                let open = if tokens.get(*i + 1) == Some(&Token::Punct('!')) {
                    *i + 2
                } else {
                    *i + 1
                };
                if tokens.get(open) != Some(&Token::Punct('[')) {
                    *i += 1;
                    continue;
                }
                let close = closing_bracket(tokens, open);
                let cfg_test = [
                    Token::Ident("cfg".to_owned()),
                    Token::Punct('('),
                    Token::Ident("test".to_owned()),
                    Token::Punct(')'),
                ];
                if tokens.get(open + 1..close) == Some(&cfg_test[..]) {
                    // A test-only item: tests may reach anything.
                    *i = skip_item(tokens, close + 1);
                } else if let Some([Token::Ident(name), Token::Punct('='), Token::Str(value)]) =
                    tokens.get(open + 1..close)
                    && name == "path"
                {
                    path_attribute = Some(value.clone());
                    *i = close + 1;
                } else {
                    *i = open + 1;
                }
            }
            Token::Ident(word) if word == "mod" => {
                let (Some(Token::Ident(name)), Some(after)) =
                    (tokens.get(*i + 1), tokens.get(*i + 2))
                else {
                    *i += 1;
                    continue;
                };
                let name = name.clone();
                match after {
                    Token::Punct(';') => {
                        module.children.insert(name.clone());
                        file_children.push((name, path_attribute.take()));
                        *i += 3;
                    }
                    Token::Punct('{') => {
                        module.children.insert(name.clone());
                        *i += 3;
                        let mut child = path.clone();
                        child.push(name.clone());
                        parse_module(
                            graph,
                            files,
                            tokens,
                            i,
                            child,
                            file,
                            format!("{dir}{name}/"),
                            true,
                        );
                    }
                    _ => *i += 1,
                }
            }
            Token::Ident(word)
                if word == "use" && tokens.get(*i + 1) != Some(&Token::Punct('<')) =>
            {
                *i += 1;
                let mut leaves = Vec::new();
                parse_use_tree(tokens, i, Vec::new(), &mut leaves);
                while *i < tokens.len() && tokens[*i] != Token::Punct(';') {
                    *i += 1;
                }
                for (name, used) in leaves {
                    if let Some(name) = name {
                        let scope = if depth == 0 {
                            &mut module.uses
                        } else {
                            &mut module.local_uses
                        };
                        scope.insert(name, used.clone());
                    }
                    module.named.push(used);
                }
            }
            Token::Ident(word)
                if word == "in"
                    && previous(1) == Some(&Token::Punct('('))
                    && is_ident(previous(2), "pub") =>
            {
                // `pub(in crate::a)` bounds a visibility; it uses nothing.
                *i += 1;
                while matches!(tokens.get(*i), Some(Token::Ident(_) | Token::PathSep)) {
                    *i += 1;
                }
            }
            Token::Ident(first) if tokens.get(*i + 1) == Some(&Token::PathSep) => {
                let after_dot_or_sep =
                    matches!(previous(1), Some(Token::PathSep | Token::Punct('.')));
                // `$crate::…` in a `macro_rules!` body is a path the macro's caller expands.
                let macro_crate = previous(1) == Some(&Token::Punct('$'));
                let mut written = vec![first.clone()];
                *i += 1;
                while tokens.get(*i) == Some(&Token::PathSep) {
                    let Some(Token::Ident(segment)) = tokens.get(*i + 1) else {
                        break;
                    };
                    written.push(segment.clone());
                    *i += 2;
                }
                if !after_dot_or_sep && !macro_crate {
                    module.named.push(written);
                }
            }
            _ => *i += 1,
        }
    }
    for (name, path_attribute) in file_children {
        let mut child = path.clone();
        child.push(name.clone());
        if let Some(relative) = path_attribute {
            // Relative to the declaring file's directory; the file it names is read like a
            // `mod.rs`, its own children beside it.
            let here = file.rsplit_once('/').map_or("", |(dir, _)| dir);
            let child_file = normalize(&format!("{here}/{relative}"));
            let child_dir = child_file
                .rsplit_once('/')
                .map_or(String::new(), |(dir, _)| format!("{dir}/"));
            add_file_module(graph, files, child, &child_file, child_dir);
            continue;
        }
        let flat = format!("{dir}{name}.rs");
        let nested = format!("{dir}{name}/mod.rs");
        let child_file = if files.contains_key(&flat) {
            flat
        } else {
            nested
        };
        add_file_module(graph, files, child, &child_file, format!("{dir}{name}/"));
    }
    graph.modules.insert(path, module);
}

impl ModuleGraph {
    /// Where `path`, written in module `from`, leads: the deepest module it passes through,
    /// following `use` names (so an item re-exported elsewhere leads to where it is defined),
    /// and whether the whole path is that module. `None` for a path out of the crate (or to a
    /// local item that is no module).
    fn resolve(
        &self,
        from: &[String],
        path: &[String],
        own_code: bool,
        depth: usize,
    ) -> Option<(ModPath, bool)> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let (mut at, rest, bare) = match path[0].as_str() {
            "crate" => (Vec::new(), &path[1..], false),
            "self" => (from.to_vec(), &path[1..], false),
            "super" => (from.to_vec(), path, false),
            _ => (from.to_vec(), path, true),
        };
        for (k, segment) in rest.iter().enumerate() {
            if segment == "super" {
                at.pop()?;
                continue;
            }
            let module = self.modules.get(&at)?;
            if module.children.contains(segment) {
                at.push(segment.clone());
                continue;
            }
            let first_of_bare = bare && k == 0;
            let target = module.uses.get(segment).or(if first_of_bare && own_code {
                module.local_uses.get(segment)
            } else {
                None
            });
            let resolved = target.and_then(|target| self.resolve(&at, target, false, depth + 1));
            match resolved {
                Some((module, true)) => at = module,
                Some((module, false)) => return Some((module, false)),
                None if first_of_bare => return None,
                // An item `at` defines (or a name of another crate `at` re-exports).
                None => return Some((at, false)),
            }
        }
        Some((at, true))
    }

    /// Which module names which other, each pair with one place that shows it.
    fn edges(&self) -> BTreeMap<(ModPath, ModPath), String> {
        let mut edges = BTreeMap::new();
        for (from, module) in &self.modules {
            for written in &module.named {
                let Some((to, _)) = self.resolve(from, written, true, 0) else {
                    continue;
                };
                if &to != from {
                    edges
                        .entry((from.clone(), to))
                        .or_insert_with(|| format!("{} names {}", module.file, written.join("::")));
                }
            }
        }
        edges
    }
}

/// A module path as written: `http::serve`, or `crate` for the root.
fn display(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// Sibling modules that name each other in a circle.
#[derive(Debug)]
struct Circle {
    /// Its members, full module paths, sorted.
    members: Vec<String>,
    /// A closed walk through every member: `a → b → c → a`.
    cycle: Vec<String>,
    /// For each step of the walk, one place that takes it.
    steps: Vec<String>,
}

impl Circle {
    /// The members, comma-joined: the key of `KNOWN_CIRCLES`.
    fn key(&self) -> String {
        self.members.join(",")
    }
}

/// The nodes every node reaches over `edges` (itself included).
fn reachable(node: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let mut seen = BTreeSet::from([node.to_owned()]);
    let mut queue = VecDeque::from([node.to_owned()]);
    while let Some(next) = queue.pop_front() {
        for to in edges.get(&next).into_iter().flatten() {
            if seen.insert(to.clone()) {
                queue.push_back(to.clone());
            }
        }
    }
    seen
}

/// The strongly connected components of `nodes` with more than one member.
fn circles_among(
    nodes: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<BTreeSet<String>> {
    let reach: BTreeMap<&String, BTreeSet<String>> = nodes
        .iter()
        .map(|node| (node, reachable(node, edges)))
        .collect();
    let mut placed = BTreeSet::new();
    let mut components = Vec::new();
    for node in nodes {
        if placed.contains(node) {
            continue;
        }
        let component: BTreeSet<String> = reach[node]
            .iter()
            .filter(|other| reach.get(other).is_some_and(|back| back.contains(node)))
            .cloned()
            .collect();
        placed.extend(component.iter().cloned());
        if component.len() > 1 {
            components.push(component);
        }
    }
    components
}

/// The shortest path from `from` to `to` inside `within`, both ends included.
fn shortest_path(
    from: &str,
    to: &str,
    within: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = VecDeque::from([from.to_owned()]);
    while let Some(next) = queue.pop_front() {
        for step in edges.get(&next).into_iter().flatten() {
            if !within.contains(step) {
                continue;
            }
            if step == to {
                let mut path = vec![to.to_owned()];
                let mut back = next.clone();
                loop {
                    path.push(back.clone());
                    match came_from.get(&back) {
                        Some(earlier) if back != from => back = earlier.clone(),
                        _ => break,
                    }
                }
                path.reverse();
                return path;
            }
            if step == from || came_from.contains_key(step) {
                continue;
            }
            came_from.insert(step.clone(), next.clone());
            queue.push_back(step.clone());
        }
    }
    Vec::new()
}

/// A cycle through every member of `component`, each once, when one is found within a
/// bounded search; otherwise a closed walk through all of them along shortest paths.
fn cycle_through(
    component: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    fn extend(
        path: &mut Vec<String>,
        component: &BTreeSet<String>,
        edges: &BTreeMap<String, BTreeSet<String>>,
        budget: &mut usize,
    ) -> bool {
        let (Some(first), Some(last)) = (path.first().cloned(), path.last().cloned()) else {
            return false;
        };
        if path.len() == component.len() {
            return edges.get(&last).is_some_and(|to| to.contains(&first));
        }
        for next in edges.get(&last).into_iter().flatten() {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            if component.contains(next) && !path.contains(next) {
                path.push(next.clone());
                if extend(path, component, edges, budget) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let Some(start) = component.first() else {
        return Vec::new();
    };
    let mut path = vec![start.clone()];
    let mut budget = 200_000;
    if extend(&mut path, component, edges, &mut budget) {
        path.push(start.clone());
        return path;
    }
    let mut walk = vec![start.clone()];
    for member in component.iter().skip(1).chain([start]) {
        if walk.contains(member) && member != start {
            continue;
        }
        let here = walk.last().cloned().unwrap_or_default();
        walk.extend(
            shortest_path(&here, member, component, edges)
                .into_iter()
                .skip(1),
        );
    }
    walk
}

/// Every circle among sibling modules of `graph`, at every level.
fn circles(graph: &ModuleGraph) -> Vec<Circle> {
    let edges = graph.edges();
    let mut found = Vec::new();
    for (parent, module) in &graph.modules {
        if module.children.len() < 2 {
            continue;
        }
        let level = parent.len();
        let mut siblings: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut why: BTreeMap<(String, String), &String> = BTreeMap::new();
        for ((from, to), example) in &edges {
            let below = |path: &ModPath| path.len() > level && path.starts_with(parent);
            if below(from) && below(to) && from[level] != to[level] {
                siblings
                    .entry(from[level].clone())
                    .or_default()
                    .insert(to[level].clone());
                why.entry((from[level].clone(), to[level].clone()))
                    .or_insert(example);
            }
        }
        let qualify = |name: &String| {
            let mut path = parent.clone();
            path.push(name.clone());
            display(&path)
        };
        for component in circles_among(&module.children, &siblings) {
            let cycle = cycle_through(&component, &siblings);
            let steps = cycle
                .windows(2)
                .map(|step| {
                    let example = why
                        .get(&(step[0].clone(), step[1].clone()))
                        .map_or("?", |example| example.as_str());
                    format!("{} → {}: {example}", qualify(&step[0]), qualify(&step[1]))
                })
                .collect();
            found.push(Circle {
                members: component.iter().map(qualify).collect(),
                cycle: cycle.iter().map(qualify).collect(),
                steps,
            });
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// The workspace: its members, their manifests, their crate roots.

/// One package of the workspace.
#[derive(Debug)]
struct Member {
    /// Its directory, relative to the workspace root.
    dir: String,
    /// Its package name.
    name: String,
    manifest: String,
}

/// The quoted strings of the `members = [ … ]` array of the workspace manifest.
fn member_dirs(manifest: &str) -> Vec<String> {
    let Some(start) = manifest.find("members") else {
        return Vec::new();
    };
    let rest = &manifest[start..];
    let Some(array) = rest.find('[').and_then(|open| {
        rest[open..]
            .find(']')
            .map(|close| &rest[open + 1..open + close])
    }) else {
        return Vec::new();
    };
    array
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .flat_map(|line| line.split(','))
        .map(|item| item.trim().trim_matches('"').to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

/// The workspace's members, read from its manifest.
fn workspace_members() -> Vec<Member> {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    member_dirs(&manifest)
        .into_iter()
        .map(|dir| {
            let manifest = std::fs::read_to_string(root.join(&dir).join("Cargo.toml"))
                .unwrap_or_else(|error| panic!("{dir}/Cargo.toml: {error}"));
            let name = package_name(&manifest).unwrap_or_else(|| panic!("{dir}: no package name"));
            Member {
                dir,
                name,
                manifest,
            }
        })
        .collect()
}

/// A manifest's lines, each with its table header (`dependencies`, `package`, …), comments
/// and blank lines left out.
fn manifest_lines(manifest: &str) -> Vec<(String, String)> {
    let mut table = String::new();
    let mut lines = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            table = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_owned();
            continue;
        }
        lines.push((table.clone(), line.to_owned()));
    }
    lines
}

/// The string value of `key = "…"` in `line`, wherever it stands.
fn string_value(line: &str, key: &str) -> Option<String> {
    let mut search = line;
    while let Some(at) = search.find(key) {
        let before = search[..at].chars().last();
        let rest = search[at + key.len()..].trim_start();
        if before.is_none_or(|c| c == ' ' || c == '{' || c == ',')
            && let Some(value) = rest.strip_prefix('=')
            && let Some(value) = value.trim_start().strip_prefix('"')
        {
            return value.split('"').next().map(str::to_owned);
        }
        search = &search[at + key.len()..];
    }
    None
}

/// The `name` of a manifest's `[package]`.
fn package_name(manifest: &str) -> Option<String> {
    manifest_lines(manifest)
        .into_iter()
        .find(|(table, line)| table == "package" && line.starts_with("name"))
        .and_then(|(_, line)| string_value(&line, "name"))
}

/// The packages a manifest depends on to build (its `[dependencies]`, its build and target
/// dependencies; not its dev-dependencies), by package name (a `package = "…"` rename read).
fn normal_dependencies(manifest: &str) -> BTreeSet<String> {
    let is_list = |table: &str| {
        let table = table
            .strip_prefix("target.")
            .and_then(|rest| rest.rsplit_once('.').map(|(_, kind)| kind))
            .unwrap_or(table);
        table == "dependencies" || table == "build-dependencies"
    };
    let mut found = BTreeMap::<String, String>::new();
    for (table, line) in manifest_lines(manifest) {
        if is_list(&table) {
            let Some(key) = line.split(['=', '.']).next() else {
                continue;
            };
            let key = key.trim().trim_matches('"').to_owned();
            let package = string_value(&line, "package").unwrap_or_else(|| key.clone());
            found.insert(key, package);
        } else if let Some((list, key)) = table.rsplit_once('.')
            && is_list(list)
        {
            // `[dependencies.name]`, a dependency as its own table.
            let key = key.trim_matches('"').to_owned();
            let entry = found.entry(key.clone()).or_insert(key);
            if line.starts_with("package")
                && let Some(package) = string_value(&line, "package")
            {
                *entry = package;
            }
        }
    }
    found.into_values().collect()
}

/// The workspace crates `package` may depend on, if it is listed in [`ALLOWED`].
fn allowed(package: &str) -> Option<&'static [&'static str]> {
    ALLOWED
        .iter()
        .find(|(name, _)| *name == package)
        .map(|(_, allowed)| *allowed)
}

/// Each dependency of a member on a workspace crate that [`ALLOWED`] does not list for it, and
/// each member it does not list at all.
fn unlisted_dependencies(members: &[(String, String)]) -> Vec<String> {
    let names: BTreeSet<&str> = members.iter().map(|(name, _)| name.as_str()).collect();
    let mut unlisted = Vec::new();
    for (name, manifest) in members {
        let Some(allowed) = allowed(name) else {
            unlisted.push(format!("{name} is not in ALLOWED"));
            continue;
        };
        for dependency in normal_dependencies(manifest) {
            if names.contains(dependency.as_str()) && !allowed.contains(&dependency.as_str()) {
                unlisted.push(format!("{name} depends on {dependency}, which it may not"));
            }
        }
    }
    unlisted
}

/// Every crate root of a member, each with a label: its library, its binary, and the
/// binaries, integration tests, benches and examples Cargo finds (`src/bin/x.rs`,
/// `tests/x.rs`, `tests/x/main.rs`, …) or its manifest's target tables name by `path`.
fn crate_roots(member: &Member, files: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut roots = BTreeMap::new();
    let has_lib = files.contains_key("src/lib.rs");
    if has_lib {
        roots.insert("src/lib.rs".to_owned(), member.name.clone());
    }
    if files.contains_key("src/main.rs") {
        let label = if has_lib {
            format!("{} (bin)", member.name)
        } else {
            member.name.clone()
        };
        roots.insert("src/main.rs".to_owned(), label);
    }
    let kinds = [
        ("src/bin/", "bin"),
        ("tests/", "test"),
        ("benches/", "bench"),
        ("examples/", "example"),
    ];
    for file in files.keys() {
        for (dir, kind) in kinds {
            let Some(rest) = file.strip_prefix(dir) else {
                continue;
            };
            let target = match rest.split_once('/') {
                None => rest.strip_suffix(".rs"),
                Some((target, "main.rs")) => Some(target),
                Some(_) => None,
            };
            if let Some(target) = target {
                roots.insert(file.clone(), format!("{} ({kind} {target})", member.name));
            }
        }
    }
    for (table, line) in manifest_lines(&member.manifest) {
        if ["lib", "bin", "test", "bench", "example"].contains(&table.as_str())
            && line.starts_with("path")
            && let Some(path) = string_value(&line, "path")
        {
            roots
                .entry(path.clone())
                .or_insert_with(|| format!("{} ({table} {path})", member.name));
        }
    }
    roots
        .into_iter()
        .map(|(root, label)| (label, root))
        .collect()
}

/// The `.rs` files of a member, keyed by their path in it (`src/lib.rs`, `tests/x.rs`).
fn crate_files(member: &Member) -> BTreeMap<String, String> {
    let dir = workspace_root().join(&member.dir);
    let mut paths = Vec::new();
    rust_files(&dir, &mut paths);
    paths
        .into_iter()
        .filter_map(|path| {
            let relative = path
                .strip_prefix(&dir)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            Some((relative, std::fs::read_to_string(&path).ok()?))
        })
        .collect()
}

#[test]
fn no_module_circles_in_any_crate() {
    let members = workspace_members();
    assert!(
        members.len() >= 9,
        "the workspace's members were read: {members:?}"
    );
    let mut modules = 0;
    let mut found: Vec<(String, Circle)> = Vec::new();
    for member in &members {
        let files = crate_files(member);
        let roots = crate_roots(member, &files);
        assert!(!roots.is_empty(), "{} has a crate root", member.dir);
        for (label, root) in roots {
            let graph = module_graph(&files, &root);
            assert!(
                graph.missing.is_empty(),
                "{label}: declared modules whose files were not found: {:?}",
                graph.missing
            );
            modules += graph.modules.len();
            found.extend(
                circles(&graph)
                    .into_iter()
                    .map(|circle| (label.clone(), circle)),
            );
        }
    }
    assert!(modules > 100, "the walk found the modules: {modules}");

    let report = |(label, circle): &(String, Circle)| {
        format!(
            "{label}: {}\n    (\"{label}\", \"{}\")\n{}",
            circle.cycle.join(" → "),
            circle.key(),
            circle
                .steps
                .iter()
                .map(|step| format!("    {step}\n"))
                .collect::<String>()
        )
    };
    // The circles that stand today, for `--nocapture`.
    for circle in &found {
        println!("{}", report(circle));
    }
    let keys: Vec<CircleKey> = found
        .iter()
        .map(|(label, circle)| (label.clone(), circle.key()))
        .collect();
    let (new, gone) = against_known(&keys, KNOWN_CIRCLES);
    let new: Vec<String> = found
        .iter()
        .filter(|(label, circle)| new.contains(&(label.clone(), circle.key())))
        .map(report)
        .collect();
    assert!(
        new.is_empty(),
        "modules that name each other in a circle (break it: move what both need into a module \
         below both, or into their parent); a circle that is what is left \
         of a listed one replaces that entry of KNOWN_CIRCLES:\n{}",
        new.join("\n")
    );
    assert!(
        gone.is_empty(),
        "these circles of KNOWN_CIRCLES no longer stand; take them out: {gone:?}"
    );
}

/// A circle as `KNOWN_CIRCLES` lists it: its crate and its members.
type CircleKey = (String, String);

/// The circles `found` (crate, members) that `known` does not list, and the entries of
/// `known` that are not found. Members are compared whatever the whitespace around them.
fn against_known(found: &[CircleKey], known: &[(&str, &str)]) -> (Vec<CircleKey>, Vec<CircleKey>) {
    let known: Vec<CircleKey> = known
        .iter()
        .map(|(label, members)| {
            let members: Vec<&str> = members.split(',').map(str::trim).collect();
            ((*label).to_owned(), members.join(","))
        })
        .collect();
    let new = found
        .iter()
        .filter(|circle| !known.contains(circle))
        .cloned()
        .collect();
    let gone = known
        .iter()
        .filter(|circle| !found.contains(circle))
        .cloned()
        .collect();
    (new, gone)
}

#[test]
fn each_crate_depends_only_on_what_it_may() {
    let members: Vec<(String, String)> = workspace_members()
        .into_iter()
        .map(|member| (member.name, member.manifest))
        .collect();
    let unlisted = unlisted_dependencies(&members);
    assert!(
        unlisted.is_empty(),
        "a crate depends only on the crates ALLOWED lists for it: {unlisted:?}"
    );
    // The check reads the manifests: envelope-mcp does build on core and the budget.
    let mcp = members
        .iter()
        .find(|(name, _)| name == "envelope-mcp")
        .map(|(_, manifest)| normal_dependencies(manifest))
        .unwrap_or_default();
    assert!(
        mcp.contains("envelope-core") && mcp.contains("envelope-budget"),
        "{mcp:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The checker, on crates made up for it.

/// The circles of a made-up crate rooted at `src/lib.rs`, each as its members.
fn circles_of(files: &[(&str, &str)]) -> Vec<String> {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
        .collect();
    let graph = module_graph(&files, "src/lib.rs");
    assert!(graph.missing.is_empty(), "{:?}", graph.missing);
    circles(&graph).iter().map(Circle::key).collect()
}

#[test]
fn the_checker_finds_two_modules_that_name_each_other() {
    let found = circles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
        ("src/b.rs", "pub struct B(crate::a::A);\n"),
    ]);
    assert_eq!(found, ["a,b"]);
}

#[test]
fn the_checker_passes_a_chain() {
    let found = circles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A(B);\n"),
        ("src/b.rs", "pub struct B(crate::c::C);\n"),
        ("src/c.rs", "pub struct C;\n"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn the_checker_reports_the_whole_cycle() {
    let files: BTreeMap<String, String> = [
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n"),
        ("src/a.rs", "use crate::b::B;"),
        ("src/b.rs", "use crate::c::C;"),
        ("src/c.rs", "use crate::a::A;\nuse crate::d::D;"),
        ("src/d.rs", "pub struct D;"),
    ]
    .into_iter()
    .map(|(path, text)| (path.to_owned(), text.to_owned()))
    .collect();
    let found = circles(&module_graph(&files, "src/lib.rs"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].cycle, ["a", "b", "c", "a"]);
    assert_eq!(found[0].key(), "a,b,c");
}

#[test]
fn a_root_re_export_leads_to_the_defining_module() {
    // `a` names `b` only as `crate::Thing`, which the root re-exports from `b`.
    let found = circles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\npub use b::{Other, Thing};\n"),
        (
            "src/a.rs",
            "pub fn f() -> crate::Thing { todo!() }\npub struct A;\n",
        ),
        ("src/b.rs", "use crate::a::A;\npub struct Thing(A);\n"),
    ]);
    assert_eq!(found, ["a,b"]);
    // A re-export renamed, of a module.
    let found = circles_of(&[
        (
            "src/lib.rs",
            "mod a;\nmod b;\npub use b::inner as renamed;\n",
        ),
        ("src/a.rs", "use crate::renamed::Thing;\npub struct A;\n"),
        (
            "src/b.rs",
            "pub mod inner { pub struct Thing(crate::a::A); }\n",
        ),
    ]);
    assert_eq!(found, ["a,b"]);
}

#[test]
fn circles_are_found_among_the_children_of_a_directory_module() {
    let found = circles_of(&[
        ("src/lib.rs", "mod http;\nmod other;\n"),
        ("src/other.rs", "use crate::http::serve::Serve;\n"),
        (
            "src/http/mod.rs",
            "mod guard;\nmod serve;\npub use serve::Serve;\npub struct Config;\n",
        ),
        (
            "src/http/guard.rs",
            "use super::{Config, serve::Serve};\npub struct Guard;\n",
        ),
        (
            "src/http/serve.rs",
            "use super::guard;\npub struct Serve(guard::Guard);\n",
        ),
    ]);
    assert_eq!(found, ["http::guard,http::serve"]);
    // The submodules count as their top-level module: `other` and `http` form a circle.
    let found = circles_of(&[
        ("src/lib.rs", "mod http;\nmod other;\n"),
        (
            "src/other.rs",
            "use crate::http::serve::Serve;\npub struct Other;\n",
        ),
        ("src/http/mod.rs", "mod serve;\n"),
        (
            "src/http/serve.rs",
            "pub struct Serve(crate::other::Other);\n",
        ),
    ]);
    assert_eq!(found, ["http,other"]);
}

#[test]
fn a_child_naming_its_parent_is_no_circle() {
    let found = circles_of(&[
        ("src/lib.rs", "mod http;\n"),
        (
            "src/http/mod.rs",
            "mod serve;\nmod guard;\nuse serve::run;\npub struct Config;\n",
        ),
        (
            "src/http/serve.rs",
            "use super::Config;\npub fn run() -> super::guard::Guard { todo!() }\n",
        ),
        (
            "src/http/guard.rs",
            "use super::super::http::Config;\npub struct Guard(Config);\n",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn tests_comments_and_strings_name_nothing() {
    let found = circles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        (
            "src/a.rs",
            "//! Unlike [`crate::b::B`].\n\
             /// Uses crate::b::B, /* crate::b::B */ in prose.\n\
             pub fn f() -> &'static str { \"crate::b::B\" }\n\
             pub fn g() -> char { '\"' }\n\
             pub fn h() -> &'static str { r#\"crate::b::B\"# }\n\
             #[cfg(test)]\n\
             fn helper() { let _ = crate::b::B; }\n\
             pub struct A;\n\
             #[cfg(test)]\n\
             mod tests {\n    use crate::b::B;\n    #[test]\n    fn t() { let _ = B; }\n}\n",
        ),
        ("src/b.rs", "use crate::a::A;\npub struct B;\n"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn names_brought_in_by_use_lead_on() {
    // `self::`, a module brought in by `use` and then written as a path, a nested use tree.
    let found = circles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        (
            "src/a.rs",
            "use crate::b;\npub fn f() { b::g(); }\npub struct A;\n",
        ),
        (
            "src/b.rs",
            "use crate::{c::{self, C}};\npub fn g() { c::h(); }\n",
        ),
        (
            "src/c.rs",
            "pub struct C;\npub fn h() { let _ = crate::a::A; }\n",
        ),
    ]);
    assert_eq!(found, ["a,b,c"]);
    // A function's own `use`.
    let found = circles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        (
            "src/a.rs",
            "pub fn f() { use crate::b::g; g(); }\npub struct A;\n",
        ),
        ("src/b.rs", "pub fn g() { let _ = self::super::a::A; }\n"),
    ]);
    assert_eq!(found, ["a,b"]);
}

#[test]
fn the_layer_check_reads_dependencies() {
    let members = [
        (
            "envelope-core".to_owned(),
            "[package]\nname = \"envelope-core\"\n\n[dependencies]\nserde = \"1\"\n\
             envelope-budget.workspace = true\n\n[dev-dependencies]\nenvelope-mcp.workspace = true\n"
                .to_owned(),
        ),
        (
            "envelope-budget".to_owned(),
            "[package]\nname = \"envelope-budget\"\n\n[dev-dependencies]\n\
             envelope-check = { path = \"../envelope-check\" }\n\n\
             [target.'cfg(unix)'.dependencies.renamed]\npackage = \"envelope-mcp\"\n"
                .to_owned(),
        ),
        (
            "envelope-mcp".to_owned(),
            "[package]\nname = \"envelope-mcp\"\n[dependencies]\n\
             core = { package = \"envelope-core\", path = \"../envelope-core\" }\n"
                .to_owned(),
        ),
        ("surprise".to_owned(), "[package]\nname = \"surprise\"\n".to_owned()),
    ];
    assert_eq!(
        unlisted_dependencies(&members),
        [
            "envelope-core depends on envelope-budget, which it may not",
            "envelope-budget depends on envelope-mcp, which it may not",
            "surprise is not in ALLOWED",
        ]
    );
}

#[test]
fn the_allowed_graph_has_no_circle_and_keeps_the_kits_off_the_server() {
    // Kahn's algorithm: every crate is reached once its dependencies are.
    let mut done: Vec<&str> = Vec::new();
    while done.len() < ALLOWED.len() {
        let next = ALLOWED
            .iter()
            .find(|(name, deps)| !done.contains(name) && deps.iter().all(|dep| done.contains(dep)));
        let Some((name, _)) = next else {
            panic!("ALLOWED has a circle among what is left of {done:?}");
        };
        done.push(name);
    }
    for kit in ["envelope-client", "envelope-check"] {
        assert!(
            !allowed(kit).unwrap_or_default().contains(&"envelope-mcp"),
            "{kit}"
        );
    }
    assert_eq!(
        allowed("envelope-dialect"),
        Some(&["envelope-core", "envelope-budget"][..])
    );
    // A kit that came to depend on the server is caught.
    let members = [(
        "envelope-client".to_owned(),
        "[package]\nname = \"envelope-client\"\n[dependencies]\nenvelope-mcp.workspace = true\n"
            .to_owned(),
    ), ("envelope-mcp".to_owned(), "[package]\nname = \"envelope-mcp\"\n".to_owned())];
    assert_eq!(
        unlisted_dependencies(&members),
        ["envelope-client depends on envelope-mcp, which it may not"]
    );
}

#[test]
fn the_known_list_can_only_shrink() {
    let found = [
        ("a".to_owned(), "x,y".to_owned()),
        ("b".to_owned(), "p,q".to_owned()),
    ];
    let (new, gone) = against_known(&found, &[("a", "x, y"), ("b", "p,q,r"), ("c", "m,n")]);
    // `b`'s circle lost `r`: the entry must be written again as what is left.
    assert_eq!(new, [("b".to_owned(), "p,q".to_owned())]);
    assert_eq!(
        gone,
        [
            ("b".to_owned(), "p,q,r".to_owned()),
            ("c".to_owned(), "m,n".to_owned()),
        ]
    );
    let (new, gone) = against_known(&found, &[("a", "x,y"), ("b", "p,q")]);
    assert!(new.is_empty() && gone.is_empty());
}

#[test]
fn a_path_attribute_names_the_module_file() {
    let files: BTreeMap<String, String> = [
        (
            "benches/trim.rs",
            "#[path = \"../tests/support/mod.rs\"]\nmod support;\nmod other;\n",
        ),
        ("tests/support/mod.rs", "mod inner;\nuse crate::other::O;\n"),
        ("tests/support/inner.rs", "pub struct I;\n"),
        (
            "benches/other.rs",
            "pub struct O(crate::support::inner::I);\n",
        ),
    ]
    .into_iter()
    .map(|(path, text)| (path.to_owned(), text.to_owned()))
    .collect();
    let graph = module_graph(&files, "benches/trim.rs");
    assert!(graph.missing.is_empty(), "{:?}", graph.missing);
    assert_eq!(graph.modules.len(), 4, "{:?}", graph.modules.keys());
    let found: Vec<String> = circles(&graph).iter().map(Circle::key).collect();
    assert_eq!(found, ["other,support"]);
}
