//! `#[derive(ToolError)]`: parse → validate → expand.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitBool, LitStr, Member, Type};

use crate::ctxt::{Ctxt, skip_value, with_suggestion};
use crate::fmt::{FieldName, Template};

const CATEGORIES: &[&str] = &["transient", "validation", "business", "permission", "other"];
const VARIANT_KEYS: &[&str] = &[
    "transient",
    "validation",
    "business",
    "permission",
    "other",
    "retryable",
    "alternatives",
    "reason",
    "not_applied",
    "transparent",
];
const FIELD_KEYS: &[&str] = &["retry_after", "partial", "violations"];

/// One classified case: an enum variant, or the struct itself.
struct Case<'a> {
    /// `None` for a struct.
    variant: Option<&'a Ident>,
    fields: &'a Fields,
    bindings: Vec<Ident>,
    category: Option<(String, Span)>,
    retryable: Option<bool>,
    alternatives: Vec<Template>,
    reason: Option<LitStr>,
    not_applied: bool,
    transparent: Option<Span>,
    retry_after: Option<usize>,
    partial: Option<usize>,
    violations: Option<usize>,
    /// thiserror's `#[error("...")]` template, published as the message.
    message: Option<String>,
}

/// Derives `ToolError`, or reports every problem and emits a placeholder impl
/// so that the rest of the crate does not drown in follow-up errors.
pub fn derive(input: &DeriveInput) -> TokenStream {
    let mut cx = Ctxt::default();
    let cases = parse(&mut cx, input);
    match cx.check() {
        Ok(()) => expand(input, &cases),
        Err(error) => fallback(input, error),
    }
}

fn parse<'a>(cx: &mut Ctxt, input: &'a DeriveInput) -> Vec<Case<'a>> {
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
    let mut case = Case {
        variant,
        fields,
        bindings,
        category: None,
        retryable: None,
        alternatives: Vec::new(),
        reason: None,
        not_applied: false,
        transparent: None,
        retry_after: None,
        partial: None,
        violations: None,
        message: error_template(attrs),
    };
    let what = match variant {
        Some(ident) => format!("variant `{ident}`"),
        None => "this struct".to_owned(),
    };

    for attr in attrs.iter().filter(|a| a.path().is_ident("tool_error")) {
        let result = attr.parse_nested_meta(|meta| parse_case_key(cx, &mut case, &meta));
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    for (index, field) in fields.iter().enumerate() {
        for attr in field
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("tool_error"))
        {
            let result =
                attr.parse_nested_meta(|meta| parse_field_key(cx, &mut case, index, &meta));
            if let Err(error) = result {
                cx.syn_error(error);
            }
        }
    }

    if let Some(transparent) = case.transparent {
        if fields.len() != 1 {
            cx.error_at(
                transparent,
                format!(
                    "`transparent` needs exactly one field to delegate to; {what} has {}",
                    fields.len()
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
            span,
            format!(
                "{what} has no error category\n\
                 help: classify it with `#[tool_error(transient)]`, `validation`, `business`, `permission` or `other`"
            ),
        );
    }

    for template in &case.alternatives {
        for field in &template.fields {
            if resolve(fields, field).is_none() {
                let message = match field {
                    FieldName::Named(name) => {
                        let names: Vec<String> = fields
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
                    FieldName::Index(index) => match positional(fields) {
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
    case
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

fn positional(fields: &Fields) -> usize {
    match fields {
        Fields::Unnamed(unnamed) => unnamed.unnamed.len(),
        _ => 0,
    }
}

/// The index of the field a template names.
fn resolve(fields: &Fields, name: &FieldName) -> Option<usize> {
    match name {
        FieldName::Named(name) => fields.iter().position(|f| {
            f.ident
                .as_ref()
                .is_some_and(|i| syn::ext::IdentExt::unraw(i) == name)
        }),
        FieldName::Index(index) => (*index < positional(fields)).then_some(*index),
    }
}

fn parse_case_key(cx: &mut Ctxt, case: &mut Case, meta: &ParseNestedMeta) -> syn::Result<()> {
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
                    cx.error_spanned_by(&meta.path, format!("`{category}` is given twice"))
                }
                Some((first, _)) => cx.error_spanned_by(
                    &meta.path,
                    format!("an error has one category: it is already `{first}`, it cannot also be `{category}`"),
                ),
                None => case.category = Some((category.to_owned(), meta.path.span())),
            }
            Ok(())
        }
        "retryable" => {
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
        "alternatives" => {
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
        "reason" => {
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
        "not_applied" => {
            case.not_applied = true;
            Ok(())
        }
        "transparent" => {
            case.transparent = Some(meta.path.span());
            Ok(())
        }
        unknown => {
            let message = if FIELD_KEYS.contains(&unknown) {
                format!(
                    "`{unknown}` marks a field: put `#[tool_error({unknown})]` on the field that holds it"
                )
            } else {
                with_suggestion(
                    format!("unknown `tool_error` setting `{unknown}`"),
                    unknown,
                    VARIANT_KEYS.iter().copied(),
                )
            };
            cx.error_spanned_by(&meta.path, message);
            skip_value(meta)
        }
    }
}

fn parse_field_key(
    cx: &mut Ctxt,
    case: &mut Case,
    index: usize,
    meta: &ParseNestedMeta,
) -> syn::Result<()> {
    let key = meta
        .path
        .get_ident()
        .map(Ident::to_string)
        .unwrap_or_default();
    let slot = match key.as_str() {
        "retry_after" => &mut case.retry_after,
        "partial" => &mut case.partial,
        "violations" => &mut case.violations,
        unknown => {
            let message = if VARIANT_KEYS.contains(&unknown) {
                format!(
                    "`{unknown}` classifies the whole error: put it on the variant or struct, not on a field"
                )
            } else {
                with_suggestion(
                    format!(
                        "unknown `tool_error` field marker `{unknown}`: expected `retry_after`, `partial` or `violations`"
                    ),
                    unknown,
                    FIELD_KEYS.iter().copied(),
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

fn category_tokens(name: &str) -> TokenStream {
    let variant = match name {
        "transient" => quote!(Transient),
        "validation" => quote!(Validation),
        "business" => quote!(Business),
        "permission" => quote!(Permission),
        _ => quote!(Other),
    };
    quote!(::tool_envelope::__private::ErrorCategory::#variant)
}

impl Case<'_> {
    /// The pattern binding every field: `Self::V { a: __a, .. }`, `Self(__0)`.
    fn pattern(&self) -> TokenStream {
        let path = match self.variant {
            Some(variant) => quote!(Self::#variant),
            None => quote!(Self),
        };
        let bindings = &self.bindings;
        match self.fields {
            Fields::Named(named) => {
                let members = named
                    .named
                    .iter()
                    .map(|f| f.ident.as_ref().expect("named field"));
                quote!(#path { #(#members: #bindings),* })
            }
            Fields::Unnamed(_) => quote!(#path(#(#bindings),*)),
            Fields::Unit => quote!(#path),
        }
    }

    fn field_ty(&self, index: usize) -> &Type {
        &self.fields.iter().nth(index).expect("index of a field").ty
    }

    fn field_member(&self, index: usize) -> Member {
        let field = self.fields.iter().nth(index).expect("index of a field");
        match &field.ident {
            Some(ident) => Member::Named(ident.clone()),
            None => Member::Unnamed(index.into()),
        }
    }
}

fn expand(input: &DeriveInput, cases: &[Case]) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let trait_ = quote!(::tool_envelope::__private::ToolError);

    // One `match self` per method, generated only when some case says more than the default.
    let method =
        |sig: TokenStream, arm: &dyn Fn(&Case) -> Option<TokenStream>, default: TokenStream| {
            let arms: Vec<_> = cases
                .iter()
                .map(|case| (case.pattern(), arm(case)))
                .collect();
            if arms.iter().all(|(_, body)| body.is_none()) {
                return quote!();
            }
            let arms = arms.into_iter().map(|(pattern, body)| {
                let body = body.unwrap_or_else(|| default.clone());
                quote!(#pattern => #body,)
            });
            quote! {
                #sig {
                    match self {
                        #(#arms)*
                    }
                }
            }
        };
    let delegate = |case: &Case, call: TokenStream| {
        case.transparent.map(|_| {
            let inner = &case.bindings[0];
            quote!(#trait_::#call(#inner))
        })
    };

    let category = if cases.is_empty() {
        quote! {
            fn category(&self) -> ::tool_envelope::__private::ErrorCategory {
                match *self {}
            }
        }
    } else {
        let arms = cases.iter().map(|case| {
            let pattern = case.pattern();
            let body = delegate(case, quote!(category))
                .unwrap_or_else(|| category_tokens(&case.category.as_ref().expect("validated").0));
            quote!(#pattern => #body,)
        });
        quote! {
            fn category(&self) -> ::tool_envelope::__private::ErrorCategory {
                match self {
                    #(#arms)*
                }
            }
        }
    };

    let is_retryable = method(
        quote!(fn is_retryable(&self) -> bool),
        &|case| {
            delegate(case, quote!(is_retryable))
                .or_else(|| case.retryable.map(|value| quote!(#value)))
        },
        quote!(::tool_envelope::__private::ErrorCategory::is_retryable_by_default(#trait_::category(self))),
    );

    let alternatives = method(
        quote!(fn alternatives(&self) -> ::std::vec::Vec<::std::string::String>),
        &|case| {
            delegate(case, quote!(alternatives)).or_else(|| {
                (!case.alternatives.is_empty()).then(|| {
                    let items = case.alternatives.iter().map(|template| {
                        let bindings: Vec<TokenStream> = template
                            .fields
                            .iter()
                            .map(|name| {
                                let binding =
                                    &case.bindings[resolve(case.fields, name).expect("validated")];
                                quote!(#binding)
                            })
                            .collect();
                        template.expand(&bindings)
                    });
                    quote!(::std::vec![#(#items),*])
                })
            })
        },
        quote!(::std::vec::Vec::new()),
    );

    let reason = method(
        quote!(fn reason(&self) -> ::core::option::Option<::std::borrow::Cow<'static, str>>),
        &|case| {
            delegate(case, quote!(reason)).or_else(|| {
                case.reason.as_ref().map(
                    |lit| quote!(::core::option::Option::Some(::std::borrow::Cow::Borrowed(#lit))),
                )
            })
        },
        quote!(::core::option::Option::None),
    );

    let retry_after = method(
        quote!(fn retry_after(&self) -> ::core::option::Option<::core::time::Duration>),
        &|case| {
            delegate(case, quote!(retry_after)).or_else(|| {
                case.retry_after.map(|index| {
                    let binding = &case.bindings[index];
                    let ty = case.field_ty(index);
                    quote_spanned!(ty.span()=> ::tool_envelope::__private::RetryAfterHint::retry_after_hint(#binding))
                })
            })
        },
        quote!(::core::option::Option::None),
    );

    let violations = method(
        quote!(fn violations(&self) -> ::std::vec::Vec<::tool_envelope::__private::Violation>),
        &|case| {
            delegate(case, quote!(violations)).or_else(|| {
                case.violations.map(|index| {
                    let binding = &case.bindings[index];
                    let ty = case.field_ty(index);
                    quote_spanned!(ty.span()=> ::tool_envelope::__private::ViolationList::to_violations(#binding))
                })
            })
        },
        quote!(::std::vec::Vec::new()),
    );

    let partial_results = method(
        quote!(fn partial_results(&self) -> ::core::option::Option<::tool_envelope::__private::serde_json::Value>),
        &|case| {
            delegate(case, quote!(partial_results)).or_else(|| {
                case.partial.map(|index| {
                    let binding = &case.bindings[index];
                    let ty = case.field_ty(index);
                    quote_spanned!(ty.span()=> ::tool_envelope::__private::partial_value(#binding))
                })
            })
        },
        quote!(::core::option::Option::None),
    );

    let not_applied = method(
        quote!(fn not_applied(&self) -> bool),
        &|case| {
            delegate(case, quote!(not_applied)).or_else(|| case.not_applied.then(|| quote!(true)))
        },
        quote!(false),
    );

    let as_error = quote! {
        fn as_error(&self) -> ::core::option::Option<&(dyn ::std::error::Error + 'static)> {
            #[allow(unused_imports)]
            use ::tool_envelope::__private::probe::{ViaNothing as _, ViaStdError as _};
            (&::tool_envelope::__private::ErrorProbe(self)).as_std_error()
        }
    };

    // A transparent case hands over its inner error whole, so that its own
    // envelope (and origin) passes through.
    let into_envelope = if cases.iter().any(|case| case.transparent.is_some()) {
        let transparent = cases
            .iter()
            .filter(|case| case.transparent.is_some())
            .map(|case| {
                let member = case.field_member(0);
                let pattern = match case.variant {
                    Some(variant) => quote!(Self::#variant { #member: inner, .. }),
                    None => quote!(Self { #member: inner, .. }),
                };
                quote!(#pattern => #trait_::into_envelope(inner),)
            });
        let rest = cases
            .iter()
            .any(|case| case.transparent.is_none())
            .then(|| quote!(other => ::tool_envelope::__private::envelope_of(other),));
        quote! {
            fn into_envelope(self) -> ::tool_envelope::__private::ErrorEnvelope {
                match self {
                    #(#transparent)*
                    #rest
                }
            }
        }
    } else {
        quote!()
    };

    let modes = cases.iter().map(|case| {
        if case.transparent.is_some() {
            let inner = case.field_ty(0);
            return quote! {
                modes.extend(
                    (&::tool_envelope::__private::FailureProbe::<#inner>::new()).failure_modes().unwrap_or_default(),
                );
            };
        }
        let (name, _) = case.category.as_ref().expect("validated");
        let category = category_tokens(name);
        let retryable = case.retryable.unwrap_or(name == "transient");
        let reason = case.reason.as_ref().map(|lit| quote!(.with_reason(#lit)));
        let message = case.message.as_ref().map(|text| quote!(.with_message(#text)));
        let alternatives = case.alternatives.iter().map(|template| template.text());
        quote! {
            modes.push(
                ::tool_envelope::__private::FailureMode::new(#category)
                    .with_retryable(#retryable)
                    #reason
                    #message
                    .with_alternatives([#(#alternatives),*] as [&'static str; _]),
            );
        }
    });

    quote! {
        #[automatically_derived]
        impl #impl_generics ::tool_envelope::__private::DescribeFailures for #ident #ty_generics #where_clause {
            fn failure_modes() -> ::std::vec::Vec<::tool_envelope::__private::FailureMode> {
                #[allow(unused_imports)]
                use ::tool_envelope::__private::probe::{ViaFailures as _, ViaNoFailures as _};
                #[allow(unused_mut)]
                let mut modes = ::std::vec::Vec::new();
                #(#modes)*
                modes
            }
        }

        #[automatically_derived]
        impl #impl_generics #trait_ for #ident #ty_generics #where_clause {
            #category
            #is_retryable
            #alternatives
            #reason
            #retry_after
            #violations
            #partial_results
            #not_applied
            #as_error
            #into_envelope
        }
    }
}

fn fallback(input: &DeriveInput, error: syn::Error) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let error = error.into_compile_error();
    quote! {
        #error
        #[automatically_derived]
        impl #impl_generics ::tool_envelope::__private::ToolError for #ident #ty_generics #where_clause {
            fn category(&self) -> ::tool_envelope::__private::ErrorCategory {
                ::core::unreachable!()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_snake_spellings() {
        assert!(is_upper_snake("DB_TIMEOUT"));
        assert!(is_upper_snake("E2BIG"));
        assert!(!is_upper_snake("db_timeout"));
        assert!(!is_upper_snake("DB__TIMEOUT"));
    }
}
