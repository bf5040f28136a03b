//! The inbox's routes and what each page shows.

use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, State as Shared};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use minijinja::Environment;
use minijinja::value::Serde;
use serde::Deserialize;

use super::session::{self, Keys, SESSION, SESSION_MS, SIGN_IN};
use super::views::{escalation_view, view};
use crate::caller::Caller;
use crate::mcp::server::rmcp::bearer::BearerAuth;
use crate::mcp::server::toolset::{DecisionError, ToolSet};
use crate::store::{ApprovalState, AuditEntry, EscalationState, Store, now_ms};

/// How many of each list a page shows: the newest 1,000.
const LISTED: u32 = 1000;

/// How many decided approvals a page shows, the newest of the person's
/// scopes (of the newest [`LISTED`] of all).
const DECIDED_LISTED: usize = 20;

/// What every route of one inbox shares.
pub(super) struct State {
    pub(super) tools: ToolSet,
    pub(super) store: Arc<dyn Store>,
    pub(super) auth: BearerAuth,
    pub(super) scope: String,
    keys: Keys,
    pages: Environment<'static>,
}

impl State {
    pub(super) fn new(
        tools: ToolSet,
        store: Arc<dyn Store>,
        auth: BearerAuth,
        scope: String,
        keys: Keys,
    ) -> Self {
        let mut pages = Environment::new();
        for (name, source) in [
            ("base.html", include_str!("templates/base.html")),
            ("sign_in.html", include_str!("templates/sign_in.html")),
            ("inbox.html", include_str!("templates/inbox.html")),
            ("approval.html", include_str!("templates/approval.html")),
            (
                "approval_card.html",
                include_str!("templates/approval_card.html"),
            ),
            ("arguments.html", include_str!("templates/arguments.html")),
        ] {
            pages
                .add_template(name, source)
                .unwrap_or_else(|error| panic!("the inbox's template {name}: {error}"));
        }
        State {
            tools,
            store,
            auth,
            scope,
            keys,
            pages,
        }
    }
}

/// The routes, under `/inbox`.
pub(super) fn router(state: Arc<State>) -> axum::Router {
    axum::Router::new()
        .route("/inbox", get(index))
        .route("/inbox/style.css", get(style))
        .route("/inbox/sign-in", post(sign_in))
        .route("/inbox/sign-out", post(sign_out))
        .route("/inbox/approvals/{id}", get(approval).post(decide))
        .route("/inbox/escalations/{id}", post(resolve))
        .with_state(state)
}

/// Who the request's session cookie is of, and the cookie.
fn signed_in(state: &State, headers: &HeaderMap) -> Option<(Caller, String)> {
    let cookies = headers.get(header::COOKIE)?.to_str().ok()?;
    let cookie = session::cookie(cookies, SESSION)?;
    let caller = state.keys.caller_of(cookie)?;
    Some((caller, cookie.to_owned()))
}

/// A page: `html` with `status`, never cached, never framed, loading
/// nothing but its own style sheet.
fn page(status: StatusCode, html: String) -> Response {
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Renders the template `name` with `context`.
fn render(state: &State, status: StatusCode, name: &str, context: minijinja::Value) -> Response {
    match state
        .pages
        .get_template(name)
        .and_then(|template| template.render(context))
    {
        Ok(html) => page(status, html),
        Err(error) => {
            tracing::warn!(%error, template = name, "the inbox could not render a page");
            page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The page could not be shown.".into(),
            )
        }
    }
}

/// A redirect after a form, to `to`.
fn see_other(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(to) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, to);
    }
    response
}

/// A cookie `name=value`, `HttpOnly`, `SameSite=Strict`, for the inbox's
/// paths, lasting `max_age` seconds; `Secure` when the request came through
/// TLS.
fn set_cookie(response: &mut Response, headers: &HeaderMap, name: &str, value: &str, max_age: i64) {
    let secure = headers
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|proto| proto.eq_ignore_ascii_case("https"));
    let cookie = format!(
        "{name}={value}; Path=/inbox; HttpOnly; SameSite=Strict; Max-Age={max_age}{}",
        if secure { "; Secure" } else { "" }
    );
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
}

/// The refusal of a form: `status`, saying `problem` on the sign-in page.
fn refused(state: &State, status: StatusCode, problem: &str) -> Response {
    let context = minijinja::context! {
        server => server_name(state),
        problem => problem,
        scope => state.scope.as_str(),
        hours => SESSION_MS / 3_600_000,
    };
    render(state, status, "sign_in.html", context)
}

fn server_name(state: &State) -> String {
    state
        .tools
        .name()
        .map_or_else(|| "tool-envelope".to_owned(), str::to_owned)
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
    match signed_in(&state, &headers) {
        Some((caller, cookie)) => listing(&state, &caller, &cookie, None).await,
        None => sign_in_form(&state, &headers, None),
    }
}

/// The sign-in form, bound to this browser by a cookie of its own.
fn sign_in_form(state: &State, headers: &HeaderMap, problem: Option<&str>) -> Response {
    let existing = headers
        .get(header::COOKIE)
        .and_then(|value| value.to_str().ok())
        .and_then(|cookies| session::cookie(cookies, SIGN_IN))
        .map(str::to_owned);
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
struct SignIn {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
}

async fn sign_in(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    let nonce = headers
        .get(header::COOKIE)
        .and_then(|value| value.to_str().ok())
        .and_then(|cookies| session::cookie(cookies, SIGN_IN));
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

fn sign_in_form_refused(state: &State, headers: &HeaderMap, problem: &str) -> Response {
    let mut response = sign_in_form(state, headers, Some(problem));
    *response.status_mut() = StatusCode::FORBIDDEN;
    response
}

#[derive(Deserialize)]
struct Plain {
    #[serde(default)]
    csrf: String,
}

async fn sign_out(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Form(form): Form<Plain>,
) -> Response {
    if let Err(problem) = checked(&state, &headers, &form.csrf) {
        return refused(&state, StatusCode::FORBIDDEN, problem);
    }
    let mut response = see_other("/inbox");
    set_cookie(&mut response, &headers, SESSION, "", 0);
    response
}

/// The signed-in person of a form whose CSRF token is `csrf`, or why the
/// form is refused (403).
fn checked(state: &State, headers: &HeaderMap, csrf: &str) -> Result<Caller, &'static str> {
    let Some((caller, cookie)) = signed_in(state, headers) else {
        return Err("Sign in first.");
    };
    if !state.keys.csrf_holds(&cookie, csrf) {
        return Err("The form did not come from this page: nothing was done.");
    }
    Ok(caller)
}

/// The inbox of `who`: what waits for them, the open escalations, and
/// what was decided lately.
async fn listing(state: &State, who: &Caller, cookie: &str, problem: Option<&str>) -> Response {
    let store = &state.store;
    let lists = async {
        let pending = store.approvals(&[ApprovalState::Pending], LISTED).await?;
        let decided = store
            .approvals(
                &[
                    ApprovalState::Approved,
                    ApprovalState::Running,
                    ApprovalState::Done,
                    ApprovalState::Declined,
                    ApprovalState::Expired,
                ],
                LISTED,
            )
            .await?;
        let escalations = store.escalations(EscalationState::Open, LISTED).await?;
        Ok::<_, crate::store::StoreError>((pending, decided, escalations))
    };
    let (pending, decided, escalations) = match lists.await {
        Ok(lists) => lists,
        Err(error) => {
            tracing::warn!(%error, "the inbox could not read the store");
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                "The store cannot be reached.".into(),
            );
        }
    };
    let (mine, others): (Vec<_>, Vec<_>) = pending
        .iter()
        .partition(|approval| who.has_scope(&approval.approvers));
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
        pending => Serde(mine.into_iter().map(|approval| view(approval, who)).collect::<Vec<_>>()),
        others => others.len(),
        decided => Serde(decided.into_iter().map(|approval| view(approval, who)).collect::<Vec<_>>()),
        escalations => Serde(escalations.iter().map(escalation_view).collect::<Vec<_>>()),
    };
    render(state, StatusCode::OK, "inbox.html", context)
}

/// One approval, with its decision and result.
async fn approval(
    Shared(state): Shared<Arc<State>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Some((who, cookie)) = signed_in(&state, &headers) else {
        return sign_in_form(&state, &headers, None);
    };
    let approval = match state.store.approval(&id).await {
        // Another scope's approval is as unknown as one that never was.
        Ok(Some(approval)) if who.has_scope(&approval.approvers) => approval,
        Ok(_) => return page(StatusCode::NOT_FOUND, "No such approval.".into()),
        Err(error) => {
            tracing::warn!(%error, "the inbox could not read the store");
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                "The store cannot be reached.".into(),
            );
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
    let who = match checked(&state, &headers, &form.csrf) {
        Ok(who) => who,
        Err(problem) => return refused(&state, StatusCode::FORBIDDEN, problem),
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
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            let cookie = signed_in(&state, &headers)
                .map(|(_, cookie)| cookie)
                .unwrap_or_default();
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
    let who = match checked(&state, &headers, &form.csrf) {
        Ok(who) => who,
        Err(problem) => return refused(&state, StatusCode::FORBIDDEN, problem),
    };
    let note = crate::limits::text_for_wire(&form.note, 1024);
    let resolved = state
        .store
        .resolve_escalation(&id, who.subject(), &note, now_ms())
        .await;
    match resolved {
        // Resolved and audited, in one transaction.
        Ok(true) => see_other("/inbox"),
        Ok(false) => {
            let cookie = signed_in(&state, &headers)
                .map(|(_, cookie)| cookie)
                .unwrap_or_default();
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
        Err(_) => page(
            StatusCode::SERVICE_UNAVAILABLE,
            "The store cannot be reached.".into(),
        ),
    }
}
