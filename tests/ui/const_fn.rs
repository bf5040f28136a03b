use tool_envelope::{tool, ErrorEnvelope};

/// The answer.
#[tool]
const fn answer(question: u32) -> Result<u32, ErrorEnvelope> {
    let _ = question;
    Ok(42)
}

fn main() {}
