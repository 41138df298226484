//! A call that failed for want of a client capability, answered on MCP 2026-07-28 as the
//! protocol says: the JSON-RPC error `-32021` naming the capabilities it needs (SEP-2575), not
//! a tool result.
//!
//! A tool learns it the way every client feature fails: `elicitation_unavailable`,
//! `sampling_unavailable` or `roots_unavailable` (a proxy's upstream refusing `-32021` is
//! mapped to the same codes). Only a capability the client did not declare makes it the
//! client's error: the same codes for a client that declared the capability (a server that
//! cannot seal a round, say) stay the call's envelope, and so does every code on the earlier
//! revisions, which have no such error.

use envelope_core::{ClientFeature, ToolError};
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::{Map, Value};

/// The key of a `*_unavailable` error's `data` that names the capabilities, as MCP spells them
/// (`{"sampling": {}}`), when the tool knows more than its code says.
pub const REQUIRED_CAPABILITIES: &str = "required_capabilities";

/// The capabilities a failed call needed, read from its error.
pub(crate) struct MissingCapability {
    message: String,
    required: Map<String, Value>,
}

impl MissingCapability {
    /// What `error` needed, when it is a client feature's absence.
    pub(crate) fn of(error: &ToolError) -> Option<Self> {
        // Named in MCP's capabilities as the feature is named.
        let capability = ClientFeature::of_unavailable_code(error.code()?)?.to_string();
        let required = error
            .data()
            .and_then(|data| data.get(REQUIRED_CAPABILITIES))
            .and_then(Value::as_object)
            .filter(|named| !named.is_empty())
            .cloned()
            .unwrap_or_else(|| Map::from_iter([(capability, Value::Object(Map::new()))]));
        Some(MissingCapability {
            message: error.message().to_owned(),
            required,
        })
    }

    /// The JSON-RPC error `-32021`, when the client's `declared` capabilities lack one of those
    /// needed, down to the sub-capability named (`{"elicitation": {"url": {}}}` needs URL
    /// elicitation, not just elicitation); `None` when it declared them all.
    pub(crate) fn refusal(&self, declared: &rmcp::model::ClientCapabilities) -> Option<ErrorData> {
        let declared = serde_json::to_value(declared).unwrap_or_default();
        let undeclared = !declares(&declared, &self.required);
        undeclared.then(|| {
            ErrorData::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                self.message.clone(),
                Some(serde_json::json!({ "requiredCapabilities": self.required })),
            )
        })
    }
}

/// Whether `declared` has every capability `required` names, each sub-capability within its
/// capability's object.
fn declares(declared: &Value, required: &Map<String, Value>) -> bool {
    required.iter().all(|(name, needed)| {
        let Some(has) = declared.get(name).filter(|has| !has.is_null()) else {
            return false;
        };
        match needed.as_object() {
            Some(within) if !within.is_empty() => declares(has, within),
            _ => true,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope_core::Category;
    use envelope_core::fields::code;
    use rmcp::model::ClientCapabilities;
    use serde_json::json;

    fn unavailable(code: &str) -> ToolError {
        ToolError::new(Category::Unavailable, "the client cannot do that").with_code(code)
    }

    #[test]
    fn a_capability_the_client_did_not_declare_is_refused_minus_32021() {
        let missing = MissingCapability::of(&unavailable(code::SAMPLING_UNAVAILABLE))
            .expect("sampling is a client capability");
        let refused = missing
            .refusal(&ClientCapabilities::default())
            .expect("undeclared");
        assert_eq!(refused.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            refused.data,
            Some(json!({ "requiredCapabilities": { "sampling": {} } }))
        );
        #[allow(deprecated)] // sampling is deprecated by SEP-2577, still declared
        let declared = ClientCapabilities::builder().enable_sampling().build();
        assert!(
            missing.refusal(&declared).is_none(),
            "declared: the envelope stands"
        );
    }

    #[test]
    fn the_capabilities_named_in_the_data_are_the_ones_required() {
        let error = unavailable(code::ELICITATION_UNAVAILABLE).with_data(json!({
            REQUIRED_CAPABILITIES: { "elicitation": { "url": {} } },
        }));
        let refused = MissingCapability::of(&error)
            .and_then(|missing| missing.refusal(&ClientCapabilities::default()))
            .expect("undeclared");
        assert_eq!(
            refused.data,
            Some(json!({ "requiredCapabilities": { "elicitation": { "url": {} } } }))
        );
    }

    #[test]
    fn a_sub_capability_is_required_within_its_capability() {
        let error = unavailable(code::ELICITATION_UNAVAILABLE).with_data(json!({
            REQUIRED_CAPABILITIES: { "elicitation": { "url": {} } },
        }));
        let missing = MissingCapability::of(&error).expect("elicitation is a client capability");
        let form_only: ClientCapabilities =
            serde_json::from_value(json!({ "elicitation": { "form": {} } })).expect("capabilities");
        assert!(missing.refusal(&form_only).is_some(), "no URL elicitation");
        let with_url: ClientCapabilities =
            serde_json::from_value(json!({ "elicitation": { "form": {}, "url": {} } }))
                .expect("capabilities");
        assert!(missing.refusal(&with_url).is_none(), "declared");
    }

    #[test]
    fn other_errors_are_no_missing_capability() {
        assert!(MissingCapability::of(&unavailable("not_configured")).is_none());
        assert!(MissingCapability::of(&ToolError::validation("bad")).is_none());
    }
}
