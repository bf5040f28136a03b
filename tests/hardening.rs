//! Faults and secrets: a panicking tool, a hanging tool, an enormous result,
//! oversized envelopes — the server answers and keeps serving — and a secret
//! that appears in no output at all.
#![cfg(feature = "rmcp")]

mod common;

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolResult;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use tool_envelope::mcp::ToolSet;
use tool_envelope::{
    EnvelopeLimits, ErrorCategory, ErrorEnvelope, Partial, Secret, ToolError, retry::RetryPolicy,
    tool,
};
use tracing_subscriber::layer::SubscriberExt;

use common::{Captured, call};

/// Divides, and panics on zero.
#[tool(read_only)]
fn divide(numerator: i64, denominator: i64) -> Result<i64, ErrorEnvelope> {
    if denominator == 0 {
        panic!("attempt to divide {numerator} by zero");
    }
    Ok(numerator / denominator)
}

/// Waits on a dependency that never answers.
#[tool(read_only, timeout = "200ms")]
async fn wait_forever(what: String) -> Result<String, ErrorEnvelope> {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(what)
}

/// Returns `megabytes` of data.
#[tool(read_only)]
fn dump(megabytes: usize) -> Result<Vec<String>, ErrorEnvelope> {
    Ok(vec!["x".repeat(1024 * 1024); megabytes])
}

/// Gathers `items` large items, resuming where the last attempt stopped, then fails.
#[tool(read_only)]
fn hoard(items: usize, query: String, gathered: Partial<String>) -> Result<(), ErrorEnvelope> {
    let _ = query;
    for i in gathered.len()..items {
        gathered.push(format!("{i:08}{}", "y".repeat(1000)));
    }
    Err(ErrorEnvelope::transient("Storage went away"))
}

fn tools() -> ToolSet {
    ToolSet::new()
        .tool::<divide>()
        .tool::<wait_forever>()
        .tool::<dump>()
        .tool::<hoard>()
        .max_result_bytes(3 * 1024 * 1024)
}

/// A client and the tool set served to it over an in-memory pipe, through
/// rmcp on both ends: the real protocol, without a child process.
async fn serve(tools: ToolSet) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = tools.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("the client initializes")
}

fn envelope(result: &CallToolResult) -> ErrorEnvelope {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    serde_json::from_value(result.structured_content.clone().unwrap()).unwrap()
}

fn schema() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../schema/error-envelope.schema.json")).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[tokio::test]
async fn a_panicking_tool_answers_with_an_envelope_and_the_server_keeps_serving() {
    let client = serve(tools()).await;
    let failed =
        envelope(&call(&client, "divide", json!({"numerator": 7, "denominator": 0})).await);
    assert_eq!(failed.category(), ErrorCategory::Other);
    assert!(!failed.is_retryable());
    assert!(
        failed.message().contains("attempt to divide 7 by zero"),
        "{}",
        failed.message()
    );
    let ok = call(&client, "divide", json!({"numerator": 8, "denominator": 2})).await;
    assert_eq!(ok.structured_content, Some(json!({"result": 4})));
}

#[tokio::test]
async fn a_hanging_tool_times_out_into_a_transient_envelope() {
    let client = serve(tools()).await;
    let failed = envelope(&call(&client, "wait_forever", json!({"what": "rates"})).await);
    assert_eq!(failed.category(), ErrorCategory::Transient);
    assert!(
        failed.message().contains("did not finish within 200 ms"),
        "{}",
        failed.message()
    );
    assert_eq!(failed.attempted_query(), Some(&json!({"what": "rates"})));
    let ok = call(&client, "divide", json!({"numerator": 1, "denominator": 1})).await;
    assert_eq!(ok.is_error, Some(false));
}

#[tokio::test]
async fn an_enormous_result_is_refused_with_an_envelope_not_truncated() {
    let client = serve(tools()).await;
    let failed = envelope(&call(&client, "dump", json!({"megabytes": 8})).await);
    assert_eq!(failed.category(), ErrorCategory::Other);
    assert_eq!(failed.reason(), Some("RESULT_TOO_LARGE"));
    assert!(
        failed.message().contains("over the 3145728-byte limit"),
        "{}",
        failed.message()
    );
    assert!(!failed.alternatives().is_empty());
    assert_eq!(failed.attempted_query(), Some(&json!({"megabytes": 8})));
    let ok = call(&client, "dump", json!({"megabytes": 1})).await;
    assert_eq!(ok.is_error, Some(false));
}

#[tokio::test]
async fn oversized_envelopes_are_trimmed_but_keep_their_pillars_and_their_schema() {
    let client =
        serve(tools().retry(RetryPolicy::default().constant(Duration::from_millis(1)))).await;
    let limits = EnvelopeLimits::default();
    let long_query = "q".repeat(limits.attempted_query_bytes * 2);
    let result = call(
        &client,
        "hoard",
        json!({"items": 1000, "query": long_query}),
    )
    .await;
    let structured = result.structured_content.clone().unwrap();
    assert!(schema().is_valid(&structured), "{structured}");
    let failed = envelope(&result);
    // The four pillars are all there.
    assert_eq!(failed.category(), ErrorCategory::Transient);
    let query = failed.attempted_query().unwrap().as_str().unwrap();
    assert!(query.len() <= limits.attempted_query_bytes);
    assert!(query.contains("bytes dropped]"));
    let partial = failed.partial_results().unwrap();
    assert!(serde_json::to_string(partial).unwrap().len() <= limits.partial_results_bytes);
    let items = partial.as_array().unwrap();
    let marker = &items.last().unwrap()["_truncated"];
    assert_eq!(marker["totalItems"], 1000);
    assert_eq!(
        marker["droppedItems"].as_u64().unwrap() as usize,
        1000 - (items.len() - 1)
    );
}

#[derive(Debug, thiserror::Error, ToolError)]
#[error("Payments API rejected the charge")]
#[tool_error(transient, alternatives("Retry in a minute"))]
struct Rejected;

/// Charges a card with an API key, and a second credential by name.
#[tool(destructive, idempotent, redact(session_token))]
async fn charge(
    amount: u64,
    api_key: Secret<String>,
    session_token: String,
) -> Result<(), Rejected> {
    let _ = (amount, api_key.expose(), session_token);
    Err(Rejected)
}

const API_KEY: &str = "sk_live_API_KEY_4f9a";
const SESSION: &str = "sess_SESSION_TOKEN_77c1";
/// The value of a key no tool declares.
const UNDECLARED: &str = "tok_UNDECLARED_77c1e0";

/// Fetches a report, failing with a message that quotes its credentials,
/// as a client library's error does when they go in the URL.
#[tool(read_only, redact(session_token))]
fn fetch_report(
    name: String,
    api_key: Secret<String>,
    session_token: String,
    fallback_key: Option<Secret<String>>,
) -> Result<String, ErrorEnvelope> {
    let fallback = fallback_key.as_ref().map_or("", |key| key.expose());
    Err(ErrorEnvelope::transient(format!(
        "GET /reports/{name}?key={}&session={session_token}&fallback={fallback}: 503",
        api_key.expose()
    ))
    .with_alternative(format!("Try again with session {session_token}")))
}

/// Called directly, a tool's failure that quotes its redacted argument or
/// its `Secret` masks them, as it does over MCP: on every path.
#[tokio::test]
async fn a_direct_call_masks_what_its_failure_quotes_of_its_secrets() {
    let fallback = || Some(Secret::new(UNDECLARED.to_owned()));
    let failed = fetch_report(
        "q3".into(),
        Secret::new(API_KEY.into()),
        SESSION.into(),
        fallback(),
    )
    .unwrap_err();
    let outcome = RetryPolicy::default()
        .constant(Duration::from_millis(1))
        .retry(|| async {
            fetch_report(
                "q3".into(),
                Secret::new(API_KEY.into()),
                SESSION.into(),
                fallback(),
            )
        })
        .await;
    let escalation = outcome.result.unwrap_err();
    let shown = format!(
        "{} {failed} {failed:?} {} {escalation:?}",
        serde_json::to_string(&failed).unwrap(),
        serde_json::to_string(&escalation).unwrap()
    );
    for secret in [API_KEY, SESSION, UNDECLARED] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert_eq!(
        failed.message(),
        "GET /reports/q3?key=[redacted]&session=[redacted]&fallback=[redacted]: 503"
    );
}

/// A login's credentials, the password a `Secret` inside them.
#[derive(Debug, serde::Serialize)]
struct Creds {
    user: String,
    password: Secret<String>,
}

/// Logs in with credentials and backup codes; the upstream's refusal quotes
/// every secret it was given.
#[tool(local)]
fn sign_in(
    creds: Creds,
    backups: Vec<Secret<String>>,
    pin: Box<Secret<u64>>,
    pair: (String, Secret<String>),
) -> Result<(), ErrorEnvelope> {
    Err(ErrorEnvelope::permission(format!(
        "rejected {} {} {} {} {}",
        creds.user,
        creds.password.expose(),
        backups[0].expose(),
        pin.expose(),
        pair.1.expose()
    )))
}

/// A `Secret` inside an argument — a field, an item, a box, a tuple's
/// member — is masked where a direct call's failure quotes it, as over MCP:
/// once it was written `"[redacted]"` into the capture and noted nowhere.
#[test]
fn a_direct_calls_failure_masks_the_secrets_inside_its_arguments() {
    let failed = sign_in(
        Creds {
            user: "ada".into(),
            password: Secret::new("pw-hunter2".into()),
        },
        vec![Secret::new("backup-98341".into())],
        Box::new(Secret::new(73_914_205)),
        ("eu".into(), Secret::new("pair-secret-7".into())),
    )
    .unwrap_err();
    let shown = format!(
        "{} {failed} {failed:?}",
        serde_json::to_string(&failed).unwrap()
    );
    for secret in ["pw-hunter2", "backup-98341", "73914205", "pair-secret-7"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert_eq!(
        failed.message(),
        "rejected ada [redacted] [redacted] [redacted] [redacted]"
    );
}

/// A quote request: a ratio, a big count and the key to price it with.
#[derive(serde::Serialize)]
struct Quote {
    ratio: f64,
    count: u128,
    key: Secret<String>,
}

/// Prices a quote; the upstream's refusal quotes the key.
#[tool(local)]
fn price(quote: Quote) -> Result<(), ErrorEnvelope> {
    Err(ErrorEnvelope::permission(format!(
        "key {} refused",
        quote.key.expose()
    )))
}

/// A `Secret` after a number JSON cannot carry (NaN, an integer past 64
/// bits) was never reached — the capture stopped at the number — so never
/// noted, and the failure quoted it. The number is refused, and the rest
/// still serialized for its secrets.
#[test]
fn a_secret_after_a_number_json_cannot_carry_is_masked() {
    for (ratio, count) in [(f64::NAN, 1), (0.5, u128::MAX), (f64::INFINITY, u128::MAX)] {
        let failed = price(Quote {
            ratio,
            count,
            key: Secret::new("sk-live-4471".into()),
        })
        .unwrap_err();
        let shown = format!(
            "{} {failed} {failed:?}",
            serde_json::to_string(&failed).unwrap()
        );
        assert!(!shown.contains("sk-live-4471"), "{shown}");
        assert_eq!(failed.message(), "key [redacted] refused");
    }
}

/// A chain of secrets, each inside the one before.
#[derive(serde::Serialize)]
struct Link {
    next: Option<Secret<Box<Link>>>,
}

/// Walks a chain.
#[tool(local)]
fn walk(link: &Link) -> Result<(), ErrorEnvelope> {
    Err(ErrorEnvelope::transient(format!(
        "walked {}",
        link.next.is_some()
    )))
}

/// Secrets inside each other, 20,000 deep: each noted its value with a
/// serialization of its own, each with a fresh bound on depth, and the
/// capture ran off a thread's stack (the process aborted). A secret inside
/// one being noted is written into that one's value: one serialization,
/// one bound.
#[test]
fn a_deep_chain_of_secrets_inside_each_other_is_captured_within_bounds() {
    let big = std::thread::Builder::new().stack_size(256 << 20);
    let walked = big.spawn(|| {
        let mut link = Link { next: None };
        for _ in 0..20_000 {
            link = Link {
                next: Some(Secret::new(Box::new(link))),
            };
        }
        let small = std::thread::Builder::new().stack_size(1 << 20);
        let failed = std::thread::scope(|scope| {
            let call = small.spawn_scoped(scope, || walk(&link).unwrap_err());
            call.unwrap().join().unwrap()
        });
        // Dropped here, on the big stack.
        drop(link);
        failed.attempted_query().cloned()
    });
    let query = walked.unwrap().join().unwrap();
    assert_eq!(query, Some(json!({"link": {"next": "[redacted]"}})));
}

/// An upstream's refusal that quotes the session it refused, in its text
/// and in its fields.
#[derive(Debug, thiserror::Error, ToolError)]
#[error("upstream refused session {session}")]
#[tool_error(permission)]
struct SessionRefused {
    session: String,
}

/// Opens a session upstream.
#[tool(read_only, redact(session_token))]
fn open_session(session_token: String) -> Result<(), SessionRefused> {
    Err(SessionRefused {
        session: session_token,
    })
}

/// The original error an envelope keeps (its `Debug`, its `source()`) is
/// masked as its message is: one that quoted the secret gives way to a
/// stand-in saying the same, masked.
#[test]
fn the_original_error_an_envelope_keeps_quotes_no_secret() {
    use std::error::Error as _;

    let failed = open_session(SESSION.into()).unwrap_err();
    let source = failed.source().expect("the original error, masked");
    let shown = format!("{failed:?} {source} {source:?}");
    assert!(!shown.contains(SESSION), "{shown}");
    assert_eq!(source.to_string(), "upstream refused session [redacted]");
    assert!(
        failed.downcast_ref::<SessionRefused>().is_none(),
        "a stand-in"
    );
    // An original error that quotes no secret is kept as it was.
    let failed = charge_declined().unwrap_err();
    assert!(failed.downcast_ref::<Rejected>().is_some());
}

/// Charges nothing: the payments API refuses.
#[tool(read_only, redact(api_key))]
fn charge_declined_with(api_key: String) -> Result<(), Rejected> {
    let _ = api_key;
    Err(Rejected)
}

fn charge_declined() -> Result<(), ErrorEnvelope> {
    charge_declined_with(API_KEY.into())
}

#[test]
fn a_secret_appears_in_no_output_at_all() {
    let logs = Captured::default();
    let writer = logs.clone();
    // Every event of this crate, and rmcp's at INFO and above. (rmcp traces
    // raw requests, arguments included, at TRACE: keep it below TRACE in
    // production, as SECURITY.md says.)
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish()
        .with(
            tracing_subscriber::filter::Targets::new()
                .with_target("tool_envelope_runtime", tracing::Level::TRACE)
                .with_target("rmcp", tracing::Level::INFO),
        );
    let _guard = tracing::subscriber::set_default(subscriber);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut outputs: Vec<String> = Vec::new();
    runtime.block_on(async {
        // A direct call: the envelope as JSON, Display, Debug.
        let direct = charge(10, Secret::new(API_KEY.into()), SESSION.into())
            .await
            .unwrap_err();
        outputs.push(serde_json::to_string(&direct).unwrap());
        outputs.push(format!("{direct} {direct:?} {direct:#?}"));
        assert_eq!(
            direct.attempted_query(),
            Some(&json!({"amount": 10, "api_key": "[redacted]", "session_token": "[redacted]"}))
        );

        // Through the retry loop: the escalation, its Display, the statistics.
        let outcome = RetryPolicy::default()
            .constant(Duration::from_millis(1))
            .retry(|| charge(10, Secret::new(API_KEY.into()), SESSION.into()))
            .await;
        let escalation = outcome.result.unwrap_err();
        outputs.push(serde_json::to_string(&escalation).unwrap());
        outputs.push(format!("{escalation} {escalation:?} {:?}", outcome.stats));

        // Through MCP, where the arguments arrive as JSON: redacted from the raw arguments.
        let tools = ToolSet::new()
            .tool::<charge>()
            .retry(RetryPolicy::default().constant(Duration::from_millis(1)));
        let client = serve(tools.clone()).await;
        let result = call(
            &client,
            "charge",
            json!({"amount": 10, "api_key": API_KEY, "session_token": SESSION}),
        )
        .await;
        outputs.push(serde_json::to_string(&result).unwrap());
        assert_eq!(
            envelope(&result).attempted_query().unwrap()["api_key"],
            "[redacted]"
        );
        let direct_set = tools
            .call(
                "charge",
                json!({"amount": 10, "api_key": API_KEY, "session_token": SESSION}),
            )
            .await
            .unwrap();
        outputs.push(format!("{direct_set:?}"));

        // A key the tool does not declare: named in `violations`, its value
        // nowhere, neither in the reply nor in the logs.
        let undeclared = json!({"amount": 10, "api_key": API_KEY, "session_token": SESSION, "apiToken": UNDECLARED});
        let result = call(&client, "charge", undeclared.clone()).await;
        assert!(
            envelope(&result)
                .violations()
                .iter()
                .any(|violation| violation.field == "apiToken")
        );
        outputs.push(serde_json::to_string(&result).unwrap());
        outputs.push(format!("{:?}", tools.call("charge", undeclared).await.unwrap()));
        client.cancel().await.unwrap();
    });
    outputs.push(logs.text());
    assert!(
        outputs.last().unwrap().contains("retrying"),
        "the tracing events were captured"
    );

    for output in &outputs {
        assert!(!output.contains(API_KEY), "the API key leaked: {output}");
        assert!(
            !output.contains(SESSION),
            "the session token leaked: {output}"
        );
        assert!(
            !output.contains(UNDECLARED),
            "an undeclared key's value leaked: {output}"
        );
    }
}

#[test]
fn the_input_schema_marks_a_secret_write_only() {
    let tools = ToolSet::new().tool::<charge>();
    let schema = &tools.get("charge").unwrap().input_schema;
    assert_eq!(schema["properties"]["api_key"]["type"], "string");
    assert_eq!(schema["properties"]["api_key"]["writeOnly"], true);
}

/// Logs in with an optional one-time password; the identity provider is down.
#[tool(read_only)]
fn login(user: String, otp: Option<Secret<String>>) -> Result<(), ErrorEnvelope> {
    let _ = (user, otp.as_ref().map(Secret::expose));
    Err(ErrorEnvelope::transient("Identity provider unavailable"))
}

const NUMERIC_KEY: u64 = 987_654_321_987;
const OTP: &str = "otp_ONE_TIME_5521";

#[tokio::test]
async fn a_secret_sent_with_the_wrong_type_or_as_an_option_is_still_masked() {
    let tools = ToolSet::new().tool::<charge>().tool::<login>();
    let client = serve(tools).await;
    let mut outputs = Vec::new();

    // A secret of the wrong type: the decoding error must not quote it, and
    // the arguments as received are masked.
    let result = call(
        &client,
        "charge",
        json!({"amount": 10, "api_key": NUMERIC_KEY, "session_token": [SESSION]}),
    )
    .await;
    let failed = envelope(&result);
    assert_eq!(failed.category(), ErrorCategory::Validation);
    let fields: Vec<&str> = failed
        .violations()
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(fields, ["api_key", "session_token"]);
    assert_eq!(
        failed.attempted_query(),
        Some(&json!({"amount": 10, "api_key": "[redacted]", "session_token": "[redacted]"}))
    );
    outputs.push(serde_json::to_string(&result).unwrap());

    // An optional secret is found from the schema (`writeOnly`) and masked.
    let result = call(&client, "login", json!({"user": "ada", "otp": OTP})).await;
    let failed = envelope(&result);
    assert_eq!(
        failed.attempted_query(),
        Some(&json!({"user": "ada", "otp": "[redacted]"}))
    );
    outputs.push(serde_json::to_string(&result).unwrap());
    client.cancel().await.unwrap();

    for output in &outputs {
        assert!(
            !output.contains(&NUMERIC_KEY.to_string()),
            "leaked: {output}"
        );
        assert!(!output.contains(SESSION), "leaked: {output}");
        assert!(!output.contains(OTP), "leaked: {output}");
    }
}

/// Fails with whatever it is given: message, reason and alternatives.
#[tool(read_only)]
fn fail_with(message: String, reason: String, alternatives: usize) -> Result<(), ErrorEnvelope> {
    Err(ErrorEnvelope::business(message)
        .with_reason(reason)
        .with_alternatives((0..alternatives).map(|i| format!("Option {i}"))))
}

#[tokio::test]
async fn whatever_a_tool_writes_into_its_envelope_the_reply_is_bounded_and_valid() {
    let client = serve(ToolSet::new().tool::<fail_with>()).await;
    let limits = EnvelopeLimits::default();
    let cases = [
        (json!({"message": "x".repeat(10 * 1024 * 1024), "reason": "quota exceeded", "alternatives": 100_000})),
        (json!({"message": "", "reason": "", "alternatives": 0})),
        (json!({"message": "é".repeat(5000), "reason": "rateLimited", "alternatives": 1})),
    ];
    for arguments in cases {
        let result = call(&client, "fail_with", arguments).await;
        let structured = result.structured_content.clone().unwrap();
        assert!(schema().is_valid(&structured), "{structured:.500}");
        let size = serde_json::to_string(&result).unwrap().len();
        assert!(size < 128 * 1024, "a reply of {size} bytes");
        let failed = envelope(&result);
        assert!(!failed.message().is_empty());
        assert!(failed.message().len() <= limits.text_bytes);
        assert!(failed.alternatives().len() <= limits.list_items);
        assert_eq!(failed.category(), ErrorCategory::Business);
    }
    let failed = envelope(
        &call(
            &client,
            "fail_with",
            json!({"message": "Quota used up", "reason": "quota exceeded", "alternatives": 100}),
        )
        .await,
    );
    assert_eq!(failed.reason(), Some("QUOTA_EXCEEDED"));
    assert_eq!(
        failed.alternatives().last().map(String::as_str),
        Some("… and 37 more alternatives")
    );
    client.cancel().await.unwrap();
}

/// `depth` arrays nested in one another, built without recursion.
fn nested(depth: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

#[tokio::test]
async fn arguments_nested_100_000_deep_get_a_validation_envelope_without_overflowing() {
    // Over MCP, serde_json's parser stops at 128 levels; a ToolSet embedded
    // behind another transport can be handed any `Value`.
    let tools = tools();
    // Built by hand: `json!` would copy the value through `to_value`, recursively.
    let object = |fields: Vec<(&str, Value)>| {
        Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value))
                .collect(),
        )
    };
    for arguments in [
        object(vec![
            ("numerator", nested(100_000)),
            ("denominator", json!(1)),
        ]),
        object(vec![
            ("numerator", json!(1)),
            ("denominator", json!(1)),
            ("extra", nested(100_000)),
        ]),
        nested(100_000),
    ] {
        let result = tools.call("divide", arguments).await.unwrap();
        let envelope = result.envelope().unwrap();
        assert_eq!(envelope.category(), ErrorCategory::Validation);
        assert!(
            envelope.violations()[0].description.contains("nested"),
            "{:?}",
            envelope.violations()
        );
        let text = serde_json::to_string(&result).unwrap();
        assert!(text.len() < 64 * 1024, "{} bytes", text.len());
        assert!(schema().is_valid(&result.structured_content.unwrap()));
    }
    // An unknown tool is still a protocol error.
    assert_eq!(
        tools.call("nope", nested(100_000)).await.unwrap_err().code,
        -32602
    );
    // And the set keeps serving.
    let result = tools
        .call("divide", json!({"numerator": 6, "denominator": 3}))
        .await
        .unwrap();
    assert_eq!(result.structured_content, Some(json!({"result": 2})));
}

/// An upstream's credentials, whose author overrode the token's schema:
/// `#[schemars(with = "String")]` drops the `writeOnly` mark a `Secret` writes.
#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Upstream {
    url: String,
    #[schemars(with = "String")]
    token: Secret<String>,
}

/// Syncs with an upstream, which rejects the token; the tool's own message
/// quotes it, as careless code does.
#[tool(read_only)]
fn sync_upstream(upstream: Upstream) -> Result<(), ErrorEnvelope> {
    Err(ErrorEnvelope::permission(format!(
        "{} rejected the token {}",
        upstream.url,
        upstream.token.expose()
    )))
}

const UPSTREAM_TOKEN: &str = "ghp_UPSTREAM_4471";

/// [`Upstream`], its overridden schema keeping the mark.
#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct MarkedUpstream {
    url: String,
    #[schemars(with = "String", extend("writeOnly" = true))]
    token: Secret<String>,
}

/// Syncs with every upstream.
#[tool(read_only)]
fn sync_all(upstreams: Vec<MarkedUpstream>) -> Result<usize, ErrorEnvelope> {
    Ok(upstreams.len())
}

/// serde stops at the first upstream's bad URL and never decodes the
/// second's token, so its value is never noted (shown as sent, without the
/// mark): the schema's mark, kept as SECURITY.md says to, masks it.
#[tokio::test]
async fn an_overridden_schema_that_keeps_the_mark_masks_what_never_decoded() {
    let tools = ToolSet::new().tool::<sync_all>();
    let arguments = json!({"upstreams": [
        {"url": 7, "token": "short"},
        {"url": "https://git.example", "token": UPSTREAM_TOKEN}
    ]});
    let reply = tools.call("sync_all", arguments).await.unwrap();
    assert!(reply.is_error);
    let shown = serde_json::to_string(&reply).unwrap();
    assert!(!shown.contains(UPSTREAM_TOKEN), "leaked: {shown}");
    assert_eq!(
        reply.structured_content.unwrap()["attempted_query"]["upstreams"][1],
        json!({"url": "https://git.example", "token": "[redacted]"})
    );
}

#[tokio::test]
async fn a_secret_whose_schema_was_overridden_is_masked_by_its_value() {
    let tools = ToolSet::new().tool::<sync_upstream>();
    // The schema no longer says it is a secret…
    let schema = serde_json::to_value(&tools.get("sync_upstream").unwrap().input_schema).unwrap();
    assert_eq!(
        schema["$defs"]["Upstream"]["properties"]["token"],
        json!({"type": "string"}),
        "{schema}"
    );
    // …but the value it was sent as is masked everywhere, on every path.
    let arguments = json!({"upstream": {"url": "https://git.example", "token": UPSTREAM_TOKEN}});
    let reply = tools
        .call("sync_upstream", arguments.clone())
        .await
        .unwrap();
    let client = serve(ToolSet::new().tool::<sync_upstream>()).await;
    let result = call(&client, "sync_upstream", arguments).await;
    client.cancel().await.unwrap();
    let served = envelope(&result);
    assert_eq!(
        served.attempted_query(),
        Some(&json!({"upstream": {"url": "https://git.example", "token": "[redacted]"}}))
    );
    assert_eq!(
        served.message(),
        "https://git.example rejected the token [redacted]"
    );
    for output in [
        serde_json::to_string(&reply).unwrap(),
        serde_json::to_string(&result).unwrap(),
    ] {
        assert!(!output.contains(UPSTREAM_TOKEN), "leaked: {output}");
    }
}

/// A sync that an approver must allow.
fn approved_syncs(_: &tool_envelope::guard::ToolCall) -> Result<(), tool_envelope::guard::Blocked> {
    Err(
        tool_envelope::guard::Blocked::new("Syncs wait for an approver")
            .unless_approved_by(tool_envelope::guard::Approvers::scope("sync:approve")),
    )
}

/// A call made again while its approval lives is answered before its
/// arguments are decoded — its `Secret`s' values unknown, masked by the
/// schema alone. A `Secret` whose schema was overridden without its mark
/// must therefore never wait for an approval: its value, in a part the
/// schema does not mark, is refused before one opens, however often the
/// call is made, and never shown.
#[tokio::test]
async fn a_secret_whose_schema_lost_its_mark_never_waits_for_an_approval() {
    let store: std::sync::Arc<dyn tool_envelope::store::Store> =
        std::sync::Arc::new(tool_envelope::store::MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<sync_upstream>()
        .guards(tool_envelope::guard::Guards::new().for_all(approved_syncs))
        .store(std::sync::Arc::clone(&store))
        .approvals_in_background(false);
    let arguments = json!({"upstream": {"url": "https://git.example", "token": UPSTREAM_TOKEN}});
    let caller = tool_envelope::guard::Caller::new("alice", ["sync:write"]);
    let context = || tool_envelope::mcp::ToolContext::detached().with_caller(caller.clone());
    let first = (tools.call_with("sync_upstream", arguments.clone(), context()))
        .await
        .unwrap();
    let again = (tools.call_with("sync_upstream", arguments, context()))
        .await
        .unwrap();
    for reply in [&first, &again] {
        let shown = serde_json::to_string(reply).unwrap();
        assert!(shown.contains("HIDDEN_FROM_APPROVERS"), "{shown}");
        assert!(!shown.contains(UPSTREAM_TOKEN), "leaked: {shown}");
        assert_eq!(
            reply.structured_content.as_ref().unwrap()["attempted_query"],
            json!({"upstream": {"url": "https://git.example", "token": "[redacted]"}})
        );
    }
    let opened = store
        .approvals(
            "",
            None,
            &[tool_envelope::store::ApprovalState::Pending],
            10,
        )
        .await
        .unwrap();
    assert!(opened.is_empty(), "{opened:?}");
}

const SIGNING_KEY: &str = "sk_sign_99c1e0";

/// Signs a payload with a key it borrows; the failure quotes the key, as
/// careless code does.
#[tool(local, read_only)]
fn sign(payload: String, key: &Secret<String>) -> Result<String, ErrorEnvelope> {
    let _ = payload;
    Err(ErrorEnvelope::permission(format!(
        "the signer refused key {}",
        key.expose()
    )))
}

/// A borrowed `Secret` is masked wherever its failure quotes it, as one
/// taken by value is.
#[test]
fn a_borrowed_secret_is_masked_where_its_failure_quotes_it() {
    let key = Secret::new(SIGNING_KEY.to_owned());
    let failed = sign("doc".into(), &key).unwrap_err();
    let shown = format!("{failed} {}", serde_json::to_string(&failed).unwrap());
    assert!(!shown.contains(SIGNING_KEY), "leaked: {shown}");
    assert_eq!(failed.message(), "the signer refused key [redacted]");
}
