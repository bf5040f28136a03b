//! Hostile input through the real transport: the example server as a child
//! process, fed raw JSON-RPC lines over stdio. Every request gets a clear
//! answer or is dropped as rmcp drops unparsable frames, and the server keeps
//! serving the next request.
#![cfg(feature = "rmcp")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};

use common::server_binary;

/// A raw JSON-RPC session: lines in, lines out.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Session {
    fn start() -> Self {
        let mut child = Command::new(server_binary())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut session = Session {
            child,
            stdin,
            lines,
        };
        session.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "hostile", "version": "0"}
            }})
            .to_string()
            .into_bytes(),
        );
        let reply = session.reply().expect("initialize is answered");
        assert_eq!(reply["id"], 0);
        session.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        session
    }

    fn send(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next reply, or `None` if there is none within the timeout. The
    /// timeout is only a bound on a failing test: a healthy server answers
    /// each request in milliseconds.
    fn reply(&mut self) -> Option<Value> {
        match self.lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => Some(serde_json::from_str(&line).expect("the server writes JSON")),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
        }
    }

    /// Sends a `tools/call` whose arguments are the raw bytes `arguments`.
    fn call_raw(&mut self, id: u64, tool: &str, arguments: &[u8]) {
        let mut line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":"#)
            .into_bytes();
        line.extend_from_slice(arguments);
        line.extend_from_slice(b"}}");
        self.send(&line);
    }

    /// Calls and returns the reply to `id`.
    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.call_raw(id, tool, arguments.to_string().as_bytes());
        let reply = self.reply().expect("a reply");
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    /// The server still answers a well-formed call.
    fn assert_still_serving(&mut self, id: u64) {
        let reply = self.call(id, "lookup_orders", json!({"customer_id": "C-0000"}));
        assert_eq!(reply["result"]["isError"], false, "{reply}");
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The envelope of a failed call.
fn envelope(reply: &Value) -> &Value {
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    &reply["result"]["structuredContent"]
}

/// A request naming a protocol version the server does not serve is
/// refused by rmcp before any handler sees it, quoting the version asked
/// for: a megabyte of it comes back cut, and the server keeps serving.
#[test]
fn a_huge_protocol_version_is_refused_briefly() {
    let mut session = Session::start();
    let version = "9".repeat(1024 * 1024);
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": version}
    }});
    session.send(request.to_string().as_bytes());
    let reply = session.reply().expect("a reply");
    let size = reply.to_string().len();
    assert!(size < 2048, "a refusal of {size} bytes");
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["error"]["code"], -32022, "{reply}");
    assert!(
        reply["error"]["data"]["requested"]
            .as_str()
            .unwrap()
            .starts_with("999")
    );
    session.assert_still_serving(2);
}

#[test]
fn a_ten_megabyte_string_gets_an_envelope_with_a_trimmed_query() {
    let mut session = Session::start();
    let huge = "x".repeat(10 * 1024 * 1024);
    let reply = session.call(1, "lookup_orders", json!({"customer_id": huge}));
    let invalid = envelope(&reply);
    assert_eq!(invalid["errorCategory"], "validation");
    let query = invalid["attempted_query"]
        .as_str()
        .expect("trimmed to a string");
    assert!(query.len() < 20 * 1024, "{} bytes", query.len());
    assert!(query.ends_with("bytes dropped]"));
    session.assert_still_serving(2);

    // Six partial results of ten megabytes each: the reply stays bounded.
    let reply = session.call(3, "research", json!({"topic": huge}));
    let size = reply.to_string().len();
    assert!(size < 1024 * 1024, "a reply of {size} bytes");
    let failed = envelope(&reply);
    assert_eq!(failed["errorCategory"], "transient");
    let partial = failed["partial_results"].as_array().unwrap();
    assert_eq!(partial.last().unwrap()["_truncated"]["totalItems"], 6);
    session.assert_still_serving(4);
}

#[test]
fn wrong_types_unknown_fields_and_nulls_get_validation_envelopes() {
    let mut session = Session::start();
    let cases = [
        (
            "lookup_orders",
            json!({"customer_id": 4821, "status": ["shipped"]}),
        ),
        (
            "lookup_orders",
            json!({"customer_id": "C-1", "colour": "red", "size": 3, "password": "hunter2"}),
        ),
        (
            "lookup_orders",
            json!({"customer_id": null, "status": null}),
        ),
        (
            "process_refund",
            json!({"order": {"id": 1}, "amount": "a lot"}),
        ),
        ("process_refund", json!({"order": null, "amount": null})),
        ("research", json!({"topic": false, "wanted": -3})),
        ("stock_level", json!({"sku": [null]})),
        ("read_payroll", json!({})),
    ];
    for (id, (tool, arguments)) in (10..).zip(cases) {
        let reply = session.call(id, tool, arguments.clone());
        let envelope = envelope(&reply);
        assert_eq!(
            envelope["errorCategory"], "validation",
            "{tool} {arguments}: {reply}"
        );
        // The arguments as received; keys the tool does not declare are
        // named in the violations, their values never shown.
        let declared = [
            "customer_id",
            "status",
            "order",
            "amount",
            "topic",
            "wanted",
            "sku",
            "dept",
        ];
        let mut shown = arguments.clone();
        for (key, value) in shown.as_object_mut().unwrap() {
            if !declared.contains(&key.as_str()) {
                *value = json!("[redacted]");
            }
        }
        assert_eq!(envelope["attempted_query"], shown, "{reply}");
        assert!(!reply.to_string().contains("hunter2"), "{reply}");
        assert!(
            !envelope["violations"].as_array().unwrap().is_empty(),
            "{reply}"
        );
    }
    // `null` instead of an arguments object.
    session.call_raw(30, "lookup_orders", b"null");
    let reply = session.reply().unwrap();
    assert_eq!(envelope(&reply)["violations"][0]["field"], "customer_id");
    session.assert_still_serving(31);
}

#[test]
fn malformed_requests_get_protocol_errors() {
    let mut session = Session::start();
    // An unknown tool.
    let reply = session.call(1, "drop_database", json!({}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // Arguments that are not an object: MCP's schema says `arguments` is an
    // object, and rmcp refuses any other shape while reading the request —
    // before the tool set sees it — with JSON-RPC "invalid params". (A tool
    // set called directly answers a validation envelope instead:
    // tests/mcp_toolset.rs.)
    for (id, arguments) in [
        (2, &b"[1, 2, 3]"[..]),
        (3, b"\"{\\\"api_key\\\":\\\"hunter2\\\"}\""),
        (4, b"42"),
    ] {
        session.call_raw(id, "lookup_orders", arguments);
        let reply = session.reply().expect("a reply");
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert!(!reply.to_string().contains("hunter2"), "{reply}");
    }
    session.assert_still_serving(5);
}

#[test]
fn unparsable_frames_are_dropped_and_the_server_keeps_serving() {
    let mut session = Session::start();
    // JSON nested 10,000 deep: beyond any JSON parser's recursion limit.
    let mut deep = Vec::new();
    deep.extend_from_slice(br#"{"customer_id":"#);
    deep.extend(std::iter::repeat_n(b'[', 10_000));
    deep.extend(std::iter::repeat_n(b']', 10_000));
    deep.push(b'}');
    session.call_raw(1, "lookup_orders", &deep);
    // Invalid UTF-8 in the transport.
    session.call_raw(2, "lookup_orders", b"{\"customer_id\":\"\xff\xfe\xfd\"}");
    // Not JSON at all.
    session.send(b"{{{ this is not json");
    // rmcp drops frames it cannot parse — there is no id to answer — as the
    // other official MCP SDKs do, so that a peer cannot start an error storm.
    // What matters here: no crash, no hang, and the next request is served.
    session.assert_still_serving(3);
    let reply = session.call(4, "lookup_orders", json!({"customer_id": "C-1001"}));
    assert_eq!(reply["result"]["structuredContent"]["matches"], 2);
}
