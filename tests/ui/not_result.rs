use tool_envelope::tool;

/// Counts orders.
#[tool]
fn count_orders(customer_id: String) -> u32 {
    customer_id.len() as u32
}

fn main() {}
