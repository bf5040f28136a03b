use tool_envelope::{tool, tools, ErrorEnvelope};

pub struct Orders;

#[tools]
impl Orders {
    /// Looks up an order.
    #[tool(read_only)]
    fn lookup(&self, order: String) -> Result<u32, ErrorEnvelope> {
        let _ = order;
        Ok(1)
    }

    /// Looks up an order, the other way.
    #[tool(read_only, name = "lookup")]
    fn lookup_again(&self, order: String) -> Result<u32, ErrorEnvelope> {
        let _ = order;
        Ok(2)
    }
}

fn main() {}
