use tool_envelope::ToolError;

#[derive(Debug, thiserror::Error, ToolError)]
enum OrdersError {
    #[error("orders DB timed out")]
    #[tool_error(transient, retryable = "yes")]
    Timeout,
}

fn main() {}
