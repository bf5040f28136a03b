use tool_envelope::ToolError;

#[derive(Debug, thiserror::Error, ToolError)]
enum OrdersError {
    #[error("orders DB timed out")]
    #[tool_error(transient, alternative("Retry later"))]
    Timeout,
    #[error("access denied")]
    #[tool_error(permission, business)]
    Denied,
    #[error("bad reason")]
    #[tool_error(other, reason = "db-timeout")]
    Odd,
}

fn main() {}
