//! `#[tools]` on an `impl` block: its `#[tool]` methods are served together,
//! sharing the value through `&self`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::ext::IdentExt;
use syn::{Attribute, Ident};

use crate::ctxt::Ctxt;
use crate::expand::{self, Place};
use crate::item::{FnItem, ImplBlock, ImplEntry};
use crate::signature::{ToolFn, take_param_docs};
use crate::valid::Role;
use crate::{attr, valid};

/// Whether `attr` is `#[tool]` or `#[tool(...)]` (under any path ending in `tool`).
fn is_tool_attr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "tool")
}

/// The arguments of a `#[tool(...)]` attribute.
fn tool_args(attr: &Attribute) -> TokenStream {
    match &attr.meta {
        syn::Meta::List(list) => list.tokens.clone(),
        _ => TokenStream::new(),
    }
}

/// The word `#[tool(...)]` takes to expand to nothing.
pub const EXPANDED: &str = "__expanded_by_tools";

/// An empty function under the method's own `#[tool]` path, which `#[tool]`
/// removes: rustc resolves the attribute as the user wrote it, so the import
/// of `tool` that a `#[tools]` block needs is used, not reported as unused.
fn expanded_marker(tool_attr: &Attribute, method: &FnItem) -> TokenStream {
    let path = tool_attr.path();
    let marker = Ident::new(EXPANDED, Span::call_site());
    let name = format_ident!("__tool_envelope_expanded_{}", method.sig.ident.unraw());
    quote!(#[#path(#marker)] fn #name() {})
}

/// Expands `#[tools]`.
pub fn expand(args: TokenStream, block: ImplBlock) -> TokenStream {
    let mut cx = Ctxt::default();
    if !args.is_empty() {
        cx.error_spanned_by(
            &args,
            "`#[tools]` takes no arguments; configure each method with `#[tool(...)]`",
        );
    }
    let header = &block.header;
    if let Some((path, _)) = &header.trait_ {
        cx.error_spanned_by(
            path,
            "`#[tools]` goes on an inherent `impl` block: its methods get new signatures, which a trait would not accept",
        );
    }

    let mut expanded_items: Vec<TokenStream> = Vec::new();
    let mut specs = Vec::new();
    let mut any_tool = false;
    for entry in block.entries {
        let ImplEntry::Fn(method) = entry else {
            expanded_items.push(entry.into_token_stream());
            continue;
        };
        let mut method = *method;
        let Some(position) = method.attrs.iter().position(is_tool_attr) else {
            expanded_items.push(method.into_token_stream());
            continue;
        };
        any_tool = true;
        let errors_before = cx.len();
        let as_written = method.clone();
        let tool_attr = method.attrs.remove(position);
        expanded_items.push(expanded_marker(&tool_attr, &method));
        let docs = take_param_docs(&mut method);
        let attr = attr::parse(&mut cx, tool_args(&tool_attr));
        let Some(tool) = ToolFn::parse(&mut cx, &method, docs) else {
            expanded_items.push(method.into_token_stream());
            continue;
        };
        valid::check(&mut cx, &attr, &tool);
        let tool_errors = cx.len() > errors_before;
        if attr.local {
            cx.error_spanned_by(
                &tool_attr,
                "a `#[tools]` method is served; `local` has no meaning here",
            );
        }
        if let Some(reason) = tool.unservable(|param| valid::role(&attr, param) == Role::Skipped) {
            cx.error_spanned_by(
                &tool.item.sig,
                format!("`{}` cannot be served: {reason}", tool.ident()),
            );
        }
        if cx.len() > errors_before {
            // Reported. So that the rest of the crate still type-checks, the
            // method stays a plain `#[tool]` when only serving it failed, and
            // loses its `#[tool]` when that would report the same errors again.
            let fallback = if tool_errors { method } else { as_written };
            expanded_items.push(fallback.into_token_stream());
            continue;
        }
        let expanded = expand::tool(&attr, &tool, Place::ServedMethod);
        expanded_items.push(expanded.items);
        specs.extend(expanded.spec);
    }
    if !any_tool {
        cx.error_spanned_by(
            &header.self_ty,
            "`#[tools]` found no `#[tool]` method in this impl block",
        );
    }

    let attrs = &header.attrs;
    let self_ty = &header.self_ty;
    let (impl_generics, _, where_clause) = header.generics.split_for_impl();
    let errors = cx.check().err().map(syn::Error::into_compile_error);
    let local = expand::specs_local();
    let provider = errors.is_none().then(|| {
        quote! {
            impl #impl_generics ::tool_envelope::mcp::ToolProvider for #self_ty #where_clause {
                fn tools() -> ::std::vec::Vec<::tool_envelope::mcp::ToolSpec<Self>> {
                    #[allow(unused_mut, clippy::vec_init_then_push)]
                    let mut #local = ::std::vec::Vec::new();
                    #(#specs)*
                    #local
                }
            }
        }
    });
    quote! {
        #errors
        #(#attrs)*
        impl #impl_generics #self_ty #where_clause {
            #(#expanded_items)*
        }
        #provider
    }
}
