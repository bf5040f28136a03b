//! `#[derive(ToolError)]`: parse (`ast`, `attr`) → validate (`valid`) →
//! expand (`expand`), or, on an error, `fallback` — split as thiserror-impl
//! splits its derive. `attr` owns the attributes and never imports `ast`.

mod ast;
mod attr;
mod expand;
mod fallback;
mod valid;

use proc_macro2::TokenStream;
use syn::DeriveInput;

use crate::ctxt::Ctxt;

/// Derives `ToolError`, or reports every problem together and emits a
/// placeholder impl.
pub fn derive(input: &DeriveInput) -> TokenStream {
    let mut cx = Ctxt::default();
    let cases = ast::parse(&mut cx, input);
    valid::check(&mut cx, &cases);
    match cx.check() {
        Ok(()) => expand::expand(input, &cases),
        Err(error) => fallback::fallback(input, error),
    }
}
