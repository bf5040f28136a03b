//! What `#[tool]` emits when it found errors: the errors, and the function
//! as written.

use proc_macro2::TokenStream;
use quote::quote;

use crate::expand::method_tool_name;
use crate::item::FnItem;

/// The tokens emitted when the macro found errors: the errors, and the function
/// as written, so that the rest of the crate still type-checks.
///
/// What the errors already said is not said again by rustc: a `const fn`
/// is emitted without `const` (its body would fail const evaluation), a
/// variadic one without its `...`. A method of a `#[tools]` block also gets
/// the function its block lists, which says nothing more.
pub fn fallback(error: syn::Error, item: &FnItem, in_tools: bool) -> TokenStream {
    let error = error.into_compile_error();
    let mut item = item.clone();
    item.sig.constness = None;
    item.sig.variadic = None;
    let listed = in_tools.then(|| {
        let name = method_tool_name(&item.sig.ident);
        quote! {
            #[doc(hidden)]
            fn #name() -> ::tool_envelope::__private::MethodTool<Self> {
                ::core::unreachable!("the tool did not compile")
            }
        }
    });
    quote! {
        #error
        #item
        #listed
    }
}
