//! Helpers shared by the integration tests; each test crate uses some of them.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::Value;

/// Builds the example MCP server once and returns its path.
pub fn server_binary() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| example_binary("mcp_server"))
}

/// Builds the example `name` (with every feature, as the tests that drive
/// it are built) and returns its path.
pub fn example_binary(name: &str) -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--example", name, "--all-features"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the example {name} failed");
    // A test runs from <target>/<profile>/deps/; the example is in <target>/<profile>/examples/.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let binary = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(binary.exists(), "{} was not built", binary.display());
    binary
}

/// A writer that keeps everything written to it, for a `tracing` subscriber.
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// A plain-text subscriber writing into this buffer, without timestamps.
    pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let writer = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .without_time()
            .finish()
    }

    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A `tools/call` through an rmcp client, bounded by 30 s: a hung server
/// fails the test instead of stalling it. `arguments` other than an object
/// are not sent.
pub async fn call_tool<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let mut request = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(arguments) = arguments {
        request = request.with_arguments(arguments);
    }
    tokio::time::timeout(Duration::from_secs(30), client.call_tool(request))
        .await
        .expect("the server answers")
}

/// [`call_tool`], answered with a result (not a protocol error).
pub async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    call_tool(client, tool, arguments)
        .await
        .expect("a result, not a protocol error")
}
