//! The HTTP client rmcp's OAuth sends through: this client's own (its TLS
//! settings, no redirect followed), with every address it connects to
//! checked ([`Policy`]), and a bounded reply.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::transport::auth::{OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRequest};

use super::addresses::{NotAllowed, Policy};

/// The most of a reply read, as rmcp's own OAuth client reads.
const MOST_REPLY: usize = 1024 * 1024;

/// How long one request may take, unless rmcp asks for less.
pub(super) const LONGEST: Duration = Duration::from_secs(30);

/// A login's HTTP client: `http` resolves names through `policy`; an
/// address written in a URL, which reqwest connects to without resolving,
/// is checked here.
pub(super) struct Guarded {
    pub(super) http: reqwest::Client,
    /// `http` past any proxy the environment names: what goes over plain
    /// HTTP goes through it, as the MCP client's own credentials in clear
    /// do — a proxy reads a plain-HTTP request whole.
    pub(super) in_clear: reqwest::Client,
    pub(super) policy: Arc<Policy>,
    /// The last refusal's text: rmcp's errors say only "Request failed".
    pub(super) refused: Arc<Mutex<Option<String>>>,
    /// Whether the client was let send credentials over plain HTTP to
    /// another machine ([`insecure_credentials`](crate::mcp::client::Connect::insecure_credentials)):
    /// a login's then too. Otherwise plain HTTP reaches this machine only.
    pub(super) insecure: bool,
}

/// Why a login's request was not sent, or its reply not read.
#[derive(Debug)]
enum Refused {
    Address(String),
    /// Plain HTTP to another machine: what the login sends there — a
    /// client secret, a code, a refresh token — anyone on the way reads.
    Plain(String),
    TooLarge,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Address(host) => write!(
                f,
                "an OAuth login may not connect to `{host}`: not a public address (a private one only \
                 with `OAuth::private_addresses`, this machine only when the MCP server is on it)"
            ),
            Refused::Plain(host) => write!(
                f,
                "an OAuth login may not send to `{host}` over plain HTTP: https only (http to this \
                 machine, or anywhere with `insecure_credentials`)"
            ),
            Refused::TooLarge => write!(f, "an OAuth reply was over {MOST_REPLY} bytes"),
        }
    }
}

impl std::error::Error for Refused {}

impl Guarded {
    /// `refused`, remembered for the login's failure to say.
    fn refuse(&self, refused: Refused) -> rmcp::transport::auth::OAuthHttpClientError {
        *self.refused.lock().unwrap_or_else(PoisonError::into_inner) = Some(refused.to_string());
        Box::new(refused)
    }
}

impl OAuthHttpClient for Guarded {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            // No redirect is followed, whichever rmcp asks for: a redirect
            // comes back as it is, and rmcp reads it as a failure.
            let timeout = request.timeout.map_or(LONGEST, |asked| asked.min(LONGEST));
            let request = reqwest::Request::try_from(request.request)?;
            self.send(request, timeout).await
        })
    }
}

impl Guarded {
    /// Sends `request` if its address may be connected to, and reads the
    /// reply, bounded.
    async fn send(
        &self,
        mut request: reqwest::Request,
        timeout: Duration,
    ) -> Result<oauth2::HttpResponse, rmcp::transport::auth::OAuthHttpClientError> {
        let host = || request.url().host_str().unwrap_or_default().to_owned();
        if !self.policy.allows_url(request.url()) {
            return Err(self.refuse(Refused::Address(host())));
        }
        // The MCP server's documents name the authorization server and its
        // endpoints: an https server may name a plain-HTTP one.
        let plain = (self.insecure && request.url().scheme() == "http")
            || crate::mcp::client::http::is_private_to_this_machine(request.url().as_str());
        if !plain {
            return Err(self.refuse(Refused::Plain(host())));
        }
        *request.timeout_mut() = Some(timeout);
        let http = match request.url().scheme() {
            "http" => &self.in_clear,
            _ => &self.http,
        };
        let mut response = match http.execute(request).await {
            Ok(response) => response,
            Err(error) => {
                // A name the policy refused is the resolver's error.
                let refused = NotAllowed::in_error(&error).map(|refused| refused.0.clone());
                if let Some(text) = refused {
                    *self.refused.lock().unwrap_or_else(PoisonError::into_inner) = Some(text);
                }
                return Err(Box::new(error));
            }
        };
        let mut reply = oauth2::http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            reply = reply.header(name, value);
        }
        match bounded(&mut response, MOST_REPLY).await? {
            Some(body) => Ok(reply.body(body)?),
            None => Err(self.refuse(Refused::TooLarge)),
        }
    }
}

/// The body of `response` as it arrives, or `None` once it is over `most`
/// bytes: nothing past the bound is kept, however long the body goes on.
pub(super) async fn bounded(
    response: &mut reqwest::Response,
    most: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if chunk.len() > most - body.len() {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name is refused where it resolves, and the refusal is kept for the
    /// login's failure to say (rmcp's error reads "Request failed").
    #[tokio::test]
    async fn a_name_refused_where_it_resolves_is_said() {
        let policy = Arc::new(Policy::new("https://mcp.example.com/mcp", false));
        let http = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::clone(&policy))
            .build()
            .unwrap();
        let guarded = Guarded {
            in_clear: http.clone(),
            http,
            policy,
            refused: Arc::default(),
            insecure: false,
        };
        for url in ["http://localhost:9/token", "http://169.254.169.254/token"] {
            let request = reqwest::Request::new(reqwest::Method::POST, url.parse().unwrap());
            assert!(guarded.send(request, LONGEST).await.is_err(), "{url}");
            let said = guarded.refused.lock().unwrap().take();
            assert!(
                said.as_deref()
                    .is_some_and(|said| said.contains("may not connect")),
                "{url}: {said:?}"
            );
        }
    }

    /// What a login sends over plain HTTP (`insecure_credentials`: a
    /// client secret, a code, a refresh token) goes past any proxy, as
    /// the client's own credentials in clear do: a proxy reads a
    /// plain-HTTP request whole. Over https, the proxy is used.
    #[cfg(feature = "rmcp")]
    #[tokio::test]
    async fn a_login_in_clear_goes_past_the_proxy() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // The proxy counts the connections it is offered, and serves none.
        let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
        let offered = Arc::new(AtomicUsize::new(0));
        tokio::spawn({
            let offered = Arc::clone(&offered);
            async move {
                while let Ok((connection, _)) = proxy.accept().await {
                    offered.fetch_add(1, Ordering::SeqCst);
                    drop(connection);
                }
            }
        });
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(|| async { r#"{"access_token":"t","token_type":"Bearer"}"# }),
        );
        let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", server.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(server, app).await });

        let oauth = crate::mcp::client::OAuth::client_credentials("machine", "mach-s3cret");
        let proxied = || reqwest::Client::builder().proxy(reqwest::Proxy::all(&proxy_url).unwrap());
        let http = super::super::OAuthHttp::new(&format!("{base}/mcp"), &oauth, proxied).unwrap();
        let guarded = Guarded {
            http: http.http.clone(),
            in_clear: http.in_clear.clone(),
            policy: Arc::clone(&http.policy),
            refused: Arc::default(),
            insecure: true,
        };
        let token =
            |url: String| reqwest::Request::new(reqwest::Method::POST, url.parse().unwrap());
        let reply = guarded.send(token(format!("{base}/token")), LONGEST).await;
        assert_eq!(reply.expect("sent").status(), 200);
        assert_eq!(
            offered.load(Ordering::SeqCst),
            0,
            "the proxy was offered a login in clear"
        );

        let https = base.replace("http:", "https:");
        assert!(
            guarded
                .send(token(format!("{https}/token")), LONGEST)
                .await
                .is_err()
        );
        assert_eq!(
            offered.load(Ordering::SeqCst),
            1,
            "https goes through the proxy"
        );
    }
}
