use tool_envelope::{tool, ErrorEnvelope, Partial};

/// Crawls a site.
#[tool]
fn crawl(site: String, pages: &Partial<String>) -> Result<u32, ErrorEnvelope> {
    let _ = (site, pages);
    Ok(1)
}

fn main() {}
