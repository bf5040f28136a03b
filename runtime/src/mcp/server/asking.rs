//! Asking the client from a tool, through its [`ToolContext`]: the ways a
//! tool reaches the client of the request that called it — a form for its
//! user, its model, its roots — on either revision ([`crate::mcp::ask`]),
//! and what the request says of the client. Only with the `rmcp` feature,
//! where a request has a client.

use std::sync::Arc;

use serde_json::Value;

use crate::mcp::ask::{Elicitation, Question};
use crate::mcp::context::ToolContext;
use crate::mcp::server::live::LiveRequest;

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
impl ToolContext {
    /// The client, as rmcp's peer; `None` for a detached context. On MCP
    /// 2026-07-28 rmcp refuses requests to the client: ask through
    /// [`ask`](Self::ask) and its kin, which work on both revisions.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub fn peer(&self) -> Option<&rmcp::Peer<rmcp::RoleServer>> {
        self.request().map(|live| &live.peer)
    }

    /// What the client declared it can answer: `elicitation`, `sampling`,
    /// `roots` (on 2026-07-28, from the request's own `_meta`); `None` for a
    /// detached context, or a client that declared nothing.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub fn client_capabilities(&self) -> Option<&rmcp::model::ClientCapabilities> {
        self.request()?.asking.capabilities()
    }

    /// The client's name and version, as it gave them.
    pub(crate) fn client_name(&self) -> Option<String> {
        Some(self.request()?.asking.client()?.to_owned())
    }

    /// Asks the client `question` and returns its answer as JSON: an
    /// `ElicitResult`, a `CreateMessageResult` or a `ListRootsResult`. On
    /// 2026-07-28 a question without an answer yet ends this round of the
    /// call: see [`crate::mcp::ask`] for how the tool resumes.
    ///
    /// # Errors
    ///
    /// A `business` envelope, with reason `CLIENT_CANNOT_ANSWER`, for a
    /// detached context or a question the client did not declare it can
    /// answer; with reason `CLIENT_REQUEST_FAILED`, when the client's answer
    /// failed.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn ask(&self, question: Question) -> Result<Value, crate::ErrorEnvelope> {
        let mut answers = self.ask_all(vec![question]).await?;
        Ok(answers.pop().expect("one answer per question"))
    }

    /// Asks the client every question at once — on 2026-07-28, in one
    /// round — and returns the answers in order.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask).
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn ask_all(
        &self,
        questions: Vec<Question>,
    ) -> Result<Vec<Value>, crate::ErrorEnvelope> {
        if let Some(reserved) = (questions.iter()).find(|question| {
            question
                .key()
                .starts_with(crate::mcp::ask::RESERVED_KEY_PREFIX)
        }) {
            return Err(crate::mcp::ask::reserved_key(reserved.key()));
        }
        let Some(live) = self.request() else {
            return Err(crate::mcp::ask::no_client());
        };
        live.asking.ask_all(&live.peer, &questions).await
    }

    /// Asks the client's user to approve a block, under `key` — one of the
    /// keys kept for this crate's own questions, which a tool cannot ask
    /// under — with the form `schema`.
    pub(crate) async fn ask_for_approval(
        &self,
        key: &str,
        message: String,
        schema: Value,
    ) -> Result<Elicitation<serde_json::Map<String, Value>>, crate::ErrorEnvelope> {
        let Some(live) = self.request() else {
            return Err(crate::mcp::ask::no_client());
        };
        let question = Question::form(key, message, schema)?;
        let mut answers = live.asking.ask_all(&live.peer, &[question]).await?;
        crate::mcp::ask::elicitation(answers.pop().expect("one answer per question"))
    }

    /// Asks the user to fill in a form with the fields of `T` (from its
    /// `JsonSchema`), under `key`, and decodes the answer.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask); a `validation` envelope when `T` is not a form
    /// MCP allows, or when the answer does not decode into `T`.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn elicit<T: serde::de::DeserializeOwned + schemars::JsonSchema>(
        &self,
        key: &str,
        message: impl Into<String>,
    ) -> Result<Elicitation<T>, crate::ErrorEnvelope> {
        let answer = self.ask(Question::elicit::<T>(key, message)?).await?;
        crate::mcp::ask::elicitation(answer)
    }

    /// Asks the user to fill in the form `schema` (a JSON Schema object of
    /// flat properties), under `key`; the answer is its fields.
    ///
    /// # Errors
    ///
    /// As [`elicit`](Self::elicit).
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn elicit_form(
        &self,
        key: &str,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Elicitation<serde_json::Map<String, Value>>, crate::ErrorEnvelope> {
        let answer = self.ask(Question::form(key, message, schema)?).await?;
        crate::mcp::ask::elicitation(answer)
    }

    /// Asks the client's model for a completion, under `key`.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask).
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[allow(deprecated)] // SEP-2577 deprecates sampling; both revisions define it.
    pub async fn sample(
        &self,
        key: &str,
        params: rmcp::model::CreateMessageRequestParams,
    ) -> Result<rmcp::model::CreateMessageResult, crate::ErrorEnvelope> {
        let answer = self.ask(Question::sample(key, params)).await?;
        crate::mcp::ask::decoded(answer)
    }

    /// The client's roots, under `key`.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask).
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[allow(deprecated)] // SEP-2577 deprecates roots; both revisions define them.
    pub async fn roots(&self, key: &str) -> Result<Vec<rmcp::model::Root>, crate::ErrorEnvelope> {
        let answer = self.ask(Question::roots(key)).await?;
        let roots: rmcp::model::ListRootsResult = crate::mcp::ask::decoded(answer)?;
        Ok(roots.roots)
    }

    /// The `progressToken` the client sent, if it asked for progress.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub fn progress_token(&self) -> Option<&rmcp::model::ProgressToken> {
        self.request()?.progress_token.as_ref()
    }

    /// The context of the request `live`.
    pub(crate) fn live(live: Arc<LiveRequest>) -> Self {
        let caller = live.caller.clone();
        ToolContext::of_request(live, caller)
    }

    /// The task the call runs as, and when its time to live ends, when it
    /// runs as one.
    pub(crate) fn task_context(
        &self,
    ) -> Option<(&rmcp::task_manager::TaskContext, tokio::time::Instant)> {
        self.request()?.asking.task_context()
    }

    /// Whether the answer to the question asked under `key` is in hand
    /// already: on 2026-07-28, carried by this round from an earlier one.
    pub(crate) fn answered(&self, key: &str) -> bool {
        self.request().is_some_and(|live| live.asking.answered(key))
    }

    /// The request, as rmcp's side holds it.
    fn request(&self) -> Option<&LiveRequest> {
        self.live_side()?.as_any().downcast_ref::<LiveRequest>()
    }
}
