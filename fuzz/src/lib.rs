//! The fuzzed operations, shared by the fuzz targets and by the test that
//! replays their seed corpora in CI (`tests/fuzz_corpus.rs`):
//!
//! - [`call`]: arbitrary bytes as the arguments of a `tools/call` to the
//!   example server's tool set (the input side);
//! - [`output::call`]: arbitrary results, partial results, messages,
//!   alternatives and panics from a tool (the output side).

pub mod output;

#[path = "../../examples/mcp_server/tools.rs"]
#[allow(dead_code)]
mod example;

use std::sync::OnceLock;

use serde_json::Value;
use tool_envelope::ErrorEnvelope;
use tool_envelope::mcp::ToolSet;

/// The tools a client could name: the five of the example, and two it cannot.
const NAMES: [&str; 7] = [
    "lookup_orders",
    "stock_level",
    "process_refund",
    "read_payroll",
    "research",
    "",
    "drop_database",
];

fn tools() -> &'static ToolSet {
    static TOOLS: OnceLock<ToolSet> = OnceLock::new();
    TOOLS.get_or_init(example::tools)
}

/// Calls a tool named by the first byte with the rest as its arguments — JSON
/// if it parses, otherwise the bytes as a string — and checks the answer:
/// a result with structured content (an envelope when it is an error), or a
/// `-32602` protocol error for a tool that does not exist. Panics otherwise.
pub fn call(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let name = NAMES[usize::from(selector) % NAMES.len()];
    let arguments = serde_json::from_slice::<Value>(rest)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(rest).into_owned()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    match runtime.block_on(tools().call(name, arguments)) {
        Ok(result) => {
            let structured = result.structured_content.expect("structured content");
            let text = result_text(&result.content).expect("a text block");
            // The text block is the JSON of the structured content, as a client
            // reads both (the keys of an envelope's text in the wire format's
            // order; both parsed the same way, so a float reads the same).
            let read = |json: &str| serde_json::from_str::<Value>(json).expect("JSON text");
            assert_eq!(read(text), read(&structured.to_string()));
            if result.is_error {
                serde_json::from_value::<ErrorEnvelope>(structured)
                    .expect("an error result carries an envelope");
            }
        }
        Err(error) => {
            assert!(
                tools().get(name).is_none(),
                "a known tool answered with a protocol error: {error}"
            );
            assert_eq!(error.code, -32602);
        }
    }
}

fn result_text(content: &[tool_envelope::mcp::ReplyContent]) -> Option<&str> {
    content.iter().find_map(|block| match block {
        tool_envelope::mcp::ReplyContent::Text { text } => Some(text.as_str()),
        _ => None,
    })
}
