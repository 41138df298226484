//! The clause tables cannot claim what nothing holds: every test a clause names exists in the
//! file named, and every gap a clause names is an entry of its dialect's gap tables.

use std::path::Path;

use envelope_core::Dialect;
use envelope_dialect::{Clause, EVERY_DIALECT, Held, contract, dropped, unexpressed};

/// The repository's root: this crate's parent.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits in the workspace")
}

/// Whether `file` defines a test function named `test` (Rust `fn`, Python `def`).
fn defines(file: &str, test: &str) -> bool {
    let text = std::fs::read_to_string(root().join(file))
        .unwrap_or_else(|error| panic!("{file}: {error}"));
    [format!("fn {test}("), format!("def {test}(")]
        .iter()
        .any(|definition| text.contains(definition.as_str()))
}

fn check(dialect: Option<Dialect>, clauses: &[Clause]) {
    for clause in clauses {
        assert!(clause.says.ends_with('.'), "{}", clause.says);
        match clause.held {
            Held::Test { file, test } => {
                assert!(defines(file, test), "{file} defines no test `{test}`");
            }
            Held::Gap(field) => {
                let dialect = dialect.expect("a shared clause is held, never a gap");
                let listed = unexpressed(dialect)
                    .iter()
                    .chain(dropped(dialect))
                    .any(|gap| gap.field == field);
                assert!(listed, "{dialect}: no gap `{field}`");
            }
        }
    }
}

#[test]
fn every_clause_is_held_by_a_test_that_exists_or_a_gap_that_is_listed() {
    check(None, EVERY_DIALECT);
    for dialect in Dialect::ALL {
        check(Some(dialect), contract(dialect).clauses());
    }
}

#[test]
fn every_source_contract_lists_its_clauses() {
    for dialect in [Dialect::Pincher, Dialect::Cos, Dialect::Tsa, Dialect::Frigg] {
        let clauses = contract(dialect).clauses();
        let held = clauses
            .iter()
            .filter(|clause| matches!(clause.held, Held::Test { .. }))
            .count();
        assert!(held >= 15, "{dialect}: {held} clauses held");
    }
}

#[test]
fn every_dialect_has_its_own_contract() {
    for dialect in Dialect::ALL {
        assert_eq!(contract(dialect).dialect(), dialect);
    }
}
