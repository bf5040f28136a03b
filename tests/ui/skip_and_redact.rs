use tool_envelope::{tool, ErrorEnvelope};

/// Calls the payments API.
#[tool(skip(token), redact(token))]
fn charge(amount: u64, token: String) -> Result<u32, ErrorEnvelope> {
    let _ = (amount, token);
    Ok(1)
}

fn main() {}
