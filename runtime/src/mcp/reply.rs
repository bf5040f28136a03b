//! The reply to `tools/call`, and the protocol errors that are not replies.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::ErrorEnvelope;
use crate::limits::text_for_wire;

/// A JSON-RPC protocol error: an unknown tool or a malformed request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtocolError {
    /// The JSON-RPC error code.
    pub code: i32,
    /// What went wrong.
    pub message: String,
    /// Details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ProtocolError {
    /// JSON-RPC "invalid params", which MCP uses for an unknown tool.
    pub const INVALID_PARAMS: i32 = -32602;

    /// An unknown tool. The name is echoed at most once and cut to a few
    /// times the longest valid name, so that a huge name does not come back
    /// huge.
    pub(crate) fn unknown_tool(name: &str, known: impl Iterator<Item = String>) -> Self {
        let name = text_for_wire(name, MAX_ECHOED_NAME);
        ProtocolError {
            code: Self::INVALID_PARAMS,
            message: format!("unknown tool `{name}`"),
            data: Some(serde_json::json!({ "known": known.collect::<Vec<_>>() })),
        }
    }
}

/// The most bytes of an unknown tool's name echoed back: a valid name has at
/// most 64.
const MAX_ECHOED_NAME: usize = 256;

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ProtocolError {}

/// A content block of a tool reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum ReplyContent {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
}

/// The reply to `tools/call`, in MCP's shape (its `CallToolResult`): the
/// value (or the envelope) as `structuredContent`, and the same JSON as a
/// text block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolReply {
    /// The content blocks: the JSON text of `structuredContent`.
    pub content: Vec<ReplyContent>,
    /// The success value, or the error envelope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    pub is_error: bool,
}

impl ToolReply {
    /// A reply carrying `structured` as JSON, and its text as a text block.
    pub(crate) fn structured(structured: Value, text: String, is_error: bool) -> Self {
        ToolReply {
            content: vec![ReplyContent::Text { text }],
            structured_content: Some(structured),
            is_error,
        }
    }

    /// The error envelope, when the call failed.
    pub fn envelope(&self) -> Option<ErrorEnvelope> {
        if !self.is_error {
            return None;
        }
        serde_json::from_value(self.structured_content.clone()?).ok()
    }

    /// The text of the first content block.
    pub fn text(&self) -> Option<&str> {
        self.content
            .iter()
            .map(|ReplyContent::Text { text }| text.as_str())
            .next()
    }
}
