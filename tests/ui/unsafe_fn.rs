use tool_envelope::{tool, ErrorEnvelope};

/// Reads raw memory.
#[tool]
unsafe fn peek(address: usize) -> Result<u8, ErrorEnvelope> {
    let _ = address;
    Ok(0)
}

fn main() {}
