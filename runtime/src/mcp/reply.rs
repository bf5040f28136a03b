//! The reply to `tools/call`, and the protocol errors that are not replies.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

    /// A request the client cancelled (`-32800`, as the Language Server
    /// Protocol numbers it). [`ToolSet::call_with`](crate::mcp::ToolSet::call_with)
    /// answers a cancelled call with it; over MCP it is never sent, since a
    /// cancelled request gets no reply.
    pub const REQUEST_CANCELLED: i32 = -32800;

    /// The call of `tool` was cancelled.
    pub(crate) fn cancelled(tool: &str) -> Self {
        ProtocolError {
            code: Self::REQUEST_CANCELLED,
            message: format!(
                "the call of `{}` was cancelled",
                text_for_wire(tool, MAX_ECHOED_NAME)
            ),
            data: None,
        }
    }

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

/// A content block of a tool reply, as MCP defines them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum ReplyContent {
    /// Text.
    #[serde(rename = "text")]
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    #[serde(rename = "image", rename_all = "camelCase")]
    Image {
        /// The image's bytes, base64-encoded.
        data: String,
        /// Its MIME type, such as `image/png`.
        mime_type: String,
    },
    /// Audio, base64-encoded.
    #[serde(rename = "audio", rename_all = "camelCase")]
    Audio {
        /// The audio's bytes, base64-encoded.
        data: String,
        /// Its MIME type, such as `audio/wav`.
        mime_type: String,
    },
    /// A resource, embedded with its contents.
    #[serde(rename = "resource")]
    Resource {
        /// The resource.
        resource: EmbeddedContents,
    },
    /// A link to a resource the client can read (`resources/read`).
    #[serde(rename = "resource_link", rename_all = "camelCase")]
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// The contents of an embedded resource: text or a base64 blob. (MCP's
/// `EmbeddedResource` is the block that holds them: [`ReplyContent::Resource`].)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmbeddedContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64-encoded, for a binary resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// The reply to `tools/call`, in MCP's shape (its `CallToolResult`): the
/// value (or the envelope) as `structuredContent`, and the same JSON as a
/// text block; or, for a tool that returns [`Contents`], its content blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolReply {
    /// The content blocks: the JSON text of `structuredContent`, or the
    /// blocks of a [`Contents`] success.
    pub content: Vec<ReplyContent>,
    /// The success value, or the error envelope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// The `_meta` of a [`Contents`] success.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ToolReply {
    /// A reply carrying `structured` as JSON, and its text as a text block.
    pub(crate) fn structured(structured: Value, text: String, is_error: bool) -> Self {
        ToolReply {
            content: vec![ReplyContent::Text { text }],
            structured_content: Some(structured),
            is_error,
            meta: None,
        }
    }

    /// The reply of a [`Contents`] success.
    pub(crate) fn contents(contents: Contents) -> Self {
        ToolReply {
            content: contents.blocks,
            structured_content: contents.structured,
            is_error: false,
            meta: contents.meta,
        }
    }

    /// The error envelope, when the call failed.
    pub fn envelope(&self) -> Option<ErrorEnvelope> {
        if !self.is_error {
            return None;
        }
        serde_json::from_value(self.structured_content.clone()?).ok()
    }

    /// The text of the first text block.
    pub fn text(&self) -> Option<&str> {
        self.content.iter().find_map(|block| match block {
            ReplyContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
    }
}

/// A success made of MCP content blocks — text, images, audio, embedded
/// resources, resource links, in any mix — with optional `_meta` and
/// structured content. A `#[tool]` returns it like any success type; its
/// failures stay envelopes. Such a tool has no `outputSchema` unless its
/// structured content is described elsewhere.
///
/// ```
/// use tool_envelope::{tool, ErrorEnvelope};
/// use tool_envelope::mcp::{Contents, ReplyContent, ToolSet};
///
/// /// Render a customer's order history as a chart.
/// #[tool(read_only)]
/// fn order_chart(customer_id: String) -> Result<Contents, ErrorEnvelope> {
///     let png: &[u8] = b"\x89PNG\r\n\x1a\n";
///     Ok(Contents::new()
///         .text(format!("Orders of {customer_id}, by month"))
///         .image(png, "image/png")
///         .resource_link("orders://C-1/history", "history")
///         .meta("generatedBy", "charts-v2"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let tools = ToolSet::new().tool::<order_chart>();
/// assert!(tools.get("order_chart").unwrap().output_schema.is_none());
/// let reply = tools.call("order_chart", serde_json::json!({"customer_id": "C-1"})).await.unwrap();
/// assert!(matches!(&reply.content[1], ReplyContent::Image { data, .. } if data == "iVBORw0KGgo="));
/// assert_eq!(reply.meta.unwrap()["generatedBy"], "charts-v2");
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Contents {
    blocks: Vec<ReplyContent>,
    structured: Option<Value>,
    meta: Option<Map<String, Value>>,
}

impl Contents {
    /// No blocks yet.
    pub fn new() -> Self {
        Contents::default()
    }

    /// Adds a block.
    #[must_use]
    pub fn block(mut self, block: ReplyContent) -> Self {
        self.blocks.push(block);
        self
    }

    /// Adds a text block.
    #[must_use]
    pub fn text(self, text: impl Into<String>) -> Self {
        self.block(ReplyContent::Text { text: text.into() })
    }

    /// Adds an image: its bytes (encoded here) and MIME type.
    #[must_use]
    pub fn image(self, bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        self.block(ReplyContent::Image {
            data: base64(bytes.as_ref()),
            mime_type: mime_type.into(),
        })
    }

    /// Adds audio: its bytes (encoded here) and MIME type.
    #[must_use]
    pub fn audio(self, bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        self.block(ReplyContent::Audio {
            data: base64(bytes.as_ref()),
            mime_type: mime_type.into(),
        })
    }

    /// Embeds a text resource.
    #[must_use]
    pub fn resource_text(
        self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.block(ReplyContent::Resource {
            resource: EmbeddedContents {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
            },
        })
    }

    /// Embeds a binary resource: its bytes (encoded here) and MIME type.
    #[must_use]
    pub fn resource_blob(
        self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl AsRef<[u8]>,
    ) -> Self {
        self.block(ReplyContent::Resource {
            resource: EmbeddedContents {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(base64(bytes.as_ref())),
            },
        })
    }

    /// Adds a link to a resource.
    #[must_use]
    pub fn resource_link(self, uri: impl Into<String>, name: impl Into<String>) -> Self {
        self.block(ReplyContent::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
        })
    }

    /// Sets the reply's structured content (a JSON object, as MCP requires).
    #[must_use]
    pub fn structured(mut self, value: Map<String, Value>) -> Self {
        self.structured = Some(Value::Object(value));
        self
    }

    /// Sets `key` in the reply's `_meta`.
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.meta
            .get_or_insert_with(Map::new)
            .insert(key.into(), value.into());
        self
    }

    /// The blocks so far.
    pub fn blocks(&self) -> &[ReplyContent] {
        &self.blocks
    }
}

/// Standard base64, with padding, as MCP's `data` and `blob` take it.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
