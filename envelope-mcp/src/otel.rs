//! OpenTelemetry (feature `otel`): each call's `tool_call` span joins its caller's trace.
//!
//! The span a call runs in carries the attribute names of OpenTelemetry's GenAI and MCP
//! semantic conventions beside the envelope's own (see the crate's observability docs). With
//! `tracing-opentelemetry` installed as a layer of the subscriber, every call exports one
//! server span named `tools/call {tool}`. The caller's W3C trace context is honoured: the
//! `traceparent` (and `tracestate`) HTTP headers of the request, or, on transports without
//! headers, the same keys in the request's `params._meta`. A call without one starts a trace.
//!
//! ```no_run
//! use opentelemetry::trace::TracerProvider as _;
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! # fn provider() -> opentelemetry_sdk::trace::SdkTracerProvider { unimplemented!() }
//! let provider = provider(); // with an OTLP exporter, say: see `otlp::tracer_provider`
//! let subscriber = tracing_subscriber::registry()
//!     .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("workspace_server")));
//! tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
//! ```

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C trace context a caller sent: `traceparent`, and `tracestate` if any.
#[derive(Debug, Clone, Default)]
pub(crate) struct TraceContext {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl TraceContext {
    /// The trace context in HTTP `headers`, else in the request's `params._meta`.
    pub(crate) fn of(
        headers: Option<&http::HeaderMap>,
        meta: &serde_json::Map<String, serde_json::Value>,
    ) -> TraceContext {
        let header = |name: &str| {
            headers
                .and_then(|headers| headers.get(name))
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let in_meta = |name: &str| {
            meta.get(name)
                .and_then(|value| value.as_str())
                .map(str::to_owned)
        };
        match header("traceparent") {
            Some(traceparent) => TraceContext {
                traceparent: Some(traceparent),
                tracestate: header("tracestate"),
            },
            None => TraceContext {
                traceparent: in_meta("traceparent"),
                tracestate: in_meta("tracestate"),
            },
        }
    }

    /// Makes `span` a child of the caller's span, when the caller sent a valid context.
    pub(crate) fn adopt(&self, span: &Span) {
        if self.traceparent.is_none() {
            return;
        }
        let parent = TraceContextPropagator::new().extract(self);
        // A malformed `traceparent` extracts an invalid context, which starts a new trace.
        let _ = span.set_parent(parent);
    }
}

impl Extractor for TraceContext {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent.as_deref(),
            "tracestate" => self.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        ["traceparent", "tracestate"]
            .into_iter()
            .filter(|key| self.get(key).is_some())
            .collect()
    }
}
