//! The MCP conformance suite's fixture tools, written with this crate's
//! `#[tool]` and served through rmcp: `scripts/test-conformance.sh` runs the
//! suite against it over Streamable HTTP.
//!
//! ```sh
//! cargo run --example conformance_server --features rmcp -- --http 127.0.0.1:3001
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_envelope::mcp::ToolSet;
use tool_envelope::{ErrorEnvelope, tool};

/// Returns a simple text response.
#[tool(read_only)]
fn test_simple_text() -> Result<String, ErrorEnvelope> {
    Ok("This is a simple text response for testing.".to_owned())
}

/// Always fails: the error comes back as an `isError` result the model can read.
#[tool(read_only)]
fn test_error_handling() -> Result<String, ErrorEnvelope> {
    Err(
        ErrorEnvelope::other("This tool intentionally returns an error for testing")
            .with_reason("INTENTIONAL_ERROR"),
    )
}

/// A postal address.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "address")]
struct Address {
    street: Option<String>,
    city: Option<String>,
}

/// Tool with JSON Schema 2020-12 features.
#[tool(read_only)]
fn json_schema_2020_12_tool(
    name: Option<String>,
    address: Option<Address>,
) -> Result<String, ErrorEnvelope> {
    Ok(format!("{name:?} at {address:?}"))
}

fn tools() -> ToolSet {
    ToolSet::new()
        .server_info("tool-envelope-conformance", env!("CARGO_PKG_VERSION"))
        .tool::<test_simple_text>()
        .tool::<test_error_handling>()
        .tool::<json_schema_2020_12_tool>()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => tools().serve_stdio().await,
        (Some("--http"), Some(address)) => {
            let listener = tokio::net::TcpListener::bind(&address).await?;
            eprintln!("listening on http://{}/mcp", listener.local_addr()?);
            tools().serve_http(listener).await
        }
        _ => {
            eprintln!("usage: conformance_server [--http HOST:PORT]");
            std::process::exit(2);
        }
    }
}
