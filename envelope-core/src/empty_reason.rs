//! Why a result is empty: the field an agent needs to stop looping on a failing call.
//!
//! The set is open. Unknown wire values read into [`EmptyReason::Other`], which keeps the raw
//! string and can only be made by reading one, so tool code cannot write an undocumented reason.

/// A wire value this version of the contract does not know, kept as read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnknownEmptyReason(String);

impl UnknownEmptyReason {
    /// The raw wire value.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

crate::wire::vocabulary! {
    /// Why a successful call returned nothing.
    ///
    /// Wire names are the snake-case strings of [`EmptyReason::as_str`]. It always travels
    /// with `diagnosis` prose.
    pub enum EmptyReason, other Other(UnknownEmptyReason) {
        /// `not_indexed`
        NotIndexed = "not_indexed": "Nothing at this scope is indexed."
            => "Build the index for the scope, then repeat the call.",
        /// `stale_index`
        StaleIndex = "stale_index": "The index predates the server's schema and may miss recent data."
            => "Suggest a re-index; treat the result as possibly missing recent entries.",
        /// `unsupported_language`
        UnsupportedLanguage = "unsupported_language": "The query targets a language the tool does not handle."
            => "Do not retry; surface the limitation to the user.",
        /// `low_confidence`
        LowConfidence = "low_confidence": "Every candidate fell below the confidence threshold."
            => "Retry with a lower confidence threshold if one is accepted.",
        /// `capability_unavailable`
        CapabilityUnavailable = "capability_unavailable": "The feature needed for this query is not available here."
            => "Do not retry; surface the limitation, or use another tool.",
        /// `filters_excluded_all`
        FiltersExcludedAll = "filters_excluded_all": "Candidates existed, but the filters excluded every one."
            => "Relax or remove a filter, then retry.",
        /// `query_too_narrow`
        QueryTooNarrow = "query_too_narrow": "The predicates together were too tight to match anything."
            => "Retry with a broader predicate or an OR composition.",
        /// `query_looks_like_regex`
        QueryLooksLikeRegex = "query_looks_like_regex": "A literal search was given what looks like a regular expression."
            => "Retry in regex mode, or escape the pattern as a literal.",
        /// `no_match`
        NoMatch = "no_match": "The query was valid and the whole scope was searched; nothing matched."
            => "Do not retry the same query; widen it or pivot.",
        /// `cap_dropped_all`
        CapDroppedAll = "cap_dropped_all": "A cap dropped every row of an oversized result."
            => "Lower the cap argument or refine the query.",
        /// `incremental_no_change`
        IncrementalNoChange = "incremental_no_change": "An incremental run found nothing to do."
            => "Not an error: report that nothing changed.",
        /// `all_files_blocked`
        AllFilesBlocked = "all_files_blocked": "Every file in scope is on the blocklist (lockfiles, binaries)."
            => "Pass an explicit path to a non-blocked location.",
        /// `extractor_emitted_nothing`
        ExtractorEmittedNothing = "extractor_emitted_nothing": "The extractor ran and emitted nothing."
            => "Check the tool's health report for the language before retrying.",
        /// `target_not_resolved`
        TargetNotResolved = "target_not_resolved": "The named target could not be resolved to an entity."
            => "Resolve the target first (search for it), then repeat with the exact identity.",
        /// `wrong_repository_possible`
        WrongRepositoryPossible = "wrong_repository_possible": "The scope may be the wrong repository or workspace."
            => "Check the scope or repository argument, then retry there.",
    }
}

crate::wire::open_wire_string!(
    EmptyReason,
    from_wire: |name: String| -> Result<EmptyReason, std::convert::Infallible> {
        Ok(EmptyReason::from_wire(&name))
    },
    known: EmptyReason::ALL,
    description: "Why the result is empty. Open set: readers default-branch on values they do not know.",
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_reasons_round_trip() {
        for reason in EmptyReason::ALL {
            let wire = serde_json::to_value(reason).expect("serializes");
            let back: EmptyReason = serde_json::from_value(wire).expect("reads");
            assert_eq!(&back, reason);
            assert!(!reason.meaning().is_empty() && !reason.agent_response().is_empty());
        }
        assert_eq!(EmptyReason::ALL.len(), 15);
    }

    #[test]
    fn unknown_reasons_read_into_the_fallback_without_loss() {
        let reason: EmptyReason = serde_json::from_str("\"moon_phase_wrong\"").expect("reads");
        assert!(matches!(reason, EmptyReason::Other(_)));
        assert_eq!(
            serde_json::to_string(&reason).expect("serializes"),
            "\"moon_phase_wrong\""
        );
    }
}
