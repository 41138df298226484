//! One `tracing` span per tool call, built from the envelope's own facts.
//!
//! The span is named `tool_call` and opens before the tool runs, so every event a tool logs
//! (on the task that runs it) carries the call's fields:
//!
//! | field | value |
//! |---|---|
//! | `request_id` | the envelope's `meta.request_id` |
//! | `tool`, `tier`, `idempotent`, `layer` | the tool's declaration, as `meta` states it |
//! | `client_request_id` | the caller's correlation id, when it sent one |
//!
//! On completion it records what the response says, the same values as the envelope:
//! `ok`, `verdict`, `category` and `retryable` (failures only), `tokens_estimated`,
//! `truncated`, and `latency_ms` (the tool's run, as `meta.latency_ms` states it under
//! `response_mode: full`).
//!
//! For OpenTelemetry (through `tracing-opentelemetry`), the span also carries the names the
//! GenAI and MCP semantic conventions give the same facts: `otel.name` = `tools/call {tool}`,
//! `otel.kind` = `server`, `mcp.method.name` = `tools/call`, `gen_ai.operation.name` =
//! `execute_tool`, `gen_ai.tool.name`, `jsonrpc.protocol.version`, and on failure
//! `error.type` (the error category) and `otel.status_code` = `ERROR`.

use envelope_core::{RequestId, ToolSpec, fields};
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

/// The span a call of `spec` runs in.
pub(crate) fn call_span(spec: &ToolSpec, request_id: &RequestId, client: Option<&str>) -> Span {
    let span = tracing::info_span!(
        "tool_call",
        otel.name = %format_args!("tools/call {}", spec.name),
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = &*spec.name,
        jsonrpc.protocol.version = "2.0",
        request_id = %request_id,
        tool = &*spec.name,
        tier = spec.tier.as_str(),
        idempotent = spec.is_idempotent(),
        layer = Empty,
        client_request_id = Empty,
        ok = Empty,
        verdict = Empty,
        category = Empty,
        error.r#type = Empty,
        retryable = Empty,
        tokens_estimated = Empty,
        truncated = Empty,
        latency_ms = Empty,
    );
    if let Some(layer) = spec.layer.as_deref() {
        span.record("layer", layer); // wire: a field of the tool_call span
    }
    if let Some(client) = client {
        span.record("client_request_id", client); // wire: a field of the tool_call span
    }
    span
}

/// Records on `span` what the response `structured` says, and the tool's `latency_ms`.
pub(crate) fn record_outcome(
    span: &Span,
    structured: &Value,
    tokens_estimated: Option<u64>,
    latency_ms: Option<u64>,
) {
    let ok = structured[fields::envelope::OK] == true;
    span.record("ok", ok); // wire: a field of the tool_call span
    if let Some(verdict) = structured[fields::envelope::VERDICT].as_str() {
        span.record("verdict", verdict); // wire: a field of the tool_call span
    }
    let error = &structured[fields::envelope::ERROR];
    if let Some(category) = error[fields::error::CATEGORY].as_str() {
        span.record("category", category);
        span.record("error.type", category);
        span.record("otel.status_code", "ERROR");
    }
    if let Some(retryable) = error[fields::error::RETRYABLE].as_bool() {
        span.record("retryable", retryable);
    }
    let meta = &structured[fields::envelope::META];
    // As signed integers: OpenTelemetry has no unsigned attribute type, and an exporter would
    // turn a `u64` into text. The count is the answer's own (`meta` carries it only in full).
    if let Some(tokens) = tokens_estimated.and_then(|tokens| i64::try_from(tokens).ok()) {
        span.record("tokens_estimated", tokens); // wire: a field of the tool_call span
    }
    if let Some(truncated) = meta[fields::meta::TRUNCATED].as_bool() {
        span.record("truncated", truncated); // wire: a field of the tool_call span
    }
    if let Some(latency) = latency_ms {
        // wire: a field of the tool_call span
        span.record("latency_ms", i64::try_from(latency).unwrap_or(i64::MAX));
    }
}
