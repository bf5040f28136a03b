//! The same trivial tools, written with tool-envelope's `#[tool]` and served
//! by its `ToolSet` on rmcp.
//!
//! Over stdio by default; `--http ADDR` serves stateless Streamable HTTP.

use std::sync::atomic::{AtomicU64, Ordering};

use schemars::JsonSchema;
use serde::Serialize;
use tool_envelope::mcp::{HttpOptions, ToolContext, ToolSet};
use tool_envelope::{ErrorEnvelope, tool};

/// The result.
#[derive(Serialize, JsonSchema)]
pub struct Echoed {
    /// The text.
    pub text: String,
}

/// Echo the text.
#[tool(read_only)]
async fn echo(
    /// The text to echo.
    text: String,
) -> Result<Echoed, ErrorEnvelope> {
    Ok(Echoed { text })
}

/// Always fails.
#[tool(read_only)]
async fn fail(
    /// The text to echo.
    text: String,
) -> Result<Echoed, ErrorEnvelope> {
    Err(ErrorEnvelope::transient(format!("could not echo {text}")))
}

static MIXED: AtomicU64 = AtomicU64::new(0);

/// Echoes three calls in four; the fourth fails.
#[tool(read_only)]
async fn mixed(
    /// The text to echo.
    text: String,
) -> Result<Echoed, ErrorEnvelope> {
    if MIXED.fetch_add(1, Ordering::Relaxed) % 4 == 3 {
        return Err(ErrorEnvelope::transient(format!("could not echo {text}")));
    }
    Ok(Echoed { text })
}

/// A name the user gives.
#[derive(serde::Deserialize, JsonSchema)]
pub struct Name {
    /// The name.
    pub name: String,
}

/// Asks the user's name, then echoes it: one round to ask (2026-07-28), one
/// with the answer.
#[tool(read_only)]
async fn ask(context: ToolContext) -> Result<Echoed, ErrorEnvelope> {
    let answer = context.elicit::<Name>("name", "What is your name?").await?;
    let text = answer.accepted().map_or_else(String::new, |name| name.name);
    Ok(Echoed { text })
}

/// The key the benchmark seals `requestState` with: fixed, so that a second
/// round can be replayed under load.
const STATE_KEY: &[u8; 32] = b"bench-request-state-key-32-bytes";

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let tools = ToolSet::new()
        .server_info("tool-envelope", "0")
        .tool::<echo>()
        .tool::<fail>()
        .tool::<mixed>()
        .tool::<ask>()
        .request_state_key(STATE_KEY, std::time::Duration::from_secs(24 * 3600));
    let mut args = std::env::args().skip(1);
    if let (Some(flag), Some(address)) = (args.next(), args.next()) {
        assert_eq!(flag, "--http", "usage: tool_envelope_server [--http ADDR]");
        let listener = tokio::net::TcpListener::bind(address).await?;
        eprintln!("listening on http://{}/mcp", listener.local_addr()?);
        return HttpOptions::new().stateless().serve(listener, tools).await;
    }
    tools.serve_stdio().await
}
