//! Signing in and out of the inbox, and who a request's session is of.

use std::sync::Arc;

use axum::Form;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use super::respond::{State, cookie, render, see_other, server_name, set_cookie};
use super::session::{self, SESSION, SESSION_MS, SIGN_IN, Session};
use crate::mcp::server::rmcp::bearer::Validated;
use crate::store::{AuditEntry, Store, StoreError, now_ms};

/// The request's session, and its cookie: one this inbox's key signed,
/// not past its end, not signed out of on any replica sharing the store,
/// and not of an epoch of its person's sessions that was ended; `Err` when
/// the store cannot say (logged). A request with no cookie, or one this
/// key did not sign or whose time ran out, never reaches the store.
pub(super) async fn signed_in(
    state: &State,
    headers: &HeaderMap,
) -> Result<Option<(Session, String)>, ()> {
    let Some(cookie) = cookie(state, headers, SESSION) else {
        return Ok(None);
    };
    let Some(session) = state.keys.session(cookie) else {
        return Ok(None);
    };
    let subject = session.caller.subject();
    let ended = match state.store.redeemed(&session::ended(&session.id)).await {
        Ok(false) => {
            let epoch = session::epoch(state.tools.service(), subject, session.epoch);
            state.store.redeemed(&epoch).await
        }
        other => other,
    };
    match ended {
        Ok(false) => Ok(Some((session, cookie.to_owned()))),
        Ok(true) => Ok(None),
        Err(error) => {
            tracing::warn!(%error, "the inbox could not read the store: no session is taken");
            Err(())
        }
    }
}

/// The epoch a session of `subject` begins in now: the first not ended.
/// The ended ones are `0..n` (each is ended once the one before it was,
/// and never swept), so `n` is found in about `2·log2(n)` reads.
pub(super) async fn current_epoch(
    store: &dyn Store,
    service: &str,
    subject: &str,
) -> Result<u64, StoreError> {
    let ended = async |n: u64| store.redeemed(&session::epoch(service, subject, n)).await;
    if !ended(0).await? {
        return Ok(0);
    }
    // `low` ended, `high` not: doubled until so, then halved between.
    let (mut low, mut high) = (0u64, 1u64);
    while ended(high).await? {
        low = high;
        high = high.saturating_mul(2);
    }
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if ended(middle).await? {
            low = middle;
        } else {
            high = middle;
        }
    }
    Ok(high)
}

/// Ends every session `subject` is signed in with, on every replica
/// sharing the store: the current epoch of their sessions, redeemed for
/// good, and a line in the audit (`sessions_ended`, by `by`). Whether this
/// call ended it (another may have at the same moment).
pub(super) async fn end_sessions_of(
    state: &State,
    subject: &str,
    by: &str,
) -> Result<bool, StoreError> {
    let service = state.tools.service();
    let epoch = current_epoch(state.store.as_ref(), service, subject).await?;
    let ended = state
        .store
        .redeem(&session::epoch(service, subject, epoch), i64::MAX)
        .await?;
    if ended {
        let audit = AuditEntry::new(by, "sessions_ended", subject, "");
        if let Err(error) = state.store.audit(&audit).await {
            // The sessions are ended all the same; only the line is missing.
            tracing::warn!(%error, "the inbox could not keep an end of sessions in the audit");
        }
    }
    Ok(ended)
}

/// The sign-in form, bound to this browser by a cookie of its own, saying
/// `problem` if there is one; signed in, the
/// person goes on to `next` (the page they asked for, if it is one of the
/// inbox's: [`return_to`]).
pub(super) fn sign_in_form(
    state: &State,
    headers: &HeaderMap,
    problem: Option<&str>,
    next: &str,
) -> Response {
    let existing = cookie(state, headers, SIGN_IN).map(str::to_owned);
    let nonce = existing.clone().unwrap_or_else(session::nonce);
    let context = minijinja::context! {
        server => server_name(state),
        csrf => state.keys.sign_in_token_of(&nonce),
        scope => state.scope.as_str(),
        hours => SESSION_MS / 3_600_000,
        problem => problem,
        next => return_to(next),
    };
    let mut response = render(state, StatusCode::OK, "sign_in.html", context);
    if existing.is_none() {
        set_cookie(state, &mut response, headers, (SIGN_IN, &nonce), 3600);
    }
    response
}

#[derive(Deserialize)]
pub(super) struct SignIn {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
    /// The page to go on to, signed in.
    #[serde(default)]
    next: String,
}

/// Where a person goes once signed in, of `next`: one of the inbox's own
/// pages — the inbox, or an approval — and nothing else (another site, a
/// path of another server's, a path that climbs out): else the inbox.
pub(super) fn return_to(next: &str) -> &str {
    let id = next.strip_prefix("/inbox/approvals/").unwrap_or("");
    let an_id = (1..=128).contains(&id.len())
        && (id.bytes()).all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    match an_id {
        true => next,
        false => "/inbox",
    }
}

pub(super) async fn sign_in(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    let nonce = cookie(&state, &headers, SIGN_IN);
    if !nonce.is_some_and(|nonce| state.keys.sign_in_token_holds(nonce, &form.csrf)) {
        // A form that holds, in its place: this one is not asked about again.
        return sign_in_form_refused(
            &state,
            &headers,
            "The form had expired: sign in again.",
            &form.next,
        );
    }
    let token = form.token.trim();
    let caller = match state.auth.caller_of(token).await {
        Validated::Caller(caller) => caller,
        Validated::Refused => {
            return sign_in_form_refused(
                &state,
                &headers,
                "That token is not accepted here.",
                &form.next,
            );
        }
        Validated::Unanswered => return not_checked(&state, &headers, &form.next),
    };
    if !caller.has_scope(&state.scope) {
        let problem = format!("Signing in here needs the scope `{}`.", state.scope);
        return sign_in_form_refused(&state, &headers, &problem, &form.next);
    }
    let unreachable = |error: StoreError, what: &str| {
        tracing::warn!(%error, "the inbox could not {what}");
        refused(
            &state,
            &headers,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "The store cannot be reached.",
            ),
            &form.next,
        )
    };
    let service = state.tools.service();
    let epoch = match current_epoch(state.store.as_ref(), service, caller.subject()).await {
        Ok(epoch) => epoch,
        Err(error) => return unreachable(error, "read whose sessions were ended"),
    };
    // The token is asked about again now that the epoch is read: one
    // refused and its person's sessions ended (in that order, as
    // `Inbox::end_sessions_of` asks) between the first answer and the read
    // would otherwise sign in to an epoch nobody ends. The session keeps
    // what the later answer says.
    let again = match state.auth.caller_of(token).await {
        Validated::Caller(again) => Some(again),
        Validated::Refused => None,
        Validated::Unanswered => return not_checked(&state, &headers, &form.next),
    };
    let Some(caller) =
    // A token past its expiry, or within a second of it, opens no session
    // (its validator should have refused it).
        again.filter(|again| {
            again.subject() == caller.subject()
                && again.has_scope(&state.scope)
                && session::session_until(again) > now_ms().saturating_add(1_000)
        })
    else {
        return sign_in_form_refused(
            &state,
            &headers,
            "That token is not accepted here.",
            &form.next,
        );
    };
    let audit = AuditEntry::new(caller.subject(), "sign_in", "inbox", "");
    if let Err(error) = state.store.audit(&audit).await {
        return unreachable(error, "keep a sign-in in the audit");
    }
    let mut response = see_other(return_to(&form.next));
    let value = state.keys.session_of(&caller, epoch);
    let lasts = (session::session_until(&caller).saturating_sub(now_ms()) / 1000).max(1);
    set_cookie(&state, &mut response, &headers, (SESSION, &value), lasts);
    response
}

/// The refusal of a form: `status`, saying `problem` above a sign-in form
/// that works (its own token and cookie), which leads back to `next`.
pub(super) fn refused(
    state: &State,
    headers: &HeaderMap,
    (status, problem): (StatusCode, &str),
    next: &str,
) -> Response {
    let mut response = sign_in_form(state, headers, Some(problem), next);
    *response.status_mut() = status;
    response
}

/// [`refused`], `503 Service Unavailable` with `Retry-After: 1`: the
/// token's validator did not answer in time, so nothing is said of the
/// token.
fn not_checked(state: &State, headers: &HeaderMap, next: &str) -> Response {
    let problem = "The token could not be checked in time: sign in again in a moment.";
    let mut response = refused(
        state,
        headers,
        (StatusCode::SERVICE_UNAVAILABLE, problem),
        next,
    );
    let again = axum::http::HeaderValue::from_static("1");
    response
        .headers_mut()
        .insert(axum::http::header::RETRY_AFTER, again);
    response
}

/// [`refused`], `403 Forbidden`.
pub(super) fn sign_in_form_refused(
    state: &State,
    headers: &HeaderMap,
    problem: &str,
    next: &str,
) -> Response {
    refused(state, headers, (StatusCode::FORBIDDEN, problem), next)
}

#[derive(Deserialize)]
pub(super) struct SignOut {
    #[serde(default)]
    csrf: String,
    /// Any value: every session of the person, not only this one.
    #[serde(default)]
    everywhere: Option<String>,
}

pub(super) async fn sign_out(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Form(form): Form<SignOut>,
) -> Response {
    let session = match checked(&state, &headers, &form.csrf).await {
        Ok((session, _)) => session,
        Err(refusal) => return refused(&state, &headers, refusal, "/inbox"),
    };
    let subject = session.caller.subject();
    let (ended, problem) = match form.everywhere {
        Some(_) => (
            end_sessions_of(&state, subject, subject).await.map(drop),
            "The store cannot be reached: you are still signed in everywhere.",
        ),
        None => (
            end_session(&state, &session).await,
            "The store cannot be reached: you are still signed in.",
        ),
    };
    if let Err(error) = ended {
        tracing::warn!(%error, "the inbox could not end a session in the store");
        let refusal = (StatusCode::SERVICE_UNAVAILABLE, problem);
        return refused(&state, &headers, refusal, "/inbox");
    }
    let mut response = see_other("/inbox");
    set_cookie(&state, &mut response, &headers, (SESSION, ""), 0);
    response
}

/// Ends `session` in the store, for every replica, until a while after its
/// cookie runs out (a replica whose clock is behind the sweeping one's
/// still refuses it): a copy of the cookie is no session any more. The
/// sign-out is in the audit when this call ended it (another request may
/// have at the same moment, and kept its line).
async fn end_session(state: &State, session: &Session) -> Result<(), StoreError> {
    let ended = session::ended(&session.id);
    let until_ms = session.until_ms.saturating_add(session::ENDED_MARGIN_MS);
    if state.store.redeem(&ended, until_ms).await? {
        let audit = AuditEntry::new(session.caller.subject(), "sign_out", "inbox", "");
        if let Err(error) = state.store.audit(&audit).await {
            // The session is ended all the same; only its line is missing.
            tracing::warn!(%error, "the inbox could not keep a sign-out in the audit");
        }
    }
    Ok(())
}

/// The session, and its cookie, of a form whose CSRF token is `csrf`, or
/// why the form is refused: 403, or 503 when the store cannot say whether
/// the session was signed out of.
pub(super) async fn checked(
    state: &State,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<(Session, String), (StatusCode, &'static str)> {
    let Ok(found) = signed_in(state, headers).await else {
        return Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "The store cannot be reached: nothing was done.",
        ));
    };
    let Some((session, cookie)) = found else {
        return Err((StatusCode::FORBIDDEN, "Sign in first."));
    };
    if !state.keys.csrf_holds(&cookie, csrf) {
        return Err((
            StatusCode::FORBIDDEN,
            "The form did not come from this page: nothing was done.",
        ));
    }
    Ok((session, cookie))
}

#[cfg(test)]
mod tests {
    use super::{current_epoch, session};
    use crate::store::{MemoryStore, Store};

    #[tokio::test]
    async fn the_current_epoch_is_the_first_not_ended_whatever_came_before() {
        let store = MemoryStore::new();
        for ended in 0..40u64 {
            assert_eq!(current_epoch(&store, "", "carol").await.unwrap(), ended);
            assert_eq!(current_epoch(&store, "", "dave").await.unwrap(), 0);
            assert_eq!(current_epoch(&store, "hr", "carol").await.unwrap(), 0);
            assert!(
                store
                    .redeem(&session::epoch("", "carol", ended), i64::MAX)
                    .await
                    .unwrap()
            );
        }
        // Another subject that holds the first's name and more.
        assert_eq!(current_epoch(&store, "", "carol:0").await.unwrap(), 0);
    }
}
