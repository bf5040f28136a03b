//! What a served request says of its client: its capabilities and its
//! name, which rmcp reads from the request (on 2026-07-28, decoded from its
//! `_meta`) — read here only when a tool, a question or an approval's
//! audit asks, since most calls never do.

use std::sync::OnceLock;

use rmcp::RoleServer;
use rmcp::model::ClientCapabilities;
use rmcp::service::RequestContext;

/// What a request says of its client — its capabilities, its name — read
/// from the request the first time it is asked for ([`of`](Self::of)), or
/// at once ([`read_now`](Self::read_now)).
#[derive(Default)]
pub(crate) struct ClientSide {
    request: Option<RequestContext<RoleServer>>,
    /// Whether only what the client declared at `initialize` counts: a
    /// question asked as a request to it (2025-11-25) reaches it only over
    /// its session, which a stateless server does not have, whatever the
    /// request's `_meta` declares.
    by_session: bool,
    capabilities: OnceLock<Option<ClientCapabilities>>,
    name: OnceLock<Option<String>>,
}

impl ClientSide {
    /// What `request` says of its client, read when asked for.
    pub(crate) fn of(request: RequestContext<RoleServer>) -> Self {
        ClientSide {
            request: Some(request),
            ..ClientSide::default()
        }
    }

    /// What `request`'s client declared when its session began (its
    /// `initialize`), read when asked for: nothing, on a server without
    /// sessions. For questions asked as requests to the client.
    pub(crate) fn of_session(request: RequestContext<RoleServer>) -> Self {
        ClientSide {
            request: Some(request),
            by_session: true,
            ..ClientSide::default()
        }
    }

    /// What `request` says of its client, read now: for an asking side
    /// that outlives its request (a task's), which keeps these two facts
    /// and not the request — its headers, its token — for as long as it runs.
    pub(crate) fn read_now(request: &RequestContext<RoleServer>) -> Self {
        ClientSide {
            request: None,
            by_session: false,
            capabilities: OnceLock::from(request.client_capabilities()),
            name: OnceLock::from(name_of(request)),
        }
    }

    /// What the client declared it can answer.
    pub(crate) fn capabilities(&self) -> Option<&ClientCapabilities> {
        (self.capabilities)
            .get_or_init(|| {
                let request = self.request.as_ref()?;
                match self.by_session {
                    true => Some(request.peer.peer_info()?.capabilities.clone()),
                    false => request.client_capabilities(),
                }
            })
            .as_ref()
    }

    /// The client's name and version, as it gave them.
    pub(crate) fn name(&self) -> Option<&str> {
        (self.name)
            .get_or_init(|| name_of(self.request.as_ref()?))
            .as_deref()
    }
}

/// The client's name and version as `request` gives them.
fn name_of(request: &RequestContext<RoleServer>) -> Option<String> {
    let info = request.client_info()?;
    Some(format!("{} {}", info.name, info.version))
}
