//! Asking the client: a form for the user (elicitation), a completion from
//! the client's model (sampling), or the client's roots — one call that
//! works on both MCP revisions a server meets.
//!
//! - On 2025-11-25 and before, the question is a request from the server to
//!   the client, answered while the tool waits.
//! - On 2026-07-28, a server may not make requests of the client. The call
//!   answers with an `InputRequiredResult` that carries the question; the
//!   client asks its user or model and sends the call again with the answer
//!   and the `requestState` it was given. The tool's body runs again, from
//!   the top, and this time the question finds its answer.
//!
//! # The rule for side effects: ask before acting
//!
//! On 2026-07-28 the body runs once per round: everything before the last
//! question runs again when the answers come back. Ask first, then act; or
//! make what comes before a question safe to repeat (a read, a lookup). A
//! tool that asks twice sees the first answer again on the second round: the
//! answers so far travel in the sealed `requestState`, so any replica can
//! resume a call ([`ToolSet::request_state_key`](crate::mcp::ToolSet::request_state_key)).
//!
//! Each question has a key, chosen by the tool: the answer comes back under
//! it, so it names one question of the call. Ask the same question under the
//! same key on every round: an answer answers the question as it was asked,
//! its words and form, and a key asked in other words on a later round (a
//! count that changed, a clock in the text) is asked afresh. Keys that start with `tool-envelope/` are kept
//! for this crate's own questions (a guard's approval): a question under one
//! fails with an `other` envelope, reason `RESERVED_QUESTION_KEY`.
//!
//! # What cannot be asked
//!
//! The client says what it can answer in its capabilities. A question it did
//! not declare is never sent:
//!
//! - on 2026-07-28, the call fails with the revision's error,
//!   `-32021` (missing required client capability), naming what was needed;
//! - on 2025-11-25, the question returns a `business` envelope, not
//!   retryable, with reason `CLIENT_CANNOT_ANSWER`, that names it.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use tool_envelope::{tool, ErrorEnvelope};
//! use tool_envelope::mcp::{Elicitation, ToolContext};
//!
//! /// Who the user is.
//! #[derive(Deserialize, JsonSchema)]
//! struct Name {
//!     /// The user's name.
//!     name: String,
//! }
//!
//! /// Greets the user by the name they give.
//! #[tool(read_only)]
//! async fn greet(context: ToolContext) -> Result<String, ErrorEnvelope> {
//!     match context.elicit::<Name>("user_name", "What is your name?").await? {
//!         Elicitation::Accepted(Name { name }) => Ok(format!("Hello, {name}!")),
//!         Elicitation::Declined | Elicitation::Cancelled => Ok("Hello, stranger!".into()),
//!     }
//! }
//! # let _ = greet;
//! ```

// Sampling and roots are deprecated by SEP-2577 in rmcp; both revisions a
// server meets today still define them, and the clients in use answer them.
#![allow(deprecated)]

use std::fmt;

use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    ListRootsRequest, ListRootsResult,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::kept::Kept;
use crate::envelope::ErrorEnvelope;
use crate::reasons;

/// What the user did with a form: filled it in (the answer, decoded), or
/// declined or dismissed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// The user submitted the form: its content, decoded.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed the form without choosing.
    Cancelled,
}

impl<T> Elicitation<T> {
    /// The answer, if the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicitation::Accepted(value) => Some(value),
            Elicitation::Declined | Elicitation::Cancelled => None,
        }
    }

    /// The action's name on the wire: `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            Elicitation::Accepted(_) => "accept",
            Elicitation::Declined => "decline",
            Elicitation::Cancelled => "cancel",
        }
    }
}

/// What a question asks for, as the client's capabilities name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Elicitation,
    Sampling,
    Roots,
}

impl Kind {
    /// The capability the client declares to answer it.
    pub(crate) fn capability(self) -> &'static str {
        match self {
            Kind::Elicitation => "elicitation",
            Kind::Sampling => "sampling",
            Kind::Roots => "roots",
        }
    }
}

/// One question for the client, under the key its answer comes back by.
///
/// Made with [`Question::form`], [`Question::elicit`], [`Question::sample`]
/// or [`Question::roots`], and asked with [`ToolContext::ask`] or, several
/// at once, [`ToolContext::ask_all`](crate::mcp::ToolContext::ask_all).
///
/// [`ToolContext::ask`]: crate::mcp::ToolContext::ask
#[derive(Clone)]
pub struct Question {
    key: String,
    kind: Kind,
    request: InputRequest,
    /// A form's `requestedSchema`, which an accepted answer must fit.
    form: Option<std::sync::Arc<FormCheck>>,
}

impl Question {
    /// A form for the user: `message`, and the fields of `schema`, a JSON
    /// Schema object of flat properties as MCP's elicitation allows.
    ///
    /// # Errors
    ///
    /// A `validation` envelope when `schema` is not one MCP allows.
    pub fn form(
        key: impl Into<String>,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Self, ErrorEnvelope> {
        let params = json!({"mode": "form", "message": message.into(), "requestedSchema": schema});
        let params: ElicitRequestParams = serde_json::from_value(params).map_err(|error| {
            ErrorEnvelope::validation(format!("The form is not one MCP allows: {error}"))
                .with_reason("INVALID_FORM")
        })?;
        Ok(Question::elicitation(key.into(), params))
    }

    /// A form for the user whose fields are those of `T`, from its
    /// `JsonSchema`.
    ///
    /// # Errors
    ///
    /// A `validation` envelope when `T`'s schema is not a form MCP allows
    /// (nested objects, for one).
    pub fn elicit<T: schemars::JsonSchema>(
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<Self, ErrorEnvelope> {
        let (schema, form) = form_of::<T>().map_err(|error| {
            ErrorEnvelope::validation(format!(
                "`{}` is not a form MCP allows: {error}",
                std::any::type_name::<T>()
            ))
            .with_reason("INVALID_FORM")
        })?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.into(),
            requested_schema: schema,
        };
        Ok(Question {
            key: key.into(),
            kind: Kind::Elicitation,
            request: InputRequest::Elicitation(ElicitRequest::new(params)),
            form,
        })
    }

    /// A completion from the client's model.
    pub fn sample(key: impl Into<String>, params: CreateMessageRequestParams) -> Self {
        Question {
            key: key.into(),
            kind: Kind::Sampling,
            request: InputRequest::CreateMessage(CreateMessageRequest::new(params)),
            form: None,
        }
    }

    /// The client's roots: the directories or files it lets the server see.
    pub fn roots(key: impl Into<String>) -> Self {
        Question {
            key: key.into(),
            kind: Kind::Roots,
            request: InputRequest::ListRoots(ListRootsRequest::default()),
            form: None,
        }
    }

    fn elicitation(key: String, params: ElicitRequestParams) -> Self {
        let form = match &params {
            ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            } => serde_json::to_value(requested_schema)
                .ok()
                .map(FormCheck::new),
            _ => None,
        };
        Question {
            key,
            kind: Kind::Elicitation,
            request: InputRequest::Elicitation(ElicitRequest::new(params)),
            form,
        }
    }

    /// `answer` as the answer to this question, if it is one: an object
    /// that reads as the result of its kind of request and, for a form the
    /// user accepted, whose content fits the form (types, bounds, choices,
    /// formats, required fields), its fields the form did not ask dropped:
    /// the tool reads what the person was shown, never what does not fit.
    ///
    /// # Errors
    ///
    /// What is wrong with it, bounded, to tell the client.
    pub(crate) fn answer_of(&self, mut answer: Value) -> Result<Value, String> {
        // serde would also read a struct from an array of its fields.
        if !answer.is_object() {
            return Err("an answer is a JSON object".to_owned());
        }
        let read = match self.kind {
            Kind::Elicitation => ElicitResult::deserialize(&answer).map(Some),
            Kind::Sampling => CreateMessageResult::deserialize(&answer).map(|_| None),
            Kind::Roots => ListRootsResult::deserialize(&answer).map(|_| None),
        };
        let elicited = read.map_err(|error| error.to_string())?;
        let (Some(result), Some(form)) = (elicited, &self.form) else {
            return Ok(answer);
        };
        if result.action != ElicitationAction::Accept {
            return Ok(answer);
        }
        let content = result.content.unwrap_or_else(|| json!({}));
        let problems: Vec<String> = (form.validator()?.iter_errors(&content).take(8))
            .map(|error| {
                let at = error.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                let said = error.to_string();
                format!("`{at}`: {}", crate::limits::text_for_wire(&said, 160))
            })
            .collect();
        if !problems.is_empty() {
            let problems = problems.join("; ");
            return Err(format!("the content does not fit the form: {problems}"));
        }
        if let Some(asked) = form.schema.get("properties").and_then(Value::as_object)
            && let Some(Value::Object(content)) = answer.get_mut("content")
        {
            content.retain(|field, _| asked.contains_key(field));
        }
        Ok(answer)
    }

    /// The key the answer comes back under.
    pub fn key(&self) -> &str {
        &self.key
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) fn request(&self) -> &InputRequest {
        &self.request
    }

    /// The SHA-256 of its form's `requestedSchema` as JSON: made once for
    /// a form kept for its type, as its validator is.
    pub(crate) fn form_digest(&self) -> Option<[u8; 32]> {
        let form = self.form.as_deref()?;
        let digest = || <sha2::Sha256 as sha2::Digest>::digest(form.schema.to_string()).into();
        Some(*form.digest.get_or_init(digest))
    }
}

impl fmt::Debug for Question {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Question")
            .field("key", &self.key)
            .field("asks", &self.kind.capability())
            .finish_non_exhaustive()
    }
}

/// A form and its `requestedSchema` as JSON, to check answers with.
type Form = (ElicitationSchema, Option<std::sync::Arc<FormCheck>>);

/// A form's `requestedSchema` as JSON, the validator of its answers,
/// compiled when the first answer comes, and its digest, when asked for.
struct FormCheck {
    schema: Value,
    validator: std::sync::OnceLock<std::sync::Arc<jsonschema::Validator>>,
    digest: std::sync::OnceLock<[u8; 32]>,
}

impl FormCheck {
    fn new(schema: Value) -> std::sync::Arc<Self> {
        std::sync::Arc::new(FormCheck {
            schema,
            validator: std::sync::OnceLock::new(),
            digest: std::sync::OnceLock::new(),
        })
    }

    /// The validator of the form's answers: kept with the form, so that a
    /// form kept for its type (`form_of`) finds it at once, round after
    /// round; a form made anew finds it by its text (`validator_of`).
    fn validator(&self) -> Result<std::sync::Arc<jsonschema::Validator>, String> {
        if let Some(validator) = self.validator.get() {
            return Ok(std::sync::Arc::clone(validator));
        }
        let validator = validator_of(&self.schema)?;
        Ok(std::sync::Arc::clone(
            self.validator.get_or_init(|| validator),
        ))
    }
}

/// The form of `T` and its `requestedSchema` as JSON, made once for each
/// type (a tool asks the same form round after round): generating it
/// costs more than a whole call.
fn form_of<T: schemars::JsonSchema>() -> Result<Form, serde_json::Error> {
    static KEPT: Kept<(&'static str, String), Form> = Kept::new();
    let key = (std::any::type_name::<T>(), T::schema_id().into_owned());
    KEPT.get_or_make(key, || {
        let schema = ElicitationSchema::from_type::<T>()?;
        let json = serde_json::to_value(&schema).ok().map(FormCheck::new);
        Ok((schema, json))
    })
}

/// The validator of `form`, compiled once for each form this process asks
/// (a tool asks the same form round after round): compiling a schema costs
/// several times a whole call.
fn validator_of(form: &Value) -> Result<std::sync::Arc<jsonschema::Validator>, String> {
    static KEPT: Kept<String, std::sync::Arc<jsonschema::Validator>> = Kept::new();
    KEPT.get_or_make(form.to_string(), || {
        jsonschema::options()
            .should_validate_formats(true)
            .build(form)
            .map(std::sync::Arc::new)
            .map_err(|error| format!("the form could not be read: {error}"))
    })
}

/// The prefix of the question keys this crate keeps for its own questions
/// (a guard's approval): a tool's own question may not use it, so that no
/// answer meant for one reaches the other.
pub(crate) const RESERVED_KEY_PREFIX: &str = "tool-envelope/";

/// The prefix of the keys under which the guards' approvals are asked
/// (`tool-envelope/approval/…`), among those kept.
pub(crate) const APPROVAL_KEY_PREFIX: &str = "tool-envelope/approval/";

/// The envelope of a tool's question under a key this crate keeps for its
/// own: a mistake in the tool, so `other`, and never retried.
pub(crate) fn reserved_key(key: &str) -> ErrorEnvelope {
    ErrorEnvelope::other(format!(
        "The tool asked a question under the key `{}`, which is kept for this crate's own questions (`{RESERVED_KEY_PREFIX}…`)",
        crate::limits::text_for_wire(key, 128)
    ))
    .with_reason(reasons::RESERVED_QUESTION_KEY)
    .with_alternative("Ask under a key of the tool's own")
}

/// The envelope of questions the client cannot answer, on 2025-11-25.
pub(crate) fn cannot_answer(missing: &[Kind]) -> ErrorEnvelope {
    let names: Vec<&str> = missing.iter().map(|kind| kind.capability()).collect();
    ErrorEnvelope::business(format!(
        "The tool needs the client to answer {}, which this client did not declare it supports.",
        names.join(" and ")
    ))
    .with_reason(reasons::CLIENT_CANNOT_ANSWER)
    .with_alternative(format!(
        "Call the tool from a client that supports {}",
        names.join(" and ")
    ))
}

/// The envelope of a tool that asks, called without a client.
pub(crate) fn no_client() -> ErrorEnvelope {
    ErrorEnvelope::business("The tool asks the MCP client, and was called without one.")
        .with_reason(reasons::CLIENT_CANNOT_ANSWER)
        .with_alternative("Call the tool through an MCP client")
}

/// The envelope of an answer that does not answer what was asked: a form's
/// content that does not fit it, a result of another kind. The tool never
/// sees it.
pub(crate) fn invalid_answer(kind: Kind, error: &dyn fmt::Display) -> ErrorEnvelope {
    let error = error.to_string();
    let text = crate::limits::text_for_wire(&error, 1024);
    ErrorEnvelope::validation(format!(
        "The client's answer to the {} request does not answer what was asked: {text}",
        kind.capability()
    ))
    .with_reason(reasons::INVALID_ANSWER)
    .with_alternative("Call again, and answer the question as asked")
}

/// The envelope of a question the client failed to answer, on 2025-11-25.
pub(crate) fn not_answered(kind: Kind, error: &dyn fmt::Display) -> ErrorEnvelope {
    let error = error.to_string();
    let text = crate::limits::text_for_wire(&error, 512);
    ErrorEnvelope::business(format!(
        "The client did not answer the {} request: {text}",
        kind.capability()
    ))
    .with_reason(reasons::CLIENT_REQUEST_FAILED)
    .with_alternative(format!(
        "Call the tool from a client that supports {}",
        kind.capability()
    ))
}

/// An elicitation's answer, its content decoded into `T`.
pub(crate) fn elicitation<T: serde::de::DeserializeOwned>(
    answer: Value,
) -> Result<Elicitation<T>, ErrorEnvelope> {
    let result: ElicitResult = decoded(answer)?;
    Ok(match result.action {
        ElicitationAction::Accept => {
            let content = result.content.unwrap_or_else(|| json!({}));
            let value = serde_json::from_value(content).map_err(|error| {
                ErrorEnvelope::validation(format!(
                    "The client's answer does not fit the form: {error}"
                ))
                .with_reason(reasons::CLIENT_REQUEST_FAILED)
                .with_alternative("Ask again, and fill in every required field")
            })?;
            Elicitation::Accepted(value)
        }
        ElicitationAction::Decline => Elicitation::Declined,
        _ => Elicitation::Cancelled,
    })
}

/// An answer read as the result it is; checked already on 2026-07-28, and
/// typed by the SDK before.
pub(crate) fn decoded<T: serde::de::DeserializeOwned>(answer: Value) -> Result<T, ErrorEnvelope> {
    serde_json::from_value(answer).map_err(|error| {
        ErrorEnvelope::other(format!("The client's answer could not be read: {error}"))
            .with_reason(reasons::CLIENT_REQUEST_FAILED)
    })
}
