//! A call the server runs as a task (MCP's tasks extension, SEP-2663), for
//! a client that declared it: polled with `tasks/get` until it ends, its
//! questions answered with `tasks/update` by the caller's handlers, and
//! cancelled with `tasks/cancel` when the client gives up on it: the call's
//! time is up, or the task asks more than the client answers, or asks what
//! it cannot answer.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::{
    CallToolResult, CancelTaskParams, ErrorData, GetTaskParams, InputRequests, Task, TaskPayload,
    UpdateTaskParams,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::envelope::ErrorEnvelope;
use crate::mcp::client::connection::{Connection, Link};
use crate::mcp::client::failure;
use crate::mcp::client::reply;
use crate::reasons;
use crate::redact::values::SecretValues;

/// The shortest and longest waits between two polls, whatever the server
/// suggests.
const POLL: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(5));

/// How many polls in a row may meet a retryable fault (the envelope's own
/// verdict) before the call gives up: a replica that dies behind a proxy fails the requests it was
/// serving (HTTP 502) while the task lives on in the shared store, and
/// `tasks/get` only reads, so asking again is safe.
const POLL_FAULTS: u32 = 5;

/// Follows the task `task` of the call of `name` until it ends, or until
/// `deadline`: its result read as any call's is, or its failure. A task
/// the client gives up on is cancelled ([`give_up`]).
pub(crate) async fn follow(
    link: &Link,
    connection: &Connection,
    name: &str,
    task: Task,
    deadline: Instant,
    secrets: &(dyn Fn() -> SecretValues + Sync),
) -> Result<Value, ErrorEnvelope> {
    let id = task.task_id.clone();
    let mut wait = poll_interval(&task);
    let mut answered: HashSet<String> = HashSet::new();
    let mut faults = 0;
    // An `Err` says whether the client gives up on the task (`true`) or
    // the task, or the way to it, ended (`false`).
    let ended = |envelope| (envelope, false);
    let gave_up = |envelope| (envelope, true);
    let outcome = tokio::time::timeout_at(deadline, async {
        loop {
            let polled = connection
                .peer()
                .get_task(GetTaskParams::new(id.clone()))
                .await;
            let state = match polled {
                Ok(state) => state,
                Err(error) => {
                    let fault = failure::classify_error(&error, true);
                    faults += 1;
                    if !fault.is_retryable() || faults == POLL_FAULTS {
                        return Err(ended(started(name, fault)));
                    }
                    tokio::time::sleep(wait).await;
                    continue;
                }
            };
            faults = 0;
            // Another task's state (a proxy's mix-up, a server's bug) says
            // nothing of this call's.
            if state.task.task.task_id != id {
                return Err(gave_up(ErrorEnvelope::other(format!(
                    "the MCP server answered a poll of the task of `{name}` with another task's state"
                ))
                .with_reason(reasons::UNEXPECTED_REPLY)));
            }
            wait = poll_interval(&state.task.task);
            match state.task.payload {
                TaskPayload::Completed { result } => {
                    let result: CallToolResult = serde_json::from_value(Value::Object(result))
                        .map_err(|error| ended(unreadable(name, &error)))?;
                    // Once the client answered its questions, the task went
                    // on with them: as after a 2026-07-28 round, its failure
                    // proves nothing not applied, whatever the server says.
                    return reply::read_result(result, name).map_err(|failed| match answered.is_empty() {
                        true => ended(failed),
                        false => ended(failed.with_not_applied(false)),
                    });
                }
                TaskPayload::Failed { error } => {
                    let error: ErrorData = serde_json::from_value(Value::Object(error))
                        .map_err(|error| ended(unreadable(name, &error)))?;
                    return Err(ended(failure::classify_error(
                        &rmcp::ServiceError::McpError(error),
                        true,
                    )));
                }
                TaskPayload::Cancelled => return Err(ended(cancelled(name))),
                TaskPayload::InputRequired { input_requests } => {
                    let fresh: InputRequests = input_requests
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    // At once, and in all: a round of the call's is asked
                    // at most as many, and a call has at most its rounds.
                    let most = link.options.max_questions;
                    if fresh.len() > most {
                        return Err(gave_up(failure::flooded(name, most, false)));
                    }
                    let in_all = link.options.questions_in_all();
                    if answered.len() + fresh.len() > in_all {
                        return Err(gave_up(failure::flooded(name, in_all, true)));
                    }
                    if !fresh.is_empty() {
                        answered.extend(fresh.keys().cloned());
                        let responses = link
                            .options
                            .answers
                            .answer_all(name, fresh, &secrets())
                            .await
                            .map_err(gave_up)?;
                        connection
                            .peer()
                            .update_task(UpdateTaskParams::new(id.clone(), responses))
                            .await
                            .map_err(|error| {
                                ended(started(name, failure::classify_error(&error, true)))
                            })?;
                        continue;
                    }
                }
                _ => {}
            }
            tokio::time::sleep(wait).await;
        }
    })
    .await;
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err((envelope, false))) => Err(envelope),
        Ok(Err((envelope, true))) => {
            give_up(connection, id).await;
            Err(envelope)
        }
        Err(_) => {
            // Out of time: the server is told, and the call says so.
            give_up(connection, id).await;
            Err(ErrorEnvelope::transient(format!(
                "the task of `{name}` did not finish within the client's timeout, and was cancelled"
            ))
            .with_reason(reasons::TIMEOUT))
        }
    }
}

/// Tells the server to cancel the task `id`, which the client no longer
/// follows: it would run on, or wait for answers, with nobody to read it.
/// Whatever the server answers (within a poll's longest wait) changes
/// nothing of the call's failure.
pub(crate) async fn give_up(connection: &Connection, id: String) {
    let cancel = connection.peer().cancel_task(CancelTaskParams::new(id));
    // Not its error's text: the server's own words, which may quote what
    // the client sent it (its credentials).
    if let Ok(Err(_)) = tokio::time::timeout(POLL.1, cancel).await {
        tracing::debug!("the MCP server did not cancel a task the client gave up on");
    }
}

/// How long to wait before the next poll: the server's suggestion, within
/// bounds.
fn poll_interval(task: &Task) -> Duration {
    let suggested = task.poll_interval_ms.map_or(POLL.1, Duration::from_millis);
    suggested.clamp(POLL.0, POLL.1)
}

/// `failed`, a poll or an answer of the task of the call of `name` that
/// failed after the task began: whatever that request proves of itself —
/// not sent, refused before it was read (`429`, `503`) — the call was
/// applied: the task runs, or ran. A request not sent says the connection
/// was lost; any other keeps its words, and proves nothing not applied.
fn started(name: &str, failed: ErrorEnvelope) -> ErrorEnvelope {
    if failed.reason() != Some(reasons::NOT_APPLIED) {
        return failed.with_not_applied(false);
    }
    ErrorEnvelope::transient(format!(
        "the MCP server's task of `{name}` began, then the connection to it was lost ({}); the call may have taken effect",
        failed.message()
    ))
    .with_reason(reasons::CONNECTION_LOST)
}

/// The envelope of a task the server cancelled.
fn cancelled(name: &str) -> ErrorEnvelope {
    ErrorEnvelope::other(format!("the task of `{name}` was cancelled"))
        .with_reason(reasons::UNEXPECTED_REPLY)
}

/// The envelope of a task state that could not be read.
fn unreadable(name: &str, error: &serde_json::Error) -> ErrorEnvelope {
    ErrorEnvelope::other(format!(
        "the MCP server's task of `{name}` could not be read: {}",
        crate::limits::text_for_wire(&error.to_string(), 256)
    ))
    .with_reason(reasons::UNEXPECTED_REPLY)
}
