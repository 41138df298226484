//! One error collector per expansion, as serde_derive's `Ctxt`: every check pushes what it
//! finds, and the expansion reports them all at once, so one build shows every mistake.

use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// The errors of one `#[tool]` expansion.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Option<syn::Error>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Records `error`.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(all) => all.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// Records `message` at `tokens`.
    pub(crate) fn error_spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records `message` at `span`.
    pub(crate) fn error_at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Every error recorded, combined; `Ok` when there was none.
    pub(crate) fn check(self) -> syn::Result<()> {
        self.errors.map_or(Ok(()), Err)
    }
}
