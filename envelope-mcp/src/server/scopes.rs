//! Who may call what: the scope gate, which refuses a call whose authenticated caller lacks a
//! scope the tool declares before the tool runs, whatever the transport; and what a caller is
//! shown when its listing holds only the tools it may call. [`may_call`] is the one judge of
//! both.

use envelope_core::{Caller, ToolSpec};

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
    caller.is_none_or(|caller| caller.may(&spec.scopes))
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

/// `prose` as a request `shown` only some tools reads it: each sentence that names a tool of
/// `tools` it is not shown left out whole (a sentence without the name would be another
/// sentence, and one with it tells of a tool the listing hides). A tool is named by its name
/// standing alone, backticked or not; a sentence ends at `.`, `!` or `?` before white space,
/// or with its line. [`Shown::All`] reads `prose` as it is.
pub(crate) fn prose_shown<'t>(
    prose: &str,
    shown: Shown<'_>,
    tools: impl IntoIterator<Item = &'t ToolSpec>,
) -> String {
    let hidden: Vec<&str> = tools
        .into_iter()
        .filter(|spec| !shown.includes(spec))
        .map(|spec| &*spec.name)
        .collect();
    if hidden.is_empty() {
        return prose.to_owned();
    }
    let mut kept = String::with_capacity(prose.len());
    for line in prose.split_inclusive('\n') {
        let sentences = sentences(line);
        let left: Vec<&str> = sentences
            .iter()
            .copied()
            .filter(|sentence| !names_any(sentence, &hidden))
            .collect();
        if left.len() == sentences.len() {
            kept.push_str(line);
            continue;
        }
        // A sentence left out leaves no white space behind it, and a line left with nothing
        // goes whole, its line break with it.
        let joined = left.concat();
        let joined = joined.trim_end();
        if joined.is_empty() {
            continue;
        }
        kept.push_str(joined);
        if line.ends_with('\n') {
            kept.push('\n');
        }
    }
    kept
}

/// `line` cut after each `.`, `!` or `?` that white space follows, the white space kept with
/// the sentence before it.
fn sentences(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut start = 0;
    let bytes = line.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let ends = matches!(bytes[at], b'.' | b'!' | b'?')
            && bytes.get(at + 1).is_some_and(u8::is_ascii_whitespace);
        if ends {
            let mut end = at + 1;
            while end < bytes.len() && bytes[end] == b' ' {
                end += 1;
            }
            found.push(&line[start..end]);
            start = end;
            at = end;
        } else {
            at += 1;
        }
    }
    if start < line.len() {
        found.push(&line[start..]);
    }
    found
}

/// Whether `sentence` names one of `names` as a word of its own: a run of the characters a
/// tool name is made of, its trailing `.` and `-` aside.
fn names_any(sentence: &str, names: &[&str]) -> bool {
    sentence
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|word| word.trim_end_matches(['.', '-']))
        .any(|word| names.contains(&word))
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope_core::{Principal, Scopes, Tier};

    fn spec(scopes: &'static [&'static str]) -> ToolSpec {
        named("erase", scopes)
    }

    fn named(name: &'static str, scopes: &'static [&'static str]) -> ToolSpec {
        let mut spec = ToolSpec::new(name, "Erase every note.", Tier::Lite);
        spec.destructive = Some(true);
        spec.scopes = scopes.iter().map(|scope| (*scope).into()).collect();
        spec
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

    #[test]
    fn prose_leaves_out_each_sentence_naming_a_hidden_tool() {
        let reader = caller("notes:read");
        let tools = [
            named("read_note", &["notes:read"]),
            named("erase", &["notes:write"]),
            named("erase.all", &["notes:write"]),
        ];
        let prose = "Notes, one per file. Read with `read_note`. Wipe them with erase, or \
                     everything with `erase.all`!\n- `erase`: gone for good.\n- `read_note`: \
                     one note.\nErased notes stay erased (see erase_log).";
        let shown = prose_shown(prose, Shown::Callable(Some(&reader)), &tools);
        assert_eq!(
            shown,
            "Notes, one per file. Read with `read_note`.\n- `read_note`: one note.\n\
             Erased notes stay erased (see erase_log)."
        );
        // Everything shown: the prose as written.
        assert_eq!(prose_shown(prose, Shown::All, &tools), prose);
        let writer = caller("notes:read notes:write");
        assert_eq!(
            prose_shown(prose, Shown::Callable(Some(&writer)), &tools),
            prose
        );
        // The tool's name at the end of a sentence, its full stop after it.
        assert_eq!(
            prose_shown(
                "Use read_note. Or erase.",
                Shown::Callable(Some(&reader)),
                &tools
            ),
            "Use read_note."
        );
    }
}
