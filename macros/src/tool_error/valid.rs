//! What a `#[derive(ToolError)]` must say, checked once every setting is
//! parsed: a category on every case (or `transparent`, alone, on one field),
//! and fields that exist for every `{name}` an alternative interpolates.

use super::ast::{Case, positional, resolve};
use crate::ctxt::{Ctxt, with_suggestion};
use crate::fmt::FieldName;

/// Records every problem of `cases` in `cx`.
pub(super) fn check(cx: &mut Ctxt, cases: &[Case]) {
    for case in cases {
        let what = case.what();
        if let Some(transparent) = case.transparent {
            if case.fields.len() != 1 {
                cx.error_at(
                    transparent,
                    format!(
                        "`transparent` needs exactly one field to delegate to; {what} has {}",
                        case.fields.len()
                    ),
                );
            }
            if case.category.is_some()
                || case.retryable.is_some()
                || !case.alternatives.is_empty()
                || case.reason.is_some()
                || case.not_applied
                || case.retry_after.is_some()
                || case.partial.is_some()
                || case.violations.is_some()
            {
                cx.error_at(
                    transparent,
                    "`transparent` delegates everything to the inner error; remove the other `tool_error` settings",
                );
            }
        } else if case.category.is_none() {
            cx.error_at(
                case.span,
                format!(
                    "{what} has no error category\n\
                     help: classify it with `#[tool_error(transient)]`, `validation`, `business`, `permission` or `other`"
                ),
            );
        }

        for template in &case.alternatives {
            for field in &template.fields {
                if resolve(case.fields, field).is_none() {
                    let message = match field {
                        FieldName::Named(name) => {
                            let names: Vec<String> = case
                                .fields
                                .iter()
                                .filter_map(|f| f.ident.as_ref())
                                .map(|i| syn::ext::IdentExt::unraw(i).to_string())
                                .collect();
                            let message = format!("{what} has no field `{name}` to interpolate");
                            let suggested = with_suggestion(
                                message.clone(),
                                name,
                                names.iter().map(String::as_str),
                            );
                            if suggested != message {
                                suggested
                            } else if names.is_empty() {
                                format!("{message}: it has no named fields")
                            } else {
                                format!("{message}: its fields are `{}`", names.join("`, `"))
                            }
                        }
                        FieldName::Index(index) => match positional(case.fields) {
                            0 => format!(
                                "{what} has no field `{index}` to interpolate: it has no positional fields"
                            ),
                            1 => format!(
                                "{what} has no field `{index}` to interpolate: its only positional field is `0`"
                            ),
                            n => format!(
                                "{what} has no field `{index}` to interpolate: its positional fields are `0` to `{}`",
                                n - 1
                            ),
                        },
                    };
                    cx.error_spanned_by(&template.lit, message);
                }
            }
        }
    }
}
