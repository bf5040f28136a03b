//! The trivial tools, served by rmcp's own `#[tool]` / `#[tool_router]` /
//! `#[tool_handler]`: the baseline of the dispatch and load benchmarks, and
//! the same server with a tool that returns an error envelope
//! (`fail_envelope`) next to the one that returns a `String` error (`fail`).
//!
//! Over stdio by default; `--http ADDR` serves stateless Streamable HTTP.

use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_envelope::ErrorEnvelope;
use tool_envelope::mcp::{HttpOptions, admit_envelopes};

/// The arguments.
#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// The text to echo.
    pub text: String,
}

/// The result.
#[derive(Serialize, JsonSchema)]
pub struct Echoed {
    /// The text.
    pub text: String,
}

/// The business function of `fail_envelope`, with this crate's `#[tool]`:
/// its envelope carries the arguments.
#[tool_envelope::tool(name = "fail_envelope", read_only, local)]
async fn refuse(text: String) -> Result<Echoed, ErrorEnvelope> {
    Err(ErrorEnvelope::transient(format!("could not echo {text}")))
}

static MIXED: AtomicU64 = AtomicU64::new(0);

#[derive(Clone)]
pub struct Server {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Server {
    /// Echo the text.
    #[tool]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> Json<Echoed> {
        Json(Echoed { text: args.text })
    }

    /// Always fails, with a `String`.
    #[tool]
    async fn fail(&self, Parameters(args): Parameters<EchoArgs>) -> Result<Json<Echoed>, String> {
        Err(format!("could not echo {}", args.text))
    }

    /// Always fails, with an error envelope.
    #[tool]
    async fn fail_envelope(
        &self,
        Parameters(args): Parameters<EchoArgs>,
    ) -> Result<Json<Echoed>, ErrorEnvelope> {
        refuse(args.text).await.map(Json)
    }

    /// Echoes three calls in four; the fourth fails with an envelope.
    #[tool]
    async fn mixed(
        &self,
        Parameters(args): Parameters<EchoArgs>,
    ) -> Result<Json<Echoed>, ErrorEnvelope> {
        if MIXED.fetch_add(1, Ordering::Relaxed) % 4 == 3 {
            return refuse(args.text).await.map(Json);
        }
        Ok(Json(Echoed { text: args.text }))
    }
}

#[tool_handler(router = self.tool_router, name = "rmcp-macros", version = "0")]
impl ServerHandler for Server {}

fn server() -> Server {
    Server {
        tool_router: admit_envelopes(Server::tool_router()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    if let (Some(flag), Some(address)) = (args.next(), args.next()) {
        assert_eq!(flag, "--http", "usage: rmcp_macros_server [--http ADDR]");
        let listener = tokio::net::TcpListener::bind(address).await?;
        eprintln!("listening on http://{}/mcp", listener.local_addr()?);
        // Stateless: a server per request, its router built once and cloned.
        let server = server();
        HttpOptions::new()
            .stateless()
            .serve(listener, move || server.clone())
            .await?;
        return Ok(());
    }
    server()
        .serve(rmcp::transport::stdio())
        .await?
        .waiting()
        .await?;
    Ok(())
}
