//! Code generation for `#[tool]`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType};

use crate::attr::ToolAttr;
use crate::signature::ToolFn;
use crate::valid::{Role, role};

/// The hygienic names of the generated locals.
struct Locals {
    tool: syn::Ident,
    query: syn::Ident,
    partial: syn::Ident,
    writer: syn::Ident,
    ret: syn::Ident,
}

impl Locals {
    fn new() -> Self {
        let local = |name: &str| syn::Ident::new(name, Span::mixed_site());
        Locals {
            tool: local("__TOOL_ENVELOPE_INFO"),
            query: local("__tool_envelope_query"),
            partial: local("__tool_envelope_partial"),
            writer: local("__tool_envelope_writer"),
            ret: local("__tool_envelope_ret"),
        }
    }
}

/// The tool's name: `#[tool(name = "...")]` or the function's own.
pub fn tool_name(attr: &ToolAttr, tool: &ToolFn) -> String {
    match &attr.name {
        Some(name) => name.value(),
        None => syn::ext::IdentExt::unraw(tool.ident()).to_string(),
    }
}

/// The function, rewritten to return `ToolResult<T>` and to capture, run and
/// classify as one call.
pub fn tool(attr: &ToolAttr, tool: &ToolFn) -> TokenStream {
    let item = tool.item;
    let locals = Locals::new();
    let Locals {
        tool: info,
        query,
        partial,
        writer,
        ret,
    } = &locals;

    let name = tool_name(attr, tool);
    let idempotent = attr.is_idempotent();
    let output = tool.output;

    let captures = tool.params.iter().map(|param| {
        let ident = param.ident;
        let key = &param.key;
        match role(attr, ident, param.partial_item.is_some()) {
            Role::Captured => quote_spanned!(param.ty.span()=> #writer.arg(#key, &#ident);),
            Role::Redacted => quote!(#writer.redacted(#key);),
            Role::Skipped | Role::Partial => quote!(),
        }
    });

    let partial_source = match tool.params.iter().find(|p| p.partial_item.is_some()) {
        Some(param) => {
            let ident = param.ident;
            let item = param.partial_item.expect("found by partial_item");
            quote_spanned!(item.span()=> ::tool_envelope::__private::partial_source::<#item>(&#ident))
        }
        None => quote!(()),
    };

    let guard = attr.guard.as_ref().map(|guard| {
        let check = quote_spanned!(guard.span()=> ::tool_envelope::__private::check_guard(&(#guard), &#info, &#query));
        quote! {
            if let ::core::result::Result::Err(#ret) = #check {
                return ::core::result::Result::Err(#ret);
            }
        }
    });

    let block = &item.block;
    let fake_return = quote! {
        if let ::core::option::Option::Some(#ret) = ::core::option::Option::None::<#output> {
            #[allow(unreachable_code)]
            return #ret;
        }
    };
    // Named at the return type, so that a return type that is not a `Result`
    // is reported there, once.
    let into_result = quote_spanned! {output.span()=>
        <#output as ::tool_envelope::__private::IntoToolResult>::into_result
    };
    let call_async = quote_spanned!(output.span()=> ::tool_envelope::__private::call_async);
    let call_sync = quote_spanned!(output.span()=> ::tool_envelope::__private::call_sync);
    let call = if tool.is_async {
        quote! {
            #call_async(&#info, #query, #partial, async move {
                #fake_return
                #block
            }, #into_result)
            .await
        }
    } else {
        quote! {
            #call_sync(&#info, #query, #partial, move || {
                #fake_return
                #block
            }, #into_result)
        }
    };

    let ItemFn {
        attrs, vis, sig, ..
    } = item;
    let mut sig = sig.clone();
    let result = quote_spanned! {output.span()=>
        ::tool_envelope::ToolResult<::tool_envelope::__private::OkOf<#output>>
    };
    sig.output = ReturnType::Type(Default::default(), Box::new(syn::Type::Verbatim(result)));

    quote! {
        #(#attrs)*
        #vis #sig {
            const #info: ::tool_envelope::__private::ToolInfo = ::tool_envelope::__private::ToolInfo {
                name: #name,
                idempotent: #idempotent,
            };
            let #query = ::tool_envelope::__private::capture(|#writer| {
                #(#captures)*
            });
            #guard
            let #partial = #partial_source;
            #call
        }
    }
}

/// The tokens emitted when the macro found errors: the errors, and the function
/// as written, so that the rest of the crate still type-checks.
pub fn fallback(error: syn::Error, item: &ItemFn) -> TokenStream {
    let error = error.into_compile_error();
    quote! {
        #error
        #item
    }
}
