//! Procedural macros of [`tool-envelope`](https://docs.rs/tool-envelope): `#[tool]`
//! and `#[derive(ToolError)]`. Depend on `tool-envelope`, which re-exports them.
//!
//! Each entry point is parse → validate → expand; every error is collected and
//! reported together, and on error the original item is emitted next to them.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use proc_macro::TokenStream;

mod attr;
mod ctxt;
mod docs;
mod expand;
mod fallback;
mod fmt;
mod item;
mod signature;
mod symbol;
mod tool_error;
mod tools;
mod valid;

/// Turns a function returning a `Result` into a tool whose failures come back
/// as structured `ErrorEnvelope`s.
///
/// The function keeps its name, parameters, doc comment and attributes; its
/// return type becomes `ToolResult<T>` (`Result<T, ErrorEnvelope>`), where `T`
/// is the success type it wrote. The error type must implement `ToolError`.
/// Inside the body, `?` and `return` work with the error type as written.
///
/// On every call, before the body runs, the named arguments are captured as
/// the envelope's `attempted_query`. If the body fails — or panics — the error
/// is classified into an envelope with the tool's name, the captured
/// arguments, and the items of its `Partial` collector, unless the error says
/// those things itself (an envelope from another tool passes through).
///
/// ```
/// use tool_envelope::{tool, ErrorEnvelope, Partial};
///
/// /// Fetch a page of search results.
/// #[tool(read_only, redact(api_key))]
/// async fn search(query: String, api_key: String, seen: Partial<String>) -> Result<Vec<String>, ErrorEnvelope> {
///     let _ = api_key;
///     seen.push(format!("first hit for {query}"));
///     Err(ErrorEnvelope::transient("search provider timed out"))
/// }
///
/// # tokio_test_block_on(async {
/// let envelope = search("rust".into(), "k-123".into(), Partial::new()).await.unwrap_err();
/// assert_eq!(
///     envelope.attempted_query(),
///     Some(&serde_json::json!({"query": "rust", "api_key": "[redacted]"}))
/// );
/// assert_eq!(envelope.partial_results(), Some(&serde_json::json!(["first hit for rust"])));
/// # });
/// # fn tokio_test_block_on(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
///
/// # Arguments of the attribute
///
/// | argument | meaning |
/// |---|---|
/// | `name = "..."` | the tool's name (default: the function's); 1–64 of `[A-Za-z0-9_.-]` |
/// | `title = "..."` | a human-friendly title |
/// | `description = "..."` | overrides the doc comment as the tool's description |
/// | `skip(a, b)` | leaves parameters out of `attempted_query` |
/// | `redact(a, b)` | captures parameters as `"[redacted]"`; their values are never serialized |
/// | `read_only` | the tool changes nothing (implies `idempotent`) |
/// | `destructive` | the tool may destroy or overwrite data |
/// | `idempotent` | repeating the call has no further effect, so it is safe to retry |
/// | `open_world` | the tool reaches an open world of external systems |
/// | `guard = path` | a `Guard` (such as a `fn(&ToolCall) -> Result<(), Blocked>`) checked on the captured arguments (redacted ones masked) before the body runs; a blocked call never runs, nor does one whose guard panics |
/// | `timeout = "30s"` | bounds an `async` tool (feature `tokio`; `ms`, `s`, `m`, `h`): when the time is up the body is dropped and the call fails with a retryable `transient` envelope, `reason = "TIMEOUT"`, keeping its arguments and partial results |
/// | `describe_failures` | append a one-line summary of the error type's failure modes to the MCP description |
/// | `local` | only called from Rust, never served: generate nothing for MCP, ask nothing of the argument and result types (also for an `async` tool whose future is not `Send`, or an associated function without `self` outside a `#[tools]` block) |
///
/// The four hints also accept `= true` or `= false`.
///
/// # Serving
///
/// A free function whose parameters a client can send — owned, not generic,
/// none skipped — is an MCP tool: `ToolSet::new().tool::<name>()` registers
/// it, through a hidden companion type of the same name. Its arguments must
/// then implement `Deserialize + JsonSchema` and its success type
/// `Serialize`; a missing one is a compile error at the parameter (or the
/// return type) that says so. Mark a tool that is only called from Rust
/// `#[tool(local)]` and it asks nothing of them. A served tool without a doc
/// comment gets a compile-time warning: clients show the description to the
/// model. The description is what rustdoc shows a reader: the lines a Rust
/// code example hides (`# use ...;`) are left out, and a
/// `#[doc = include_str!("search.md")]` is part of it, as written. Methods
/// are served from a `#[tools]` impl block. A tool may take any number of
/// parameters.
///
/// The companion type lives where the function does, in the type
/// namespace: a module of the same name there (`mod lookup_orders;` beside
/// `pub use lookup_orders::lookup_orders;`) conflicts with it. Re-export
/// the function under the module's other name, or name the file otherwise.
///
/// # Parameters
///
/// Every parameter needs a name (a pattern such as `(a, b): (i32, i32)` has
/// nothing to capture), none may be compiled in or out (`#[cfg]`: the
/// schema and the capture name every one), and every captured parameter
/// must be `Serialize`. A
/// parameter of type `Partial<T>` is the tool's collector of partial results:
/// it is never captured, and `T` must be `Serialize`. A tool takes at most one.
/// A parameter of type `ToolContext` (`tool_envelope::mcp::ToolContext`) is
/// the request that called the tool — progress, log messages, cancellation,
/// the client: a tool set passes it, it is never captured and never in
/// `inputSchema`, and a caller in Rust passes `ToolContext::detached()`. A
/// tool takes at most one, by value.
///
/// A tool cannot be `const`, `unsafe`, `extern` or variadic, and cannot return
/// `impl Trait`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut item = syn::parse_macro_input!(input as item::FnItem);
    // rustc rejects doc comments on parameters: take them off before anything is emitted.
    let param_docs = signature::take_param_docs(&mut item);
    let mut cx = ctxt::Ctxt::default();
    let attr = attr::parse(&mut cx, args.into());
    let tool = signature::ToolFn::parse(&mut cx, &item, param_docs);
    if let Some(tool) = &tool {
        valid::check(&mut cx, &attr, tool);
        if attr.in_tools {
            valid::check_served_method(&mut cx, &attr, tool);
        }
    }
    match (cx.check(), tool) {
        (Ok(()), Some(tool)) => {
            // A function with `self`, or naming `Self`, is a method of an impl block.
            let place = if attr.in_tools {
                expand::Place::ServedMethod
            } else if tool.receiver.is_some() || signature::mentions_self(&item.sig) {
                expand::Place::Method
            } else {
                expand::Place::Free
            };
            expand::tool(&attr, &tool, place)
        }
        (Err(error), _) => fallback::fallback(error, &item, attr.in_tools),
        (Ok(()), None) => unreachable!("a signature that failed to parse recorded an error"),
    }
    .into()
}

/// Serves the `#[tool]` methods of an inherent `impl` block together: they
/// share the value through `&self`, such as a connection pool, and
/// `ToolSet::new().provider(value)` registers them all.
///
/// ```
/// use serde_json::json;
/// use tool_envelope::{tool, tools, ErrorEnvelope};
/// use tool_envelope::mcp::ToolSet;
///
/// struct Inventory {
///     stock: Vec<(String, u32)>,
/// }
///
/// #[tools]
/// impl Inventory {
///     /// How many of `sku` are in stock.
///     #[tool(read_only)]
///     fn stock_of(&self, sku: String) -> Result<u32, ErrorEnvelope> {
///         self.stock
///             .iter()
///             .find(|(s, _)| *s == sku)
///             .map(|(_, n)| *n)
///             .ok_or_else(|| ErrorEnvelope::validation(format!("unknown SKU {sku}")))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let tools = ToolSet::new().provider(Inventory { stock: vec![("A-1".into(), 3)] });
/// let result = tools.call("stock_of", json!({"sku": "A-1"})).await.unwrap();
/// assert_eq!(result.structured_content, Some(json!({"result": 3})));
/// # }
/// ```
///
/// Every `#[tool]` method here must be servable: `&self` (or no receiver),
/// not generic, with owned arguments a client can send.
#[proc_macro_attribute]
pub fn tools(args: TokenStream, input: TokenStream) -> TokenStream {
    let item = syn::parse_macro_input!(input as item::ImplBlock);
    tools::expand(args.into(), item).into()
}

/// Derives `ToolError` from `#[tool_error(...)]` attributes.
///
/// Every variant of an enum (or the struct itself) is classified with one
/// category — `transient`, `validation`, `business`, `permission` or `other` —
/// and optionally:
///
/// | setting | meaning |
/// |---|---|
/// | `retryable = true \| false` | overrides the category's default (only `transient` is retryable) |
/// | `alternatives("...", ...)` | next moves; interpolate fields as `#[error]` does: `{amount}`, `{0}`, `{wait:?}`, `{{` |
/// | `reason = "UPPER_SNAKE"` | a stable machine code |
/// | `not_applied` | the operation certainly did not happen, so even a non-idempotent tool may be retried |
/// | `transparent` | delegate everything to the single field, whose own envelope passes through |
///
/// and on fields: `#[tool_error(retry_after)]` (a `Duration` or `Option<Duration>`),
/// `#[tool_error(partial)]` (anything `Serialize`, such as a `Partial<T>`) and
/// `#[tool_error(violations)]` (a `Vec<Violation>` or a `Violation`). The
/// `Display` text is the envelope's `message`, so it sits next to
/// `#[derive(thiserror::Error)]`:
///
/// ```
/// use std::time::Duration;
/// use tool_envelope::{ErrorCategory, ToolError};
///
/// #[derive(Debug, thiserror::Error, ToolError)]
/// enum InventoryError {
///     #[error("Rate limit hit on inventory service")]
///     #[tool_error(transient, reason = "RATE_LIMITED", alternatives("Retry in {wait:?}"))]
///     RateLimited {
///         #[tool_error(retry_after)]
///         wait: Duration,
///     },
///     #[error("SKU {0} does not exist")]
///     #[tool_error(validation, alternatives("Search the catalogue for {0}"))]
///     UnknownSku(String),
///     #[error(transparent)]
///     #[tool_error(transparent)]
///     Io(#[from] std::io::Error),
/// }
///
/// let envelope = InventoryError::RateLimited { wait: Duration::from_secs(2) }.into_envelope();
/// assert_eq!(envelope.category(), ErrorCategory::Transient);
/// assert_eq!(envelope.retry_after(), Some(Duration::from_secs(2)));
/// assert_eq!(envelope.alternatives(), ["Retry in 2s"]);
/// ```
///
/// A variant without a category is a compile error that points at it.
#[proc_macro_derive(ToolError, attributes(tool_error))]
pub fn derive_tool_error(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    tool_error::derive(&input).into()
}
