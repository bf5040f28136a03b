use tool_envelope::ToolError;

#[derive(Debug, thiserror::Error, ToolError)]
enum OrdersError {
    #[error("orders DB timed out")]
    #[tool_error(transient)]
    Timeout,
    #[error("order {0} not found")]
    NotFound(String),
    #[error("refund above cap")]
    #[tool_error(retryable = false)]
    OverCap,
}

fn main() {}
