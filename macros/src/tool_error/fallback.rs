//! What `#[derive(ToolError)]` emits when its input has errors: the errors,
//! and a placeholder impl, so that the rest of the crate still type-checks
//! (thiserror-impl's `fallback.rs`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

/// `error` and a placeholder impl.
pub(super) fn fallback(input: &DeriveInput, error: syn::Error) -> TokenStream {
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
