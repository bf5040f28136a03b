//! Code generation for `#[tool]`.
//!
//! A tool that is only called from Rust becomes one function: the function as
//! the user wrote it, which captures its arguments, runs the body, and turns
//! its failure into an envelope. A tool that a client can call (owned
//! arguments, no generics, not `local`) becomes four small items: the
//! function as written, which captures its arguments and calls a hidden *run*
//! function holding the body; the run function, which takes its
//! `attempted_query` from either source — the typed arguments, or the JSON of
//! an MCP `tools/call`, never serialized again; the tool's static
//! description; and what serves it — a companion type for a free function,
//! a hidden associated function for a method of a `#[tools]` block. Every
//! path goes through `::tool_envelope::__private`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, ReceiverKind, ReturnType};

use crate::attr::ToolAttr;
use crate::item::FnItem;
use crate::signature::{ToolFn, error_type};
use crate::valid::{Role, role};

mod parts;
mod serve;

use parts::{BODY, CFG, Locals, Names, carried, description, result_type};
pub use parts::{method_tool_name, tool_name};
use serve::{companion_type, free_companion, served_method};

/// Where the tool is, which decides what is generated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A free function: served through a companion type of the same name.
    Free,
    /// A method of an ordinary `impl` block: wrapped only.
    Method,
    /// A method of a `#[tools]` impl block: wrapped and served.
    ServedMethod,
}

/// Expands `#[tool]` on `tool` at `place`.
pub fn tool(attr: &ToolAttr, tool: &ToolFn, place: Place) -> TokenStream {
    let locals = Locals::new();
    let served = match place {
        Place::Free => {
            !attr.local
                && tool
                    .unservable(|param| role(attr, param) == Role::Skipped)
                    .is_none()
                && !crate::signature::never_a_result(tool.output)
        }
        Place::Method => false,
        Place::ServedMethod => true,
    };
    let cfgs: Vec<_> = carried(&tool.item.attrs, CFG).collect();
    if !served {
        let mut items = single(attr, tool, &locals);
        if place == Place::Free && !attr.local {
            // So that serving it says why it cannot be served.
            let companion = companion_type(tool);
            items.extend(quote!(#(#cfgs)* #companion));
        }
        return items;
    }

    let base = tool.ident().unraw();
    let names = Names {
        run: format_ident!("__tool_envelope_run_{}", base),
        info: format_ident!("__TOOL_ENVELOPE_INFO_{}", base),
        in_impl: place != Place::Free,
    };
    let mut items = wrapper(attr, tool, &locals, &names);
    items.extend(run(attr, tool, &locals, &names));
    items.extend(info_const(attr, tool, &names.info));
    items.extend(match place {
        Place::Free => free_companion(attr, tool, &locals, &names),
        _ => served_method(attr, tool, &locals, &names),
    });
    items
}

/// A constant `&ToolInfo` named `name`: everything the call path and the
/// MCP definition know about the tool, written once.
fn info_const(attr: &ToolAttr, tool: &ToolFn, name: &Ident) -> TokenStream {
    let tool_name = tool_name(attr, tool);
    let title = attr.title.as_ref().map(|title| quote!(.with_title(#title)));
    let (text, _) = description(attr, tool);
    let flag = |flag: &Option<crate::attr::Flag>, default: bool| flag.map_or(default, |f| f.value);
    // Named, as the runtime names them: `ToolInfo::READ_ONLY | ToolInfo::IDEMPOTENT`.
    let flags: Vec<TokenStream> = [
        (flag(&attr.read_only, false), quote!(READ_ONLY)),
        (flag(&attr.destructive, true), quote!(DESTRUCTIVE)),
        (attr.is_idempotent(), quote!(IDEMPOTENT)),
        (flag(&attr.open_world, true), quote!(OPEN_WORLD)),
        (attr.describe_failures, quote!(DESCRIBE_FAILURES)),
        (attr.guard.is_some(), quote!(GUARDED)),
    ]
    .into_iter()
    .filter(|(set, _)| *set)
    .map(|(_, name)| quote!(::tool_envelope::__private::ToolInfo::#name))
    .collect();
    let flags = match flags.is_empty() {
        true => quote!(0),
        false => quote!(#(#flags)|*),
    };
    let redacted = redacted_keys(attr, tool);
    let (timeout, needs_tokio) = match &attr.timeout {
        Some((ms, lit)) => (
            Some(quote!(.with_timeout_ms(#ms))),
            Some(
                quote_spanned!(lit.span()=> ::tool_envelope::__private::timeout_needs_the_tokio_feature();),
            ),
        ),
        None => (None, None),
    };
    let cfgs = carried(&tool.item.attrs, CFG);
    quote! {
        #(#cfgs)*
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        const #name: &::tool_envelope::__private::ToolInfo = {
            #needs_tokio
            &::tool_envelope::__private::ToolInfo::new(#tool_name, #text, #flags, &[#(#redacted),*])#title #timeout
        };
    }
}

fn redacted_keys(attr: &ToolAttr, tool: &ToolFn) -> Vec<String> {
    tool.params
        .iter()
        .filter(|param| role(attr, param) == Role::Redacted)
        .map(|param| param.key.clone())
        .collect()
}

/// The capture of the typed arguments, before the body runs.
fn capture(attr: &ToolAttr, tool: &ToolFn, locals: &Locals) -> TokenStream {
    let writer = &locals.writer;
    let captures = tool.params.iter().map(|param| {
        let ident = param.ident;
        let key = &param.key;
        match role(attr, param) {
            // Named in the turbofish, the type is where a missing
            // `Serialize` is reported; `impl Trait` cannot be named there.
            Role::Captured if !param.impl_trait => {
                let ty = param.ty;
                quote_spanned! {param.ty.span()=>
                    #writer.arg::<#ty>(#key, &#ident);
                }
            }
            // A `Secret` in it notes its value as it is serialized.
            Role::Captured => quote_spanned! {param.ty.span()=>
                #writer.arg(#key, &#ident);
            },
            // The value is never written, but noted when it can be: a
            // failure that quotes it is masked.
            Role::Redacted if param.secret => quote! {
                #writer.redacted(#key);
                (&::tool_envelope::__private::SecretProbe(&#ident)).note_secret(#writer);
            },
            Role::Redacted => quote! {
                #writer.redacted(#key);
                (&::tool_envelope::__private::SecretProbe(&#ident)).note_redacted(#writer);
            },
            Role::Skipped | Role::Partial | Role::Context => quote!(),
        }
    });
    quote! {
        ::tool_envelope::__private::captured(&mut |#writer| {
            #[allow(unused_imports)]
            use ::tool_envelope::__private::probe::*;
            #(#captures)*
        })
    }
}

/// The body of the call, once `locals.query` holds the query and
/// `locals.info` the tool's description: the guard, the partial collector,
/// and the body run and classified. An async body ends in the call's future,
/// awaited when `awaited` (in an `async fn`) and returned otherwise (from the
/// run function, which is not `async`).
fn call_body(attr: &ToolAttr, tool: &ToolFn, locals: &Locals, awaited: bool) -> TokenStream {
    let Locals {
        info, query, ret, ..
    } = locals;
    let output = tool.output;

    let check = attr.guard.as_ref().map(|guard| {
        quote_spanned! {guard.span()=>
            ::tool_envelope::__private::check_guard(&(#guard), #info, #query)
        }
    });
    // A sync body returns the guard's envelope; an async one hands the
    // verdict to its future.
    let guard = match (&check, tool.is_async) {
        (Some(check), false) => quote! {
            let #query = match #check {
                ::core::result::Result::Ok(#query) => #query,
                ::core::result::Result::Err(#ret) => return ::core::result::Result::Err(#ret),
            };
        },
        (Some(check), true) => quote!(let #query = #check;),
        (None, _) => quote!(),
    };

    let partial_arg = match tool.params.iter().find(|p| p.partial_item.is_some()) {
        Some(param) => {
            let ident = param.ident;
            let item = param.partial_item.expect("found by partial_item");
            quote_spanned!(item.span()=> ::tool_envelope::__private::partial_source::<#item>(&#ident))
        }
        None => quote!(()),
    };

    let block = &tool.item.body;
    // A return type that is not a `Result` is reported at it, once. The
    // `E: ToolError` bound of the call is reported at the error type when the
    // signature names it (`Result<T, DbError>`), and at the return type
    // otherwise (`io::Result<T>`, where it may also not be a `Result`).
    let error_span = error_type(output).map_or(output.span(), Spanned::span);
    let into_result = quote_spanned! {error_span=>
        <#output as ::tool_envelope::__private::IntoToolResult>::into_result
    };
    let call_async = quote_spanned!(error_span=> ::tool_envelope::__private::call_async);
    let call_sync = quote_spanned!(error_span=> ::tool_envelope::__private::call_sync);
    // The body's own return type, pinned so that `?` converts as written: the
    // closure's for a sync body; an unreachable `return` for an async block,
    // which cannot name it (tracing's and async-trait's trick).
    let call = if tool.is_async {
        let await_ = awaited.then(|| quote!(.await));
        quote! {
            #call_async(#info, #query, #partial_arg, async move {
                if let ::core::option::Option::Some(#ret) = ::core::option::Option::None::<#output> {
                    #[allow(unreachable_code)]
                    return #ret;
                }
                #block
            }, #into_result) #await_
        }
    } else {
        quote!(#call_sync(#info, #query, #partial_arg, move || -> #output #block, #into_result))
    };
    quote! {
        #guard
        #call
    }
}

/// A tool that is only called directly: one function that captures and runs.
fn single(attr: &ToolAttr, tool: &ToolFn, locals: &Locals) -> TokenStream {
    let FnItem {
        attrs, vis, sig, ..
    } = tool.item;
    let mut sig = sig.clone();
    sig.output = ReturnType::Type(Default::default(), Box::new(result_type(tool)));
    let Locals { query, info, .. } = locals;
    let capture = capture(attr, tool, locals);
    let body = call_body(attr, tool, locals, true);
    let info_name = Ident::new("INFO", Span::mixed_site());
    let info_item = info_const(attr, tool, &info_name);
    // The constant in a block of its own: an item in the function's block
    // would be seen by its body, over a constant of the user's named alike.
    quote! {
        #(#attrs)*
        #vis #sig {
            let #info = { #info_item #info_name };
            let #query = #capture;
            #body
        }
    }
}

/// The function as the user wrote it: captures its typed arguments and hands
/// them to the run function.
fn wrapper(attr: &ToolAttr, tool: &ToolFn, locals: &Locals, names: &Names) -> TokenStream {
    let FnItem {
        attrs, vis, sig, ..
    } = tool.item;
    // An expectation is met in the body, which is the run function's.
    let attrs = attrs.iter().filter(|attr| !attr.path().is_ident("expect"));
    let mut sig = sig.clone();
    sig.output = ReturnType::Type(Default::default(), Box::new(result_type(tool)));
    // Plain bindings: the wrapper only forwards its arguments.
    for arg in &mut sig.inputs {
        if let FnArg::Typed(typed) = arg
            && let Pat::Ident(pat) = &mut *typed.pat
        {
            pat.mutability = None;
            pat.by_ref = None;
        }
    }
    let capture = capture(attr, tool, locals);
    let idents = tool.params.iter().map(|param| param.ident);
    let run_name = &names.run;
    let target = match tool.receiver {
        Some(_) => quote!(self.#run_name),
        None if names.in_impl => quote!(Self::#run_name),
        None => quote!(#run_name),
    };
    let await_ = tool.is_async.then(|| quote!(.await));
    quote! {
        #(#attrs)*
        #vis #sig {
            #target(#capture, #(#idents),*) #await_
        }
    }
}

/// The hidden run function: the body, with its query from either source.
///
/// For an async tool it is not an `async fn` but returns the call's future
/// itself, so that each tool compiles one state machine fewer. A served
/// tool's parameters are owned, so the future borrows only the receiver and
/// the query, for the one lifetime `'__tool_envelope`.
fn run(attr: &ToolAttr, tool: &ToolFn, locals: &Locals, names: &Names) -> TokenStream {
    let FnItem { attrs, sig, .. } = tool.item;
    let carried = carried(attrs, BODY);
    let Locals { query, info, .. } = locals;
    let run_name = &names.run;
    let info_fn = &names.info;
    let info_path = match names.in_impl {
        true => quote!(Self::#info_fn),
        false => quote!(#info_fn),
    };
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    let mut inputs: Vec<TokenStream> = Vec::new();
    let mut params = sig.inputs.iter();
    let output = result_type(tool);
    let body = call_body(attr, tool, locals, false);
    if !tool.is_async {
        if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
            inputs.push(quote!(#receiver));
            params.next();
        }
        inputs.push(quote!(#query: ::tool_envelope::__private::Query<'_>));
        inputs.extend(params.map(|param| quote!(#param)));
        return quote! {
            #(#carried)*
            #[doc(hidden)]
            #[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
            fn #run_name #generics (#(#inputs),*) -> #output #where_clause {
                let #info = #info_path;
                #body
            }
        };
    }
    let lifetime = syn::Lifetime::new("'__tool_envelope", Span::call_site());
    let mut outlives = Vec::new();
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        let attrs = &receiver.attrs;
        match &receiver.kind {
            // `&'_ self` names no lifetime: as `&self`.
            ReceiverKind::Reference(_, Some(named), mutability) if named.ident != "_" => {
                outlives.push(quote!(#named: #lifetime));
                inputs.push(quote!(#(#attrs)* &#named #mutability self));
            }
            ReceiverKind::Reference(_, _, mutability) => {
                inputs.push(quote!(#(#attrs)* &#lifetime #mutability self));
            }
            // Not servable, so never here; kept as written.
            _ => inputs.push(quote!(#receiver)),
        }
        params.next();
    }
    inputs.push(quote!(#query: ::tool_envelope::__private::Query<#lifetime>));
    inputs.extend(params.map(|param| quote!(#param)));
    let params = &generics.params;
    let predicates: Vec<_> = where_clause
        .iter()
        .flat_map(|clause| &clause.predicates)
        .collect();
    let where_ = (!outlives.is_empty() || !predicates.is_empty())
        .then(|| quote!(where #(#outlives,)* #(#predicates,)*));
    quote! {
        #(#carried)*
        #[doc(hidden)]
        #[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
        fn #run_name<#lifetime, #params>(#(#inputs),*)
            -> impl ::core::future::Future<Output = #output> + #lifetime
        #where_
        {
            let #info = #info_path;
            #body
        }
    }
}
