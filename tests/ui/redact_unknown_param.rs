use tool_envelope::{tool, ErrorEnvelope};

/// Calls the payments API.
#[tool(redact(api_key))]
fn charge(amount: u64, token: String) -> Result<u32, ErrorEnvelope> {
    let _ = (amount, token);
    Ok(1)
}

fn main() {}
