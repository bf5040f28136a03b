//! A borrowed, checked view of a `#[tool]` function's signature.

use syn::ext::IdentExt;
use syn::{
    Attribute, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Safety, Type,
    TypePath,
};

use crate::ctxt::Ctxt;

/// The function, as the expansion sees it.
pub struct ToolFn<'a> {
    pub item: &'a ItemFn,
    pub is_async: bool,
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
}

/// Removes the doc comments of the parameters — rustc rejects them — and
/// returns them, one list per typed parameter, in order.
pub fn take_param_docs(item: &mut ItemFn) -> Vec<Vec<Attribute>> {
    item.sig
        .inputs
        .iter_mut()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => {
                let (docs, rest) = std::mem::take(&mut typed.attrs)
                    .into_iter()
                    .partition(|attr| attr.path().is_ident("doc"));
                typed.attrs = rest;
                Some(docs)
            }
            FnArg::Receiver(_) => None,
        })
        .collect()
}

impl<'a> ToolFn<'a> {
    /// Reads the signature, recording in `cx` every shape a tool cannot have.
    pub fn parse(cx: &mut Ctxt, item: &'a ItemFn) -> Option<Self> {
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

        let mut params = Vec::new();
        for arg in &sig.inputs {
            match arg {
                FnArg::Receiver(_) => {}
                FnArg::Typed(typed) => {
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
                    });
                }
            }
        }

        Some(ToolFn {
            item,
            is_async: sig.asyncness.is_some(),
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
    let Type::Path(TypePath {
        qself: None, path, ..
    }) = peel(ty)
    else {
        return None;
    };
    let segment = path.segments.last()?;
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
