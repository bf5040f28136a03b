//! The inbox page over HTTP, as a browser would use it (cookies and forms,
//! by hand): signing in with the server's own tokens and a scope, the
//! session cookie's flags, the CSRF token on every POST, an approver who
//! cannot decide their own call, a decision that runs the call once, and an
//! escalation resolved — each in the store's audit. A real browser drives
//! the same page in `scripts/test-inbox.sh`.
#![cfg(all(feature = "inbox", feature = "sqlite"))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};
use tool_envelope::guard::{Approvers, Blocked, Caller, Guards, ToolCall};
use tool_envelope::mcp::{BearerAuth, HttpOptions, Inbox, ToolContext, ToolSet};
use tool_envelope::store::{
    self, ApprovalRecord, ApprovalState, AuditEntry, Decision, Escalate, EscalationRecord,
    EscalationState, MemoryStore, Store, StoreError, StoreFuture, TaskRecord, TaskUpdate,
};
use tool_envelope::{ErrorEnvelope, Secret, tool};

static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn times(label: &str) -> usize {
    DONE.lock().unwrap().iter().filter(|l| *l == label).count()
}

fn policy(call: &ToolCall) -> Result<(), Blocked> {
    let order: String = call.require("order")?;
    if order.starts_with("FROZEN") {
        return Err(Blocked::new(format!("Order {order} is frozen")).with_reason("FROZEN"));
    }
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(
            Blocked::new(format!("Refund of ${amount} exceeds the $500 cap"))
                .with_reason("OVER_CAP")
                .unless_approved_by(Approvers::scope("refunds:approve")),
        );
    }
    Ok(())
}

/// A second guard, after `policy`: orders of a shop that shut.
fn shut(call: &ToolCall) -> Result<(), Blocked> {
    let order: String = call.require("order")?;
    match order.starts_with("SHUT") {
        true => {
            Err(Blocked::new(format!("The shop of order {order} has shut")).with_reason("SHUT"))
        }
        false => Ok(()),
    }
}

/// Refund an order.
#[tool(destructive)]
fn refund(order: String, amount: u64, card: Secret<String>) -> Result<String, ErrorEnvelope> {
    let _ = card;
    DONE.lock()
        .unwrap()
        .push(format!("refund {order} {amount}"));
    Ok(format!("Refunded ${amount} on {order}"))
}

async fn validate(token: String) -> Option<Caller> {
    match token.as_str() {
        "agent-token" => Some(Caller::new("agent", ["refunds:write"])),
        "carol-token" => Some(Caller::new("carol", ["refunds:approve"])),
        "dave-token" => Some(Caller::new("dave", ["refunds:approve"])),
        // HR's approver, who may enter this inbox too.
        "harriet-token" => Some(Caller::new("harriet", ["refunds:approve", "hr:approve"])),
        // The agent's own subject, with the approver scope too.
        "agent-approver-token" => Some(Caller::new("agent", ["refunds:write", "refunds:approve"])),
        // A token good for a minute more, and one past its time.
        "brief-token" => Some(
            Caller::new("carol", ["refunds:approve"])
                .until(std::time::SystemTime::now() + std::time::Duration::from_secs(60)),
        ),
        "stale-token" => Some(
            Caller::new("carol", ["refunds:approve"])
                .until(std::time::SystemTime::now() - std::time::Duration::from_secs(1)),
        ),
        // An authorization server that does not answer.
        "stuck-token" => std::future::pending().await,
        _ => None,
    }
}

struct Server {
    url: String,
    tools: ToolSet,
    inbox: Inbox,
    store: Arc<dyn Store>,
    http: reqwest::Client,
    /// The store's folder, removed with the server.
    _folder: Option<tempfile::TempDir>,
}

async fn server(name: &str) -> Server {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join(format!("{name}.db"));
    let store = store::open(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    serve(store, Some(folder), None).await
}

/// A server on `store`, its inbox's cookies signed with `key` (a random one
/// without).
async fn serve(
    store: Arc<dyn Store>,
    folder: Option<tempfile::TempDir>,
    key: Option<&[u8]>,
) -> Server {
    serve_validated(store, folder, key, validate, false).await
}

/// [`serve`], as the service `service`.
async fn serve_as(store: Arc<dyn Store>, key: Option<&[u8]>, service: &str) -> Server {
    serve_named(store, None, key, validate, false, service).await
}

/// [`serve`], its tokens checked by `validator`.
async fn serve_validated<F, Fut>(
    store: Arc<dyn Store>,
    folder: Option<tempfile::TempDir>,
    key: Option<&[u8]>,
    validator: F,
    secure_cookies: bool,
) -> Server
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Option<Caller>> + Send + 'static,
{
    serve_named(store, folder, key, validator, secure_cookies, "refunds").await
}

/// [`serve_validated`], as the service `service`.
async fn serve_named<F, Fut>(
    store: Arc<dyn Store>,
    folder: Option<tempfile::TempDir>,
    key: Option<&[u8]>,
    validator: F,
    secure_cookies: bool,
    service: &str,
) -> Server
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Option<Caller>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // A validator that does not answer is given up on sooner than by
    // default (these answer at once, but for `stuck-token`; some write to
    // the store first).
    let auth = BearerAuth::new(format!("{url}/mcp"), validator)
        .validator_timeout(std::time::Duration::from_secs(2));
    let tools = ToolSet::new()
        .server_info(service.to_owned(), "1.0.0")
        .tool::<refund>()
        .guards(Guards::new().for_all(policy).for_all(shut))
        .store(Arc::clone(&store))
        // The test runs approved calls itself, when it says so.
        .approvals_in_background(false);
    let mut inbox = Inbox::new(&tools, auth.clone(), "refunds:approve");
    if secure_cookies {
        inbox = inbox.secure_cookies();
    }
    if let Some(key) = key {
        inbox = inbox.cookie_key(key);
    }
    let served = tools.clone();
    let mounted = inbox.clone();
    tokio::spawn(async move {
        HttpOptions::new()
            .stateless()
            .require_bearer(auth)
            .inbox(mounted)
            .serve(listener, served)
            .await
    });
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    Server {
        url,
        tools,
        inbox,
        store,
        http,
        _folder: folder,
    }
}

/// The value of the hidden `csrf` field of a page.
fn csrf(page: &str) -> String {
    let start = page
        .find("name=\"csrf\" value=\"")
        .expect("a form with a CSRF token")
        + 19;
    page[start..][..page[start..].find('"').unwrap()].to_owned()
}

/// The `name=value` part of the cookie `name` a response sets, and its
/// whole header.
fn set_cookie(response: &reqwest::Response, name: &str) -> Option<(String, String)> {
    response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .find_map(|value| {
            let header = value.to_str().ok()?.to_owned();
            let pair = header.split(';').next()?.to_owned();
            pair.starts_with(&format!("{name}="))
                .then_some((pair, header))
        })
}

impl Server {
    /// Signs in with `token`: the session cookie.
    async fn sign_in(&self, token: &str) -> String {
        let response = self.try_sign_in(token).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{token}");
        let (session, header) = set_cookie(&response, "tool_envelope_inbox").expect("a session");
        for flag in ["HttpOnly", "SameSite=Lax", "Path=/inbox"] {
            assert!(header.contains(flag), "{header}");
        }
        assert!(!header.contains(token), "the token is never kept");
        session
    }

    /// A fresh sign-in form: the cookie that binds it, and its page.
    async fn sign_in_form(&self) -> (String, String) {
        let form = self
            .http
            .get(format!("{}/inbox", self.url))
            .send()
            .await
            .unwrap();
        let (nonce, _) = set_cookie(&form, "tool_envelope_sign_in").expect("the sign-in cookie");
        (nonce, form.text().await.unwrap())
    }

    /// The answer to signing in with `token`, from a fresh sign-in form.
    async fn try_sign_in(&self, token: &str) -> reqwest::Response {
        let (nonce, page) = self.sign_in_form().await;
        self.http
            .post(format!("{}/inbox/sign-in", self.url))
            .header(COOKIE, &nonce)
            .form(&[("token", token), ("csrf", &csrf(&page))])
            .send()
            .await
            .unwrap()
    }

    /// Keeps `records` in the store, as a tool set or a calling agent
    /// would, whatever is open.
    async fn keep<'a>(&self, records: impl IntoIterator<Item = &'a EscalationRecord>) {
        for record in records {
            let kept = self.store.record_escalation(record, u64::MAX).await;
            assert!(kept.unwrap(), "kept: no bound to pass");
        }
    }

    /// The store's open escalations, newest first (at most 10).
    async fn open_escalations(&self) -> Vec<EscalationRecord> {
        let open = self
            .store
            .escalations("refunds", None, EscalationState::Open, 10)
            .await;
        open.unwrap()
    }

    /// Approves the approval at `path` in `session`, with the form its page
    /// shows.
    async fn approve_on_its_page(&self, path: &str, session: &str) -> reqwest::Response {
        let (_, page) = self.get(path, session).await;
        self.http
            .post(format!("{}{path}", self.url))
            .header(COOKIE, session)
            .form(&[("csrf", csrf(&page).as_str()), ("decision", "approve")])
            .send()
            .await
            .unwrap()
    }

    async fn get(&self, path: &str, session: &str) -> (StatusCode, String) {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .header(COOKIE, session)
            .send()
            .await
            .unwrap();
        (response.status(), response.text().await.unwrap())
    }

    async fn post(&self, path: &str, session: &str, form: &[(&str, &str)]) -> StatusCode {
        self.http
            .post(format!("{}{path}", self.url))
            .header(COOKIE, session)
            .form(form)
            .send()
            .await
            .unwrap()
            .status()
    }

    async fn call_as_agent(&self, order: &str, amount: u64) -> Value {
        let agent = Caller::new("agent", ["refunds:write"]);
        let arguments = json!({"order": order, "amount": amount, "card": "4111-1111-1111-1111"});
        let reply = self
            .tools
            .call_with(
                "refund",
                arguments,
                ToolContext::detached().with_caller(agent),
            )
            .await
            .unwrap();
        reply.structured_content.unwrap()
    }
}

#[tokio::test]
async fn an_approver_signs_in_decides_once_and_the_refund_runs_once() {
    let server = server("decide").await;
    let waiting = server.call_as_agent("IN-1", 620).await;
    assert_eq!(waiting["reason"], "AWAITING_APPROVAL", "{waiting}");
    let ticket = waiting["escalation"]["ticket"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Signing in: a token the validator refuses, and one without the scope.
    let (nonce, page) = server.sign_in_form().await;
    for (token, says) in [
        ("nobody", "not accepted"),
        ("agent-token", "refunds:approve"),
    ] {
        let response = server
            .http
            .post(format!("{}/inbox/sign-in", server.url))
            .header(COOKIE, &nonce)
            .form(&[("token", token), ("csrf", &csrf(&page))])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{token}");
        assert!(set_cookie(&response, "tool_envelope_inbox").is_none());
        assert!(response.text().await.unwrap().contains(says));
    }
    // A sign-in posted from elsewhere (no sign-in cookie) is refused.
    let forged = server
        .http
        .post(format!("{}/inbox/sign-in", server.url))
        .form(&[("token", "carol-token"), ("csrf", &csrf(&page))])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);

    let carol = server.sign_in("carol-token").await;
    let (status, page) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("Refund of $620 exceeds the $500 cap"),
        "{page}"
    );
    assert!(page.contains("OVER_CAP"));
    assert!(page.contains(&ticket));
    assert!(!page.contains("4111-1111"), "secrets stay masked");

    // Without the CSRF token, or with another session's, nothing is decided.
    let path = format!("/inbox/approvals/{ticket}");
    assert_eq!(
        server.post(&path, &carol, &[("decision", "approve")]).await,
        StatusCode::FORBIDDEN
    );
    let dave = server.sign_in("dave-token").await;
    let (_, daves) = server.get("/inbox", &dave).await;
    assert_eq!(
        server
            .post(
                &path,
                &carol,
                &[("decision", "approve"), ("csrf", &csrf(&daves))]
            )
            .await,
        StatusCode::FORBIDDEN
    );
    // No session at all.
    assert_eq!(
        server
            .post(
                &path,
                "",
                &[("decision", "approve"), ("csrf", &csrf(&page))]
            )
            .await,
        StatusCode::FORBIDDEN
    );
    let pending = server.store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(pending.state, ApprovalState::Pending);

    // The agent's own subject, even holding the scope, cannot decide it.
    let agent = server.sign_in("agent-approver-token").await;
    let (_, agents) = server.get("/inbox", &agent).await;
    assert!(agents.contains("your own call"), "{agents}");
    assert_eq!(
        server
            .post(
                &path,
                &agent,
                &[("decision", "approve"), ("csrf", &csrf(&agents))]
            )
            .await,
        StatusCode::FORBIDDEN
    );

    // Carol approves, with a note.
    let form = [
        ("decision", "approve"),
        ("note", "receipt checked"),
        ("csrf", &csrf(&page)),
    ];
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::SEE_OTHER
    );
    // Dave's decision comes too late.
    let late = [("decision", "decline"), ("csrf", &csrf(&daves))];
    assert_eq!(server.post(&path, &dave, &late).await, StatusCode::CONFLICT);

    server.tools.run_approved().await.unwrap();
    assert_eq!(times("refund IN-1 620"), 1);
    let (_, detail) = server.get(&path, &carol).await;
    assert!(detail.contains("Done: Refunded $620 on IN-1"), "{detail}");
    // The result is shown as the pretty JSON it is, on lines of its own.
    assert!(
        detail.contains("{\n  &quot;result&quot;") || detail.contains("{\n  &#34;result&#34;"),
        "{detail}"
    );
    assert!(detail.contains("receipt checked"));
    // The agent calling again reads the result; nothing runs again.
    let result = server.call_as_agent("IN-1", 620).await;
    assert_eq!(result["result"], "Refunded $620 on IN-1", "{result}");
    assert_eq!(times("refund IN-1 620"), 1);

    let audit = server.store.audit_log(50).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|e| e.who == "carol" && e.what == "sign_in")
    );
    assert!(audit.iter().any(|e| e.who == "carol"
        && e.what == "approve"
        && e.subject == ticket
        && e.note == "receipt checked"));
}

/// A form another origin sent is refused before it is read, whatever it
/// carries: a sibling subdomain is the same site to a `SameSite` cookie,
/// and may have planted one (the sign-in's, to sign a person in as the
/// planter) — the browser's `Sec-Fetch-Site`, else its `Origin`, says.
#[tokio::test]
async fn a_form_another_origin_sent_is_refused_before_it_is_read() {
    let server = server("origin").await;
    let waiting = server.call_as_agent("OR-1", 640).await;
    let ticket = waiting["escalation"]["ticket"]["id"].as_str().unwrap();
    let path = format!("/inbox/approvals/{ticket}");
    let carol = server.sign_in("carol-token").await;
    let (_, page) = server.get(&path, &carol).await;
    let form = [("decision", "approve"), ("csrf", &csrf(&page))];
    let own = server.url.clone();
    for (header, value) in [
        ("sec-fetch-site", "same-site"),
        ("sec-fetch-site", "cross-site"),
        ("origin", "http://evil.example"),
        ("origin", "null"),
    ] {
        let response = server
            .http
            .post(format!("{}{path}", server.url))
            .header(COOKIE, &carol)
            .header(header, value)
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::FORBIDDEN,
            "{header}: {value}"
        );
        assert!(response.text().await.unwrap().contains("another site"));
    }
    let pending = server.store.approval(ticket).await.unwrap().unwrap();
    assert_eq!(pending.state, ApprovalState::Pending, "nothing decided");

    // A sign-in with a nonce and its token that hold, sent from a sibling:
    // no session.
    let (nonce, sign_in) = server.sign_in_form().await;
    let planted = server
        .http
        .post(format!("{}/inbox/sign-in", server.url))
        .header(COOKIE, &nonce)
        .header("sec-fetch-site", "same-site")
        .form(&[("token", "dave-token"), ("csrf", &csrf(&sign_in))])
        .send()
        .await
        .unwrap();
    assert_eq!(planted.status(), StatusCode::FORBIDDEN);
    assert!(set_cookie(&planted, "tool_envelope_inbox").is_none());

    // The inbox's own page's form, as a browser sends it, decides.
    let response = server
        .http
        .post(format!("{}{path}", server.url))
        .header(COOKIE, &carol)
        .header("sec-fetch-site", "same-origin")
        .header("origin", own)
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let approved = server.store.approval(ticket).await.unwrap().unwrap();
    assert_eq!(approved.state, ApprovalState::Approved);
}

/// The sign-in form's token is signed apart from a session's form token:
/// a browser that sends a session's value as its sign-in cookie is shown
/// a sign-in token that decides nothing in that session.
#[tokio::test]
async fn a_sign_in_forms_token_decides_nothing_in_a_session() {
    let server = server("sign-in-token").await;
    let waiting = server.call_as_agent("ST-1", 640).await;
    let ticket = waiting["escalation"]["ticket"]["id"].as_str().unwrap();
    let path = format!("/inbox/approvals/{ticket}");
    let carol = server.sign_in("carol-token").await;
    let (_, value) = carol.split_once('=').unwrap();
    let form = server
        .http
        .get(format!("{}/inbox", server.url))
        .header(COOKIE, format!("tool_envelope_sign_in={value}"))
        .send()
        .await
        .unwrap();
    let signed = csrf(&form.text().await.unwrap());
    let form = [("decision", "approve"), ("csrf", signed.as_str())];
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::FORBIDDEN
    );
    let pending = server.store.approval(ticket).await.unwrap().unwrap();
    assert_eq!(pending.state, ApprovalState::Pending, "nothing decided");
    // The session's own page's token decides.
    let (_, page) = server.get(&path, &carol).await;
    let form = [("decision", "approve"), ("csrf", &csrf(&page))];
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::SEE_OTHER
    );
}

/// What a person approves is shown as it was sent: a text quoted (so that
/// `"620"` is not taken for the number 620), and characters that do not
/// show themselves — a mark that turns the direction of what follows, a
/// character of no width — written out, so that a caller cannot make an
/// order read as another.
#[tokio::test]
async fn an_approver_sees_every_character_of_the_call_and_texts_apart_from_numbers() {
    let server = server("visible").await;
    let order = "IN-\u{202e}0621\u{200b}";
    let waiting = server.call_as_agent(order, 700).await;
    assert_eq!(waiting["reason"], "AWAITING_APPROVAL", "{waiting}");
    let carol = server.sign_in("carol-token").await;
    let (status, page) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !page.contains('\u{202e}') && !page.contains('\u{200b}'),
        "{page}"
    );
    assert!(page.contains("IN-\\u{202e}0621\\u{200b}"), "{page}");
    assert!(page.contains("<code>700</code>"), "{page}");
    assert!(
        page.contains("<code>&quot;IN-") || page.contains("<code>&#34;IN-"),
        "{page}"
    );
}

/// The inbox and the protected resource metadata are served beside
/// `/mcp`, and answer to the names it answers to: reached by another
/// (DNS rebinding: a name of an attacker's pointed at this machine), they
/// get 403, as `/mcp` does.
#[tokio::test]
async fn the_inbox_answers_only_to_the_names_the_service_does() {
    let server = serve(Arc::new(MemoryStore::new()), None, None).await;
    for path in ["/inbox", "/.well-known/oauth-protected-resource/mcp"] {
        let url = format!("{}{path}", server.url);
        let rebound = server.http.get(&url).header("Host", "attacker.example");
        let rebound = rebound.send().await.unwrap();
        assert_eq!(rebound.status(), StatusCode::FORBIDDEN, "{path}");
        let local = server.http.get(&url).send().await.unwrap();
        assert_ne!(local.status(), StatusCode::FORBIDDEN, "{path}");
    }
    let rebound = server.http.post(format!("{}/inbox/sign-in", server.url));
    let rebound = rebound
        .header("Host", "attacker.example")
        .form(&[("token", "carol-token")]);
    assert_eq!(
        rebound.send().await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
}

/// What the caller's client said its user approved of the same call before
/// it waited is on the card, every character shown, named as the client
/// named it.
#[tokio::test]
async fn an_approver_sees_what_the_callers_user_approved_at_the_client() {
    let server = serve(Arc::new(MemoryStore::new()), None, None).await;
    let mut approval = waiting(
        "confirmed-1",
        "Refund CONFIRMED-1 exceeds the cap",
        "refunds:approve",
        store::now_ms() + 3_600_000,
    );
    approval.waived = vec!["s1-0123456789ab".to_owned()];
    approval.client_answers = vec![
        json!({
            "question": "EXT-1 is outside the bank\n\nApprove `refund` with {\"order\":\"confirmed-1\"}?",
            "action": "accept",
            "approver": "dana\u{202e}",
            "client": "agent 1.0.0",
            "answeredAtMs": 1_800_000_000_000_u64,
        }),
        json!({"question": "NOPE-9 is not approved\n\nApprove `refund`?", "action": "decline"}),
    ];
    server.open(&approval).await;
    let carol = server.sign_in("carol-token").await;
    let (status, page) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Approved at the client"), "{page}");
    assert!(
        page.contains("“EXT-1 is outside the bank” — approved at the client; name typed there: “dana\\u{202e}”; client: “agent 1.0.0”; caller: none"),
        "{page}"
    );
    assert!(!page.contains('\u{202e}'), "{page}");
    assert!(
        !page.contains("Approve `refund`"),
        "the block, not the question"
    );
    assert!(!page.contains("NOPE-9"), "a yes only: {page}");
}

/// An approval of the service `refunds`, waiting for `scope`, of the call
/// `digest` (whose envelope says `message`), made by `agent` and expiring
/// at `expires_ms`: as a tool set would open it.
fn waiting(digest: &str, message: &str, scope: &str, expires_ms: i64) -> ApprovalRecord {
    ApprovalRecord::new(
        digest,
        "policy@0",
        "refund",
        json!({"order": digest}),
        json!({"isError": true, "errorCategory": "business", "isRetryable": false,
               "message": message, "reason": "OVER_CAP"}),
        Some("agent".to_owned()),
        scope,
        expires_ms,
    )
    .for_service("refunds")
}

impl Server {
    /// Keeps `approval` in the store, as a tool set would open it.
    async fn open(&self, approval: &ApprovalRecord) {
        let opened = self.store.open_approval(approval, u64::MAX).await;
        assert!(opened.unwrap().is_some(), "opened: no bound to pass");
    }
}

/// More approvals wait than a page lists (eleven callers' worth): the
/// oldest are listed, so that what waited longest, and expires first, is
/// never crowded off the page by what came after it; the page says more
/// wait.
#[tokio::test]
async fn the_oldest_approvals_are_listed_when_more_wait_than_a_page_holds() {
    let server = serve(Arc::new(MemoryStore::new()), None, None).await;
    let now = store::now_ms();
    for n in 0..1001 {
        let message = format!("Refund CROWD-{n} needs an approver");
        let mut crowd = waiting(
            &format!("crowd-{n}"),
            &message,
            "refunds:approve",
            now + 3_600_000,
        );
        crowd.caller = Some(format!("agent-{}", n % 11));
        crowd.created_ms = now - 100_000 + n;
        server.open(&crowd).await;
    }
    let carol = server.sign_in("carol-token").await;
    let (status, page) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("Refund CROWD-0 needs an approver"),
        "the oldest is listed"
    );
    assert!(
        !page.contains("Refund CROWD-1000 needs"),
        "the newest waits below"
    );
    assert!(page.contains("more wait for you"));
}

/// An approval whose time ran out is not listed as waiting, and its page
/// shows it expired, with no form to decide it, before any runner swept
/// it: not a button the store then refuses as "pending already".
#[tokio::test]
async fn an_approval_whose_time_ran_out_is_shown_expired_before_it_is_swept() {
    let server = server("expired-unswept").await;
    let now = store::now_ms();
    let message = "Refund of $900 needs an approver";
    let mut lapsed = waiting("lapsed-digest", message, "refunds:approve", now - 3_600_000);
    lapsed.created_ms = now - 7_200_000;
    server.open(&lapsed).await;
    let carol = server.sign_in("carol-token").await;
    // Not listed as waiting; its own page says it expired, with no form.
    let (status, page) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains("Refund of $900"), "{page}");
    assert!(page.contains("Nothing waits for you."), "{page}");
    let path = format!("/inbox/approvals/{}", lapsed.id);
    let (status, page) = server.get(&path, &carol).await;
    assert_eq!(status, StatusCode::OK, "{path}");
    assert!(page.contains("Refund of $900"), "{path}: {page}");
    assert!(page.contains("expired"), "{path}: {page}");
    assert!(!page.contains("value=\"approve\""), "{path}: {page}");

    // A yes no runner took up in time: approved, and said to have expired
    // unrun — not "expired by" the person who said yes.
    let mut approved = lapsed.clone();
    approved.id = format!("{}-yes", lapsed.id);
    approved.digest = "lapsed-yes-digest".to_owned();
    server.open(&approved).await;
    let yes = Decision::new(true, "dave", "ok").at(now - 5_400_000);
    assert!(server.store.decide(&approved.id, &yes).await.unwrap());
    server.tools.run_approved().await.unwrap();
    let path = format!("/inbox/approvals/{}", approved.id);
    let (_, page) = server.get(&path, &carol).await;
    assert!(page.contains("<strong>approved</strong> by dave"), "{page}");
    assert!(
        page.contains("expired before any replica took the call up"),
        "{page}"
    );
    assert!(!page.contains("expired</strong> by"), "{page}");
}

#[tokio::test]
async fn another_scopes_approvals_and_their_results_stay_out_of_sight() {
    let server = server("scopes").await;
    // An approval that only `hr:approve` decides, decided and run: its
    // result is HR's.
    let now = store::now_ms();
    let hr = tool_envelope::store::ApprovalRecord::new(
        "hr-digest",
        "raise@0",
        "raise",
        json!({"employee": "E-7"}),
        json!({"message": "A raise needs HR", "reason": "HR_ONLY"}),
        Some("agent".to_owned()),
        "hr:approve",
        now + 60_000,
    )
    .for_service("refunds");
    let hr = server
        .store
        .open_approval(&hr, u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let yes = tool_envelope::store::Decision::new(true, "harriet", "");
    assert!(server.store.decide(&hr.id, &yes).await.unwrap());
    server
        .store
        .claim_approval(&hr.id, "elsewhere", now, now + 60_000)
        .await
        .unwrap()
        .expect("claimed");
    let result = json!({"content": [{"type": "text", "text": "SALARY-OF-E-7"}], "isError": false});
    assert!(
        server
            .store
            .finish_approval(&hr.id, "elsewhere", &result, now)
            .await
            .unwrap()
    );

    let carol = server.sign_in("carol-token").await;
    let (status, page) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains(&hr.id), "{page}");
    assert!(!page.contains("SALARY-OF-E-7"), "{page}");
    let (status, detail) = server
        .get(&format!("/inbox/approvals/{}", hr.id), &carol)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!detail.contains("SALARY-OF-E-7"), "{detail}");
    // A decision posted to it is answered as for no approval at all.
    let pending = tool_envelope::store::ApprovalRecord::new(
        "hr-digest-2",
        "raise@0",
        "raise",
        json!({"employee": "E-8"}),
        json!({"message": "Another raise", "reason": "HR_ONLY"}),
        Some("agent".to_owned()),
        "hr:approve",
        now + 60_000,
    )
    .for_service("refunds");
    let pending = server
        .store
        .open_approval(&pending, u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let form = [("decision", "approve"), ("csrf", &csrf(&page))];
    let path = format!("/inbox/approvals/{}", pending.id);
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::NOT_FOUND
    );
    let response = server
        .http
        .post(format!("{}{path}", server.url))
        .header(COOKIE, &carol)
        .form(&form)
        .send()
        .await
        .unwrap();
    assert!(!response.text().await.unwrap().contains("hr:approve"));
}

/// A thousand newer approvals of another scope hide none of a person's:
/// the store reads theirs, and says how many wait for others.
#[tokio::test]
async fn approvals_of_another_scope_never_hide_a_persons_own() {
    let server = server("crowded").await;
    let now = store::now_ms();
    let approval = |n: usize, scope: &str| {
        ApprovalRecord::new(
            format!("crowd-{n}"),
            "cap@0",
            "refund",
            json!({"order_id": format!("C-{n}")}),
            json!({"message": format!("Approval {n}"), "reason": "OVER_CAP"}),
            Some("agent".to_owned()),
            scope,
            now + 60_000,
        )
        .for_service("refunds")
    };
    let carols = approval(0, "refunds:approve");
    let carols = server
        .store
        .open_approval(&carols, u64::MAX)
        .await
        .unwrap()
        .unwrap();
    for n in 1..=1000 {
        let mut newer = approval(n, "hr:approve");
        newer.created_ms = now + i64::try_from(n).unwrap();
        assert!(
            server
                .store
                .open_approval(&newer, u64::MAX)
                .await
                .unwrap()
                .is_some()
        );
    }
    let carol = server.sign_in("carol-token").await;
    let (status, inbox) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(inbox.contains(&carols.id), "{inbox}");
    assert!(inbox.contains("At least 1000 more wait"), "{inbox}");
}

/// A thousand newer escalations of another scope hide none of a person's
/// (nor one anyone may resolve): the store reads theirs.
#[tokio::test]
async fn escalations_of_another_scope_never_hide_a_persons_own() {
    let server = server("crowded-escalations").await;
    let now = store::now_ms();
    let escalation = |message: String, at: i64| {
        let mut record = EscalationRecord::new(json!({"message": message}), Some("agent".into()))
            .for_service("refunds");
        record.created_ms = at;
        record
    };
    let carols = escalation("CAROLS-REFUND".into(), now).for_approvers("refunds:approve");
    let anyones = escalation("ANYONES-OUTAGE".into(), now);
    let mut records = vec![carols, anyones];
    for n in 1..=1000 {
        let newer = escalation(format!("HR-{n}"), now + n);
        records.push(newer.for_approvers("hr:approve"));
    }
    server.keep(&records).await;
    let carol = server.sign_in("carol-token").await;
    let (status, inbox) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(inbox.contains("CAROLS-REFUND"), "{inbox}");
    assert!(inbox.contains("ANYONES-OUTAGE"), "{inbox}");
    assert!(!inbox.contains("HR-1"), "{inbox}");
}

/// A session outlived the token it was opened with: an approver's token of
/// five minutes (a step-up sign-in's) made a cookie of eight hours that
/// could approve refunds. A session ends when its token does, if the
/// validator says when ([`Caller::until`]); one already past opens none.
#[tokio::test]
async fn a_session_ends_when_its_token_does() {
    let server = server("brief-token").await;
    let response = server.try_sign_in("brief-token").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let (_, header) = set_cookie(&response, "tool_envelope_inbox").expect("a session");
    let max_age: i64 = header
        .split("Max-Age=")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|age| age.trim().parse().ok())
        .expect("a Max-Age");
    assert!((1..=60).contains(&max_age), "{header}");
    let stale = server.try_sign_in("stale-token").await;
    assert_eq!(stale.status(), StatusCode::FORBIDDEN);
    assert!(set_cookie(&stale, "tool_envelope_inbox").is_none());
}

/// A page lists up to a thousand escalations, each of which may hold
/// megabytes (arguments, partial results, next moves), each character of
/// them written four to six times over as HTML escapes it: a caller whose
/// calls fail could make the inbox a page of hundreds of megabytes. Each
/// is shown cut, saying how much was not.
#[tokio::test]
async fn a_crowd_of_huge_escalations_makes_a_page_of_bounded_size() {
    let server = server("huge-escalations").await;
    let now = store::now_ms();
    let lt = "<".repeat(8_000);
    let records: Vec<_> = (0..100)
        .map(|n| {
            let envelope = json!({
                "message": format!("HUGE-{n} {}", "<".repeat(10_000)),
                "attempted_query": {"q": lt},
                "partial_results": ["<".repeat(40_000)],
                "alternatives": vec!["<".repeat(1_000); 64],
            });
            let mut record =
                EscalationRecord::new(envelope, Some("agent".into())).for_service("refunds");
            record.created_ms = now + n;
            record
        })
        .collect();
    server.keep(&records).await;
    let carol = server.sign_in("carol-token").await;
    let (status, inbox) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(inbox.contains("HUGE-99") && inbox.contains("HUGE-0"));
    assert!(inbox.contains("bytes in all]"));
    assert!(inbox.contains("… and 56 more, not shown"));
    // Shown whole, it was 50 MB.
    assert!(inbox.len() < 8 << 20, "{} bytes", inbox.len());
}

/// An approval another service sharing the store opened is theirs: not
/// listed here, its page unknown, a yes posted to it refused, and nothing
/// run — its scope may mean something else there. So are their
/// escalations.
/// A sign-in form that expired (its cookie gone, or the form from another
/// browser) is refused with a fresh one in its place, which signs in.
#[tokio::test]
async fn an_expired_sign_in_form_is_answered_with_one_that_works() {
    let server = server("expired-form").await;
    let refused = server
        .http
        .post(format!("{}/inbox/sign-in", server.url))
        .form(&[("token", "carol-token"), ("csrf", "stale")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let (nonce, _) = set_cookie(&refused, "tool_envelope_sign_in").expect("a fresh form's cookie");
    let page = refused.text().await.unwrap();
    assert!(page.contains("The form had expired"), "{page}");
    let signed_in = server
        .http
        .post(format!("{}/inbox/sign-in", server.url))
        .header(COOKIE, &nonce)
        .form(&[("token", "carol-token"), ("csrf", &csrf(&page))])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    assert!(set_cookie(&signed_in, "tool_envelope_inbox").is_some());
}

/// A token whose validator does not answer in time signs nobody in, and
/// the page says to try again — not that the token was refused.
#[tokio::test]
async fn a_token_its_validator_does_not_answer_for_signs_nobody_in_and_the_page_says_try_again() {
    let server = server("stuck-validator").await;
    let response = server.try_sign_in("stuck-token").await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "1");
    assert!(set_cookie(&response, "tool_envelope_inbox").is_none());
    let page = response.text().await.unwrap();
    assert!(page.contains("could not be checked in time"), "{page}");
    assert!(!page.contains("not accepted"), "{page}");
    // A token it answers for signs in as before.
    server.sign_in("carol-token").await;
}

/// Two services' inboxes sharing a store and a cookie key: a session
/// signed in at one is no session at the other (whose token checker never
/// saw the person, and where a scope of the same name may mean something
/// else), and a person who signs out everywhere at one, or whose sessions
/// an operator ends there, leaves the person of the same name at the
/// other signed in.
#[tokio::test]
async fn a_session_at_one_services_inbox_is_nothing_at_anothers() {
    let key = [5u8; 32];
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("two-inboxes.db").display());
    let refunds = serve(store::open(&url).await.unwrap(), Some(folder), Some(&key)).await;
    let shop = serve_as(Arc::clone(&refunds.store), Some(&key), "shop").await;

    let at_refunds = refunds.sign_in("carol-token").await;
    assert!(signed_in(&refunds, &at_refunds).await);
    assert!(
        !signed_in(&shop, &at_refunds).await,
        "a refunds session at the shop"
    );
    let (_, page) = refunds.get("/inbox", &at_refunds).await;
    let token = csrf(&page);
    let form = [("csrf", token.as_str()), ("everywhere", "yes")];
    assert_eq!(
        shop.post("/inbox/sign-out", &at_refunds, &form).await,
        StatusCode::FORBIDDEN,
        "nor its forms"
    );

    let at_shop = shop.sign_in("carol-token").await;
    assert_eq!(
        refunds.post("/inbox/sign-out", &at_refunds, &form).await,
        StatusCode::SEE_OTHER
    );
    assert!(!signed_in(&refunds, &at_refunds).await);
    assert!(signed_in(&shop, &at_shop).await, "the shop's Carol stays");

    let again = refunds.sign_in("carol-token").await;
    assert!(shop.inbox.end_sessions_of("carol", "ops").await.unwrap());
    assert!(!signed_in(&shop, &at_shop).await);
    assert!(
        signed_in(&refunds, &again).await,
        "the refunds' Carol stays"
    );
}

#[tokio::test]
async fn another_services_approvals_and_escalations_are_not_seen_decided_or_run_here() {
    let server = server("services").await;
    let now = store::now_ms();
    let theirs = ApprovalRecord::new(
        "shop-digest",
        "cap@0",
        "refund",
        json!({"order_id": "S-1", "amount": 900}),
        json!({"message": "A shop refund over the cap", "reason": "OVER_CAP"}),
        Some("agent".to_owned()),
        "refunds:approve",
        now + 60_000,
    )
    .for_service("shop");
    let theirs = server
        .store
        .open_approval(&theirs, u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    let carol = server.sign_in("carol-token").await;
    let (status, inbox) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!inbox.contains(&theirs.id), "{inbox}");
    assert!(!inbox.contains("S-1"), "{inbox}");
    let path = format!("/inbox/approvals/{}", theirs.id);
    let (status, page) = server.get(&path, &carol).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!page.contains("S-1"), "{page}");
    let form = [("decision", "approve"), ("csrf", &csrf(&inbox))];
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::NOT_FOUND
    );
    let carol = Caller::new("carol", ["refunds:approve"]);
    let decided = server.tools.decide(&theirs.id, &carol, true, "").await;
    assert!(
        matches!(
            decided,
            Err(tool_envelope::mcp::DecisionError::UnknownTicket)
        ),
        "{decided:?}"
    );
    assert_eq!(server.tools.run_approved().await.unwrap(), 0);
    let kept = server.store.approval(&theirs.id).await.unwrap().unwrap();
    assert_eq!(kept.state, ApprovalState::Pending, "decided here");

    // Their escalations too; a calling agent's, which has no service, is
    // seen here as on every inbox.
    let escalation =
        |message: &str| EscalationRecord::new(json!({"message": message}), Some("agent".into()));
    let shops = escalation("SHOP-ONLY").for_service("shop");
    let agents = escalation("AGENTS-OWN");
    server.keep([&shops, &agents]).await;
    let carol = server.sign_in("carol-token").await;
    let (_, inbox) = server.get("/inbox", &carol).await;
    assert!(
        !inbox.contains("SHOP-ONLY") && !inbox.contains(&shops.id),
        "{inbox}"
    );
    assert!(inbox.contains("AGENTS-OWN"), "{inbox}");
    let form = [("note", "handled"), ("csrf", &csrf(&inbox))];
    let path = format!("/inbox/escalations/{}", shops.id);
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::NOT_FOUND
    );
    let read = server.store.escalation(&shops.id).await.unwrap().unwrap();
    assert_eq!(read.state, EscalationState::Open);
}

/// An approval of another scope that expires undecided is kept as an
/// escalation its approvers alone see and resolve, as they alone saw the
/// approval; and nobody resolves the escalation of their own call.
#[tokio::test]
async fn another_scopes_escalations_stay_out_of_sight_and_nobody_resolves_their_own() {
    let server = server("escalation-scopes").await;
    let now = store::now_ms();
    let hr = ApprovalRecord::new(
        "hr-expiring",
        "raise@0",
        "raise",
        json!({"employee": "E-9"}),
        json!({"message": "A raise needs HR", "attempted_query": {"employee": "E-9"}}),
        Some("agent".to_owned()),
        "hr:approve",
        now - 1,
    )
    .for_service("refunds");
    let hr = server
        .store
        .open_approval(&hr, u64::MAX)
        .await
        .unwrap()
        .expect("opened: no bound to pass");
    server.tools.run_approved().await.unwrap();
    let open = server.open_escalations().await;
    let expired = open
        .iter()
        .find(|escalation| escalation.envelope["reason"] == "APPROVAL_EXPIRED")
        .expect("the expiry is kept as an escalation");
    assert_eq!(expired.approvers.as_deref(), Some("hr:approve"));
    assert_eq!(
        expired.service.as_deref(),
        Some("refunds"),
        "the approval's"
    );
    let path = format!("/inbox/escalations/{}", expired.id);

    let carol = server.sign_in("carol-token").await;
    let (status, page) = server.get("/inbox", &carol).await;
    assert_eq!(status, StatusCode::OK);
    for secret in ["E-9", "hr:approve", &hr.id, &expired.id] {
        assert!(!page.contains(secret), "{secret} in {page}");
    }
    let form = [("note", "not mine to say"), ("csrf", &csrf(&page))];
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::NOT_FOUND
    );

    let harriet = server.sign_in("harriet-token").await;
    let (_, page) = server.get("/inbox", &harriet).await;
    assert!(page.contains("E-9"), "{page}");
    let form = [("note", "asked HR by phone"), ("csrf", &csrf(&page))];
    assert_eq!(
        server.post(&path, &harriet, &form).await,
        StatusCode::SEE_OTHER
    );

    // The agent's own call, escalated: the agent, an approver too, does not
    // resolve it; another approver does.
    let blocked = server.call_as_agent("FROZEN-9", 40).await;
    assert_eq!(blocked["escalation"]["reason"], "blocked_by_guard");
    let own = server
        .open_escalations()
        .await
        .into_iter()
        .find(|escalation| escalation.caller.as_deref() == Some("agent"))
        .expect("the agent's escalation");
    let path = format!("/inbox/escalations/{}", own.id);
    let agent = server.sign_in("agent-approver-token").await;
    let (_, page) = server.get("/inbox", &agent).await;
    assert!(page.contains("someone else resolves it"), "{page}");
    assert!(
        !page.contains(&format!("/inbox/escalations/{}", own.id)),
        "{page}"
    );
    let form = [("note", "fine by me"), ("csrf", &csrf(&page))];
    assert_eq!(
        server.post(&path, &agent, &form).await,
        StatusCode::FORBIDDEN
    );
    let (_, page) = server.get("/inbox", &carol).await;
    let form = [("note", "unfrozen by hand"), ("csrf", &csrf(&page))];
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::SEE_OTHER
    );
}

/// An approved call whose run is blocked by the next guard: the escalation
/// is its approvers', as the approval was.
#[tokio::test]
async fn the_escalation_of_an_approved_run_is_its_approvers() {
    let server = server("approved-run").await;
    let waiting = server.call_as_agent("SHUT-1", 800).await;
    let ticket = waiting["escalation"]["ticket"]["id"].as_str().unwrap();
    let carol = Caller::new("carol", ["refunds:approve"]);
    server.tools.decide(ticket, &carol, true, "").await.unwrap();
    assert_eq!(server.tools.run_approved().await.unwrap(), 1);
    let open = server.open_escalations().await;
    let failed = open
        .iter()
        .find(|escalation| escalation.envelope["reason"] == "SHUT")
        .unwrap_or_else(|| panic!("the run's failure is kept: {open:?}"));
    assert_eq!(failed.approvers.as_deref(), Some("refunds:approve"));
    // A call of the agent's that fails on its own is everyone's, as before.
    server.call_as_agent("SHUT-2", 40).await;
    let open = server.open_escalations().await;
    let own = open
        .iter()
        .find(|escalation| escalation.envelope["attempted_query"]["order"] == "SHUT-2")
        .unwrap_or_else(|| panic!("kept: {open:?}"));
    assert_eq!(own.approvers, None);
    // Both are this service's, seen on its inbox alone.
    for kept in [failed, own] {
        assert_eq!(kept.service.as_deref(), Some("refunds"), "{kept:?}");
    }
}

#[tokio::test]
async fn an_escalation_is_resolved_on_the_page_once() {
    let server = server("resolve").await;
    let blocked = server.call_as_agent("FROZEN-7", 40).await;
    assert_eq!(
        blocked["escalation"]["reason"], "blocked_by_guard",
        "{blocked}"
    );
    let carol = server.sign_in("carol-token").await;
    let (_, page) = server.get("/inbox", &carol).await;
    assert!(page.contains("Order FROZEN-7 is frozen"), "{page}");
    let open = server.open_escalations().await;
    let id = open[0].id.clone();
    let path = format!("/inbox/escalations/{id}");
    assert_eq!(
        server
            .post(&path, &carol, &[("note", "unfrozen by hand")])
            .await,
        StatusCode::FORBIDDEN,
        "no CSRF token"
    );
    let form = [("note", "unfrozen by hand"), ("csrf", &csrf(&page))];
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        server.post(&path, &carol, &form).await,
        StatusCode::CONFLICT
    );
    let resolved = server
        .store
        .escalations("refunds", None, EscalationState::Resolved, 10)
        .await
        .unwrap();
    assert!(resolved.iter().any(|e| e.id == id
        && e.resolved_by.as_deref() == Some("carol")
        && e.note.as_deref() == Some("unfrozen by hand")));
}

/// A tool set that says how long to keep resolved escalations forgets
/// them at its runner's sweep, and only them — even when the rest of the
/// sweep fails; one that does not keeps them.
#[tokio::test]
async fn resolved_escalations_are_forgotten_only_when_the_set_says_so() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("forget.db").display());
    let faltering = Arc::new(Faltering::new(store::open(&url).await.unwrap()));
    let store: Arc<dyn Store> = Arc::clone(&faltering) as Arc<dyn Store>;
    let open = EscalationRecord::new(json!({}), Some("agent".into()));
    let resolved = EscalationRecord::new(json!({}), Some("agent".into()));
    for record in [&open, &resolved] {
        assert!(store.record_escalation(record, u64::MAX).await.unwrap());
    }
    let at = store::now_ms() - 60_000;
    assert!(
        store
            .resolve_escalation(&resolved.id, "carol", "done", at)
            .await
            .unwrap()
    );
    // A sweep of a set that keeps resolved escalations `keep` seconds.
    let sweep = async |keep: Option<u64>| {
        let mut set = ToolSet::new()
            .tool::<refund>()
            .store(Arc::clone(&store))
            .approvals_in_background(false);
        if let Some(seconds) = keep {
            set = set.forget_resolved_escalations_after(std::time::Duration::from_secs(seconds));
        }
        set.run_approved().await.unwrap();
    };
    let count = async |state| store.escalations("", None, state, 10).await.unwrap().len();

    sweep(None).await;
    sweep(Some(3600)).await;
    assert_eq!(count(EscalationState::Resolved).await, 1, "kept");
    faltering.sweeping_fails.store(true, Ordering::SeqCst);
    sweep(Some(30)).await;
    assert_eq!(count(EscalationState::Resolved).await, 0, "forgotten");
    assert_eq!(count(EscalationState::Open).await, 1, "the open one stays");
    let audit = store.audit_log(10).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|entry| entry.what == "resolve" && entry.subject == resolved.id),
        "{audit:?}"
    );
}

#[tokio::test]
async fn the_page_is_never_framed_cached_or_scripted() {
    let server = server("headers").await;
    let response = server
        .http
        .get(format!("{}/inbox", server.url))
        .send()
        .await
        .unwrap();
    let headers = response.headers();
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["cache-control"], "no-store");
    // Another origin is sent no referrer; the page's own forms carry their
    // `Origin` (with `no-referrer` a browser sends `Origin: null`).
    assert_eq!(headers["referrer-policy"], "same-origin");
    assert!(!response.text().await.unwrap().contains("<script"));
}

/// A webhook receiver: refuses its first request (503), then takes every
/// notice; each body, and a signal for each notice it took.
async fn receiver() -> (
    String,
    Arc<Mutex<Vec<Value>>>,
    tokio::sync::mpsc::UnboundedReceiver<Value>,
) {
    use axum::routing::post;
    let bodies: Arc<Mutex<Vec<Value>>> = Arc::default();
    let (taken, notices) = tokio::sync::mpsc::unbounded_channel();
    let seen = Arc::clone(&bodies);
    let app = axum::Router::new().route(
        "/hook",
        post(
            move |headers: axum::http::HeaderMap, axum::Json(mut body): axum::Json<Value>| {
                let seen = Arc::clone(&seen);
                let taken = taken.clone();
                // The key a receiver drops a repeated notice by, kept beside it.
                let key = headers
                    .get("idempotency-key")
                    .and_then(|key| key.to_str().ok());
                body["idempotencyKey"] = json!(key);
                async move {
                    let first = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(body.clone());
                        seen.len() == 1
                    };
                    if first {
                        return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                    }
                    let _ = taken.send(body);
                    axum::http::StatusCode::OK
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, bodies, notices)
}

#[tokio::test]
async fn each_new_approval_is_noticed_once_through_the_webhook_retried_when_it_is_down() {
    use tool_envelope::mcp::Webhook;
    let (hook, bodies, mut notices) = receiver().await;
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("hook.db");
    let store = store::open(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(Guards::new().for_all(policy))
        .store(store)
        .approvals_in_background(false)
        .approval_webhook(Webhook::new(hook).inbox_url("https://tools.example.com/inbox/"));
    let agent = Caller::new("agent", ["refunds:write"]);
    let call = |order: &str, amount: u64| {
        let arguments = json!({"order": order, "amount": amount, "card": "4111-1111-1111-1111"});
        tools.call_with(
            "refund",
            arguments,
            ToolContext::detached().with_caller(agent.clone()),
        )
    };
    let first = call("WH-1", 640).await.unwrap().structured_content.unwrap();
    let ticket = first["escalation"]["ticket"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let wait = std::time::Duration::from_secs(20);
    let notice = tokio::time::timeout(wait, notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notice["ticket"], ticket.as_str());
    let text = notice["text"].as_str().unwrap();
    assert!(
        text.contains("Refund of $640 exceeds the $500 cap"),
        "{text}"
    );
    assert!(
        text.contains("refunds:approve") && text.contains("agent"),
        "{text}"
    );
    let url = format!("https://tools.example.com/inbox/approvals/{ticket}");
    assert!(text.contains(&url), "{text}");
    assert_eq!(notice["url"], url.as_str());
    assert_eq!(notice["reason"], "OVER_CAP");
    assert!(
        !notice.to_string().contains("4111-1111"),
        "secrets stay masked"
    );

    // The same call again meets the same approval: no new notice. Another
    // call's approval is noticed, after which the first was posted twice
    // in all (refused once, then taken), never more.
    call("WH-1", 640).await.unwrap();
    let other = call("WH-2", 990).await.unwrap().structured_content.unwrap();
    let second = tokio::time::timeout(wait, notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second["ticket"], other["escalation"]["ticket"]["id"]);
    let posted = bodies.lock().unwrap().clone();
    assert_eq!(
        posted
            .iter()
            .filter(|body| body["ticket"] == ticket.as_str())
            .count(),
        2,
        "{posted:?}"
    );
    // Each post of a notice carries the same key, its ticket: a receiver
    // that got one a retry sent again drops it.
    for body in &posted {
        assert_eq!(body["idempotencyKey"], body["ticket"], "{body}");
    }
}

/// The replica that opened an approval could not reach its receiver; the
/// notice outlives that: another replica sharing the store posts it once
/// it is due again, and then it is not due.
#[tokio::test]
async fn a_notice_the_opener_could_not_post_is_posted_by_another_replica() {
    use tool_envelope::mcp::Webhook;
    // Nothing listens where the first replica's receiver was.
    let gone = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/hook", listener.local_addr().unwrap())
    };
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("notices.db").display());
    let replica = |store, webhook| {
        ToolSet::new()
            .tool::<refund>()
            .guards(Guards::new().for_all(policy))
            .store(store)
            .approvals_in_background(false)
            .approval_webhook(webhook)
    };
    // Its notices are due again at once when not delivered.
    let first = replica(
        store::open(&url).await.unwrap(),
        Webhook::new(gone).resend_after(std::time::Duration::ZERO),
    );
    let agent = Caller::new("agent", ["refunds:write"]);
    let arguments = json!({"order": "WH-9", "amount": 640, "card": "4111-1111-1111-1111"});
    let blocked = first
        .call_with(
            "refund",
            arguments,
            ToolContext::detached().with_caller(agent),
        )
        .await
        .unwrap()
        .structured_content
        .unwrap();
    let ticket = blocked["escalation"]["ticket"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let (hook, bodies, mut notices) = receiver().await;
    let shared = Arc::new(Faltering::new(store::open(&url).await.unwrap()));
    let mut sent = shared.watch_notices();
    let second = replica(
        Arc::clone(&shared) as Arc<dyn Store>,
        Webhook::new(hook).resend_after(std::time::Duration::from_secs(3600)),
    );
    second.run_approved().await.unwrap();
    let wait = std::time::Duration::from_secs(20);
    let notice = tokio::time::timeout(wait, notices.recv())
        .await
        .expect("posted by the second replica")
        .unwrap();
    assert_eq!(notice["ticket"], ticket.as_str());
    assert_eq!(notice["idempotencyKey"], ticket.as_str());
    let text = notice["text"].as_str().unwrap();
    assert!(
        text.contains("Refund of $640 exceeds the $500 cap"),
        "{text}"
    );
    assert!(
        !notice.to_string().contains("4111-1111"),
        "secrets stay masked"
    );
    // Kept as sent, after two posts (the receiver refused the first, then
    // took it): never due again, however late a replica looks.
    let kept = tokio::time::timeout(wait, sent.recv()).await.unwrap();
    assert_eq!(kept.as_deref(), Some(ticket.as_str()));
    assert_eq!(bodies.lock().unwrap().len(), 2);
    let approval = shared.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(approval.notice_due_ms, None);
    let late = approval.expires_ms - 1;
    let due = shared.claim_due_notices("", late, 0, 16).await.unwrap();
    assert!(due.is_empty(), "due again: {due:?}");
}

/// After an outage, with forty notices due and a receiver that takes a
/// post and never answers, a replica holds sixteen posts open, and claims
/// no more than it posts: the others stay due, for a later pass or
/// another replica.
#[tokio::test]
async fn a_backlog_of_notices_is_posted_sixteen_at_a_time() {
    use tool_envelope::mcp::Webhook;
    let (held, mut arrived) = tokio::sync::mpsc::unbounded_channel::<()>();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let _ = held.send(());
            std::future::pending::<()>()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let now = store::now_ms();
    for n in 0..40 {
        let mut approval = ApprovalRecord::new(
            format!("backlog-{n}"),
            "cap@0",
            "refund",
            json!({"order": format!("B-{n}"), "amount": 700}),
            json!({"message": "Refund of $700 exceeds the $500 cap"}),
            Some("agent".to_owned()),
            "refunds:approve",
            now + 3_600_000,
        );
        approval.notice_due_ms = Some(now - 1);
        store.open_approval(&approval, u64::MAX).await.unwrap();
    }
    let tools = ToolSet::new()
        .tool::<refund>()
        .store(Arc::clone(&store))
        .approvals_in_background(false)
        .approval_webhook(Webhook::new(hook));
    for _ in 0..3 {
        tools.run_approved().await.unwrap();
    }
    // Sixteen posts reach the receiver, and wait there.
    for _ in 0..16 {
        tokio::time::timeout(std::time::Duration::from_secs(20), arrived.recv())
            .await
            .expect("posted")
            .unwrap();
    }
    let pending = store
        .approvals("", None, &[ApprovalState::Pending], 100)
        .await
        .unwrap();
    let claimed = (pending.iter())
        .filter(|approval| approval.notice_due_ms.is_some_and(|due| due > now))
        .count();
    assert_eq!(pending.len(), 40);
    assert_eq!(claimed, 16, "claimed beyond what is posted");
}

/// Two replicas sharing a SQLite store and a cookie key, and the ticket of
/// the $700 refund of `order` the agent asked for, waiting on them.
async fn replicas(name: &str, order: &str) -> (Server, Server, String) {
    let key = [9u8; 32];
    let folder = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite:{}",
        folder.path().join(format!("{name}.db")).display()
    );
    let one = serve(store::open(&url).await.unwrap(), Some(folder), Some(&key)).await;
    let two = serve(Arc::clone(&one.store), None, Some(&key)).await;
    let waiting = one.call_as_agent(order, 700).await;
    let ticket = waiting["escalation"]["ticket"]["id"].as_str().unwrap();
    (one, two, ticket.to_owned())
}

/// Signing out ends the session for good: its cookie, kept by whoever
/// copied it and replayed on this replica or on another sharing the store
/// and the cookie key, is no session — the page asks to sign in, its forms
/// decide nothing — and the sign-out is in the audit. The same person's
/// other session stays.
#[tokio::test]
async fn a_session_signed_out_of_is_refused_on_every_replica() {
    let (one, two, ticket) = replicas("out", "OUT-1").await;
    let path = format!("/inbox/approvals/{ticket}");

    let copied = one.sign_in("carol-token").await;
    let other = one.sign_in("carol-token").await;
    let (status, page) = two.get(&path, &copied).await;
    assert_eq!(status, StatusCode::OK, "signed in on both replicas");
    let token = csrf(&page);
    assert_eq!(
        one.post("/inbox/sign-out", &copied, &[("csrf", &token)])
            .await,
        StatusCode::SEE_OTHER
    );

    for replica in [&one, &two] {
        let (status, page) = replica.get(&path, &copied).await;
        assert_eq!(status, StatusCode::OK);
        assert!(page.contains("/inbox/sign-in"), "the sign-in form: {page}");
        assert!(!page.contains("OVER_CAP"), "{page}");
        let form = [("csrf", token.as_str()), ("decision", "approve")];
        assert_eq!(
            replica.post(&path, &copied, &form).await,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            replica
                .post("/inbox/sign-out", &copied, &[("csrf", &token)])
                .await,
            StatusCode::FORBIDDEN,
            "signed out once"
        );
    }
    let approval = one.store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(approval.state, ApprovalState::Pending);
    let audit = one.store.audit_log(100).await.unwrap();
    let signed_out: Vec<_> = audit
        .iter()
        .filter(|entry| entry.what == "sign_out")
        .collect();
    assert_eq!(signed_out.len(), 1, "{audit:?}");
    assert_eq!(signed_out[0].who, "carol");

    let (_, page) = two.get(&path, &other).await;
    let fresh = csrf(&page);
    let form = [("csrf", fresh.as_str()), ("decision", "approve")];
    assert_eq!(two.post(&path, &other, &form).await, StatusCode::SEE_OTHER);
    let approval = one.store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(approval.state, ApprovalState::Approved);
}

/// A session signed out of stays ended when its server restarts on a new
/// in-memory store with the same cookie key: that store never saw the
/// sign-out, and the inbox signs for its store's record
/// ([`Store::ledger`]), so no cookie of before holds there. On a SQLite
/// file, which keeps the record, a session signed in before a restart is
/// one after it.
#[tokio::test]
async fn a_restart_on_a_new_memory_store_takes_back_no_session() {
    let key = [4u8; 32];
    let before = serve(Arc::new(MemoryStore::new()), None, Some(&key)).await;
    let copied = before.sign_in("carol-token").await;
    assert!(signed_in(&before, &copied).await);
    let (_, page) = before.get("/inbox", &copied).await;
    assert_eq!(
        before
            .post("/inbox/sign-out", &copied, &[("csrf", &csrf(&page))])
            .await,
        StatusCode::SEE_OTHER
    );
    assert!(!signed_in(&before, &copied).await);
    let after = serve(Arc::new(MemoryStore::new()), None, Some(&key)).await;
    assert!(
        !signed_in(&after, &copied).await,
        "signed out before the restart"
    );

    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("kept.db").display());
    let before = serve(store::open(&url).await.unwrap(), None, Some(&key)).await;
    let kept = before.sign_in("carol-token").await;
    let after = serve(store::open(&url).await.unwrap(), None, Some(&key)).await;
    assert!(
        signed_in(&after, &kept).await,
        "the same record after a restart"
    );
}

/// Whether `session` is signed in on `replica`: its page, or the sign-in form.
async fn signed_in(replica: &Server, session: &str) -> bool {
    let (status, page) = replica.get("/inbox", session).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    !page.contains("/inbox/sign-in")
}

#[tokio::test]
async fn every_session_of_a_person_ends_when_asked_on_every_replica_and_no_other() {
    let (one, two, ticket) = replicas("ended", "END-1").await;
    let path = format!("/inbox/approvals/{ticket}");

    // Carol on both replicas, Dave on one; then Carol's token is taken
    // away and the operator ends her sessions, on the first replica.
    let carol = [
        one.sign_in("carol-token").await,
        two.sign_in("carol-token").await,
    ];
    let dave = two.sign_in("dave-token").await;
    let mut tokens = Vec::new();
    for session in &carol {
        for replica in [&one, &two] {
            let (_, page) = replica.get(&path, session).await;
            assert!(page.contains("OVER_CAP"), "signed in before: {page}");
        }
        tokens.push(csrf(&one.get(&path, session).await.1));
    }
    assert!(one.inbox.end_sessions_of("carol", "ops").await.unwrap());
    for replica in [&one, &two] {
        for (session, token) in carol.iter().zip(&tokens) {
            assert!(!signed_in(replica, session).await, "a session of Carol's");
            let (_, page) = replica.get(&path, session).await;
            assert!(!page.contains("OVER_CAP"), "{page}");
            let form = [("csrf", token.as_str()), ("decision", "approve")];
            assert_eq!(
                replica.post(&path, session, &form).await,
                StatusCode::FORBIDDEN
            );
        }
        assert!(signed_in(replica, &dave).await, "Dave's stays");
    }
    let approval = one.store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(approval.state, ApprovalState::Pending);

    // Signed in again (her token accepted again): a new session, which the
    // next end ends — two ends at the same moment: the first ends it, the
    // other the same epoch (`false`) or, if it came after, the next one,
    // empty — and not a session signed in after that.
    let again = two.sign_in("carol-token").await;
    assert!(signed_in(&one, &again).await);
    assert!(!signed_in(&one, &carol[1]).await, "the old one stays ended");
    let (first, second) = tokio::join!(
        one.inbox.end_sessions_of("carol", "ops"),
        two.inbox.end_sessions_of("carol", "ops"),
    );
    let concurrent = [first.unwrap(), second.unwrap()];
    assert!(concurrent.contains(&true), "{concurrent:?}");
    assert!(!signed_in(&one, &again).await);
    let last = one.sign_in("carol-token").await;
    assert!(signed_in(&two, &last).await);

    // Carol herself: "Sign out everywhere", from a page on one replica;
    // with another session's CSRF token, nothing is done.
    let elsewhere = two.sign_in("carol-token").await;
    let (_, page) = one.get("/inbox", &last).await;
    assert!(page.contains("Sign out everywhere"), "{page}");
    let forged = [("csrf", tokens[0].as_str()), ("everywhere", "yes")];
    assert_eq!(
        one.post("/inbox/sign-out", &last, &forged).await,
        StatusCode::FORBIDDEN
    );
    assert!(signed_in(&two, &elsewhere).await);
    let token = csrf(&page);
    let form = [("csrf", token.as_str()), ("everywhere", "yes")];
    assert_eq!(
        one.post("/inbox/sign-out", &last, &form).await,
        StatusCode::SEE_OTHER
    );
    for (replica, session) in [(&one, &last), (&two, &elsewhere), (&one, &elsewhere)] {
        assert!(!signed_in(replica, session).await);
    }
    assert!(signed_in(&one, &dave).await, "Dave's stays");

    let audit = one.store.audit_log(100).await.unwrap();
    let ended: Vec<_> = audit
        .iter()
        .filter(|entry| entry.what == "sessions_ended")
        .map(|entry| (entry.who.as_str(), entry.subject.as_str()))
        .collect();
    // Newest first: Carol's own, then one line for each end that ended an
    // epoch — the first, and the two at the same moment.
    let ops = 1 + concurrent.iter().filter(|ended| **ended).count();
    let mut expected = vec![("carol", "carol")];
    expected.extend(std::iter::repeat_n(("ops", "carol"), ops));
    assert_eq!(ended, expected, "{audit:?}");
}

#[tokio::test]
async fn behind_a_tls_proxy_the_session_cookie_is_secure() {
    let server = server("secure").await;
    // An inbox that says it is served over HTTPS only: always, whatever
    // the request says (its key set after, which keeps it so).
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let always = serve_validated(store, None, Some(&[7; 32]), validate, true).await;
    for (server, proto, secure) in [
        (&server, None, false),
        (&server, Some(("x-forwarded-proto", "https")), true),
        (&server, Some(("x-forwarded-proto", "https, http")), true),
        (&server, Some(("x-forwarded-proto", "http, https")), false),
        (
            &server,
            Some(("forwarded", "for=192.0.2.1;proto=https")),
            true,
        ),
        (
            &server,
            Some(("forwarded", "for=192.0.2.1;proto=http")),
            false,
        ),
        (&always, None, true),
        (&always, Some(("x-forwarded-proto", "http")), true),
    ] {
        let mut form = server.http.get(format!("{}/inbox", server.url));
        if let Some((name, proto)) = proto {
            form = form.header(name, proto);
        }
        let form = form.send().await.unwrap();
        // Secure, a cookie only this host sets over TLS, for the whole host.
        let prefix = if secure { "__Host-" } else { "" };
        let (nonce, nonce_header) =
            set_cookie(&form, &format!("{prefix}tool_envelope_sign_in")).unwrap();
        let page = form.text().await.unwrap();
        let mut signed = server
            .http
            .post(format!("{}/inbox/sign-in", server.url))
            .header(COOKIE, &nonce)
            .form(&[("token", "carol-token"), ("csrf", &csrf(&page))]);
        if let Some((name, proto)) = proto {
            signed = signed.header(name, proto);
        }
        let signed = signed.send().await.unwrap();
        let (cookie, session) =
            set_cookie(&signed, &format!("{prefix}tool_envelope_inbox")).expect("a session");
        for header in [&nonce_header, &session] {
            assert_eq!(header.contains("; Secure"), secure, "{proto:?}: {header}");
            let path = if secure { "Path=/;" } else { "Path=/inbox;" };
            assert!(header.contains(path), "{proto:?}: {header}");
        }
        // The session is read back under the name it was given, and only so.
        let mut inbox = server.http.get(format!("{}/inbox", server.url));
        if let Some((name, proto)) = proto {
            inbox = inbox.header(name, proto);
        }
        let page = inbox.header(COOKIE, &cookie).send().await.unwrap();
        assert!(page.text().await.unwrap().contains("Sign out"), "{proto:?}");
        if secure {
            let (_, value) = cookie.split_once('=').unwrap();
            let unprefixed = format!("tool_envelope_inbox={value}");
            let mut planted = server.http.get(format!("{}/inbox", server.url));
            if let Some((name, proto)) = proto {
                planted = planted.header(name, proto);
            }
            let page = planted.header(COOKIE, unprefixed).send().await.unwrap();
            assert!(
                !page.text().await.unwrap().contains("Sign out"),
                "{proto:?}"
            );
        }
    }
}

/// The value of the hidden field `name` of a form on `page`.
fn hidden(page: &str, name: &str) -> String {
    let field = format!("name=\"{name}\" value=\"");
    let start = page.find(&field).expect("the field") + field.len();
    let value = &page[start..][..page[start..].find('"').unwrap()];
    // The page escapes it as HTML does; a browser reads it back.
    value.replace("&#x2f;", "/")
}

/// A decision whose session ended while its form was open is refused with
/// a sign-in form that works — its own token and cookie — and leads back
/// to the approval, where the person decides.
#[tokio::test]
async fn a_form_refused_for_a_session_that_ended_offers_a_sign_in_that_works() {
    let server = server("refused-form").await;
    let waiting = server.call_as_agent("IN-RF", 640).await;
    let ticket = waiting["escalation"]["ticket"]["id"].as_str().unwrap();
    let path = format!("/inbox/approvals/{ticket}");
    let carol = server.sign_in("carol-token").await;
    let (_, page) = server.get(&path, &carol).await;
    let token = csrf(&page);
    let signed_out = server
        .post("/inbox/sign-out", &carol, &[("csrf", &token)])
        .await;
    assert_eq!(signed_out, StatusCode::SEE_OTHER);

    let refused = server
        .http
        .post(format!("{}{path}", server.url))
        .header(COOKIE, &carol)
        .form(&[
            ("csrf", token.as_str()),
            ("decision", "approve"),
            ("note", ""),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let (nonce, _) = set_cookie(&refused, "tool_envelope_sign_in").expect("a sign-in cookie");
    let page = refused.text().await.unwrap();
    assert!(page.contains("Sign in first."), "{page}");
    assert_eq!(hidden(&page, "next"), path);
    let signed_in = server
        .http
        .post(format!("{}/inbox/sign-in", server.url))
        .header(COOKIE, &nonce)
        .form(&[
            ("token", "carol-token"),
            ("csrf", &csrf(&page)),
            ("next", &path),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    let location = signed_in.headers()[reqwest::header::LOCATION]
        .to_str()
        .unwrap();
    assert_eq!(location, path);
    assert_eq!(times("refund IN-RF 640"), 0, "nothing was decided");
}

#[tokio::test]
async fn a_link_to_an_approval_leads_back_to_it_through_the_sign_in_and_nowhere_else() {
    let server = server("return-to").await;
    let waiting = server.call_as_agent("IN-RT", 620).await;
    let ticket = waiting["escalation"]["ticket"]["id"].as_str().unwrap();
    let path = format!("/inbox/approvals/{ticket}");

    // Followed signed out (from a chat, say): the sign-in form, which
    // leads back to the approval.
    let form = server
        .http
        .get(format!("{}{path}", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), StatusCode::OK);
    let (nonce, _) = set_cookie(&form, "tool_envelope_sign_in").unwrap();
    let page = form.text().await.unwrap();
    assert_eq!(hidden(&page, "next"), path);
    let sign_in = async |next: &str| {
        let response = server
            .http
            .post(format!("{}/inbox/sign-in", server.url))
            .header(COOKIE, &nonce)
            .form(&[
                ("token", "carol-token"),
                ("csrf", &csrf(&page)),
                ("next", next),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{next}");
        let (session, _) = set_cookie(&response, "tool_envelope_inbox").expect("a session");
        let to = response.headers()[LOCATION].to_str().unwrap().to_owned();
        (to, session)
    };
    let (to, session) = sign_in(&path).await;
    assert_eq!(to, path);
    let (status, shown) = server.get(&to, &session).await;
    assert_eq!(status, StatusCode::OK);
    assert!(shown.contains("IN-RT"), "{shown}");

    // Nowhere else: another site, another server's path, a path that
    // climbs out or says more than an approval's id — the inbox.
    for elsewhere in [
        "https://evil.example/inbox/approvals/x",
        "//evil.example/inbox/approvals/x",
        "/\\evil.example/inbox",
        "/mcp",
        "/inbox/approvals/../../mcp",
        "/inbox/approvals/x/../../../mcp",
        "/inbox/approvals/x?then=https://evil.example",
        "/inbox/approvals/",
        "/inbox/escalations/x",
        "",
    ] {
        assert_eq!(sign_in(elsewhere).await.0, "/inbox", "{elsewhere}");
    }
    // A page that names something else as its next is not shown it either.
    let odd = server
        .http
        .get(format!("{}/inbox/approvals/%2F%2Fevil.example", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(hidden(&odd.text().await.unwrap(), "next"), "/inbox");
}

/// A store that fails, when told, to read whether a session ended
/// (`redeemed`, of the nonces that begin with a prefix), to end one
/// (`redeem`) or to sweep, as a database that went away would; everything
/// else it passes on.
#[derive(Debug)]
struct Faltering {
    inner: Arc<dyn Store>,
    reading_fails: std::sync::Mutex<Option<&'static str>>,
    ending_fails: AtomicBool,
    sweeping_fails: AtomicBool,
    deciding_fails: AtomicBool,
    /// Keeps each decision and answers with an error, as a database whose
    /// connection was lost after the commit.
    decided_unanswered: AtomicBool,
    /// Fails the read of an approval that follows a decision.
    reading_decided_fails: AtomicBool,
    /// How many of the next reads of an approval fail.
    approval_reads_fail: std::sync::atomic::AtomicU32,
    /// An approval another replica claims, with a lease that has run out
    /// already (it died), as the next call's approvals are read.
    claimed_meanwhile: std::sync::Mutex<Option<String>>,
    /// Told the ticket of each notice kept as sent.
    notices_sent: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>,
}

impl Faltering {
    fn new(inner: Arc<dyn Store>) -> Self {
        Faltering {
            inner,
            reading_fails: std::sync::Mutex::new(None),
            ending_fails: AtomicBool::new(false),
            sweeping_fails: AtomicBool::new(false),
            deciding_fails: AtomicBool::new(false),
            decided_unanswered: AtomicBool::new(false),
            reading_decided_fails: AtomicBool::new(false),
            approval_reads_fail: std::sync::atomic::AtomicU32::new(0),
            claimed_meanwhile: std::sync::Mutex::new(None),
            notices_sent: std::sync::Mutex::new(None),
        }
    }

    /// The tickets of the notices kept as sent, from now on.
    fn watch_notices(&self) -> tokio::sync::mpsc::UnboundedReceiver<String> {
        let (told, sent) = tokio::sync::mpsc::unbounded_channel();
        *self.notices_sent.lock().unwrap() = Some(told);
        sent
    }

    fn fail_reading(&self, prefix: Option<&'static str>) {
        *self.reading_fails.lock().unwrap() = prefix;
    }
}

/// The store's methods this test does not fail, passed on as they are.
macro_rules! passed_on {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(fn $name<'a>(&'a self, $($arg: $ty),*) -> StoreFuture<'a, $out> {
            self.inner.$name($($arg),*)
        })*
    };
}

impl Store for Faltering {
    fn notice_sent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let told = self.notices_sent.lock().unwrap().clone();
        Box::pin(async move {
            self.inner.notice_sent(id).await?;
            if let Some(told) = told {
                let _ = told.send(id.to_owned());
            }
            Ok(())
        })
    }

    passed_on! {
        claim_due_notices(service: &'a str, now_ms: i64, wait_ms: i64, limit: u32) -> Vec<ApprovalRecord>;
        create_task(task: &'a TaskRecord, most_running: u64) -> bool;
        task(id: &'a str) -> Option<TaskRecord>;
        update_task(id: &'a str, holder: &'a str, update: &'a TaskUpdate) -> bool;
        answer_task(id: &'a str, responses: &'a Value) -> bool;
        cancel_task(id: &'a str) -> bool;
        running_tasks(service: &'a str, caller: Option<&'a str>) -> (u64, u64);
        claim_abandoned_tasks(service: &'a str, tools: Option<&'a [&'a str]>, holder: &'a str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Vec<TaskRecord>;
        open_approval(approval: &'a ApprovalRecord, most_waiting: u64) -> Option<ApprovalRecord>;
        waiting_approvals(service: &'a str, caller: Option<&'a str>, now_ms: i64) -> u64;
        approvals(service: &'a str, approvers: Option<&'a [&'a str]>, states: &'a [ApprovalState], limit: u32) -> Vec<ApprovalRecord>;
        claim_approval(id: &'a str, holder: &'a str, now_ms: i64, lease_until_ms: i64) -> Option<ApprovalRecord>;
        renew_approval(id: &'a str, holder: &'a str, lease_until_ms: i64) -> bool;
        approvals_to_run(service: &'a str, now_ms: i64, limit: u32) -> Vec<String>;
        finish_approval(id: &'a str, holder: &'a str, result: &'a Value, at_ms: i64) -> bool;
        expire_approvals(service: &'a str, now_ms: i64, escalate: &'a Escalate<'a>) -> Vec<ApprovalRecord>;
        record_escalation(escalation: &'a EscalationRecord, most_open: u64) -> bool;
        escalations(service: &'a str, approvers: Option<&'a [&'a str]>, state: EscalationState, limit: u32) -> Vec<EscalationRecord>;
        escalation(id: &'a str) -> Option<EscalationRecord>;
        open_escalations(service: Option<&'a str>, caller: Option<&'a str>) -> u64;
        forget_resolved_escalations(service: &'a str, resolved_before_ms: i64) -> u64;
        resolve_escalation(id: &'a str, by: &'a str, note: &'a str, at_ms: i64) -> bool;
        audit(entry: &'a AuditEntry) -> ();
        audit_log(limit: u32) -> Vec<AuditEntry>;
    }

    fn ledger(&self) -> &str {
        self.inner.ledger()
    }

    fn sweep<'a>(&'a self, now_ms: i64) -> StoreFuture<'a, ()> {
        if self.sweeping_fails.load(Ordering::SeqCst) {
            return Box::pin(async { Err(StoreError::new("the database went away")) });
        }
        self.inner.sweep(now_ms)
    }

    fn call_approvals<'a>(
        &'a self,
        digest: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let meanwhile = self.claimed_meanwhile.lock().unwrap().take();
        Box::pin(async move {
            if let Some(id) = meanwhile {
                let dead = self.inner.claim_approval(&id, "dead", now_ms, now_ms - 1);
                assert!(dead.await?.is_some(), "claimed by the replica that dies");
            }
            self.inner.call_approvals(digest, now_ms).await
        })
    }

    fn decide<'a>(&'a self, id: &'a str, decision: &'a Decision) -> StoreFuture<'a, bool> {
        if self.deciding_fails.load(Ordering::SeqCst) {
            let error = StoreError::new("relation \"te_approvals\" is locked by pid 4242")
                .with_code("55P03");
            return Box::pin(async move { Err(error) });
        }
        Box::pin(async move {
            let decided = self.inner.decide(id, decision).await?;
            if self.decided_unanswered.load(Ordering::SeqCst) {
                return Err(StoreError::new("the connection was reset"));
            }
            Ok(decided)
        })
    }

    fn approval<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<ApprovalRecord>> {
        Box::pin(async move {
            let failing = |left: u32| left.checked_sub(1);
            if (self.approval_reads_fail)
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, failing)
                .is_ok()
            {
                return Err(StoreError::new("the connection was reset"));
            }
            let read = self.inner.approval(id).await?;
            let decided = read.as_ref().is_some_and(|read| read.decided_ms.is_some());
            if decided && self.reading_decided_fails.load(Ordering::SeqCst) {
                return Err(StoreError::new("the connection was reset"));
            }
            Ok(read)
        })
    }

    fn redeem<'a>(&'a self, nonce: &'a str, until_ms: i64) -> StoreFuture<'a, bool> {
        if self.ending_fails.load(Ordering::SeqCst) {
            return Box::pin(async { Err(StoreError::new("the database went away")) });
        }
        self.inner.redeem(nonce, until_ms)
    }

    fn redeemed<'a>(&'a self, nonce: &'a str) -> StoreFuture<'a, bool> {
        let fails = *self.reading_fails.lock().unwrap();
        if fails.is_some_and(|prefix| nonce.starts_with(prefix)) {
            return Box::pin(async { Err(StoreError::new("the database went away")) });
        }
        self.inner.redeemed(nonce)
    }
}

/// A server on a [`Faltering`] store, and the ticket of the agent's refund
/// of `order` over the cap, waiting for an approver.
async fn faltering_with_a_ticket(order: &str) -> (Arc<Faltering>, Server, String) {
    let store = Arc::new(Faltering::new(Arc::new(MemoryStore::new())));
    let server = serve(Arc::clone(&store) as Arc<dyn Store>, None, None).await;
    let waiting = server.call_as_agent(order, 800).await;
    let ticket = waiting["escalation"]["ticket"]["id"].as_str().unwrap();
    (store, server, ticket.to_owned())
}

/// Every page and form of `session` answers 503, nothing shown or done.
async fn refuses_everything(server: &Server, session: &str, path: &str, token: &str, why: &str) {
    for page_path in ["/inbox", path] {
        let (status, page) = server.get(page_path, session).await;
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{why}: {page_path}"
        );
        assert!(page.contains("cannot be reached"), "{page}");
        // The inbox's own page, as its forms' refusals are.
        assert!(page.contains("/inbox/style.css"), "{page}");
        assert!(!page.contains("OVER_CAP"), "{page}");
    }
    let approve = [("csrf", token), ("decision", "approve")];
    let everywhere = [("csrf", token), ("everywhere", "yes")];
    for (form_path, form) in [
        (path, &approve[..]),
        ("/inbox/sign-out", &approve[..1]),
        ("/inbox/sign-out", &everywhere[..]),
    ] {
        let response = server
            .http
            .post(format!("{}{form_path}", server.url))
            .header(COOKIE, session)
            .form(form)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "{why}: {form_path}"
        );
        assert!(set_cookie(&response, "tool_envelope_inbox").is_none());
        let page = response.text().await.unwrap();
        assert!(page.contains("nothing was done"), "{page}");
    }
}

#[tokio::test]
async fn a_store_that_cannot_say_whether_a_session_ended_lets_nothing_be_done() {
    let (store, server, ticket) = faltering_with_a_ticket("DOWN-1").await;
    let ticket = ticket.as_str();
    let path = format!("/inbox/approvals/{ticket}");
    let session = server.sign_in("carol-token").await;
    let (status, page) = server.get(&path, &session).await;
    assert_eq!(status, StatusCode::OK);
    let token = csrf(&page);
    let approve = [("csrf", token.as_str()), ("decision", "approve")];

    // Whether the session was signed out of, or its person's sessions
    // ended, cannot be read (either, or both): nothing is shown, and no
    // decision or sign-out taken, on a session that may have ended; and
    // nobody signs in, as the epoch of their sessions is unknown.
    for prefix in ["", "inbox-session:", "inbox-sessions:"] {
        store.fail_reading(Some(prefix));
        refuses_everything(&server, &session, &path, &token, prefix).await;
        if prefix != "inbox-session:" {
            let response = server.try_sign_in("carol-token").await;
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert!(set_cookie(&response, "tool_envelope_inbox").is_none());
        }
    }
    let approval = server.store.approval(ticket).await.unwrap().unwrap();
    assert_eq!(approval.state, ApprovalState::Pending, "not decided");

    // The session cannot be ended in the store: the person is told they
    // are still signed in, and the cookie is kept, as the session is.
    store.fail_reading(None);
    store.ending_fails.store(true, Ordering::SeqCst);
    for (form, said) in [
        (&approve[..1], "still signed in"),
        (
            &[approve[0], ("everywhere", "yes")][..],
            "still signed in everywhere",
        ),
    ] {
        let response = server
            .http
            .post(format!("{}/inbox/sign-out", server.url))
            .header(COOKIE, &session)
            .form(form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(set_cookie(&response, "tool_envelope_inbox").is_none());
        assert!(response.text().await.unwrap().contains(said));
    }
    let audit = server.store.audit_log(100).await.unwrap();
    assert!(
        audit
            .iter()
            .all(|entry| entry.what != "sign_out" && entry.what != "sessions_ended"),
        "{audit:?}"
    );

    // Back up: the same session decides, once.
    store.ending_fails.store(false, Ordering::SeqCst);
    assert_eq!(
        server.post(&path, &session, &approve).await,
        StatusCode::SEE_OTHER
    );
    let approval = server.store.approval(ticket).await.unwrap().unwrap();
    assert_eq!(approval.state, ApprovalState::Approved);
}

/// A decision the store fails to keep is answered as the store being out of
/// reach: the database's own words go to the log, not to the page.
#[tokio::test]
async fn a_store_failing_a_decision_shows_the_page_none_of_its_words() {
    let (store, server, ticket) = faltering_with_a_ticket("LOCKED-1").await;
    let ticket = ticket.as_str();
    let path = format!("/inbox/approvals/{ticket}");
    let session = server.sign_in("carol-token").await;
    store.deciding_fails.store(true, Ordering::SeqCst);
    let response = server.approve_on_its_page(&path, &session).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let page = response.text().await.unwrap();
    assert!(page.contains("cannot be reached"), "{page}");
    for word in ["te_approvals", "4242", "55P03", "store failed"] {
        assert!(!page.contains(word), "{word} in {page}");
    }
    let approval = server.store.approval(ticket).await.unwrap().unwrap();
    assert_eq!(approval.state, ApprovalState::Pending, "not decided");
}

/// A decision the store kept is never said to be undone: one whose
/// answer was lost is decided where the store can say so, and said to be
/// perhaps kept, with a link to look, where it cannot; one kept and
/// answered whose approval cannot be read back is decided.
#[tokio::test]
async fn a_decision_the_store_kept_is_never_said_to_be_undone() {
    for (order, answer_lost, read_fails, status) in [
        ("LOST-1", true, false, StatusCode::SEE_OTHER),
        ("LOST-2", true, true, StatusCode::SERVICE_UNAVAILABLE),
        ("LOST-3", false, true, StatusCode::SEE_OTHER),
    ] {
        let (store, server, ticket) = faltering_with_a_ticket(order).await;
        let path = format!("/inbox/approvals/{ticket}");
        let session = server.sign_in("carol-token").await;
        store
            .decided_unanswered
            .store(answer_lost, Ordering::SeqCst);
        store
            .reading_decided_fails
            .store(read_fails, Ordering::SeqCst);
        let response = server.approve_on_its_page(&path, &session).await;
        assert_eq!(response.status(), status, "{order}");
        if status == StatusCode::SERVICE_UNAVAILABLE {
            let page = response.text().await.unwrap();
            assert!(page.contains("may have been kept"), "{page}");
            // A link to the approval (its slashes escaped as HTML).
            let link = format!("href=\"{}\"", path.replace('/', "&#x2f;"));
            assert!(page.contains(&link), "{page}");
            assert!(!page.contains("Nothing was"), "{page}");
        }
        let approval = store.inner.approval(&ticket).await.unwrap().unwrap();
        assert_eq!(approval.state, ApprovalState::Approved, "{order}");
    }
}

/// Where a decision meets a failing store, the page reads where the
/// approval stands to say whether it was kept — and another scope's
/// approval is as unknown there as anywhere: 404, its state unsaid.
#[tokio::test]
async fn a_store_failing_a_decision_says_nothing_of_another_scopes_approval() {
    let (store, server, _) = faltering_with_a_ticket("SCOPE-1").await;
    let hr = waiting(
        "hr-pay-rise",
        "A raise needs HR",
        "hr:approve",
        store::now_ms() + 60_000,
    );
    let hr = (store.inner.open_approval(&hr, u64::MAX).await.unwrap()).expect("opened");
    let path = format!("/inbox/approvals/{}", hr.id);
    let session = server.sign_in("carol-token").await;
    let (_, inbox) = server.get("/inbox", &session).await;
    let token = csrf(&inbox);
    store.approval_reads_fail.store(1, Ordering::SeqCst);
    let form = [("csrf", token.as_str()), ("decision", "approve")];
    assert_eq!(
        server.post(&path, &session, &form).await,
        StatusCode::NOT_FOUND
    );
    let still = store.inner.approval(&hr.id).await.unwrap().unwrap();
    assert_eq!(still.state, ApprovalState::Pending);
}

/// The inbox the next test's validator ends Mallory's sessions on.
static MALLORYS_INBOX: std::sync::OnceLock<Inbox> = std::sync::OnceLock::new();
/// Whether Mallory's token was revoked (once it was first accepted).
static MALLORY_REVOKED: AtomicBool = AtomicBool::new(false);

/// Mallory's token is accepted once — and before that answer reaches the
/// inbox, it is revoked and her sessions are ended, as
/// `Inbox::end_sessions_of` says to do — and refused after: the sign-in
/// it was given for ends in no session, as one a moment later would.
#[tokio::test]
async fn a_token_revoked_and_ended_while_its_person_signs_in_gives_no_session() {
    async fn mallory_revoked_as_she_signs_in(token: String) -> Option<Caller> {
        if token != "mallory-token" {
            return validate(token).await;
        }
        if MALLORY_REVOKED.swap(true, Ordering::SeqCst) {
            return None;
        }
        let inbox = MALLORYS_INBOX.get().expect("the inbox is served");
        assert!(inbox.end_sessions_of("mallory", "ops").await.unwrap());
        Some(Caller::new("mallory", ["refunds:approve"]))
    }
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let server = serve_validated(store, None, None, mallory_revoked_as_she_signs_in, false).await;
    assert!(MALLORYS_INBOX.set(server.inbox.clone()).is_ok());
    let response = server.try_sign_in("mallory-token").await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(set_cookie(&response, "tool_envelope_inbox").is_none());
    assert!(
        MALLORY_REVOKED.load(Ordering::SeqCst),
        "asked once, then revoked"
    );
    // Nobody else's sign-in is asked twice in vain.
    server.sign_in("carol-token").await;
}

/// A replica reads an approved call, and before it claims it another claims
/// it, runs it (perhaps) and dies: the first takes the call for the
/// abandoned run it now is, not for a first one, and a refund, which may
/// not run twice, is not run again.
#[tokio::test]
async fn a_stale_read_of_an_approved_call_does_not_run_it_again() {
    let (store, server, ticket) = faltering_with_a_ticket("STALE-1").await;
    let ticket = ticket.as_str();
    let carol = Caller::new("carol", ["refunds:approve"]);
    server.tools.decide(ticket, &carol, true, "").await.unwrap();
    *store.claimed_meanwhile.lock().unwrap() = Some(ticket.to_owned());
    assert_eq!(server.tools.run_approved().await.unwrap(), 0);
    assert_eq!(times("refund STALE-1 800"), 0);
    // The next pass finds it abandoned: it may have taken effect.
    assert_eq!(server.tools.run_approved().await.unwrap(), 0);
    assert_eq!(times("refund STALE-1 800"), 0);
    let approval = server.store.approval(ticket).await.unwrap().unwrap();
    assert_eq!(approval.state, ApprovalState::Done);
    let reply = approval.result.expect("its reply kept");
    assert_eq!(
        reply["structuredContent"]["reason"], "MAY_HAVE_TAKEN_EFFECT",
        "{reply}"
    );
}
