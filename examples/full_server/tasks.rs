//! The tools the conformance suite's tasks scenarios call (SEP-2663,
//! `io.modelcontextprotocol/tasks`): `greet` answers in the request;
//! `slow_compute`, `confirm_delete`, `multi_input` and `failing_job` run as
//! tasks for a client that declares the extension ([`ToolSet::tasks`]).

use std::time::Duration;

use serde_json::json;
use tool_envelope::mcp::{Contents, Elicitation, Question, TaskSupport, ToolContext, ToolSet};
use tool_envelope::{ErrorEnvelope, tool};

/// Greets `name`, in the request: never a task.
#[tool(read_only)]
fn greet(
    /// Whom to greet.
    name: String,
) -> Result<Contents, ErrorEnvelope> {
    Ok(Contents::new().text(format!("Hello, {name}!")))
}

/// Computes for `seconds`, then answers: a task.
#[tool(read_only)]
async fn slow_compute(
    /// How long to compute.
    seconds: f64,
    /// A label to find the result by.
    label: Option<String>,
) -> Result<String, ErrorEnvelope> {
    tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 60.0))).await;
    Ok(format!(
        "computed {} in {seconds}s",
        label.unwrap_or_default()
    ))
}

/// Deletes `filename` once the user confirms: a task that asks.
#[tool(destructive)]
async fn confirm_delete(
    context: ToolContext,
    /// The file to delete.
    filename: String,
) -> Result<String, ErrorEnvelope> {
    let form = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "description": "Delete it?"}},
        "required": ["confirm"]
    });
    let message = format!("Delete {filename}?");
    match context.elicit_form("confirm", message, form).await? {
        Elicitation::Accepted(answer) if answer.get("confirm") == Some(&json!(true)) => {
            Ok(format!("deleted {filename}"))
        }
        _ => Ok(format!("kept {filename}")),
    }
}

/// Asks two questions at once: a task waiting on both, answered one at a
/// time.
#[tool(read_only)]
async fn multi_input(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let form = |field: &str, kind: &str| json!({"type": "object", "properties": {field: {"type": kind}}, "required": [field]});
    let answers = context
        .ask_all(vec![
            Question::form("name", "What is your name?", form("name", "string"))?,
            Question::form("confirm", "Go ahead?", form("confirm", "boolean"))?,
        ])
        .await?;
    Ok(format!("answered {}", answers.len()))
}

/// Fails as a tool does: a task that completes with `isError`.
#[tool(read_only)]
async fn failing_job() -> Result<String, ErrorEnvelope> {
    Err(ErrorEnvelope::business("The job failed, as it always does").with_reason("JOB_FAILED"))
}

/// The tools above, added to `tools`: all but `greet` run as tasks, and
/// `failing_job` only as one.
pub fn add_to(tools: ToolSet) -> ToolSet {
    tools
        .tool::<greet>()
        .tool::<slow_compute>()
        .tool::<confirm_delete>()
        .tool::<failing_job>()
        .tool::<multi_input>()
        .tasks(|tool| match tool.name.as_str() {
            "slow_compute" | "confirm_delete" | "multi_input" => TaskSupport::Optional,
            "failing_job" => TaskSupport::Required,
            _ => TaskSupport::Never,
        })
}
