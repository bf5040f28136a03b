//! What serves a tool a client can call: the companion type of a free
//! function, or the hidden associated function of a method of a `#[tools]`
//! block; its MCP definition; and one attempt of a served call, from the
//! JSON arguments to the tool's run.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::parts::{
    CFG, Locals, Names, carried, description, err_ty, method_tool_name, ok_ty, tool_name,
};
use crate::attr::ToolAttr;
use crate::signature::{Param, ToolFn};

/// The companion type named like the free function: `ToolSet::tool::<name>()`
/// takes it. A braced struct, so that it lives in the type namespace only,
/// next to the function.
pub(super) fn companion_type(tool: &ToolFn) -> TokenStream {
    let vis = &tool.item.vis;
    let ident = tool.ident();
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #ident {
            #[doc(hidden)]
            __tool_envelope: (),
        }
    }
}

/// The parameters a client sends: all but the `Partial` collector and the
/// `ToolContext`.
fn sent<'t, 'a>(tool: &'t ToolFn<'a>) -> impl Iterator<Item = &'t Param<'a>> {
    tool.params
        .iter()
        .filter(|param| param.partial_item.is_none() && !param.context)
}

/// The expression that builds the tool's MCP definition from its `info`.
fn definition(tool: &ToolFn, info: &TokenStream, attr: &ToolAttr, locals: &Locals) -> TokenStream {
    let te = &locals.te;
    let ok = ok_ty(tool);
    let err = err_ty(tool);
    let params = sent(tool).map(|param| {
        let key = &param.key;
        let ty = param.ty;
        let docs = &param.docs;
        quote_spanned!(ty.span()=> #te::param::<#ty>(#key, #docs))
    });
    let missing_description = description(attr, tool).1.then(|| {
        let span = tool.ident().span();
        let note = format!(
            "the tool `{}` has no description: MCP clients show it to the model, so add a doc comment \
             (or `#[tool(description = \"...\")]`)",
            tool_name(attr, tool)
        );
        let use_it = quote_spanned!(span=> let _ = tool_without_description;);
        quote! {
            #[deprecated(note = #note)]
            #[allow(non_camel_case_types)]
            struct tool_without_description;
            #use_it
        }
    });
    quote! {{
        #missing_description
        #[allow(unused_imports)]
        use ::tool_envelope::__private::{self as #te, probe::*};
        let output = (&#te::SchemaProbe::<#ok>::new()).output_schema();
        let failures = (&#te::FailureProbe::<#err>::new()).failure_modes();
        #te::definition(#info, &[#(#params),*], output, failures)
    }}
}

/// One attempt of a served tool, as the closure `serve` takes: decode the
/// JSON arguments (every problem collected), check the set's guards, run,
/// and make the success JSON. `run_call` names the run function; `owned` is
/// the state the future must own (a method's `Arc<Self>`), if any.
fn attempt(
    tool: &ToolFn,
    locals: &Locals,
    info: &TokenStream,
    run_call: &TokenStream,
    owned: Option<&Ident>,
) -> TokenStream {
    let Locals {
        te,
        query,
        arguments,
        state,
        decoder,
        ..
    } = locals;
    let ok = ok_ty(tool);
    let output = tool.output;
    // Every argument is decoded, each problem recorded, before the first
    // that failed ends the tuple: a tuple of any length.
    let decodes = sent(tool).map(|param| {
        let key = &param.key;
        let ty = param.ty;
        let ident = param.ident;
        let arg = quote_spanned!(ty.span()=> #decoder.arg::<#ty>(#key));
        quote!(let #ident = #arg;)
    });
    let tried = sent(tool).map(|param| param.ident);
    let keys = sent(tool).map(|param| &param.key);
    let bindings = sent(tool).map(|param| param.ident);
    let partials = tool.params.iter().filter_map(|param| {
        let ident = param.ident;
        if param.context {
            return Some(quote!(let #ident = #state.context();));
        }
        let item = param.partial_item?;
        Some(quote_spanned!(item.span()=> let #ident = #state.partial(#te::partial_source::<#item>);))
    });
    let idents = tool.params.iter().map(|param| param.ident);
    let run_attempt = quote!(#run_call(#query, #(#idents),*));
    // The success type's `Output` bound is reported at the return type.
    let finish = match (tool.is_async, owned) {
        (false, _) => {
            let ready = quote_spanned!(output.span()=> #te::ready::<#ok>);
            quote!(#ready(#run_attempt, #info))
        }
        (true, None) => {
            let json_of = quote_spanned!(output.span()=> #te::json_of::<#ok, _>);
            quote!(#json_of(#run_attempt, #info))
        }
        // The future owns the state it borrows from: an `async` block.
        (true, Some(_)) => {
            let to_json = quote_spanned!(output.span()=> <#ok as #te::Output>::to_json);
            quote!(::std::boxed::Box::pin(async move { #to_json(#run_attempt.await?, #info) }))
        }
    };
    quote! {
        use ::tool_envelope::__private as #te;
        #te::serve(#arguments, #state, #info, &[#(#keys),*], |#decoder| {
            #(#decodes)*
            ::core::option::Option::Some((#(#tried?,)*))
        }, move |#query, (#(#bindings,)*)| {
            #(#partials)*
            #finish
        })
    }
}

/// A free function's companion type and its `impl ServableTool`: every
/// requirement of serving — `Deserialize + JsonSchema` arguments, a
/// `Serialize` result — is checked here, at the user's types.
pub(super) fn free_companion(
    attr: &ToolAttr,
    tool: &ToolFn,
    locals: &Locals,
    names: &Names,
) -> TokenStream {
    let ident = tool.ident();
    let cfgs = carried(&tool.item.attrs, CFG);
    let companion = companion_type(tool);
    let Locals {
        arguments, state, ..
    } = locals;
    let info_const = &names.info;
    let run_name = &names.run;
    let definition = definition(tool, &quote!(#info_const), attr, locals);
    let attempt = attempt(tool, locals, &quote!(#info_const), &quote!(#run_name), None);
    let cfgs_impl = cfgs.clone();
    quote! {
        #(#cfgs)*
        #companion
        #(#cfgs_impl)*
        impl ::tool_envelope::__private::ServableTool for #ident {
            const TOOL: ::tool_envelope::__private::FreeTool = ::tool_envelope::__private::FreeTool {
                definition: || #definition,
                call: |#arguments, #state| { #attempt },
            };
        }
    }
}

/// A served method's hidden function, which its `#[tools]` block lists.
pub(super) fn served_method(
    attr: &ToolAttr,
    tool: &ToolFn,
    locals: &Locals,
    names: &Names,
) -> TokenStream {
    let Locals {
        arguments,
        state,
        this,
        ..
    } = locals;
    let info_const = &names.info;
    let run_name = &names.run;
    let info = quote!(Self::#info_const);
    let definition = definition(tool, &info, attr, locals);
    let (run_call, owned) = match tool.receiver {
        Some(_) => (quote!(#this.#run_name), Some(this)),
        None => (quote!(Self::#run_name), None),
    };
    let attempt = attempt(tool, locals, &info, &run_call, owned);
    let cfgs = carried(&tool.item.attrs, CFG);
    let name = method_tool_name(tool.ident());
    quote! {
        #(#cfgs)*
        #[doc(hidden)]
        fn #name() -> ::tool_envelope::__private::MethodTool<Self> {
            ::tool_envelope::__private::MethodTool {
                definition: || #definition,
                call: |#this, #arguments, #state| { #attempt },
            }
        }
    }
}
