//! The import parser behind `graph_export` and `change_impact`.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use crate::paths::{file_name, join_rel, parent_dir};

#[derive(Debug, Clone, Copy)]
pub(crate) enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
}

impl Language {
    pub(crate) fn of(rel: &str) -> Option<Language> {
        match file_name(rel).rsplit_once('.')?.1 {
            "rs" => Some(Language::Rust),
            "py" => Some(Language::Python),
            "js" | "jsx" | "mjs" | "cjs" => Some(Language::JavaScript),
            "ts" | "tsx" | "mts" | "cts" => Some(Language::TypeScript),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
        }
    }

    /// The references a file makes, unresolved. Line-based and regex-based: good enough for
    /// the common forms, and it never needs a parser for each language.
    pub(crate) fn references(self, text: &str) -> Vec<Reference> {
        match self {
            Language::Rust => rust_references(text),
            Language::Python => python_references(text),
            Language::JavaScript | Language::TypeScript => js_references(text),
        }
    }
}

/// A reference from one file to another, before it is resolved to a path.
#[derive(Debug)]
pub(crate) enum Reference {
    /// Rust `mod name;`.
    RustMod(String),
    /// Rust `use crate::a::b::C;`: the segments after `crate`.
    RustUse(Vec<String>),
    /// Python `import a.b` (`level` 0, no names) or `from ..a import b, c` (`level` 2).
    Python {
        level: usize,
        module: Vec<String>,
        names: Vec<String>,
    },
    /// A JS/TS relative module specifier: `./x`, `../y/z`.
    Js(String),
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("the pattern is a valid constant")
}

static RUST_MOD: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?m)^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;",
    )
});
static RUST_USE: LazyLock<Regex> = LazyLock::new(|| regex(r"(?s)\buse\s+crate::(.*?);"));
static PY_IMPORT: LazyLock<Regex> = LazyLock::new(|| regex(r"^\s*import\s+(.+)$"));
static PY_FROM: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^\s*from\s+(\.*)\s*([A-Za-z_][\w.]*)?\s+import\s+(.+)$"));
static JS_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| regex(r#"(?:\bfrom|\bimport)\s*['"](\.{1,2}/[^'"\n]*)['"]"#));

/// The text with `//` comments cut, so commented-out code adds no edges.
fn strip_line_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn rust_references(text: &str) -> Vec<Reference> {
    let code = strip_line_comments(text);
    let mut found: Vec<Reference> = RUST_MOD
        .captures_iter(&code)
        .map(|captures| Reference::RustMod(captures[1].to_owned()))
        .collect();
    for captures in RUST_USE.captures_iter(&code) {
        let mut paths = Vec::new();
        expand_use_tree(&captures[1], &mut Vec::new(), &mut paths, 0);
        found.extend(paths.into_iter().map(Reference::RustUse));
    }
    found
}

/// Groups nested deeper than this in one `use` are not expanded: real code nests a few, and a
/// workspace may be an untrusted repository whose `use crate::{a::{…}}` nests thousands deep.
const MAX_USE_NESTING: usize = 32;

/// Expands a use tree (`a::{b, c::D as E}`) into the segments of each path it names, `nesting`
/// groups down; deeper than [`MAX_USE_NESTING`], the rest of the tree is left out, so the
/// recursion (and the rescanning each level does) stays bounded.
fn expand_use_tree(
    tree: &str,
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
    nesting: usize,
) {
    if nesting > MAX_USE_NESTING {
        return;
    }
    let tree = tree.trim();
    let (head, group) = match tree.find('{') {
        Some(open) if tree.ends_with('}') => (&tree[..open], Some(&tree[open + 1..tree.len() - 1])),
        _ => (tree, None),
    };
    let depth = prefix.len();
    for segment in head.split("::") {
        // `b as c` names `b`; `*` and `self` add nothing to the path.
        match segment.split_whitespace().next().unwrap_or("") {
            "" | "*" | "self" => {}
            segment => prefix.push(segment.trim_start_matches("r#").to_owned()),
        }
    }
    match group {
        Some(group) => {
            for part in split_top_level(group) {
                expand_use_tree(part, prefix, out, nesting + 1);
            }
        }
        None => out.push(prefix.clone()),
    }
    prefix.truncate(depth);
}

/// Splits on commas outside braces.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (at, ch) in group.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&group[start..]);
    parts
}

fn python_references(text: &str) -> Vec<Reference> {
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.find('#').map_or(line, |at| &line[..at]);
        if let Some(captures) = PY_FROM.captures(line) {
            let names = captures[3]
                .split(',')
                .filter_map(|name| {
                    let name =
                        name.trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace());
                    name.split_whitespace().next().map(str::to_owned)
                })
                .filter(|name| name != "*")
                .collect();
            found.push(Reference::Python {
                level: captures[1].len(),
                module: dotted(captures.get(2).map_or("", |m| m.as_str())),
                names,
            });
        } else if let Some(captures) = PY_IMPORT.captures(line) {
            for module in captures[1].split(',') {
                if let Some(module) = module.split_whitespace().next() {
                    found.push(Reference::Python {
                        level: 0,
                        module: dotted(module),
                        names: Vec::new(),
                    });
                }
            }
        }
    }
    found
}

fn dotted(module: &str) -> Vec<String> {
    module
        .split('.')
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

fn js_references(text: &str) -> Vec<Reference> {
    let code = strip_line_comments(text);
    JS_IMPORT
        .captures_iter(&code)
        .map(|captures| Reference::Js(captures[1].to_owned()))
        .collect()
}

/// Extensions a JS/TS specifier without one may resolve to, in order.
const JS_EXTENSIONS: [&str; 8] = ["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"];

impl Reference {
    /// The files of `ids` this reference from `source` points at, with the edge kind.
    pub(crate) fn resolve(
        &self,
        source: &str,
        ids: &BTreeSet<&str>,
    ) -> Vec<(String, &'static str)> {
        let first = |candidates: Vec<String>| {
            candidates
                .into_iter()
                .find(|candidate| ids.contains(candidate.as_str()))
        };
        let dir = parent_dir(source);
        match self {
            Reference::RustMod(name) => {
                let base = rust_module_dir(source);
                first(vec![
                    format!("{base}{name}.rs"),
                    format!("{base}{name}/mod.rs"),
                ])
                .map(|target| vec![(target, "mod")])
                .unwrap_or_default()
            }
            Reference::RustUse(segments) => {
                let Some(src) = rust_src_dir(source) else {
                    return Vec::new();
                };
                // The longest prefix of the path that is a module file: `a::b::C` is `C` in
                // `a/b.rs` unless `a/b/C.rs` exists.
                (1..=segments.len())
                    .rev()
                    .find_map(|len| {
                        let module = segments[..len].join("/");
                        first(vec![
                            format!("{src}/{module}.rs"),
                            format!("{src}/{module}/mod.rs"),
                        ])
                    })
                    .map(|target| vec![(target, "use")])
                    .unwrap_or_default()
            }
            Reference::Python {
                level,
                module,
                names,
            } => {
                python_bases(dir, *level)
                    .iter()
                    .find_map(|base| {
                        // `from a import b` may import the submodule `a/b.py`; else `a` itself.
                        let submodules: Vec<String> = names
                            .iter()
                            .filter_map(|name| python_module(base, module, Some(name), &first))
                            .collect();
                        if submodules.is_empty() {
                            python_module(base, module, None, &first).map(|target| vec![target])
                        } else {
                            Some(submodules)
                        }
                    })
                    .unwrap_or_default()
                    .into_iter()
                    .map(|target| (target, "import"))
                    .collect()
            }
            Reference::Js(specifier) => {
                let Some(base) = join_rel(dir, specifier) else {
                    return Vec::new();
                };
                first(js_candidates(&base))
                    .map(|target| vec![(target, "import")])
                    .unwrap_or_default()
            }
        }
    }
}

/// The directories a Python import from a file in `dir` may be rooted at, nearest first:
/// `level` 0 for an absolute import, else the number of leading dots.
fn python_bases(dir: &str, level: usize) -> Vec<String> {
    if level == 0 {
        // An absolute import may be rooted at any directory on the way up to the
        // workspace root (each could be on `sys.path`); the nearest wins.
        let mut bases = vec![dir.to_owned()];
        let mut up = dir;
        while !up.is_empty() {
            up = parent_dir(up);
            bases.push(up.to_owned());
        }
        bases
    } else {
        // `from . import` is the file's own package; each further dot goes up one.
        let mut base = Some(dir.to_owned());
        for _ in 1..level {
            base = base.and_then(|base| join_rel(&base, ".."));
        }
        base.into_iter().collect()
    }
}

/// The files a relative JS/TS specifier resolved to `base` may name, in order: `base` itself,
/// then with each extension, then its `index` file, then a `.ts` source for an emitted `.js`.
fn js_candidates(base: &str) -> Vec<String> {
    let mut candidates = vec![base.to_owned()];
    candidates.extend(JS_EXTENSIONS.iter().map(|ext| format!("{base}.{ext}")));
    candidates.extend(
        JS_EXTENSIONS
            .iter()
            .map(|ext| format!("{base}/index.{ext}")),
    );
    // TypeScript's ESM style names the emitted `.js` for a `.ts` source.
    if let Some(stem) = [".js", ".jsx", ".mjs", ".cjs"]
        .iter()
        .find_map(|ext| base.strip_suffix(ext))
    {
        candidates.extend(["ts", "tsx", "mts", "cts"].map(|ext| format!("{stem}.{ext}")));
    }
    candidates
}

/// The Python module `module` (plus `name`, if given) under `base`: `x.py` or `x/__init__.py`.
fn python_module(
    base: &str,
    module: &[String],
    name: Option<&String>,
    first: &impl Fn(Vec<String>) -> Option<String>,
) -> Option<String> {
    let mut parts: Vec<&str> = module.iter().map(String::as_str).collect();
    parts.extend(name.map(String::as_str));
    let path = join_rel(base, &parts.join("/"))?;
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let mut candidates = Vec::new();
    if !parts.is_empty() {
        candidates.push(format!("{path}.py"));
    }
    candidates.push(format!("{prefix}__init__.py"));
    first(candidates)
}

/// The directory the `mod x;` items of a Rust file live in, with a trailing `/` (or empty at
/// the root). Crate roots and `mod.rs` keep theirs beside them; any other `a.rs` keeps them in
/// `a/`.
fn rust_module_dir(source: &str) -> String {
    let dir = parent_dir(source);
    let name = file_name(source);
    let crate_root = matches!(name, "lib.rs" | "main.rs" | "mod.rs" | "build.rs")
        || matches!(file_name(dir), "bin" | "tests" | "examples" | "benches");
    let module_dir = if crate_root {
        dir.to_owned()
    } else {
        let stem = name.strip_suffix(".rs").unwrap_or(name);
        join_rel(dir, stem).unwrap_or_default()
    };
    if module_dir.is_empty() {
        module_dir
    } else {
        format!("{module_dir}/")
    }
}

/// The `src` directory of the crate a Rust file belongs to: its nearest ancestor named `src`.
fn rust_src_dir(source: &str) -> Option<String> {
    let parts: Vec<&str> = source.split('/').collect();
    let dirs = &parts[..parts.len().saturating_sub(1)];
    let at = dirs.iter().rposition(|part| *part == "src")?;
    Some(dirs[..=at].join("/"))
}
