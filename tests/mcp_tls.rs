//! `McpClient` over TLS through nginx, in front of two replicas of the
//! example server that require a token: run by scripts/test-tls.sh, which
//! makes the CA and the certificate with openssl, and checks nginx's log.
//! They need nginx, so they are ignored by `cargo test`.
#![cfg(all(feature = "rmcp", feature = "client"))]

use futures_util::StreamExt;
use serde_json::json;
use tool_envelope::mcp::client::{McpClient, Roots};
use tool_envelope::{ErrorCategory, reasons};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run scripts/test-tls.sh"))
}

#[tokio::test]
#[ignore = "needs nginx with TLS: scripts/test-tls.sh"]
async fn a_thousand_calls_over_tls_with_the_ca_all_answer() {
    let ca = std::fs::read(env("TOOL_ENVELOPE_TLS_CA")).unwrap();
    let client = McpClient::connect(env("TOOL_ENVELOPE_TLS_URL"))
        .root_certificate_pem(ca)
        .bearer("reader-token")
        .await
        .expect("the client trusts the CA");
    let answered = futures_util::stream::iter(0..1000)
        .map(|i| {
            let client = client.clone();
            async move {
                let customer = if i % 2 == 0 { "C-1001" } else { "C-0000" };
                client
                    .call("lookup_orders", json!({"customer_id": customer}))
                    .await
                    .unwrap_or_else(|envelope| panic!("call {i} failed: {envelope:?}"))
            }
        })
        .buffer_unordered(16)
        .count()
        .await;
    assert_eq!(answered, 1000);
    assert_eq!(client.sent(), 1000);
    println!(
        "1,000 calls over TLS answered, on {} connection(s)",
        client.connections()
    );
}

#[tokio::test]
#[ignore = "needs nginx with TLS: scripts/test-tls.sh"]
async fn without_the_ca_every_call_fails_with_the_certificate_envelope() {
    for roots in [Roots::Platform, Roots::Webpki] {
        for _ in 0..10 {
            let refused = McpClient::connect(env("TOOL_ENVELOPE_TLS_URL"))
                .roots(roots)
                .bearer("reader-token")
                .await
                .unwrap_err();
            assert_eq!(refused.category(), ErrorCategory::Permission);
            assert_eq!(refused.reason(), Some(reasons::TLS_CERTIFICATE));
            assert!(!refused.is_retryable());
            assert!(
                refused.message().contains("UnknownIssuer"),
                "{}",
                refused.message()
            );
            assert!(!refused.to_string().contains("reader-token"));
        }
    }
    println!("20 connections without the CA: each a TLS_CERTIFICATE envelope");
}
