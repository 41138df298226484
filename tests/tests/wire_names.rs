//! The envelope's wire names are spelled in one table, `envelope_core::fields`: no production
//! source spells one as a string literal anywhere else. Tests and docs aside, a stage that
//! reads or writes an envelope as JSON names its fields through the table, so that a renamed or
//! misspelt field is a compile error, not a silent extra member.
//!
//! A literal that happens to equal a wire name but is not an envelope's field (JSON-RPC's own
//! `error`, a problem document's `data`) carries a `// wire:` comment saying what it is, on its
//! line or the line above.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use envelope_core::fields;

/// The crates whose production code handles envelopes, by their source directories.
///
/// `envelope-dialect` is not among them: it writes the source contracts' own field names, many
/// of which are the envelope's by design (the envelope took them from those contracts), and it
/// reads an envelope only through its `Wire` reader, which names fields through the table.
const SOURCES: &[&str] = &[
    "envelope-core/src",
    "envelope-budget/src",
    "envelope-mcp/src",
    "envelope-client/src",
    "envelope-check/src",
];

/// The table itself.
const TABLE: &str = "envelope-core/src/fields.rs";

/// What marks a literal that is not an envelope's field.
const MARKER: &str = "// wire:";

/// The names checked: every field of the envelope, of `meta`, of `completeness`, and the
/// distinctive ones of a next action (`id`, `order`, `role` and `reason` are everyday words of
/// other protocols too).
fn wire_names() -> BTreeSet<&'static str> {
    let mut names: BTreeSet<&str> = fields::envelope::ALL.into_iter().collect();
    names.extend(fields::meta::FIELDS);
    names.extend(fields::completeness::ALL);
    names.extend([
        fields::next_action::DEPENDENCIES,
        fields::next_action::TOOL,
        fields::next_action::ARGUMENTS,
    ]);
    names
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// The production part of a source file: up to its test module.
fn production(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod ")
        .map_or(text, |start| &text[..start])
}

/// `(line number, name)` of each wire name spelled as a string literal in `text`, outside
/// comments and marked lines.
fn offenders(text: &str, names: &BTreeSet<&str>) -> Vec<(usize, String)> {
    let lines: Vec<&str> = production(text).lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") || code.starts_with("#[doc") {
            continue;
        }
        let marked = line.contains(MARKER) || at > 0 && lines[at - 1].contains(MARKER);
        if marked {
            continue;
        }
        // The code before a trailing comment.
        let code = line.split(" //").next().unwrap_or(line);
        for name in names {
            if code.contains(&format!("\"{name}\"")) {
                found.push((at + 1, (*name).to_owned()));
            }
        }
    }
    found
}

#[test]
fn no_wire_name_is_spelled_outside_the_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let names = wire_names();
    assert!(names.len() > 30, "the table was read: {names:?}");
    let mut files = Vec::new();
    for source in SOURCES {
        rust_files(&root.join(source), &mut files);
    }
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    let mut spelled = Vec::new();
    for path in files {
        let relative = path
            .strip_prefix(&root)
            .map(|path| path.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        if relative == TABLE {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (line, name) in offenders(&text, &names) {
            spelled.push(format!("{relative}:{line}: \"{name}\""));
        }
    }
    assert!(
        spelled.is_empty(),
        "wire names spelled outside `envelope_core::fields`; name them through the table, or \
         mark a literal that is no envelope field with `{MARKER} <what it is>`:\n{}",
        spelled.join("\n")
    );
}

#[test]
fn the_check_finds_a_spelled_name_and_spares_comments_tests_and_marked_lines() {
    let names = wire_names();
    let text = "fn a() { let x = v[\"completeness\"]; }\n\
                // v[\"completeness\"] in a comment\n\
                // wire: JSON-RPC's own member\n\
                let e = \"error\";\n\
                let f = \"error\"; // wire: JSON-RPC's own member\n\
                let g = \"not_a_field\";\n\
                #[cfg(test)]\nmod tests { const M: &str = \"meta\"; }\n";
    assert_eq!(
        offenders(text, &names),
        vec![(1, "completeness".to_owned())]
    );
}
