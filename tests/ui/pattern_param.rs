use tool_envelope::{tool, ErrorEnvelope};

/// Adds a pair.
#[tool]
fn add((a, b): (i32, i32)) -> Result<i32, ErrorEnvelope> {
    Ok(a + b)
}

fn main() {}
