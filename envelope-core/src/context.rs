//! What a tool knows about the call it is serving: the request id, the per-call controls of
//! DESIGN §10, and which modules the server has switched off.

use std::collections::BTreeSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::request_id::RequestId;

/// `response_mode`: how much detail the structured payload carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// `compact` (default): bulky metadata left out; never a field an agent branches on.
    #[default]
    Compact,
    /// `full`: everything the tool produced.
    Full,
}

/// `output_format`: how the text content mirrors the envelope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// `json` (default): compact JSON.
    #[default]
    Json,
    /// `toon`: Token-Oriented Object Notation.
    Toon,
}

/// The per-call controls every tool accepts besides its own arguments (DESIGN §10).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Controls {
    /// `compact` (default) or `full`.
    #[serde(default)]
    pub response_mode: ResponseMode,
    /// `json` (default) or `toon`.
    #[serde(default)]
    pub output_format: OutputFormat,
    /// Reduce the response to its control surface.
    #[serde(default)]
    pub compact_only: bool,
    /// Opaque token from a previous page's `completeness.continuation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<String>,
}

impl Controls {
    /// The argument names the controls take, accepted by every tool.
    pub const KEYS: [&'static str; 4] = [
        "response_mode",
        "output_format",
        "compact_only",
        "continuation",
    ];
}

/// The call a tool is serving. Cheap to clone; the server builds one per call.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    request_id: RequestId,
    session: Option<Arc<str>>,
    // `None` (every module on) costs no allocation on the per-call path.
    disabled_modules: Option<Arc<BTreeSet<String>>>,
    controls: Controls,
}

impl ToolContext {
    /// A context with a fresh request id, every module enabled and default controls.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses the client's request id when it is a valid ULID, a fresh one otherwise.
    #[must_use]
    pub fn with_client_request_id(mut self, raw: Option<&str>) -> Self {
        self.request_id = RequestId::from_client(raw);
        self
    }

    /// Names the session the call belongs to.
    #[must_use]
    pub fn with_session(mut self, session: impl Into<Arc<str>>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Switches modules off: their tools answer `module_disabled`.
    #[must_use]
    pub fn with_disabled_modules(mut self, modules: Arc<BTreeSet<String>>) -> Self {
        self.disabled_modules = (!modules.is_empty()).then_some(modules);
        self
    }

    /// The call's request id.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }

    /// The session, if the transport has one.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The per-call controls the caller passed.
    pub fn controls(&self) -> &Controls {
        &self.controls
    }

    /// Whether the server switched `module` off.
    pub fn is_module_disabled(&self, module: &str) -> bool {
        self.disabled_modules
            .as_ref()
            .is_some_and(|modules| modules.contains(module))
    }

    pub(crate) fn set_controls(&mut self, controls: Controls) {
        self.controls = controls;
    }
}
