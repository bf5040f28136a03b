//! The inbox's routes and what each page shows.

use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, State as Shared};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use minijinja::value::Serde;
use serde::Deserialize;

use super::origin::same_origin;
use super::respond::{
    State, page, render, see_other, server_name, store_unconfirmed, store_unreachable,
};
use super::session::Session;
use super::signing::{checked, refused, sign_in, sign_in_form, sign_out, signed_in};
use super::views::{escalation_view, view};
use crate::caller::Caller;
use crate::mcp::server::toolset::DecisionError;
use crate::store::{ApprovalRecord, ApprovalState, EscalationRecord, EscalationState, now_ms};

/// How many of each list a page shows: of the approvals waiting, the
/// oldest 1,000; of the open escalations, the newest.
const LISTED: u32 = 1000;

/// How many decided approvals a page shows, the newest of the person's
/// scopes.
const DECIDED_LISTED: usize = 20;

/// The routes, under `/inbox`.
pub(super) fn router(state: Arc<State>) -> axum::Router {
    axum::Router::new()
        .route("/inbox", get(index))
        .route("/inbox/style.css", get(style))
        .route("/inbox/sign-in", post(sign_in))
        .route("/inbox/sign-out", post(sign_out))
        .route("/inbox/approvals/{id}", get(approval).post(decide))
        .route("/inbox/escalations/{id}", post(resolve))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            same_origin,
        ))
        .with_state(state)
}

async fn style() -> Response {
    let mut response = include_str!("templates/style.css").into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/css; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The inbox, or the sign-in form.
async fn index(Shared(state): Shared<Arc<State>>, headers: HeaderMap) -> Response {
    match signed_in(&state, &headers).await {
        Ok(Some((session, cookie))) => listing(&state, &session.caller, &cookie, None).await,
        Ok(None) => sign_in_form(&state, &headers, None, "/inbox"),
        Err(()) => store_unreachable(&state),
    }
}

/// The inbox of `who`: what waits for them, the open escalations, and
/// what was decided lately.
async fn listing(state: &State, who: &Caller, cookie: &str, problem: Option<&str>) -> Response {
    let store = &state.store;
    // Another service's, sharing the store, are theirs: not listed, nor
    // counted among the newest.
    let service = state.tools.service();
    // Nor are another scope's, read in the store, so that approvals and
    // escalations of other scopes never hide this person's.
    let scopes: Vec<&str> = who.scopes().collect();
    let theirs = Some(&scopes[..]);
    let decided_states = [
        ApprovalState::Approved,
        ApprovalState::Running,
        ApprovalState::Done,
        ApprovalState::Declined,
        ApprovalState::Withdrawn,
        ApprovalState::Expired,
    ];
    let lists = async {
        let waiting = [ApprovalState::Pending];
        // The newest of all, to count those waiting for others; when they
        // are all there are (one more is read to tell), the person's are
        // among them.
        // Those whose time ran out, not swept yet, wait no more: neither
        // listed nor counted (each one's own page says it expired).
        let now = now_ms();
        let waits = |approval: &ApprovalRecord| approval.state_at(now) == ApprovalState::Pending;
        let mut all = (store.approvals(service, None, &waiting, LISTED + 1)).await?;
        let more = all.len() > LISTED as usize;
        all.truncate(LISTED as usize);
        all.retain(waits);
        let others = all
            .iter()
            .filter(|approval| !who.has_scope(&approval.approvers))
            .count();
        // Theirs, the oldest first: what waited longest (and expires
        // first) is never crowded off the page by what came after it.
        let mut pending = if more {
            let mut theirs =
                (store.oldest_approvals(service, theirs, &waiting, LISTED + 1)).await?;
            theirs.retain(waits);
            theirs
        } else {
            all.sort_by_key(|approval| approval.created_ms);
            all
        };
        let mine_more = pending.len() > LISTED as usize;
        pending.truncate(LISTED as usize);
        // Read by scope, the newest of theirs are the first few.
        let decided = store.approvals(service, theirs, &decided_states, DECIDED_LISTED as u32);
        let decided = decided.await?;
        // Theirs and everyone's, read by scope: another scope's never
        // crowd them out.
        let escalations = store.escalations(service, theirs, EscalationState::Open, LISTED);
        let escalations = escalations.await?;
        Ok::<_, crate::store::StoreError>((
            pending,
            (others, more, mine_more),
            decided,
            escalations,
        ))
    };
    let (pending, (others, more, mine_more), decided, escalations) = match lists.await {
        Ok(lists) => lists,
        Err(error) => {
            tracing::warn!(%error, "the inbox could not read the store");
            return store_unreachable(state);
        }
    };
    let mine = pending
        .iter()
        .filter(|approval| who.has_scope(&approval.approvers));
    // What was decided, and what the call gave back, is shown only to
    // those who could have decided it.
    let decided: Vec<_> = decided
        .iter()
        .filter(|approval| who.has_scope(&approval.approvers))
        .take(DECIDED_LISTED)
        .collect();
    let context = minijinja::context! {
        server => server_name(state),
        who => who.subject(),
        csrf => state.keys.csrf_of(cookie),
        problem => problem,
        pending => Serde(mine.map(|approval| view(approval, who)).collect::<Vec<_>>()),
        others => others,
        // Counted in the newest 1,000 only: there may be more.
        others_at_least => more,
        // Theirs past the page: the newest wait below the fold.
        mine_more => mine_more,
        decided => Serde(decided.into_iter().map(|approval| view(approval, who)).collect::<Vec<_>>()),
        escalations => Serde(escalations.iter().filter(|escalation| may_see(state, who, escalation)).map(|escalation| escalation_view(escalation, who)).collect::<Vec<_>>()),
    };
    render(state, StatusCode::OK, "inbox.html", context)
}

/// Whether `who` may see and resolve `escalation`: one kept for an
/// approval's approvers (its expiry) is theirs alone, as the approval was,
/// and another service's (sharing the store) is theirs.
fn may_see(state: &State, who: &Caller, escalation: &EscalationRecord) -> bool {
    (escalation.service.as_deref()).is_none_or(|service| service == state.tools.service())
        && (escalation.approvers.as_deref()).is_none_or(|scope| who.has_scope(scope))
}

/// One approval, with its decision and result.
async fn approval(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (Session { caller: who, .. }, cookie) = match signed_in(&state, &headers).await {
        Ok(Some(found)) => found,
        // A link to the approval (in a chat, a mail) leads back to it.
        Ok(None) => return sign_in_form(&state, &headers, None, &format!("/inbox/approvals/{id}")),
        Err(()) => return store_unreachable(&state),
    };
    let approval = match state.store.approval(&id).await {
        // Another scope's approval, or another service's, is as unknown
        // as one that never was.
        Ok(Some(approval)) if state.tools.owns(&approval) && who.has_scope(&approval.approvers) => {
            approval
        }
        Ok(_) => return page(StatusCode::NOT_FOUND, "No such approval.".into()),
        Err(error) => {
            tracing::warn!(%error, "the inbox could not read the store");
            return store_unreachable(&state);
        }
    };
    let waiting = matches!(
        approval.state,
        ApprovalState::Approved | ApprovalState::Running
    );
    let context = minijinja::context! {
        server => server_name(&state),
        who => who.subject(),
        csrf => state.keys.csrf_of(&cookie),
        approval => Serde(view(&approval, &who)),
        refresh => waiting,
    };
    render(&state, StatusCode::OK, "approval.html", context)
}

#[derive(Deserialize)]
struct Decide {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    note: String,
}

async fn decide(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<Decide>,
) -> Response {
    let (who, cookie) = match checked(&state, &headers, &form.csrf).await {
        Ok((session, cookie)) => (session.caller, cookie),
        Err(refusal) => {
            return refused(&state, &headers, refusal, &format!("/inbox/approvals/{id}"));
        }
    };
    let approve = match form.decision.as_str() {
        "approve" => true,
        "decline" => false,
        _ => return page(StatusCode::BAD_REQUEST, "Approve or decline.".into()),
    };
    match state.tools.decide(&id, &who, approve, &form.note).await {
        Ok(_) => see_other(&format!("/inbox/approvals/{id}")),
        Err(error) => {
            let status = match error {
                // Another scope's approval is as unknown as one that never
                // was: the answer names neither it nor its scope.
                DecisionError::UnknownTicket | DecisionError::NotAnApprover { .. } => {
                    return page(StatusCode::NOT_FOUND, "No such approval.".into());
                }
                DecisionError::OwnCall => StatusCode::FORBIDDEN,
                DecisionError::NotPending(_) => StatusCode::CONFLICT,
                DecisionError::Store(error) => {
                    // The database's own words are for the log, not the page.
                    tracing::warn!(%error, "the inbox could not keep a decision");
                    // Where it stands, if the store can say now (and it is
                    // this person's to see): decided by them, it was kept;
                    // still pending, nothing was done.
                    let here = format!("/inbox/approvals/{id}");
                    return match state.store.approval(&id).await {
                        Ok(Some(now))
                            if !(state.tools.owns(&now) && who.has_scope(&now.approvers)) =>
                        {
                            page(StatusCode::NOT_FOUND, "No such approval.".into())
                        }
                        Ok(Some(now))
                            if now.decided_ms.is_some()
                                && now.decided_by.as_deref() == Some(who.subject()) =>
                        {
                            see_other(&here)
                        }
                        Ok(Some(now)) if now.state_at(now_ms()) == ApprovalState::Pending => {
                            store_unreachable(&state)
                        }
                        Ok(None) => page(StatusCode::NOT_FOUND, "No such approval.".into()),
                        _ => store_unconfirmed(&state, &here),
                    };
                }
                DecisionError::NoStore => StatusCode::SERVICE_UNAVAILABLE,
            };
            let problem = format!("Not decided: {error}.");
            let mut response = listing(&state, &who, &cookie, Some(&problem)).await;
            *response.status_mut() = status;
            response
        }
    }
}

#[derive(Deserialize)]
struct Resolve {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: String,
}

async fn resolve(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<Resolve>,
) -> Response {
    let (who, cookie) = match checked(&state, &headers, &form.csrf).await {
        Ok((session, cookie)) => (session.caller, cookie),
        Err(refusal) => return refused(&state, &headers, refusal, "/inbox"),
    };
    // Another scope's escalation is as unknown as one that never was; the
    // caller whose call it is does not resolve it (as nobody decides the
    // approval of their own call).
    match state.store.escalation(&id).await {
        Ok(Some(escalation)) if may_see(&state, &who, &escalation) => {
            if escalation.caller.as_deref() == Some(who.subject()) {
                let problem = "Not resolved: nobody resolves the escalation of their own call.";
                let mut response = listing(&state, &who, &cookie, Some(problem)).await;
                *response.status_mut() = StatusCode::FORBIDDEN;
                return response;
            }
        }
        Ok(_) => return page(StatusCode::NOT_FOUND, "No such escalation.".into()),
        Err(error) => {
            tracing::warn!(%error, "the inbox could not read the store");
            return store_unreachable(&state);
        }
    }
    let note = crate::limits::kept_note(&form.note);
    let resolved = state
        .store
        .resolve_escalation(&id, who.subject(), &note, now_ms())
        .await;
    match resolved {
        // Resolved and audited, in one transaction.
        Ok(true) => see_other("/inbox"),
        Ok(false) => {
            let mut response = listing(
                &state,
                &who,
                &cookie,
                Some("Not resolved: it was resolved already."),
            )
            .await;
            *response.status_mut() = StatusCode::CONFLICT;
            response
        }
        Err(error) => {
            tracing::warn!(%error, "the inbox could not keep a resolution");
            store_unconfirmed(&state, "/inbox")
        }
    }
}
