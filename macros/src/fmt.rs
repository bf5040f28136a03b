//! `alternatives("...")` templates that interpolate fields, as thiserror's
//! `#[error("...")]` does: `"{amount}"`, `"{0}"`, `"{amount:?}"`, `"{{"`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

/// A field reference found in a template.
pub enum FieldName {
    Named(String),
    Index(usize),
}

/// A parsed template: a `format!` string with positional placeholders, and
/// the fields they read, in order.
pub struct Template {
    pub lit: LitStr,
    format: String,
    /// The text itself, braces unescaped: what a template without fields says.
    plain: String,
    pub fields: Vec<FieldName>,
}

impl Template {
    /// Parses `lit`. Field names are checked by the caller, which knows them.
    pub fn parse(lit: LitStr) -> syn::Result<Self> {
        let text = lit.value();
        let mut format = String::with_capacity(text.len());
        let mut plain = String::with_capacity(text.len());
        let mut fields = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    format.push_str("{{");
                    plain.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    format.push_str("}}");
                    plain.push('}');
                }
                '}' => {
                    return Err(syn::Error::new(
                        lit.span(),
                        "unmatched `}` in the template; write `}}` for a literal brace",
                    ));
                }
                '{' => {
                    let mut inner = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(c) => inner.push(c),
                            None => {
                                return Err(syn::Error::new(
                                    lit.span(),
                                    "unclosed `{` in the template; write `{{` for a literal brace",
                                ));
                            }
                        }
                    }
                    let (name, spec) = match inner.split_once(':') {
                        Some((name, spec)) => (name.trim(), Some(spec)),
                        None => (inner.trim(), None),
                    };
                    let field = if name.is_empty() {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`{}` does not say which field to interpolate: name it, as in `{amount}` or `{0}`",
                        ));
                    } else if let Ok(index) = name.parse::<usize>() {
                        FieldName::Index(index)
                    } else if syn::parse::Parser::parse_str(
                        <syn::Ident as syn::ext::IdentExt>::parse_any,
                        name,
                    )
                    .is_ok()
                    {
                        FieldName::Named(name.trim_start_matches("r#").to_owned())
                    } else {
                        return Err(syn::Error::new(
                            lit.span(),
                            format!(
                                "`{{{inner}}}` is not a field: interpolate a field by name (`{{amount}}`) or position (`{{0}}`)"
                            ),
                        ));
                    };
                    fields.push(field);
                    format.push('{');
                    if let Some(spec) = spec {
                        format.push(':');
                        format.push_str(spec);
                    }
                    format.push('}');
                }
                c => {
                    format.push(c);
                    plain.push(c);
                }
            }
        }
        Ok(Template {
            lit,
            format,
            plain,
            fields,
        })
    }

    /// The template as written, for the failure catalog.
    pub fn text(&self) -> String {
        self.lit.value()
    }

    /// The expression building the text, given one binding per field read.
    pub fn expand(&self, bindings: &[TokenStream]) -> TokenStream {
        if self.fields.is_empty() {
            let text = &self.plain;
            return quote!(::std::string::String::from(#text));
        }
        let format = LitStr::new(&self.format, self.lit.span());
        quote!(::std::format!(#format #(, #bindings)*))
    }
}
