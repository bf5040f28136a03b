//! What the client answers when a server asks it: a form for its user
//! (elicitation), a completion from its model (sampling), its roots — on
//! 2025-11-25 as requests from the server, on 2026-07-28 as the
//! `inputRequests` of an `InputRequiredResult`, by the same handlers.

// Sampling and roots are deprecated by SEP-2577 in rmcp; both revisions
// define them, and servers in use ask for them.
#![allow(deprecated)]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability,
    InputRequest, InputRequests, InputResponses, ListRootsResult, Root,
};
use serde_json::Value;

use crate::envelope::ErrorEnvelope;
use crate::reasons;
use crate::redact::values::SecretValues;

type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Elicit = Arc<dyn Fn(ElicitRequestParams) -> Boxed<ElicitResult> + Send + Sync>;
type Sample = Arc<
    dyn Fn(CreateMessageRequestParams) -> Boxed<Result<CreateMessageResult, String>> + Send + Sync,
>;
type Roots = Arc<dyn Fn() -> Boxed<Vec<Root>> + Send + Sync>;

/// The handlers a caller registered; the client declares a capability for
/// each, and only for those.
#[derive(Clone, Default)]
pub(crate) struct Answers {
    elicit: Option<Elicit>,
    sample: Option<Sample>,
    roots: Option<Roots>,
}

impl fmt::Debug for Answers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answers")
            .field("elicitation", &self.elicit.is_some())
            .field("sampling", &self.sample.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl Answers {
    pub(crate) fn on_elicitation<F, Fut>(&mut self, handler: F)
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitResult> + Send + 'static,
    {
        self.elicit = Some(Arc::new(move |params| Box::pin(handler(params))));
    }

    pub(crate) fn on_sampling<F, Fut>(&mut self, handler: F)
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, String>> + Send + 'static,
    {
        self.sample = Some(Arc::new(move |params| Box::pin(handler(params))));
    }

    pub(crate) fn on_roots<F, Fut>(&mut self, handler: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Root>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move || Box::pin(handler())));
    }

    /// The capabilities the client declares: one per handler. A form
    /// handler declares form elicitation only: a request for the user to
    /// open a URL is never handed to it.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut capabilities = ClientCapabilities::default();
        if self.elicit.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        }
        if self.sample.is_some() {
            capabilities.sampling = ClientCapabilities::builder()
                .enable_sampling()
                .build()
                .sampling;
        }
        if self.roots.is_some() {
            capabilities.roots = ClientCapabilities::builder().enable_roots().build().roots;
        }
        capabilities
    }

    /// A form for the user, answered by the handler, its texts quoting
    /// none of the `secrets`; `None` without a handler, and for a request
    /// to open a URL, which this client did not declare.
    pub(crate) async fn elicit(
        &self,
        params: ElicitRequestParams,
        secrets: &SecretValues,
    ) -> Option<ElicitResult> {
        if matches!(params, ElicitRequestParams::UrlElicitationParams { .. }) {
            return None;
        }
        let elicit = self.elicit.as_ref()?;
        let Some(params) = masked(params, secrets) else {
            tracing::warn!("{NOT_SHOWN}: declined");
            return Some(ElicitResult::new(ElicitationAction::Decline));
        };
        Some(elicit(params).await)
    }

    /// A completion from the model, by the handler, its messages quoting
    /// none of the `secrets`.
    pub(crate) async fn sample(
        &self,
        params: CreateMessageRequestParams,
        secrets: &SecretValues,
    ) -> Option<Result<CreateMessageResult, String>> {
        let sample = self.sample.as_ref()?;
        let Some(params) = masked(params, secrets) else {
            return Some(Err(NOT_SHOWN.to_owned()));
        };
        Some(sample(params).await)
    }

    /// The roots, by the handler.
    pub(crate) async fn roots(&self) -> Option<ListRootsResult> {
        Some(ListRootsResult::new(self.roots.as_ref()?().await))
    }

    /// The answers to a round's `inputRequests` (2026-07-28), each by its
    /// handler.
    ///
    /// # Errors
    ///
    /// A `business` envelope, not retryable, naming what was asked that
    /// this client has no handler for (reason `CLIENT_CANNOT_ANSWER`) or
    /// what its handler failed to answer (`CLIENT_REQUEST_FAILED`).
    pub(crate) async fn answer_all(
        &self,
        tool: &str,
        requests: InputRequests,
        secrets: &SecretValues,
    ) -> Result<InputResponses, ErrorEnvelope> {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let answer = match request {
                InputRequest::Elicitation(request) => {
                    let what = match &request.params {
                        ElicitRequestParams::UrlElicitationParams { .. } => "URL elicitation",
                        _ => "elicitation",
                    };
                    let message = elicitation_message(&request.params);
                    let answer = self.elicit(request.params, secrets).await;
                    json(answer.ok_or_else(|| unanswerable(tool, what, &message))?)
                }
                InputRequest::CreateMessage(request) => {
                    let answer = self.sample(request.params, secrets).await;
                    let answer = answer.ok_or_else(|| unanswerable(tool, "sampling", ""))?;
                    json(answer.map_err(|error| failed(tool, "sampling", &error))?)
                }
                InputRequest::ListRoots(_) => json(
                    self.roots()
                        .await
                        .ok_or_else(|| unanswerable(tool, "roots", ""))?,
                ),
                other => {
                    let what = serde_json::to_value(&other)
                        .ok()
                        .and_then(|value| value["method"].as_str().map(str::to_owned))
                        .unwrap_or_else(|| "an unknown request".to_owned());
                    return Err(unanswerable(tool, &what, ""));
                }
            };
            responses.insert(key, answer);
        }
        Ok(responses)
    }
}

/// `params` with every text that quotes one of the `secrets` masked: a
/// server's question shows the caller's handler — a person, a model —
/// nothing the call sent as a secret, nor the client's credentials.
/// `None` when the question cannot be shown masked (a secret number where
/// the question must hold a number, `maxTokens` say): it is not shown at
/// all, never shown unmasked.
fn masked<T: serde::Serialize + serde::de::DeserializeOwned>(
    params: T,
    secrets: &SecretValues,
) -> Option<T> {
    let Some(masker) = secrets.masker() else {
        return Some(params);
    };
    let mut value = serde_json::to_value(&params).ok()?;
    masker.value(&mut value);
    serde_json::from_value(value).ok()
}

/// Why a question was not shown to its handler.
const NOT_SHOWN: &str =
    "the question quotes a secret the call sent where it cannot be masked: it was not shown";

/// The message of a form, bounded for an envelope.
fn elicitation_message(params: &ElicitRequestParams) -> String {
    let value = serde_json::to_value(params).unwrap_or_default();
    let message = value["message"].as_str().unwrap_or_default();
    crate::limits::text_for_wire(message, 256).into_owned()
}

fn json(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// The envelope of a question this client has no handler for.
fn unanswerable(tool: &str, what: &str, message: &str) -> ErrorEnvelope {
    let quoted = match message.is_empty() {
        true => String::new(),
        false => format!(" (\"{message}\")"),
    };
    ErrorEnvelope::business(format!(
        "`{tool}` asked this client for {what}{quoted}, and the client has no handler for it"
    ))
    .with_reason(reasons::CLIENT_CANNOT_ANSWER)
    .with_alternative(format!(
        "Register a handler for {what} on the client, then call again"
    ))
}

/// The envelope of a question the handler failed to answer.
fn failed(tool: &str, what: &str, error: &str) -> ErrorEnvelope {
    let error = crate::limits::text_for_wire(error, 512);
    ErrorEnvelope::business(format!(
        "`{tool}` asked this client for {what}, and its handler failed: {error}"
    ))
    .with_reason(reasons::CLIENT_REQUEST_FAILED)
}
