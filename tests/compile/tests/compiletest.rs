//! Compile-fail and must-compile cases for `#[tool]` and `toolset!`: each file in `ui/` breaks
//! one rule and its `.stderr` shows the one error it earns; each file in `pass/` must build.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test -p envelope-compile-tests
//! --test compiletest`, then read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/pass/*.rs");
}

/// One mistake, one error: every expected output holds exactly one error, so a change that
/// makes the macro (or the code it emits) report a mistake twice fails here.
#[test]
fn every_mistake_is_one_error() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/ui is readable") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|ext| ext == "stderr") {
            let text = std::fs::read_to_string(&path).expect("readable");
            let errors = text
                .lines()
                .filter(|line| line.starts_with("error"))
                .count();
            assert_eq!(errors, 1, "{}: {errors} errors", path.display());
            checked += 1;
        }
    }
    assert!(
        checked >= 29,
        "only {checked} cases found in {}",
        dir.display()
    );
}
