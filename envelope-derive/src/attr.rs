//! Parsing of `#[tool(...)]` arguments. Nothing here emits code.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::{LitBool, LitInt, LitStr, Path};

/// Tier names `#[tool(tier = …)]` accepts, with the `Tier` variant each one names. Mirrors
/// `envelope_core::Tier::ALL`; a test in `envelope-tests` keeps the two equal.
pub(crate) const TIERS: [(&str, &str); 3] = [
    ("lite", "Lite"),
    ("standard", "Standard"),
    ("heavy", "Heavy"),
];

const KEYS: &str = "`tier`, `name`, `title`, `read_only`, `idempotent`, `destructive`, \
                    `open_world`, `layer`, `module`, `budget`, `strict_args`, `scopes`, \
                    `blocking` or `crate`";

/// A value together with the span of the key that set it, for errors that point at it.
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// The parsed arguments of one `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolArgs {
    pub(crate) tier: Option<Spanned<&'static str>>,
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) title: Option<Spanned<String>>,
    pub(crate) read_only: Option<Spanned<bool>>,
    pub(crate) idempotent: Option<Spanned<bool>>,
    pub(crate) destructive: Option<Spanned<bool>>,
    pub(crate) open_world: Option<Spanned<bool>>,
    pub(crate) layer: Option<Spanned<String>>,
    pub(crate) module: Option<Spanned<String>>,
    pub(crate) budget: Option<Spanned<usize>>,
    pub(crate) strict_args: Option<Spanned<bool>>,
    /// The scopes as written, each checked by `valid`.
    pub(crate) scopes: Option<Spanned<Vec<LitStr>>>,
    pub(crate) blocking: Option<Spanned<bool>>,
    pub(crate) krate: Option<Spanned<Path>>,
}

/// Stores `value` in `slot`, or reports the key as a duplicate. One helper for every key, so
/// no key can check the wrong field.
fn set<T>(slot: &mut Option<Spanned<T>>, meta: &ParseNestedMeta<'_>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        return Err(meta.error(format!("duplicate `{key}` argument")));
    }
    *slot = Some(Spanned {
        value,
        span: meta.path_span(),
    });
    Ok(())
}

trait PathSpan {
    fn path_span(&self) -> Span;
}

impl PathSpan for ParseNestedMeta<'_> {
    fn path_span(&self) -> Span {
        self.path
            .get_ident()
            .map(|ident| ident.span())
            .unwrap_or_else(Span::call_site)
    }
}

/// A flag: bare (`read_only`) means true; `read_only = false` is allowed too.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        Ok(meta.value()?.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

fn string(meta: &ParseNestedMeta<'_>) -> syn::Result<String> {
    Ok(meta.value()?.parse::<LitStr>()?.value())
}

/// `scopes = ["a", "b"]`: an array of string literals, nothing else.
fn scope_list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let array: syn::ExprArray = meta.value()?.parse()?;
    array
        .elems
        .iter()
        .map(|elem| match elem {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(lit),
                ..
            }) => Ok(lit.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                "a scope is a string literal: `scopes = [\"workspace:read\"]`",
            )),
        })
        .collect()
}

/// Whether `scope` is an OAuth scope-token (RFC 6749 §3.3): one or more printable ASCII
/// characters other than space, `"` and `\`.
pub(crate) fn valid_scope(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

/// Whether `name` fits MCP's tool-name rules: 1–128 of `A–Z a–z 0–9 _ - .`.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl ToolArgs {
    /// Parses the attribute's tokens. Unknown keys fail at once; independent problems found
    /// afterwards are combined so one build shows them all.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<ToolArgs> {
        let mut args = ToolArgs::default();
        let parser = syn::meta::parser(|meta| args.parse_one(meta));
        syn::parse::Parser::parse2(parser, tokens)?;
        Ok(args)
    }

    fn parse_one(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let path = &meta.path;
        if path.is_ident("tier") {
            let value = meta.value()?;
            let ident: syn::Ident = value.parse()?;
            let name = ident.to_string();
            let Some((tier, _)) = TIERS.iter().find(|(tier, _)| *tier == name) else {
                return Err(syn::Error::new(
                    ident.span(),
                    format!("unknown tier `{name}`; expected `lite`, `standard` or `heavy`"),
                ));
            };
            set(&mut self.tier, &meta, *tier)
        } else if path.is_ident("name") {
            let lit: LitStr = meta.value()?.parse()?;
            if !valid_tool_name(&lit.value()) {
                return Err(syn::Error::new(
                    lit.span(),
                    "tool names must be 1 to 128 characters of `A-Z`, `a-z`, `0-9`, `_`, `-` or `.`",
                ));
            }
            set(&mut self.name, &meta, lit.value())
        } else if path.is_ident("title") {
            let value = string(&meta)?;
            set(&mut self.title, &meta, value)
        } else if path.is_ident("read_only") {
            let value = flag(&meta)?;
            set(&mut self.read_only, &meta, value)
        } else if path.is_ident("idempotent") {
            let value = flag(&meta)?;
            set(&mut self.idempotent, &meta, value)
        } else if path.is_ident("destructive") {
            let value = flag(&meta)?;
            set(&mut self.destructive, &meta, value)
        } else if path.is_ident("open_world") {
            let value = flag(&meta)?;
            set(&mut self.open_world, &meta, value)
        } else if path.is_ident("layer") {
            let value = string(&meta)?;
            set(&mut self.layer, &meta, value)
        } else if path.is_ident("module") {
            let value = string(&meta)?;
            set(&mut self.module, &meta, value)
        } else if path.is_ident("budget") {
            let lit: LitInt = meta.value()?.parse()?;
            let value = lit.base10_parse::<usize>()?;
            if value == 0 {
                return Err(syn::Error::new(
                    lit.span(),
                    "`budget` must be at least 1 character",
                ));
            }
            set(&mut self.budget, &meta, value)
        } else if path.is_ident("strict_args") {
            let value = flag(&meta)?;
            set(&mut self.strict_args, &meta, value)
        } else if path.is_ident("scopes") {
            let value = scope_list(&meta)?;
            set(&mut self.scopes, &meta, value)
        } else if path.is_ident("blocking") {
            let value = flag(&meta)?;
            set(&mut self.blocking, &meta, value)
        } else if path.is_ident("crate") {
            let value: Path = meta.value()?.parse()?;
            set(&mut self.krate, &meta, value)
        } else {
            Err(meta.error(format!("unknown `tool` argument; expected {KEYS}")))
        }
    }

    /// The declared `idempotent`; a `read_only` tool is idempotent without saying so.
    pub(crate) fn idempotent(&self) -> Option<bool> {
        self.declared(&self.idempotent)
            .or_else(|| self.flag(&self.read_only).then_some(true))
    }

    /// What the author wrote for a flag, `None` when the key is absent.
    pub(crate) fn declared(&self, slot: &Option<Spanned<bool>>) -> Option<bool> {
        slot.as_ref().map(|s| s.value)
    }

    pub(crate) fn flag(&self, slot: &Option<Spanned<bool>>) -> bool {
        slot.as_ref().is_some_and(|s| s.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse(tokens: TokenStream) -> syn::Result<ToolArgs> {
        ToolArgs::parse(tokens)
    }

    #[test]
    fn parses_every_key() {
        let args = parse(quote!(
            tier = heavy,
            name = "search.text",
            title = "Search",
            read_only,
            open_world,
            layer = "docs",
            module = "search",
            budget = 8000,
            strict_args,
            scopes = ["workspace:read", "workspace:heavy"],
            blocking,
            crate = my::core
        ))
        .expect("valid");
        assert!(args.blocking.is_some());
        assert_eq!(args.tier.map(|t| t.value), Some("heavy"));
        assert_eq!(args.name.map(|n| n.value).as_deref(), Some("search.text"));
        assert_eq!(args.budget.map(|b| b.value), Some(8000));
        assert!(args.read_only.is_some() && args.strict_args.is_some());
        assert!(args.krate.is_some());
        let scopes: Vec<String> = args
            .scopes
            .map(|s| s.value.iter().map(LitStr::value).collect())
            .unwrap_or_default();
        assert_eq!(scopes, ["workspace:read", "workspace:heavy"]);
    }

    #[test]
    fn scopes_are_rfc_6749_scope_tokens() {
        for scope in ["workspace:read", "a", "https://api.example/read", "!#[]~"] {
            assert!(valid_scope(scope), "{scope}");
        }
        for scope in ["", "two words", "quo\"te", "back\\slash", "tab\t", "é"] {
            assert!(!valid_scope(scope), "{scope}");
        }
    }

    #[test]
    fn read_only_implies_idempotent() {
        let args = parse(quote!(tier = lite, read_only)).expect("valid");
        assert_eq!(args.idempotent(), Some(true));
        let args = parse(quote!(tier = lite)).expect("valid");
        assert_eq!(args.idempotent(), None);
        let args = parse(quote!(tier = lite, idempotent = false)).expect("valid");
        assert_eq!(args.idempotent(), Some(false));
    }

    #[test]
    fn undeclared_hints_stay_undeclared() {
        let args = parse(quote!(tier = lite, destructive = false)).expect("valid");
        assert_eq!(args.declared(&args.destructive), Some(false));
        assert_eq!(args.declared(&args.open_world), None);
        assert_eq!(args.declared(&args.read_only), None);
    }

    #[test]
    fn rejects_problems() {
        for (tokens, expected) in [
            (quote!(tier = huge), "unknown tier `huge`"),
            (quote!(tier = lite, tier = heavy), "duplicate `tier`"),
            (
                quote!(tier = lite, colour = "red"),
                "unknown `tool` argument",
            ),
            (
                quote!(tier = lite, name = "has space"),
                "tool names must be",
            ),
            (quote!(tier = lite, budget = 0), "at least 1"),
            (
                quote!(tier = lite, scopes = "read"),
                "expected square brackets",
            ),
            (
                quote!(tier = lite, scopes = [read]),
                "a scope is a string literal",
            ),
        ] {
            let error = parse(tokens)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn tool_names_follow_mcp_rules() {
        assert!(valid_tool_name("a"));
        assert!(valid_tool_name("search_text-v2.beta"));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("has space"));
        assert!(!valid_tool_name(&"x".repeat(129)));
        assert!(valid_tool_name(&"x".repeat(128)));
    }
}
