//! Both ends of a protected connection: a tool set that requires a bearer
//! token (401 with its challenge, the metadata document, the caller's scopes
//! in guards and tools), and `McpClient` sending one — fixed, or from a
//! provider refreshed once on a 401 — and over TLS, trusting a private CA
//! or failing with the certificate envelope before anything is sent.
#![cfg(all(feature = "rmcp", feature = "client"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};
use tool_envelope::guard::{Blocked, Caller, Guards, ToolCall};
use tool_envelope::mcp::client::{McpClient, Roots, TokenRequest};
use tool_envelope::mcp::{BearerAuth, HttpOptions, ToolContext, ToolSet};
use tool_envelope::{ErrorCategory, ErrorEnvelope, reasons, tool};

/// Refund an order.
#[tool(destructive)]
fn refund(order: String) -> Result<String, ErrorEnvelope> {
    Ok(format!("refunded {order}"))
}

/// Who is calling, as the server knows it.
#[tool(read_only)]
fn whoami(context: ToolContext) -> Result<Value, ErrorEnvelope> {
    let caller = context
        .caller()
        .expect("a protected tool set knows its caller");
    Ok(json!({
        "subject": caller.subject(),
        "scopes": caller.scopes().collect::<Vec<_>>(),
    }))
}

/// The tokens the test server accepts, and whom they belong to.
async fn validate(token: String) -> Option<Caller> {
    match token.as_str() {
        "reader" => Some(Caller::new("agent-7", ["orders:read"])),
        "writer" => Some(Caller::new("ops", ["orders:read", "refunds:write"])),
        // A validator's mistake: a token that names nobody.
        "nobody" => Some(Caller::new("", ["orders:read", "refunds:write"])),
        // Subjects a store cannot keep or index as they are (Postgres
        // refuses a NUL, and index entries past ~2.7 KB): their bounds
        // would be counted by no store.
        "nul" => Some(Caller::new("agent\0-7", ["orders:read"])),
        "newline" => Some(Caller::new("agent\n-7", ["orders:read"])),
        "long" => Some(Caller::new("a".repeat(1025), ["orders:read"])),
        "longest" => Some(Caller::new("a".repeat(1024), ["orders:read"])),
        // An authorization server that never answers: the validator's
        // future is dropped when the server stops waiting for it.
        "stuck" => {
            let _waiting = Waiting::new();
            std::future::pending::<Option<Caller>>().await
        }
        _ => None,
    }
}

/// How many validations of `stuck` are waiting: each one counts itself
/// while it lives.
static STUCK: AtomicU32 = AtomicU32::new(0);

struct Waiting;

impl Waiting {
    fn new() -> Self {
        STUCK.fetch_add(1, Ordering::SeqCst);
        Waiting
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        STUCK.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A protected tool set on a loopback port, stateless; its URL.
async fn protected(required: &[&str]) -> String {
    protected_with(required, |auth| auth).await
}

/// [`protected`], its `BearerAuth` set further by `set`.
async fn protected_with(required: &[&str], set: impl FnOnce(BearerAuth) -> BearerAuth) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let auth = BearerAuth::new(format!("http://{address}/mcp"), validate)
        .authorization_server("https://auth.example.com")
        .scopes_supported(["orders:read", "refunds:write"])
        .required_scopes(required.iter().copied());
    let auth = set(auth);
    let tools = ToolSet::new().tool::<refund>().tool::<whoami>().guards(
        Guards::new().for_tool("refund", |call: &ToolCall| -> Result<(), Blocked> {
            call.require_scope("refunds:write")
        }),
    );
    tokio::spawn(async move {
        HttpOptions::new()
            .stateless()
            .require_bearer(auth)
            .serve(listener, tools)
            .await
    });
    format!("http://{address}/mcp")
}

/// The status and `WWW-Authenticate` of a bare `tools/list` POST.
async fn post(url: &str, token: Option<&str>) -> (u16, Option<String>) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|value| value.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

#[tokio::test]
async fn a_protected_tool_set_answers_401_with_a_challenge_that_points_at_its_metadata() {
    let url = protected(&[]).await;
    let metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");

    let (status, challenge) = post(&url, None).await;
    assert_eq!(status, 401);
    let challenge = challenge.expect("a 401 carries a challenge");
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata}\"")
    );

    let (status, challenge) = post(&url, Some("forged")).await;
    assert_eq!(status, 401);
    assert!(challenge.unwrap().ends_with("error=\"invalid_token\""));
    // A caller without a subject would be the anonymous caller of a server
    // without a bearer check: its tasks, approvals and states.
    let (status, challenge) = post(&url, Some("nobody")).await;
    assert_eq!(status, 401);
    assert!(challenge.unwrap().ends_with("error=\"invalid_token\""));
    // Nor one whose subject holds a control character or is over 1 KiB.
    for token in ["nul", "newline", "long"] {
        let (status, challenge) = post(&url, Some(token)).await;
        assert_eq!(status, 401, "{token}");
        assert!(challenge.unwrap().ends_with("error=\"invalid_token\""));
    }
    assert_eq!(post(&url, Some("longest")).await.0, 200);

    assert_eq!(post(&url, Some("reader")).await.0, 200);
    // Two credentials are none, whichever a proxy in front may have read.
    let twice = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", "Bearer reader")
        .header("authorization", "Bearer forged")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), 400);
    let challenge = twice.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.ends_with("error=\"invalid_request\""),
        "{challenge}"
    );

    // Nor is a header that is not one token's shape (RFC 6750 §2.1): a
    // list, a quote, a space inside — the validator never reads it.
    for sent in [
        "Bearer reader, Bearer forged",
        "Bearer \"reader\"",
        "Bearer read er",
    ] {
        let shaped = reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("authorization", sent)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .send()
            .await
            .unwrap();
        assert_eq!(shaped.status(), 400, "{sent}");
        let challenge = shaped.headers()["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.ends_with("error=\"invalid_request\""),
            "{sent}: {challenge}"
        );
    }
    // Padding is a token's own.
    let (status, _) = post(&url, Some("reader==")).await;
    assert_eq!(status, 401, "a token's shape, refused by the validator");

    let document: Value = reqwest::get(&metadata).await.unwrap().json().await.unwrap();
    assert_eq!(document["resource"], url);
    assert_eq!(
        document["authorization_servers"],
        json!(["https://auth.example.com"])
    );
    assert_eq!(
        document["scopes_supported"],
        json!(["orders:read", "refunds:write"])
    );
}

#[tokio::test]
async fn a_token_without_a_required_scope_gets_403_and_the_client_names_the_scope() {
    let url = protected(&["refunds:write"]).await;
    let (status, challenge) = post(&url, Some("reader")).await;
    assert_eq!(status, 403);
    let challenge = challenge.unwrap();
    assert!(challenge.contains("scope=\"refunds:write\""), "{challenge}");
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );

    let refused = McpClient::connect(&url).bearer("reader").await.unwrap_err();
    assert_eq!(refused.category(), ErrorCategory::Permission);
    assert_eq!(refused.reason(), Some(reasons::INSUFFICIENT_SCOPE));
    assert!(
        refused.message().contains("refunds:write"),
        "{}",
        refused.message()
    );
    assert!(!refused.is_retryable());
}

#[tokio::test]
async fn a_validator_that_does_not_answer_in_time_gets_503_not_a_refusal_of_the_token() {
    let url = protected_with(&[], |auth| {
        auth.validator_timeout(std::time::Duration::from_millis(300))
    })
    .await;
    let response = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .bearer_auth("stuck")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    // Nothing says the token is bad: a client keeps it and tries again.
    assert!(response.headers().get("www-authenticate").is_none());
    // The validation was given up, not left waiting.
    assert_eq!(STUCK.load(Ordering::SeqCst), 0);

    let failed = McpClient::connect(&url).bearer("stuck").await.unwrap_err();
    assert_eq!(failed.category(), ErrorCategory::Transient, "{failed}");
    assert_eq!(failed.reason(), Some("HTTP_503"));
    assert!(failed.is_retryable());
    assert_eq!(
        failed.retry_after(),
        Some(std::time::Duration::from_secs(1))
    );
    assert!(!failed.to_string().contains("stuck"), "{failed}");
    assert_eq!(STUCK.load(Ordering::SeqCst), 0);

    // A token the validator answers for is served as before.
    let reader = McpClient::connect(&url).bearer("reader").await.unwrap();
    assert_eq!(
        reader.call("whoami", json!({})).await.unwrap()["subject"],
        "agent-7"
    );
}

#[tokio::test]
async fn without_a_token_the_client_fails_as_permission_and_says_what_to_do() {
    let url = protected(&[]).await;
    let refused = McpClient::connect(&url).await.unwrap_err();
    assert_eq!(refused.category(), ErrorCategory::Permission);
    assert_eq!(refused.reason(), Some("HTTP_401"));
    assert!(!refused.is_retryable());
    assert!(
        refused
            .alternatives()
            .iter()
            .any(|next| next.contains("token")),
        "{:?}",
        refused.alternatives()
    );
}

#[tokio::test]
async fn the_callers_scopes_reach_the_tools_and_the_guards() {
    let url = protected(&[]).await;
    let reader = McpClient::connect(&url).bearer("reader").await.unwrap();
    let me = reader.call("whoami", json!({})).await.unwrap();
    // A `serde_json::Value` that is an object comes back as it is.
    assert_eq!(me, json!({"subject": "agent-7", "scopes": ["orders:read"]}));

    let refused = reader
        .call("refund", json!({"order": "O-1"}))
        .await
        .unwrap_err();
    assert_eq!(refused.category(), ErrorCategory::Permission);
    assert_eq!(refused.reason(), Some(reasons::INSUFFICIENT_SCOPE));
    assert!(refused.message().contains("refunds:write"));
    assert!(
        !refused.to_string().contains("reader"),
        "the token is nowhere in the envelope"
    );

    let writer = McpClient::connect(&url).bearer("writer").await.unwrap();
    let done = writer
        .call("refund", json!({"order": "O-1"}))
        .await
        .unwrap();
    assert_eq!(done["result"], "refunded O-1");
}

#[tokio::test]
async fn a_refused_token_is_refreshed_once_and_the_request_sent_again() {
    let url = protected(&[]).await;
    let asked = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&asked);
    let client = McpClient::connect(&url)
        .bearer_with(move |request: TokenRequest| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                match request {
                    // The cached token has expired.
                    TokenRequest::First => Ok(Some("expired".to_owned())),
                    TokenRequest::Refused {
                        status,
                        www_authenticate,
                    } => {
                        assert_eq!(status, 401);
                        assert!(www_authenticate.unwrap().contains("invalid_token"));
                        Ok(Some(if n < 2 { "writer" } else { "forged" }.to_owned()))
                    }
                    _ => unreachable!(),
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "first, then once refreshed"
    );
    for order in ["O-1", "O-2", "O-3"] {
        client
            .call("refund", json!({"order": order}))
            .await
            .unwrap();
    }
    assert_eq!(asked.load(Ordering::SeqCst), 2, "the fresh token is kept");
}

/// A server that refuses a token with a bare 401, no `WWW-Authenticate`
/// (RFC 6750 asks for one; not every server sends it): the token provider
/// is asked again all the same, and the call sent again with its answer.
#[tokio::test]
async fn a_token_refused_without_a_challenge_is_asked_for_again() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let auth = BearerAuth::new(url.clone(), validate);
    let router = HttpOptions::new()
        .stateless()
        .require_bearer(auth)
        .router(ToolSet::new().tool::<refund>())
        .layer(axum::middleware::map_response(
            |mut response: axum::response::Response| async move {
                response.headers_mut().remove("www-authenticate");
                response
            },
        ));
    tokio::spawn(async move { axum::serve(listener, router).await });
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let client = McpClient::connect(&url)
        .bearer_with(move |request: TokenRequest| {
            let token = match &request {
                TokenRequest::First => "expired",
                TokenRequest::Refused { .. } => "writer",
                _ => unreachable!(),
            };
            seen.lock().unwrap().push(request);
            async move { Ok(Some(token.to_owned())) }
        })
        .await
        .expect("connected with the token asked for again");
    let done = client
        .call("refund", json!({"order": "O-1"}))
        .await
        .unwrap();
    assert_eq!(done["result"], "refunded O-1");
    assert_eq!(
        *asked.lock().unwrap(),
        [
            TokenRequest::First,
            TokenRequest::Refused {
                status: 401,
                www_authenticate: None
            }
        ]
    );
}

/// Whether the first token below was revoked: the server refuses it then.
static FIRST_REVOKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

const FIRST_TOKEN: &str = "first-t0ken-41c7";
const FRESH_TOKEN: &str = "fresh-t0ken-9be2";

/// A validator that names each caller by their token, as careless code
/// does; the first token stops being valid once revoked.
async fn by_token(token: String) -> Option<Caller> {
    let valid = match token.as_str() {
        FIRST_TOKEN => !FIRST_REVOKED.load(Ordering::SeqCst),
        FRESH_TOKEN => true,
        _ => false,
    };
    valid.then(|| Caller::new(token, ["orders:read"]))
}

/// Reports progress naming its caller.
#[tool(read_only)]
async fn greet_caller(context: ToolContext) -> Result<u32, ErrorEnvelope> {
    let caller = context.caller().map(|caller| caller.subject().to_owned());
    let message = format!("working for {}", caller.unwrap_or_default());
    context.progress(1.0, Some(1.0), Some(&message)).await;
    Ok(1)
}

#[tokio::test]
async fn a_progress_message_quotes_no_token_obtained_during_the_call() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let auth = BearerAuth::new(url.clone(), by_token);
    let tools = ToolSet::new().tool::<greet_caller>();
    tokio::spawn(async move {
        (HttpOptions::new().stateless())
            .require_bearer(auth)
            .serve(listener, tools)
            .await
    });
    let client = McpClient::connect(&url)
        .bearer_with(|request: TokenRequest| async move {
            Ok(Some(match request {
                TokenRequest::First => FIRST_TOKEN.to_owned(),
                _ => FRESH_TOKEN.to_owned(),
            }))
        })
        .await
        .unwrap();
    // Connected with the first token; the call is refused it, and sent
    // again with a fresh one, which the tool's progress names.
    FIRST_REVOKED.store(true, Ordering::SeqCst);
    let (seen, mut progress) = tokio::sync::mpsc::unbounded_channel();
    client
        .call_with_progress("greet_caller", json!({}), move |step| {
            let _ = seen.send(step.message);
        })
        .await
        .unwrap();
    let message = tokio::time::timeout(std::time::Duration::from_secs(10), progress.recv())
        .await
        .expect("the progress came")
        .unwrap();
    assert_eq!(message.as_deref(), Some("working for [redacted]"));
}

#[tokio::test]
async fn a_token_providers_failure_is_the_calls_envelope() {
    let url = protected(&[]).await;
    let failed = McpClient::connect(&url)
        .bearer_with(|_: TokenRequest| async {
            Err(
                ErrorEnvelope::permission("the session with the identity provider ended")
                    .with_alternative("Log in again"),
            )
        })
        .await
        .unwrap_err();
    assert_eq!(failed.category(), ErrorCategory::Permission);
    assert_eq!(
        failed.message(),
        "the session with the identity provider ended"
    );
    assert_eq!(failed.alternatives(), ["Log in again"]);
}

/// The metadata of an authorization server at `base` that logs machines
/// in with a client secret (`/token`).
#[cfg(feature = "oauth")]
fn machine_metadata(base: &str) -> Value {
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_post"],
    })
}

/// An authorization server for machines on a loopback port: its metadata
/// (`machine_metadata`, changed by `edit`) and its `/token` endpoint, if
/// given; its base URL.
#[cfg(feature = "oauth")]
async fn machine_authorization_server(
    edit: impl FnOnce(&mut Value),
    token: Option<axum::routing::MethodRouter>,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut metadata = machine_metadata(&base);
    edit(&mut metadata);
    let mut app = axum::Router::new().route(
        "/.well-known/oauth-authorization-server",
        axum::routing::get(move || std::future::ready(axum::Json(metadata))),
    );
    if let Some(token) = token {
        app = app.route("/token", token);
    }
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// Everything a failed login shows: its JSON, `Debug` and `Display`.
#[cfg(feature = "oauth")]
fn shown(failed: &ErrorEnvelope) -> String {
    format!(
        "{} {failed:?} {failed}",
        serde_json::to_string(failed).unwrap()
    )
}

/// An authorization server that refuses a machine's login quoting its
/// client secret: the envelope quotes it nowhere.
#[cfg(feature = "oauth")]
#[tokio::test]
async fn an_authorization_servers_refusal_quotes_no_client_secret() {
    use tool_envelope::mcp::client::OAuth;
    const SECRET: &str = "mach-s3cret-77e4";
    let refusal = json!({
        "error": "invalid_client",
        "error_description": format!("the secret {SECRET} is not the one of machine"),
    });
    let token = axum::routing::post(move || {
        let refusal = refusal.clone();
        async move { (axum::http::StatusCode::BAD_REQUEST, axum::Json(refusal)) }
    });
    let base = machine_authorization_server(|_| {}, Some(token)).await;
    let failed = McpClient::connect(format!("{base}/mcp"))
        .oauth(OAuth::client_credentials("machine", SECRET))
        .await
        .unwrap_err();
    let shown = shown(&failed);
    assert_eq!(
        failed.reason(),
        Some(reasons::AUTHORIZATION_FAILED),
        "{shown}"
    );
    assert!(
        shown.contains("invalid_client"),
        "the refusal is said: {shown}"
    );
    assert!(!shown.contains(SECRET), "{shown}");
}

/// A refresh token goes to the authorization server with every refresh:
/// a refusal quoting it is shown with it masked, as a client secret is.
#[cfg(feature = "oauth")]
#[tokio::test]
async fn an_authorization_servers_refusal_quotes_no_refresh_token() {
    use tool_envelope::mcp::client::OAuth;
    const REFRESH: &str = "rfr-9c1d-77aa-refresh";
    let refreshes = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&refreshes);
    let token = axum::routing::post(
        move |axum::Form(form): axum::Form<std::collections::HashMap<String, String>>| {
            let counted = Arc::clone(&counted);
            async move {
                if form.get("grant_type").map(String::as_str) == Some("refresh_token") {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let token = form.get("refresh_token").cloned().unwrap_or_default();
                    let refusal = json!({
                        "error": "invalid_request",
                        "error_description": format!("refresh token {token} is malformed"),
                    });
                    return (axum::http::StatusCode::BAD_REQUEST, axum::Json(refusal));
                }
                // A token already spent, and one to refresh it with.
                let issued = json!({
                    "access_token": "acc-1",
                    "token_type": "bearer",
                    "expires_in": 0,
                    "refresh_token": REFRESH,
                });
                (axum::http::StatusCode::OK, axum::Json(issued))
            }
        },
    );
    let base = machine_authorization_server(|_| {}, Some(token)).await;
    let failed = McpClient::connect(format!("{base}/mcp"))
        .oauth(OAuth::client_credentials("machine", "mach-s3cret"))
        .await
        .unwrap_err();
    let shown = shown(&failed);
    assert_eq!(refreshes.load(Ordering::SeqCst), 1, "{shown}");
    assert_eq!(
        failed.reason(),
        Some(reasons::AUTHORIZATION_FAILED),
        "{shown}"
    );
    assert!(shown.contains("malformed"), "the refusal is said: {shown}");
    assert!(!shown.contains(REFRESH), "{shown}");
}

/// A machine's login to an authorization server whose metadata names
/// `endpoint` as its token endpoint: refused (`AUTHORIZATION_FAILED`),
/// everything the failure shows.
#[cfg(feature = "oauth")]
async fn refused_login_posting_to(endpoint: &'static str) -> String {
    use tool_envelope::mcp::client::OAuth;
    let edit = |metadata: &mut Value| metadata["token_endpoint"] = json!(endpoint);
    let base = machine_authorization_server(edit, None).await;
    let failed = McpClient::connect(format!("{base}/mcp"))
        .oauth(OAuth::client_credentials("machine", "mach-s3cret"))
        .timeout(std::time::Duration::from_secs(60))
        .await
        .unwrap_err();
    let shown = shown(&failed);
    assert_eq!(
        failed.reason(),
        Some(reasons::AUTHORIZATION_FAILED),
        "{endpoint}: {shown}"
    );
    shown
}

/// An authorization server's metadata names where a login posts its
/// secret: an address inside the client's network (the cloud's instance
/// metadata, a private service) is refused before anything is sent there,
/// as rmcp's own OAuth client refuses it.
#[cfg(feature = "oauth")]
#[tokio::test]
async fn a_login_is_never_sent_to_an_internal_address_the_metadata_names() {
    for (endpoint, allowed_by) in [
        ("http://169.254.169.254/latest/api/token", None),
        ("http://[::ffff:a9fe:a9fe]/token", None),
        ("http://10.255.255.1/token", Some("private_addresses")),
    ] {
        let shown = refused_login_posting_to(endpoint).await;
        assert!(
            shown.contains("may not connect"),
            "{endpoint}: refused before a connection was tried: {shown}"
        );
        if let Some(option) = allowed_by {
            assert!(
                shown.contains(option),
                "{endpoint}: the way out is named: {shown}"
            );
        }
    }
}

/// A machine's token is asked for the MCP server, named without its
/// query: an API key in the endpoint's URL is the MCP server's to read,
/// and the token request goes to the authorization server, another
/// origin.
#[cfg(feature = "oauth")]
#[tokio::test]
async fn a_machines_token_is_asked_for_the_server_not_its_query() {
    use tool_envelope::mcp::client::OAuth;
    const KEY: &str = "k3y-secret-0001";
    type Form = std::collections::HashMap<String, String>;
    let asked = Arc::new(std::sync::Mutex::new(Vec::<Form>::new()));
    let kept = Arc::clone(&asked);
    let token = axum::routing::post(move |axum::Form(form): axum::Form<Form>| {
        kept.lock().unwrap().push(form);
        let refusal = json!({"error": "invalid_client"});
        std::future::ready((axum::http::StatusCode::BAD_REQUEST, axum::Json(refusal)))
    });
    let base = machine_authorization_server(|_| {}, Some(token)).await;
    let failed = McpClient::connect(format!("{base}/mcp?api_key={KEY}#part"))
        .oauth(OAuth::client_credentials("machine", "mach-s3cret"))
        .await
        .unwrap_err();
    assert_eq!(
        failed.reason(),
        Some(reasons::AUTHORIZATION_FAILED),
        "{}",
        shown(&failed)
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let form = &asked[0];
    assert_eq!(
        form.get("resource"),
        Some(&format!("{base}/mcp")),
        "{form:?}"
    );
    assert!(!form.values().any(|value| value.contains(KEY)), "{form:?}");
}

/// A person's login names the resource by the MCP server's URL too where
/// the server publishes no resource metadata: without its query, which
/// would go to the authorization server in the URL the person is sent to.
#[cfg(feature = "oauth")]
#[tokio::test]
async fn a_persons_login_names_the_server_not_its_query() {
    use tool_envelope::mcp::client::OAuth;
    const KEY: &str = "k3y-secret-0002";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let metadata = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code"],
        "code_challenge_methods_supported": ["S256"],
    });
    let challenge = [(axum::http::header::WWW_AUTHENTICATE, "Bearer")];
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || {
                std::future::ready((axum::http::StatusCode::UNAUTHORIZED, challenge))
            }),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || std::future::ready(axum::Json(metadata))),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let sent_to = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = Arc::clone(&sent_to);
    let login = OAuth::authorization_code("http://127.0.0.1:9/callback", move |url| {
        kept.lock().unwrap().push(url);
        std::future::ready(Err(ErrorEnvelope::permission("nobody is here to log in")))
    })
    .preregistered("person-client", None);
    let failed = McpClient::connect(format!("{base}/mcp?api_key={KEY}"))
        .oauth(login)
        .await
        .unwrap_err();
    let sent_to = sent_to.lock().unwrap().clone();
    assert_eq!(sent_to.len(), 1, "{}", shown(&failed));
    let url = reqwest::Url::parse(&sent_to[0]).unwrap();
    let resource = url.query_pairs().find(|(key, _)| key == "resource");
    assert_eq!(
        resource.map(|(_, value)| value.into_owned()),
        Some(format!("{base}/mcp")),
        "{url}"
    );
    assert!(!sent_to[0].contains(KEY), "{url}");
}

/// The MCP server's documents name the authorization server and its
/// endpoints: one on another machine over plain HTTP, where anyone on
/// the way reads the client's secret, is refused before anything is sent
/// — as a bearer token is kept off plain HTTP to another machine.
#[cfg(feature = "oauth")]
#[tokio::test]
async fn a_login_never_sends_over_plain_http_to_another_machine() {
    let shown = refused_login_posting_to("http://auth.example.com/token").await;
    assert!(
        shown.contains("over plain HTTP"),
        "refused before a connection was tried: {shown}"
    );
    assert!(shown.contains("auth.example.com"), "{shown}");
}

#[tokio::test]
async fn headers_the_transport_owns_or_http_refuses_fail_the_client_when_it_is_made() {
    for (name, value) in [
        ("mcp-session-id", "x"),
        ("bad header", "x"),
        ("x-api-key", "line\nbreak"),
    ] {
        let refused = McpClient::connect("http://127.0.0.1:9/mcp")
            .header(name, value)
            .await
            .unwrap_err();
        assert_eq!(
            refused.reason(),
            Some(reasons::CLIENT_MISCONFIGURED),
            "{name}"
        );
        assert!(
            !refused.message().contains("line"),
            "a value is never shown"
        );
    }
    let both = McpClient::connect("http://127.0.0.1:9/mcp")
        .header("authorization", "Basic eDp5")
        .bearer("t")
        .await
        .unwrap_err();
    assert_eq!(both.reason(), Some(reasons::CLIENT_MISCONFIGURED));
    assert!(!both.to_string().contains("eDp5"));
}

/// A server whose certificate the fixtures' test CA issued, for
/// `localhost` and 127.0.0.1: the example server's tools over HTTPS, and how
/// many TCP connections got past the TLS handshake.
async fn https_server() -> (String, Arc<AtomicU32>) {
    https_server_with(false).await
}

/// [`https_server`], asking for a client certificate the fixtures' client
/// CA issued when `mutual`.
async fn https_server_with(mutual: bool) -> (String, Arc<AtomicU32>) {
    use hyper_util::rt::TokioIo;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let chain = CertificateDer::pem_slice_iter(include_bytes!("fixtures/tls/server.pem"))
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(include_bytes!("fixtures/tls/server.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap();
    let config = if mutual {
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(include_bytes!("fixtures/tls/client-ca.pem")) {
            roots.add(ca.unwrap()).unwrap();
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
        )
        .build()
        .unwrap();
        config.with_client_cert_verifier(verifier)
    } else {
        config.with_no_client_auth()
    };
    let config = config.with_single_cert(chain, key).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = HttpOptions::new()
        .stateless()
        .router(ToolSet::new().tool::<refund>());
    let handshakes = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&handshakes);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (acceptor, router, counted) =
                (acceptor.clone(), router.clone(), Arc::clone(&counted));
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(stream).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let service = hyper_util::service::TowerToHyperService::new(router);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (
        format!("https://localhost:{}/mcp", address.port()),
        handshakes,
    )
}

#[tokio::test]
async fn over_https_a_client_that_trusts_the_ca_is_served() {
    let (url, _) = https_server().await;
    let client = McpClient::connect(&url)
        .root_certificate_pem(include_bytes!("fixtures/tls/ca.pem"))
        .await
        .unwrap();
    let done = client
        .call("refund", json!({"order": "O-9"}))
        .await
        .unwrap();
    assert_eq!(done["result"], "refunded O-9");

    // Only the added CA, and nothing else: the same.
    let pinned = McpClient::connect(&url)
        .roots(Roots::AddedOnly)
        .root_certificate_pem(include_bytes!("fixtures/tls/ca.pem"))
        .await
        .unwrap();
    pinned
        .call("refund", json!({"order": "O-10"}))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_certificate_the_client_does_not_trust_is_an_envelope_and_nothing_is_sent() {
    let (url, handshakes) = https_server().await;
    for roots in [Roots::Platform, Roots::Webpki] {
        let refused = McpClient::connect(&url).roots(roots).await.unwrap_err();
        assert_eq!(refused.category(), ErrorCategory::Permission, "{roots:?}");
        assert_eq!(refused.reason(), Some(reasons::TLS_CERTIFICATE));
        assert!(!refused.is_retryable());
        assert!(
            refused.message().contains("certificate was refused"),
            "{}",
            refused.message()
        );
        assert!(refused.alternatives()[0].contains("CA"));
    }
    assert_eq!(
        handshakes.load(Ordering::SeqCst),
        0,
        "no request got through"
    );

    let unreadable = McpClient::connect(&url)
        .root_certificate_pem("not a certificate")
        .await
        .unwrap_err();
    assert_eq!(unreadable.reason(), Some(reasons::CLIENT_MISCONFIGURED));
    assert!(!unreadable.is_retryable());
}

/// An rmcp server whose tool says which headers its request reached it with.
#[derive(Clone)]
struct Headers {
    tool_router: rmcp::handler::server::router::tool::ToolRouter<Self>,
}

#[rmcp::tool_router]
impl Headers {
    /// The names of the request's headers, as a tool of the server sees them.
    #[rmcp::tool]
    async fn headers(
        &self,
        rmcp::handler::server::tool::Extension(parts): rmcp::handler::server::tool::Extension<
            axum::http::request::Parts,
        >,
    ) -> String {
        let names: Vec<&str> = parts
            .headers
            .keys()
            .map(axum::http::HeaderName::as_str)
            .collect();
        names.join(",")
    }
}

#[rmcp::tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for Headers {}

#[tokio::test]
async fn the_token_reaches_the_validator_and_nothing_behind_it() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let auth = BearerAuth::new(url.clone(), validate);
    tokio::spawn(async move {
        HttpOptions::new()
            .stateless()
            .require_bearer(auth)
            .serve(listener, || Headers {
                tool_router: Headers::tool_router(),
            })
            .await
    });
    let client = McpClient::connect(&url).bearer("reader").await.unwrap();
    let seen = client.call("headers", json!({})).await.unwrap();
    let seen = seen.as_str().unwrap();
    assert!(seen.contains("content-type"), "{seen}");
    assert!(
        !seen.contains("authorization"),
        "the server's tool saw the token: {seen}"
    );
}

#[tokio::test]
async fn credentials_are_never_sent_to_another_origin() {
    // The other origin counts the requests that reach it with credentials.
    let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other_url = format!("http://{}/mcp", other.local_addr().unwrap());
    let reached = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&reached);
    let counting = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let counted = Arc::clone(&counted);
        async move {
            if request.headers().contains_key("authorization")
                || request.headers().contains_key("x-api-key")
            {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            axum::http::StatusCode::NOT_FOUND
        }
    });
    tokio::spawn(async move { axum::serve(other, counting).await });
    // The server the client was made for sends every request there.
    for status in [301u16, 302, 307, 308] {
        let target = other_url.clone();
        let redirecting = axum::Router::new().fallback(move || {
            let target = target.clone();
            async move {
                (
                    axum::http::StatusCode::from_u16(status).unwrap(),
                    [(axum::http::header::LOCATION, target)],
                )
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, redirecting).await });
        let refused = McpClient::connect(&url)
            .bearer("writer")
            .header("x-api-key", "k-123")
            .await
            .unwrap_err();
        assert_ne!(
            refused.category(),
            ErrorCategory::Transient,
            "{status}: {refused:?}"
        );
    }
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "credentials left their origin"
    );
}

#[tokio::test]
async fn a_server_that_wants_a_client_certificate_gets_the_one_given() {
    let (url, handshakes) = https_server_with(true).await;
    let refused = McpClient::connect(&url)
        .root_certificate_pem(include_bytes!("fixtures/tls/ca.pem"))
        .await
        .unwrap_err();
    assert_eq!(refused.category(), ErrorCategory::Permission, "{refused:?}");
    assert_eq!(refused.reason(), Some(reasons::TLS_CERTIFICATE));
    assert!(
        refused.alternatives()[0].contains("client_certificate_pem"),
        "{refused:?}"
    );
    assert_eq!(handshakes.load(Ordering::SeqCst), 0);

    let client = McpClient::connect(&url)
        .root_certificate_pem(include_bytes!("fixtures/tls/ca.pem"))
        .client_certificate_pem(
            include_bytes!("fixtures/tls/client.pem"),
            include_bytes!("fixtures/tls/client.key"),
        )
        .await
        .unwrap();
    let done = client
        .call("refund", json!({"order": "O-11"}))
        .await
        .unwrap();
    assert_eq!(done["result"], "refunded O-11");
    assert!(!format!("{client:?}").contains("PRIVATE KEY"));

    let unreadable = McpClient::connect(&url)
        .root_certificate_pem(include_bytes!("fixtures/tls/ca.pem"))
        .client_certificate_pem(include_bytes!("fixtures/tls/client.pem"), "not a key")
        .await
        .unwrap_err();
    assert_eq!(unreadable.reason(), Some(reasons::CLIENT_MISCONFIGURED));
}

/// An authorization server on loopback that counts the token requests it
/// gets (each carries the client secret) and answers each with a token;
/// `/.well-known/elsewhere` serves what `claimed` writes, given its own
/// address: a document anyone may write.
#[cfg(feature = "oauth")]
async fn authorization_server(claimed: impl FnOnce(&str) -> Value) -> (String, Arc<AtomicU32>) {
    let asked = Arc::new(AtomicU32::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let claimed = claimed(&base);
    let metadata = machine_metadata(&base);
    let counted = Arc::clone(&asked);
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || std::future::ready(axum::Json(metadata))),
        )
        .route(
            "/.well-known/elsewhere",
            axum::routing::get(move || std::future::ready(axum::Json(claimed))),
        )
        .route(
            "/token",
            axum::routing::post(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                std::future::ready(axum::Json(json!({
                    "access_token": "taken",
                    "token_type": "Bearer",
                    "expires_in": 3600,
                })))
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, asked)
}

/// An MCP server whose protected resource metadata names `authorization`.
#[cfg(feature = "oauth")]
async fn pointing_at(authorization: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let resource = json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [authorization],
    });
    let app = axum::Router::new().route(
        "/.well-known/oauth-protected-resource/mcp",
        axum::routing::get(move || std::future::ready(axum::Json(resource))),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("{base}/mcp")
}

/// A machine's client secret goes only to the authorization server it was
/// issued by, pinned: an MCP server that names another gets nothing sent
/// there, nor one that names a document claiming the pinned issuer with
/// endpoints of its own.
#[cfg(feature = "oauth")]
#[tokio::test]
async fn a_pinned_issuer_keeps_the_client_secret_from_any_other_authorization_server() {
    use tool_envelope::mcp::client::OAuth;
    const SECRET: &str = "mach-s3cret-pinned";
    let (honest, honest_asked) = authorization_server(|_| json!({})).await;
    // Another's server, with a document that claims the honest issuer and
    // names its own token endpoint.
    let (other, other_asked) = authorization_server(|other| {
        json!({
            "issuer": honest,
            "authorization_endpoint": format!("{other}/authorize"),
            "token_endpoint": format!("{other}/token"),
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
        })
    })
    .await;
    let login = |issuer: &str| OAuth::client_credentials("machine", SECRET).issuer(issuer);

    // Named another: refused, nothing sent there.
    let refused = McpClient::connect(pointing_at(&other).await)
        .oauth(login(&honest))
        .await
        .unwrap_err();
    assert_eq!(refused.reason(), Some(reasons::AUTHORIZATION_FAILED));
    assert_eq!(refused.category(), ErrorCategory::Permission);
    assert!(
        refused.message().contains(&other) && refused.message().contains(&honest),
        "{}",
        refused.message()
    );
    assert_eq!(
        other_asked.load(Ordering::SeqCst),
        0,
        "nothing was sent there"
    );

    // Named a document that claims the honest issuer: the endpoints come
    // from the honest issuer's own metadata (a trailing slash is the same
    // issuer).
    let claimed = format!("{other}/.well-known/elsewhere");
    let _ = McpClient::connect(pointing_at(&claimed).await)
        .oauth(login(&format!("{honest}/")))
        .await;
    assert_eq!(
        other_asked.load(Ordering::SeqCst),
        0,
        "nothing was sent there"
    );
    assert_eq!(
        honest_asked.load(Ordering::SeqCst),
        1,
        "the secret's own server"
    );

    // Pinned to the server it names, the secret goes there: the pin is
    // what kept it.
    let _ = McpClient::connect(pointing_at(&other).await)
        .oauth(login(&other))
        .await;
    assert_eq!(other_asked.load(Ordering::SeqCst), 1);
}
