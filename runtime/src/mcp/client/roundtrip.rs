//! One `tools/call` through the client: the arguments checked and guarded
//! before anything is sent, the request on the live connection within the
//! timeout, the reply read, and every failure settled.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::{Map, Value};
use tokio::time::Instant;

use std::pin::pin;

use futures_util::future::{Either, select};

use crate::envelope::ErrorEnvelope;
use crate::guard::{ToolCall, verdict};
use crate::limits::text_for_wire;
use crate::mcp::client::connection::{Link, ProgressCallback};
use crate::mcp::client::failure;
use crate::mcp::client::reply;
use crate::mcp::client::secrets::Sent;
use crate::mcp::client::task;
use crate::mcp::client::tools::RemoteTool;
use crate::mcp::violations::not_an_object;
use crate::query::Query;
use crate::reasons;
use crate::redact::arguments::ArgumentMask;
use crate::redact::schema::SecretPaths;
use crate::redact::values::{Masker, SecretValues};
use crate::scope::Scope;
use crate::settle::{Facts, Source, settle};

/// What a call that succeeded gives back: its value, and the tool as the
/// connection listed it, if it did.
pub(crate) struct Called {
    pub(crate) value: Value,
    pub(crate) tool: Option<Arc<RemoteTool>>,
}

/// Calls the tool `name` with `arguments` over `link`: its value, or its
/// failure settled. Reaching the server, listing its tools (once per
/// session) and the call itself share the client's timeout.
pub(crate) async fn call(
    link: &Link,
    name: &str,
    arguments: Value,
    on_progress: Option<ProgressCallback>,
) -> Result<Called, ErrorEnvelope> {
    // The credentials as they are when the failure is settled: a token
    // the call's own refusal (401) or a refresh brought is one of them.
    let settle = |envelope, arguments: &Map<String, Value>, tool: Option<&RemoteTool>, sent| {
        let credentials = link.sent.credentials();
        let query = Query::Arguments(arguments, Scope::masked(mask(tool, &credentials)));
        finish(envelope, name, query, tool, sent)
    };
    let arguments = match arguments {
        Value::Object(arguments) => arguments,
        Value::Null => Map::new(),
        other => {
            let (envelope, shown) = not_an_object(name, &other);
            return Err(finish(envelope, name, Query::Described(shown), None, false));
        }
    };
    if let Err(envelope) = verdict(&ToolCall::new(name, &arguments), &*link.options.guards) {
        let tool = link.listed_tool(name);
        return Err(settle(envelope, &arguments, tool.as_deref(), false));
    }
    let timeout = link.options.timeout;
    // A timeout past what the clock can count (`Duration::MAX`): none.
    let deadline = (Instant::now().checked_add(timeout))
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 24 * 60 * 60));
    let timed_out = || {
        failure::not_sent(format!(
            "the MCP server could not be called within {} ms",
            timeout.as_millis()
        ))
        .with_reason(reasons::TIMEOUT)
    };
    let ready = tokio::time::timeout_at(deadline, async {
        let connection = link.connection().await?;
        // The session the tool is judged by, read before it is listed: one
        // rmcp opens from here on (the server restarted) may list it
        // otherwise.
        let session = connection.session();
        let tool = link.known_tool(&connection, name).await;
        Ok::<_, ErrorEnvelope>((connection, tool, session))
    })
    .await;
    let (connection, tool, session) = match ready {
        Ok(Ok(ready)) => ready,
        Ok(Err(envelope)) => return Err(settle(envelope, &arguments, None, false)),
        Err(_) => return Err(settle(timed_out(), &arguments, None, false)),
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(settle(timed_out(), &arguments, tool.as_deref(), false));
    }
    // The secret values of these arguments, and the credentials sent.
    let secret_now = secret_values(&arguments, tool.as_deref(), &link.sent.credentials());
    // A server's progress messages reach the caller quoting none of them.
    let on_progress =
        on_progress.map(|callback| masked_progress(callback, &secret_now, Arc::clone(&link.sent)));
    let running = link.sent.running(secret_now);
    // What a question may not quote: the secret values of every call in
    // flight (this one's among them, now that it runs) and the
    // credentials, as 2025-11-25's questions are masked — a server may
    // quote another call's secret in this call's question.
    let in_flight = || link.sent.everything();
    let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.clone());
    let mut rounds = 0;
    // Whether the server asked a question: a round reached it.
    let mut asked_once = false;
    let outcome = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
        let options = PeerRequestOptions::with_timeout(left);
        let handle = match connection
            .peer()
            .send_cancellable_request(request, options)
            .await
        {
            Ok(handle) => handle,
            // This round never left: rmcp refuses a request only when its
            // connection has closed (past the first round, settled below).
            Err(error) if rounds == 0 => {
                let envelope = failure::classify_error(&error, true);
                return Err(settle(envelope, &arguments, tool.as_deref(), false));
            }
            Err(error) => break Err(failure::classify_error(&error, true)),
        };
        link.count_sent();
        rounds += 1;
        let token = handle.progress_token.clone();
        let answered = link.routing(&token, on_progress.clone(), handle.await_response());
        let response = match select(pin!(answered), pin!(running.call().flooded())).await {
            Either::Left((response, _)) => response,
            Either::Right(((), _)) => {
                break Err(failure::flooded(
                    name,
                    link.options.questions_in_all(),
                    true,
                ));
            }
        };
        break match response {
            Ok(ServerResult::CallToolResult(result)) => reply::read_result(result, name),
            // 2026-07-28: the tool asks; answered, the call is sent again
            // with the answers and the server's state.
            Ok(ServerResult::InputRequiredResult(asked)) if rounds < MAX_ROUNDS => {
                asked_once = true;
                let requests = asked.input_requests.unwrap_or_default();
                if requests.len() > link.options.max_questions {
                    break Err(failure::flooded(name, link.options.max_questions, false));
                }
                let answered = tokio::time::timeout_at(
                    deadline,
                    link.options.answers.answer_all(name, requests, &in_flight()),
                )
                .await;
                match answered {
                    Ok(Ok(responses)) => {
                        params.input_responses = Some(responses);
                        params.request_state = asked.request_state;
                        continue;
                    }
                    Ok(Err(envelope)) => Err(envelope),
                    Err(_) => Err(ErrorEnvelope::transient(format!(
                        "the MCP server's questions about `{name}` were not answered within {} ms",
                        timeout.as_millis()
                    ))
                    .with_reason(reasons::TIMEOUT)),
                }
            }
            // Run as a task, for a client that declared the extension.
            Ok(ServerResult::CreateTaskResult(created)) if link.options.tasks => {
                let id = created.task.task_id.clone();
                let task = task::follow(link, &connection, name, created.task, deadline, &in_flight);
                match select(pin!(task), pin!(running.call().flooded())).await {
                    Either::Left((outcome, _)) => outcome,
                    Either::Right(((), _)) => {
                        task::give_up(&connection, id).await;
                        Err(failure::flooded(name, link.options.questions_in_all(), true))
                    }
                }
            }
            Ok(ServerResult::InputRequiredResult(_)) => Err(ErrorEnvelope::other(format!(
                "the MCP server asked for input {MAX_ROUNDS} times for one call of `{name}`"
            ))
            .with_reason(reasons::UNEXPECTED_REPLY)),
            Ok(other) => Err(ErrorEnvelope::other(format!(
                "the MCP server answered `tools/call` of `{name}` with a result of another kind: {}",
                text_for_wire(&format!("{other:?}"), 256)
            ))
            .with_reason(reasons::UNEXPECTED_REPLY)),
            Err(error) => Err(failure::classify_error(&error, false)),
        };
    };
    drop(running);
    // The server restarted during the call, and rmcp sent it again on a
    // new session: what the tool's listing said (safe to repeat, where its
    // secrets are) is an earlier server's. Settled as a tool it did not
    // list: not safe to repeat, every argument hidden.
    let tool = tool.filter(|_| connection.session() == session);
    match outcome {
        Ok(value) => Ok(Called { value, tool }),
        Err(envelope) => {
            // Once the server asked, a round reached it, and it may have
            // acted on it: whatever a later round's failure proves of that
            // round alone — not sent, refused before it was read — is not
            // the call's.
            let envelope = match asked_once {
                true => envelope.with_not_applied(false),
                false => envelope,
            };
            Err(settle(envelope, &arguments, tool.as_deref(), true))
        }
    }
}

/// `callback`, given progress whose message quotes none of `secrets` (the
/// call's, as it began) nor any credential `sent` has sent by the time
/// the message comes (a token obtained during the call too): held by the
/// callback itself, since a notification may be handled after its call
/// returned.
fn masked_progress(
    callback: ProgressCallback,
    secrets: &SecretValues,
    sent: Arc<Sent>,
) -> ProgressCallback {
    let secrets = secrets.clone();
    // One masker of the call's secrets and the credentials sent, made
    // again only when a credential was added.
    let made: std::sync::Mutex<Option<(u64, Option<Arc<Masker>>)>> = std::sync::Mutex::new(None);
    Arc::new(move |mut progress: crate::mcp::client::Progress| {
        if let Some(message) = &progress.message {
            let masker = {
                let generation = sent.generation();
                let mut made = made
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match &*made {
                    Some((at, masker)) if *at == generation => masker.clone(),
                    _ => {
                        let mut values = secrets.clone();
                        for credential in sent.credentials() {
                            values.add(&credential);
                        }
                        let masker = values.masker().map(Arc::new);
                        *made = Some((generation, masker.clone()));
                        masker
                    }
                }
            };
            if let Some(masker) = masker
                && let Cow::Owned(masked) = masker.text(message)
            {
                progress.message = Some(masked);
            }
        }
        callback(progress);
    })
}

/// The secret values of a call of `tool` with `arguments`, and the
/// client's `credentials`: what no text that comes back, and no question
/// handed to a handler, may quote — as [`finish`] masks them.
fn secret_values(
    arguments: &Map<String, Value>,
    tool: Option<&RemoteTool>,
    credentials: &[Value],
) -> SecretValues {
    mask(tool, credentials).values(arguments)
}

/// How the arguments of a call of `tool` are masked wherever they are
/// shown: by its schema (every value, for a tool the connection did not
/// list), and by the client's `credentials`.
pub(crate) fn mask<'a>(tool: Option<&'a RemoteTool>, credentials: &'a [Value]) -> ArgumentMask<'a> {
    ArgumentMask::new(tool.map_or(&UNKNOWN, RemoteTool::secrets), credentials)
}

/// The schema of a tool the connection did not list: every value secret.
static UNKNOWN: SecretPaths = SecretPaths::UNKNOWN;

/// The most rounds of one call: a server that keeps asking stops there.
const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// Settles a failure of the call of `name` (see [`settle`]): whatever the
/// server said, it names the tool that was called, shows the arguments —
/// `query`, masked as [`mask`] says: the server's account of them, or the
/// arguments sent — quotes no secret value that was sent nor any of the
/// client's credentials, and carries the one retry decision — safe to
/// repeat by the tool's annotations, or because nothing was `sent`. A tool
/// the connection did not list (`tool` is `None`) has no schema to go by:
/// every value of its arguments is masked, and every text sent that is
/// long enough to be masked anywhere.
pub(crate) fn finish(
    envelope: ErrorEnvelope,
    name: &str,
    query: Query<'_>,
    tool: Option<&RemoteTool>,
    sent: bool,
) -> ErrorEnvelope {
    let facts = Facts {
        tool: Cow::Owned(name.to_owned()),
        safe_to_repeat: tool.is_some_and(RemoteTool::is_safe_to_repeat),
        sent,
        source: Source::Remote,
    };
    let envelope = match tool {
        Some(tool) => within_secrets(envelope, tool.secrets()),
        None => envelope,
    };
    settle(envelope, &facts, query, &|| None)
}

/// `envelope` with each violation's field cut where the tool's schema
/// puts a secret ([`SecretPaths::quotable_field`]), and the texts that
/// quoted a field so cut (a message naming the first violation) saying it
/// cut the same way: a server that names a key the client sent inside a
/// secret map (`tenants.sk_live_…`) names a secret.
fn within_secrets(envelope: ErrorEnvelope, secrets: &SecretPaths) -> ErrorEnvelope {
    if envelope.violations().is_empty() {
        return envelope;
    }
    let mut cut = Vec::new();
    let envelope = envelope.remade(|parts| {
        for violation in &mut parts.violations {
            let field = secrets.quotable_field(violation.field.clone());
            if field != violation.field {
                cut.push((
                    std::mem::replace(&mut violation.field, field.clone()),
                    field,
                ));
            }
        }
    });
    if cut.is_empty() {
        return envelope;
    }
    let mut envelope = envelope;
    envelope.visit_texts(&mut |text| {
        for (was, now) in &cut {
            if text.contains(was.as_str()) {
                *text = text.replace(was.as_str(), now);
            }
        }
    });
    envelope
}
