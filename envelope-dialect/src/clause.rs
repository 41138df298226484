//! [`Clause`]: one statement of a source contract that an answer can be checked against, and
//! what holds it: a test, by file and name, or the gap table's entry that says why it is not
//! held. Each dialect lists its contract's clauses ([`Contract::clauses`](crate::Contract)),
//! `docs/DIALECTS.md` prints them, and a test checks that every test named exists and every gap
//! named is in the dialect's tables, so the list cannot claim what nothing holds.

/// One clause of a source contract, and what holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clause {
    /// What the contract says, in its own words where they are short enough.
    pub says: &'static str,
    /// What holds it.
    pub held: Held,
}

/// What holds a [`Clause`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// A test that fails if the clause is broken: its file, from the repository's root, and
    /// its function's name.
    Test {
        /// The test's file, from the repository's root.
        file: &'static str,
        /// The test function's name.
        test: &'static str,
    },
    /// Not held: the entry of the dialect's gap tables with this `field` says why.
    Gap(&'static str),
}

/// A clause held by `test` in `file`.
pub(crate) const fn held(says: &'static str, file: &'static str, test: &'static str) -> Clause {
    Clause {
        says,
        held: Held::Test { file, test },
    }
}

/// A clause the gap table's entry for `field` says is not held, and why.
pub(crate) const fn gap(says: &'static str, field: &'static str) -> Clause {
    Clause {
        says,
        held: Held::Gap(field),
    }
}

/// The test files clauses are held by.
pub(crate) mod file {
    pub(crate) const PINCHER: &str = "envelope-dialect/tests/pincher.rs";
    pub(crate) const COS: &str = "envelope-dialect/tests/cos.rs";
    pub(crate) const TSA: &str = "envelope-dialect/tests/tsa.rs";
    pub(crate) const FRIGG: &str = "envelope-dialect/tests/frigg.rs";
    pub(crate) const SEED_EXAMPLES: &str = "envelope-dialect/tests/seed_examples.rs";
    pub(crate) const EXAMPLE: &str = "envelope-mcp/examples/workspace_server/tests/dialects.rs";
    pub(crate) const BUDGET: &str = "envelope-mcp/tests/dialect_budget.rs";
    pub(crate) const LISTINGS: &str = "tests/interop/test_listings.py";
    pub(crate) const SDK: &str = "tests/interop/test_dialects.py";
}

/// The clauses every dialect holds alike: what is sent, what is listed, how a client pages and
/// branches.
pub const EVERY_DIALECT: &[Clause] = &[
    held(
        "The response budget holds on the bytes sent, measured as CONTRACT.md defines the size.",
        file::BUDGET,
        "every_dialect_answers_within_the_budget_at_every_size",
    ),
    held(
        "An answer that cannot fit even after trimming says so in the dialect's own place, never unbounded.",
        file::BUDGET,
        "a_budget_too_small_for_anything_says_so_in_the_dialects_own_place",
    ),
    held(
        "Every tool lists an output schema every answer validates against, at 2025-06-18, 2025-11-25 and 2026-07-28.",
        file::LISTINGS,
        "test_every_tool_lists_a_schema_every_answer_matches",
    ),
    held(
        "MCP's isError and a command-line call's exit status follow the dialect's own success field.",
        file::SDK,
        "test_the_call_command_exits_by_the_dialects_own_success_field",
    ),
    held(
        "Copying the next page the answer offers, exactly as given, pages to the end.",
        file::EXAMPLE,
        "every_dialect_pages_to_the_end_by_copying_the_call_it_offers",
    ),
    held(
        "A legacy start beside a continuation is MIXED_CONTINUATION_FORMS, never ignored.",
        file::EXAMPLE,
        "a_legacy_start_beside_a_continuation_is_mixed_forms_in_every_dialect",
    ),
    held(
        "Prose never states a count the answer no longer carries: a next_step naming a list the budget cut says what was sent.",
        file::EXAMPLE,
        "a_step_naming_a_cut_list_says_what_was_sent",
    ),
    held(
        "A budget cut is stated in every dialect, never reported as uncut.",
        file::EXAMPLE,
        "a_budget_cut_is_stated_in_every_dialect",
    ),
];
