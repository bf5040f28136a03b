//! `#[tools]` on an `impl` block: its `#[tool]` methods are served together,
//! sharing the value through `&self`.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::Attribute;

use crate::ctxt::Ctxt;
use crate::expand::{self, Place};
use crate::item::{ImplBlock, ImplEntry};
use crate::signature::{ToolFn, take_param_docs};
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
        let original = method.clone();
        let tool_attr = method.attrs.remove(position);
        let docs = take_param_docs(&mut method);
        let attr = attr::parse(&mut cx, tool_args(&tool_attr));
        let Some(tool) = ToolFn::parse(&mut cx, &method, docs) else {
            expanded_items.push(method.into_token_stream());
            continue;
        };
        valid::check(&mut cx, &attr, &tool);
        if attr.local {
            cx.error_spanned_by(
                &tool_attr,
                "a `#[tools]` method is served; `local` has no meaning here",
            );
        }
        if let Some(reason) = tool.unservable(|ident| attr.skip.iter().any(|s| s == ident)) {
            cx.error_spanned_by(
                &tool.item.sig,
                format!("`{}` cannot be served: {reason}", tool.ident()),
            );
        }
        if cx.len() > errors_before {
            // Reported; the method stays a plain `#[tool]` so that the rest of
            // the crate still type-checks.
            expanded_items.push(original.into_token_stream());
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
    let provider = errors.is_none().then(|| {
        quote! {
            impl #impl_generics ::tool_envelope::mcp::ToolProvider for #self_ty #where_clause {
                fn tools() -> ::std::vec::Vec<::tool_envelope::mcp::ToolSpec<Self>> {
                    ::std::vec![#(#specs),*]
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
