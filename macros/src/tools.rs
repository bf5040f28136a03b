//! `#[tools]` on an `impl` block: its `#[tool]` methods are served together,
//! sharing the value through `&self`.
//!
//! The block leaves each method's `#[tool]` where the user wrote it — so
//! that rustc expands it as written, through the user's own import — and
//! adds one argument to it, `__tools`, which tells `#[tool]` to generate
//! what serves the method. The block itself generates only the list.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::{Attribute, Meta};

use crate::ctxt::Ctxt;
use crate::expand::method_tool_name;
use crate::item::{ImplBlock, ImplEntry};
use crate::symbol::IN_TOOLS;

/// Whether `attr` is `#[tool]` or `#[tool(...)]` (under any path ending in `tool`).
fn is_tool_attr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "tool")
}

/// The name `#[tool(args)]` on `method` serves it under: its `name = "…"`,
/// or the method's own name. `None` when the arguments do not parse (the
/// method's `#[tool]` says why).
fn served_name(attr: &Attribute, method: &syn::Ident) -> Option<String> {
    let args = match &attr.meta {
        Meta::List(list) => list
            .parse_args_with(syn::punctuated::Punctuated::<Meta, syn::Token![,]>::parse_terminated)
            .ok()?,
        _ => syn::punctuated::Punctuated::new(),
    };
    let named = args.iter().find_map(|meta| match meta {
        Meta::NameValue(pair) if pair.path.is_ident(crate::symbol::NAME) => Some(&pair.value),
        _ => None,
    });
    match named {
        Some(syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(name),
            ..
        })) => Some(name.value()),
        Some(_) => None,
        None => Some(method.unraw().to_string()),
    }
}

/// `#[tool(args)]` as `#[tool(__tools, args)]`, under the path as written.
fn served(attr: &Attribute) -> Attribute {
    let path = attr.path();
    let marker = syn::Ident::new(IN_TOOLS, proc_macro2::Span::call_site());
    let args = match &attr.meta {
        Meta::List(list) if !list.tokens.is_empty() => {
            let tokens = &list.tokens;
            quote!(#marker, #tokens)
        }
        _ => quote!(#marker),
    };
    syn::parse_quote!(#[#path(#args)])
}

/// Expands `#[tools]`.
pub fn expand(args: TokenStream, mut block: ImplBlock) -> TokenStream {
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

    let list = syn::Ident::new("__tool_envelope_tools", proc_macro2::Span::mixed_site());
    let mut listed = Vec::new();
    // The name each method is served as, whether it is always compiled,
    // and the method.
    let mut served_as = Vec::new();
    for entry in &mut block.entries {
        let ImplEntry::Fn(method) = entry else {
            continue;
        };
        let Some(attr) = method.attrs.iter_mut().find(|attr| is_tool_attr(attr)) else {
            continue;
        };
        let name = served_name(attr, &method.sig.ident);
        *attr = served(attr);
        let cfgs: Vec<&Attribute> = method
            .attrs
            .iter()
            .filter(|attr| attr.path().is_ident("cfg"))
            .collect();
        if let Some(name) = name {
            served_as.push((name, cfgs.is_empty(), method.sig.ident.clone()));
        }
        let name = method_tool_name(&method.sig.ident);
        listed.push(quote!(#(#cfgs)* #list.push(Self::#name());));
    }
    // One set serves one tool a name: two methods always compiled may not
    // share one, nor a method under `#[cfg]` take one of theirs (two under
    // `#[cfg]` may be alternatives).
    for (at, (name, always, method)) in served_as.iter().enumerate() {
        let taken = |(other, compiled, _): &(String, bool, syn::Ident)| *compiled && other == name;
        let clash = match always {
            // The second of two always compiled, not the first.
            true => served_as[..at].iter().any(taken),
            false => served_as.iter().any(taken),
        };
        if clash {
            cx.error_spanned_by(
                method,
                format!(
                    "another `#[tool]` method of this block is served as `{name}`: a tool set serves one tool a name; give one of them `#[tool(name = \"…\")]`"
                ),
            );
        }
    }
    if listed.is_empty() {
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
            impl #impl_generics ::tool_envelope::__private::ToolProvider for #self_ty #where_clause {
                fn __tools() -> ::std::vec::Vec<::tool_envelope::__private::MethodTool<Self>> {
                    #[allow(unused_mut)]
                    let mut #list = ::std::vec::Vec::new();
                    #(#listed)*
                    #list
                }
            }
        }
    });
    let entries = block.entries.iter().map(ToTokens::to_token_stream);
    quote! {
        #errors
        #(#attrs)*
        impl #impl_generics #self_ty #where_clause {
            #(#entries)*
        }
        #provider
    }
}
