//! Whose a task is, read from the store when another replica runs it, and
//! the errors a task's request is answered with: not found, or the store
//! failed.

use std::sync::Arc;

use rmcp::ErrorData;
use serde_json::Value;

use crate::caller::Caller;
use crate::store::{Store, TaskRecord};

/// Whether `record` asks every one of `questions`: they are kept.
pub(super) fn asks_all(record: &TaskRecord, questions: &rmcp::model::InputRequests) -> bool {
    match &record.input_requests {
        Some(Value::Object(asked)) => questions.keys().all(|key| asked.contains_key(key)),
        _ => questions.is_empty(),
    }
}

/// Whether `caller` may reach a task made by `subject` with a token that
/// granted `scopes`: the same subject, and every one of those scopes.
pub(super) fn reaches(caller: Option<&Caller>, subject: Option<&str>, scopes: &[String]) -> bool {
    match caller {
        Some(caller) => subject
            .is_some_and(|subject| caller.stands_for(subject, scopes.iter().map(String::as_str))),
        None => subject.is_none() && scopes.is_empty(),
    }
}

/// A task kept in the store (with the service asking: `store`) for
/// `caller`, whatever replica runs it: another service's is as unknown as
/// another caller's, and one past its time to live as one swept.
pub(super) async fn kept(
    id: &str,
    caller: Option<&Caller>,
    store: Option<(&Arc<dyn Store>, &str)>,
) -> Result<TaskRecord, ErrorData> {
    let Some((store, service)) = store else {
        return Err(unknown_task());
    };
    match store.task(id).await {
        Ok(Some(record))
            if reaches(caller, record.caller.as_deref(), &record.caller_scopes)
                && record.service == service
                && !record.lapsed_at(crate::store::now_ms()) =>
        {
            Ok(record)
        }
        Ok(_) => Err(unknown_task()),
        Err(error) => Err(store_failed(id, &error)),
    }
}

/// The error of a task request whose task this server does not have for
/// the caller: unknown, gone, or another caller's — one text for all,
/// which echoes nothing of the request (SEP-2663's `-32602`).
pub(crate) fn unknown_task() -> ErrorData {
    ErrorData::invalid_params("Failed to retrieve task: Task not found", None)
}

/// The answer to a task's request when the store that keeps it failed (or
/// did not answer in time): an internal error, to ask again — not "not
/// found", which a client would take as the task gone for good. It says
/// the same whether or not the task exists, and whose it is.
pub(super) fn store_failed(id: &str, error: &crate::store::StoreError) -> ErrorData {
    tracing::warn!(task = %id, %error, "a task's request: the store failed");
    ErrorData::internal_error("the task store did not answer; ask again", None)
}
