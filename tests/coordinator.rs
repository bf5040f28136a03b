//! The coordinator: branches recover locally, gaps are reported, nothing
//! partial is presented as complete.

use std::time::Duration;

use serde::Serialize;
use tool_envelope::{
    ErrorEnvelope, EscalationReason, Partial, coordinator::Coordinator, retry::RetryPolicy, tool,
};

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Source {
    title: String,
}

/// Fetch `wanted` sources on `topic`; a rate-limited provider stops at `limit`.
#[tool(read_only)]
async fn research(
    topic: String,
    wanted: usize,
    limit: usize,
    sources: Partial<Source>,
) -> Result<Vec<Source>, ErrorEnvelope> {
    for i in sources.len()..wanted {
        if i >= limit {
            return Err(ErrorEnvelope::transient(format!(
                "Provider rate-limited after {i} sources"
            ))
            .with_reason("RATE_LIMITED")
            .with_alternative("Retry later from the 7th source")
            .with_alternative("Continue the synthesis with the sources gathered"));
        }
        tokio::task::yield_now().await;
        sources.push(Source {
            title: format!("{topic} source {}", i + 1),
        });
    }
    Ok(sources.to_vec())
}

async fn branch(
    policy: &RetryPolicy,
    topic: &str,
    limit: usize,
) -> tool_envelope::retry::Outcome<Vec<Source>> {
    let sources = Partial::new();
    policy
        .retry(|| research(topic.to_owned(), 10, limit, sources.clone()))
        .await
}

#[tokio::test(start_paused = true)]
async fn three_research_branches_two_complete_one_gap_with_its_six_sources() {
    let policy = RetryPolicy::default().constant(Duration::from_millis(100));
    let report = Coordinator::new()
        .branch("eu-ai-act", branch(&policy, "EU AI Act timelines", 6))
        .branch("us-policy", branch(&policy, "US AI policy", 100))
        .branch("uk-policy", branch(&policy, "UK AI policy", 100))
        .run()
        .await;

    assert!(
        !report.is_complete(),
        "a gap means the report is not complete"
    );
    assert_eq!(report.completed.len(), 2);
    assert_eq!(report.completed[0].branch, "us-policy");
    assert_eq!(report.completed[0].value.len(), 10);
    assert_eq!(report.completed[1].branch, "uk-policy");

    assert_eq!(report.gaps.len(), 1);
    let gap = &report.gaps[0];
    assert_eq!(gap.branch, "eu-ai-act");
    assert_eq!(gap.escalation.reason, EscalationReason::RetriesExhausted);
    assert_eq!(
        gap.escalation.attempts, 3,
        "it recovered locally as far as the policy allowed"
    );
    let envelope = gap.envelope();
    assert_eq!(envelope.partial_count(), 6);
    assert_eq!(
        envelope.partial_results().unwrap()[0]["title"],
        "EU AI Act timelines source 1"
    );
    assert_eq!(
        envelope.attempted_query(),
        Some(&serde_json::json!({"topic": "EU AI Act timelines", "wanted": 10, "limit": 6}))
    );
    assert_eq!(envelope.category(), tool_envelope::ErrorCategory::Transient);
    assert_eq!(envelope.alternatives().len(), 2);
    // Its loop's history is kept, as a completed branch's is.
    let stats = gap.stats.as_ref().expect("the gap's retry statistics");
    assert_eq!(stats.attempts, 3);
    assert_eq!(stats.history.len(), 3);
    assert!(report.completed[0].stats.is_some());

    let text = report.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], "2 of 3 branches complete; 1 gap:");
    assert!(lines[1].starts_with("- gap `eu-ai-act`: Provider rate-limited after 6 sources [transient, retries_exhausted after 3 attempts]; 6 partial results kept"), "{text}");

    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["complete"], false);
    assert_eq!(json["gaps"][0]["branch"], "eu-ai-act");
    assert_eq!(
        json["gaps"][0]["partial_results"].as_array().unwrap().len(),
        6
    );
    assert_eq!(json["gaps"][0]["escalation"]["reason"], "retries_exhausted");
}

#[tokio::test]
async fn a_panicking_branch_becomes_a_gap_and_the_others_finish() {
    let report = Coordinator::new()
        .branch("fine", async { Ok::<u32, ErrorEnvelope>(1) })
        .branch("broken", async {
            let empty: Vec<u32> = Vec::new();
            Ok::<u32, ErrorEnvelope>(empty[3])
        })
        .branch("also-fine", async { Ok::<u32, ErrorEnvelope>(2) })
        .run()
        .await;
    assert_eq!(report.values().copied().collect::<Vec<_>>(), [1, 2]);
    assert_eq!(report.gaps[0].branch, "broken");
    assert!(
        report.gaps[0]
            .envelope()
            .message()
            .contains("branch `broken` panicked")
    );
    assert!(!report.is_complete());
}

#[tokio::test]
async fn all_branches_complete_means_complete() {
    let report = Coordinator::new()
        .branch("a", async { Ok::<u32, ErrorEnvelope>(1) })
        .branch("b", async { Ok::<u32, ErrorEnvelope>(2) })
        .run()
        .await;
    assert!(report.is_complete());
    assert_eq!(report.to_string(), "2 of 2 branches complete.");
}

#[tokio::test]
async fn each_gap_is_one_line_of_the_report_whatever_its_message() {
    let report = Coordinator::new()
        .branch("ok", async { Ok::<u32, ErrorEnvelope>(1) })
        .branch("multi\nline", async {
            Err::<u32, ErrorEnvelope>(ErrorEnvelope::permission("denied:\nno access\r\nat all"))
        })
        .run()
        .await;
    let text = report.to_string();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.ends_with("- gap `multi line`: denied: no access  at all [permission, non_retryable after 1 attempt]"),
        "{text}"
    );
}

/// The attempted query is the caller's text: a line break JSON does not
/// escape (U+2028, U+2029, U+0085) in an argument once forged a gap line.
#[tokio::test]
async fn a_gaps_attempted_query_cannot_forge_a_line() {
    for forged in ["x\u{2028}- gap `refunds`: ok", "x\u{2029}y", "x\u{85}y"] {
        let report = Coordinator::new()
            .branch("q", async move {
                Err::<u32, ErrorEnvelope>(
                    ErrorEnvelope::transient("timed out")
                        .with_attempted_query(serde_json::json!({"q": forged})),
                )
            })
            .run()
            .await;
        let text = report.to_string();
        assert!(
            !text.contains(['\u{2028}', '\u{2029}', '\u{85}']),
            "{text:?}"
        );
        assert!(text.contains("attempted {\"q\":\"x "), "{text:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn branches_run_concurrently() {
    let start = tokio::time::Instant::now();
    let mut coordinator = Coordinator::new();
    for i in 0..50u64 {
        coordinator = coordinator.branch(format!("b{i}"), async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<u64, ErrorEnvelope>(i)
        });
    }
    let report = coordinator.run().await;
    assert_eq!(report.completed.len(), 50);
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(1),
        "not 50 seconds one after another"
    );
}

/// An escalation kept for people is read in every inbox that shares the
/// store: a credential its error quoted (a database URL's password, a
/// bearer token) was kept word for word, and so was one in the query it
/// tried or the partial results it gathered. It is masked as a tool set
/// masks an internal error's; the caller's own escalation keeps its words.
#[tokio::test]
async fn an_escalation_kept_for_people_shows_no_credential_it_quoted() {
    use std::sync::Arc;
    use tool_envelope::retry::RetryPolicy;
    use tool_envelope::store::{EscalationState, MemoryStore, Store};

    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let outcome = RetryPolicy::never()
        .keep_escalations(Arc::clone(&store))
        .retry(|| async {
            Err::<(), _>(std::io::Error::other(
                "connect postgres://app:hunter2@db/orders: Authorization: Bearer tok-5531aa",
            ))
        })
        .await;
    let escalation = outcome.result.unwrap_err();
    assert!(escalation.envelope.message().contains("hunter2"));
    let report = Coordinator::new()
        .branch("orders", async {
            Err::<u32, _>(ErrorEnvelope::transient(
                "GET https://ops:s3cr3t-pw@api.example/v1 timed out",
            ))
        })
        // What the branch wrote besides its message: the query it tried
        // and what it had gathered, credentials in both.
        .branch("invoices", async {
            Err::<u32, _>(
                ErrorEnvelope::transient("the invoices API timed out")
                    .with_attempted_query("GET https://svc:qu3ry-pw@invoices.example/v2?page=3")
                    .with_partial_results(serde_json::json!({
                        "pages": [{"page": 1, "next": "https://invoices.example/v2?page=2&token=pag3-t0k"}],
                        "connection": {"dsn": "mysql://app:d5n-pw@db/inv", "api_key": "k3y-9931", "pin": 7291},
                        "credentials": {"github": "ghp-n3st3d"},
                        "token": ["t0k-in-a-list"],
                        "customer": "ACME",
                    })),
            )
        })
        .keep_escalations(Arc::clone(&store))
        .run()
        .await;
    assert_eq!(report.gaps.len(), 2);
    let open = store
        .escalations("", None, EscalationState::Open, 10)
        .await
        .unwrap();
    assert_eq!(open.len(), 3, "{open:?}");
    let kept = serde_json::to_string(&open.iter().map(|r| &r.envelope).collect::<Vec<_>>());
    let kept = kept.unwrap();
    for secret in [
        "hunter2",
        "tok-5531aa",
        "s3cr3t-pw",
        "qu3ry-pw",
        "pag3-t0k",
        "d5n-pw",
        "k3y-9931",
        "ghp-n3st3d",
        "t0k-in-a-list",
    ] {
        assert!(!kept.contains(secret), "{secret} in {kept}");
    }
    // The rest still says what was tried and gathered.
    for shown in [
        "connect postgres://",
        "invoices.example/v2?page=3",
        "ACME",
        "7291",
    ] {
        assert!(kept.contains(shown), "{shown} not in {kept}");
    }
}

/// A gap's escalation is kept as the branch ends: a branch that never
/// ends (or a run an outer timeout drops) loses none that ended before.
#[tokio::test(start_paused = true)]
async fn a_gap_is_kept_as_it_ends_though_another_branch_never_does() {
    use std::sync::Arc;
    use tool_envelope::store::{EscalationState, MemoryStore, Store};

    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let run = Coordinator::new()
        .branch("refunds", async {
            Err::<u32, _>(ErrorEnvelope::permission("Access denied to refunds"))
        })
        .branch(
            "orders",
            std::future::pending::<Result<u32, ErrorEnvelope>>(),
        )
        .keep_escalations(Arc::clone(&store))
        .run();
    let timed_out = tokio::time::timeout(Duration::from_secs(1), run).await;
    assert!(timed_out.is_err(), "the pending branch never ends");
    let open = store
        .escalations("", None, EscalationState::Open, 10)
        .await
        .unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].envelope["message"], "Access denied to refunds");
}
