//! The classified cases of a `#[derive(ToolError)]` input — each variant of
//! an enum, or the struct — as their attributes describe them.

use proc_macro2::Span;
use quote::{ToTokens, format_ident};
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr};

use super::attr::{self, CaseAttrs, FieldMarks};
use crate::ctxt::Ctxt;
use crate::fmt::{FieldName, Template};

/// One classified case: an enum variant, or the struct itself.
pub(super) struct Case<'a> {
    /// `None` for a struct.
    pub(super) variant: Option<&'a Ident>,
    /// Where the variant or struct is named, for errors about it as a whole.
    pub(super) span: Span,
    pub(super) fields: &'a Fields,
    pub(super) bindings: Vec<Ident>,
    pub(super) category: Option<(String, Span)>,
    pub(super) retryable: Option<bool>,
    pub(super) alternatives: Vec<Template>,
    pub(super) reason: Option<LitStr>,
    pub(super) not_applied: bool,
    pub(super) transparent: Option<Span>,
    pub(super) retry_after: Option<usize>,
    pub(super) partial: Option<usize>,
    pub(super) violations: Option<usize>,
    /// thiserror's `#[error("...")]` template, published as the message.
    pub(super) message: Option<String>,
}

impl Case<'_> {
    /// How the case is named in an error: ``variant `Timeout` ``, `this struct`.
    pub(super) fn what(&self) -> String {
        match self.variant {
            Some(ident) => format!("variant `{ident}`"),
            None => "this struct".to_owned(),
        }
    }
}

/// The classified cases of `input`: its variants, or the struct itself.
pub(super) fn parse<'a>(cx: &mut Ctxt, input: &'a DeriveInput) -> Vec<Case<'a>> {
    match &input.data {
        Data::Struct(data) => {
            vec![parse_case(
                cx,
                None,
                input.ident.span(),
                &input.attrs,
                &data.fields,
            )]
        }
        Data::Enum(data) => {
            for attr in input
                .attrs
                .iter()
                .filter(|a| a.path().is_ident("tool_error"))
            {
                cx.error_spanned_by(
                    attr,
                    "`#[tool_error(...)]` goes on each variant of an enum, so that every variant is classified on its own",
                );
            }
            data.variants
                .iter()
                .map(|v| parse_case(cx, Some(&v.ident), v.ident.span(), &v.attrs, &v.fields))
                .collect()
        }
        Data::Union(data) => {
            cx.error_spanned_by(
                data.union_token,
                "`ToolError` cannot be derived for a union",
            );
            Vec::new()
        }
    }
}

fn parse_case<'a>(
    cx: &mut Ctxt,
    variant: Option<&'a Ident>,
    span: Span,
    attrs: &[Attribute],
    fields: &'a Fields,
) -> Case<'a> {
    let bindings = fields
        .iter()
        .enumerate()
        .map(|(i, field)| match &field.ident {
            Some(ident) => format_ident!(
                "__tool_envelope_{}",
                syn::ext::IdentExt::unraw(ident),
                span = Span::mixed_site()
            ),
            None => format_ident!("__tool_envelope_{}", i, span = Span::mixed_site()),
        })
        .collect();
    let mut said = CaseAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("tool_error")) {
        let result = attr.parse_nested_meta(|meta| attr::parse_case_key(cx, &mut said, &meta));
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    let mut marks = FieldMarks::default();
    for (index, field) in fields.iter().enumerate() {
        for attr in field
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("tool_error"))
        {
            let result =
                attr.parse_nested_meta(|meta| attr::parse_field_key(cx, &mut marks, index, &meta));
            if let Err(error) = result {
                cx.syn_error(error);
            }
        }
    }
    let CaseAttrs {
        category,
        retryable,
        alternatives,
        reason,
        not_applied,
        transparent,
    } = said;
    let FieldMarks {
        retry_after,
        partial,
        violations,
    } = marks;
    Case {
        variant,
        span,
        fields,
        bindings,
        category,
        retryable,
        alternatives,
        reason,
        not_applied,
        transparent,
        retry_after,
        partial,
        violations,
        message: error_template(attrs),
    }
}

/// The format string of thiserror's `#[error("...")]`, if there is one.
fn error_template(attrs: &[Attribute]) -> Option<String> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("error"))
        .find_map(|attr| match &attr.meta {
            syn::Meta::List(list) => {
                let first = list.tokens.clone().into_iter().next()?;
                syn::parse2::<LitStr>(first.into_token_stream())
                    .ok()
                    .map(|lit| lit.value())
            }
            _ => None,
        })
}

/// How many positional fields there are.
pub(super) fn positional(fields: &Fields) -> usize {
    match fields {
        Fields::Unnamed(unnamed) => unnamed.unnamed.len(),
        _ => 0,
    }
}

/// The index of the field a template names.
pub(super) fn resolve(fields: &Fields, name: &FieldName) -> Option<usize> {
    match name {
        FieldName::Named(name) => fields.iter().position(|f| {
            f.ident
                .as_ref()
                .is_some_and(|i| syn::ext::IdentExt::unraw(i) == name)
        }),
        FieldName::Index(index) => (*index < positional(fields)).then_some(*index),
    }
}
