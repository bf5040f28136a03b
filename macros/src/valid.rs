//! Semantic checks of a `#[tool]`: what parses but cannot work.

use syn::Ident;
use syn::ext::IdentExt;

use crate::attr::ToolAttr;
use crate::ctxt::{Ctxt, with_suggestion};
use crate::signature::{Param, ToolFn, is_context_ref, is_partial_ref};

/// What the macro does with one parameter.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Serialized into `attempted_query`.
    Captured,
    /// Left out of `attempted_query` (`skip`).
    Skipped,
    /// Captured as `"[redacted]"` (`redact`).
    Redacted,
    /// The `Partial<T>` collector.
    Partial,
    /// The request's `ToolContext`.
    Context,
}

/// The longest tool name MCP allows.
pub const MAX_NAME_LEN: usize = 64;

/// Checks the attribute against the signature, recording every problem in `cx`.
pub fn check(cx: &mut Ctxt, attr: &ToolAttr, tool: &ToolFn) {
    let names: Vec<String> = tool.params.iter().map(|p| p.key.clone()).collect();
    let candidates = || names.iter().map(String::as_str);

    for (list, verb) in [(&attr.skip, "skip"), (&attr.redact, "redact")] {
        for ident in list {
            match tool.param(ident) {
                None => cx.error_spanned_by(
                    ident,
                    with_suggestion(
                        format!("cannot {verb} `{ident}`: `{}` has no parameter named `{ident}`", tool.ident()),
                        &ident.unraw().to_string(),
                        candidates(),
                    ),
                ),
                Some(param) if param.partial_item.is_some() => cx.error_spanned_by(
                    ident,
                    format!("cannot {verb} `{ident}`: a `Partial` collector is never captured in `attempted_query`"),
                ),
                Some(param) if param.context => cx.error_spanned_by(
                    ident,
                    format!("cannot {verb} `{ident}`: a `ToolContext` is never captured in `attempted_query`"),
                ),
                Some(_) => {}
            }
        }
    }
    for ident in &attr.redact {
        if attr
            .skip
            .iter()
            .any(|skipped| skipped.unraw() == ident.unraw())
        {
            cx.error_spanned_by(
                ident,
                format!(
                    "`{ident}` is both skipped and redacted; choose one: \
                     `skip` leaves it out of `attempted_query`, `redact` keeps the key with the value \"[redacted]\""
                ),
            );
        }
    }

    let mut partials = tool.params.iter().filter(|p| p.partial_item.is_some());
    if partials.next().is_some() {
        for extra in partials {
            cx.error_spanned_by(
                extra.ty,
                "a #[tool] takes at most one `Partial` collector: gather every partial result in one `Partial<T>`",
            );
        }
    }
    let mut contexts = tool.params.iter().filter(|p| p.context);
    if contexts.next().is_some() {
        for extra in contexts {
            cx.error_spanned_by(
                extra.ty,
                "a #[tool] takes at most one `ToolContext`: it is the one request that called the tool",
            );
        }
    }
    for param in &tool.params {
        if is_context_ref(param.ty) {
            cx.error_spanned_by(
                param.ty,
                "take the context by value (`ToolContext`): it is a cheap handle on the request",
            );
        }
        if is_partial_ref(param.ty) {
            cx.error_spanned_by(
                param.ty,
                "take the collector by value (`Partial<T>`): it is a handle, and the caller keeps a clone to read it back",
            );
        }
    }

    // A destructive tool that says it is read-only would be listed safe to
    // repeat, and its transient failures retried.
    let read_only = attr.read_only.is_some_and(|flag| flag.value);
    if read_only && attr.destructive.is_some_and(|flag| flag.value) {
        cx.error_spanned_by(
            tool.ident(),
            "a tool cannot be both `read_only` and `destructive`: a read-only tool changes nothing, so it is safe to repeat; say `destructive` (and `idempotent` if repeating it is safe)",
        );
    }
    if let Some((_, lit)) = &attr.timeout
        && !tool.is_async
    {
        cx.error_spanned_by(
            lit,
            "`timeout` applies to `async fn` tools: a synchronous body cannot be interrupted",
        );
    }

    match &attr.name {
        Some(name) => {
            if let Err(problem) = check_name(&name.value()) {
                cx.error_spanned_by(name, problem);
            }
        }
        None => {
            let name = tool.ident().unraw().to_string();
            if let Err(problem) = check_name(&name) {
                cx.error_spanned_by(
                    tool.ident(),
                    format!(
                        "{problem}\nhelp: give the tool a valid name with `#[tool(name = \"...\")]`"
                    ),
                );
            }
        }
    }
}

/// MCP tool names: 1 to 64 characters of `[A-Za-z0-9_.-]`.
pub fn check_name(name: &str) -> Result<(), String> {
    let length = name.chars().count();
    if length == 0 || length > MAX_NAME_LEN {
        return Err(format!(
            "`{name}` is not a valid MCP tool name: it must be 1 to {MAX_NAME_LEN} characters long, not {length}"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(format!(
            "`{name}` is not a valid MCP tool name: `{bad}` is not one of A-Z, a-z, 0-9, `_`, `.`, `-`"
        ));
    }
    Ok(())
}

/// The role of `param` under `attr`.
pub fn role(attr: &ToolAttr, param: &Param) -> Role {
    let ident = param.ident;
    let named = |list: &[Ident]| list.iter().any(|i| i.unraw() == ident.unraw());
    if param.partial_item.is_some() {
        Role::Partial
    } else if param.context {
        Role::Context
    } else if named(&attr.skip) {
        Role::Skipped
    } else if named(&attr.redact) || param.secret {
        Role::Redacted
    } else {
        Role::Captured
    }
}

/// The checks of a method a `#[tools]` block serves: it must be servable.
pub fn check_served_method(cx: &mut Ctxt, attr: &ToolAttr, tool: &ToolFn) {
    if attr.local {
        cx.error_spanned_by(
            tool.ident(),
            "a `#[tools]` method is served; `local` has no meaning here",
        );
    }
    if let Some(reason) = tool.unservable(|param| role(attr, param) == Role::Skipped) {
        cx.error_spanned_by(
            &tool.item.sig,
            format!("`{}` cannot be served: {reason}", tool.ident()),
        );
    }
}
