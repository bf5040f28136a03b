//! Forms from the inbox's own pages only. A browser says where a request
//! comes from: `Sec-Fetch-Site` (every current browser, to a secure origin:
//! HTTPS, or this machine), else `Origin`, which every browser sends with a
//! `POST` — `null` from another origin under the page's referrer policy
//! (`same-origin`), the page's own origin from the page itself. A `POST`
//! another origin made — another site, or a sibling subdomain, which is the
//! same site to `SameSite` cookies — is refused before its form is read. A
//! request with neither header is no browser's; its form still needs its
//! CSRF token. The rule is the one Go's `net/http.CrossOriginProtection`
//! applies. Where no `Sec-Fetch-Site` is sent, the `Origin` is compared
//! with the `Host` the request arrived with: a proxy in front must pass the
//! browser's `Host` on (nginx: `proxy_set_header Host $host`).

use std::sync::Arc;

use axum::extract::{Request, State as Shared};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::Response;

use super::respond::State;
use super::signing::refused;

/// Runs `request` unless it is a `POST` (or any method that may change
/// something) another origin made: then 403, nothing read or done.
pub(super) async fn same_origin(
    Shared(state): Shared<Arc<State>>,
    request: Request,
    next: Next,
) -> Response {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if !safe && from_another_origin(request.headers(), request.uri()) {
        tracing::info!(
            path = request.uri().path(),
            "the inbox refused a form another origin sent"
        );
        let problem = "That form was sent from another site: nothing was done.";
        let (headers, path) = (request.headers(), request.uri().path());
        return refused(&state, headers, (StatusCode::FORBIDDEN, problem), path);
    }
    next.run(request).await
}

/// Whether the browser says another origin made the request: its
/// `Sec-Fetch-Site` is neither `same-origin` nor `none` (typed by the
/// person), or, without one, its `Origin` is not the host it was sent to.
fn from_another_origin(headers: &HeaderMap, uri: &Uri) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return !matches!(site.as_bytes(), b"same-origin" | b"none");
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return false;
    };
    // HTTP/2 names the host in the URI, HTTP/1.1 in `Host`.
    let host = uri
        .authority()
        .map(|authority| authority.as_str().as_bytes())
        .or_else(|| headers.get(header::HOST).map(HeaderValue::as_bytes));
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|origin| origin.split_once("://"))
        .map(|(_, host)| host.as_bytes());
    // `Origin: null` (a sandboxed frame, a redirect across origins) has no host.
    match (origin_host, host) {
        (Some(origin), Some(host)) => !origin.eq_ignore_ascii_case(host),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn only_the_inboxs_own_origin_may_post() {
        let path = Uri::from_static("/inbox/sign-in");
        let host = ("host", "inbox.example.com");
        for (pairs, another) in [
            (vec![host, ("sec-fetch-site", "same-origin")], false),
            (vec![host, ("sec-fetch-site", "none")], false),
            (vec![host, ("sec-fetch-site", "same-site")], true),
            (vec![host, ("sec-fetch-site", "cross-site")], true),
            // The browser's word wins over an `Origin` that would pass.
            (
                vec![
                    host,
                    ("sec-fetch-site", "same-site"),
                    ("origin", "https://inbox.example.com"),
                ],
                true,
            ),
            (vec![host, ("origin", "https://inbox.example.com")], false),
            (vec![host, ("origin", "https://INBOX.example.com")], false),
            (vec![host, ("origin", "https://evil.example.com")], true),
            (
                vec![host, ("origin", "https://inbox.example.com:8443")],
                true,
            ),
            (vec![host, ("origin", "null")], true),
            (vec![("origin", "https://inbox.example.com")], true),
            // No browser's cross-origin request: the CSRF token decides.
            (vec![host], false),
            (vec![], false),
        ] {
            assert_eq!(
                from_another_origin(&headers(&pairs), &path),
                another,
                "{pairs:?}"
            );
        }
        let http2 = Uri::from_static("https://inbox.example.com/inbox/sign-in");
        let origin = headers(&[("origin", "https://inbox.example.com")]);
        assert!(!from_another_origin(&origin, &http2));
    }
}
