//! Tools, results and errors in rmcp's shapes.

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, ContentBlock, ErrorCode, MetaObject, Tool};
use serde_json::Value;

use crate::mcp::definition::ToolDefinition;
use crate::mcp::reply::{ProtocolError, ReplyContent, ToolReply};
use crate::mcp::server::toolset::ToolSet;

/// The rmcp shape of a definition.
pub(crate) fn to_rmcp_tool(definition: &ToolDefinition) -> Tool {
    let value = serde_json::to_value(definition).expect("a definition serializes");
    serde_json::from_value(value).expect("a definition is a valid MCP tool")
}

/// The rmcp shape of every definition, made once per tool set: a stateless
/// server makes a server per request, and lists or routes with these.
pub(crate) fn rmcp_tools(tools: &ToolSet) -> &[Tool] {
    tools.rmcp_tools(|definitions| definitions.iter().map(to_rmcp_tool).collect())
}

/// The rmcp shape of a block; text is not serialized again.
pub(crate) fn to_rmcp_block(block: ReplyContent) -> ContentBlock {
    match block {
        ReplyContent::Text { text } => ContentBlock::text(text),
        other => {
            let value = serde_json::to_value(&other).expect("a content block serializes");
            serde_json::from_value(value).expect("a content block is a valid MCP content block")
        }
    }
}

/// The rmcp shape of a result.
pub(crate) fn to_rmcp_result(result: ToolReply) -> rmcp::model::CallToolResult {
    let content = result.content.into_iter().map(to_rmcp_block).collect();
    let mut converted = if result.is_error {
        rmcp::model::CallToolResult::error(content)
    } else {
        rmcp::model::CallToolResult::success(content)
    };
    converted.structured_content = result.structured_content;
    converted.meta = result.meta.map(MetaObject);
    converted
}

/// The JSON-RPC error of a protocol error.
pub(crate) fn to_error_data(error: ProtocolError) -> ErrorData {
    ErrorData::new(ErrorCode(error.code), error.message, error.data)
}

/// The reply of a failed call, as rmcp sends it: `isError`, the envelope as
/// `structuredContent`, and its JSON as a text block.
pub(crate) fn failed_result(
    structured: Value,
    text: String,
) -> Result<CallToolResponse, ErrorData> {
    let mut result = rmcp::model::CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    Ok(result.into())
}
