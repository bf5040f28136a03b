use tool_envelope::{tool, ErrorEnvelope};

/// Purges the cache.
#[tool(read_only, destructive)]
fn purge_cache(region: String) -> Result<u32, ErrorEnvelope> {
    let _ = region;
    Ok(1)
}

fn main() {}
