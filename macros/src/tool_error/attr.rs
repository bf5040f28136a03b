//! The settings of `#[tool_error(...)]`, parsed with `syn::meta`: unknown
//! keys are rejected with the nearest valid one suggested.

use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Ident, LitBool, LitStr};

use proc_macro2::Span;

use crate::ctxt::{Ctxt, skip_value, with_suggestion};
use crate::fmt::Template;
use crate::symbol::{
    ALTERNATIVES, CATEGORIES, FIELD_MARKERS, NOT_APPLIED, PARTIAL, REASON, RETRY_AFTER, RETRYABLE,
    TRANSPARENT, VIOLATIONS, case_keys,
};

/// What `#[tool_error(...)]` says of a variant or a struct.
#[derive(Default)]
pub(super) struct CaseAttrs {
    /// The category, and where it was named.
    pub(super) category: Option<(String, Span)>,
    pub(super) retryable: Option<bool>,
    pub(super) alternatives: Vec<Template>,
    pub(super) reason: Option<LitStr>,
    pub(super) not_applied: bool,
    pub(super) transparent: Option<Span>,
}

/// Which field holds what, as `#[tool_error(...)]` marks fields.
#[derive(Default)]
pub(super) struct FieldMarks {
    pub(super) retry_after: Option<usize>,
    pub(super) partial: Option<usize>,
    pub(super) violations: Option<usize>,
}

/// One setting of `#[tool_error(...)]` on a variant or struct.
pub(super) fn parse_case_key(
    cx: &mut Ctxt,
    case: &mut CaseAttrs,
    meta: &ParseNestedMeta,
) -> syn::Result<()> {
    let Some(key) = meta.path.get_ident().map(Ident::to_string) else {
        cx.error_spanned_by(
            &meta.path,
            "expected a `tool_error` setting such as `transient`",
        );
        return Ok(());
    };
    match key.as_str() {
        category if CATEGORIES.contains(&category) => {
            match &case.category {
                Some((first, _)) if first == category => {
                    cx.error_spanned_by(&meta.path, format!("`{category}` is given twice"));
                }
                Some((first, _)) => cx.error_spanned_by(
                    &meta.path,
                    format!("an error has one category: it is already `{first}`, it cannot also be `{category}`"),
                ),
                None => case.category = Some((category.to_owned(), meta.path.span())),
            }
            Ok(())
        }
        RETRYABLE => {
            let value = if meta.input.peek(syn::Token![=]) {
                let value = meta.value()?;
                let expr: syn::Expr = value.parse()?;
                match &expr {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Bool(LitBool { value, .. }),
                        ..
                    }) => *value,
                    other => {
                        cx.error_spanned_by(
                            other,
                            "expected `retryable = true` or `retryable = false`",
                        );
                        return Ok(());
                    }
                }
            } else {
                true
            };
            if case.retryable.replace(value).is_some() {
                cx.error_spanned_by(&meta.path, "`retryable` is given twice");
            }
            Ok(())
        }
        ALTERNATIVES => {
            let content;
            syn::parenthesized!(content in meta.input);
            let lits =
                content.parse_terminated(<LitStr as syn::parse::Parse>::parse, syn::Token![,])?;
            for lit in lits {
                match Template::parse(lit) {
                    Ok(template) => case.alternatives.push(template),
                    Err(error) => cx.syn_error(error),
                }
            }
            Ok(())
        }
        REASON => {
            let lit: LitStr = meta.value()?.parse()?;
            let reason = lit.value();
            // Written in the code's own form, so that searching the source
            // for a code finds it. (The runtime normalizes any reason where
            // it is set; this is only the spelling check.)
            if !is_upper_snake(&reason) {
                cx.error_spanned_by(
                    &lit,
                    "`reason` is a stable machine code in UPPER_SNAKE_CASE: capital letters, digits and single underscores, such as \"DB_TIMEOUT\"",
                );
            }
            if case.reason.replace(lit).is_some() {
                cx.error_spanned_by(&meta.path, "`reason` is given twice");
            }
            Ok(())
        }
        NOT_APPLIED => {
            case.not_applied = true;
            Ok(())
        }
        TRANSPARENT => {
            case.transparent = Some(meta.path.span());
            Ok(())
        }
        unknown => {
            let message = if FIELD_MARKERS.contains(&unknown) {
                format!(
                    "`{unknown}` marks a field: put `#[tool_error({unknown})]` on the field that holds it"
                )
            } else {
                with_suggestion(
                    format!("unknown `tool_error` setting `{unknown}`"),
                    unknown,
                    case_keys(),
                )
            };
            cx.error_spanned_by(&meta.path, message);
            skip_value(meta)
        }
    }
}

/// One marker of `#[tool_error(...)]` on a field.
pub(super) fn parse_field_key(
    cx: &mut Ctxt,
    marks: &mut FieldMarks,
    index: usize,
    meta: &ParseNestedMeta,
) -> syn::Result<()> {
    let key = meta
        .path
        .get_ident()
        .map(Ident::to_string)
        .unwrap_or_default();
    let slot = match key.as_str() {
        RETRY_AFTER => &mut marks.retry_after,
        PARTIAL => &mut marks.partial,
        VIOLATIONS => &mut marks.violations,
        unknown => {
            let message = if case_keys().any(|key| key == unknown) {
                format!(
                    "`{unknown}` classifies the whole error: put it on the variant or struct, not on a field"
                )
            } else {
                with_suggestion(
                    format!(
                        "unknown `tool_error` field marker `{unknown}`: expected `retry_after`, `partial` or `violations`"
                    ),
                    unknown,
                    FIELD_MARKERS.iter().copied(),
                )
            };
            cx.error_spanned_by(&meta.path, message);
            return skip_value(meta);
        }
    };
    if slot.replace(index).is_some() {
        cx.error_spanned_by(&meta.path, format!("only one field can be marked `{key}`"));
    }
    Ok(())
}

fn is_upper_snake(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !s.ends_with('_')
        && !s.contains("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spellings, and whether each is a code as sent. The runtime holds
    /// the same verdicts (`tests/reasons.rs` reads this table): a code is
    /// what its normalizer leaves as it is.
    const SPELLINGS: &[(&str, bool)] = &[
        ("DB_TIMEOUT", true),
        ("E2BIG", true),
        ("HTTP429", true),
        ("A", true),
        ("db_timeout", false),
        ("DB__TIMEOUT", false),
        ("DB_TIMEOUT_", false),
        ("_DB_TIMEOUT", false),
        ("2BIG", false),
        ("DB TIMEOUT", false),
        ("DbTimeout", false),
        ("DB-TIMEOUT", false),
        ("", false),
    ];

    #[test]
    fn upper_snake_spellings() {
        for &(spelling, code) in SPELLINGS {
            assert_eq!(is_upper_snake(spelling), code, "{spelling:?}");
        }
    }
}
