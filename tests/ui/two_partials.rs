use tool_envelope::{tool, ErrorEnvelope, Partial};

/// Researches a topic.
#[tool]
fn research(topic: String, sources: Partial<String>, notes: Partial<String>) -> Result<u32, ErrorEnvelope> {
    let _ = (topic, sources, notes);
    Ok(1)
}

fn main() {}
