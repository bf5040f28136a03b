//! A borrowed, checked view of a `#[tool]` function's signature.

use syn::ext::IdentExt;
use syn::{
    Attribute, FnArg, GenericArgument, Ident, Pat, PathArguments, PathSegment, Receiver,
    ReceiverKind, ReturnType, Safety, Type, TypePath,
};

use crate::ctxt::Ctxt;
use crate::docs::doc_text;
use crate::item::FnItem;

/// The function, as the expansion sees it.
pub struct ToolFn<'a> {
    pub item: &'a FnItem,
    pub is_async: bool,
    pub receiver: Option<&'a Receiver>,
    pub params: Vec<Param<'a>>,
    /// The return type as written: any type implementing `IntoToolResult`.
    pub output: &'a Type,
}

/// A named parameter.
pub struct Param<'a> {
    /// The binding, as written (`r#type`).
    pub ident: &'a Ident,
    /// The key in `attempted_query` and `inputSchema` (`type`).
    pub key: String,
    pub ty: &'a Type,
    /// `Some(T)` when the parameter is a `Partial<T>` collector.
    pub partial_item: Option<&'a Type>,
    /// The parameter's doc comment, taken off the emitted function.
    pub docs: String,
    /// Whether the parameter is a `Secret<T>`, redacted without being named.
    pub secret: bool,
    /// Whether the parameter is the request's `ToolContext` (matched by the
    /// last path segment), which the tool set passes and a client never sends.
    pub context: bool,
    /// Whether its type mentions `impl Trait`, which cannot be named in a
    /// turbofish.
    pub impl_trait: bool,
}

/// Removes the doc comments of the parameters — rustc rejects them — and
/// returns their text, one per typed parameter, in order.
pub fn take_param_docs(item: &mut FnItem) -> Vec<String> {
    item.sig
        .inputs
        .iter_mut()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => {
                let (docs, rest): (Vec<Attribute>, Vec<Attribute>) =
                    std::mem::take(&mut typed.attrs)
                        .into_iter()
                        .partition(|attr| attr.path().is_ident("doc"));
                typed.attrs = rest;
                Some(doc_text(&docs))
            }
            FnArg::Receiver(_) => None,
        })
        .collect()
}

impl<'a> ToolFn<'a> {
    /// Reads the signature, recording in `cx` every shape a tool cannot have.
    pub fn parse(cx: &mut Ctxt, item: &'a FnItem, mut docs: Vec<String>) -> Option<Self> {
        let sig = &item.sig;
        if let Some(constness) = &sig.constness {
            cx.error_spanned_by(
                constness,
                "a #[tool] cannot be a `const fn`: it captures its arguments and catches panics at run time",
            );
        }
        if let Safety::Unsafe(unsafety) = &sig.safety {
            cx.error_spanned_by(
                unsafety,
                "a #[tool] cannot be `unsafe`: its caller, often a model, cannot uphold safety contracts",
            );
        }
        if let Some(abi) = &sig.abi {
            cx.error_spanned_by(abi, "a #[tool] cannot have an `extern` ABI");
        }
        if let Some(variadic) = &sig.variadic {
            cx.error_spanned_by(variadic, "a #[tool] cannot be variadic");
        }

        let output = match &sig.output {
            ReturnType::Type(_, ty) => {
                if contains_impl_trait(ty) {
                    cx.error_spanned_by(
                        ty,
                        "a #[tool] cannot return `impl Trait`: name the success type, e.g. `Result<Vec<Order>, MyError>`",
                    );
                }
                Some(&**ty)
            }
            ReturnType::Default => {
                cx.error_at(
                    sig.paren_token.span.close(),
                    format!(
                        "a #[tool] function must return a `Result`, but `{}` returns nothing\n\
                         help: return `Result<T, E>` where `E: ToolError`, e.g. `-> Result<(), std::io::Error>`",
                        sig.ident
                    ),
                );
                None
            }
        };

        let mut receiver = None;
        let mut params = Vec::new();
        let mut typed_index = 0;
        for arg in &sig.inputs {
            match arg {
                FnArg::Receiver(r) => receiver = Some(r),
                FnArg::Typed(typed) => {
                    // The capture, the schema and the decoder name every
                    // parameter: one compiled out would leave them naming
                    // nothing.
                    if let Some(cfg) = typed.attrs.iter().find(|attr| attr.path().is_ident("cfg")) {
                        cx.error_spanned_by(
                            cfg,
                            "a #[tool] parameter cannot be compiled in or out (`cfg`): the tool's schema and captured arguments name every parameter\n\
                             help: make the whole tool conditional, or take an `Option` the body ignores",
                        );
                    }
                    let param_docs = docs
                        .get_mut(typed_index)
                        .map(std::mem::take)
                        .unwrap_or_default();
                    typed_index += 1;
                    let ident = match &*typed.pat {
                        Pat::Ident(pat) if pat.subpat.is_none() => &pat.ident,
                        pat => {
                            cx.error_spanned_by(
                                pat,
                                "this parameter has no name to capture in `attempted_query`\n\
                                 help: bind it to a name (`point: (i32, i32)`) and destructure it in the body",
                            );
                            continue;
                        }
                    };
                    params.push(Param {
                        ident,
                        key: ident.unraw().to_string(),
                        ty: &typed.ty,
                        partial_item: partial_item(&typed.ty),
                        secret: last_segment_is(&typed.ty, "Secret"),
                        context: last_segment_is(&typed.ty, CONTEXT),
                        impl_trait: contains_impl_trait(&typed.ty),
                        docs: param_docs,
                    });
                }
            }
        }

        Some(ToolFn {
            item,
            is_async: sig.asyncness.is_some(),
            receiver,
            params,
            output: output?,
        })
    }

    /// The function's name.
    pub fn ident(&self) -> &'a Ident {
        &self.item.sig.ident
    }

    /// The parameter called `name`.
    pub fn param(&self, name: &Ident) -> Option<&Param<'a>> {
        self.params
            .iter()
            .find(|param| param.ident.unraw() == name.unraw())
    }
}

/// `Some(T)` if `ty` is `Partial<T>` (matched by the last path segment, so
/// `tool_envelope::Partial<T>` works too).
fn partial_item(ty: &Type) -> Option<&Type> {
    let segment = last_segment(ty)?;
    if segment.ident != "Partial" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    match args.args.first() {
        Some(GenericArgument::Type(item)) if args.args.len() == 1 => Some(item),
        _ => None,
    }
}

/// The last segment of `ty`'s path (`Secret<T>` of `tool_envelope::Secret<T>`):
/// how a type the macro knows is recognized, whatever path names it.
fn last_segment(ty: &Type) -> Option<&PathSegment> {
    match peel(ty) {
        Type::Path(TypePath {
            qself: None, path, ..
        }) => path.segments.last(),
        _ => None,
    }
}

/// Whether the last segment of `ty`'s path is `name` (`Secret`, `tool_envelope::Secret<T>`).
fn last_segment_is(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|segment| segment.ident == name)
}

/// The type name of the request's context parameter.
const CONTEXT: &str = "ToolContext";

/// Whether `ty` is a reference to a `ToolContext` (which the macro rejects:
/// the context is a handle taken by value).
pub fn is_context_ref(ty: &Type) -> bool {
    matches!(peel(ty), Type::Reference(reference) if last_segment_is(&reference.elem, CONTEXT))
}

/// Whether `ty` is a reference to a `Partial<T>` (which the macro rejects: the
/// collector is a handle taken by value).
pub fn is_partial_ref(ty: &Type) -> bool {
    matches!(peel(ty), Type::Reference(reference) if partial_item(&reference.elem).is_some())
}

/// Strips invisible groups and parentheses around a type.
fn peel(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}

/// Whether `impl Trait` appears anywhere in `ty`.
fn contains_impl_trait(ty: &Type) -> bool {
    match peel(ty) {
        Type::ImplTrait(_) => true,
        Type::Path(TypePath { path, .. }) => path.segments.iter().any(|segment| {
            matches!(&segment.arguments, PathArguments::AngleBracketed(args)
                if args.args.iter().any(|arg| matches!(arg, GenericArgument::Type(ty) if contains_impl_trait(ty))))
        }),
        Type::Tuple(tuple) => tuple.elems.iter().any(contains_impl_trait),
        Type::Reference(reference) => contains_impl_trait(&reference.elem),
        Type::Array(array) => contains_impl_trait(&array.elem),
        Type::Slice(slice) => contains_impl_trait(&slice.elem),
        _ => false,
    }
}

impl ToolFn<'_> {
    /// Why a client could not call this tool, if it could not: `None` when
    /// every parameter can come from the JSON arguments of a `tools/call`.
    pub fn unservable(&self, skipped: impl Fn(&Param) -> bool) -> Option<String> {
        let generics = &self.item.sig.generics;
        if !generics.params.is_empty() {
            return Some("it is generic".to_owned());
        }
        if let Some(receiver) = self.receiver {
            match &receiver.kind {
                ReceiverKind::Reference(_, _, None) => {}
                ReceiverKind::Reference(_, _, Some(_)) => {
                    return Some(
                        "it takes `&mut self`: tools that share state take `&self`".to_owned(),
                    );
                }
                _ => {
                    return Some(
                        "it takes `self` by value: tools that share state take `&self`".to_owned(),
                    );
                }
            }
        }
        for param in &self.params {
            if param.partial_item.is_some() || param.context {
                continue;
            }
            if skipped(param) {
                return Some(format!(
                    "its parameter `{}` is skipped, so a client cannot send it",
                    param.key
                ));
            }
            if borrows(param.ty) {
                return Some(format!(
                    "its parameter `{}` borrows, and a client sends owned JSON",
                    param.key
                ));
            }
        }
        None
    }
}

/// Whether `ty` holds a reference, a trait object or `impl Trait`.
fn borrows(ty: &Type) -> bool {
    match peel(ty) {
        Type::Reference(_) | Type::ImplTrait(_) | Type::TraitObject(_) | Type::Ptr(_) => true,
        Type::Path(TypePath { path, qself, .. }) => {
            qself.is_some()
                || path
                    .segments
                    .iter()
                    .any(|segment| match &segment.arguments {
                        PathArguments::AngleBracketed(args) => {
                            args.args.iter().any(|arg| match arg {
                                GenericArgument::Type(ty) => borrows(ty),
                                GenericArgument::Lifetime(_) => true,
                                _ => false,
                            })
                        }
                        PathArguments::Parenthesized(_) => true,
                        _ => false,
                    })
        }
        Type::Tuple(tuple) => tuple.elems.iter().any(borrows),
        Type::Array(array) => borrows(&array.elem),
        Type::Slice(_) => true,
        _ => false,
    }
}

/// Whether the signature names `Self`: then the function is in an impl block.
pub fn mentions_self(sig: &syn::Signature) -> bool {
    fn walk(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            proc_macro2::TokenTree::Ident(ident) => ident == "Self",
            proc_macro2::TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    walk(quote::ToTokens::to_token_stream(sig))
}

/// The success type `T` of a return type written `Result<T, ...>` (under
/// any path ending in `Result`: `io::Result<T>`, `anyhow::Result<T>`), so
/// that the expanded signature reads `-> ToolResult<T>`; `None` otherwise.
pub fn ok_type(ty: &Type) -> Option<&Type> {
    result_args(ty)?.first().copied()
}

/// The type arguments of a return type written `...Result<...>`.
fn result_args(ty: &Type) -> Option<Vec<&Type>> {
    let segment = last_segment(ty)?;
    if segment.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    Some(
        args.args
            .iter()
            .filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
    )
}

/// The error type `E` of a return type written `Result<T, E>` (under any
/// path ending in `Result`), for diagnostics; `None` for an alias that
/// hides it (`io::Result<T>`).
pub fn error_type(ty: &Type) -> Option<&Type> {
    match result_args(ty)?.as_slice() {
        [_, error] => Some(error),
        _ => None,
    }
}

/// Whether `ty` is certainly not a `Result` whatever the aliases in scope: a
/// primitive, a tuple, a reference, an array. Only used to keep a wrong return
/// type to one diagnostic; the check itself is the `IntoToolResult` bound.
pub fn never_a_result(ty: &Type) -> bool {
    const PRIMITIVES: &[&str] = &[
        "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
        "i64", "i128", "isize", "f32", "f64",
    ];
    match peel(ty) {
        Type::Path(TypePath {
            qself: None, path, ..
        }) => path.segments.len() == 1 && PRIMITIVES.iter().any(|p| path.segments[0].ident == p),
        Type::Tuple(_) | Type::Reference(_) | Type::Array(_) | Type::Slice(_) | Type::Never(_) => {
            true
        }
        _ => false,
    }
}
