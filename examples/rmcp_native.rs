//! An rmcp server of your own whose `#[tool]` returns error envelopes: the
//! README's first MCP example. The business function keeps this crate's
//! `#[tool]`, so its envelope carries the arguments it was called with.
//!
//! ```sh
//! cargo run --example rmcp_native --features rmcp   # over stdio
//! ```

use rmcp::handler::server::{
    router::tool::ToolRouter,
    wrapper::{Json, Parameters},
};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router, transport::stdio};
use tool_envelope::{ErrorEnvelope, Found, mcp::admit_envelopes};

#[tool_envelope::tool(name = "lookup_orders", read_only, local)]
async fn find_orders(customer_id: String) -> Result<Found<String>, ErrorEnvelope> {
    match customer_id.as_str() {
        "C-4821" => {
            Err(ErrorEnvelope::transient("Orders DB timed out").with_alternative("Retry later"))
        }
        _ => Ok(Found::none()), // found nothing: a success
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    customer_id: String,
}

#[derive(Clone)]
struct Orders {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Orders {
    /// Look up a customer's orders.
    #[tool]
    async fn lookup_orders(
        &self,
        Parameters(lookup): Parameters<Lookup>,
    ) -> Result<Json<Found<String>>, ErrorEnvelope> {
        find_orders(lookup.customer_id).await.map(Json)
    }
}

#[tool_handler(router = self.tool_router)] // serve the router below, envelopes admitted
impl ServerHandler for Orders {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    Orders {
        tool_router: admit_envelopes(Orders::tool_router()),
    }
    .serve(stdio())
    .await?
    .waiting()
    .await?;
    Ok(())
}
