//! The tools and the prompt that ask the client, as the conformance suite's
//! 2026-07-28 scenarios name them (SEP-2322: `input-required-result-*`, and
//! the probes of `server-stateless`). Each asks through [`ToolContext`], so
//! on 2025-11-25 the same tool sends its client a request, and on
//! 2026-07-28 it answers with an `InputRequiredResult`.

// Sampling and roots are deprecated in rmcp (SEP-2577); both revisions define them.
#![allow(deprecated)]

use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, GetPromptResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, PromptMessage, Role, SamplingMessage,
};
use serde_json::{Value, json};
use tool_envelope::mcp::{Elicitation, Question, ToolContext, ToolSet};
use tool_envelope::{ErrorEnvelope, tool};

/// A form of one required field of `kind`.
fn one_field(field: &str, kind: &str) -> Value {
    json!({
        "type": "object",
        "properties": {field: {"type": kind}},
        "required": [field]
    })
}

/// A question to the client's model.
fn prompt(text: &str, max_tokens: u32) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(text)], max_tokens)
}

/// The text of a sampled answer.
fn text_of(answer: &rmcp::model::CreateMessageResult) -> String {
    (answer.message.content.clone().into_vec().iter())
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect()
}

/// The field `field` of an accepted form, as text.
fn field(answer: Elicitation<serde_json::Map<String, Value>>, field: &str) -> String {
    match answer {
        Elicitation::Accepted(content) => match content.get(field) {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        },
        other => format!("({})", other.action()),
    }
}

/// Asks the user's name, and greets them.
#[tool(read_only)]
async fn test_input_required_result_elicitation(
    context: ToolContext,
) -> Result<String, ErrorEnvelope> {
    let answer = context
        .elicit_form(
            "user_name",
            "What is your name?",
            one_field("name", "string"),
        )
        .await?;
    Ok(format!("Hello, {}!", field(answer, "name")))
}

/// Asks the client's model a question.
#[tool(read_only)]
async fn test_input_required_result_sampling(
    context: ToolContext,
) -> Result<String, ErrorEnvelope> {
    let answer = context
        .sample(
            "capital_question",
            prompt("What is the capital of France?", 100),
        )
        .await?;
    Ok(format!("The model answered: {}", text_of(&answer)))
}

/// Lists the client's roots.
#[tool(read_only)]
async fn test_input_required_result_list_roots(
    context: ToolContext,
) -> Result<String, ErrorEnvelope> {
    let roots = context.roots("client_roots").await?;
    let uris: Vec<&str> = roots.iter().map(|root| root.uri.as_str()).collect();
    Ok(format!("The client's roots: {}", uris.join(", ")))
}

/// Asks for a confirmation, as the two state scenarios' tools do.
async fn confirm(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let answer = context
        .elicit_form("confirm", "Please confirm", one_field("ok", "boolean"))
        .await?;
    Ok(format!("state-ok: confirmed {}", field(answer, "ok")))
}

/// Asks for a confirmation; the answer comes back with the sealed state.
#[tool(read_only)]
async fn test_input_required_result_request_state(
    context: ToolContext,
) -> Result<String, ErrorEnvelope> {
    confirm(context).await
}

/// The same question, for the scenario that tampers with the state.
#[tool(read_only)]
async fn test_input_required_result_tampered_state(
    context: ToolContext,
) -> Result<String, ErrorEnvelope> {
    confirm(context).await
}

/// Asks a form, the model and the roots in one round.
#[tool(read_only)]
async fn test_input_required_result_multiple_inputs(
    context: ToolContext,
) -> Result<String, ErrorEnvelope> {
    let questions = vec![
        Question::form(
            "user_name",
            "What is your name?",
            one_field("name", "string"),
        )?,
        Question::sample("greeting", prompt("Generate a greeting", 50)),
        Question::roots("client_roots"),
    ];
    let answers = context.ask_all(questions).await?;
    Ok(format!(
        "Received {} answers: {}",
        answers.len(),
        Value::Array(answers)
    ))
}

/// Asks two questions, one round each.
#[tool(read_only)]
async fn test_input_required_result_multi_round(
    context: ToolContext,
) -> Result<String, ErrorEnvelope> {
    let name = context
        .elicit_form(
            "step1",
            "Step 1: What is your name?",
            one_field("name", "string"),
        )
        .await?;
    let color = context
        .elicit_form(
            "step2",
            "Step 2: What is your favorite color?",
            one_field("color", "string"),
        )
        .await?;
    Ok(format!(
        "{} likes {}",
        field(name, "name"),
        field(color, "color")
    ))
}

/// Asks only what the client declared it can answer.
#[tool(read_only)]
async fn test_input_required_result_capabilities(
    context: ToolContext,
) -> Result<String, ErrorEnvelope> {
    let declared = context.client_capabilities().cloned().unwrap_or_default();
    let mut questions = Vec::new();
    if declared.sampling.is_some() {
        questions.push(Question::sample(
            "greeting",
            prompt("Generate a greeting", 50),
        ));
    }
    if declared.elicitation.is_some() {
        questions.push(Question::form(
            "user_name",
            "What is your name?",
            one_field("name", "string"),
        )?);
    }
    if questions.is_empty() {
        return Ok("The client can answer nothing; nothing was asked.".into());
    }
    let answers = context.ask_all(questions).await?;
    Ok(format!("Received {} answers", answers.len()))
}

/// Needs the client's model: a client that did not declare sampling gets
/// the revision's error.
#[tool(read_only)]
async fn test_missing_capability(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let answer = context
        .sample("needs_sampling", prompt("Say hello", 20))
        .await?;
    Ok(text_of(&answer))
}

/// Asks the user through the response stream: the stream carries the
/// `InputRequiredResult`, never a request of its own.
#[tool(read_only)]
async fn test_streaming_elicitation(context: ToolContext) -> Result<String, ErrorEnvelope> {
    context.progress(1.0, Some(2.0), Some("about to ask")).await;
    let answer = context
        .elicit_form(
            "user_name",
            "What is your name?",
            one_field("name", "string"),
        )
        .await?;
    Ok(format!("Hello, {}!", field(answer, "name")))
}

/// Logs at `info`: on 2026-07-28, sent only under the request's `logLevel`.
#[tool(read_only)]
async fn test_logging_tool(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let sent = context.info("test_logging_tool ran").await;
    Ok(format!("logged: {sent}"))
}

/// The tools above, added to `tools`.
pub fn add_to(tools: ToolSet) -> ToolSet {
    tools
        .tool::<test_input_required_result_elicitation>()
        .tool::<test_input_required_result_sampling>()
        .tool::<test_input_required_result_list_roots>()
        .tool::<test_input_required_result_request_state>()
        .tool::<test_input_required_result_tampered_state>()
        .tool::<test_input_required_result_multiple_inputs>()
        .tool::<test_input_required_result_multi_round>()
        .tool::<test_input_required_result_capabilities>()
        .tool::<test_missing_capability>()
        .tool::<test_streaming_elicitation>()
        .tool::<test_logging_tool>()
}

/// The prompt that asks the user for context first (`prompts/get` in
/// rmcp's own terms: a tool set serves tools, not prompts).
pub const PROMPT: &str = "test_input_required_result_prompt";

/// `prompts/get` of [`PROMPT`]: the question on the first round, the
/// prompt once the answer is in.
pub fn get_prompt(
    responses: Option<InputResponses>,
) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
    let answer = responses.and_then(|mut responses| responses.remove("user_context"));
    let Some(answer) = answer else {
        let form = json!({
            "mode": "form",
            "message": "What context should the prompt use?",
            "requestedSchema": one_field("context", "string"),
        });
        let params: ElicitRequestParams =
            serde_json::from_value(form).expect("the form is one MCP allows");
        let mut requests = InputRequests::new();
        requests.insert(
            "user_context".to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        return Ok(InputRequiredResult::from_input_requests(requests).into());
    };
    let answer: ElicitResult = serde_json::from_value(answer).map_err(|error| {
        ErrorData::invalid_params(format!("not an elicitation result: {error}"), None)
    })?;
    let context = match (answer.action, answer.content) {
        (ElicitationAction::Accept, Some(content)) => content["context"].to_string(),
        _ => "(none given)".to_owned(),
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        format!("Answer with this context in mind: {context}"),
    )])
    .into())
}
