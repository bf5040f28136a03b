//! Code generation for `#[tool]`.
//!
//! A tool that a client can call (owned arguments, no generics) becomes three
//! items: the function as the user wrote it, which captures its arguments and
//! calls the second, a hidden *run* function holding the body, which takes
//! its `attempted_query` from either source — the typed arguments or the JSON
//! of an MCP `tools/call`, which is never serialized again — and the serving
//! parts: the MCP definition and the JSON dispatcher. Any other tool is one
//! function.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, ReceiverKind, ReturnType};

use crate::attr::ToolAttr;
use crate::item::FnItem;
use crate::signature::{ToolFn, doc_text};
use crate::valid::{Role, role};

/// The hygienic names of the generated locals.
struct Locals {
    info: Ident,
    meta: Ident,
    query: Ident,
    partial: Ident,
    writer: Ident,
    ret: Ident,
    arguments: Ident,
    context: Ident,
    decoder: Ident,
    value: Ident,
    this: Ident,
}

impl Locals {
    fn new() -> Self {
        let local = |name: &str| Ident::new(name, Span::mixed_site());
        Locals {
            info: local("__TOOL_ENVELOPE_INFO"),
            meta: local("__TOOL_ENVELOPE_META"),
            query: local("__tool_envelope_query"),
            partial: local("__tool_envelope_partial"),
            writer: local("__tool_envelope_writer"),
            ret: local("__tool_envelope_ret"),
            arguments: local("__tool_envelope_arguments"),
            context: local("__tool_envelope_context"),
            decoder: local("__tool_envelope_decoder"),
            value: local("__tool_envelope_value"),
            this: local("__tool_envelope_this"),
        }
    }
}

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

/// The local `Vec` of a `#[tools]` block's `ToolSpec`s, which each served
/// method's [`Expanded::spec`] pushes to.
pub fn specs_local() -> Ident {
    Ident::new("__tool_envelope_specs", Span::mixed_site())
}

/// The expansion of one tool.
pub struct Expanded {
    /// The items to emit in place of the function.
    pub items: TokenStream,
    /// For a served method: the statement pushing its `ToolSpec` to
    /// [`specs_local`], under the method's `cfg`s.
    pub spec: Option<TokenStream>,
}

/// The tool's name: `#[tool(name = "...")]` or the function's own.
pub fn tool_name(attr: &ToolAttr, tool: &ToolFn) -> String {
    match &attr.name {
        Some(name) => name.value(),
        None => tool.ident().unraw().to_string(),
    }
}

/// The tool's description: `#[tool(description = "...")]` or the doc comment.
fn description(attr: &ToolAttr, tool: &ToolFn) -> String {
    match &attr.description {
        Some(description) => description.value(),
        None => doc_text(&tool.item.attrs),
    }
}

/// Expands `#[tool]` on `tool` at `place`. `unservable` is why a free function
/// cannot be served, if it cannot.
pub fn tool(attr: &ToolAttr, tool: &ToolFn, place: Place) -> Expanded {
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
            let companion = companion_type(tool);
            items.extend(quote!(#(#cfgs)* #companion));
        }
        return Expanded { items, spec: None };
    }

    let run_name = format_ident!("__tool_envelope_run_{}", tool.ident().unraw());
    let mut items = wrapper(attr, tool, &locals, &run_name);
    items.extend(run(attr, tool, &locals, &run_name));
    let spec = match place {
        Place::Free => {
            let companion = companion_type(tool);
            let companion_impl = companion_impl(attr, tool, &locals, &run_name);
            items.extend(quote!(#(#cfgs)* #companion));
            items.extend(quote!(#(#cfgs)* #companion_impl));
            None
        }
        _ => {
            let (functions, spec) = served_method(attr, tool, &locals, &run_name);
            items.extend(functions);
            Some(spec)
        }
    };
    Expanded { items, spec }
}

/// The user's attributes named `names`: a `cfg` must remove every generated
/// item with the function, and a lint level must reach the body wherever the
/// body is generated.
fn carried<'a>(
    attrs: &'a [syn::Attribute],
    names: &'a [&'a str],
) -> impl Iterator<Item = &'a syn::Attribute> + Clone {
    attrs
        .iter()
        .filter(move |attr| names.iter().any(|name| attr.path().is_ident(name)))
}

/// Attributes that follow the function into every generated item.
const CFG: &[&str] = &["cfg"];

/// Attributes that follow the body into the run function.
const BODY: &[&str] = &[
    "cfg", "cfg_attr", "allow", "expect", "warn", "deny", "forbid",
];

/// `static INFO: ToolInfo`: what the call path knows about the tool.
fn info_static(attr: &ToolAttr, tool: &ToolFn, locals: &Locals) -> TokenStream {
    let info = &locals.info;
    let name = tool_name(attr, tool);
    let idempotent = attr.is_idempotent();
    let (timeout, needs_tokio) = match &attr.timeout {
        Some((ms, lit)) => (
            quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#ms))),
            Some(
                quote_spanned!(lit.span()=> ::tool_envelope::__private::timeout_needs_the_tokio_feature();),
            ),
        ),
        None => (quote!(::core::option::Option::None), None),
    };
    quote! {
        #needs_tokio
        static #info: ::tool_envelope::__private::ToolInfo = ::tool_envelope::__private::ToolInfo {
            name: ::std::borrow::Cow::Borrowed(#name),
            idempotent: #idempotent,
            timeout: #timeout,
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
            Role::Captured if !mentions_impl(param.ty) => {
                let ty = param.ty;
                quote_spanned!(param.ty.span()=> #writer.arg::<#ty>(#key, &#ident);)
            }
            Role::Captured => quote_spanned!(param.ty.span()=> #writer.arg(#key, &#ident);),
            Role::Redacted => quote!(#writer.redacted(#key);),
            Role::Skipped | Role::Partial => quote!(),
        }
    });
    quote! {
        ::tool_envelope::__private::Query::Captured(::tool_envelope::__private::capture(&mut |#writer| {
            #(#captures)*
        }))
    }
}

/// Whether `ty` contains an `impl Trait`.
fn mentions_impl(ty: &syn::Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            proc_macro2::TokenTree::Ident(ident) => ident == "impl",
            proc_macro2::TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    walk(quote!(#ty))
}

/// The body of the call, once `locals.query` holds the query: the guard, the
/// partial collector, and the body run and classified. An async body ends in
/// the call's future, awaited when `awaited` (in an `async fn`) and returned
/// otherwise (from the run function, which is not `async`).
fn call_body(attr: &ToolAttr, tool: &ToolFn, locals: &Locals, awaited: bool) -> TokenStream {
    let Locals {
        info,
        query,
        partial,
        ret,
        ..
    } = locals;
    let output = tool.output;
    let info_static = info_static(attr, tool, locals);

    let check = attr.guard.as_ref().map(|guard| {
        quote_spanned! {guard.span()=>
            ::tool_envelope::__private::check_guard(&(#guard), &#info, #query)
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
        (None, true) => quote! {
            let #query = ::core::result::Result::<_, ::tool_envelope::ErrorEnvelope>::Ok(#query);
        },
        (None, false) => quote!(),
    };

    let partial_source = match tool.params.iter().find(|p| p.partial_item.is_some()) {
        Some(param) => {
            let ident = param.ident;
            let item = param.partial_item.expect("found by partial_item");
            quote_spanned!(item.span()=> ::tool_envelope::__private::partial_source::<#item>(&#ident))
        }
        None => quote!(()),
    };

    let block = &tool.item.body;
    let fake_return = quote! {
        if let ::core::option::Option::Some(#ret) = ::core::option::Option::None::<#output> {
            #[allow(unreachable_code)]
            return #ret;
        }
    };
    // A return type that is not a `Result` is reported at it, once. The `E: ToolError` bound of the call is reported at the error type
    // when the signature names it (`Result<T, DbError>`), and at the return
    // type otherwise (`io::Result<T>`, where it may also not be a `Result`).
    let error_span = crate::signature::error_type(output).map_or(output.span(), Spanned::span);
    let into_result = quote_spanned! {error_span=>
        <#output as ::tool_envelope::__private::IntoToolResult>::into_result
    };
    let call_async = quote_spanned!(error_span=> ::tool_envelope::__private::call_async);
    let call_sync = quote_spanned!(error_span=> ::tool_envelope::__private::call_sync);
    let call = if tool.is_async {
        let await_ = awaited.then(|| quote!(.await));
        quote! {
            #call_async(&#info, #query, #partial, async move {
                #fake_return
                #block
            }, #into_result)
            #await_
        }
    } else {
        quote! {
            #call_sync(&#info, #query, #partial, move || {
                #fake_return
                #block
            }, #into_result)
        }
    };
    quote! {
        #info_static
        #guard
        let #partial = #partial_source;
        #call
    }
}

/// `OkOf<Ret>`, spanned at the return type so that a return type that is not
/// a `Result` is reported there, once, wherever it is named.
fn ok_of(tool: &ToolFn) -> TokenStream {
    let output = tool.output;
    quote_spanned!(output.span()=> ::tool_envelope::__private::OkOf<#output>)
}

/// `ErrOf<Ret>`, spanned like [`ok_of`].
fn err_of(tool: &ToolFn) -> TokenStream {
    let output = tool.output;
    quote_spanned!(output.span()=> ::tool_envelope::__private::ErrOf<#output>)
}

/// The return type every expanded tool function has.
fn result_type(tool: &ToolFn) -> syn::Type {
    let output = tool.output;
    syn::Type::Verbatim(quote_spanned! {output.span()=>
        ::tool_envelope::ToolResult<::tool_envelope::__private::OkOf<#output>>
    })
}

/// A tool that is only called directly: one function that captures and runs.
fn single(attr: &ToolAttr, tool: &ToolFn, locals: &Locals) -> TokenStream {
    let FnItem {
        attrs, vis, sig, ..
    } = tool.item;
    let mut sig = sig.clone();
    sig.output = ReturnType::Type(Default::default(), Box::new(result_type(tool)));
    let query = &locals.query;
    let capture = capture(attr, tool, locals);
    let body = call_body(attr, tool, locals, true);
    quote! {
        #(#attrs)*
        #vis #sig {
            let #query = #capture;
            #body
        }
    }
}

/// The function as the user wrote it: captures its typed arguments and hands
/// them to the run function.
fn wrapper(attr: &ToolAttr, tool: &ToolFn, locals: &Locals, run_name: &Ident) -> TokenStream {
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
    let target = match tool.receiver {
        Some(_) => quote!(self.#run_name),
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
fn run(attr: &ToolAttr, tool: &ToolFn, locals: &Locals, run_name: &Ident) -> TokenStream {
    let FnItem { attrs, sig, .. } = tool.item;
    let carried = carried(attrs, BODY);
    let query = &locals.query;
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    let mut inputs: Vec<TokenStream> = Vec::new();
    let mut params = sig.inputs.iter();
    let output = result_type(tool);
    if !tool.is_async {
        if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
            inputs.push(quote!(#receiver));
            params.next();
        }
        inputs.push(quote!(#query: ::tool_envelope::__private::Query<'_>));
        inputs.extend(params.map(|param| quote!(#param)));
        let body = call_body(attr, tool, locals, false);
        return quote! {
            #(#carried)*
            #[doc(hidden)]
            #[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
            fn #run_name #generics (#(#inputs),*) -> #output #where_clause {
                #body
            }
        };
    }
    let lifetime = syn::Lifetime::new("'__tool_envelope", Span::call_site());
    let mut outlives = Vec::new();
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        let attrs = &receiver.attrs;
        match &receiver.kind {
            ReceiverKind::Reference(_, Some(named), mutability) => {
                outlives.push(quote!(#named: #lifetime));
                inputs.push(quote!(#(#attrs)* &#named #mutability self));
            }
            ReceiverKind::Reference(_, None, mutability) => {
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
    let predicates = where_clause.iter().flat_map(|clause| &clause.predicates);
    let body = call_body(attr, tool, locals, false);
    quote! {
        #(#carried)*
        #[doc(hidden)]
        #[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
        fn #run_name<#lifetime, #params>(#(#inputs),*)
            -> impl ::core::future::Future<Output = #output> + #lifetime
        where
            #(#outlives,)*
            #(#predicates,)*
        {
            #body
        }
    }
}

/// The companion type named like the free function: `ToolSet::tool::<name>()`
/// takes it. It lives in the type namespace only, next to the function.
fn companion_type(tool: &ToolFn) -> TokenStream {
    let vis = &tool.item.vis;
    let ident = tool.ident();
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #ident<__ToolEnvelopeMarker = ()> {
            #[doc(hidden)]
            pub __tool_envelope: ::core::marker::PhantomData<fn() -> __ToolEnvelopeMarker>,
        }
    }
}

/// The parameters a client sends: all but the `Partial` collector.
fn sent<'t, 'a>(tool: &'t ToolFn<'a>) -> impl Iterator<Item = &'t crate::signature::Param<'a>> {
    tool.params
        .iter()
        .filter(|param| param.partial_item.is_none())
}

/// The body of the definition function. `marker` is the first element of the
/// `Arg` pairs: a type parameter to defer the checks, or `()`.
fn definition_body(
    attr: &ToolAttr,
    tool: &ToolFn,
    locals: &Locals,
    marker: &TokenStream,
) -> TokenStream {
    let meta = &locals.meta;
    let ok = ok_of(tool);
    let err = err_of(tool);
    let name = tool_name(attr, tool);
    let title = match &attr.title {
        Some(title) => quote!(::core::option::Option::Some(#title)),
        None => quote!(::core::option::Option::None),
    };
    let text = description(attr, tool);
    let flag = |flag: &Option<crate::attr::Flag>, default: bool| flag.map_or(default, |f| f.value);
    let read_only = flag(&attr.read_only, false);
    let destructive = flag(&attr.destructive, true);
    let idempotent = attr.is_idempotent();
    let open_world = flag(&attr.open_world, true);
    let describe_failures = attr.describe_failures;
    let redacted = redacted_keys(attr, tool);
    let params = sent(tool).map(|param| {
        let key = &param.key;
        let ty = param.ty;
        let docs = &param.docs;
        quote_spanned! {ty.span()=>
            ::tool_envelope::mcp::ParamSpec {
                name: #key,
                description: #docs,
                schema: <(#marker, #ty) as ::tool_envelope::mcp::Arg>::schema,
                required: <(#marker, #ty) as ::tool_envelope::mcp::Arg>::required,
            }
        }
    });
    let missing_description = text.is_empty().then(|| {
        let span = tool.ident().span();
        let note = format!(
            "the tool `{name}` has no description: MCP clients show it to the model, so add a doc comment \
             (or `#[tool(description = \"...\")]`)"
        );
        let use_it = quote_spanned!(span=> let _ = tool_without_description;);
        quote! {
            #[deprecated(note = #note)]
            #[allow(non_camel_case_types)]
            struct tool_without_description;
            #use_it
        }
    });
    quote! {
        #missing_description
        static #meta: ::tool_envelope::mcp::ToolMeta = ::tool_envelope::mcp::ToolMeta {
            name: #name,
            title: #title,
            description: #text,
            read_only: #read_only,
            destructive: #destructive,
            idempotent: #idempotent,
            open_world: #open_world,
            describe_failures: #describe_failures,
            redacted: &[#(#redacted),*],
        };
        #[allow(unused_imports)]
        use ::tool_envelope::__private::{ViaFailures as _, ViaNoFailures as _, ViaNoSchema as _, ViaSchema as _};
        ::tool_envelope::mcp::build(
            &#meta,
            &[#(#params),*],
            (&::tool_envelope::__private::SchemaProbe::<#ok>::new()).output_schema(),
            (&::tool_envelope::__private::FailureProbe::<#err>::new()).failure_modes(),
        )
    }
}

/// The body of the call function: decode the JSON arguments, run one attempt,
/// and the success value as JSON. `run_call` names the run function;
/// `owns_future` says that the run's future borrows nothing of the call
/// function's own (a free function: no receiver to keep alive).
fn call_fn_body(
    attr: &ToolAttr,
    tool: &ToolFn,
    locals: &Locals,
    marker: &TokenStream,
    run_call: &TokenStream,
    owns_future: bool,
) -> TokenStream {
    let Locals {
        info,
        arguments,
        context,
        decoder,
        value,
        ..
    } = locals;
    let ok = ok_of(tool);
    let info_static = info_static(attr, tool, locals);
    let decodes = sent(tool).map(|param| {
        let ident = param.ident;
        let key = &param.key;
        let ty = param.ty;
        quote_spanned!(ty.span()=> let #ident = #decoder.arg::<(#marker, #ty)>(#key);)
    });
    let keys = sent(tool).map(|param| &param.key);
    let unwraps = sent(tool).map(|param| {
        let ident = param.ident;
        quote! {
            let ::core::option::Option::Some(#ident) = #ident else {
                ::core::unreachable!("every argument decoded")
            };
        }
    });
    let partials = tool.params.iter().filter_map(|param| {
        let ident = param.ident;
        let item = param.partial_item?;
        Some(quote!(let #ident = #context.partial::<(#marker, #item)>();))
    });
    let idents = tool.params.iter().map(|param| param.ident);
    let to_json = quote!(<(#marker, #ok) as ::tool_envelope::__private::Output>::to_json);
    let run_attempt = quote!(#run_call(#context.query(#arguments), #(#idents),*));
    // Decoding, the same in both shapes; `on_error` leaves with the envelope.
    let decode = |on_error: TokenStream| {
        quote! {
            #info_static
            let mut #decoder = ::tool_envelope::mcp::Decoder::new(#arguments, &#info, #context);
            #(#decodes)*
            if let ::core::result::Result::Err(#value) = #decoder.finish(&[#(#keys),*]) {
                #on_error
            }
            #(#unwraps)*
            #(#partials)*
        }
    };
    if !owns_future {
        // The future owns the receiver it borrows from: an `async` block.
        let await_ = tool.is_async.then(|| quote!(.await));
        let decode = decode(quote!(return ::core::result::Result::Err(#value);));
        return quote! {
            ::std::boxed::Box::pin(async move {
                #decode
                let #value = #run_attempt #await_?;
                #to_json(#value, &#info)
            })
        };
    }
    // Decoded at once; the future is the run's own, its success made JSON by
    // a named future shared by all tools — no `async` block per tool.
    let decode = decode(quote! {
        return ::tool_envelope::__private::json_ready(::core::result::Result::Err(#value));
    });
    let finish = if tool.is_async {
        quote!(::tool_envelope::__private::json_of(#run_attempt, #to_json, &#info))
    } else {
        quote! {
            ::tool_envelope::__private::json_ready(
                #run_attempt.and_then(|#value| #to_json(#value, &#info)),
            )
        }
    };
    quote! {
        #decode
        #finish
    }
}

/// `impl ServableTool` for a free function's companion. Every requirement of
/// serving — `Deserialize + JsonSchema` arguments, a `Serialize` result — is a
/// where-clause on the marker, checked only where the tool is served.
fn companion_impl(
    attr: &ToolAttr,
    tool: &ToolFn,
    locals: &Locals,
    run_name: &Ident,
) -> TokenStream {
    let ident = tool.ident();
    let ok = ok_of(tool);
    let Locals {
        arguments, context, ..
    } = locals;
    let marker = quote!(__ToolEnvelopeMarker);
    let arg_bounds = sent(tool).map(|param| {
        let ty = param.ty;
        quote!((#marker, #ty): ::tool_envelope::mcp::Arg<Value = #ty>,)
    });
    let partial_bounds = tool.params.iter().filter_map(|param| {
        let item = param.partial_item?;
        Some(quote!((#marker, #item): ::tool_envelope::mcp::PartialArg<Item = #item>,))
    });
    let definition = definition_body(attr, tool, locals, &marker);
    let call = call_fn_body(attr, tool, locals, &marker, &quote!(#run_name), true);
    quote! {
        impl<#marker: 'static> ::tool_envelope::mcp::ServableTool for #ident<#marker>
        where
            #(#arg_bounds)*
            #(#partial_bounds)*
            (#marker, #ok): ::tool_envelope::__private::Output<Value = #ok>,
        {
            fn definition() -> ::tool_envelope::mcp::ToolDefinition {
                #definition
            }

            fn call<'a>(
                #arguments: &'a ::tool_envelope::__private::serde_json::Map<::std::string::String, ::tool_envelope::__private::serde_json::Value>,
                #context: &'a ::tool_envelope::mcp::CallContext,
            ) -> ::tool_envelope::mcp::BoxFuture<'a, ::tool_envelope::ToolResult<::tool_envelope::__private::serde_json::Value>> {
                #call
            }
        }
    }
}

/// The hidden definition and call functions of a served method, and its
/// `ToolSpec`.
fn served_method(
    attr: &ToolAttr,
    tool: &ToolFn,
    locals: &Locals,
    run_name: &Ident,
) -> (TokenStream, TokenStream) {
    let base = tool.ident().unraw();
    let definition_name = format_ident!("__tool_envelope_definition_{}", base);
    let call_name = format_ident!("__tool_envelope_call_{}", base);
    let Locals {
        arguments,
        context,
        this,
        ..
    } = locals;
    let marker = quote!(());
    let definition = definition_body(attr, tool, locals, &marker);
    let run_call = match tool.receiver {
        Some(_) => quote!(#this.#run_name),
        None => quote!(Self::#run_name),
    };
    let call = call_fn_body(attr, tool, locals, &marker, &run_call, false);
    let cfgs = carried(&tool.item.attrs, CFG);
    let cfgs_call = cfgs.clone();
    let functions = quote! {
        #(#cfgs)*
        #[doc(hidden)]
        fn #definition_name() -> ::tool_envelope::mcp::ToolDefinition {
            #definition
        }

        #(#cfgs_call)*
        #[doc(hidden)]
        #[allow(unused_variables)]
        fn #call_name<'a>(
            #this: ::std::sync::Arc<Self>,
            #arguments: &'a ::tool_envelope::__private::serde_json::Map<::std::string::String, ::tool_envelope::__private::serde_json::Value>,
            #context: &'a ::tool_envelope::mcp::CallContext,
        ) -> ::tool_envelope::mcp::BoxFuture<'a, ::tool_envelope::ToolResult<::tool_envelope::__private::serde_json::Value>> {
            #call
        }
    };
    let specs = specs_local();
    let cfgs = carried(&tool.item.attrs, CFG);
    let spec = quote! {
        #(#cfgs)*
        #specs.push(::tool_envelope::mcp::ToolSpec {
            definition: Self::#definition_name,
            call: Self::#call_name,
        });
    };
    (functions, spec)
}

/// The tokens emitted when the macro found errors: the errors, and the function
/// as written, so that the rest of the crate still type-checks.
///
/// What the errors already said is not said again by rustc: a `const fn`
/// is emitted without `const` (its body would fail const evaluation), a
/// variadic one without its `...`.
pub fn fallback(error: syn::Error, item: &FnItem) -> TokenStream {
    let error = error.into_compile_error();
    let mut item = item.clone();
    item.sig.constness = None;
    item.sig.variadic = None;
    quote! {
        #error
        #item
    }
}
