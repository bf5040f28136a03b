use tool_envelope::{tool, ErrorEnvelope, Partial};

pub struct Page;

/// Crawls a site.
#[tool]
fn crawl(site: String, pages: Partial<Page>) -> Result<u32, ErrorEnvelope> {
    let _ = (site, pages);
    Ok(1)
}

fn main() {}
