//! The `ToolError` impl of a checked `#[derive(ToolError)]` input, or, when
//! it has errors, a placeholder impl next to them, so that the rest of the
//! crate does not drown in follow-up errors.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{DeriveInput, Fields, Member, Type};

use super::ast::{Case, resolve};
use crate::symbol::{BUSINESS, PERMISSION, TRANSIENT, VALIDATION};

fn category_tokens(name: &str) -> TokenStream {
    let variant = match name {
        TRANSIENT => quote!(Transient),
        VALIDATION => quote!(Validation),
        BUSINESS => quote!(Business),
        PERMISSION => quote!(Permission),
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

/// The impl of `input`, whose `cases` are checked.
pub(super) fn expand(input: &DeriveInput, cases: &[Case]) -> TokenStream {
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
        let retryable = case.retryable.unwrap_or(name == TRANSIENT);
        let reason = case.reason.as_ref().map(|lit| quote!(.with_reason(#lit)));
        let message = case.message.as_ref().map(|text| quote!(.with_message(#text)));
        let alternatives = case.alternatives.iter().map(super::super::fmt::Template::text);
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
