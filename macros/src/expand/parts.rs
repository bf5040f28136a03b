//! What the expansion's pieces share: the hygienic names of its locals and
//! hidden items, the tool's name and description, the attributes that
//! follow the function into what is generated, and the types it names.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::attr::ToolAttr;
use crate::docs::{DocPart, doc_parts, doc_text};
use crate::signature::{ToolFn, error_type, ok_type};

/// The hygienic names of the generated locals.
pub(super) struct Locals {
    /// `::tool_envelope::__private`, aliased inside generated bodies so that
    /// the expansion stays short.
    pub(super) te: Ident,
    pub(super) info: Ident,
    pub(super) query: Ident,
    pub(super) writer: Ident,
    pub(super) ret: Ident,
    pub(super) arguments: Ident,
    pub(super) state: Ident,
    pub(super) decoder: Ident,
    pub(super) this: Ident,
}

impl Locals {
    pub(super) fn new() -> Self {
        let local = |name: &str| Ident::new(name, Span::mixed_site());
        Locals {
            te: local("__te"),
            info: local("__info"),
            query: local("__query"),
            writer: local("__w"),
            ret: local("__ret"),
            arguments: local("__args"),
            state: local("__state"),
            decoder: local("__d"),
            this: local("__this"),
        }
    }
}

/// The name of the hidden function a served method's `#[tools]` block lists.
pub fn method_tool_name(method: &Ident) -> Ident {
    format_ident!("__tool_envelope_tool_{}", method.unraw())
}

/// The tool's name: `#[tool(name = "...")]` or the function's own.
pub fn tool_name(attr: &ToolAttr, tool: &ToolFn) -> String {
    match &attr.name {
        Some(name) => name.value(),
        None => tool.ident().unraw().to_string(),
    }
}

/// The tool's description, as the `&'static str` expression its `ToolInfo`
/// holds: `#[tool(description = "...")]` or the doc comment, where a
/// `#[doc = include_str!("...")]` is a part rustc expands (`concat!`), taken
/// as written; and whether it is surely empty.
pub(super) fn description(attr: &ToolAttr, tool: &ToolFn) -> (TokenStream, bool) {
    if let Some(description) = &attr.description {
        return (quote!(#description), description.value().is_empty());
    }
    let parts = doc_parts(&tool.item.attrs);
    if parts.iter().all(|part| matches!(part, DocPart::Text(_))) {
        let text = doc_text(&tool.item.attrs);
        let empty = text.is_empty();
        return (quote!(#text), empty);
    }
    // rustdoc joins a comment's attributes with a line break.
    let mut pieces = Vec::with_capacity(parts.len() * 2);
    for (at, part) in parts.iter().enumerate() {
        if at > 0 {
            pieces.push(quote!("\n"));
        }
        pieces.push(match part {
            DocPart::Text(text) => quote!(#text),
            DocPart::Macro(expr) => quote!(#expr),
        });
    }
    (quote!(::core::concat!(#(#pieces),*)), false)
}

/// The hidden items of a served tool.
pub(super) struct Names {
    pub(super) run: Ident,
    pub(super) info: Ident,
    /// Whether they are associated items, named through `Self::`.
    pub(super) in_impl: bool,
}

/// The user's attributes named `names`: a `cfg` must remove every generated
/// item with the function, and a lint level must reach the body wherever the
/// body is generated.
pub(super) fn carried<'a>(
    attrs: &'a [syn::Attribute],
    names: &'a [&'a str],
) -> impl Iterator<Item = &'a syn::Attribute> + Clone {
    attrs
        .iter()
        .filter(move |attr| names.iter().any(|name| attr.path().is_ident(name)))
}

/// Attributes that follow the function into every generated item.
pub(super) const CFG: &[&str] = &["cfg"];

/// Attributes that follow the body into the run function.
pub(super) const BODY: &[&str] = &[
    "cfg", "cfg_attr", "allow", "expect", "warn", "deny", "forbid",
];

/// The success type: `T` of a return type written `Result<T, ...>`, else
/// `OkOf<Ret>`, spanned at the return type so that a return type that is not
/// a `Result` is reported there, once.
pub(super) fn ok_ty(tool: &ToolFn) -> TokenStream {
    let output = tool.output;
    match ok_type(output) {
        Some(ok) => quote!(#ok),
        None => quote_spanned!(output.span()=> ::tool_envelope::__private::OkOf<#output>),
    }
}

/// The error type, like [`ok_ty`].
pub(super) fn err_ty(tool: &ToolFn) -> TokenStream {
    let output = tool.output;
    match error_type(output) {
        Some(error) => quote!(#error),
        None => quote_spanned!(output.span()=> ::tool_envelope::__private::ErrOf<#output>),
    }
}

/// The return type every expanded tool function has: `ToolResult<T>`, with
/// `T` as the user wrote it when the signature names it, so that rustdoc and
/// an IDE show `-> ToolResult<Vec<Order>>`.
pub(super) fn result_type(tool: &ToolFn) -> syn::Type {
    let output = tool.output;
    let ok = ok_ty(tool);
    syn::Type::Verbatim(quote_spanned!(output.span()=> ::tool_envelope::ToolResult<#ok>))
}
