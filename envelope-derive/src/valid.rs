//! Every check `#[tool]` makes, in one place. Each pushes what it finds into the expansion's
//! [`Ctxt`], so one build reports every mistake, each once, where it was made.
//!
//! Parsing the arguments (attr.rs) rejects what cannot be read at all (an unknown key, a
//! duplicate, a malformed value); everything that needs the whole input is checked here.

use proc_macro2::Span;
use syn::{FnArg, ItemFn, ReturnType, Type};

use crate::attr::{ToolArgs, valid_scope, valid_tool_name};
use crate::ctxt::Ctxt;

/// What the function's parameters are, in order.
pub(crate) enum Param {
    Context,
    Args(Box<Type>),
}

/// What the expansion needs of a function that passed every check.
pub(crate) struct Signature {
    pub(crate) params: Vec<Param>,
    pub(crate) output: Box<Type>,
    pub(crate) description: String,
    pub(crate) name: String,
}

/// Checks `func` and its `#[tool(...)]` arguments; the signature when nothing is wrong.
pub(crate) fn check(cx: &mut Ctxt, args: &ToolArgs, func: &ItemFn) -> Option<Signature> {
    check_keys(cx, args);
    check_scopes(cx, args);
    check_blocking(cx, args, func);
    let description = description(func);
    if description.is_none() {
        cx.error_spanned_by(
            &func.sig.ident,
            "`#[tool]` functions need a doc comment; it becomes the tool's description",
        );
    }
    let name = match &args.name {
        Some(name) => name.value.clone(),
        None => func
            .sig
            .ident
            .to_string()
            .trim_start_matches("r#")
            .to_owned(),
    };
    if args.name.is_none() && !valid_tool_name(&name) {
        cx.error_spanned_by(
            &func.sig.ident,
            "tool names must be 1 to 128 characters of `A-Z`, `a-z`, `0-9`, `_`, `-` or `.`; \
             set `name = \"...\"`",
        );
    }
    let params = parameters(cx, func);
    let output = output(cx, func);
    Some(Signature {
        params,
        output: output?,
        description: description?,
        name,
    })
}

/// Checks that need every key parsed: a missing tier, contradicting flags.
fn check_keys(cx: &mut Ctxt, args: &ToolArgs) {
    if args.tier.is_none() {
        cx.error_at(
            Span::call_site(),
            "missing `tier` argument; expected `tier = lite`, `tier = standard` or `tier = heavy`",
        );
    }
    if let (Some(read_only), Some(destructive)) = (&args.read_only, &args.destructive)
        && read_only.value
        && destructive.value
    {
        cx.error_at(
            destructive.span,
            "a `read_only` tool cannot be `destructive`",
        );
    }
    if let (Some(read_only), Some(idempotent)) = (&args.read_only, &args.idempotent)
        && read_only.value
        && !idempotent.value
    {
        cx.error_at(
            idempotent.span,
            "a `read_only` tool is always idempotent; remove `idempotent = false`",
        );
    }
}

/// Each scope a scope-token, none twice, and at least one when the key is there.
fn check_scopes(cx: &mut Ctxt, args: &ToolArgs) {
    let Some(scopes) = &args.scopes else {
        return;
    };
    if scopes.value.is_empty() {
        cx.error_at(
            scopes.span,
            "`scopes = []` requires nothing; list the scopes a caller needs, or leave `scopes` out",
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for scope in &scopes.value {
        let value = scope.value();
        if !valid_scope(&value) {
            cx.error_spanned_by(
                scope,
                format!(
                    "`{}` is no OAuth scope: a scope is one or more printable ASCII characters \
                     other than space, `\"` and `\\`",
                    value.escape_debug()
                ),
            );
        } else if !seen.insert(value.clone()) {
            cx.error_spanned_by(scope, format!("scope `{value}` is listed twice"));
        }
    }
}

/// `blocking` runs a sync body: an `async` one has nothing to block on.
fn check_blocking(cx: &mut Ctxt, args: &ToolArgs, func: &ItemFn) {
    if let (Some(blocking), Some(asyncness)) = (&args.blocking, &func.sig.asyncness)
        && blocking.value
    {
        cx.error_spanned_by(
            asyncness,
            "`blocking` runs a sync body on the blocking pool; drop `async`, or drop `blocking` \
             and await the blocking work yourself",
        );
    }
}

/// The doc comment, lines trimmed of the one leading space rustdoc adds.
fn description(func: &ItemFn) -> Option<String> {
    let lines: Vec<String> = func
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) => Some(text.value()),
            _ => None,
        })
        .collect();
    let text = lines
        .iter()
        .map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// Whether `ty` names the context (by its last path segment, `ToolContext`: the macro sees
/// tokens, not types, so a renamed import is not recognised).
fn names_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(path)
        if path.path.segments.last().is_some_and(|segment| segment.ident == "ToolContext"))
}

fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Reference(reference)
        if reference.mutability.is_none() && names_context(&reference.elem))
}

/// The context taken some other way than by shared reference: by value or `&mut`.
fn is_misplaced_context(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => names_context(&reference.elem),
        other => names_context(other),
    }
}

/// Whether `ty` is, by its spelling, a value that serializes as no JSON object: a number, a
/// string, a boolean, a sequence, a tuple, an `Option`. The macro sees tokens, not types, so a
/// named type that serializes as a non-object (a newtype around `u32`, say) is not caught here;
/// its input schema then says so.
fn is_plain_value(ty: &Type) -> bool {
    const PLAIN: &[&str] = &[
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
        "f32", "f64", "bool", "char", "str", "String", "Vec", "VecDeque", "Option", "HashSet",
        "BTreeSet",
    ];
    match ty {
        Type::Path(path) => {
            path.qself.is_none()
                && path
                    .path
                    .segments
                    .last()
                    .is_some_and(|segment| PLAIN.iter().any(|plain| segment.ident == plain))
        }
        Type::Reference(reference) => is_plain_value(&reference.elem),
        Type::Tuple(_) | Type::Array(_) | Type::Slice(_) => true,
        _ => false,
    }
}

/// The parameters: at most one `&ToolContext` and one arguments type, in either order.
fn parameters(cx: &mut Ctxt, func: &ItemFn) -> Vec<Param> {
    let sig = &func.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &sig.generics,
            "`#[tool]` functions cannot be generic: a tool has one argument type and one schema",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "`#[tool]` functions cannot be variadic");
    }
    let mut params = Vec::new();
    let mut seen_context = false;
    let mut seen_args = false;
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                cx.error_spanned_by(receiver, "`#[tool]` goes on a free function, not a method");
            }
            FnArg::Typed(typed) if is_context(&typed.ty) => {
                if seen_context {
                    cx.error_spanned_by(&typed.ty, "duplicate `&ToolContext` parameter");
                }
                seen_context = true;
                params.push(Param::Context);
            }
            FnArg::Typed(typed) if is_misplaced_context(&typed.ty) => {
                cx.error_spanned_by(
                    &typed.ty,
                    "take the context by shared reference: `ctx: &ToolContext`",
                );
            }
            FnArg::Typed(typed) if matches!(*typed.ty, Type::Reference(_)) => {
                cx.error_spanned_by(
                    &typed.ty,
                    "a tool's arguments are owned (`args: Args`); the one borrowed parameter is \
                     the context, which must be spelled `&ToolContext` (the macro reads tokens, \
                     so a renamed import is not recognised)",
                );
            }
            FnArg::Typed(typed) if is_plain_value(&typed.ty) => {
                cx.error_spanned_by(
                    &typed.ty,
                    "a tool's arguments arrive as a JSON object: gather them in a struct with \
                     named fields (`struct Args { n: u32 }`) deriving `Deserialize` and \
                     `JsonSchema`",
                );
            }
            FnArg::Typed(typed) => {
                if seen_args {
                    cx.error_spanned_by(
                        &typed.ty,
                        "a tool takes one arguments type besides `&ToolContext`; gather the \
                         arguments in one struct",
                    );
                }
                seen_args = true;
                params.push(Param::Args(typed.ty.clone()));
            }
        }
    }
    params
}

/// The return type, which must be there (a `Result`; the compiler checks the rest).
fn output(cx: &mut Ctxt, func: &ItemFn) -> Option<Box<Type>> {
    match &func.sig.output {
        ReturnType::Type(_, ty) => Some(ty.clone()),
        ReturnType::Default => {
            cx.error_spanned_by(
                &func.sig.ident,
                "`#[tool]` functions must return `Result<T, E>`, found `()`",
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    #[test]
    fn key_checks_report_every_problem_at_once() {
        for (tokens, expected) in [
            (quote!(read_only), vec!["missing `tier`"]),
            (
                quote!(tier = lite, read_only, destructive),
                vec!["cannot be `destructive`"],
            ),
            (
                quote!(read_only, idempotent = false),
                vec!["missing `tier`", "always idempotent"],
            ),
        ] {
            let args = ToolArgs::parse(tokens).expect("readable");
            let mut cx = Ctxt::new();
            check_keys(&mut cx, &args);
            let errors: Vec<String> = cx
                .check()
                .expect_err("a problem")
                .into_iter()
                .map(|error| error.to_string())
                .collect();
            assert_eq!(errors.len(), expected.len(), "{errors:?}");
            for (error, expected) in errors.iter().zip(expected) {
                assert!(error.contains(expected), "{error}");
            }
        }
    }
}
