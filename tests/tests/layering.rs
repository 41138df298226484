//! How the crates may reach into each other, checked over their sources.
//!
//! `envelope_core::__private` exists for the code `#[tool]` and `toolset!` generate, as serde's
//! does for its derives: its items change without notice. A sibling crate that needs a stage of
//! the pipeline uses the documented `envelope_core::stage` instead. Only the crate that defines
//! the module and the macro crate that emits paths into it may name it; the compile-fail
//! fixtures under `tests/tests/ui` name it on purpose, to show that user code cannot.

use std::path::{Path, PathBuf};

/// Where `__private` may be named: the defining crate, the crate whose output names it, the
/// fixtures that show user code cannot, and this check.
const MAY_NAME_PRIVATE: &[&str] = &[
    "envelope-core/src/",
    "envelope-derive/src/",
    "tests/tests/ui/",
    "tests/tests/layering.rs",
];

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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
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

/// The modules each module of `crate_dir` names with `crate::module`.
fn module_graph(crate_dir: &Path) -> Vec<(String, Vec<String>)> {
    let mut graph = Vec::new();
    let Ok(entries) = std::fs::read_dir(crate_dir.join("src")) else {
        return graph;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(module) = path.file_stem().and_then(|stem| stem.to_str()) else {
            continue;
        };
        if path.extension().is_none_or(|extension| extension != "rs") || module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut uses: Vec<String> = text
            .match_indices("crate::")
            .filter_map(|(at, _)| {
                let rest = &text[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                // `crate::Item` names a root re-export, not a module.
                (!name.is_empty() && rest[name.len()..].starts_with("::")).then_some(name)
            })
            .filter(|name| name != module)
            .collect();
        uses.sort();
        uses.dedup();
        graph.push((module.to_owned(), uses));
    }
    graph
}

#[test]
fn no_two_budget_modules_import_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../envelope-budget");
    let graph = module_graph(&root);
    assert!(
        graph.len() > 5,
        "the walk found the crate's modules: {graph:?}"
    );
    let mut circles = Vec::new();
    for (module, uses) in &graph {
        for used in uses {
            let back = graph
                .iter()
                .any(|(other, theirs)| other == used && theirs.contains(module));
            if back && module < used {
                circles.push(format!("{module} <-> {used}"));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "modules that import each other: {circles:?}"
    );
}
