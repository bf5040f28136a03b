//! One `#[tool]` call: body → classify → envelope, with panics caught.
//!
//! The code `#[tool]` generates captures the arguments and then hands the body
//! to [`call_sync`] or [`call_async`]; everything after the body runs here, in
//! ordinary Rust, so the generated code stays small.
// Support for generated code, reached only through `__private`: the
// `# Errors` of these functions are the generated code's concern.
#![allow(clippy::missing_errors_doc)]

pub(crate) mod hints;
pub(crate) mod probe;

use std::any::Any;
use std::borrow::Cow;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::classify::panicked;
use crate::classify::{ToolError, caught_envelope};
use crate::envelope::{ErrorEnvelope, Refusal, ToolResult, Violation};
use crate::guard::{Guard, ToolCall, Waivers, verdict};
use crate::partial::Partial;
use crate::query::Query;
use crate::reasons;
use crate::settle::{Facts, settle};

/// What `#[tool]` knows about a tool at compile time: one static per tool,
/// read when it runs and when its MCP definition is built.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    /// The tool's name, as it appears in the envelope's `tool`.
    pub name: Cow<'static, str>,
    /// Its title.
    pub title: Option<&'static str>,
    /// Its description: the doc comment or `description = "..."`.
    pub description: &'static str,
    /// `read_only`.
    pub read_only: bool,
    /// `destructive`.
    pub destructive: bool,
    /// Whether the tool declared itself safe to repeat (`idempotent`, or
    /// implied by `read_only`).
    pub idempotent: bool,
    /// `open_world`.
    pub open_world: bool,
    /// Append a one-line summary of the failure modes to the description.
    pub describe_failures: bool,
    /// Parameters whose values never reach an envelope (`redact`).
    pub redacted: &'static [&'static str],
    /// How long an async tool may run (`timeout = "..."`); `None` for no limit.
    pub timeout: Option<std::time::Duration>,
    /// Whether it has a guard of its own (`guard = ...`).
    pub guarded: bool,
}

impl ToolInfo {
    /// `read_only`, in the flags of [`new`](Self::new).
    pub const READ_ONLY: u8 = 1;
    /// `destructive`.
    pub const DESTRUCTIVE: u8 = 2;
    /// `idempotent`.
    pub const IDEMPOTENT: u8 = 4;
    /// `open_world`.
    pub const OPEN_WORLD: u8 = 8;
    /// `describe_failures`.
    pub const DESCRIBE_FAILURES: u8 = 16;
    /// `guard = ...`.
    pub const GUARDED: u8 = 32;

    /// What `#[tool]` writes, in one short line: the flags are the
    /// constants above.
    pub const fn new(
        name: &'static str,
        description: &'static str,
        flags: u8,
        redacted: &'static [&'static str],
    ) -> Self {
        ToolInfo {
            name: Cow::Borrowed(name),
            title: None,
            description,
            read_only: flags & Self::READ_ONLY != 0,
            destructive: flags & Self::DESTRUCTIVE != 0,
            idempotent: flags & Self::IDEMPOTENT != 0,
            open_world: flags & Self::OPEN_WORLD != 0,
            describe_failures: flags & Self::DESCRIBE_FAILURES != 0,
            redacted,
            timeout: None,
            guarded: flags & Self::GUARDED != 0,
        }
    }

    /// With a title.
    pub const fn with_title(mut self, title: &'static str) -> Self {
        self.title = Some(title);
        self
    }

    /// With a `timeout`.
    pub const fn with_timeout_ms(mut self, ms: u64) -> Self {
        self.timeout = Some(std::time::Duration::from_millis(ms));
        self
    }

    /// What the call knows of itself when it fails, to settle its envelope.
    pub(crate) fn facts(&self) -> Facts {
        Facts::local(self.name.clone(), self.idempotent)
    }
}

/// The query of a direct call: the typed arguments `write` captures.
pub fn captured(
    write: &mut dyn FnMut(&mut crate::query::capture::CaptureWriter),
) -> Query<'static> {
    Query::Captured(crate::query::capture::capture(write))
}

/// A type a `#[tool]` function may return: a `Result`.
///
/// Implemented for every `Result<T, E>`, so any alias of `Result` works
/// (`io::Result<T>`, `anyhow::Result<T>`, a crate's own `Result<T>`); the
/// error must also be a [`ToolError`], which the call checks on its own so
/// that each mistake is reported once.
#[diagnostic::on_unimplemented(
    message = "a #[tool] function must return a `Result`, not `{Self}`",
    label = "this is not a `Result<T, E>`",
    note = "return `Result<T, E>` (or an alias of it) where `E: ToolError`; a look-up that finds nothing returns `Ok(Found::none())`"
)]
pub trait IntoToolResult {
    /// The success type.
    type Ok;
    /// The error type.
    type Err;
    /// Converts into a plain `Result`.
    fn into_result(self) -> Result<Self::Ok, Self::Err>;
}

impl<T, E> IntoToolResult for Result<T, E> {
    type Ok = T;
    type Err = E;

    fn into_result(self) -> Result<T, E> {
        self
    }
}

/// Where the partial results of a failed call come from.
pub trait PartialSource {
    /// The items gathered so far, as JSON; `None` for a tool that gathers none.
    fn partial_json(&self) -> Option<Value>;
}

/// A tool without a `Partial` parameter.
impl PartialSource for () {
    fn partial_json(&self) -> Option<Value> {
        None
    }
}

/// An item type a `Partial` collector can report in `partial_results`.
#[diagnostic::on_unimplemented(
    message = "partial results of type `{Self}` cannot be reported in `partial_results`: it does not implement `serde::Serialize`",
    label = "`{Self}` is not `Serialize`",
    note = "derive `serde::Serialize` for the items the tool gathers"
)]
pub trait PartialItem: Serialize {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> PartialItem for T {}

/// The tool's own handle on its `Partial` parameter, read if the call fails.
#[derive(Debug)]
pub struct PartialHandle<T> {
    partial: Partial<T>,
    to_json: fn(&Partial<T>) -> Value,
}

impl<T> PartialHandle<T> {
    /// How the handle reads its collector as JSON.
    pub(crate) fn to_json(&self) -> fn(&Partial<T>) -> Value {
        self.to_json
    }
}

impl<T> PartialSource for PartialHandle<T> {
    fn partial_json(&self) -> Option<Value> {
        Some((self.to_json)(&self.partial))
    }
}

/// The tool's own handle on its `Partial` parameter.
///
/// The `Serialize` requirement is checked here, once, where the macro points
/// it at the parameter's type; the handle itself asks nothing more.
pub fn partial_source<T: PartialItem>(partial: &Partial<T>) -> PartialHandle<T> {
    PartialHandle {
        partial: partial.clone(),
        to_json: Partial::to_json,
    }
}

/// Runs the tool's guard on its arguments. A blocked call fails with the
/// guard's `business` envelope and the body never runs.
///
/// A guard fails closed: when an argument could not be represented in JSON
/// (a NaN, an infinity, a `Serialize` that failed), the guard would judge a
/// marker instead of the value, so the call is refused with a `validation`
/// envelope naming it, before the guard and the body.
pub fn check_guard<'q, G: Guard + ?Sized>(
    guard: &G,
    tool: &ToolInfo,
    query: Query<'q>,
) -> Result<Query<'q>, ErrorEnvelope> {
    if let Query::Captured(capture) = &query
        && !capture.unrepresentable().is_empty()
    {
        let envelope = unrepresentable(&tool.name, capture.unrepresentable().to_vec());
        return Err(settle(envelope, &tool.facts(), query, &|| None));
    }
    // Read back as the guard judges it: an object that repeats a key would
    // show the guard one value and the tool another.
    if let Query::Captured(capture) = &query
        && let Some(argument) = crate::json::unique::repeated_in(capture.as_str())
    {
        let repeated = Violation::new(
            argument,
            "writes an object that repeats a key: a guard cannot tell which value the tool reads",
        );
        let envelope = unrepresentable(&tool.name, vec![repeated]);
        return Err(settle(envelope, &tool.facts(), query, &|| None));
    }
    let judged = {
        // A guard sees the arguments masked where the schema marks a secret,
        // never by the values the call's `Secret`s were sent as: a caller
        // would hide any part from it by sending it as a secret too.
        let arguments: Cow<'_, Map<String, Value>> = match &query {
            Query::Arguments(arguments, scope) => scope.mask.paths().mask(arguments),
            Query::Captured(capture) => match capture.to_value() {
                Value::Object(arguments) => Cow::Owned(arguments),
                _ => unreachable!("a capture is always a JSON object"),
            },
            Query::Described(_) => Cow::Owned(Map::new()),
        };
        let (caller, approved) = match &query {
            Query::Arguments(_, scope) => (scope.caller, scope.approved),
            Query::Captured(_) | Query::Described(_) => (None, None),
        };
        let waivers = approved.map(|approved| Waivers::new('t', approved));
        let mut call = ToolCall::new(&tool.name, &arguments).with_caller(caller);
        if let Some(waivers) = &waivers {
            call = call.with_waivers(waivers);
        }
        verdict(&call, guard)
    };
    match judged {
        Ok(()) => Ok(query),
        Err(envelope) => Err(settle(envelope, &tool.facts(), query, &|| None)),
    }
}

/// The envelope of a guarded call whose arguments JSON cannot carry.
fn unrepresentable(tool: &str, violations: Vec<Violation>) -> ErrorEnvelope {
    let names: Vec<&str> = violations.iter().map(|v| v.field.as_str()).collect();
    let envelope = ErrorEnvelope::validation(format!(
        "`{tool}` was not run: its guard cannot judge {} `{}`, which JSON cannot represent as given",
        if names.len() == 1 { "the argument" } else { "the arguments" },
        names.join("`, `")
    ))
    .with_reason(reasons::UNREPRESENTABLE_ARGUMENT)
    .with_alternative("Call again with finite numbers and values that serialize to JSON")
    .with_violations(violations);
    envelope.remade(|parts| parts.refused = Some(Refusal::Unusable))
}

/// Runs a synchronous tool body and turns its failure or panic into an envelope.
///
/// `into_result` is `<Ret as IntoToolResult>::into_result`, named by the macro
/// at the return type, so that a return type that is not a `Result` is
/// reported there, once.
pub fn call_sync<R, T, E, P>(
    tool: &ToolInfo,
    query: Query<'_>,
    partial: P,
    body: impl FnOnce() -> R,
    into_result: fn(R) -> Result<T, E>,
) -> ToolResult<T>
where
    E: ToolError,
    P: PartialSource,
{
    if looked_ahead(&query) {
        return Err(not_run());
    }
    let outcome = catch_unwind(AssertUnwindSafe(body)).map(into_result);
    finish(tool, outcome, query, &partial)
}

/// Whether the call is only looked ahead of
/// ([`Approved`](crate::scope::Approved)): it passed every guard, and its
/// body must not run. Asked where every body would run, sync or async.
#[inline]
fn looked_ahead(query: &Query<'_>) -> bool {
    match query {
        Query::Arguments(_, scope) => scope
            .approved
            .is_some_and(crate::scope::Approved::stops_body),
        Query::Captured(_) | Query::Described(_) => false,
    }
}

/// The failure of a look ahead that reached a body, never sent: the tool
/// set reads that it got there.
#[cold]
fn not_run() -> ErrorEnvelope {
    ErrorEnvelope::other("looked ahead of: every guard passed, and the tool was not run")
}

/// Runs an asynchronous tool body and turns its failure or panic into an
/// envelope. See [`call_sync`].
///
/// A named future rather than an `async fn`: the code instantiated for each
/// tool is one small `poll`, which keeps builds of crates with many tools
/// fast; the rest (the timeout, the envelope) is compiled once, here.
///
/// `query` is the result of the tool's guard, if it has one: a blocked call
/// finishes with the guard's envelope on its first poll, and its body never
/// runs.
pub fn call_async<'a, F, T, E, P>(
    tool: &'a ToolInfo,
    query: impl Into<Checked<'a>>,
    partial: P,
    body: F,
    into_result: fn(F::Output) -> Result<T, E>,
) -> CallAsync<'a, F, T, E, P>
where
    F: Future,
    E: ToolError,
    P: PartialSource,
{
    let (rest, blocked) = match query.into().0 {
        Ok(query) if looked_ahead(&query) => (None, Some(not_run())),
        Ok(query) => (Some((tool, query, partial)), None),
        Err(envelope) => (None, Some(envelope)),
    };
    CallAsync {
        body,
        into_result,
        rest,
        blocked,
        deadline: Deadline::default(),
    }
}

/// A query a guard has checked — or that has no guard to pass — or the
/// guard's envelope.
#[derive(Debug)]
pub struct Checked<'a>(Result<Query<'a>, ErrorEnvelope>);

impl<'a> From<Query<'a>> for Checked<'a> {
    fn from(query: Query<'a>) -> Self {
        Checked(Ok(query))
    }
}

impl<'a> From<Result<Query<'a>, ErrorEnvelope>> for Checked<'a> {
    fn from(verdict: Result<Query<'a>, ErrorEnvelope>) -> Self {
        Checked(verdict)
    }
}

/// When a call with a `timeout` runs out of time, once it has started.
#[cfg(feature = "tokio")]
type Deadline = Option<std::pin::Pin<Box<tokio::time::Sleep>>>;
#[cfg(not(feature = "tokio"))]
type Deadline = ();

pin_project_lite::pin_project! {
    /// The future of an asynchronous `#[tool]` call; see [`call_async`].
    pub struct CallAsync<'a, F: Future, T, E, P> {
        #[pin]
        body: F,
        into_result: fn(F::Output) -> Result<T, E>,
        // `None` once the call has finished, or when it was blocked.
        rest: Option<(&'a ToolInfo, Query<'a>, P)>,
        // The guard's envelope, until it is returned.
        blocked: Option<ErrorEnvelope>,
        deadline: Deadline,
    }
}

impl<F, T, E, P> Future for CallAsync<'_, F, T, E, P>
where
    F: Future,
    E: ToolError,
    P: PartialSource,
{
    type Output = ToolResult<T>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<ToolResult<T>> {
        use std::task::Poll;
        let this = self.project();
        if let Some(envelope) = this.blocked.take() {
            return Poll::Ready(Err(envelope));
        }
        assert!(this.rest.is_some(), "a tool call polled after it finished");
        let mut body = this.body;
        let outcome = match poll_caught(&mut || body.as_mut().poll(cx)) {
            Ok(Poll::Ready(output)) => Ok((this.into_result)(output)),
            Err(panic) => Err(panic),
            Ok(Poll::Pending) => {
                #[cfg(feature = "tokio")]
                if let Some(envelope) = expired(this.rest, this.deadline, cx) {
                    return Poll::Ready(Err(envelope));
                }
                return Poll::Pending;
            }
        };
        let (tool, query, partial) = this.rest.take().expect("checked above");
        Poll::Ready(finish(tool, outcome, query, &partial))
    }
}

/// `poll`, with a panic caught; a trait object, so that the unwinding
/// machinery is compiled once per output type rather than once per tool.
fn poll_caught<R>(
    poll: &mut dyn FnMut() -> std::task::Poll<R>,
) -> Result<std::task::Poll<R>, Box<dyn Any + Send>> {
    catch_unwind(AssertUnwindSafe(poll))
}

/// The envelope of a call with a `timeout` that has run out of time, if it
/// has, taking what the call holds; starts the clock on the first poll.
#[cfg(feature = "tokio")]
fn expired<P: PartialSource>(
    rest: &mut Option<(&ToolInfo, Query<'_>, P)>,
    deadline: &mut Deadline,
    cx: &mut std::task::Context<'_>,
) -> Option<ErrorEnvelope> {
    let limit = rest.as_ref()?.0.timeout?;
    let sleep = deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
    if sleep.as_mut().poll(cx).is_pending() {
        return None;
    }
    let (tool, query, partial) = rest.take()?;
    let envelope = timed_out(&tool.name, limit);
    Some(settle(envelope, &tool.facts(), query, &|| {
        partial.partial_json()
    }))
}

/// The envelope of a tool that ran out of time: `transient`, since a later
/// attempt may be faster, saying how long it waited. Whether the operation was
/// applied is unknown, so a non-idempotent tool is not retried after it.
#[cfg(feature = "tokio")]
fn timed_out(tool: &str, limit: std::time::Duration) -> ErrorEnvelope {
    ErrorEnvelope::transient(format!(
        "tool `{tool}` did not finish within {} ms and was stopped",
        crate::json::millis::duration_to_ms(limit)
    ))
    .with_reason(reasons::TIMEOUT)
}

/// Present with the `tokio` feature, which `#[tool(timeout = "...")]` needs.
#[cfg(feature = "tokio")]
pub const fn timeout_needs_the_tokio_feature() {}

/// The body's own error: the body ran, so nothing of it says the call was
/// refused before it ran, or not applied — a [`Blocked`](crate::guard::Blocked)
/// the body returned from a check of its own included (its type claims
/// both, as a guard's verdict), or a refusal of a remote call it passed
/// on ([`crate::settle::ran`]). An envelope a call of this process
/// settled is passed on as [`settle`] says.
fn ran(envelope: ErrorEnvelope) -> ErrorEnvelope {
    if !envelope.was_refused() || envelope.is_settled() {
        return envelope;
    }
    envelope.remade(crate::settle::ran)
}

fn finish<T, E: ToolError>(
    tool: &ToolInfo,
    outcome: Result<Result<T, E>, Box<dyn Any + Send>>,
    query: Query<'_>,
    partial: &dyn PartialSource,
) -> ToolResult<T> {
    let envelope = match outcome {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(error)) => ran(caught_envelope(error)),
        Err(panic) => panicked(&format!("tool `{}`", tool.name), panic.as_ref()),
    };
    Err(settle(envelope, &tool.facts(), query, &|| {
        partial.partial_json()
    }))
}
