//! Collects every error of one macro invocation, so that they are all reported
//! together (`serde_derive`'s `Ctxt`).

use std::fmt::Display;

use quote::ToTokens;

/// The errors found so far.
#[derive(Default)]
pub struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// Records an error pointing at `tokens`.
    pub fn error_spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error at `span`.
    pub fn error_at(&mut self, span: proc_macro2::Span, message: impl Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// Records a parse error.
    pub fn syn_error(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// `Ok` when nothing was recorded, otherwise every error combined.
    pub fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

/// The closest of `candidates` to `unknown`, if one is close enough to suggest.
pub fn did_you_mean<'a>(
    unknown: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|candidate| (strsim::jaro_winkler(unknown, candidate), candidate))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

/// `message`, followed by `; did you mean `x`?` when a candidate is close.
pub fn with_suggestion<'a>(
    message: String,
    unknown: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    match did_you_mean(unknown, candidates) {
        Some(candidate) => format!("{message}; did you mean `{candidate}`?"),
        None => message,
    }
}

/// Consumes whatever follows an unusable key (`= value` or `(...)`), so that
/// parsing can go on and report the other keys' errors too.
pub fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}
