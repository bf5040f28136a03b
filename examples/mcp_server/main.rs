//! The example's tools, served to any MCP client through rmcp:
//!
//! - `lookup_orders`: a valid empty result for `C-0000`, a transient timeout
//!   for `C-4821` (retried locally, then escalated);
//! - `stock_level`: a flaky service, recovered locally on the second attempt;
//! - `process_refund`: refunds above $500 are blocked by a guard until
//!   someone approves. With `--require-token`, that is a person who signs in
//!   to the inbox page (`/inbox`) with a token granting `refunds:approve`
//!   (the demo's `approver-token`): the call waits in the store as a ticket,
//!   the calling agent cannot approve it, and once approved it runs once;
//!   calling again reads the result. Without tokens, the client's user is
//!   asked (elicitation on 2025-11-25, an `InputRequiredResult` round on
//!   2026-07-28), or, with `--approvals client`, even with tokens; a client
//!   that cannot be asked gets the block and its alternatives;
//! - `read_payroll`: a permission error with its alternatives;
//! - `research`: gathers 6 of 10 sources before the provider rate-limits, and
//!   escalates with the 6 attached.
//!
//! Over stdio by default; over Streamable HTTP at `/mcp` with
//! `--http 127.0.0.1:PORT` (port 0 picks one; the address is printed on
//! stderr). Behind a load balancer, add `--stateless` (any replica answers
//! any request) and `--allowed-host NAME` for each name clients reach it by.
//! Replicas resume each other's rounds when they seal `requestState` with one
//! key: set `TOOL_ENVELOPE_STATE_KEY` (32 bytes or more) on each. With
//! `--store URL` (`sqlite:PATH` with the `sqlite` feature, `postgres://…`
//! with `postgres`), they share a store too, and a person's approval opens
//! one call across all of them: a replayed approving round runs nothing.
//! With `--tasks`, calls run as tasks for the clients that declare MCP's
//! tasks extension, and two slow tools join (`slow_refund`, destructive;
//! `slow_report`, read-only) to show what becomes of a task whose replica
//! dies: with a store, another takes it over.
//! With `--no-retry`, nothing is retried here: every failure is answered as it
//! happened, and recovery is left to the caller (as `examples/agent.rs` does).
//!
//! With `--require-token`, every HTTP request needs a bearer token (401
//! otherwise, pointing at the metadata document), and only a token with the
//! scope `refunds:write` may refund. The demo tokens: `reader-token`
//! (`orders:read`), `refunds-token` and `second-desk-token` (two callers,
//! each `orders:read refunds:write`), and `approver-token` (a person with
//! `refunds:approve`, who signs in to the inbox). The store is then a SQLite
//! file, `mcp_server.db` in the working directory, unless `--store` says
//! otherwise (with the `sqlite` feature; in memory without it), and the
//! inbox is served with the `inbox` feature (`--webhook URL` posts a notice
//! of each new approval there, Slack-compatible, signed as Standard Webhooks
//! says when `TOOL_ENVELOPE_WEBHOOK_SECRET` holds a `whsec_…` secret, or
//! several, space-separated, while one is rotated). Replicas share sessions of the
//! inbox when `TOOL_ENVELOPE_INBOX_KEY` (32 bytes or more) is the same. A
//! deployment validates the tokens of its authorization server instead (a
//! JWT's signature, issuer, audience and expiry). `--resource URL` is the
//! URL clients reach the server by (`http://HOST:PORT/mcp` unless given),
//! as the metadata document names it.
//!
//! ```sh
//! cargo run --example mcp_server --features rmcp
//! cargo run --example mcp_server --features rmcp -- --http 127.0.0.1:8080
//! cargo run --example mcp_server --features rmcp -- --http 127.0.0.1:8080 --stateless --allowed-host tools.internal
//! cargo run --example mcp_server --features rmcp -- --http 127.0.0.1:8080 --require-token
//! cargo run --example mcp_server --features rmcp,sqlite -- --http 127.0.0.1:8080 --store sqlite:/tmp/tools.db
//! cargo run --example mcp_server --features rmcp,sqlite,inbox -- --http 127.0.0.1:8080 --require-token
//! ```

mod tools;

/// A slow refund, for a task that outlives its replica: destructive, so a
/// replica that takes it over never runs it again.
#[tool_envelope::tool(destructive)]
async fn slow_refund(
    /// The order to refund.
    order: String,
    /// How long the payment system takes, in seconds.
    seconds: u64,
) -> Result<String, tool_envelope::ErrorEnvelope> {
    eprintln!("started slow_refund {order}");
    tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
    eprintln!("refunded {order} (slow)");
    Ok(format!("Refunded {order}"))
}

/// A slow report: read-only, so a replica that takes it over runs it again.
#[tool_envelope::tool(read_only)]
async fn slow_report(
    /// The quarter.
    quarter: String,
    /// How long it takes, in seconds.
    seconds: u64,
) -> Result<String, tool_envelope::ErrorEnvelope> {
    eprintln!("started slow_report {quarter}");
    tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
    Ok(format!("Report for {quarter}"))
}

use std::sync::atomic::Ordering;

use tool_envelope::guard::Caller;
use tool_envelope::mcp::{BearerAuth, DEFAULT_REQUEST_STATE_TTL, HttpOptions};
use tools::{CLIENT_APPROVES, tools, tools_without_retry};

const USAGE: &str = "usage: mcp_server [--no-retry] [--store URL] [--http HOST:PORT [--stateless] \
                     [--allowed-host NAME]... [--require-token [--resource URL] [--approvals client] \
                     [--webhook URL]]] [--tasks]";

/// The demo's token validator: who holds each token, with which scopes.
async fn demo_token(token: String) -> Option<Caller> {
    match token.as_str() {
        "reader-token" => Some(Caller::new("reader", ["orders:read"])),
        "refunds-token" => Some(Caller::new(
            "refunds-desk",
            ["orders:read", "refunds:write"],
        )),
        "second-desk-token" => Some(Caller::new("second-desk", ["orders:read", "refunds:write"])),
        "approver-token" => Some(Caller::new("approver", ["orders:read", "refunds:approve"])),
        _ => None,
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut http = None;
    let mut retry = true;
    let mut options = HttpOptions::new();
    let mut hosts = Vec::new();
    let (mut require_token, mut resource) = (false, None);
    let mut store = None;
    let mut webhook: Option<String> = None;
    let mut tasks = false;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--http" => http = Some(args.next().unwrap_or_else(|| usage())),
            "--no-retry" => retry = false,
            "--store" => store = Some(args.next().unwrap_or_else(|| usage())),
            "--stateless" => options = options.stateless(),
            "--allowed-host" => hosts.push(args.next().unwrap_or_else(|| usage())),
            "--require-token" => require_token = true,
            "--resource" => resource = Some(args.next().unwrap_or_else(|| usage())),
            "--tasks" => tasks = true,
            "--webhook" => webhook = Some(args.next().unwrap_or_else(|| usage())),
            "--approvals" => match args.next().as_deref() {
                Some("client") => CLIENT_APPROVES.store(true, Ordering::Relaxed),
                _ => usage(),
            },
            _ => usage(),
        }
    }
    #[cfg(not(feature = "inbox"))]
    if webhook.is_some() {
        eprintln!(
            "--webhook posts notices of the inbox's approvals: build with the `inbox` feature"
        );
        std::process::exit(2);
    }
    let mut tools = if retry {
        tools()
    } else {
        tools_without_retry()
    };
    if tasks {
        // Calls run as tasks for the clients that declare the extension;
        // with a store, any replica answers for them.
        tools = tools
            .tool::<slow_refund>()
            .tool::<slow_report>()
            .tasks(|_| tool_envelope::mcp::TaskSupport::Optional);
    }
    if let Ok(key) = std::env::var("TOOL_ENVELOPE_STATE_KEY") {
        tools = tools.request_state_key(key, DEFAULT_REQUEST_STATE_TTL);
    }
    if require_token && store.is_none() {
        // People decide refunds over the cap: what waits for them is kept.
        let default = match cfg!(feature = "sqlite") {
            true => "sqlite:mcp_server.db",
            false => "memory:",
        };
        store = Some(default.to_owned());
    }
    if let Some(url) = store {
        // Replicas that share the store share what outlives a call: an
        // approving state opens once across all of them.
        let store = tool_envelope::store::open(&url)
            .await
            .map_err(std::io::Error::other)?;
        tools = tools.store(store);
    }
    let Some(address) = http else {
        return tools.serve_stdio().await;
    };
    if !hosts.is_empty() {
        // Loopback stays allowed: the health checks and tests on the host itself.
        hosts.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
        options = options.allowed_hosts(hosts);
    }
    let listener = tokio::net::TcpListener::bind(&address).await?;
    let local = listener.local_addr()?;
    if require_token {
        let resource = resource.unwrap_or_else(|| format!("http://{local}/mcp"));
        let auth = BearerAuth::new(resource, demo_token)
            .authorization_server("https://auth.example.com")
            .scopes_supported(["orders:read", "refunds:write"]);
        #[cfg(feature = "inbox")]
        {
            if let Some(url) = webhook.take() {
                // A notice of each new approval, linking to the inbox.
                let mut notices = tool_envelope::mcp::Webhook::new(url)
                    .inbox_url(format!("http://{local}/inbox"));
                // Signed, as Standard Webhooks says, with a `whsec_…` secret
                // — or with each of several, space-separated, while one is
                // rotated.
                if let Some(secrets) = std::env::var_os("TOOL_ENVELOPE_WEBHOOK_SECRET") {
                    // Set but empty (or not text) is a mistake, not "unsigned".
                    let secrets = secrets
                        .into_string()
                        .ok()
                        .filter(|secrets| !secrets.trim().is_empty())
                        .expect("TOOL_ENVELOPE_WEBHOOK_SECRET is set but holds no secret");
                    for secret in secrets.split_whitespace() {
                        notices = notices.signing_secret(secret);
                    }
                }
                tools = tools.approval_webhook(notices);
            }
            let mut inbox = tool_envelope::mcp::Inbox::new(&tools, auth.clone(), "refunds:approve");
            if let Ok(key) = std::env::var("TOOL_ENVELOPE_INBOX_KEY") {
                inbox = inbox.cookie_key(key);
            }
            options = options.inbox(inbox);
            eprintln!("inbox on http://{local}/inbox (sign in with approver-token)");
        }
        options = options.require_bearer(auth);
    }
    eprintln!("listening on http://{local}/mcp");
    options.serve(listener, tools).await
}

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2);
}
