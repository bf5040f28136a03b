//! rmcp's own refusals of a request, cut to length: the messages of its
//! header checks quote what the body sent (a method, a tool's name) whole,
//! up to the body limit, where this crate's own errors quote 256 bytes.

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use http_body_util::BodyExt;

use super::sessions::McpResponse;
use crate::limits::text_for_wire;

/// How much of a refusal's message (or a text of its data, over stdio)
/// is kept, as this crate's own errors quote.
pub(super) const MOST_QUOTED: usize = 256;

/// `response`, and if it is a refusal (400) whose JSON-RPC error message
/// or text is longer than [`MOST_QUOTED`] bytes, with that message cut.
pub(super) async fn cut_refusal(response: McpResponse) -> McpResponse {
    if response.status() != StatusCode::BAD_REQUEST {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(read) = body.collect().await;
    let read = read.to_bytes();
    let cut = match serde_json::from_slice::<serde_json::Value>(&read) {
        Ok(mut refusal) => match refusal.pointer_mut("/error/message") {
            Some(serde_json::Value::String(message)) if message.len() > MOST_QUOTED => {
                *message = text_for_wire(message, MOST_QUOTED).into_owned();
                Some(Bytes::from(refusal.to_string()))
            }
            _ => None,
        },
        Err(_) if read.len() > MOST_QUOTED => {
            let text = String::from_utf8_lossy(&read);
            Some(Bytes::from(text_for_wire(&text, MOST_QUOTED).into_owned()))
        }
        Err(_) => None,
    };
    let body = match cut {
        Some(cut) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            cut
        }
        None => read,
    };
    McpResponse::from_parts(parts, http_body_util::Full::new(body).boxed())
}
