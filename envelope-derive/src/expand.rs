//! Emission of the tool descriptor. Every path in emitted code is absolute, and every local the
//! macro introduces starts with `__envelope_`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{Item, ItemFn};

use crate::attr::{Spanned, TIERS, ToolArgs};
use crate::ctxt::Ctxt;
use crate::valid::{self, Param, Signature};

/// Entry point: on any failure the item is emitted unchanged beside the errors, so callers see
/// the real problem instead of a wave of "cannot find function".
pub(crate) fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Fn(func)) => func,
        Ok(other) => {
            let error = syn::Error::new(
                item_keyword_span(&other),
                "`#[tool]` can only be applied to a function",
            );
            return item.into_iter_with(error);
        }
        Err(error) => {
            let error = error.into_compile_error();
            return quote!(#item #error);
        }
    };
    match expand(args.clone(), &func) {
        Ok(tokens) => tokens,
        Err(error) => {
            let error = error.into_compile_error();
            let fallback = fallback(ToolArgs::parse(args).ok().as_ref(), &func);
            quote!(#func #fallback #error)
        }
    }
}

/// What other code relies on, emitted even when the tool is wrong: the descriptor and its
/// trait impls, with `unreachable!()` bodies (they never run: the build fails). A mistake then
/// shows as one error at its cause, not again at every `toolset![…]` or `NextAction::call`
/// naming the tool. Nothing is emitted for a method: no item can sit beside it in an `impl`.
fn fallback(args: Option<&ToolArgs>, func: &ItemFn) -> TokenStream {
    if func.sig.receiver().is_some() {
        return TokenStream::new();
    }
    let krate = match args.and_then(|args| args.krate.as_ref()) {
        Some(Spanned { value, .. }) => value.to_token_stream(),
        None => quote!(::envelope_core),
    };
    let ident = &func.sig.ident;
    let vis = &func.vis;
    let name = ident.to_string();
    let args_ty = match guess_args_type(func) {
        Some(ty) => quote!(#ty),
        None => quote!(()),
    };
    quote! {
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #ident {}

        impl #krate::TypedTool for #ident {
            const NAME: &'static str = #name;
            type Args = #args_ty;
        }

        impl #krate::Tool for #ident {
            fn spec(&self) -> &#krate::ToolSpec {
                ::core::unreachable!()
            }

            fn input_schema(&self) -> #krate::__private::Schema {
                ::core::unreachable!()
            }

            fn call(
                &self,
                _: #krate::__private::Value,
                _: #krate::ToolContext,
            ) -> #krate::__private::BoxFuture<'static, #krate::__private::ToolOutput> {
                ::core::unreachable!()
            }
        }
    }
}

/// The arguments type of a signature that failed a check, as far as it can be read: the first
/// parameter that is neither borrowed nor named `ToolContext`. `None` for a generic function
/// (its parameters may name type parameters the descriptor does not have).
fn guess_args_type(func: &ItemFn) -> Option<&syn::Type> {
    if !func.sig.generics.params.is_empty() {
        return None;
    }
    let ty = func.sig.inputs.iter().find_map(|input| {
        let syn::FnArg::Typed(typed) = input else {
            return None;
        };
        let is_context = match &*typed.ty {
            syn::Type::Reference(_) => true,
            syn::Type::Path(path) => path
                .path
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "ToolContext"),
            _ => false,
        };
        (!is_context).then_some(&*typed.ty)
    })?;
    // A type the descriptor cannot name on its own (`impl Trait`, a lifetime) would be a
    // second error: then `()`.
    let unnameable =
        matches!(ty, syn::Type::ImplTrait(_)) || ty.to_token_stream().to_string().contains('\'');
    (!unnameable).then_some(ty)
}

trait WithError {
    fn into_iter_with(self, error: syn::Error) -> TokenStream;
}

impl WithError for TokenStream {
    fn into_iter_with(self, error: syn::Error) -> TokenStream {
        let mut tokens = self;
        tokens.extend(error.into_compile_error());
        tokens
    }
}

/// The span of the item's keyword (`struct`, `enum`, …), where the misuse is.
fn item_keyword_span(item: &Item) -> Span {
    match item {
        Item::Struct(item) => item.struct_token.span,
        Item::Enum(item) => item.enum_token.span,
        Item::Impl(item) => item.impl_token.span,
        Item::Trait(item) => item.trait_token.span,
        Item::Mod(item) => item.mod_token.span,
        Item::Const(item) => item.const_token.span,
        Item::Static(item) => item.static_token.span,
        Item::Type(item) => item.type_token.span,
        Item::Use(item) => item.use_token.span,
        other => other.span(),
    }
}

fn expand(args: TokenStream, func: &ItemFn) -> syn::Result<TokenStream> {
    // An argument list that cannot be read at all stops here; every other check runs and
    // reports into one collector, so one build shows them all.
    let args = ToolArgs::parse(args)?;
    let mut cx = Ctxt::new();
    let signature = valid::check(&mut cx, &args, func);
    cx.check()?;
    let Some(Signature {
        params,
        output,
        description,
        name,
    }) = signature
    else {
        return Err(syn::Error::new(Span::call_site(), "invalid `#[tool]`"));
    };

    let krate = match &args.krate {
        Some(Spanned { value, .. }) => value.to_token_stream(),
        None => quote!(::envelope_core),
    };
    let ident = &func.sig.ident;
    let vis = &func.vis;
    let tier = args
        .tier
        .as_ref()
        .and_then(|tier| TIERS.iter().find(|(name, _)| *name == tier.value))
        .map(|(_, variant)| format_ident!("{}", variant))
        .ok_or_else(|| syn::Error::new(Span::call_site(), "missing `tier` argument"))?;
    let optional = |value: &Option<Spanned<String>>| match value {
        Some(Spanned { value, .. }) => {
            quote!(::core::option::Option::Some(::std::borrow::Cow::Borrowed(#value)))
        }
        None => quote!(::core::option::Option::None),
    };
    let title = optional(&args.title);
    let layer = optional(&args.layer);
    let module = optional(&args.module);
    let budget = match &args.budget {
        Some(Spanned { value, .. }) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    };
    // A hint the author did not declare stays `None`: the listing leaves it out, and MCP's
    // defaults (destructive, open-world) then apply, never a safety the author did not claim.
    let hint = |value: Option<bool>| match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    };
    let read_only = hint(args.declared(&args.read_only));
    let idempotent = hint(args.idempotent());
    let destructive = hint(args.declared(&args.destructive));
    let open_world = hint(args.declared(&args.open_world));
    let strict_args = args.flag(&args.strict_args);
    let scopes = args.scopes.iter().flat_map(|scopes| &scopes.value);

    let args_ty = params.iter().find_map(|param| match param {
        Param::Args(ty) => Some(ty),
        Param::Context => None,
    });
    let typed_args = match args_ty {
        Some(ty) => quote!(#ty),
        None => quote!(()),
    };
    let blocking = args.blocking.as_ref().is_some_and(|flag| flag.value);
    let call_args = params.iter().map(|param| match param {
        // A blocking body runs on another thread, with a context of its own.
        Param::Context if blocking => quote!(&__envelope_blocking_ctx),
        Param::Context => quote!(&__envelope_ctx),
        Param::Args(_) => quote!(__envelope_args),
    });
    // The arguments type is named once, in a `const` of function pointers: a type lacking a
    // trait is reported there, once, and not at every use.
    let args_fns = match args_ty {
        // Same span as the arguments type, so rustc points there when it lacks a trait.
        Some(ty) => quote_spanned! {ty.span()=>
            const __ENVELOPE_ARGS: #krate::__private::ArgsFns<#ty> =
                #krate::__private::args_fns::<#ty>();
        },
        None => quote! {
            const __ENVELOPE_ARGS: #krate::__private::ArgsFns<()> =
                #krate::__private::no_args_fns();
        },
    };
    let invoke = if blocking {
        quote!({
            let __envelope_blocking_ctx = ::core::clone::Clone::clone(&__envelope_ctx);
            #krate::__private::catch_unwind_blocking(move || #ident(#(#call_args),*)).await
        })
    } else if func.sig.asyncness.is_some() {
        quote!(#krate::__private::catch_unwind(async { #ident(#(#call_args),*).await }).await)
    } else {
        quote!(#krate::__private::catch_unwind_sync(|| #ident(#(#call_args),*)))
    };
    let output = &output;
    // The return type is named once, in this impl: one that is not a result, or whose payload
    // cannot be serialized, is one error, at the return type (same span). Everything else reads
    // it through the descriptor.
    let returns = quote_spanned! {output.span()=>
        impl #krate::__private::Returns for #ident {
            type Output = #output;
        }
    };
    let doc = format!("The `#[tool]` descriptor of [`{ident}()`]: tool `{name}`.");

    Ok(quote! {
        #func

        #[doc = #doc]
        // Named like the function, in the type namespace only, so `toolset![#ident]` finds it.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #ident {}

        impl #ident {
            const __ENVELOPE_SPEC: #krate::ToolSpec = #krate::ToolSpec {
                // The name is said once, by `TypedTool`: the spec and `toolset!` read it there.
                name: ::std::borrow::Cow::Borrowed(<#ident as #krate::TypedTool>::NAME),
                description: ::std::borrow::Cow::Borrowed(#description),
                title: #title,
                tier: #krate::__private::Tier::#tier,
                read_only: #read_only,
                idempotent: #idempotent,
                destructive: #destructive,
                open_world: #open_world,
                layer: #layer,
                module: #module,
                budget: #budget,
                strict_args: #strict_args,
                blocking: #blocking,
                scopes: ::std::borrow::Cow::Borrowed(&[#(::std::borrow::Cow::Borrowed(#scopes)),*]),
                controls: #krate::__private::ControlNames::STANDARD,
            };

            #args_fns
        }

        #returns

        impl #krate::TypedTool for #ident {
            const NAME: &'static str = #name;
            type Args = #typed_args;
        }

        impl #krate::Tool for #ident {
            fn spec(&self) -> &#krate::ToolSpec {
                &Self::__ENVELOPE_SPEC
            }

            fn input_schema(&self) -> #krate::__private::Schema {
                (#ident::__ENVELOPE_ARGS.input_schema)()
            }

            fn declared_arguments(&self) -> ::core::option::Option<::std::vec::Vec<::std::string::String>> {
                (#ident::__ENVELOPE_ARGS.declared)()
            }

            fn output_schema(&self) -> #krate::__private::Schema {
                // `data` is typed when the payload implements `JsonSchema`; see `DataSchema`.
                #[allow(unused_imports)] // Only one of the two traits applies to a payload.
                use #krate::__private::{TypedData as _, UntypedData as _};
                (&#krate::__private::DataSchema::<#ident>::NEW).output_schema()
            }

            fn call(
                &self,
                __envelope_arguments: #krate::__private::Value,
                mut __envelope_ctx: #krate::ToolContext,
            ) -> #krate::__private::BoxFuture<'static, #krate::__private::ToolOutput> {
                static __ENVELOPE_KEYS: #krate::__private::KeyCache = #krate::__private::KeyCache::new();
                ::std::boxed::Box::pin(async move {
                    let mut __envelope_call = #krate::__private::Invocation::start(&#ident::__ENVELOPE_SPEC);
                    let __envelope_args = match (#ident::__ENVELOPE_ARGS.decode)(
                        &mut __envelope_call,
                        &mut __envelope_ctx,
                        __envelope_arguments,
                        &__ENVELOPE_KEYS,
                    ) {
                        ::core::result::Result::Ok(__envelope_args) => __envelope_args,
                        ::core::result::Result::Err(__envelope_error) => {
                            return __envelope_call.fail(&__envelope_ctx, __envelope_error);
                        }
                    };
                    let __envelope_outcome = #invoke;
                    __envelope_call.finish_tool::<#ident>(&__envelope_ctx, __envelope_outcome)
                })
            }
        }
    })
}
