use serde::Serialize;
use tool_envelope::mcp::ToolSet;
use tool_envelope::{tool, ErrorEnvelope};

#[derive(Serialize)]
pub struct Filters {
    status: String,
}

/// Looks up orders.
#[tool]
fn lookup(filters: Filters) -> Result<u32, ErrorEnvelope> {
    let _ = filters;
    Ok(1)
}

fn main() {
    // Calling it directly is fine; serving it needs `Deserialize + JsonSchema`.
    let _ = lookup(Filters { status: "shipped".into() });
    let _ = ToolSet::new().tool::<lookup>();
}
