//! The `#[tool]` attribute macro. Use it as `envelope_core::tool`; the documentation lives there.
//!
//! Invariant: this crate depends on syn, quote and proc-macro2 only, and names `envelope_core`
//! items only in the code it emits.

mod attr;
mod expand;

use proc_macro::TokenStream;

/// Turns a documented function into an envelope tool. See `envelope_core::tool`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(args.into(), item.into()).into()
}
