//! Structured warnings and diagnostics: `{code, severity, message, data?}`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

crate::wire::vocabulary! {
    /// How loud a notice is; aligned with MCP logging levels so hosts can pipe notices through.
    #[derive(PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum Severity {
        /// `info`
        Info = "info",
        /// `warning`
        Warning = "warning",
        /// `error`
        // wire: a severity
        Error = "error",
    }
}

/// One entry of `warnings` (something to flag about this response) or `diagnostics` (what went
/// wrong, specifically).
///
/// Wire shape: `{code, severity, message, data?}`; `code` is stable and machine-actionable,
/// `data` is per-code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Notice {
    /// Stable machine code, such as `unknown_arg`.
    pub code: String,
    /// How loud it is.
    pub severity: Severity,
    /// Human-readable text.
    pub message: String,
    /// Per-code payload, such as `{"accepted": [...]}` for `unknown_arg`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Notice {
    /// A notice without data.
    pub fn new(code: impl Into<String>, severity: Severity, message: impl Into<String>) -> Self {
        Notice {
            code: code.into(),
            severity,
            message: message.into(),
            data: None,
        }
    }

    /// A `warning`-severity notice.
    pub fn warning(code: impl Into<String>, message: impl Into<String>) -> Self {
        Notice::new(code, Severity::Warning, message)
    }

    /// An `info`-severity notice.
    pub fn info(code: impl Into<String>, message: impl Into<String>) -> Self {
        Notice::new(code, Severity::Info, message)
    }

    /// Attaches per-code data.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}
