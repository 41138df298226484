//! Honest completeness: how many rows a response carries, whether that is all of
//! them, and if not, why not.
//!
//! Invariant: a [`Completeness`] never says contradictory things. Every way to build one, the
//! builder and deserialization alike, goes through [`Completeness::try_from_parts`], which
//! rejects each state listed in [`Violation::ALL`].

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{CoreError, Violation};

/// What one row of a bounded collection is.
///
/// Wire form: a snake-case string. The recovery seed's units are constants ([`Unit::KNOWN`]);
/// a tool may name its own with [`Unit::custom`], since the set grows with the tools.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Unit(Cow<'static, str>);

crate::wire::vocabulary! {
    /// The plural of a known unit, when it is not the regular one.
    fn known_plural;
    open Unit {
        /// `occurrence`: one match of a pattern.
        OCCURRENCE = "occurrence": "occurrences";
        /// `file`: one file.
        FILE = "file": "files";
        /// `symbol`: one named symbol.
        SYMBOL = "symbol": "symbols";
        /// `reference`: one reference to a symbol.
        REFERENCE = "reference": "references";
        /// `definition`: one definition site.
        DEFINITION = "definition": "definitions";
        /// `declaration`: one declaration site.
        DECLARATION = "declaration": "declarations";
        /// `implementation`: one implementation.
        IMPLEMENTATION = "implementation": "implementations";
        /// `incoming_call`: one caller edge.
        INCOMING_CALL = "incoming_call": "incoming calls";
        /// `outgoing_call`: one callee edge.
        OUTGOING_CALL = "outgoing_call": "outgoing calls";
        /// `document_symbol`: one entry of a document outline.
        DOCUMENT_SYMBOL = "document_symbol": "document symbols";
        /// `syntax_node`: one syntax-tree node.
        SYNTAX_NODE = "syntax_node": "syntax nodes";
        /// `structural_match`: one structural-search match.
        STRUCTURAL_MATCH = "structural_match": "structural matches";
        /// `batch_probe`: one probe of a batch request.
        BATCH_PROBE = "batch_probe": "batch probes";
        /// `impact_section`: one section of an impact report.
        IMPACT_SECTION = "impact_section": "impact sections";
        /// `item`: a generic row, for collections with no better name.
        ITEM = "item": "items";
    }
}

impl Unit {
    /// A tool's own unit. The name must be snake case: `[a-z][a-z0-9_]*`, at most 64 bytes.
    pub fn custom(name: impl Into<String>) -> Result<Unit, CoreError> {
        let name = name.into();
        if Unit::is_valid_name(&name) {
            Ok(Unit(Cow::Owned(name)))
        } else {
            Err(CoreError::InvalidUnit(name))
        }
    }

    fn is_valid_name(name: &str) -> bool {
        let mut bytes = name.bytes();
        name.len() <= 64
            && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name for `count` rows, as `next_step` prose uses it: "1 file", "3 files".
    pub fn noun(&self, count: usize) -> String {
        let singular = self.0.replace('_', " ");
        if count == 1 {
            return singular;
        }
        if let Some(plural) = self.known_plural() {
            return plural.to_owned();
        }
        if singular.ends_with('s') || singular.ends_with('x') || singular.ends_with("ch") {
            format!("{singular}es")
        } else if let Some(stem) = singular.strip_suffix('y')
            && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
        {
            format!("{stem}ies")
        } else {
            format!("{singular}s")
        }
    }
}

crate::wire::open_wire_string!(
    Unit,
    from_wire: |name: String| match Unit::KNOWN.iter().find(|unit| unit.as_str() == name) {
        Some(known) => Ok(known.clone()),
        None => Unit::custom(name),
    },
    known: Unit::KNOWN,
    description: "What one row is. Known units are listed in `examples`; tools may name their own.",
    pattern: "^[a-z][a-z0-9_]{0,63}$",
);

crate::wire::vocabulary! {
    /// What the reason means, in one line.
    fn meaning;
    /// Why a deliberate bound left out rows that otherwise qualified.
    #[derive(PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum TruncationReason {
        /// `page_limit`
        PageLimit = "page_limit": "The page size (`limit`) was reached.",
        /// `per_file_limit`
        PerFileLimit = "per_file_limit": "A per-file cap was reached.",
        /// `top_k_limit`
        TopKLimit = "top_k_limit": "Only the top K ranked rows were kept.",
        /// `child_limit`
        ChildLimit = "child_limit": "A cap on children of one node was reached.",
        /// `merge_page_limit`
        MergePageLimit = "merge_page_limit": "A cap applied while merging several sources was reached.",
        /// `ancestor_limit`
        AncestorLimit = "ancestor_limit": "A cap on ancestors of one node was reached.",
        /// `budget_limit`
        BudgetLimit = "budget_limit": "The response budget trimmer cut rows to fit the size budget.",
        /// `store_limit`
        StoreLimit = "store_limit": "A result store's bound on one answer was reached: the rows after it were not kept.",
    }
}

crate::wire::vocabulary! {
    /// What the reason means, in one line.
    fn meaning;
    /// Why coverage cannot be claimed exhaustive, truncation or not.
    #[derive(PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum IncompleteReason {
        /// `ranked_discovery`
        RankedDiscovery = "ranked_discovery": "Results come from ranked discovery, which does not enumerate everything.",
        /// `diagnostic_coverage`
        DiagnosticCoverage = "diagnostic_coverage": "Coverage is diagnostic only.",
        /// `unreadable_candidate`
        UnreadableCandidate = "unreadable_candidate": "Some candidates could not be read.",
        /// `walk_failure`
        WalkFailure = "walk_failure": "Walking the source failed part-way.",
        /// `backend_failure`
        BackendFailure = "backend_failure": "A backend failed for part of the request.",
        /// `backend_semantics_unsupported`
        BackendSemanticsUnsupported = "backend_semantics_unsupported": "The backend does not support the requested semantics.",
        /// `navigation_partial_coverage`
        NavigationPartialCoverage = "navigation_partial_coverage": "Navigation data covers only part of the source.",
        /// `navigation_heuristic_coverage`
        NavigationHeuristicCoverage = "navigation_heuristic_coverage": "Navigation used heuristics, not precise data.",
        /// `navigation_unavailable`
        NavigationUnavailable = "navigation_unavailable": "Navigation data is unavailable.",
        /// `child_incomplete`
        ChildIncomplete = "child_incomplete": "A nested collection is itself incomplete.",
    }
}

/// The raw fields of a completeness, before the invariants are checked.
///
/// Build one to call [`Completeness::try_from_parts`]; deserialization reads into it too.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct CompletenessParts {
    /// What one row is.
    pub unit: Unit,
    /// Rows in this response (this page, not a running count).
    pub returned: usize,
    /// Rows before this page: what earlier pages returned. 0 (omitted) on a first page.
    // The `skip_serializing_if`s describe `Completeness`'s wire, whose schema is this one's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: usize,
    /// The exact cardinality of the whole result, every page of it, only when it is proven.
    /// `None` means unknown, never a lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// The normalized request is proven exhausted.
    pub complete: bool,
    /// A deliberate bound left out rows that otherwise qualified.
    pub truncated: bool,
    /// Why rows were left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncation_reasons: Vec<TruncationReason>,
    /// Why coverage cannot be exhaustive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete_reasons: Vec<IncompleteReason>,
    /// The row fields this response shortened (a long line shown as a window of it, say), by
    /// their wire names: every row is here, but not each in full. The same call without the
    /// compact form that shortened them sends them whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shortened: Vec<String>,
    /// Opaque token for the next page. Read from a source contract's wire (which keeps it
    /// here), never written: an envelope carries the token once, in the arguments of its
    /// `next-page` action, which a model copies as a whole.
    #[serde(default, skip_serializing)]
    pub continuation: Option<String>,
}

/// The completeness of one bounded collection, under `completeness` on the wire.
///
/// Wire shape: `{unit, returned, offset?, total?, complete, truncated, truncation_reasons?,
/// incomplete_reasons?}`; empty reason lists and a zero `offset` are omitted. The page's
/// continuation is typed here ([`Completeness::continuation`]) but written once, where a model
/// copies it: in the arguments of the `next-page` action that follows it, never beside them.
/// Reason lists are sorted and free of duplicates. A page holds the rows
/// `offset..offset + returned` of a result of `total` rows: `total` means the same on every
/// page.
///
/// ```
/// use envelope_core::{Completeness, TruncationReason, Unit};
///
/// let page = Completeness::truncated_page(Unit::custom("caller")?, 3, Some(39), TruncationReason::PageLimit, None)?;
/// assert_eq!(
///     page.next_step("raise limit, or qualify the name to narrow").as_deref(),
///     Some("showing 3 of 39 callers — raise limit, or qualify the name to narrow"),
/// );
/// # Ok::<(), envelope_core::CoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Completeness {
    unit: Unit,
    returned: usize,
    #[serde(skip_serializing_if = "is_zero")]
    offset: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<usize>,
    complete: bool,
    truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    truncation_reasons: Vec<TruncationReason>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    incomplete_reasons: Vec<IncompleteReason>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shortened: Vec<String>,
    // Written once, in the `next-page` action's arguments: see the type's docs.
    #[serde(skip)]
    continuation: Option<String>,
}

impl Completeness {
    /// Builds a completeness only if its statements agree; sorts and dedupes the reason lists.
    pub fn try_from_parts(parts: CompletenessParts) -> Result<Completeness, CoreError> {
        let CompletenessParts {
            unit,
            returned,
            offset,
            total,
            complete,
            truncated,
            mut truncation_reasons,
            mut incomplete_reasons,
            mut shortened,
            continuation,
        } = parts;
        shortened.sort_unstable();
        shortened.dedup();
        truncation_reasons.sort_unstable();
        truncation_reasons.dedup();
        incomplete_reasons.sort_unstable();
        incomplete_reasons.dedup();

        // An end past `usize::MAX` exceeds any total, known or not.
        let Some(end) = offset.checked_add(returned) else {
            return Err(CoreError::Completeness(Violation::ReturnedExceedsTotal));
        };
        let violation = if total.is_some_and(|total| end > total) {
            Some(Violation::ReturnedExceedsTotal)
        } else if complete && total.is_none() {
            Some(Violation::CompleteWithoutTotal)
        } else if complete && total != Some(end) {
            Some(Violation::CompleteCountMismatch)
        } else if complete && (truncated || !truncation_reasons.is_empty()) {
            Some(Violation::CompleteButTruncated)
        } else if complete && !incomplete_reasons.is_empty() {
            Some(Violation::CompleteWithIncompleteReasons)
        } else if complete && continuation.is_some() {
            Some(Violation::ContinuationOnComplete)
        } else if truncated && truncation_reasons.is_empty() {
            Some(Violation::TruncatedWithoutReason)
        } else if !truncated && !truncation_reasons.is_empty() {
            Some(Violation::ReasonWithoutTruncation)
        } else if !complete && !truncated && incomplete_reasons.is_empty() {
            Some(Violation::IncompleteWithoutReason)
        } else if continuation.is_some() && !truncated {
            Some(Violation::ContinuationWithoutTruncation)
        } else if continuation.as_deref().is_some_and(str::is_empty) {
            Some(Violation::EmptyContinuation)
        } else {
            None
        };
        match violation {
            Some(violation) => Err(CoreError::Completeness(violation)),
            None => Ok(Completeness {
                unit,
                returned,
                offset,
                total,
                complete,
                truncated,
                truncation_reasons,
                incomplete_reasons,
                shortened,
                continuation,
            }),
        }
    }

    /// Every row there is: `returned == total == count`.
    pub fn complete(unit: Unit, count: usize) -> Completeness {
        Completeness {
            unit,
            returned: count,
            offset: 0,
            total: Some(count),
            complete: true,
            truncated: false,
            truncation_reasons: Vec::new(),
            incomplete_reasons: Vec::new(),
            shortened: Vec::new(),
            continuation: None,
        }
    }

    /// A page cut by a deliberate bound, with the exact pre-cut total when it is known and a
    /// continuation when paging can resume.
    pub fn truncated_page(
        unit: Unit,
        returned: usize,
        total: Option<usize>,
        reason: TruncationReason,
        continuation: Option<String>,
    ) -> Result<Completeness, CoreError> {
        Completeness::try_from_parts(CompletenessParts {
            unit,
            returned,
            offset: 0,
            total,
            complete: false,
            truncated: true,
            truncation_reasons: vec![reason],
            incomplete_reasons: Vec::new(),
            shortened: Vec::new(),
            continuation,
        })
    }

    /// A result that was not cut but cannot be proven exhaustive.
    pub fn incomplete(
        unit: Unit,
        returned: usize,
        total: Option<usize>,
        reasons: Vec<IncompleteReason>,
    ) -> Result<Completeness, CoreError> {
        Completeness::try_from_parts(CompletenessParts {
            unit,
            returned,
            offset: 0,
            total,
            complete: false,
            truncated: false,
            truncation_reasons: Vec::new(),
            incomplete_reasons: reasons,
            shortened: Vec::new(),
            continuation: None,
        })
    }

    /// This completeness for a page that starts after `offset` rows of the result, `total`
    /// (when known) still counting every row of it.
    ///
    /// ```
    /// use envelope_core::{Completeness, TruncationReason, Unit};
    ///
    /// let page = Completeness::truncated_page(Unit::FILE, 50, Some(733), TruncationReason::PageLimit, None)?
    ///     .with_offset(200)?;
    /// assert_eq!(page.offset(), 200);
    /// assert_eq!(
    ///     page.next_step("raise `limit`").as_deref(),
    ///     Some("showing 201–250 of 733 files — raise `limit`"),
    /// );
    /// // The last page reaches the end: complete.
    /// let last = Completeness::complete(Unit::FILE, 733).with_offset(700);
    /// assert!(last.is_err(), "733 rows from row 701 overrun the total");
    /// # Ok::<(), envelope_core::CoreError>(())
    /// ```
    pub fn with_offset(&self, offset: usize) -> Result<Completeness, CoreError> {
        let mut parts = self.to_parts();
        parts.offset = offset;
        Completeness::try_from_parts(parts)
    }

    /// The last page of a result of `total` rows: `returned` rows after `offset`, reaching the
    /// end, so the request is exhausted.
    pub fn last_page(
        unit: Unit,
        offset: usize,
        returned: usize,
    ) -> Result<Completeness, CoreError> {
        Completeness::try_from_parts(CompletenessParts {
            unit,
            returned,
            offset,
            total: Some(offset.saturating_add(returned)),
            complete: true,
            truncated: false,
            truncation_reasons: Vec::new(),
            incomplete_reasons: Vec::new(),
            shortened: Vec::new(),
            continuation: None,
        })
    }

    /// This completeness with further incomplete reasons; a complete result stops being one.
    pub fn with_incomplete_reasons(
        &self,
        reasons: impl IntoIterator<Item = IncompleteReason>,
    ) -> Result<Completeness, CoreError> {
        let mut parts = self.to_parts();
        parts.incomplete_reasons.extend(reasons);
        parts.complete = parts.complete && parts.incomplete_reasons.is_empty();
        Completeness::try_from_parts(parts)
    }

    /// This completeness saying that the response shortened the row fields `fields` (their
    /// wire names): a compact form showed long values in part. Every row is still here.
    #[must_use]
    pub fn with_shortened<I, S>(mut self, fields: I) -> Completeness
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.shortened.extend(fields.into_iter().map(Into::into));
        self.shortened.sort_unstable();
        self.shortened.dedup();
        self
    }

    /// The row fields this response shortened, by wire name; empty when every row is whole.
    pub fn shortened(&self) -> &[String] {
        &self.shortened
    }

    /// The fields, for rebuilding a changed completeness.
    pub fn to_parts(&self) -> CompletenessParts {
        CompletenessParts {
            unit: self.unit.clone(),
            returned: self.returned,
            offset: self.offset,
            total: self.total,
            complete: self.complete,
            truncated: self.truncated,
            truncation_reasons: self.truncation_reasons.clone(),
            incomplete_reasons: self.incomplete_reasons.clone(),
            shortened: self.shortened.clone(),
            continuation: self.continuation.clone(),
        }
    }

    /// What one row is.
    pub fn unit(&self) -> &Unit {
        &self.unit
    }

    /// Rows in this response.
    pub fn returned(&self) -> usize {
        self.returned
    }

    /// Rows before this page, returned by earlier pages (0 on a first page).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The exact cardinality, when proven.
    pub fn total(&self) -> Option<usize> {
        self.total
    }

    /// Whether the request is proven exhausted.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Whether a deliberate bound left rows out.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// Why rows were left out, sorted.
    pub fn truncation_reasons(&self) -> &[TruncationReason] {
        &self.truncation_reasons
    }

    /// Why coverage is not exhaustive, sorted.
    pub fn incomplete_reasons(&self) -> &[IncompleteReason] {
        &self.incomplete_reasons
    }

    /// The opaque next-page token, if paging can resume.
    pub fn continuation(&self) -> Option<&str> {
        self.continuation.as_deref()
    }

    /// The honest `next_step` for this completeness: the real shown and total numbers, then
    /// `advice` (say, "raise limit or narrow the path"). `None` when the result is complete.
    pub fn next_step(&self, advice: &str) -> Option<String> {
        if self.complete {
            return None;
        }
        // Where the page sits: "3" on a first page, "201–250" on a later one.
        let range = match (self.offset, self.returned) {
            (0, returned) | (_, returned @ 0) => returned.to_string(),
            (offset, returned) => format!("{}–{}", offset + 1, offset + returned),
        };
        let shown = match (self.truncated, self.total) {
            (true, Some(total)) => format!("showing {range} of {total} {}", self.unit.noun(total)),
            (true, None) => format!(
                "showing {range} {}; more exist, total unknown",
                self.unit.noun(self.returned)
            ),
            (false, _) => {
                let reasons: Vec<&str> =
                    self.incomplete_reasons.iter().map(|r| r.as_str()).collect();
                format!(
                    "{} {}, coverage not exhaustive ({})",
                    self.returned,
                    self.unit.noun(self.returned),
                    reasons.join(", ")
                )
            }
        };
        let advice = advice.trim();
        Some(if advice.is_empty() {
            shown
        } else {
            format!("{shown} — {advice}")
        })
    }
}

impl TryFrom<CompletenessParts> for Completeness {
    type Error = CoreError;

    fn try_from(parts: CompletenessParts) -> Result<Self, Self::Error> {
        Completeness::try_from_parts(parts)
    }
}

impl<'de> Deserialize<'de> for Completeness {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let parts = CompletenessParts::deserialize(deserializer)?;
        Completeness::try_from_parts(parts).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Completeness {
    fn schema_name() -> Cow<'static, str> {
        "Completeness".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = CompletenessParts::json_schema(generator);
        use crate::fields::completeness::{
            COMPLETE, CONTINUATION, INCOMPLETE_REASONS, TOTAL, TRUNCATED, TRUNCATION_REASONS,
        };
        // The invariants a schema can express; the rest are checked on construction.
        schema.insert(
            "allOf".into(),
            serde_json::json!([
                {
                    "if": { "properties": { (COMPLETE): { "const": true } } },
                    "then": {
                        "required": [TOTAL],
                        "properties": {
                            (TRUNCATED): { "const": false },
                            (TRUNCATION_REASONS): { "maxItems": 0 },
                            (INCOMPLETE_REASONS): { "maxItems": 0 }
                        },
                        "not": { "required": [CONTINUATION] }
                    }
                },
                {
                    "if": { "properties": { (TRUNCATED): { "const": true } } },
                    "then": {
                        "required": [TRUNCATION_REASONS],
                        "properties": { (TRUNCATION_REASONS): { "minItems": 1 } }
                    },
                    "else": {
                        "properties": { (TRUNCATION_REASONS): { "maxItems": 0 } },
                        "not": { "required": [CONTINUATION] }
                    }
                }
            ]),
        );
        schema
    }
}

/// Whether a count is zero: a first page's `offset` is left off the wire.
fn is_zero(count: &usize) -> bool {
    *count == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_page_keeps_the_total_and_says_its_offset() {
        let page = Completeness::truncated_page(
            Unit::FILE,
            50,
            Some(733),
            TruncationReason::PageLimit,
            Some("tok".into()),
        )
        .and_then(|page| page.with_offset(200))
        .expect("consistent");
        let wire = serde_json::to_value(&page).expect("serializes");
        assert_eq!(wire["offset"], 200);
        assert_eq!(wire["total"], 733);
        // The token is written once, in the next-page action: never here.
        assert!(wire.get("continuation").is_none(), "{wire}");
        let back: Completeness = serde_json::from_value(wire).expect("reads");
        let mut unsealed = page.to_parts();
        unsealed.continuation = None;
        assert_eq!(Ok(back), Completeness::try_from_parts(unsealed));
        // A source contract's completeness, which carries it, reads.
        let mut theirs = serde_json::to_value(&page).expect("serializes");
        theirs["continuation"] = "tok".into();
        let back: Completeness = serde_json::from_value(theirs).expect("reads");
        assert_eq!(back, page);
        // A first page leaves `offset` off the wire.
        let first = Completeness::complete(Unit::FILE, 3);
        assert!(
            serde_json::to_value(&first)
                .expect("serializes")
                .get("offset")
                .is_none()
        );
        // The last page reaches the total: complete, however far in it starts.
        let last = Completeness::last_page(Unit::FILE, 700, 33).expect("consistent");
        assert!(last.is_complete());
        assert_eq!(
            (last.offset(), last.returned(), last.total()),
            (700, 33, Some(733))
        );
        // A page past the total contradicts it.
        let overrun = page.with_offset(700);
        assert!(matches!(
            overrun,
            Err(CoreError::Completeness(Violation::ReturnedExceedsTotal))
        ));
    }

    fn parts() -> CompletenessParts {
        CompletenessParts {
            unit: Unit::FILE,
            returned: 2,
            offset: 0,
            total: Some(2),
            complete: true,
            truncated: false,
            truncation_reasons: vec![],
            incomplete_reasons: vec![],
            shortened: Vec::new(),
            continuation: None,
        }
    }

    fn rejects(parts: CompletenessParts, expected: Violation) {
        assert_eq!(
            Completeness::try_from_parts(parts.clone()),
            Err(CoreError::Completeness(expected)),
            "{parts:?}"
        );
        // Deserialization goes through the same gate.
        let mut wire = serde_json::json!({
            "unit": parts.unit.as_str(),
            "returned": parts.returned,
            "complete": parts.complete,
            "truncated": parts.truncated,
            "truncation_reasons": parts.truncation_reasons,
            "incomplete_reasons": parts.incomplete_reasons,
        });
        if let Some(total) = parts.total {
            wire["total"] = total.into();
        }
        if let Some(continuation) = parts.continuation {
            wire["continuation"] = continuation.into();
        }
        let error = serde_json::from_value::<Completeness>(wire).expect_err("contradictory");
        assert!(error.to_string().contains(expected.meaning()), "{error}");
    }

    #[test]
    fn valid_parts_build() {
        assert_eq!(
            Completeness::try_from_parts(parts()),
            Ok(Completeness::complete(Unit::FILE, 2))
        );
    }

    #[test]
    fn rejects_returned_over_total() {
        rejects(
            CompletenessParts {
                returned: 3,
                offset: 0,
                complete: false,
                truncated: true,
                truncation_reasons: vec![TruncationReason::PageLimit],
                ..parts()
            },
            Violation::ReturnedExceedsTotal,
        );
    }

    #[test]
    fn rejects_complete_without_total() {
        rejects(
            CompletenessParts {
                total: None,
                ..parts()
            },
            Violation::CompleteWithoutTotal,
        );
    }

    #[test]
    fn rejects_complete_with_fewer_rows_than_total() {
        rejects(
            CompletenessParts {
                returned: 1,
                offset: 0,
                ..parts()
            },
            Violation::CompleteCountMismatch,
        );
    }

    #[test]
    fn rejects_complete_and_truncated() {
        rejects(
            CompletenessParts {
                truncated: true,
                ..parts()
            },
            Violation::CompleteButTruncated,
        );
        rejects(
            CompletenessParts {
                truncation_reasons: vec![TruncationReason::PageLimit],
                ..parts()
            },
            Violation::CompleteButTruncated,
        );
    }

    #[test]
    fn rejects_complete_with_incomplete_reasons() {
        rejects(
            CompletenessParts {
                incomplete_reasons: vec![IncompleteReason::WalkFailure],
                ..parts()
            },
            Violation::CompleteWithIncompleteReasons,
        );
    }

    #[test]
    fn rejects_continuation_on_complete() {
        rejects(
            CompletenessParts {
                shortened: Vec::new(),
                continuation: Some("c1".into()),
                ..parts()
            },
            Violation::ContinuationOnComplete,
        );
    }

    #[test]
    fn rejects_truncated_without_reason() {
        rejects(
            CompletenessParts {
                returned: 1,
                offset: 0,
                complete: false,
                truncated: true,
                ..parts()
            },
            Violation::TruncatedWithoutReason,
        );
    }

    #[test]
    fn rejects_reason_without_truncation() {
        rejects(
            CompletenessParts {
                returned: 1,
                offset: 0,
                complete: false,
                truncation_reasons: vec![TruncationReason::TopKLimit],
                incomplete_reasons: vec![IncompleteReason::RankedDiscovery],
                ..parts()
            },
            Violation::ReasonWithoutTruncation,
        );
    }

    #[test]
    fn rejects_incomplete_without_reason() {
        rejects(
            CompletenessParts {
                returned: 1,
                offset: 0,
                complete: false,
                ..parts()
            },
            Violation::IncompleteWithoutReason,
        );
    }

    #[test]
    fn rejects_continuation_without_truncation() {
        rejects(
            CompletenessParts {
                returned: 1,
                offset: 0,
                complete: false,
                incomplete_reasons: vec![IncompleteReason::RankedDiscovery],
                shortened: Vec::new(),
                continuation: Some("c1".into()),
                ..parts()
            },
            Violation::ContinuationWithoutTruncation,
        );
    }

    #[test]
    fn rejects_empty_continuation() {
        rejects(
            CompletenessParts {
                returned: 1,
                offset: 0,
                complete: false,
                truncated: true,
                truncation_reasons: vec![TruncationReason::PageLimit],
                shortened: Vec::new(),
                continuation: Some(String::new()),
                ..parts()
            },
            Violation::EmptyContinuation,
        );
    }

    #[test]
    fn every_violation_has_a_test_above() {
        // The rejects_* tests above cover each variant once; this keeps the list honest when a
        // variant is added.
        assert_eq!(Violation::ALL.len(), 11);
    }

    #[test]
    fn reason_lists_are_sorted_and_deduped() {
        let page = Completeness::try_from_parts(CompletenessParts {
            returned: 1,
            offset: 0,
            complete: false,
            truncated: true,
            truncation_reasons: vec![
                TruncationReason::BudgetLimit,
                TruncationReason::PageLimit,
                TruncationReason::BudgetLimit,
            ],
            incomplete_reasons: vec![
                IncompleteReason::WalkFailure,
                IncompleteReason::RankedDiscovery,
                IncompleteReason::WalkFailure,
            ],
            ..parts()
        })
        .expect("consistent");
        assert_eq!(
            page.truncation_reasons(),
            [TruncationReason::PageLimit, TruncationReason::BudgetLimit]
        );
        assert_eq!(
            page.incomplete_reasons(),
            [
                IncompleteReason::RankedDiscovery,
                IncompleteReason::WalkFailure
            ]
        );
    }

    #[test]
    fn next_step_interpolates_real_numbers() {
        let page = Completeness::truncated_page(
            Unit::FILE,
            40,
            Some(512),
            TruncationReason::PageLimit,
            Some("tok".into()),
        )
        .expect("consistent");
        assert_eq!(
            page.next_step("raise limit or narrow the path").as_deref(),
            Some("showing 40 of 512 files — raise limit or narrow the path")
        );
        let unknown = Completeness::truncated_page(
            Unit::INCOMING_CALL,
            1,
            None,
            TruncationReason::TopKLimit,
            None,
        )
        .expect("consistent");
        assert_eq!(
            unknown.next_step("").as_deref(),
            Some("showing 1 incoming call; more exist, total unknown")
        );
        let ranked = Completeness::incomplete(
            Unit::SYMBOL,
            5,
            None,
            vec![IncompleteReason::RankedDiscovery],
        )
        .expect("consistent");
        assert_eq!(
            ranked.next_step("verify with an exact search").as_deref(),
            Some(
                "5 symbols, coverage not exhaustive (ranked_discovery) — verify with an exact search"
            )
        );
        assert_eq!(
            Completeness::complete(Unit::FILE, 3).next_step("anything"),
            None
        );
    }

    #[test]
    fn custom_units_pluralize_and_validate() {
        assert_eq!(
            Unit::custom("caller").expect("snake case").noun(2),
            "callers"
        );
        assert_eq!(
            Unit::custom("match").expect("snake case").noun(2),
            "matches"
        );
        assert_eq!(
            Unit::custom("entry").expect("snake case").noun(2),
            "entries"
        );
        assert_eq!(Unit::custom("key").expect("snake case").noun(2), "keys");
        assert!(Unit::custom("Not Snake").is_err());
        assert!(Unit::custom("").is_err());
    }

    #[test]
    fn empty_lists_are_omitted_on_the_wire() {
        let wire = serde_json::to_value(Completeness::complete(Unit::FILE, 2)).expect("serializes");
        assert_eq!(
            wire,
            serde_json::json!({"unit": "file", "returned": 2, "total": 2, "complete": true, "truncated": false})
        );
    }
}
