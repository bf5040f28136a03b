//! Serving over stdio with rmcp's own refusals cut to length: rmcp answers
//! a request that names a protocol version the server does not serve
//! (`_meta`'s `io.modelcontextprotocol/protocolVersion`, or an
//! `initialize` when no served revision has one) with that version quoted
//! whole in `error.data.requested`, before a handler sees the request —
//! a client's megabyte back to it. Over HTTP the header limit bounds it.

use std::future::Future;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ErrorData, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;

use super::refusals::MOST_QUOTED;
use crate::limits::text_for_wire;

/// rmcp's stdio transport, its refusals cut.
pub(super) fn stdio() -> impl Transport<RoleServer, Error = std::io::Error> {
    use rmcp::transport::IntoTransport;
    CutRefusals(
        IntoTransport::<RoleServer, std::io::Error, _>::into_transport(rmcp::transport::stdio()),
    )
}

/// `transport`, every error it sends cut: its message and each text in
/// its data within [`MOST_QUOTED`] bytes.
struct CutRefusals<T>(T);

impl<T: Transport<RoleServer>> Transport<RoleServer> for CutRefusals<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Error(refusal) = &mut message {
            cut(&mut refusal.error);
        }
        self.0.send(message)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.0.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}

/// `error` with its message and the texts of its data cut.
fn cut(error: &mut ErrorData) {
    if error.message.len() > MOST_QUOTED {
        error.message = text_for_wire(&error.message, MOST_QUOTED)
            .into_owned()
            .into();
    }
    // A loop: data is JSON rmcp made, of any depth.
    let mut pending: Vec<&mut Value> = error.data.iter_mut().collect();
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) if text.len() > MOST_QUOTED => {
                *text = text_for_wire(text, MOST_QUOTED).into_owned();
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(fields) => pending.extend(fields.values_mut()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ErrorCode, ProtocolVersion};

    use super::*;

    #[test]
    fn a_refusal_quotes_the_version_asked_for_briefly() {
        let asked: ProtocolVersion = serde_json::from_value("9".repeat(1 << 20).into()).unwrap();
        let mut error = ErrorData::unsupported_protocol_version(asked, &[ProtocolVersion::LATEST]);
        cut(&mut error);
        assert_eq!(error.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        let text = serde_json::to_string(&error).unwrap();
        assert!(text.len() < 1024, "{}", text.len());
        let data = error.data.unwrap();
        assert!(data["requested"].as_str().unwrap().starts_with("999"));
        assert_eq!(data["supported"][0], ProtocolVersion::LATEST.as_str());
    }
}
