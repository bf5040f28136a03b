//! Procedural macros of [`tool-envelope`](https://docs.rs/tool-envelope): `#[tool]`
//! and `#[derive(ToolError)]`. Depend on `tool-envelope`, which re-exports them.
//!
//! Each entry point is parse → validate → expand; every error is collected and
//! reported together, and on error the original item is emitted next to them.

use proc_macro::TokenStream;

mod attr;
mod ctxt;
mod expand;
mod fmt;
mod signature;
mod tool_error;
mod valid;

/// Turns a function returning `Result<T, E: ToolError>` into a tool whose
/// failures come back as structured `ErrorEnvelope`s. See the `tool_envelope`
/// crate documentation.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut item = syn::parse_macro_input!(input as syn::ItemFn);
    // rustc rejects doc comments on parameters: take them off before anything is emitted.
    let _param_docs = signature::take_param_docs(&mut item);
    let mut cx = ctxt::Ctxt::default();
    let attr = attr::parse(&mut cx, args.into());
    let tool = signature::ToolFn::parse(&mut cx, &item);
    if let Some(tool) = &tool {
        valid::check(&mut cx, &attr, tool);
    }
    match (cx.check(), tool) {
        (Ok(()), Some(tool)) => expand::tool(&attr, &tool),
        (Err(error), _) => expand::fallback(error, &item),
        (Ok(()), None) => unreachable!("a signature that failed to parse recorded an error"),
    }
    .into()
}

/// Derives `ToolError` from `#[tool_error(...)]` attributes: a category on each
/// variant (`transient`, `validation`, `business`, `permission`, `other`), and
/// optionally `retryable = bool`, `alternatives("...")` interpolating fields,
/// `reason = "UPPER_SNAKE"`, `not_applied`, or `transparent`; on fields,
/// `retry_after`, `partial` and `violations`. See the `tool_envelope` crate
/// documentation.
#[proc_macro_derive(ToolError, attributes(tool_error))]
pub fn derive_tool_error(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    tool_error::derive(&input).into()
}
