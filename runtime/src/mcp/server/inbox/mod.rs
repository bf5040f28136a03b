//! The inbox page: where people see the calls that wait for them and the
//! escalations nobody has taken yet, with their whole context, and decide.
//! Server-rendered (minijinja templates compiled into the crate, no script),
//! served by the tool set's own HTTP server ([`HttpOptions::inbox`]).
//!
//! - `session`: the signed session cookie and the forms' CSRF tokens;
//! - `origin`: forms from the inbox's own pages only;
//! - `respond`: what every page shares, and how a page is answered;
//! - `signing`: signing in and out, and who a request's session is of;
//! - `pages`: the routes;
//! - `views`: what a page shows of an approval and of an escalation;
//! - `time`: times as people read them.
//!
//! [`HttpOptions::inbox`]: crate::mcp::HttpOptions::inbox

mod origin;
mod pages;
mod respond;
mod session;
mod signing;
mod time;
mod views;

use std::fmt;
use std::sync::Arc;

use crate::mcp::server::rmcp::bearer::BearerAuth;
use crate::mcp::server::toolset::ToolSet;
use crate::store::StoreError;

/// The inbox page of a tool set that keeps its approvals and escalations in
/// a store ([`ToolSet::store`]): people sign in with the server's own
/// bearer tokens ([`BearerAuth`]) and a scope, see what waits for them —
/// the guard's reason and the amount first, then the tool, the caller, the
/// arguments (secrets masked), the alternatives — and approve or decline
/// with a note, or resolve an escalation. Mount it with
/// [`HttpOptions::inbox`](crate::mcp::HttpOptions::inbox): its pages live
/// under `/inbox`.
///
/// - **Sign-in.** A person pastes a token once; the validator says who they
///   are and what they may do; the page then keeps a session in a signed,
///   `HttpOnly`, `SameSite=Lax` cookie (`Secure` and named `__Host-…`
///   behind a TLS proxy that says `X-Forwarded-Proto: https`, or always:
///   [`Inbox::secure_cookies`]),
///   never the token, for 8 hours or
///   until they sign out: signing out ends the session in the store, so a
///   copy of the cookie is refused on every replica. "Sign out everywhere",
///   or [`Inbox::end_sessions_of`], ends every session of the person. The
///   token is asked about twice, before and after the store says which of
///   the person's sessions were ended, so one refused and ended while its
///   person signs in gives no session.
///   Signing in needs
///   `scope`; seeing an approval (its page, its decision, the call's
///   result) and deciding it need the scope the approval names
///   ([`Approvers::scope`](crate::guard::Approvers::scope)) — another
///   scope's approvals are only counted — and nobody decides their own
///   call.
/// - **Forms.** Every POST carries a CSRF token bound to the session; one
///   without it, or from no session, is refused (403), and so is one a
///   browser says another origin sent (`Sec-Fetch-Site`, else `Origin`) —
///   a sibling subdomain included, which `SameSite` counts as the same
///   site.
/// - **Audit.** Every sign-in, decision and resolution is kept in the
///   store's audit: who, when, which, and the note.
///
/// ```no_run
/// use std::sync::Arc;
/// use tool_envelope::mcp::{BearerAuth, HttpOptions, Inbox, ToolSet};
/// use tool_envelope::guard::Caller;
///
/// # async fn run(tools: ToolSet, auth: BearerAuth) -> std::io::Result<()> {
/// let inbox = Inbox::new(&tools, auth.clone(), "refunds:approve");
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// HttpOptions::new().require_bearer(auth).inbox(inbox).serve(listener, tools).await
/// # }
/// ```
#[derive(Clone)]
pub struct Inbox {
    state: Arc<respond::State>,
}

impl Inbox {
    /// The inbox of `tools`, whose people sign in with the tokens `auth`
    /// accepts and need `scope` to enter. It is the inbox of the service
    /// `tools` names ([`ToolSet::server_info`]): it lists and decides that
    /// service's approvals and escalations, and calling agents', but not
    /// those of another service sharing the store — an inbox served apart
    /// from its service names it the same way.
    ///
    /// # Panics
    ///
    /// If `tools` has no store ([`ToolSet::store`]): there is nothing to
    /// show.
    pub fn new(tools: &ToolSet, auth: BearerAuth, scope: impl Into<String>) -> Self {
        let store = tools
            .store_ref()
            .cloned()
            .unwrap_or_else(|| panic!("Inbox::new: the tool set has no store (ToolSet::store)"));
        Inbox {
            state: Arc::new(respond::State::new(
                tools.clone(),
                store,
                auth,
                scope.into(),
                session::Keys::random(),
            )),
        }
    }

    /// The key sessions and forms are signed with (HMAC-SHA256, 32 bytes or
    /// more). Give every replica the same one, from your configuration, so
    /// that a person signed in on one is signed in on all; without one,
    /// each inbox makes a random key, and its sessions end with the process.
    /// Each is signed for this inbox's service and scope: an inbox of
    /// another service, or entered with another scope, takes none of them,
    /// whatever key it shares.
    ///
    /// # Panics
    ///
    /// If `key` is shorter than 32 bytes.
    #[must_use]
    pub fn cookie_key(self, key: impl AsRef<[u8]>) -> Self {
        let key = key.as_ref();
        assert!(
            key.len() >= 32,
            "Inbox::cookie_key: a key of 32 bytes or more"
        );
        self.rebuilt(session::Keys::new(key.to_vec()), self.state.secure_cookies)
    }

    /// Marks every cookie the inbox sets `Secure`, whatever the request
    /// says of itself, and names it `__Host-…`, for the whole host — a
    /// cookie only this host sets, over TLS, which no sibling subdomain
    /// plants. Without it, a cookie is `Secure` only when the
    /// request says it came through TLS (`X-Forwarded-Proto: https`), which
    /// a proxy adds only when told to: an inbox served only over HTTPS —
    /// behind any TLS proxy, as it should be — should say so here, so that
    /// a browser never sends its session over plain HTTP.
    #[must_use]
    pub fn secure_cookies(self) -> Self {
        let keys = self.state.keys.clone();
        self.rebuilt(keys, true)
    }

    /// The same inbox with `keys`, its cookies `Secure` always or not.
    fn rebuilt(&self, keys: session::Keys, secure_cookies: bool) -> Self {
        let state = &self.state;
        let mut rebuilt = respond::State::new(
            state.tools.clone(),
            Arc::clone(&state.store),
            state.auth.clone(),
            state.scope.clone(),
            keys,
        );
        rebuilt.secure_cookies = secure_cookies;
        Inbox {
            state: Arc::new(rebuilt),
        }
    }

    /// Ends every session `subject` is signed in with at this service's
    /// inbox, on every replica sharing the store (and running this
    /// version) — a person of the same name at another service's inbox may
    /// be someone else, and stays signed in: their next page asks
    /// them to sign in, their open forms decide nothing. A session signed
    /// in afterwards is not ended, so when a person's token is revoked or
    /// their scope taken away, have the validator refuse the token first —
    /// one it still accepts (a JWT until it expires) signs in again — then
    /// call this: otherwise a session keeps the scopes of its sign-in for
    /// its 8 hours. The end is kept in the audit as `sessions_ended` of
    /// `subject` by `by` (who asked; a line the store fails to write is
    /// logged, and the sessions are ended all the same). Whether this call
    /// ended an epoch of the person's sessions: `false` when another call
    /// ended the same one at the same moment (a call that comes just after
    /// another ends the next epoch, empty, and says `true`). The person's own "Sign out everywhere" does the same.
    ///
    /// ```no_run
    /// # use tool_envelope::mcp::Inbox;
    /// # async fn run(inbox: &Inbox) -> Result<(), tool_envelope::store::StoreError> {
    /// // Carol left the team: her token is refused from now on, and so is
    /// // every session she signed in with before.
    /// inbox.end_sessions_of("carol", "ops@example.com").await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The store could not be read or written: the sessions may or may not
    /// have been ended. Calling again ends them for certain, and with them
    /// any session the person signed in with since the failed call.
    pub async fn end_sessions_of(&self, subject: &str, by: &str) -> Result<bool, StoreError> {
        signing::end_sessions_of(&self.state, subject, by).await
    }

    /// The inbox's routes, under `/inbox`, to merge into a router of your
    /// own ([`HttpOptions::inbox`](crate::mcp::HttpOptions::inbox) does).
    pub fn router(&self) -> axum::Router {
        pages::router(Arc::clone(&self.state))
    }
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox")
            .field("scope", &self.state.scope)
            .finish_non_exhaustive()
    }
}
