use tool_envelope::tool;

/// Pings the orders service.
#[tool]
fn ping(host: String) {
    let _ = host;
}

fn main() {}
