//! The items the macros read, with function bodies kept as tokens: `#[tool]`
//! re-emits a body untouched and never needs its syntax tree, so it never
//! parses one.

use proc_macro2::{Delimiter, Group, TokenStream};
use quote::{ToTokens, TokenStreamExt};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, ImplItem, ItemImpl, Signature, Visibility};

/// A function: attributes, visibility, signature, and its body as a `{ ... }` group.
#[derive(Clone)]
pub struct FnItem {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    pub body: Group,
}

impl Parse for FnItem {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        let body: Group = input.parse()?;
        if body.delimiter() != Delimiter::Brace {
            return Err(syn::Error::new(
                body.span(),
                "expected the function's body, `{ ... }`",
            ));
        }
        Ok(FnItem {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl ToTokens for FnItem {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.append_all(&self.attrs);
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}

/// An entry of an impl block: a method (body unparsed) or anything else.
pub enum ImplEntry {
    Fn(Box<FnItem>),
    Other(Box<ImplItem>),
}

impl ToTokens for ImplEntry {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            ImplEntry::Fn(item) => item.to_tokens(tokens),
            ImplEntry::Other(item) => item.to_tokens(tokens),
        }
    }
}

/// An impl block: its header (an `ItemImpl` without items) and its entries.
pub struct ImplBlock {
    pub header: ItemImpl,
    pub entries: Vec<ImplEntry>,
}

impl Parse for ImplBlock {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        // The header, up to the braces, parsed by syn with an empty body.
        let mut header = TokenStream::new();
        let body = loop {
            if input.is_empty() {
                return Err(input.error("expected an `impl` block"));
            }
            let token: proc_macro2::TokenTree = input.parse()?;
            match token {
                proc_macro2::TokenTree::Group(group)
                    if group.delimiter() == Delimiter::Brace && input.is_empty() =>
                {
                    break group;
                }
                other => header.append(other),
            }
        };
        header.append(Group::new(Delimiter::Brace, TokenStream::new()));
        let header: ItemImpl = syn::parse2(header)?;
        let entries = syn::parse::Parser::parse2(
            |content: ParseStream| {
                let mut entries = Vec::new();
                while !content.is_empty() {
                    let fork = content.fork();
                    if fork.parse::<FnItem>().is_ok() {
                        entries.push(ImplEntry::Fn(Box::new(content.parse()?)));
                    } else {
                        entries.push(ImplEntry::Other(Box::new(content.parse()?)));
                    }
                }
                Ok(entries)
            },
            body.stream(),
        )?;
        Ok(ImplBlock { header, entries })
    }
}
