//! What a tool set holds for each tool: what `#[tool]` generates to serve a
//! function or a method, and how an entry runs one attempt.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::envelope::ToolResult;
use crate::mcp::definition::ToolDefinition;
use crate::mcp::server::arguments::Success;
use crate::mcp::server::state::{BoxFuture, CallState};
use crate::settle::Facts;

/// One attempt of a free tool: the JSON arguments in, the success value as
/// JSON (or the envelope) out.
pub type FreeCall =
    for<'a> fn(&'a Map<String, Value>, &'a CallState) -> BoxFuture<'a, ToolResult<Success>>;

/// One attempt of a method tool on the shared state `S`.
pub type MethodCall<S> =
    for<'a> fn(Arc<S>, &'a Map<String, Value>, &'a CallState) -> BoxFuture<'a, ToolResult<Success>>;

/// What `#[tool]` generates to serve a free function.
#[derive(Clone, Copy)]
pub struct FreeTool {
    /// The tool's MCP definition.
    pub definition: fn() -> ToolDefinition,
    /// One attempt.
    pub call: FreeCall,
}

impl fmt::Debug for FreeTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FreeTool").finish_non_exhaustive()
    }
}

/// What `#[tool]` generates to serve a method of a `#[tools]` block.
pub struct MethodTool<S> {
    /// The tool's MCP definition.
    pub definition: fn() -> ToolDefinition,
    /// One attempt, holding its own handle on the state.
    pub call: MethodCall<S>,
}

impl<S> fmt::Debug for MethodTool<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MethodTool").finish_non_exhaustive()
    }
}

/// A free `#[tool]` function a [`ToolSet`](super::ToolSet) can serve: `#[tool]` implements it
/// for a hidden companion type named like the function, so that
/// `ToolSet::new().tool::<lookup_orders>()` registers `fn lookup_orders`.
/// Its contents are generated; there is nothing to call on it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be served over MCP",
    label = "not a servable tool",
    note = "a served tool takes only owned, `Deserialize + JsonSchema` arguments that a client can send: no generics, no references, no skipped parameters, and no `self`, and it is not `#[tool(local)]`",
    note = "serve methods that share state through a `#[tools]` impl block"
)]
pub trait ServableTool: 'static {
    #[doc(hidden)]
    const TOOL: FreeTool;
}

/// A type whose methods are tools: `#[tools]` on its `impl` block implements
/// it. The tools share the value through `&self`, such as a connection pool.
/// Its contents are generated; there is nothing to call on it.
pub trait ToolProvider: Send + Sync + 'static {
    #[doc(hidden)]
    fn __tools() -> Vec<MethodTool<Self>>
    where
        Self: Sized;
}

/// One attempt of a tool of a `#[tools]` block, its state bound.
pub(super) type SharedCall = dyn for<'a> Fn(&'a Map<String, Value>, &'a CallState) -> BoxFuture<'a, ToolResult<Success>>
    + Send
    + Sync;

#[derive(Clone)]
pub(super) struct Entry {
    pub(super) definition: ToolDefinition,
    /// What a failed call of it knows of itself.
    pub(super) facts: Facts,
    pub(super) call: Dispatch,
}

/// How an entry runs a call: a free function's `call` as a plain function
/// pointer (nothing instantiated per tool to store it), or a closure over the
/// shared state of a `#[tools]` block.
#[derive(Clone)]
pub(super) enum Dispatch {
    Free(FreeCall),
    Shared(Arc<SharedCall>),
}

impl Dispatch {
    pub(super) fn call<'a>(
        &self,
        arguments: &'a Map<String, Value>,
        context: &'a CallState,
    ) -> BoxFuture<'a, ToolResult<Success>> {
        match self {
            Dispatch::Free(call) => call(arguments, context),
            Dispatch::Shared(call) => call(arguments, context),
        }
    }
}
