//! Compile-fail and must-compile cases for `#[tool]` and `toolset!`: each file in `ui/` breaks
//! one rule and its `.stderr` shows the one error it earns; each file in `pass/` must build.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test -p envelope-tests --test
//! compiletest`, then read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/pass/*.rs");
}
