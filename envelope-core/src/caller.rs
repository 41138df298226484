//! Who is calling: the principal a verified access token names, and the scopes it grants.
//!
//! A transport that authenticates its callers (envelope-mcp's HTTP server with an OAuth
//! verifier) puts a [`Caller`] in the [`ToolContext`](crate::ToolContext); the server refuses a
//! call whose caller lacks one of the scopes the tool declares (`#[tool(scopes = [...])]`)
//! before the tool runs, with a `permission` error of code [`INSUFFICIENT_SCOPE`]
//! ([`insufficient_scope`]). Without a caller (stdio, or HTTP without authentication) scopes
//! are listed but not enforced: the transport has no one to hold to them.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use serde_json::json;

use crate::tool_error::ToolError;

/// Code of the `permission` error a call gets when its caller's token lacks a scope the tool
/// requires. `error.data` is `{"required": [...], "missing": [...]}` (wire: `required`,
/// `missing`), each a list of scope names.
// wire: the error code, RFC 6750's own name for it
pub const INSUFFICIENT_SCOPE: &str = crate::fields::code::INSUFFICIENT_SCOPE;

/// The principal a verified access token names: its issuer (`iss`) and its subject (`sub`).
///
/// Continuations and target refs are bound to it, not to the token: a page fetched with one
/// token resumes with a refreshed token of the same subject, and with no other subject's.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    issuer: Arc<str>,
    subject: Arc<str>,
    /// `["issuer","subject"]` as compact JSON: one string that no other pair writes.
    binding: Arc<str>,
}

impl Principal {
    /// The subject `subject` of the issuer `issuer`.
    pub fn new(issuer: impl Into<Arc<str>>, subject: impl Into<Arc<str>>) -> Self {
        let (issuer, subject) = (issuer.into(), subject.into());
        // A JSON array of two strings: neither can end the other early, whatever they hold.
        let binding = json!([&*issuer, &*subject]).to_string().into();
        Principal {
            issuer,
            subject,
            binding,
        }
    }

    /// The issuer of the token (its `iss`): who vouches for the subject.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The subject of the token (its `sub`), unique within its issuer.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// What continuations and target refs bind the caller as: issuer and subject together, in
    /// one string no other pair of them writes.
    pub fn binding(&self) -> &str {
        &self.binding
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("issuer", &self.issuer)
            .field("subject", &self.subject)
            .finish()
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` of `{}`", self.subject, self.issuer)
    }
}

/// The scopes a token grants: RFC 6749's scope-tokens, a set (order and repeats do not count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scopes(BTreeSet<Arc<str>>);

impl Scopes {
    /// The scopes of a space-delimited `scope` value, as a token or an introspection answer
    /// carries them (RFC 6749 §3.3). Empty names (repeated spaces) are skipped.
    pub fn parse(delimited: &str) -> Self {
        delimited.split(' ').filter(|s| !s.is_empty()).collect()
    }

    /// Whether `scope` is granted.
    pub fn contains(&self, scope: &str) -> bool {
        self.0.contains(scope)
    }

    /// Those of `required` that are not granted, in the order given.
    pub fn missing<'a, S: AsRef<str>>(&self, required: &'a [S]) -> Vec<&'a str> {
        required
            .iter()
            .map(AsRef::as_ref)
            .filter(|scope| !self.contains(scope))
            .collect()
    }

    /// The granted scopes, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|scope| &**scope)
    }

    /// How many scopes are granted.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<S: Into<Arc<str>>> FromIterator<S> for Scopes {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Scopes(iter.into_iter().map(Into::into).collect())
    }
}

/// A caller the transport authenticated: the principal its token names and the scopes it
/// grants. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    principal: Principal,
    scopes: Scopes,
}

impl Caller {
    /// `principal`, granted `scopes`.
    pub fn new(principal: Principal, scopes: Scopes) -> Self {
        Caller { principal, scopes }
    }

    /// Who the token says is calling.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// What the token grants.
    pub fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    /// Whether every scope of `required` is granted.
    pub fn may<S: AsRef<str>>(&self, required: &[S]) -> bool {
        required
            .iter()
            .all(|scope| self.scopes.contains(scope.as_ref()))
    }
}

/// The refusal of a call to `tool`, whose caller lacks `missing` of the `required` scopes: a
/// `permission` error of code [`INSUFFICIENT_SCOPE`] naming both in its data, whose hint says
/// how to get them.
pub fn insufficient_scope<S: AsRef<str>>(
    tool: &str,
    required: &[S],
    missing: &[&str],
) -> ToolError {
    let required: Vec<&str> = required.iter().map(AsRef::as_ref).collect();
    let quoted = |scopes: &[&str]| {
        scopes
            .iter()
            .map(|scope| format!("`{scope}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    ToolError::permission(format!(
        "`{tool}` requires the scope {}, which the access token does not grant",
        quoted(missing)
    ))
    .with_code(INSUFFICIENT_SCOPE)
    .with_hint(format!(
        "ask the authorization server for a new token with scope `{}` (the authorization \
         servers are listed in this server's /.well-known/oauth-protected-resource), then \
         call again with it",
        required.join(" ")
    ))
    // wire: the refusal's data
    .with_data(json!({ "required": required, "missing": missing }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_tells_every_pair_apart() {
        let a = Principal::new("https://issuer", "a\",\"b");
        let b = Principal::new("https://issuer\",\"a", "b");
        assert_ne!(a.binding(), b.binding());
        assert_eq!(a, Principal::new("https://issuer", "a\",\"b"));
        assert_eq!(
            Principal::new("https://i", "s").binding(),
            r#"["https://i","s"]"#
        );
    }

    #[test]
    fn scopes_are_a_set_of_space_delimited_names() {
        let scopes = Scopes::parse("  workspace:read   workspace:heavy workspace:read ");
        assert_eq!(scopes.len(), 2);
        assert_eq!(
            scopes.iter().collect::<Vec<_>>(),
            ["workspace:heavy", "workspace:read"]
        );
        assert_eq!(
            scopes.missing(&["workspace:read", "admin", "workspace:heavy", "write"]),
            ["admin", "write"]
        );
        assert!(Scopes::parse("").is_empty());
    }

    #[test]
    fn a_caller_may_call_what_its_scopes_cover() {
        let caller = Caller::new(
            Principal::new("https://i", "s"),
            Scopes::parse("workspace:read"),
        );
        assert!(caller.may::<&str>(&[]));
        assert!(caller.may(&["workspace:read"]));
        assert!(!caller.may(&["workspace:read", "workspace:heavy"]));
    }

    #[test]
    fn the_refusal_names_what_is_missing_and_how_to_get_it() {
        let error = insufficient_scope(
            "graph_export",
            &["workspace:read", "workspace:heavy"],
            &["workspace:heavy"],
        );
        assert_eq!(error.category(), crate::Category::Permission);
        assert_eq!(error.code(), Some(INSUFFICIENT_SCOPE));
        assert!(!error.retryable());
        assert_eq!(
            error.data(),
            Some(&json!({
                "required": ["workspace:read", "workspace:heavy"],
                "missing": ["workspace:heavy"],
            }))
        );
        assert!(error.message().contains("`workspace:heavy`"));
        let hint = error.hint().unwrap_or_default();
        assert!(
            hint.contains("scope `workspace:read workspace:heavy`"),
            "{hint}"
        );
    }
}
