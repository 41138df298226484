//! The hand-offs between the stages of a call, for the crates that serve tools (the transport,
//! the budget stage) and for a tool implemented by hand.
//!
//! One call goes: the transport decodes the request and builds a [`ToolContext`]; the tool
//! runs and returns a [`ToolOutput`], the envelope around its typed payload, beside what is for
//! the budget stage only; the budget stage encodes the payload, shapes, trims and stamps it into
//! the bytes sent. The envelope
//! holds only what goes on the wire; everything here that is not on the wire travels beside it.
//!
//! ```
//! use envelope_core::Envelope;
//! use envelope_core::stage::ToolOutput;
//!
//! // A hand-written tool's answer: its envelope, and the baseline it replaces.
//! let output = ToolOutput::from(Envelope::ok(serde_json::json!({"hits": 3})))
//!     .with_baseline("grep_recursive", 2_000);
//! assert_eq!(output.baseline.as_ref().map(|b| b.tokens), Some(2_000));
//! assert_eq!(output.envelope.data().and_then(|data| data.as_json()), Some(&serde_json::json!({"hits": 3})));
//! ```
//!
//! [`ToolContext`]: crate::ToolContext

use serde_json::Value;

pub use crate::bounded::{
    TopList, TopListWatch, to_value_capped, to_value_watched, to_value_within,
};
pub use crate::canonical::canonical_json;
pub use crate::context::{Cancellation, ProgressSink, States, UntilCancelled};
pub use crate::control_names::{ControlNames, RENAMED_CONTROL_PREFIX};
pub use crate::controls::{Controls, OutputFormat, ResponseMode};
pub use crate::deep::drop_deep;
use crate::envelope::Envelope;
pub use crate::expressible::Dialects;
pub use crate::meta::MetaStamp;
pub use crate::next_action::normalize_next_actions;
pub use crate::output::{Baseline, ToolOutput};
pub use crate::panic_capture::{Panicked, catch_panic, install_panic_hook};
pub use crate::payload::{Payload, ResponseSizer};
use crate::request_id::RequestId;
pub use crate::runtime::{
    ControlRefusal, ControlSplit, Invocation, Stopped, add_controls, add_controls_named,
    refused_at_entry, split_controls,
};
use crate::tool_error::ToolError;

/// Write access to an envelope's `meta`: the library's stamps, typed.
pub fn meta_stamp<T>(envelope: &mut Envelope<T>) -> MetaStamp<'_> {
    MetaStamp(envelope.meta_mut())
}

/// Stamps the request id, and masks an internal error so that it names only that id.
pub fn stamp_request_id<T>(envelope: &mut Envelope<T>, request_id: RequestId) {
    if let Some(error) = envelope.error_mut() {
        error.mask_with(&request_id);
    }
    MetaStamp(envelope.meta_mut()).request_id(request_id);
}

/// Keeps the next actions `keep` accepts, then normalizes the list again; returns how many
/// were dropped. The transport uses it to drop actions the served tools cannot run.
pub fn retain_next_actions<T>(
    envelope: &mut Envelope<T>,
    keep: impl FnMut(&crate::NextAction) -> bool,
) -> usize {
    envelope.retain_next_actions(keep)
}

/// Adds `carried` to the arguments of every next action, where the action sets no value of
/// its own: how the budget stage keeps a call's `dialect` control ([`Controls::carried`]) on
/// the calls it suggests, so that following one answers in the same wire.
pub fn carry_arguments<T>(envelope: &mut Envelope<T>, carried: &serde_json::Map<String, Value>) {
    for action in envelope.next_actions_mut() {
        crate::paging_core::carry(&mut action.arguments, carried);
    }
}

/// Moves the payload out: the budget stage sends it separately from the rest.
pub fn take_data<T>(envelope: &mut Envelope<T>) -> Option<T> {
    envelope.take_data()
}

/// The error a call to a tool whose module the server switched off answers (category
/// `module_disabled`, code `MODULE_DISABLED`): for a server's door, which gates the module
/// before the tool's entry runs. A tool cannot build it.
pub fn module_disabled(module: &str) -> ToolError {
    ToolError::module_disabled(module)
}
