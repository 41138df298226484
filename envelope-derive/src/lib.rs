//! The `#[tool]` attribute macro. Use it as `envelope_core::tool`; the documentation lives there.
//!
//! Invariant: this crate depends on syn, quote and proc-macro2 only, and names `envelope_core`
//! items only in the code it emits.
//!
//! Laid out like thiserror's: `attr` reads the `#[tool(...)]` arguments, `valid` makes every
//! check (each pushing into the expansion's one `ctxt::Ctxt`), and `expand` emits the
//! descriptor, or, on a mistake, the function unchanged beside the errors.

mod attr;
mod ctxt;
mod expand;
mod valid;

use proc_macro::TokenStream;

/// Turns a documented function into an envelope tool. See `envelope_core::tool`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(args.into(), item.into()).into()
}
