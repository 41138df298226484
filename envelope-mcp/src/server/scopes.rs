//! The scope gate: a call whose authenticated caller lacks a scope the tool declares is
//! refused before the tool runs, whatever the transport.

use envelope_core::stage::{Controls, ToolOutput, meta_stamp, stamp_request_id};
use envelope_core::{Envelope, ToolContext, ToolSpec, insufficient_scope};
use serde_json::Value;

/// A request extension the HTTP layer sets when a caller's listing holds only the tools its
/// scopes cover (`ResourceServer::with_filtered_listing`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallableOnly;

/// The refusal of a call to `spec` in `ctx`, when its caller lacks some of the tool's scopes;
/// `None` when the caller has them all, or the transport authenticated no one (scopes are then
/// listed, not enforced). Shaped by the controls read leniently from `arguments`.
pub(super) fn refusal(spec: &ToolSpec, ctx: &ToolContext, arguments: &Value) -> Option<ToolOutput> {
    let missing = ctx.caller()?.scopes().missing(spec.scopes);
    if missing.is_empty() {
        return None;
    }
    let mut envelope: Envelope<Value> =
        Envelope::err(insufficient_scope(spec.name, spec.scopes, &missing));
    stamp_request_id(&mut envelope, *ctx.request_id());
    meta_stamp(&mut envelope)
        .tool(spec.name, spec.tier, spec.is_idempotent())
        .layer(spec.layer);
    Some(ToolOutput::from(envelope).with_controls(Controls::from_arguments(arguments)))
}

/// Whether the caller of `extensions` (if the transport authenticated one) may call `spec`.
pub(crate) fn may_call(caller: Option<&envelope_core::Caller>, spec: &ToolSpec) -> bool {
    caller.is_none_or(|caller| caller.may(spec.scopes))
}

impl super::EnvelopeServer {
    /// A call of `name` refused for its scopes, as the scope gate refuses it (the `permission`
    /// envelope, code `insufficient_scope`, naming what is missing), with the scopes the tool
    /// declares: what an HTTP answer's step-up challenge asks for. `None` when no tool has that
    /// name or `caller` may call it. The tool does not run.
    #[cfg(feature = "auth")]
    pub(crate) async fn refuse_for_scope(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        caller: &envelope_core::Caller,
        client_request_id: Option<&str>,
    ) -> Option<(&'static [&'static str], rmcp::model::CallToolResult)> {
        let tool = self.inner.tools.get(name)?;
        let scopes = tool.spec().scopes;
        if caller.may(scopes) {
            return None;
        }
        let extras = super::call::CallExtras {
            client_request_id: client_request_id.map(str::to_owned),
            caller: Some(caller.clone()),
            ..super::call::CallExtras::default()
        };
        let arguments = Value::Object(arguments.unwrap_or_default());
        let answer = self.call_with(tool, arguments, extras).await;
        Some((scopes, self.result(answer)))
    }
}
