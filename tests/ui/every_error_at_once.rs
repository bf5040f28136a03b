use tool_envelope::{tool, ErrorEnvelope, Partial};

/// Everything wrong at once: each problem is reported, not only the first.
#[tool(skip(missing), nmae = "x", redact(also_missing))]
const fn broken((a, b): (u8, u8), p: Partial<u8>, q: Partial<u8>) -> Result<u8, ErrorEnvelope> {
    let _ = (p, q);
    Ok(a + b)
}

fn main() {}
