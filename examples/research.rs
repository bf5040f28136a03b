//! The coordinator: three research branches run concurrently, each recovering
//! locally. One provider rate-limits after 6 of 10 sources and fails all its
//! retries; the report holds the two complete branches and one gap with its
//! 6 sources — never presented as complete.
//!
//! Run it with `cargo run --example research`.

use std::time::Duration;

use serde::Serialize;
use tool_envelope::{
    ErrorEnvelope, Partial,
    coordinator::Coordinator,
    retry::{Outcome, RetryPolicy},
    tool,
};

/// A source gathered by the research tool.
#[derive(Debug, Clone, Serialize)]
struct Source {
    title: String,
}

/// Fetch `wanted` sources on `topic`. The provider rate-limits after `quota` sources.
#[tool(read_only)]
async fn research(
    topic: String,
    wanted: usize,
    quota: usize,
    sources: Partial<Source>,
) -> Result<Vec<Source>, ErrorEnvelope> {
    // Resume where an earlier attempt stopped.
    for i in sources.len()..wanted {
        if i >= quota {
            return Err(ErrorEnvelope::transient(format!(
                "Provider rate-limited after {i} sources"
            ))
            .with_reason("RATE_LIMITED")
            .with_alternative(
                "Continue the synthesis with the sources gathered, flagged as partial",
            )
            .with_alternative("Retry the remaining sources after the provider's quota resets"));
        }
        sources.push(Source {
            title: format!("{topic}: source {}", i + 1),
        });
    }
    Ok(sources.to_vec())
}

async fn branch(policy: &RetryPolicy, topic: &str, quota: usize) -> Outcome<Vec<Source>> {
    let sources = Partial::new();
    policy
        .retry(|| research(topic.into(), 10, quota, sources.clone()))
        .await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let policy = RetryPolicy::default().constant(Duration::from_millis(20));
    let report = Coordinator::new()
        .branch("eu-ai-act", branch(&policy, "EU AI Act timelines", 6))
        .branch(
            "us-executive-orders",
            branch(&policy, "US executive orders on AI", 100),
        )
        .branch("uk-ai-bill", branch(&policy, "UK AI bill", 100))
        .run()
        .await;

    println!("{report}\n");
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
