//! Who may call what: the scope gate, which refuses a call whose authenticated caller lacks a
//! scope the tool declares before the tool runs, whatever the transport; and what a caller is
//! shown when its listing holds only the tools it may call. [`may_call`] is the one judge of
//! both.

use envelope_core::stage::{Controls, ToolOutput, meta_stamp, stamp_request_id};
use envelope_core::{Caller, Envelope, ToolContext, ToolSpec, insufficient_scope};
use serde_json::Value;

/// A request extension the HTTP layer sets when a caller's listing holds only the tools its
/// scopes cover (`ResourceServer::with_filtered_listing`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallableOnly;

/// Whether `caller` may call `spec`: its token grants every scope the tool declares (a tool
/// that declares none is everyone's). Without a caller (the transport authenticated no one)
/// every tool may be called: scopes are then listed, not enforced.
///
/// The one answer to "may this caller call that tool": the scope gate, the filtered listing,
/// the unknown-tool error's `available`, the REST gateway and the next actions kept all ask it.
pub(crate) fn may_call(caller: Option<&Caller>, spec: &ToolSpec) -> bool {
    caller.is_none_or(|caller| caller.may(spec.scopes))
}

/// The refusal of a call to `spec` in `ctx`, when its caller may not call it ([`may_call`]);
/// `None` when it may. Shaped by the controls read leniently from `arguments`.
pub(super) fn refusal(spec: &ToolSpec, ctx: &ToolContext, arguments: &Value) -> Option<ToolOutput> {
    if may_call(ctx.caller(), spec) {
        return None;
    }
    let missing = ctx.caller()?.scopes().missing(spec.scopes);
    let mut envelope: Envelope<Value> =
        Envelope::err(insufficient_scope(spec.name, spec.scopes, &missing));
    stamp_request_id(&mut envelope, *ctx.request_id());
    meta_stamp(&mut envelope)
        .tool(spec.name, spec.tier, spec.is_idempotent())
        .layer(spec.layer);
    Some(ToolOutput::from(envelope).with_controls(Controls::from_arguments(arguments)))
}

/// Which tools one request is shown: in listings, in the unknown-tool error's `available`, in
/// the next actions of its answers. A tool not shown is hidden: called by name, it answers as a
/// name no tool has.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shown<'a> {
    /// Every tool, with the scopes each needs (the listing is not filtered).
    All,
    /// Only the tools this caller may call ([`may_call`]).
    Callable(Option<&'a Caller>),
}

impl<'a> Shown<'a> {
    /// What the request of `extensions` is shown: only what its caller may call when the HTTP
    /// layer marked it [`CallableOnly`], else everything.
    pub(crate) fn of(extensions: Option<&'a http::Extensions>) -> Self {
        match extensions {
            Some(extensions) if extensions.get::<CallableOnly>().is_some() => {
                Shown::Callable(extensions.get::<Caller>())
            }
            _ => Shown::All,
        }
    }

    /// Whether `spec` is shown.
    pub(crate) fn includes(self, spec: &ToolSpec) -> bool {
        match self {
            Shown::All => true,
            Shown::Callable(caller) => may_call(caller, spec),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope_core::{Principal, Scopes, Tier};

    fn spec(scopes: &'static [&'static str]) -> ToolSpec {
        ToolSpec {
            name: "erase",
            description: "Erase every note.",
            title: None,
            tier: Tier::Lite,
            read_only: None,
            idempotent: None,
            destructive: Some(true),
            open_world: None,
            layer: None,
            module: None,
            budget: None,
            strict_args: false,
            scopes,
        }
    }

    fn caller(scopes: &str) -> Caller {
        Caller::new(
            Principal::new("https://issuer", "agent"),
            Scopes::parse(scopes),
        )
    }

    #[test]
    fn a_caller_may_call_what_its_scopes_cover() {
        let reader = caller("notes:read");
        assert!(may_call(Some(&reader), &spec(&[])));
        assert!(may_call(Some(&reader), &spec(&["notes:read"])));
        assert!(!may_call(
            Some(&reader),
            &spec(&["notes:read", "notes:write"])
        ));
        // No one authenticated: scopes are listed, not enforced.
        assert!(may_call(None, &spec(&["notes:write"])));
    }

    #[test]
    fn a_filtered_request_is_shown_only_what_it_may_call() {
        let mut extensions = http::Extensions::new();
        extensions.insert(caller("notes:read"));
        let writer = spec(&["notes:write"]);
        assert!(Shown::of(Some(&extensions)).includes(&writer));
        extensions.insert(CallableOnly);
        assert!(!Shown::of(Some(&extensions)).includes(&writer));
        assert!(Shown::of(Some(&extensions)).includes(&spec(&["notes:read"])));
        assert!(Shown::of(None).includes(&writer));
    }
}
