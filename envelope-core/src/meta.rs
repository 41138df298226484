//! The `meta` block: stamped by the library, never by tool code.
//!
//! Invariant: every field here is written only through [`MetaStamp`], which the `#[tool]`
//! wrapper, the budget stage and the transport get from [`crate::stage::meta_stamp`]. Tool code never holds a mutable
//! `Meta`, and `Meta` has no public setter.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::attachment::AttachmentNote;
use crate::capability::Capability;
use crate::request_id::RequestId;
use crate::tier::Tier;

/// The contract's version, stamped as `meta.schema_version`. Bumped on any change to the wire
/// shape; additions of optional fields count.
pub const SCHEMA_VERSION: u32 = 3;

/// How `tokens_estimated` was counted. Wire names: `heuristic`, `script_aware`, `chars_div_4`,
/// `cl100k_base`, `o200k_base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokensMethod {
    /// The default estimate: a linear model over character classes, calibrated against exact
    /// `cl100k_base` counts.
    Heuristic,
    /// The plain script-aware rule: ASCII about 4 characters a token, other characters 1 each.
    ScriptAware,
    /// Characters divided by 4.
    #[serde(rename = "chars_div_4")]
    CharsDiv4,
    /// Exact count with the `cl100k_base` encoding.
    #[serde(rename = "cl100k_base")]
    Cl100kBase,
    /// Exact count with the `o200k_base` encoding.
    #[serde(rename = "o200k_base")]
    O200kBase,
}

/// The index was written by a newer schema than the running binary understands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BinaryDrift {
    /// The schema version the stored data was written with.
    pub stored_version: u32,
    /// The schema version this binary understands.
    pub running_version: u32,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<String>,
}

/// What a server knows about the index it answers from: the schema version the stored data
/// was written with, against the one the running binary understands.
///
/// A server reports it (an MCP server through its config) and the library stamps it on every
/// response as `meta.schema_version_at_index`, plus `meta.binary_drift_warning` when the data is
/// newer than the binary. Tools read it from their context to explain an empty result.
///
/// ```
/// use envelope_core::IndexStatus;
///
/// let old = IndexStatus::new(2, 3);
/// assert!(old.is_stale() && old.drift().is_none());
/// let newer = IndexStatus::new(4, 3).with_remediation("upgrade the server");
/// assert_eq!(newer.drift().map(|d| d.stored_version), Some(4));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexStatus {
    schema_version_at_index: u32,
    running_version: u32,
    remediation: Option<String>,
}

impl IndexStatus {
    /// An index written with schema `schema_version_at_index`, read by a binary that
    /// understands `running_version`.
    pub fn new(schema_version_at_index: u32, running_version: u32) -> Self {
        IndexStatus {
            schema_version_at_index,
            running_version,
            remediation: None,
        }
    }

    /// What to do about a drift, carried in `binary_drift_warning.remediation`.
    #[must_use]
    pub fn with_remediation(mut self, remediation: impl Into<String>) -> Self {
        self.remediation = Some(remediation.into());
        self
    }

    /// The schema version the stored data was written with.
    pub fn schema_version_at_index(&self) -> u32 {
        self.schema_version_at_index
    }

    /// The schema version the running binary understands.
    pub fn running_version(&self) -> u32 {
        self.running_version
    }

    /// The index predates the binary's schema: what the newer schema indexes is missing from
    /// it, so an empty result should say `stale_index` and suggest reindexing.
    pub fn is_stale(&self) -> bool {
        self.schema_version_at_index < self.running_version
    }

    /// The stored data is newer than the binary: the `binary_drift_warning` to stamp. Its
    /// `remediation` is the server's ([`IndexStatus::with_remediation`]), else the one every
    /// drift calls for: a binary that reads the newer schema.
    pub fn drift(&self) -> Option<BinaryDrift> {
        (self.schema_version_at_index > self.running_version).then(|| BinaryDrift {
            stored_version: self.schema_version_at_index,
            running_version: self.running_version,
            remediation: Some(self.remediation.clone().unwrap_or_else(|| {
                format!(
                    "the index was written with schema version {} and this server reads {}: \
                     upgrade the server, or re-index with this version",
                    self.schema_version_at_index, self.running_version
                )
            })),
        })
    }
}

/// Library-stamped facts about one call.
///
/// Wire names are the field names below; absent fields are omitted. `request_id` is always
/// present, and `truncated` whenever a budget applied; the observability stamps (tool, tier,
/// idempotency, latency, token method and savings, layer, schema version, capabilities) only
/// under `response_mode: full`, since a model cannot act on them and the listing already says
/// most of them. The trimmer's `truncated_*` markers sit at this level
/// beside the named fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Meta {
    /// The call's ULID; a valid client-supplied ULID is echoed.
    request_id: RequestId,
    /// The client's own correlation id (an `X-Request-ID` that is not a ULID, say a gateway's
    /// UUID), kept beside `request_id` when it is safe to log: 1 to 128 printable ASCII
    /// characters. Absent when the client sent none, sent a ULID, or sent something unsafe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_request_id: Option<String>,
    /// The tool's registered name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool: Option<Cow<'static, str>>,
    /// The tool's declared tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    complexity_tier: Option<Tier>,
    /// Whether repeating the call is safe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idempotent: Option<bool>,
    /// Server-measured time spent in the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_ms: Option<u64>,
    /// Tokens of the response as compact JSON (what `structuredContent` carries, and the text
    /// content too unless `output_format: "toon"` asked for TOON there), this field included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens_estimated: Option<u64>,
    /// How `tokens_estimated` was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens_method: Option<TokensMethod>,
    /// The declared baseline's tokens minus `tokens_estimated`: negative when this response
    /// cost more than the baseline would have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens_saved: Option<i64>,
    /// `tokens_saved` as a percentage of the baseline; negative with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens_saved_pct: Option<f64>,
    /// What the agent would have done without this tool (when the tool declares a baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    baseline_method: Option<String>,
    /// Whether the response budget cut anything from this response (rows, long strings, deep
    /// nesting), with `truncated_*` markers saying what; absent when no budget applied. Not to
    /// be confused with `completeness.truncated`, which says the result has more rows than this
    /// page returned, for whatever reason (page limit, budget, time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    truncated: Option<bool>,
    /// Every trimming rung ran and the response is still over budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    envelope_unshrinkable: Option<bool>,
    /// The declared layer that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    layer: Option<Cow<'static, str>>,
    /// The contract's version, under `response_mode: full`; a reader of an answer without it
    /// assumes the version it was built for.
    #[serde(
        default = "current_schema_version",
        skip_serializing_if = "left_out_by_the_compact_modes"
    )]
    schema_version: u32,
    /// The server's capability tags, under `response_mode: full` (every MCP result's `_meta`
    /// carries them too); absent when the server advertises none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    capabilities: Vec<Capability>,
    /// The schema version the served data was indexed with (server-supplied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schema_version_at_index: Option<u32>,
    /// Stored data is newer than the running binary (server-supplied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    binary_drift_warning: Option<BinaryDrift>,
    /// The media the tool attached, in order: what each is and whether it was sent (the budget
    /// stage decides); absent when nothing was attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    attachments: Vec<AttachmentNote>,
    /// The trimmer's `truncated_<key>_from/_to`, `truncated_string_fields`, … markers.
    #[serde(flatten)]
    trim_markers: BTreeMap<String, Value>,
}

fn current_schema_version() -> u32 {
    SCHEMA_VERSION
}

/// Never true: `Meta` always writes its schema version, and the compact modes remove it from
/// the wire (the budget stage shapes them). Declared so that the schema, which says what the
/// wire may hold, lists the field as optional.
fn left_out_by_the_compact_modes(_: &u32) -> bool {
    false
}

impl Meta {
    pub(crate) fn new(request_id: RequestId) -> Self {
        Meta {
            request_id,
            client_request_id: None,
            tool: None,
            complexity_tier: None,
            idempotent: None,
            latency_ms: None,
            tokens_estimated: None,
            tokens_method: None,
            tokens_saved: None,
            tokens_saved_pct: None,
            baseline_method: None,
            truncated: None,
            envelope_unshrinkable: None,
            layer: None,
            schema_version: SCHEMA_VERSION,
            capabilities: Vec::new(),
            schema_version_at_index: None,
            binary_drift_warning: None,
            attachments: Vec::new(),
            trim_markers: BTreeMap::new(),
        }
    }

    /// `request_id`: the call's ULID.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }

    /// `client_request_id`: the client's own correlation id, when it sent one that is not a
    /// ULID and is safe to log.
    pub fn client_request_id(&self) -> Option<&str> {
        self.client_request_id.as_deref()
    }

    /// `tool`: the tool's registered name.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// `complexity_tier`: the tool's declared tier.
    pub fn complexity_tier(&self) -> Option<Tier> {
        self.complexity_tier
    }

    /// `idempotent`: whether repeating the call is safe.
    pub fn idempotent(&self) -> Option<bool> {
        self.idempotent
    }

    /// `latency_ms`: server-measured time in the tool.
    pub fn latency_ms(&self) -> Option<u64> {
        self.latency_ms
    }

    /// `tokens_estimated`: tokens of the bytes actually sent, this field included.
    pub fn tokens_estimated(&self) -> Option<u64> {
        self.tokens_estimated
    }

    /// `tokens_method`: how `tokens_estimated` was counted.
    pub fn tokens_method(&self) -> Option<TokensMethod> {
        self.tokens_method
    }

    /// `tokens_saved`: the declared baseline's tokens minus `tokens_estimated`; negative when
    /// the response cost more than the baseline.
    pub fn tokens_saved(&self) -> Option<i64> {
        self.tokens_saved
    }

    /// `tokens_saved_pct`: `tokens_saved` as a percentage of the baseline.
    pub fn tokens_saved_pct(&self) -> Option<f64> {
        self.tokens_saved_pct
    }

    /// `baseline_method`: what the agent would have done without this tool.
    pub fn baseline_method(&self) -> Option<&str> {
        self.baseline_method.as_deref()
    }

    /// `truncated`: whether the response budget cut anything. Absent when no budget applied.
    /// `completeness.truncated` is another fact: the result has rows this page does not carry.
    pub fn truncated(&self) -> Option<bool> {
        self.truncated
    }

    /// `envelope_unshrinkable`: every rung ran and the response is still over budget.
    pub fn envelope_unshrinkable(&self) -> Option<bool> {
        self.envelope_unshrinkable
    }

    /// `layer`: the declared layer that answered.
    pub fn layer(&self) -> Option<&str> {
        self.layer.as_deref()
    }

    /// `schema_version`: the contract version, [`SCHEMA_VERSION`].
    pub fn schema_version(&self) -> u32 {
        self.schema_version
    }

    /// `capabilities`: the server's advertised tags; empty when the server opted out.
    pub fn capabilities(&self) -> &[Capability] {
        &self.capabilities
    }

    /// `schema_version_at_index`: the schema version the served data was indexed with.
    pub fn schema_version_at_index(&self) -> Option<u32> {
        self.schema_version_at_index
    }

    /// `binary_drift_warning`: stored data is newer than the binary.
    pub fn binary_drift_warning(&self) -> Option<&BinaryDrift> {
        self.binary_drift_warning.as_ref()
    }

    /// `attachments`: the media the tool attached, and whether each was sent.
    pub fn attachments(&self) -> &[AttachmentNote] {
        &self.attachments
    }

    /// The trimmer's `truncated_*` markers.
    pub fn trim_markers(&self) -> &BTreeMap<String, Value> {
        &self.trim_markers
    }
}

/// Write access to a [`Meta`], handed out only by [`crate::stage::meta_stamp`]: the stages of
/// a call (the `#[tool]` entry, the transport, the budget stage) stamp `meta` through it, one
/// typed method per fact.
#[derive(Debug)]
pub struct MetaStamp<'a>(pub(crate) &'a mut Meta);

impl MetaStamp<'_> {
    /// `request_id`: the call's ULID.
    pub fn request_id(&mut self, id: RequestId) -> &mut Self {
        self.0.request_id = id;
        self
    }

    /// `client_request_id`: the client's own correlation id, when safe to log.
    pub fn client_request_id(&mut self, id: Option<&str>) -> &mut Self {
        self.0.client_request_id = id.map(str::to_owned);
        self
    }

    /// `tool`, `complexity_tier` and `idempotent`: the tool's declaration.
    pub fn tool(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        tier: Tier,
        idempotent: bool,
    ) -> &mut Self {
        self.0.tool = Some(name.into());
        self.0.complexity_tier = Some(tier);
        self.0.idempotent = Some(idempotent);
        self
    }

    /// `latency_ms`: the time spent in the tool, in whole milliseconds.
    pub fn latency(&mut self, latency: Duration) -> &mut Self {
        self.0.latency_ms = Some(u64::try_from(latency.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// `layer`: the declared layer that answered.
    pub fn layer<L: Into<Cow<'static, str>>>(&mut self, layer: Option<L>) -> &mut Self {
        self.0.layer = layer.map(Into::into);
        self
    }

    /// `tokens_estimated` and `tokens_method`: the response's size in tokens, and how counted.
    pub fn tokens(&mut self, estimated: u64, method: TokensMethod) -> &mut Self {
        self.0.tokens_estimated = Some(estimated);
        self.0.tokens_method = Some(method);
        self
    }

    /// `baseline_method`, `tokens_saved` and `tokens_saved_pct`: the savings against a
    /// declared baseline.
    pub fn savings(&mut self, baseline_method: &str, saved: i64, saved_pct: f64) -> &mut Self {
        self.0.baseline_method = Some(baseline_method.to_owned());
        self.0.tokens_saved = Some(saved);
        self.0.tokens_saved_pct = Some(saved_pct);
        self
    }

    /// `truncated`: whether the budget cut anything.
    pub fn truncated(&mut self, truncated: bool) -> &mut Self {
        self.0.truncated = Some(truncated);
        self
    }

    /// `envelope_unshrinkable`: still over budget after every rung (absent when false).
    pub fn unshrinkable(&mut self, unshrinkable: bool) -> &mut Self {
        self.0.envelope_unshrinkable = unshrinkable.then_some(true);
        self
    }

    /// The trimmer's `truncated_*` markers, keyed by the names in [`meta_keys`](crate::meta_keys).
    pub fn trim_markers(&mut self) -> &mut BTreeMap<String, Value> {
        &mut self.0.trim_markers
    }

    /// `capabilities`: the server's capability tags.
    pub fn capabilities(&mut self, capabilities: Vec<Capability>) -> &mut Self {
        self.0.capabilities = capabilities;
        self
    }

    /// `attachments`: what the budget stage decided of each attachment, in order.
    pub fn attachments(&mut self, notes: Vec<AttachmentNote>) -> &mut Self {
        self.0.attachments = notes;
        self
    }

    /// `schema_version_at_index` and `binary_drift_warning`: the state of the served index.
    pub fn index_status(&mut self, status: Option<&IndexStatus>) -> &mut Self {
        self.0.schema_version_at_index = status.map(IndexStatus::schema_version_at_index);
        self.0.binary_drift_warning = status.and_then(IndexStatus::drift);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_names_are_the_wire_names() {
        let mut meta = Meta::new(RequestId::new());
        let mut stamp = MetaStamp(&mut meta);
        stamp
            .client_request_id(Some("gateway-7"))
            .tool("search", Tier::Lite, true)
            .latency(Duration::from_millis(3))
            .layer(Some("docs"))
            .tokens(10, TokensMethod::Heuristic)
            .savings("grep_recursive", 5, 33.3)
            .truncated(true)
            .unshrinkable(true)
            .capabilities(vec![Capability::REQUEST_IDS])
            .index_status(Some(&IndexStatus::new(3, 1)))
            .attachments(vec![
                crate::Attachment::image(&[1], "image/png").note(crate::Delivery::Sent),
            ]);
        let wire = serde_json::to_value(&meta).expect("serializes");
        let written: Vec<&str> = wire
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        let mut named = crate::fields::meta::FIELDS.to_vec();
        named.sort_unstable();
        assert_eq!(written, named, "every field stamped, each under its key");
    }
}
