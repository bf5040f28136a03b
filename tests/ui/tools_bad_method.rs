use tool_envelope::{tool, tools, ErrorEnvelope};

pub struct Orders;

#[tools]
impl Orders {
    /// Looks an order up: each mistake is reported once.
    #[tool(read_only, retries = 3, skip(missing))]
    fn lookup(&self, id: String) -> Result<String, ErrorEnvelope> {
        Ok(id)
    }

    /// Fine.
    #[tool(read_only)]
    fn count(&self) -> Result<u32, ErrorEnvelope> {
        Ok(0)
    }
}

fn main() {}
