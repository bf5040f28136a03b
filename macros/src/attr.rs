//! Parsing `#[tool(...)]`.

use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Ident, LitBool, LitStr};

use crate::ctxt::{Ctxt, skip_value, with_suggestion};
use crate::symbol::{
    DESCRIBE_FAILURES, DESCRIPTION, DESTRUCTIVE, GUARD, IDEMPOTENT, IN_TOOLS, LOCAL, NAME,
    OPEN_WORLD, READ_ONLY, REDACT, SKIP, TIMEOUT, TITLE, TOOL_KEYS,
};

/// The arguments of `#[tool(...)]`, as written.
#[derive(Default)]
pub struct ToolAttr {
    /// `name = "..."`: the tool's name; the function's name by default.
    pub name: Option<LitStr>,
    /// `title = "..."`: a human-friendly title for MCP clients.
    pub title: Option<LitStr>,
    /// `description = "..."`: overrides the doc comment.
    pub description: Option<LitStr>,
    /// `skip(a, b)`: parameters left out of `attempted_query`.
    pub skip: Vec<Ident>,
    /// `redact(a, b)`: parameters captured as `"[redacted]"`.
    pub redact: Vec<Ident>,
    /// `read_only`: the tool does not modify its environment (implies idempotent).
    pub read_only: Option<Flag>,
    /// `destructive`: the tool may perform destructive updates.
    pub destructive: Option<Flag>,
    /// `idempotent`: repeating the call has no further effect; safe to retry.
    pub idempotent: Option<Flag>,
    /// `open_world`: the tool talks to an open world of external entities.
    pub open_world: Option<Flag>,
    /// `guard = path`: a deterministic check run before the body.
    pub guard: Option<syn::Expr>,
    /// `local`: never served, so nothing is generated for MCP.
    pub local: bool,
    /// `describe_failures`: append a summary of the failure modes to the description.
    pub describe_failures: bool,
    /// `timeout = "5s"`: how long an async tool may run, in milliseconds.
    pub timeout: Option<(u64, LitStr)>,
    /// `__tools`: written by `#[tools]` on the methods it serves, never by users.
    pub in_tools: bool,
}

/// A boolean key: `idempotent` or `idempotent = false`.
#[derive(Clone, Copy)]
pub struct Flag {
    pub value: bool,
}

impl ToolAttr {
    /// Whether the tool is safe to repeat: `idempotent`, or `read_only` unless
    /// `idempotent = false` says otherwise.
    pub fn is_idempotent(&self) -> bool {
        match self.idempotent {
            Some(flag) => flag.value,
            None => self.read_only.is_some_and(|flag| flag.value),
        }
    }
}

/// Parses the arguments, recording every error in `cx`.
pub fn parse(cx: &mut Ctxt, args: TokenStream) -> ToolAttr {
    let mut attr = ToolAttr::default();
    let parser = syn::meta::parser(|meta| {
        let Some(key) = meta.path.get_ident().map(Ident::to_string) else {
            cx.error_spanned_by(
                &meta.path,
                "expected a `#[tool]` argument such as `name = \"...\"`",
            );
            return skip_value(&meta);
        };
        match key.as_str() {
            NAME => set_once(cx, &mut attr.name, &meta, |m| m.value()?.parse()),
            TITLE => set_once(cx, &mut attr.title, &meta, |m| m.value()?.parse()),
            DESCRIPTION => set_once(cx, &mut attr.description, &meta, |m| m.value()?.parse()),
            SKIP => parse_names(cx, &mut attr.skip, &meta),
            REDACT => parse_names(cx, &mut attr.redact, &meta),
            READ_ONLY => set_once(cx, &mut attr.read_only, &meta, parse_flag),
            DESTRUCTIVE => set_once(cx, &mut attr.destructive, &meta, parse_flag),
            IDEMPOTENT => set_once(cx, &mut attr.idempotent, &meta, parse_flag),
            OPEN_WORLD => set_once(cx, &mut attr.open_world, &meta, parse_flag),
            GUARD => set_once(cx, &mut attr.guard, &meta, |m| m.value()?.parse()),
            LOCAL => set_flag(cx, &mut attr.local, &meta),
            TIMEOUT => set_once(cx, &mut attr.timeout, &meta, parse_timeout),
            DESCRIBE_FAILURES => set_flag(cx, &mut attr.describe_failures, &meta),
            IN_TOOLS => {
                attr.in_tools = true;
                Ok(())
            }
            unknown => {
                cx.error_spanned_by(
                    &meta.path,
                    with_suggestion(
                        format!("unknown `#[tool]` argument `{unknown}`"),
                        unknown,
                        TOOL_KEYS.iter().copied(),
                    ),
                );
                skip_value(&meta)
            }
        }
    });
    if let Err(error) = parser.parse2(args) {
        cx.syn_error(error);
    }
    attr
}

/// Parses a key's value into `slot`, rejecting a second occurrence.
fn set_once<T>(
    cx: &mut Ctxt,
    slot: &mut Option<T>,
    meta: &ParseNestedMeta,
    parse: impl FnOnce(&ParseNestedMeta) -> syn::Result<T>,
) -> syn::Result<()> {
    let value = parse(meta)?;
    if slot.is_some() {
        cx.error_spanned_by(
            &meta.path,
            format!(
                "`{}` is given twice",
                meta.path.get_ident().expect("checked by the caller")
            ),
        );
    } else {
        *slot = Some(value);
    }
    Ok(())
}

/// `timeout = "250ms" | "5s" | "2m" | "1h"`.
fn parse_timeout(meta: &ParseNestedMeta) -> syn::Result<(u64, LitStr)> {
    let lit: LitStr = meta.value()?.parse()?;
    let text = lit.value();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "ms" => Some(1),
        "s" => Some(1_000),
        "m" => Some(60_000),
        "h" => Some(3_600_000),
        _ => None,
    };
    match (number.parse::<u64>(), scale) {
        (Ok(number), Some(scale)) if number > 0 => match number.checked_mul(scale) {
            Some(ms) => Ok((ms, lit)),
            None => Err(syn::Error::new(lit.span(), "this timeout is too long")),
        },
        _ => Err(syn::Error::new(
            lit.span(),
            format!(
                "expected a duration such as \"250ms\", \"5s\", \"2m\" or \"1h\", not \"{text}\""
            ),
        )),
    }
}

/// A bare flag such as `local`.
fn set_flag(cx: &mut Ctxt, slot: &mut bool, meta: &ParseNestedMeta) -> syn::Result<()> {
    let mut value = None;
    set_once(cx, &mut value, meta, parse_flag)?;
    if let Some(flag) = value {
        if *slot {
            cx.error_spanned_by(&meta.path, "given twice");
        }
        *slot = flag.value;
    }
    Ok(())
}

/// `flag` or `flag = true|false`.
fn parse_flag(meta: &ParseNestedMeta) -> syn::Result<Flag> {
    if meta.input.peek(syn::Token![=]) {
        let value = meta.value()?;
        let lit: LitBool = value
            .parse()
            .map_err(|error| syn::Error::new(error.span(), "expected `true` or `false`"))?;
        Ok(Flag { value: lit.value })
    } else {
        Ok(Flag { value: true })
    }
}

/// `key(a, b, c)`: a list of parameter names.
fn parse_names(cx: &mut Ctxt, names: &mut Vec<Ident>, meta: &ParseNestedMeta) -> syn::Result<()> {
    meta.parse_nested_meta(|inner| match inner.path.get_ident() {
        Some(ident) if inner.input.is_empty() || inner.input.peek(syn::Token![,]) => {
            if names.iter().any(|seen| seen == ident) {
                cx.error_spanned_by(ident, format!("parameter `{ident}` is listed twice"));
            } else {
                names.push(ident.clone());
            }
            Ok(())
        }
        _ => {
            cx.error_spanned_by(&inner.path, "expected a parameter name");
            skip_value(&inner)
        }
    })
}
