//! Generation of `docs/KITS.md`: every promise the client kits make, from the shared cases
//! (`clients/cases/*.json`) that both kits' tests run, so the page, the Rust kit and the Python
//! kit say one thing.

use std::fmt::Write as _;

use serde_json::Value;

use crate::codegen::workspace_root;

/// The case files, in the order the page tells them, with each one's heading.
const FILES: [(&str, &str); 6] = [
    ("read.json", "Reading a result"),
    ("retry.json", "Retrying a failed call"),
    ("next_page.json", "The next page"),
    ("follow.json", "Following a next action"),
    ("walk.json", "Checking a walk"),
    ("codes.json", "The lists both kits decide by"),
];

/// The page, or what in the case files cannot be read.
pub(crate) fn markdown(header: &str) -> Result<String, String> {
    let mut out = format!(
        "{header}\n\n# The client kits' promises\n\n\
         The Rust kit (`envelope-client`) and the Python kit (`clients/python`) make one set of \
         promises. Each is written once, below, as a case in `clients/cases/`, and both kits' \
         tests run every case through the function the kit decides with (the Rust kit's \
         `tests/shared_cases.rs`, the Python kit's `tests/test_shared_cases.py`), so the kits \
         cannot drift apart. A change of promise is a change of its case.\n\n"
    );
    for (file, heading) in FILES {
        let path = workspace_root().join("clients/cases").join(file);
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        let cases: Value =
            serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
        let about = cases["about"]
            .as_str()
            .ok_or_else(|| format!("clients/cases/{file} has no `about`"))?;
        let _ = writeln!(out, "## {heading}\n\n{about}\n");
        if let Some(policy) = cases.get("default_policy") {
            let _ = writeln!(out, "The default policy: `{policy}`.\n");
        }
        for case in cases["cases"].as_array().into_iter().flatten() {
            let promise = case["promise"]
                .as_str()
                .ok_or_else(|| format!("a case of clients/cases/{file} states no promise"))?;
            let _ = writeln!(out, "- {promise}");
        }
        let _ = writeln!(out, "\n(`clients/cases/{file}`)\n");
    }
    Ok(out.trim_end().to_owned() + "\n")
}
