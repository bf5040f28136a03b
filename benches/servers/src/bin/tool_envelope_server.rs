//! The same trivial tools, written with tool-envelope's `#[tool]` and served
//! by its `ToolSet` on rmcp.

use schemars::JsonSchema;
use serde::Serialize;
use tool_envelope::mcp::ToolSet;
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

#[tokio::main]
async fn main() -> std::io::Result<()> {
    ToolSet::new()
        .server_info("tool-envelope", "0")
        .tool::<echo>()
        .tool::<fail>()
        .serve_stdio()
        .await
}
