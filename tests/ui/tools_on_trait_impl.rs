use tool_envelope::{tool, tools, ErrorEnvelope};

pub trait Lookup {
    fn lookup(&self, order: String) -> Result<u32, ErrorEnvelope>;
}

pub struct Orders;

#[tools]
impl Lookup for Orders {
    /// Looks up an order.
    #[tool]
    fn lookup(&self, order: String) -> Result<u32, ErrorEnvelope> {
        let _ = order;
        Ok(1)
    }
}

fn main() {}
