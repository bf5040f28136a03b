//! Attributes on a tool reach the code that needs them: a lint level reaches
//! the body wherever it is generated, an expectation is met once, and a `cfg`
//! removes every generated item with the function. Warnings are denied.
#![deny(warnings, missing_docs)]

use tool_envelope::mcp::ToolSet;
use tool_envelope::{tool, tools, ErrorEnvelope};

/// A lint allowed on the tool is allowed in its body.
#[tool]
#[allow(unused_variables)]
pub fn allowed(order: String) -> Result<u32, ErrorEnvelope> {
    let unused = order.len();
    Ok(1)
}

/// A lint expected on the tool is met by its body, and only there.
#[tool]
#[expect(unused_variables)]
pub async fn expected(order: String) -> Result<u32, ErrorEnvelope> {
    let unused = order.len();
    Ok(1)
}

/// Compiled out: nothing of it is left to fail.
#[tool]
#[cfg(any())]
pub fn compiled_out(order: NotAType) -> Result<u32, ErrorEnvelope> {
    Ok(order.missing())
}

/// Shared state.
pub struct Shop;

#[tools]
impl Shop {
    /// Served.
    #[tool(read_only)]
    pub fn open(&self) -> Result<bool, ErrorEnvelope> {
        Ok(true)
    }

    /// Compiled out, and so not served.
    #[tool(read_only)]
    #[cfg(any())]
    pub fn closed(&self, reason: NotAType) -> Result<bool, ErrorEnvelope> {
        Ok(reason.missing())
    }
}

/// Shared state of a block compiled out (a `cfg` after `#[tools]` is
/// applied before it, as after `#[tool]`).
pub struct Closed;

#[tools]
#[cfg(any())]
impl Closed {
    /// Compiled out with its block, and its list of tools with it.
    #[tool(read_only)]
    pub fn open(&self) -> Result<bool, ErrorEnvelope> {
        Ok(false)
    }
}

/// A method that names its receiver's lifetime `'_`.
pub struct Stock;

#[tools]
impl Stock {
    /// Counts an item.
    #[tool(read_only)]
    pub async fn stock(&'_ self, sku: String) -> Result<usize, ErrorEnvelope> {
        Ok(sku.len())
    }
}

fn main() {
    let tools = ToolSet::new()
        .tool::<allowed>()
        .tool::<expected>()
        .provider(Shop)
        .provider(Stock);
    let names: Vec<&str> = tools.list().iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["allowed", "expected", "open", "stock"]);
}
