//! Whose each session of a protected service is, and how many one caller
//! may hold open: the bookkeeping behind [`McpService`](super::McpService)'s
//! bearer token check.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{Request, Response};
use http_body_util::combinators::BoxBody;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::caller::Caller;

/// The session header of MCP's Streamable HTTP.
pub(super) const SESSION_ID: &str = "mcp-session-id";

/// What the service answers with: rmcp's response type.
pub(super) type McpResponse = Response<BoxBody<Bytes, Infallible>>;

/// How many sessions one caller may hold open on a protected service
/// unless [`HttpOptions::sessions_per_caller`](super::HttpOptions::sessions_per_caller) says otherwise: room for a
/// fleet of agents sharing a token, far below what would exhaust a server
/// (each session is a task, channels and a server of its own, for up to
/// rmcp's 5-minute keep-alive after its last request).
pub const DEFAULT_SESSIONS_PER_CALLER: usize = 64;

/// The caller that opened each session of a protected service.
pub(super) struct SessionOwners {
    sessions: Arc<LocalSessionManager>,
    owners: std::sync::Mutex<Owners>,
    /// How many one subject may hold open.
    most_per_caller: usize,
}

/// Who opened each session known, in the order recorded, and the size at
/// which the ended ones are forgotten.
#[derive(Default)]
struct Owners {
    /// Each session's opener, and its place in the order recorded.
    by_id: HashMap<Box<str>, (Owner, u64)>,
    /// Each subject's sessions.
    by_subject: HashMap<Box<str>, HashSet<Box<str>>>,
    /// The place of the next session recorded.
    next: u64,
    prune_at: usize,
}

/// The caller that opened a session: its subject, and the scopes its token
/// granted.
struct Owner {
    subject: Box<str>,
    scopes: Box<[Box<str>]>,
}

impl Owner {
    fn of(caller: &Caller) -> Self {
        Owner {
            subject: caller.subject().into(),
            scopes: caller.scopes().map(Box::from).collect(),
        }
    }

    /// Whether `caller` may use the session: the same subject, with a
    /// token that grants each scope the opener's did — another client of
    /// the same person, granted less, does not take its streams, its
    /// questions or its end (as for a task, or a `requestState`).
    fn admits(&self, caller: &Caller) -> bool {
        caller.stands_for(&self.subject, self.scopes.iter().map(|scope| &**scope))
    }
}

impl SessionOwners {
    pub(super) fn new(sessions: Arc<LocalSessionManager>, most_per_caller: usize) -> Self {
        SessionOwners {
            sessions,
            most_per_caller,
            owners: std::sync::Mutex::new(Owners {
                prune_at: 1024,
                ..Owners::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `caller` may use the session `id` ([`Owner::admits`]):
    /// `false` for another's, for one of its subject opened with a token
    /// that granted more, and for one this service did not open for
    /// anybody.
    pub(super) fn admits(&self, id: &str, caller: &Caller) -> bool {
        self.lock()
            .by_id
            .get(id)
            .is_some_and(|(owner, _)| owner.admits(caller))
    }

    /// Records the session `id` as `caller`'s, forgetting the sessions
    /// rmcp closed once there are many: whether it may stay. One that
    /// takes its subject past their bound is closed, and forgotten.
    pub(super) async fn opened(&self, id: &str, caller: &Caller) -> bool {
        let subject = caller.subject();
        let (place, prune, over) = {
            let mut owners = self.lock();
            let place = owners.insert(id, Owner::of(caller));
            let prune = owners.by_id.len() > owners.prune_at;
            (place, prune, owners.held_by(subject) > self.most_per_caller)
        };
        if prune {
            self.prune().await;
        }
        if !over {
            return true;
        }
        // The subject's sessions recorded before this one, looked for among
        // those rmcp still holds: those ended (closed, idle past the
        // keep-alive) free their places.
        let theirs: Vec<Box<str>> = {
            let owners = self.lock();
            (owners.by_subject.get(subject).into_iter().flatten())
                .filter(|known| owners.by_id.get(*known).is_some_and(|(_, at)| *at < place))
                .cloned()
                .collect()
        };
        let ended: Vec<Box<str>> = {
            let open = self.sessions.sessions.read().await;
            theirs
                .into_iter()
                .filter(|known| !open.contains_key(&**known))
                .collect()
        };
        let refused = {
            let mut owners = self.lock();
            for known in &ended {
                owners.remove(known);
            }
            let refused = owners.held_by(subject) > self.most_per_caller;
            if refused {
                owners.remove(id);
            }
            refused
        };
        if refused {
            let id: rmcp::transport::streamable_http_server::SessionId = Arc::from(id);
            let _ = rmcp::transport::streamable_http_server::SessionManager::close_session(
                &*self.sessions,
                &id,
            )
            .await;
        }
        !refused
    }

    /// Forgets the sessions rmcp no longer holds, of those recorded before
    /// it looked: one recorded since may be newer than what it saw.
    async fn prune(&self) {
        let before = self.lock().next;
        let open: HashSet<String> = (self.sessions.sessions.read().await)
            .keys()
            .map(std::string::ToString::to_string)
            .collect();
        let mut owners = self.lock();
        let ended: Vec<Box<str>> = (owners.by_id.iter())
            .filter(|(id, (_, at))| *at < before && !open.contains(&***id))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ended {
            owners.remove(id);
        }
        owners.prune_at = (owners.by_id.len() * 2).max(1024);
    }
}

impl Owners {
    /// Records the session `id` as `owner`'s: its place in the order.
    fn insert(&mut self, id: &str, owner: Owner) -> u64 {
        let place = self.next;
        self.next += 1;
        self.remove(id);
        (self.by_subject.entry(owner.subject.clone()).or_default()).insert(id.into());
        self.by_id.insert(id.into(), (owner, place));
        place
    }

    /// Forgets the session `id`.
    fn remove(&mut self, id: &str) {
        let Some((owner, _)) = self.by_id.remove(id) else {
            return;
        };
        if let Some(theirs) = self.by_subject.get_mut(&owner.subject) {
            theirs.remove(id);
            if theirs.is_empty() {
                self.by_subject.remove(&owner.subject);
            }
        }
    }

    /// How many of the sessions known `subject` opened.
    fn held_by(&self, subject: &str) -> usize {
        self.by_subject.get(subject).map_or(0, HashSet::len)
    }
}

/// The answer to an `initialize` past its caller's bound on open sessions.
fn too_many_sessions() -> McpResponse {
    let body = http_body_util::Full::new(Bytes::from(
        "Too Many Requests: this caller holds as many sessions as it may; \
         end one (DELETE) or let one go idle",
    ));
    let mut response = Response::new(http_body_util::BodyExt::boxed(body));
    *response.status_mut() = axum::http::StatusCode::TOO_MANY_REQUESTS;
    response
}

/// The answer to a request the server could not finish: it is stopping.
pub(super) fn shutting_down() -> McpResponse {
    let body =
        http_body_util::Full::new(Bytes::from("Service Unavailable: the server is stopping"));
    let mut response = Response::new(http_body_util::BodyExt::boxed(body));
    *response.status_mut() = axum::http::StatusCode::SERVICE_UNAVAILABLE;
    response
}

/// The answer to a request for a session that is not the caller's: rmcp's
/// own answer to an unknown session, word for word.
pub(super) fn unknown_session() -> McpResponse {
    let body = http_body_util::Full::new(Bytes::from("Not Found: Session not found"));
    let mut response = Response::new(http_body_util::BodyExt::boxed(body));
    *response.status_mut() = axum::http::StatusCode::NOT_FOUND;
    response
}

/// Whether `request` may open a session: a POST of JSON, unless it is a
/// 2026-07-28 request (its version header says so) whose `Mcp-Method`
/// names another method than `initialize` — rmcp checks that header
/// against the body from that revision on, and refuses an `initialize`
/// named otherwise. Before it, rmcp reads no such header: an `initialize`
/// labelled `tools/call` would open a session all the same.
pub(super) fn opens_a_session<B>(request: &Request<B>) -> bool {
    use rmcp::model::ProtocolVersion;
    use rmcp::transport::common::http_header::{HEADER_MCP_METHOD, HEADER_MCP_PROTOCOL_VERSION};
    let headers = request.headers();
    // A body of another type rmcp refuses unread (415): it opens nothing,
    // and is not read here either.
    let json = (headers.get(axum::http::header::CONTENT_TYPE))
        .and_then(|header| header.to_str().ok())
        .is_some_and(|header| {
            let essence = header
                .split_once(';')
                .map_or(header, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        });
    // From the revision rmcp checks the standard headers at, as it compares.
    let checked = (headers.get(HEADER_MCP_PROTOCOL_VERSION))
        .and_then(|version| version.to_str().ok())
        .is_some_and(|version| version >= ProtocolVersion::STANDARD_HEADERS.as_str());
    request.method() == axum::http::Method::POST
        && json
        && (!checked
            || (headers.get(HEADER_MCP_METHOD)).is_none_or(|method| method == "initialize"))
}

/// `request`'s body, read whole as rmcp reads it (at most `max` bytes),
/// put back in the request, and whether it may be an `initialize` — the
/// one request that opens a session (a body not read here may be).
///
/// # Errors
///
/// rmcp's own answer to a body over `max` bytes (413), or one that could
/// not be read (500).
pub(super) async fn read_method<B>(
    request: Request<B>,
    max: usize,
) -> Result<(Request<http_body_util::Full<Bytes>>, bool), McpResponse>
where
    B: http_body::Body + Send + 'static,
    B::Error: std::fmt::Display,
{
    use http_body_util::BodyExt;
    use hyper::body::Buf;
    let refused = |status, text: String| {
        let mut response = Response::new(http_body_util::Full::new(Bytes::from(text)).boxed());
        *response.status_mut() = status;
        response
    };
    let (parts, body) = request.into_parts();
    // As long as it says it is, within the bound: no room to spare.
    let long = (parts.headers.get(axum::http::header::CONTENT_LENGTH))
        .and_then(|length| length.to_str().ok()?.parse::<usize>().ok());
    let mut read = Vec::with_capacity(long.unwrap_or_default().min(max));
    let mut body = std::pin::pin!(body);
    while let Some(frame) = body.as_mut().frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(error) => {
                let status = axum::http::StatusCode::INTERNAL_SERVER_ERROR;
                let text = format!("Failed to read request body: {error}");
                return Err(refused(status, text));
            }
        };
        let Ok(mut data) = frame.into_data() else {
            continue;
        };
        if data.remaining() > max.saturating_sub(read.len()) {
            let status = axum::http::StatusCode::PAYLOAD_TOO_LARGE;
            let text = format!("Payload Too Large: request body exceeds {max} bytes");
            return Err(refused(status, text));
        }
        while data.has_remaining() {
            let chunk = data.chunk();
            read.extend_from_slice(chunk);
            let taken = chunk.len();
            data.advance(taken);
        }
    }
    let body = Bytes::from(read);
    /// A JSON-RPC message's method, all that is read of it here.
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    // A body read otherwise here than rmcp reads it (a key twice, say) may
    // still open a session there: it runs apart, as an `initialize` does.
    let initialize = serde_json::from_slice::<Method<'_>>(&body).map_or(true, |message| {
        message.method.as_deref() == Some("initialize")
    });
    Ok((
        Request::from_parts(parts, http_body_util::Full::new(body)),
        initialize,
    ))
}

/// `request` served by `inner`, and the session its answer opens counted
/// as `caller`'s among `owners`: past their subject's bound, it is
/// refused.
pub(super) async fn counted<S, B>(
    mut inner: rmcp::transport::StreamableHttpService<S, LocalSessionManager>,
    request: Request<B>,
    owners: Arc<SessionOwners>,
    caller: Arc<Caller>,
) -> Result<McpResponse, Infallible>
where
    B: http_body::Body + Send + 'static,
    B::Error: std::fmt::Display,
    B::Data: Send + 'static,
    S: rmcp::ServerHandler + Send + 'static,
{
    let response = tower_service::Service::call(&mut inner, request).await?;
    if let Some(opened) = response.headers().get(SESSION_ID)
        && let Ok(opened) = opened.to_str()
        && !owners.opened(opened, &caller).await
    {
        return Ok(too_many_sessions());
    }
    Ok(response)
}
