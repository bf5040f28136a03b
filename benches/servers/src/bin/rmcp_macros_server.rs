//! The trivial tools, served by rmcp's own `#[tool]` / `#[tool_router]` /
//! `#[tool_handler]`: the baseline of the dispatch and load benchmarks, and
//! the same server with a tool that returns an error envelope
//! (`fail_envelope`) next to the one that returns a `String` error (`fail`),
//! and `ask`, a question to the user in two rounds (2026-07-28) written with
//! rmcp alone: what a question costs rmcp itself (BENCHMARKS.md, figure 10).
//!
//! Over stdio by default; `--http ADDR` serves stateless Streamable HTTP.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, RequestStateCodec, SealOptions,
};
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

/// A name the user gives.
#[derive(Deserialize, JsonSchema)]
pub struct Name {
    /// The name.
    pub name: String,
}

/// What `ask`'s first round seals into `requestState`: the key it asked.
#[derive(Serialize, Deserialize)]
struct Asked {
    asked: String,
}

/// The key `requestState` is sealed with: the one `tool_envelope_server`
/// uses, fixed so that a second round can be replayed under load.
const STATE_KEY: &[u8; 32] = b"bench-request-state-key-32-bytes";

/// The codec and the form, made once, as an rmcp server would keep them.
static CODEC: LazyLock<RequestStateCodec> =
    LazyLock::new(|| RequestStateCodec::try_new(STATE_KEY.to_vec()).expect("a 32-byte key"));
static FORM: LazyLock<ElicitationSchema> =
    LazyLock::new(|| ElicitationSchema::from_type::<Name>().expect("a form's schema"));

/// The state is bound to the tool it was sealed for, and lasts a day.
fn seal_options() -> SealOptions<'static> {
    SealOptions::new()
        .associated_data(b"ask")
        .ttl(Duration::from_secs(24 * 3600))
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

    /// Asks the user's name, then echoes it: one round to ask, one with the
    /// answer and the sealed state sent back.
    #[tool]
    async fn ask(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(state) = state else {
            let question = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: "What is your name?".into(),
                requested_schema: FORM.clone(),
            };
            let mut requests = InputRequests::new();
            requests.insert(
                "name".into(),
                InputRequest::Elicitation(ElicitRequest::new(question)),
            );
            let asked = Asked {
                asked: "name".into(),
            };
            let sealed = CODEC
                .seal_json_with(&asked, &seal_options())
                .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
            return Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into());
        };
        let asked: Asked = CODEC
            .open_json_with(&state, b"ask")
            .map_err(|_| ErrorData::invalid_params("requestState does not open", None))?;
        let answer = responses
            .as_ref()
            .and_then(|responses| responses.get(&asked.asked))
            .filter(|answer| answer["action"] == "accept")
            .map(|answer| Name::deserialize(&answer["content"]))
            .transpose()
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let text = answer.map_or_else(String::new, |name| name.name);
        let echoed = serde_json::to_value(Echoed { text })
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        Ok(CallToolResult::structured(echoed).into())
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
