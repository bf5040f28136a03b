//! What every page of the inbox shares: its state (the tool set, the
//! store, the sign-in, the keys, the templates) and how a page, a redirect,
//! a cookie and a refusal are answered.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::Environment;

use super::session::{self, Keys};
use crate::mcp::server::rmcp::bearer::BearerAuth;
use crate::mcp::server::toolset::ToolSet;
use crate::store::Store;

/// What every route of one inbox shares.
pub(super) struct State {
    pub(super) tools: ToolSet,
    pub(super) store: Arc<dyn Store>,
    pub(super) auth: BearerAuth,
    pub(super) scope: String,
    pub(super) keys: Keys,
    /// Whether every cookie is `Secure`, whatever the request says of
    /// itself ([`Inbox::secure_cookies`](super::Inbox::secure_cookies)).
    pub(super) secure_cookies: bool,
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
            (
                "unavailable.html",
                include_str!("templates/unavailable.html"),
            ),
        ] {
            pages
                .add_template(name, source)
                .unwrap_or_else(|error| panic!("the inbox's template {name}: {error}"));
        }
        let keys = keys.for_inbox(tools.service(), &scope, store.ledger());
        State {
            tools,
            store,
            auth,
            scope,
            keys,
            secure_cookies: false,
            pages,
        }
    }
}

/// The answer to a request the store could not serve: 503, nothing done,
/// on the inbox's own page.
pub(super) fn store_unreachable(state: &State) -> Response {
    unavailable(state, None)
}

/// The answer to a decision or a resolution the store did not confirm:
/// 503, saying that it may have been kept (the store may have kept it and
/// lost its answer), with a link to `look` at where it stands.
pub(super) fn store_unconfirmed(state: &State, look: &str) -> Response {
    unavailable(state, Some(look))
}

/// The store out of reach; `look`: as a change was asked of it, where to
/// see whether it was kept.
fn unavailable(state: &State, look: Option<&str>) -> Response {
    let context = minijinja::context! {
        server => server_name(state),
        problem => "The store cannot be reached.",
        look => look,
    };
    render(
        state,
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable.html",
        context,
    )
}

/// A page: `html` with `status`, never cached, never framed, loading
/// nothing but its own style sheet.
pub(super) fn page(status: StatusCode, html: String) -> Response {
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
        // Not `no-referrer`: with it a browser sends `Origin: null` with
        // the page's own forms, which `origin` would refuse where no
        // `Sec-Fetch-Site` is sent (plain HTTP to another host). Another
        // origin is sent no referrer, and its forms `Origin: null`.
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Renders the template `name` with `context`.
pub(super) fn render(
    state: &State,
    status: StatusCode,
    name: &str,
    context: minijinja::Value,
) -> Response {
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
pub(super) fn see_other(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(to) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, to);
    }
    response
}

/// A cookie `name=value`, `HttpOnly`, `SameSite=Lax`, lasting `max_age`
/// seconds. Lax, so that a link to an approval followed from a chat or a
/// mail opens it signed in: no other site's form reaches the inbox with it
/// (a browser sends a Lax cookie with another site's `GET` navigation
/// only), every form carries its CSRF token, and no page the inbox serves
/// to a `GET` changes anything. When the inbox's cookies are `Secure`
/// ([`secure`]) its name is `__Host-name`, for the whole host: a cookie
/// only this host can set, over TLS — no sibling subdomain, and nobody on
/// a plain-HTTP path, plants one. Else it is `name`, for the inbox's
/// paths.
pub(super) fn set_cookie(
    state: &State,
    response: &mut Response,
    headers: &HeaderMap,
    (name, value): (&str, &str),
    max_age: i64,
) {
    let secure = secure(state, headers);
    let cookie = match secure {
        true => format!("{}={value}; Path=/; Secure", named(name, secure)),
        false => format!("{name}={value}; Path=/inbox"),
    };
    let cookie = format!("{cookie}; HttpOnly; SameSite=Lax; Max-Age={max_age}");
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
}

/// The value of the inbox's cookie `name` a request carries, under the
/// name [`set_cookie`] gives it for that request; none when it carries two
/// of that name that differ (one planted beside the browser's own).
pub(super) fn cookie<'a>(state: &State, headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    session::cookie(headers, &named(name, secure(state, headers)))
}

/// The name the inbox's cookie `name` has: `__Host-name` when `secure`.
fn named(name: &str, secure: bool) -> std::borrow::Cow<'_, str> {
    match secure {
        true => std::borrow::Cow::Owned(format!("__Host-{name}")),
        false => std::borrow::Cow::Borrowed(name),
    }
}

/// Whether the inbox's cookies are `Secure` for a request with `headers`:
/// always ([`Inbox::secure_cookies`](super::Inbox::secure_cookies)), or
/// when the request came through TLS.
fn secure(state: &State, headers: &HeaderMap) -> bool {
    state.secure_cookies || came_through_tls(headers)
}

/// Whether the proxy in front says the request came to it through TLS: the
/// first entry (the proxy nearest the browser) of `X-Forwarded-Proto`, or
/// the first element's `proto` of `Forwarded` (RFC 7239).
fn came_through_tls(headers: &HeaderMap) -> bool {
    let first = |name| {
        let value = headers.get(name)?.to_str().ok()?;
        Some(
            value
                .split(',')
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned(),
        )
    };
    let https = |proto: &str| proto.trim_matches('"').eq_ignore_ascii_case("https");
    if first("x-forwarded-proto").is_some_and(|proto| https(&proto)) {
        return true;
    }
    first("forwarded").is_some_and(|element| {
        element.split(';').any(|pair| {
            pair.split_once('=').is_some_and(|(key, value)| {
                key.trim().eq_ignore_ascii_case("proto") && https(value.trim())
            })
        })
    })
}

pub(super) fn server_name(state: &State) -> String {
    state
        .tools
        .name()
        .map_or_else(|| "tool-envelope".to_owned(), str::to_owned)
}
