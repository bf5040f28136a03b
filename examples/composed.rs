//! A tool set inside a server of your own: this crate's tools (with their
//! envelopes, retries, guards and request context) next to rmcp's own
//! `#[tool]`s, as one server — the README's composition example. The same
//! server can hold prompts, resources and completions; `full_server` shows
//! them all.
//!
//! ```sh
//! cargo run --example composed --features rmcp -- 127.0.0.1:8080   # Streamable HTTP at /mcp
//! ```

#![allow(deprecated)] // MCP logging: deprecated by rmcp, current in 2025-11-25
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{ServerCapabilities, ServerConfig, SetLevelRequestParams};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, service::RequestContext, tool, tool_handler, tool_router,
};
use tool_envelope::{
    ErrorEnvelope,
    mcp::{HttpOptions, ToolContext, ToolSet, admit_envelopes},
};

/// Export a customer's orders, page by page, reporting progress.
#[tool_envelope::tool(read_only)]
async fn export_orders(context: ToolContext, customer_id: String) -> Result<u32, ErrorEnvelope> {
    for page in 1..=3 {
        context
            .progress(f64::from(page), Some(3.0), Some("exporting"))
            .await;
    }
    context
        .info(format!("exported 3 pages for {customer_id}"))
        .await;
    Ok(3)
}

#[derive(Clone)]
struct Server {
    tool_router: ToolRouter<Self>,
    tools: ToolSet,
}

#[tool_router]
impl Server {
    fn new(tools: ToolSet) -> Self {
        Server {
            tool_router: admit_envelopes(Self::tool_router()) + tools.router(),
            tools,
        }
    }

    /// The server's version: a tool of rmcp's own.
    #[tool]
    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_owned()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
                .enable_tools()
                .build(),
        )
    }

    // The tools' log messages follow the level the client sets.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tools.set_log_level(request.level.into());
        Ok(())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let tools = ToolSet::new().tool::<export_orders>();
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(address).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    // A server per session, each with its own log level.
    HttpOptions::new()
        .serve(listener, move || Server::new(tools.for_session()))
        .await
}
