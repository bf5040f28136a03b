//! Signing in and out of the inbox, and who a request's session is of.

use std::sync::Arc;

use axum::Form;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use super::respond::{State, refused, render, see_other, server_name, set_cookie};
use super::session::{self, SESSION, SESSION_MS, SIGN_IN, Session};
use crate::store::AuditEntry;

/// The request's session, and its cookie: one this inbox's key signed,
/// not past its end, and not signed out of on any replica sharing the
/// store; `Err` when the store cannot say whether it was signed out of
/// (logged). A request with no cookie, or one this key did not sign or
/// whose time ran out, never reaches the store.
pub(super) async fn signed_in(
    state: &State,
    headers: &HeaderMap,
) -> Result<Option<(Session, String)>, ()> {
    let Some(cookie) = session::cookie(headers, SESSION) else {
        return Ok(None);
    };
    let Some(session) = state.keys.session(cookie) else {
        return Ok(None);
    };
    match state.store.redeemed(&session::ended(&session.id)).await {
        Ok(false) => Ok(Some((session, cookie.to_owned()))),
        Ok(true) => Ok(None),
        Err(error) => {
            tracing::warn!(%error, "the inbox could not read the store: no session is taken");
            Err(())
        }
    }
}

/// The sign-in form, bound to this browser by a cookie of its own.
pub(super) fn sign_in_form(state: &State, headers: &HeaderMap, problem: Option<&str>) -> Response {
    let existing = session::cookie(headers, SIGN_IN).map(str::to_owned);
    let nonce = existing.clone().unwrap_or_else(session::nonce);
    let context = minijinja::context! {
        server => server_name(state),
        csrf => state.keys.csrf_of(&nonce),
        scope => state.scope.as_str(),
        hours => SESSION_MS / 3_600_000,
        problem => problem,
    };
    let mut response = render(state, StatusCode::OK, "sign_in.html", context);
    if existing.is_none() {
        set_cookie(&mut response, headers, SIGN_IN, &nonce, 3600);
    }
    response
}

#[derive(Deserialize)]
pub(super) struct SignIn {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
}

pub(super) async fn sign_in(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    let nonce = session::cookie(&headers, SIGN_IN);
    if !nonce.is_some_and(|nonce| state.keys.csrf_holds(nonce, &form.csrf)) {
        return refused(
            &state,
            StatusCode::FORBIDDEN,
            "The form had expired: sign in again.",
        );
    }
    let Some(caller) = state.auth.caller_of(form.token.trim()).await else {
        return sign_in_form_refused(&state, &headers, "That token is not accepted here.");
    };
    if !caller.has_scope(&state.scope) {
        let problem = format!("Signing in here needs the scope `{}`.", state.scope);
        return sign_in_form_refused(&state, &headers, &problem);
    }
    let audit = AuditEntry::new(caller.subject(), "sign_in", "inbox", "");
    if let Err(error) = state.store.audit(&audit).await {
        tracing::warn!(%error, "the inbox could not keep a sign-in in the audit");
        return refused(
            &state,
            StatusCode::SERVICE_UNAVAILABLE,
            "The store cannot be reached.",
        );
    }
    let mut response = see_other("/inbox");
    let value = state.keys.session_of(&caller);
    set_cookie(&mut response, &headers, SESSION, &value, SESSION_MS / 1000);
    response
}

pub(super) fn sign_in_form_refused(state: &State, headers: &HeaderMap, problem: &str) -> Response {
    let mut response = sign_in_form(state, headers, Some(problem));
    *response.status_mut() = StatusCode::FORBIDDEN;
    response
}

#[derive(Deserialize)]
pub(super) struct Plain {
    #[serde(default)]
    csrf: String,
}

pub(super) async fn sign_out(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Form(form): Form<Plain>,
) -> Response {
    let session = match checked(&state, &headers, &form.csrf).await {
        Ok((session, _)) => session,
        Err((status, problem)) => return refused(&state, status, problem),
    };
    // Ended in the store, for every replica, until a while after its
    // cookie runs out (a replica whose clock is behind the sweeping one's
    // still refuses it): a copy of the cookie is no session any more.
    let ended = session::ended(&session.id);
    let until_ms = session.until_ms.saturating_add(session::ENDED_MARGIN_MS);
    match state.store.redeem(&ended, until_ms).await {
        Ok(true) => {
            let audit = AuditEntry::new(session.caller.subject(), "sign_out", "inbox", "");
            if let Err(error) = state.store.audit(&audit).await {
                // The session is ended all the same; only its line is missing.
                tracing::warn!(%error, "the inbox could not keep a sign-out in the audit");
            }
        }
        // Signed out at the same moment by another request: its line is kept.
        Ok(false) => {}
        Err(error) => {
            tracing::warn!(%error, "the inbox could not end a session in the store");
            let problem = "The store cannot be reached: you are still signed in.";
            return refused(&state, StatusCode::SERVICE_UNAVAILABLE, problem);
        }
    }
    let mut response = see_other("/inbox");
    set_cookie(&mut response, &headers, SESSION, "", 0);
    response
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
