//! An agent-side harness with no model: it calls the example server's tools
//! over MCP, recovers locally what is safe to repeat, prints each routing
//! decision, and ends with a coordinator's report — the scenarios of the
//! README's wire format, seen from the caller. The server runs with
//! `--no-retry`, so every transient fault reaches the agent, whose loop
//! decides.
//!
//! A refund over the server's $500 cap needs a person's approval. With
//! `--approve` or `--decline`, the agent answers the server's question (an
//! elicitation) through a handler, as a person at the keyboard would, and
//! prints the question; without either, it has no handler, and the server's
//! guard blocks the refund. A server that checks tokens
//! (`mcp_server --require-token`) asks no question: the refund waits for an
//! approver who signs in to its inbox, whatever the agent answers, and the
//! agent prints the ticket it waits on.
//!
//! Given an `http://` or `https://` URL instead of a path, it calls a
//! deployed server: `--ca-cert FILE` trusts the CA that issued its
//! certificate, `--bearer TOKEN` sends a token.
//!
//! ```sh
//! cargo build --example mcp_server --features rmcp
//! cargo run --example agent --features client -- target/debug/examples/mcp_server --approve
//! cargo run --example agent --features client -- https://tools.example.com/mcp --ca-cert ca.pem --bearer "$TOKEN"
//! ```

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Value, json};
use tool_envelope::coordinator::Coordinator;
use tool_envelope::mcp::client::McpClient;
use tool_envelope::retry::{Outcome, RetryPolicy};

/// The calls the agent makes: what it wants, which tool, with what.
const CALLS: &[(&str, &str, &str)] = &[
    (
        "orders of a new customer",
        "lookup_orders",
        r#"{"customer_id": "C-0000"}"#,
    ),
    (
        "orders of C-1001",
        "lookup_orders",
        r#"{"customer_id": "C-1001"}"#,
    ),
    (
        "orders while the DB is down",
        "lookup_orders",
        r#"{"customer_id": "C-4821"}"#,
    ),
    ("stock of SKU-1", "stock_level", r#"{"sku": "SKU-1"}"#),
    (
        "a $620 refund",
        "process_refund",
        r#"{"order": "O-77", "amount": 620}"#,
    ),
    ("the ENG payroll", "read_payroll", r#"{"dept": "ENG"}"#),
    (
        "research on the EU AI Act",
        "research",
        r#"{"topic": "EU AI Act"}"#,
    ),
];

/// What the agent does with an outcome.
fn route(outcome: &Outcome<Value>) -> String {
    match &outcome.result {
        Ok(value) if value["empty"] == true => "an empty answer is an answer: nothing found".into(),
        Ok(_) if outcome.stats.attempts > 1 => {
            format!(
                "recovered locally after {} attempts",
                outcome.stats.attempts
            )
        }
        Ok(_) => "answered".into(),
        Err(escalation) => {
            let envelope = &escalation.envelope;
            let mut line = format!(
                "escalated ({}) after {} attempt(s): {} — {}",
                escalation.reason,
                escalation.attempts,
                envelope.category(),
                envelope.message()
            );
            if let Some(partial) = envelope.partial_results().and_then(Value::as_array) {
                line.push_str(&format!("; {} partial results kept", partial.len()));
            }
            if let Some(next) = envelope.alternatives().first() {
                line.push_str(&format!("; next: {next}"));
            }
            if let Some(ticket) = &escalation.ticket {
                // Nothing this agent sends decides it: it waits for a person.
                line.push_str(&format!(
                    "\n{:<44} ticket {} waits for an approver with `{}`; calling again reads the outcome",
                    "", ticket.id, ticket.approvers
                ));
            }
            line
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: agent (PATH_TO_MCP_SERVER | URL) [--approve|--decline] [--ca-cert FILE] [--bearer TOKEN] \
                 (cargo build --example mcp_server --features rmcp)";
    let mut args = std::env::args().skip(1);
    let server = args.next().ok_or(usage)?;
    let (mut answer, mut ca_cert, mut bearer) = (None, None, None);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--approve" => answer = Some(ElicitationAction::Accept),
            "--decline" => answer = Some(ElicitationAction::Decline),
            "--ca-cert" => ca_cert = Some(std::fs::read(args.next().ok_or(usage)?)?),
            "--bearer" => bearer = Some(args.next().ok_or(usage)?),
            other => return Err(format!("unknown flag {other}; {usage}").into()),
        }
    }
    let mut connect = if server.starts_with("http://") || server.starts_with("https://") {
        // A deployed server: its own retry settings stand.
        let mut connect = McpClient::connect(server);
        if let Some(pem) = ca_cert {
            connect = connect.root_certificate_pem(pem);
        }
        if let Some(token) = bearer {
            connect = connect.bearer(token);
        }
        connect
    } else {
        if ca_cert.is_some() || bearer.is_some() {
            return Err("--ca-cert and --bearer are for a server reached by URL".into());
        }
        McpClient::spawn(move || {
            let mut command = tokio::process::Command::new(&server);
            command.arg("--no-retry"); // recovery is the agent's
            command
        })
    };
    if let Some(action) = answer {
        // The person at the keyboard: shown the question, answering as the flag says.
        connect = connect.on_elicitation(move |question: ElicitRequestParams| {
            let question = serde_json::to_value(&question).unwrap_or_default();
            let text = question["message"]
                .as_str()
                .unwrap_or_default()
                .replace('\n', " ");
            println!(
                "{:<28} {:<15} ? {text} → {action:?}",
                "  the server asks", ""
            );
            let answer = match action {
                ElicitationAction::Accept => {
                    ElicitResult::new(action.clone()).with_content(json!({"approver": "agent"}))
                }
                _ => ElicitResult::new(action.clone()),
            };
            async move { answer }
        });
    }
    let client = connect.await?;
    println!("speaking MCP {}", client.protocol_version().await?);
    let policy = RetryPolicy::default()
        .max_attempts(3)
        .exponential(Duration::from_millis(20), Duration::from_millis(200));

    for (want, tool, arguments) in CALLS {
        let arguments: Value = serde_json::from_str(arguments)?;
        let outcome = policy.retry(|| client.call(tool, arguments.clone())).await;
        println!("{want:<28} {tool:<15} → {}", route(&outcome));
    }

    // The coordinator: every branch runs; what could not be done is a gap.
    let report = Coordinator::new()
        .branch(
            "orders",
            policy.retry(|| client.call("lookup_orders", json!({"customer_id": "C-1001"}))),
        )
        .branch(
            "stock",
            policy.retry(|| client.call("stock_level", json!({"sku": "SKU-7"}))),
        )
        .branch(
            "payroll",
            policy.retry(|| client.call("read_payroll", json!({"dept": "ENG"}))),
        )
        .branch(
            "research",
            policy.retry(|| client.call("research", json!({"topic": "EU AI Act"}))),
        )
        .run()
        .await;
    println!(
        "\ncoordinator: {} completed, {} gaps",
        report.completed.len(),
        report.gaps.len()
    );
    for completed in &report.completed {
        println!("  done  {}", completed.branch);
    }
    for gap in &report.gaps {
        println!(
            "  gap   {}: {} ({}), tried {}",
            gap.branch,
            gap.envelope().message(),
            gap.escalation.reason,
            gap.envelope().attempted_query().unwrap_or(&Value::Null)
        );
    }
    Ok(())
}
