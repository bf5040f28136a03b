//! How an HTTP client reaches its server: reqwest with the client's TLS
//! settings, its credentials, and the headers it sends.

use std::collections::HashMap;
use std::sync::Arc;

use reqwest::header::{HeaderName, HeaderValue};

use crate::envelope::ErrorEnvelope;
use crate::mcp::client::address::{self, Address};
use crate::mcp::client::credentials::{Authorized, Credentials};
use crate::mcp::client::failure::misconfigured;
use crate::mcp::client::options::Options;
use crate::mcp::client::secrets::Sent;

/// The headers a caller may not set: those the transport sends itself, and
/// those HTTP itself owns.
const RESERVED_HEADERS: [&str; 10] = [
    "accept",
    "content-type",
    "content-length",
    "host",
    "connection",
    "transfer-encoding",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "upgrade",
];

/// How an HTTP client reaches its server: reqwest with the client's TLS
/// settings and credentials, and the headers it sends.
#[derive(Clone)]
pub(crate) struct Http {
    /// The URL requests go to: the one given, without its user info.
    pub(crate) url: Arc<str>,
    pub(crate) client: Authorized,
    pub(crate) headers: HashMap<HeaderName, HeaderValue>,
}

impl Http {
    /// The HTTP side of a client's options: its TLS settings, the headers
    /// it was given, its credentials — with those its URL carries (user
    /// info, sent as Basic authentication; query values). No redirect is followed (rmcp's default
    /// follows same-origin 307/308; following none is stricter, and keeps
    /// credentials on their origin); idle connections are kept a while, with
    /// `TCP_NODELAY`; and a server on this machine is reached directly,
    /// whatever proxy the environment names.
    ///
    /// # Errors
    ///
    /// An `other` envelope, reason `CLIENT_MISCONFIGURED`, when the URL, the
    /// TLS settings or a header cannot be used.
    pub(crate) fn new(
        url: &Arc<str>,
        options: &Options,
        sent: &Arc<Sent>,
    ) -> Result<Self, ErrorEnvelope> {
        let credentials = &options.credentials;
        let address = Address::parse(url)?;
        let shows_credentials = !matches!(credentials, Credentials::None)
            || !options.headers.is_empty()
            || !address.secrets.is_empty();
        if shows_credentials && !options.insecure_credentials && !is_private_to_this_machine(url) {
            return Err(misconfigured(format!(
                "credentials would go over plain HTTP to {}: use https://, or allow it with `insecure_credentials`",
                crate::limits::text_for_wire(&address::shown(url), 256)
            )));
        }
        // Never printed, and never quoted by a text that comes back.
        for secret in &address.secrets {
            sent.fixed_credential(secret);
        }
        let mut headers = HashMap::new();
        if let Some(basic) = address.basic {
            if !matches!(credentials, Credentials::None) {
                return Err(misconfigured(
                    "a user and password in the URL and a bearer token: give one".to_owned(),
                ));
            }
            sent.fixed_authorization(basic.to_str().unwrap_or_default());
            headers.insert(reqwest::header::AUTHORIZATION, basic);
        }
        for (name, value_given) in &options.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| misconfigured(format!("`{name}` is not an HTTP header name")))?;
            if RESERVED_HEADERS.contains(&header.as_str()) {
                return Err(misconfigured(format!(
                    "the header `{name}` is the transport's own, and cannot be set"
                )));
            }
            if header == reqwest::header::AUTHORIZATION && !matches!(credentials, Credentials::None)
            {
                return Err(misconfigured(
                    "an `Authorization` header and a bearer token: give one".to_owned(),
                ));
            }
            if header == reqwest::header::AUTHORIZATION && headers.contains_key(&header) {
                return Err(misconfigured(
                    "an `Authorization` header and a user and password in the URL: give one"
                        .to_owned(),
                ));
            }
            let mut value = HeaderValue::from_str(value_given).map_err(|_| {
                misconfigured(format!(
                    "the value of the header `{name}` is not one HTTP allows"
                ))
            })?;
            // Kept out of every debug print, and out of every text that
            // comes back.
            value.set_sensitive(true);
            // As given: a value of other than ASCII is no `to_str`.
            match header == reqwest::header::AUTHORIZATION {
                true => sent.fixed_authorization(value_given),
                false => sent.fixed_credential(&Arc::from(value_given.as_str())),
            }
            headers.insert(header, value);
        }
        // Connections are kept, and a request goes out as soon as it is
        // written: TCP_NODELAY, so that no small write waits for the peer's
        // delayed ACK (rmcp's own client keeps no connection rather than
        // meet that 40 ms stall). A connection the server closed while idle
        // is found closed when it is next taken, and a request that was
        // never written on it is sent again on a new one (hyper's pool).
        // A server on this machine is reached directly: a proxy the
        // environment names (`HTTP_PROXY`, `ALL_PROXY`) would read the
        // credentials, and reach its own `localhost` — and so is everything
        // the client asks on its behalf, an OAuth login's discovery and
        // authorization server included (one client: rmcp's OAuth asks the
        // MCP server's own metadata with it).
        let tls = options.tls.config()?;
        // So are credentials sent in clear (`insecure_credentials`: a
        // network the user trusts, which the environment's proxy may not
        // be on): a proxy reads a plain-HTTP request whole.
        let in_clear = shows_credentials
            && url
                .parse::<reqwest::Url>()
                .is_ok_and(|url| url.scheme() == "http");
        let direct = in_clear || is_loopback(url);
        let opening = connect_timeout(options.timeout);
        let builder = move || {
            let client = reqwest::Client::builder();
            let client = match direct {
                true => client.no_proxy(),
                false => client,
            };
            client
                .pool_max_idle_per_host(MAX_IDLE_CONNECTIONS)
                .pool_idle_timeout(IDLE_TIMEOUT)
                .tcp_nodelay(true)
                .redirect(reqwest::redirect::Policy::none())
                .tls_backend_preconfigured(tls.clone())
        };
        // The calls' client only: an OAuth login's requests have their own
        // time (`oauth::transport`).
        let client = builder()
            .connect_timeout(opening)
            .build()
            .map_err(|error| {
                misconfigured(format!("the HTTP client could not be built: {error}"))
            })?;
        Ok(Http {
            client: Authorized::new(
                client,
                credentials.clone(),
                &address.url,
                Arc::clone(sent),
                options.insecure_credentials,
                builder,
            )
            .map_err(|error| {
                misconfigured(format!(
                    "the OAuth login's HTTP client could not be built: {error}"
                ))
            })?,
            url: address.url,
            headers,
        })
    }
}

/// How long a new connection may take to open — TCP, then TLS — for a
/// client whose calls take at most `timeout`: half of it, at most 10 s and
/// at least 3 s (a proxy, a slow handshake) — or three quarters of it, for
/// a timeout under 4 s, so that the call's own timer, started first, does
/// not end it before. A connection that does not open in time fails
/// the call as not sent (`NOT_APPLIED`, safe to send again), where the
/// call's own timeout, reached first, could not tell a request never
/// written from one unanswered (`MAY_HAVE_TAKEN_EFFECT`).
fn connect_timeout(timeout: std::time::Duration) -> std::time::Duration {
    use std::time::Duration;
    let at_least = Duration::from_secs(3).min(timeout.saturating_mul(3) / 4);
    (timeout / 2).max(at_least).min(Duration::from_secs(10))
}

/// The most idle connections kept to one server.
const MAX_IDLE_CONNECTIONS: usize = 32;

/// How long an idle connection is kept: under the keep-alive of common
/// servers (gunicorn's is 2 s; uvicorn's, under the Python SDK and
/// `FastMCP`, and Node's, under the TypeScript SDK, 5 s; nginx's 75 s), so
/// that the client lets go first, rather than write a call as the server
/// closes — a call that then may have taken effect. Calls in a burst keep
/// their connection; one after a pause of more opens a new one.
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1_500);

/// Whether `url` leaves this machine unencrypted: `https`, or `http` to a
/// loopback host (`localhost`, `127.0.0.0/8`, `::1`), keeps credentials to
/// itself; anything else does not.
pub(super) fn is_private_to_this_machine(url: &str) -> bool {
    let Ok(url) = url.parse::<reqwest::Url>() else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => is_loopback_host(&url),
        _ => false,
    }
}

/// Whether `url` names this machine: `localhost`, `127.0.0.0/8`, `::1`.
fn is_loopback(url: &str) -> bool {
    url.parse::<reqwest::Url>()
        .is_ok_and(|url| is_loopback_host(&url))
}

fn is_loopback_host(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
