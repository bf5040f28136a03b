//! The `Host` check of the routes served beside `/mcp` — the inbox's
//! pages, the protected resource metadata — judged as rmcp judges those
//! of `/mcp`, from the same list ([`HttpOptions::allowed_hosts`]): a page
//! reached by a name the service does not answer to (DNS rebinding: a
//! name of the attacker's made to point at this machine) gets 403 there
//! too.
//!
//! [`HttpOptions::allowed_hosts`]: super::HttpOptions::allowed_hosts

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri, header, uri::Authority};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// A host and the port, if any, it is reached on: lower case, an IPv6
/// address without its brackets.
#[derive(Debug, PartialEq, Eq)]
struct Reached {
    host: String,
    port: Option<u16>,
}

impl Reached {
    fn of(authority: &Authority) -> Self {
        Reached {
            host: (authority
                .host()
                .trim_start_matches('[')
                .trim_end_matches(']'))
            .to_ascii_lowercase(),
            port: authority.port_u16(),
        }
    }
}

/// The names a service answers to: rmcp's list, as
/// [`HttpOptions`](super::HttpOptions) leaves it (empty for any host; a
/// blank entry, which names none, for no host).
#[derive(Debug, Clone)]
pub(super) struct AllowedHosts(Arc<[String]>);

impl AllowedHosts {
    pub(super) fn new(hosts: &[String]) -> Self {
        AllowedHosts(hosts.into())
    }

    /// Whether a request with `uri` and `host` (its `Host` header) may be
    /// served: a host that is allowed, on the port its entry names if it
    /// names one; with no `Host` header, the URI's authority (HTTP/2).
    fn admit(&self, uri: &Uri, host: Option<&header::HeaderValue>) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let reached = match host {
            Some(host) => (host.to_str().ok()).and_then(|host| Authority::try_from(host).ok()),
            None => uri.authority().cloned(),
        };
        let Some(reached) = reached.as_ref().map(Reached::of) else {
            return false;
        };
        self.0.iter().any(|allowed| {
            let allowed = allowed.trim();
            let allowed = match Authority::try_from(allowed) {
                Ok(authority) => Reached::of(&authority),
                Err(_) if allowed.is_empty() => return false,
                Err(_) => Reached {
                    host: allowed.to_ascii_lowercase(),
                    port: None,
                },
            };
            allowed.host == reached.host
                && allowed.port.is_none_or(|port| reached.port == Some(port))
        })
    }
}

/// The middleware: 403, as rmcp answers on `/mcp`, for a host not allowed.
pub(super) async fn admit_host(
    State(allowed): State<AllowedHosts>,
    request: Request,
    next: Next,
) -> Response {
    match allowed.admit(request.uri(), request.headers().get(header::HOST)) {
        true => next.run(request).await,
        false => (
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed",
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admits(allowed: &[&str], host: &str) -> bool {
        let allowed: Vec<String> = allowed.iter().map(|&host| host.to_owned()).collect();
        let host = header::HeaderValue::from_str(host).unwrap();
        AllowedHosts::new(&allowed).admit(&Uri::from_static("/inbox"), Some(&host))
    }

    #[test]
    fn a_host_is_judged_as_rmcp_judges_it() {
        let loopback = ["localhost", "127.0.0.1", "::1"];
        assert!(admits(&loopback, "localhost:8080"));
        assert!(admits(&loopback, "LOCALHOST"));
        assert!(admits(&loopback, "[::1]:9"));
        assert!(!admits(&loopback, "evil.example"));
        assert!(!admits(&loopback, "localhost.evil.example:8080"));
        assert!(admits(
            &["tools.example.com:8443"],
            "tools.example.com:8443"
        ));
        assert!(!admits(&["tools.example.com:8443"], "tools.example.com"));
        assert!(!admits(
            &["tools.example.com:8443"],
            "tools.example.com:443"
        ));
        // `any_host` leaves the list empty; an empty `allowed_hosts`, a blank entry.
        assert!(admits(&[], "evil.example"));
        assert!(!admits(&[""], "localhost"));
        assert!(!admits(&loopback, "not a host"));
    }
}
