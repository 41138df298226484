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
