//! The seed's tools, served to any MCP client through rmcp:
//!
//! - `lookup_orders`: a valid empty result for `C-0000`, a transient timeout
//!   for `C-4821` (retried locally, then escalated);
//! - `stock_level`: a flaky service, recovered locally on the second attempt;
//! - `process_refund`: refunds above $500 are blocked by a guard and routed to
//!   a human;
//! - `read_payroll`: a permission error with its alternatives;
//! - `research`: gathers 6 of 10 sources before the provider rate-limits, and
//!   escalates with the 6 attached.
//!
//! Over stdio by default; over Streamable HTTP at `/mcp` with
//! `--http 127.0.0.1:PORT` (port 0 picks one; the address is printed on stderr).
//!
//! ```sh
//! cargo run --example mcp_server --features rmcp
//! cargo run --example mcp_server --features rmcp -- --http 127.0.0.1:8080
//! ```

mod tools;

use tools::tools;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => tools().serve_stdio().await,
        (Some("--http"), Some(address)) => {
            let listener = tokio::net::TcpListener::bind(&address).await?;
            eprintln!("listening on http://{}/mcp", listener.local_addr()?);
            tools().serve_http(listener).await
        }
        _ => {
            eprintln!("usage: mcp_server [--http HOST:PORT]");
            std::process::exit(2);
        }
    }
}
