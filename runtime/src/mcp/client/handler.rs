//! The client side of a connection: what it declares, the progress
//! notifications it routes to their calls, and the server's questions
//! (2025-11-25) answered with the caller's handlers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::ErrorData;
#[allow(deprecated)]
// Sampling and roots: SEP-2577 deprecates them; both revisions define them.
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestMethod, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationCreateRequestMethod,
    Implementation, ListRootsRequestMethod, ListRootsResult, ProgressNotificationParam,
    ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use crate::mcp::client::answers::Answers;
use crate::mcp::client::secrets::Sent;
use crate::redact::values::SecretValues;

/// A progress notification of a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The progress so far.
    pub progress: f64,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}

/// What a call does with its progress notifications.
pub(crate) type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;
pub(crate) type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, ProgressCallback>>>;

/// The client side of a connection: routes progress notifications to the
/// call they belong to, and answers what the server asks (2025-11-25) with
/// the caller's handlers.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) progress: ProgressRoutes,
    pub(crate) answers: Answers,
    /// What the calls in flight sent, to keep out of the questions.
    pub(crate) sent: Arc<Sent>,
    /// The most questions one call may be asked.
    pub(crate) max_questions: u64,
    /// Whether the client declares MCP's tasks extension.
    pub(crate) tasks: bool,
    /// How many times the server said its tools changed
    /// (`notifications/tools/list_changed`): they are listed again.
    pub(crate) tools_changed: Arc<std::sync::atomic::AtomicU64>,
}

impl Handler {
    /// The secret values a question may not show, once it is counted
    /// against the calls in flight; `None` once they were asked too many,
    /// or, unless `outside_a_call`, when no call is in flight: a form for a
    /// person or a turn of a paid model is asked for a call, or not at all.
    fn admit(&self, outside_a_call: bool) -> Option<SecretValues> {
        self.sent
            .asked(self.max_questions, outside_a_call)
            .then(|| self.sent.everything())
    }
}

/// The error a question asked past the bound gets.
fn too_many() -> ErrorData {
    ErrorData::internal_error("the client answers no more questions for this call", None)
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = self.answers.capabilities();
        if self.tasks {
            capabilities.extensions = ClientCapabilities::builder()
                .enable_tasks()
                .build()
                .extensions;
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("tool-envelope", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let secrets = self.admit(false).ok_or_else(too_many)?;
        let answer = self.answers.elicit(request, &secrets).await;
        answer.ok_or_else(ErrorData::method_not_found::<ElicitationCreateRequestMethod>)
    }

    #[allow(deprecated)] // SEP-2577 deprecates sampling; both revisions define it.
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let secrets = self.admit(false).ok_or_else(too_many)?;
        match self.answers.sample(params, &secrets).await {
            Some(Ok(result)) => Ok(result),
            Some(Err(error)) => Err(ErrorData::internal_error(error, None)),
            None => Err(ErrorData::method_not_found::<CreateMessageRequestMethod>()),
        }
    }

    #[allow(deprecated)] // SEP-2577 deprecates roots; both revisions define them.
    async fn list_roots(
        &self,
        _: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.admit(true).ok_or_else(too_many)?;
        let roots = self.answers.roots().await;
        roots.ok_or_else(ErrorData::method_not_found::<ListRootsRequestMethod>)
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        // What the last listing said of a tool (whether it is safe to
        // repeat, where its secrets are) may no longer hold.
        (self.tools_changed).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let callback = self
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned();
        if let Some(callback) = callback {
            callback(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }
}
