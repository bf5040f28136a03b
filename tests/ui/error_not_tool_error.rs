use tool_envelope::tool;

#[derive(Debug)]
struct DbError;

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("db error")
    }
}

/// Looks up an order.
#[tool]
fn lookup(order: String) -> Result<u32, DbError> {
    let _ = order;
    Err(DbError)
}

fn main() {}
