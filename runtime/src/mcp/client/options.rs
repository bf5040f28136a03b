//! How a client calls: the revision it speaks, its timeout, the guards
//! checked before anything is sent, how it answers the server's questions,
//! and (over HTTP) whom it trusts and what credentials it sends — as the
//! caller set them on [`Connect`](crate::mcp::client::Connect).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::ClientLifecycleMode;

use crate::guard::Guards;
use crate::mcp::client::answers::Answers;
use crate::mcp::client::credentials::Credentials;
use crate::mcp::client::tls::TlsSettings;

/// Which MCP revision a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Revision {
    /// Ask the server (`server/discover`) and speak 2026-07-28 where it
    /// does; fall back to `initialize` and 2025-11-25, on a fresh
    /// connection, where it refuses the probe. The probe waits as long as
    /// the client's timeout allows — a server slow to start is not taken
    /// for an old one — and a fallback is logged (`tracing`, `INFO`) and
    /// said by [`McpClient::negotiation`](crate::mcp::client::McpClient::negotiation).
    #[default]
    Negotiate,
    /// 2026-07-28 only: stateless, every request carrying its version and
    /// capabilities, questions in `InputRequiredResult` rounds.
    V2026_07_28,
    /// 2025-11-25: `initialize`, a session, questions as requests from the
    /// server.
    V2025_11_25,
}

impl Revision {
    /// How rmcp opens the connection first: a probe, when negotiating,
    /// that waits for the server as long as the handshake may take.
    pub(crate) fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Revision::Negotiate | Revision::V2026_07_28 => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Revision::V2025_11_25 => ClientLifecycleMode::Initialize,
        }
    }
}

/// How a client calls: its timeout, the guards checked before anything is
/// sent, the revision it speaks, how it answers the server's questions, and
/// (over HTTP) whom it trusts and what credentials it sends.
#[derive(Clone)]
pub(crate) struct Options {
    pub(crate) timeout: Duration,
    pub(crate) guards: Arc<Guards>,
    pub(crate) revision: Revision,
    pub(crate) answers: Answers,
    pub(crate) tls: TlsSettings,
    /// Headers sent with every request, as given: checked when the client
    /// is made.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) credentials: Credentials,
    /// The most questions a server may ask in one round (or at once, on
    /// 2025-11-25).
    pub(crate) max_questions: usize,
    /// Whether credentials may go over plain `http://` to a host that is
    /// not loopback.
    pub(crate) insecure_credentials: bool,
    /// Whether calls declare MCP's tasks extension.
    pub(crate) tasks: bool,
}

impl Options {
    /// The most questions a server may ask over one call: a round's bound,
    /// as many times as a call has rounds.
    pub(crate) fn questions_in_all(&self) -> usize {
        (self.max_questions).saturating_mul(rmcp::model::DEFAULT_MRTR_MAX_ROUNDS)
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A header's value may be a credential (`x-api-key`): its name only.
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Options")
            .field("timeout", &self.timeout)
            .field("guards", &self.guards)
            .field("revision", &self.revision)
            .field("answers", &self.answers)
            .field("tls", &self.tls)
            .field("headers", &headers)
            .field("credentials", &self.credentials)
            .field("max_questions", &self.max_questions)
            .field("insecure_credentials", &self.insecure_credentials)
            .field("tasks", &self.tasks)
            .finish()
    }
}

/// The most questions a server may ask in one round by default.
pub(crate) const DEFAULT_MAX_QUESTIONS: usize = 16;

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: Duration::from_secs(60),
            guards: Arc::new(Guards::default()),
            revision: Revision::default(),
            answers: Answers::default(),
            tls: TlsSettings::default(),
            headers: Vec::new(),
            credentials: Credentials::default(),
            max_questions: DEFAULT_MAX_QUESTIONS,
            insecure_credentials: false,
            tasks: false,
        }
    }
}
