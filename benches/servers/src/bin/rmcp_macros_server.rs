//! The trivial tools, served by rmcp's own `#[tool]` / `#[tool_router]` /
//! `#[tool_handler]`: the baseline of the dispatch benchmark.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

    /// Always fails.
    #[tool]
    async fn fail(&self, Parameters(args): Parameters<EchoArgs>) -> Result<Json<Echoed>, String> {
        Err(format!("could not echo {}", args.text))
    }
}

#[tool_handler(router = self.tool_router, name = "rmcp-macros", version = "0")]
impl ServerHandler for Server {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server {
        tool_router: Server::tool_router(),
    };
    server
        .serve(rmcp::transport::stdio())
        .await?
        .waiting()
        .await?;
    Ok(())
}
