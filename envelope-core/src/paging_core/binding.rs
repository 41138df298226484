//! What a continuation is bound to: a [`Binding`] names a call's tool, caller, request, scope and
//! snapshot, and computes the binding and snapshot tags a token carries of them.

use serde_json::Value;

use super::keys::ContinuationKey;
use super::token::{BIND_LABEL, SNAPSHOT_LABEL, TAG_LEN};
use crate::canonical::canonical_json;
use crate::dialect::Dialect;

/// The argument that carries the token, unless [`Binding::with_continuation_field`] renames it.
// wire: an argument name
pub const DEFAULT_CONTINUATION_FIELD: &str = "continuation";
/// The argument that carries the page size, unless [`Binding::with_limit_field`] renames it.
pub const DEFAULT_LIMIT_FIELD: &str = "limit";
/// Legacy start positions: never part of the request digest, and refused next to a token.
// wire: argument names
pub(crate) const LEGACY_START_FIELDS: [&str; 2] = ["offset", "resume_from"];

/// What a continuation is bound to: presenting a token under any other binding fails.
///
/// The request is bound as the canonical JSON (keys sorted) of the call's arguments
/// with the continuation field, the page-size field and the legacy `offset`/`resume_from`
/// removed from the top level. A changed page size is therefore honoured (AIP-158), while any
/// other changed argument is a [`CONTINUATION_SCOPE_MISMATCH`].
///
/// [`CONTINUATION_SCOPE_MISMATCH`]: super::CONTINUATION_SCOPE_MISMATCH
///
/// ```
/// use envelope_core::paging::Binding;
/// use serde_json::json;
///
/// let args = json!({"query": "needle", "limit": 50, "continuation": "…"});
/// let binding = Binding::new("search_text", "session-1", &args)
///     .with_scope("src/")
///     .with_snapshot("rev-41");
/// # let _ = binding;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    tool: &'a str,
    session: &'a str,
    request: &'a Value,
    scope: &'a str,
    snapshot: &'a str,
    pub(super) dialect: Dialect,
    pub(super) continuation_field: &'a str,
    pub(super) limit_field: &'a str,
}

impl<'a> Binding<'a> {
    /// A binding to a tool, a caller (who may continue the page: a principal, a digest of
    /// credentials, or empty for anyone holding the token) and the call's arguments, with an
    /// empty scope and snapshot and the default field names `continuation` and `limit`.
    pub fn new(tool: &'a str, session: &'a str, request: &'a Value) -> Self {
        Binding {
            tool,
            session,
            request,
            scope: "",
            snapshot: "",
            dialect: Dialect::Envelope,
            continuation_field: DEFAULT_CONTINUATION_FIELD,
            limit_field: DEFAULT_LIMIT_FIELD,
        }
    }

    /// What the request reaches, such as a search root and its filters.
    #[must_use]
    pub fn with_scope(mut self, scope: &'a str) -> Self {
        self.scope = scope;
        self
    }

    /// A revision or digest of the data paged; when it moves, tokens become stale.
    #[must_use]
    pub fn with_snapshot(mut self, snapshot: &'a str) -> Self {
        self.snapshot = snapshot;
        self
    }

    /// The dialect the pages are answered in: a token is refused in any other, so that a page
    /// resumes in the wire it started in. The envelope's own binds nothing extra, so its tokens
    /// are what they were before dialects existed.
    #[must_use]
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// The name of the argument that carries the token, when it is not `continuation`.
    #[must_use]
    pub fn with_continuation_field(mut self, name: &'a str) -> Self {
        self.continuation_field = name;
        self
    }

    /// The name of the argument that carries the page size, when it is not `limit`.
    #[must_use]
    pub fn with_limit_field(mut self, name: &'a str) -> Self {
        self.limit_field = name;
        self
    }

    /// The binding and snapshot tags of a token whose leading bytes are `head`, under `key`.
    pub(super) fn tags(
        &self,
        key: &ContinuationKey,
        head: &[u8],
    ) -> ([u8; TAG_LEN], [u8; TAG_LEN]) {
        let request = self.canonical_request();
        let inputs = self.tag_inputs(head, &request);
        (
            key.tag(BIND_LABEL, inputs.bound()),
            key.tag(SNAPSHOT_LABEL, inputs.snapshot()),
        )
    }

    /// Whether a token's binding and snapshot tags are this binding's, each compared in
    /// constant time, so that timing never tells how much of a tag was right.
    pub(super) fn check_tags(
        &self,
        key: &ContinuationKey,
        head: &[u8],
        tags: &[u8],
    ) -> (bool, bool) {
        let request = self.canonical_request();
        let inputs = self.tag_inputs(head, &request);
        let (bound_tag, snapshot_tag) = tags.split_at(TAG_LEN.min(tags.len()));
        (
            key.verify(BIND_LABEL, inputs.bound(), bound_tag),
            key.verify(SNAPSHOT_LABEL, inputs.snapshot(), snapshot_tag),
        )
    }

    /// The dialect, among the others, whose binding the token's binding tag is: what a token
    /// refused as another call's was really issued in, if that is all that differs.
    pub(super) fn issued_in(
        &self,
        key: &ContinuationKey,
        head: &[u8],
        tags: &[u8],
    ) -> Option<Dialect> {
        Dialect::ALL
            .into_iter()
            .filter(|dialect| *dialect != self.dialect)
            .find(|dialect| self.with_dialect(*dialect).check_tags(key, head, tags).0)
    }

    /// What the two tags are computed over: the token's leading bytes and the binding (with
    /// the dialect unless it is the envelope's), and for the snapshot tag the snapshot too.
    /// Both are prefixes of one array: the binding's parts, then the snapshot.
    fn tag_inputs<'b>(&'b self, head: &'b [u8], request: &'b str) -> TagInputs<'b> {
        let mut parts: [&[u8]; 7] = [
            head,
            self.tool.as_bytes(),
            self.session.as_bytes(),
            request.as_bytes(),
            self.scope.as_bytes(),
            &[],
            &[],
        ];
        let mut bound = 5;
        if self.dialect != Dialect::Envelope {
            parts[bound] = self.dialect.name().as_bytes();
            bound += 1;
        }
        parts[bound] = self.snapshot.as_bytes();
        TagInputs { parts, bound }
    }

    /// The request as it is digested: without the fields that may change between pages.
    fn canonical_request(&self) -> String {
        let Value::Object(map) = self.request else {
            return canonical_json(self.request);
        };
        let mut map = map.clone();
        map.remove(self.continuation_field);
        map.remove(self.limit_field);
        for field in LEGACY_START_FIELDS {
            map.remove(field);
        }
        canonical_json(&Value::Object(map))
    }
}

/// The parts a token's tags are computed over, without allocating: the binding's first
/// `bound` parts, then the snapshot.
struct TagInputs<'b> {
    parts: [&'b [u8]; 7],
    bound: usize,
}

impl TagInputs<'_> {
    /// What the binding tag is computed over.
    fn bound(&self) -> &[&[u8]] {
        &self.parts[..self.bound]
    }

    /// What the snapshot tag is computed over: the binding's parts and the snapshot.
    fn snapshot(&self) -> &[&[u8]] {
        &self.parts[..=self.bound]
    }
}

/// A digest of the data a tool pages over. When it moves, the tokens of earlier pages are
/// refused as `STALE_CONTINUATION` instead of resuming at a position that now means other rows.
///
/// A revision string is one (`impl Snapshot for str`); a tool over files digests what it read
/// of them (paths, sizes, modification times).
pub trait Snapshot {
    /// The digest: any text that changes when the data does.
    fn digest(&self) -> String;
}

impl Snapshot for str {
    fn digest(&self) -> String {
        self.to_owned()
    }
}

impl Snapshot for String {
    fn digest(&self) -> String {
        self.clone()
    }
}

impl<T: Snapshot + ?Sized> Snapshot for &T {
    fn digest(&self) -> String {
        (**self).digest()
    }
}
