use tool_envelope::{tool, tools, ErrorEnvelope};

pub struct Counter {
    n: u32,
}

#[tools]
impl Counter {
    /// Adds one.
    #[tool]
    fn bump(&mut self, by: u32) -> Result<u32, ErrorEnvelope> {
        self.n += by;
        Ok(self.n)
    }
}

fn main() {}
