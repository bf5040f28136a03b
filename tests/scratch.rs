use tool_envelope::{tool, ErrorEnvelope, Partial, ToolResult};

/// Look up.
#[tool(skip(db), redact(token), idempotent)]
fn lookup(db: &Vec<u8>, id: String, token: String, p: Partial<u32>) -> Result<u32, std::io::Error> {
    let _ = (db, token);
    p.push(1);
    if id == "x" {
        return Err(std::io::Error::from(std::io::ErrorKind::TimedOut));
    }
    let n: u32 = id.parse().map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    Ok(n)
}

#[tool]
async fn alookup(id: String) -> std::io::Result<String> {
    if id.is_empty() { panic!("empty id") }
    Ok(id)
}

#[test]
fn works() {
    let r: ToolResult<u32> = lookup(&vec![], "x".into(), "sekret".into(), Partial::new());
    let e: ErrorEnvelope = r.unwrap_err();
    println!("{}", serde_json::to_string_pretty(&e).unwrap());
}

use tool_envelope::ToolError;
#[derive(Debug, thiserror::Error, ToolError)]
enum OrdersError {
    #[error("Connection to orders DB timed out after {0}s")]
    #[tool_error(transient, reason = "DB_TIMEOUT", alternatives("Retry against the read replica in {0}s"))]
    Timeout(u64),
    #[error("Refund of {amount} is above the {cap} cap")]
    #[tool_error(business, alternatives("Refund exceeds ${cap} policy cap — escalate to human", "Offer store credit {{literally}}"))]
    OverCap { amount: u64, cap: u64, #[tool_error(partial)] partial: serde_json::Value },
    #[error(transparent)]
    #[tool_error(transparent)]
    Io(#[from] std::io::Error),
}

#[test]
fn derive_works() {
    let e = OrdersError::OverCap { amount: 620, cap: 500, partial: serde_json::json!({"order_total": 620}) }.into_envelope();
    println!("{}", serde_json::to_string_pretty(&e).unwrap());
    let e = OrdersError::Timeout(5).into_envelope();
    println!("{}", serde_json::to_string_pretty(&e).unwrap());
    use std::error::Error;
    assert!(e.source().unwrap().downcast_ref::<OrdersError>().is_some());
    let e = OrdersError::from(std::io::Error::from(std::io::ErrorKind::PermissionDenied)).into_envelope();
    println!("{}", serde_json::to_string_pretty(&e).unwrap());
}
