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
//! same key on every round.
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
    CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationSchema, InputRequest, ListRootsRequest,
};
use serde_json::{Value, json};

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
        let schema = ElicitationSchema::from_type::<T>().map_err(|error| {
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
        Ok(Question::elicitation(key.into(), params))
    }

    /// A completion from the client's model.
    pub fn sample(key: impl Into<String>, params: CreateMessageRequestParams) -> Self {
        Question {
            key: key.into(),
            kind: Kind::Sampling,
            request: InputRequest::CreateMessage(CreateMessageRequest::new(params)),
        }
    }

    /// The client's roots: the directories or files it lets the server see.
    pub fn roots(key: impl Into<String>) -> Self {
        Question {
            key: key.into(),
            kind: Kind::Roots,
            request: InputRequest::ListRoots(ListRootsRequest::default()),
        }
    }

    fn elicitation(key: String, params: ElicitRequestParams) -> Self {
        Question {
            key,
            kind: Kind::Elicitation,
            request: InputRequest::Elicitation(ElicitRequest::new(params)),
        }
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
}

impl fmt::Debug for Question {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Question")
            .field("key", &self.key)
            .field("asks", &self.kind.capability())
            .finish_non_exhaustive()
    }
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
