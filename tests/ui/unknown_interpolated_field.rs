use tool_envelope::ToolError;

#[derive(Debug, thiserror::Error, ToolError)]
enum RefundError {
    #[error("refund of {amount} above the cap")]
    #[tool_error(business, alternatives("Refund exceeds ${cap} policy cap — escalate to human", "Offer {amont} in store credit"))]
    OverCap { amount: u64 },
    #[error("bad order {0}")]
    #[tool_error(validation, alternatives("Check order {1}"))]
    BadOrder(String),
}

fn main() {}
