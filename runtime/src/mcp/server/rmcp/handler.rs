//! A tool set as an rmcp server: the `ServerHandler`, a tool set's tools as
//! an rmcp router, and serving over stdio.

use std::borrow::Cow;
use std::io;
use std::pin::pin;
use std::sync::Arc;

use futures_util::future::{Either, select};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
    CreateTaskResult, CustomRequest, CustomResult, ErrorCode, GetTaskParams, GetTaskResult,
    Implementation, InitializeRequestParams, InitializeResult, InputResponses, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::TaskExit;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::caller::Caller;
use crate::mcp::context::ToolContext;
use crate::mcp::server::held;
use crate::mcp::server::live::LiveRequest;
use crate::mcp::server::rmcp::convert::{rmcp_tools, to_error_data, to_rmcp_result};
use crate::mcp::server::rounds::{Asking, has_rounds};
use crate::mcp::server::tasks::{Kept, TASK_TTL, TaskSupport, Tasks};
use crate::mcp::server::toolset::ToolSet;

const INSTRUCTIONS: &str = "Tool failures come back as isError results whose structuredContent is an error envelope: \
     errorCategory and isRetryable say what to do next; attempted_query, partial_results and \
     alternatives carry the context.";

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
/// A tool set is an rmcp server: it lists its tools and dispatches
/// `tools/call`, with tool failures as `isError` results carrying envelopes
/// and an unknown tool as a `-32602` protocol error; it answers
/// `logging/setLevel` for the log messages its tools send.
///
/// A server of your own can delegate to it — call these methods on the tool
/// set from yours — or take its tools as an rmcp router with
/// [`ToolSet::router`].
impl ServerHandler for ToolSet {
    fn get_info(&self) -> ServerConfig {
        #[allow(deprecated)]
        let builder = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools();
        let capabilities = match self.task_runner() {
            Some(_) => builder.enable_tasks().build(),
            None => builder.build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.name().unwrap_or("tool-envelope"),
                self.version().unwrap_or(env!("CARGO_PKG_VERSION")),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = ListToolsResult::with_all_items(rmcp_tools(self).to_vec());
        // Cache hints are 2026-07-28's (SEP-2549); earlier revisions do not define them.
        if !has_rounds(&context) {
            return Ok(tools);
        }
        let (ttl, scope) = self.list_cache_hint();
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        Ok(tools.with_ttl_ms(ttl_ms).with_cache_scope(scope))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        rmcp_tools(self)
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    // Not an `async fn`: the call's own future is the one rmcp spawns
    // for the request, not held inside a second one (figure 3).
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        let round = Round {
            responses: request.input_responses,
            state: request.request_state,
        };
        self.call_in_request(request.name, arguments, context, round)
    }

    /// `logging/setLevel`: the session's level, on 2025-11-25. A request
    /// that speaks 2026-07-28, which removed it, finds no such method.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if has_rounds(&context) {
            return Err(not_found("logging/setLevel"));
        }
        self.set_log_level(request.level.into());
        Ok(())
    }

    /// `initialize`, for the revisions that have it; one sent as 2026-07-28
    /// (its `_meta` says so), which removed it, finds no such method. One
    /// that merely *asks* for 2026-07-28 in its params is a 2025-11-25
    /// client negotiating, as rmcp's own does, and gets the latest revision
    /// with a handshake.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // Over HTTP, the version header says it too: a client sends it only
        // once it has negotiated, so on `initialize` it is a 2026-07-28 one.
        let stateless = ProtocolVersion::V_2026_07_28;
        let header = (context.extensions.get::<axum::http::request::Parts>())
            .and_then(|parts| parts.headers.get("mcp-protocol-version")?.to_str().ok())
            .is_some_and(|version| version >= stateless.as_str());
        if header || (context.meta.protocol_version()).is_some_and(|version| version >= stateless) {
            return Err(not_found("initialize"));
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    /// The revisions served: [`ToolSet::protocol_versions`], every one rmcp knows
    /// unless set.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        self.served_revisions()
    }

    /// `tasks/get`: a task's state, and once it is done its result — for
    /// the caller that made it; to any other, an unknown task.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let tasks = self.task_runner().ok_or_else(no_tasks)?;
        let caller = crate::mcp::server::live::caller(&context);
        let task = tasks
            .get(&request.task_id, caller.as_deref(), self.kept_in())
            .await?;
        Ok(GetTaskResult::new(task))
    }

    /// `tasks/update`: the answers to a task's questions, from the caller
    /// that made it.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.task_runner().ok_or_else(no_tasks)?;
        let caller = crate::mcp::server::live::caller(&context);
        let store = self.kept_in();
        tasks
            .update(
                &request.task_id,
                caller.as_deref(),
                request.input_responses,
                store,
            )
            .await
    }

    /// `tasks/cancel`: the task's call is stopped at its next `.await` —
    /// when the caller that made it asks.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.task_runner().ok_or_else(no_tasks)?;
        let caller = crate::mcp::server::live::caller(&context);
        tasks
            .cancel(&request.task_id, caller.as_deref(), self.kept_in())
            .await
    }

    /// A request rmcp could not read as one of MCP's: a known method whose
    /// params do not fit MCP's schema — `tools/call` with `arguments` that
    /// are not an object — is "invalid params" (`-32602`), saying what was
    /// wrong without echoing it; anything else is "method not found".
    ///
    /// On 2026-07-28, the methods that revision removed (`initialize`,
    /// `ping`, `logging/setLevel`) are not found, whatever their params.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let removed = has_rounds(&context) && REMOVED.contains(&request.method.as_str());
        Err(match removed {
            true => not_found(&request.method),
            false => invalid_request(&request.method, request.params.as_ref()),
        })
    }
}

/// The error of a `tasks/*` method on a set that runs no tasks.
fn no_tasks() -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        "this server runs no tasks",
        None,
    )
}

/// The methods MCP 2026-07-28 removed that a tool set answers before it.
const REMOVED: &[&str] = &["initialize", "ping", "logging/setLevel"];

/// The protocol error of a method this server does not have.
fn not_found(method: &str) -> ErrorData {
    let method = crate::limits::text_for_wire(method, 256);
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("unknown method `{method}`"),
        None,
    )
}

/// The protocol error of a request rmcp could not read.
fn invalid_request(method: &str, params: Option<&Value>) -> ErrorData {
    const KNOWN: &[&str] = &[
        "tools/call",
        "tools/list",
        "initialize",
        "ping",
        "logging/setLevel",
    ];
    if !KNOWN.contains(&method) {
        return not_found(method);
    }
    let arguments = params.and_then(|params| params.get("arguments"));
    let message = match arguments {
        Some(arguments)
            if method == "tools/call" && !arguments.is_object() && !arguments.is_null() =>
        {
            format!(
                "invalid params of `tools/call`: `arguments` must be a JSON object, not {}",
                crate::mcp::violations::kind(arguments)
            )
        }
        _ => format!("invalid params of `{method}`: they do not fit MCP's schema"),
    };
    ErrorData::new(ErrorCode::INVALID_PARAMS, message, None)
}

/// What a request carries from the round before it (2026-07-28).
struct Round {
    responses: Option<InputResponses>,
    state: Option<String>,
}

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
impl ToolSet {
    /// Calls a tool for an rmcp request: the tool gets the request's
    /// context, and the result or protocol error comes back in rmcp's shape.
    ///
    /// On 2026-07-28, a question of the tool's without an answer yet stops
    /// the call, which answers with the questions and a sealed state.
    /// Not an `async fn`, whose future would hold each argument twice: this
    /// is the future of every served call.
    #[allow(clippy::manual_async_fn, reason = "see above")]
    fn call_in_request(
        &self,
        name: Cow<'static, str>,
        arguments: Value,
        context: RequestContext<RoleServer>,
        round: Round,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        async move {
            if let Some(tasks) = self.task_runner()
                && let Some(definition) = self.get(&name)
            {
                let declared = (context.client_capabilities()).is_some_and(|c| c.supports_tasks());
                match (tasks.support(definition), declared) {
                    (TaskSupport::Never, _) | (TaskSupport::Optional, false) => {}
                    (TaskSupport::Optional | TaskSupport::Required, true) => {
                        // Boxed: a rare way, kept out of every call's future.
                        let task = Box::pin(self.spawn_task(tasks, &name, arguments, &context));
                        return Ok(task.await);
                    }
                    (TaskSupport::Required, false) => {
                        let tasks = ClientCapabilities::builder().enable_tasks().build();
                        return Err(ErrorData::missing_required_client_capability(tasks));
                    }
                }
            }
            let seal = self.seal();
            let caller = crate::mcp::server::live::caller(&context);
            let repeatable = round.state.is_some()
                && (self.get(&name)).is_some_and(|tool| tool.annotations.idempotent_hint);
            let asking = Asking::open(
                seal,
                &context,
                (self.service(), &name),
                &arguments,
                caller.as_deref(),
                (round.responses, round.state),
                self.ask_timeout_of(),
                // Safe to repeat, as the retry decision reads it (`Facts`): a
                // read-only tool is idempotent unless it says otherwise. Read
                // only for a round that carries a state, the one it is for.
                repeatable,
            )
            .await?;
            let live = Arc::new(LiveRequest::new(
                context,
                name,
                self.log_threshold(),
                asking,
            ));
            let name = live.tool();
            let context = ToolContext::live(Arc::clone(&live));
            // The arguments are kept to bind the next round's state to them.
            let bound = live.asking.stops().then(|| arguments.clone());
            let call = self.served(name, arguments, context);
            match select(pin!(call), pin!(live.asking.stopped())).await {
                Either::Left((Ok(result), _)) => Ok(to_rmcp_result(result).into()),
                Either::Left((Err(error), _)) => Err(to_error_data(error)),
                Either::Right(((), _)) => {
                    let arguments = bound.unwrap_or(Value::Null);
                    let call = (self.service(), name);
                    Ok(live
                        .asking
                        .answer(seal, call, &arguments, caller.as_deref())?
                        .into())
                }
            }
        }
    }

    /// Runs the call as a task of `tasks`, and answers with the task — or,
    /// when the server or the caller runs as many tasks as it may, with a
    /// `transient` envelope, reason `TOO_MANY_TASKS`: nothing ran.
    async fn spawn_task(
        &self,
        tasks: &Tasks,
        name: &str,
        arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let tools = self.clone();
        let caller = crate::mcp::server::live::caller(context);
        let subject = caller.as_deref().map(Caller::subject);
        let kept = self.store_ref().map(|store| Kept {
            store: Arc::clone(store),
            // Taken over, should this replica stop, by this service alone.
            record: held::record(
                name,
                &arguments,
                caller.as_deref(),
                self.holder(),
                self.safe_to_repeat(name),
            )
            .for_service(self.service()),
        });
        let refused = arguments.clone();
        let name = name.to_owned();
        let task_name = name.clone();
        let client = crate::mcp::server::client::ClientSide::read_now(context);
        let peer = (context.peer.clone(), caller.clone());
        let by = subject.map(str::to_owned);
        let spawned = tasks.spawn(caller.as_deref(), kept, move |task| {
            let name = task_name;
            // Taken as rmcp makes the task and starts counting its time to live.
            let ends = tokio::time::Instant::now() + TASK_TTL;
            Box::pin(async move {
                let asking = Asking::task(task.clone(), client, ends);
                let threshold = tools.log_threshold();
                let live = LiveRequest::task(peer, &name, threshold, (task.clone(), asking));
                let call = tools.call_with(&name, arguments, ToolContext::live(Arc::new(live)));
                // A cancellation that comes while the call opens its
                // approval waits for the store: then it withdraws it.
                let cancelled = async {
                    task.cancelled().await;
                    tools.settled_in_task(task.task_id()).await;
                };
                match select(pin!(call), pin!(cancelled)).await {
                    Either::Left((Ok(reply), _)) => Ok(to_rmcp_result(reply)),
                    Either::Left((Err(error), _)) => Err(TaskExit::Error(to_error_data(error))),
                    Either::Right(((), _)) => {
                        // Its caller took the call back: an approval it
                        // waits for is theirs to withdraw, before anyone
                        // says yes to it.
                        match tools.withdraw_in_task(task.task_id(), by.as_deref()).await {
                            Ok(()) => Err(TaskExit::Cancelled),
                            Err(may_stand) => {
                                Err(TaskExit::Error(ErrorData::internal_error(may_stand, None)))
                            }
                        }
                    }
                }
            })
        });
        match spawned.await {
            Ok(task) => CreateTaskResult::new(task).into(),
            Err(full) => {
                let reply = self.refuse(&name, refused, full.envelope());
                to_rmcp_result(reply).into()
            }
        }
    }

    /// The tools as an rmcp [`ToolRouter`], to merge with the routers of
    /// rmcp's `#[tool_router]` in a server of your own — one server with
    /// this set's tools (their retries, guards, masking and limits), rmcp's
    /// own tools, and your prompts, resources and completions:
    ///
    /// ```
    /// use rmcp::handler::server::router::tool::ToolRouter;
    /// use rmcp::{ServerHandler, tool, tool_handler, tool_router};
    /// use tool_envelope::ErrorEnvelope;
    /// use tool_envelope::mcp::ToolSet;
    ///
    /// /// Look up a customer's orders.
    /// #[tool_envelope::tool(read_only)]
    /// fn lookup_orders(customer_id: String) -> Result<Vec<String>, ErrorEnvelope> {
    ///     Ok(vec![format!("{customer_id}-1")])
    /// }
    ///
    /// #[derive(Clone)]
    /// struct Server {
    ///     tool_router: ToolRouter<Self>,
    /// }
    ///
    /// #[tool_router]
    /// impl Server {
    ///     /// Say hello: a tool of rmcp's own.
    ///     #[tool]
    ///     fn hello(&self) -> String {
    ///         "hello".into()
    ///     }
    /// }
    ///
    /// // Serve the router in the field: `#[tool_handler]` alone serves `Self::tool_router()`.
    /// #[tool_handler(router = self.tool_router)]
    /// impl ServerHandler for Server {}
    ///
    /// let tools = ToolSet::new().tool::<lookup_orders>();
    /// let server = Server { tool_router: Server::tool_router() + tools.router() };
    /// assert!(server.tool_router.has_route("hello"));
    /// assert!(server.tool_router.has_route("lookup_orders"));
    /// ```
    ///
    /// The routes share this set, and its log level: a server that answers
    /// `logging/setLevel` forwards it to [`ToolSet::set_log_level`].
    pub fn router<S: Send + Sync + 'static>(&self) -> ToolRouter<S> {
        let mut router = ToolRouter::new();
        for tool in rmcp_tools(self) {
            let tools = self.clone();
            let route = ToolRoute::new_dyn(tool.clone(), move |call: ToolCallContext<'_, S>| {
                let tools = tools.clone();
                Box::pin(async move {
                    let arguments = call.arguments.map_or(Value::Null, Value::Object);
                    let round = Round {
                        responses: call.input_responses,
                        state: call.request_state,
                    };
                    tools
                        .call_in_request(call.name, arguments, call.request_context, round)
                        .await
                }) as crate::mcp::server::state::BoxFuture<'_, _>
            });
            router.add_route(route);
        }
        router
    }

    /// Serves the tools over stdio until the client closes it. Nothing else
    /// may write to stdout meanwhile; log to stderr.
    ///
    /// # Errors
    ///
    /// If the client does not initialize, or the transport fails.
    pub async fn serve_stdio(self) -> io::Result<()> {
        let running = self
            .serve(super::stdio::stdio())
            .await
            .map_err(io::Error::other)?;
        running.waiting().await.map_err(io::Error::other)?;
        Ok(())
    }
}
