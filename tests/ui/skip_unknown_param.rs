use tool_envelope::{tool, ErrorEnvelope};

pub struct Db;

/// Looks up an order.
#[tool(skip(dbb))]
fn lookup(db: &Db, order: String) -> Result<u32, ErrorEnvelope> {
    let _ = (db, order);
    Ok(1)
}

fn main() {}
