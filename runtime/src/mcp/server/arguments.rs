//! Arguments of an MCP `tools/call`, decoded into a tool's typed parameters.
//! Every problem is collected — each offending field with what was expected —
//! and reported as one `validation` envelope, not a protocol error (SEP-1303).
// Support for generated code, reached only through `__private`: the
// `# Errors` of these functions are the generated code's concern.
#![allow(clippy::missing_errors_doc)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::{Map, Value};

use crate::body::ToolInfo;
use crate::envelope::{ErrorEnvelope, Violation};
use crate::guard::{ToolCall, Waivers, verdict};
use crate::mcp::server::state::{BoxFuture, CallState};
use crate::mcp::violations::{unusable_arguments, violations};
use crate::query::Query;
use crate::redact::schema::steps;
use crate::redact::secret::noting;
use crate::settle::{Facts, settle};

pub use crate::mcp::argument::Arg;

/// Decodes the arguments of one call, collecting every violation.
pub struct Decoder<'a> {
    arguments: &'a Map<String, Value>,
    tool: &'a ToolInfo,
    context: &'a CallState,
    violations: Vec<Violation>,
    /// The values the `Secret`s decoded so far were sent as.
    noted: Vec<Value>,
}

/// Names the arguments, never their values: a secret among them, or one a
/// `Secret` was sent as, does not reach a log through `{:?}`.
impl std::fmt::Debug for Decoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("tool", &self.tool.name)
            .field("arguments", &self.arguments.keys().collect::<Vec<_>>())
            // A violation's text may quote the value refused.
            .field("violations", &self.violations.len())
            .field("noted", &self.noted.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Decoder<'a> {
    /// A decoder of `arguments`, for `tool`, in the call `context`.
    pub fn new(
        arguments: &'a Map<String, Value>,
        tool: &'a ToolInfo,
        context: &'a CallState,
    ) -> Self {
        Decoder {
            arguments,
            tool,
            context,
            violations: Vec::new(),
            noted: Vec::new(),
        }
    }

    /// The argument `name`, or `None` after recording why it is unusable.
    /// The problem of a value that may hold a secret never quotes it.
    pub fn arg<A: Arg>(&mut self, name: &'static str) -> Option<A> {
        let (decoded, noted) = noting(|| A::decode(self.arguments.get(name)));
        self.noted.extend(noted);
        match decoded {
            Ok(value) => Some(value),
            Err((path, description)) => {
                let secrets = self.context.mask().paths();
                // A path that does not read as one (a map's key may be
                // anything) may lead anywhere in the argument.
                let steps = steps(&path).unwrap_or_default();
                let secret =
                    self.arguments.contains_key(name) && secrets.may_hold_secret(name, &steps);
                let description = if secret {
                    "the value does not have the expected type (the value is redacted)".to_owned()
                } else {
                    description
                };
                let field = match path.as_str() {
                    "" => name.to_owned(),
                    index if index.starts_with('[') => format!("{name}{index}"),
                    path => format!("{name}.{path}"),
                };
                let field = secrets.quotable_field(field);
                self.violations.push(Violation::new(field, description));
                None
            }
        }
    }

    /// `Ok` when every argument decoded and none is unknown; otherwise a
    /// `validation` envelope whose `attempted_query` is the arguments as
    /// received, secrets and unknown keys masked, and whose `violations`
    /// name every offending field path: serde stops at the first problem of
    /// each argument, the input schema finds the others.
    pub fn finish(mut self, expected: &[&str]) -> Result<(), ErrorEnvelope> {
        self.context.note_secrets(std::mem::take(&mut self.noted));
        for name in self.arguments.keys() {
            if !expected.contains(&name.as_str()) {
                let description = if expected.is_empty() {
                    "unknown argument: this tool takes no arguments".to_owned()
                } else {
                    format!(
                        "unknown argument: expected one of `{}`",
                        expected.join("`, `")
                    )
                };
                self.violations
                    .push(Violation::new(name.clone(), description));
            }
        }
        if self.violations.is_empty() {
            return self.guarded();
        }
        if let Some(schema) = self.context.input_schema() {
            let secrets = self.context.mask().paths();
            for mut violation in violations(schema, self.arguments, MAX_VIOLATIONS) {
                violation.field = secrets.quotable_field(violation.field);
                if !self
                    .violations
                    .iter()
                    .any(|known| known.field == violation.field)
                {
                    self.violations.push(violation);
                }
            }
        }
        Err(invalid_arguments(
            &self.tool.facts(),
            self.violations,
            self.context.query(self.arguments),
        ))
    }
}

impl Decoder<'_> {
    /// Runs the tool set's guards on arguments that decoded, masked where
    /// the schema marks a secret: a guard judges what the tool would get,
    /// never a value of the wrong type. Never masked by the values the
    /// call's `Secret`s were sent as: the caller chooses those, and would
    /// hide any part of the call from the guard by sending it as a secret
    /// too.
    fn guarded(self) -> Result<(), ErrorEnvelope> {
        let Some(guards) = self.context.guards() else {
            return Ok(());
        };
        let judged = {
            let shown = self.context.mask().paths().mask(self.arguments);
            let caller = self.context.context_ref().caller();
            let waivers = Waivers::new('s', self.context.approved());
            let call = (ToolCall::new(&self.tool.name, &shown))
                .with_caller(caller)
                .with_waivers(&waivers);
            verdict(&call, guards)
        };
        judged.map_err(|envelope| {
            let query = self.context.query(self.arguments);
            settle(envelope, &self.tool.facts(), query, &|| None)
        })
    }
}

/// The most violations one call collects; the wire sends fewer
/// ([`EnvelopeLimits::list_items`](crate::EnvelopeLimits::list_items)).
const MAX_VIOLATIONS: usize = 256;

/// The envelope of arguments that could not be used, settled.
pub(crate) fn invalid_arguments(
    facts: &Facts,
    violations: Vec<Violation>,
    query: Query<'_>,
) -> ErrorEnvelope {
    let envelope = unusable_arguments(&facts.tool, violations);
    settle(envelope, facts, query, &|| None)
}

/// What a served tool's success is sent as: its JSON, or content blocks.
#[derive(Debug)]
pub enum Success {
    /// A value, sent as `structuredContent` and its text.
    Json(Value),
    /// Content blocks, sent as they are.
    Contents(crate::mcp::reply::Contents),
}

/// The success value of a served tool, as JSON.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of a served tool: it must implement `serde::Serialize`",
    label = "a client cannot be sent a `{Self}`",
    note = "derive `Serialize` for it; or, if the tool is only called from Rust, mark it `#[tool(local)]`"
)]
pub trait Output: Sized + 'static {
    /// The value as JSON; a value JSON cannot carry is an `other` failure.
    fn to_json(self, tool: &ToolInfo) -> crate::ToolResult<Success>;
}

#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + 'static> Output for T {
    fn to_json(self, tool: &ToolInfo) -> crate::ToolResult<Success> {
        let value = self;
        let json = crate::json::strict::to_value(&value);
        if json.is_err() {
            dispose(Box::new(value));
        }
        unserializable(json, tool).map(Success::Json)
    }
}

/// Content blocks are sent as they are. Support for generated code, hidden
/// from the documentation as the rest of it is.
#[doc(hidden)]
impl Output for crate::mcp::reply::Contents {
    fn to_json(self, _: &ToolInfo) -> crate::ToolResult<Success> {
        Ok(Success::Contents(self))
    }
}

/// Drops a result that could not be sent; a `serde_json::Value` nested too
/// deep is taken apart level by level, since dropping it recursively could
/// overflow the stack.
fn dispose(value: Box<dyn std::any::Any>) {
    if let Ok(value) = value.downcast::<Value>() {
        crate::json::depth::dismantle(*value);
    }
}

/// A result JSON cannot carry — its `Serialize` fails or panics, it nests
/// deeper than [`MAX_DEPTH`](crate::MAX_DEPTH), it holds a NaN — is an
/// `other` failure, not retryable: the same call gives the same result. The
/// tool set settles it, as every failure the call did not settle itself.
fn unserializable(
    value: Result<Value, crate::json::strict::Problem>,
    tool: &ToolInfo,
) -> crate::ToolResult<Value> {
    value.map_err(|problem| {
        crate::ErrorEnvelope::other(format!(
            "the result of `{}` cannot be sent: {problem}",
            tool.name
        ))
        .with_reason(crate::reasons::UNSERIALIZABLE_RESULT)
    })
}

/// How a served tool's success becomes JSON: `Output::to_json` of its type.
pub type ToJson<T> = fn(T, &ToolInfo) -> crate::ToolResult<Success>;

/// The future of one served call of a synchronous tool, already finished.
/// One type for every tool, so its code is generated once.
pub fn json_ready<'a>(
    result: crate::ToolResult<Success>,
) -> BoxFuture<'a, crate::ToolResult<Success>> {
    Box::pin(std::future::ready(result))
}

/// The future of one served call of an async tool: its run, and the success
/// as JSON. A named future, not an `async` block, so that each tool compiles
/// the least code.
pub fn json_of<'a, T, F>(
    run: F,
    tool: &'static ToolInfo,
) -> BoxFuture<'a, crate::ToolResult<Success>>
where
    T: Output,
    F: Future<Output = crate::ToolResult<T>> + Send + 'a,
{
    Box::pin(JsonOf {
        run,
        to_json: T::to_json,
        tool,
    })
}

pin_project_lite::pin_project! {
    /// See [`json_of`].
    struct JsonOf<F, T> {
        #[pin]
        run: F,
        to_json: ToJson<T>,
        tool: &'static ToolInfo,
    }
}

impl<F, T> Future for JsonOf<F, T>
where
    F: Future<Output = crate::ToolResult<T>>,
{
    type Output = crate::ToolResult<Success>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let value = std::task::ready!(this.run.poll(cx))?;
        Poll::Ready((this.to_json)(value, this.tool))
    }
}

/// One attempt of a served tool: decodes `arguments` with `decode`, every
/// problem collected; checks the tool set's guards; then `run`s the tool on
/// the values. A call whose arguments do not fit answers with a
/// `validation` envelope, and never runs.
///
/// `decode` decodes every argument before it gives up (the macro binds each
/// one, then makes the tuple with `?`), so that each problem is recorded;
/// it returns `None` only when one was. A tuple of any length: a tool may
/// take any number of parameters.
pub fn serve<'a, V>(
    arguments: &'a Map<String, Value>,
    state: &'a CallState,
    tool: &'static ToolInfo,
    keys: &[&str],
    decode: impl FnOnce(&mut Decoder<'a>) -> Option<V>,
    run: impl FnOnce(Query<'a>, V) -> BoxFuture<'a, crate::ToolResult<Success>>,
) -> BoxFuture<'a, crate::ToolResult<Success>> {
    let mut decoder = Decoder::new(arguments, tool, state);
    let decoded = decode(&mut decoder);
    match decoder.finish(keys) {
        Ok(()) => run(
            state.query(arguments),
            decoded.expect("every argument decoded"),
        ),
        Err(envelope) => json_ready(Err(envelope)),
    }
}

/// The future of a synchronous served call, already finished: its success
/// as JSON.
pub fn ready<'a, T: Output>(
    result: crate::ToolResult<T>,
    tool: &'static ToolInfo,
) -> BoxFuture<'a, crate::ToolResult<Success>> {
    json_ready(result.and_then(|value| value.to_json(tool)))
}
