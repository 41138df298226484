//! A call refused before its tool runs: the error's envelope, stamped as the tool's own
//! answers are (request id, tool, tier, idempotence, layer), in the answer's default shape.

use envelope_core::stage::{ToolOutput, meta_stamp, stamp_request_id};
use envelope_core::{Envelope, ToolContext, ToolError, ToolSpec};
use serde_json::Value;

/// The answer of a call to `spec` in `ctx` refused with `error`; the tool did not run.
pub(super) fn refused(spec: &ToolSpec, ctx: &ToolContext, error: ToolError) -> ToolOutput {
    let mut envelope: Envelope<Value> = Envelope::err(error);
    stamp_request_id(&mut envelope, *ctx.request_id());
    meta_stamp(&mut envelope)
        .tool(spec.name.clone(), spec.tier, spec.is_idempotent())
        .layer(spec.layer.clone());
    ToolOutput::from(envelope)
}
