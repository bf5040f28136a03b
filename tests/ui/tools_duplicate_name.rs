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

    /// Under `#[cfg]`, it may not take the name of one always compiled.
    #[cfg(all())]
    #[tool(read_only, name = "lookup")]
    fn lookup_when(&self, order: String) -> Result<u32, ErrorEnvelope> {
        let _ = order;
        Ok(3)
    }

    /// Two under `#[cfg]` may be alternatives.
    #[cfg(all())]
    #[tool(read_only, name = "find")]
    fn find(&self, order: String) -> Result<u32, ErrorEnvelope> {
        let _ = order;
        Ok(4)
    }

    /// The other one.
    #[cfg(not(all()))]
    #[tool(read_only, name = "find")]
    fn find_otherwise(&self, order: String) -> Result<u32, ErrorEnvelope> {
        let _ = order;
        Ok(5)
    }
}

fn main() {}
