//! The output side: whatever a tool returns — a success value, an envelope
//! with any message, alternatives, violations, reason and partial results, a
//! collector full of anything, a panic — `ToolSet::call` answers with a
//! bounded reply, valid against the envelope schema when it is a failure,
//! and never panics.
//!
//! The input bytes are a script the tool follows: a small decoder turns them
//! into JSON values (as deep, as long and as full of control characters as
//! the bytes say) and choices. Deterministic, so that a corpus replays.

use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value};
use tool_envelope::mcp::ToolSet;
use tool_envelope::{ErrorCategory, ErrorEnvelope, Partial, Violation, retry::RetryPolicy, tool};

/// The cap the fuzzed set answers within, text copy included.
pub const MAX_RESULT_BYTES: usize = 64 * 1024;

/// Reads choices and values out of the fuzz input.
struct Script<'a> {
    bytes: &'a [u8],
}

impl Script<'_> {
    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&first, rest)) => {
                self.bytes = rest;
                first
            }
            None => 0,
        }
    }

    fn number(&mut self) -> usize {
        usize::from(self.byte()) | usize::from(self.byte()) << 8
    }

    /// Text: a few bytes as they are (any UTF-8 they make, lossily), or a
    /// piece repeated many times.
    fn text(&mut self) -> String {
        let len = usize::from(self.byte() % 24);
        let take = len.min(self.bytes.len());
        let (piece, rest) = self.bytes.split_at(take);
        self.bytes = rest;
        let piece = String::from_utf8_lossy(piece).into_owned();
        match self.byte() % 8 {
            0 => piece.repeat(self.number() * 4 + 1),
            1 => "\u{1}\"\\\n".repeat(self.number() + 1),
            2 => String::new(),
            _ => piece,
        }
    }

    /// A JSON value: scalars, containers a few levels deep, or one nested as
    /// deep as two bytes say.
    fn value(&mut self, depth: usize) -> Value {
        match self.byte() % 10 {
            0 => Value::Null,
            1 => Value::Bool(self.byte().is_multiple_of(2)),
            2 => Value::from(self.number() as i64 - 30_000),
            3 => serde_json::Number::from_f64(f64::from(self.number() as u32) / 7.0)
                .map_or(Value::Null, Value::Number),
            4 | 5 => Value::String(self.text()),
            6 if depth < 6 => {
                let len = usize::from(self.byte() % 6);
                Value::Array((0..len).map(|_| self.value(depth + 1)).collect())
            }
            7 if depth < 6 => {
                let len = usize::from(self.byte() % 6);
                Value::Object(
                    (0..len)
                        .map(|_| (self.text(), self.value(depth + 1)))
                        .collect::<Map<_, _>>(),
                )
            }
            8 => {
                // Deep nesting, built without recursion.
                let levels = self.number() % 20_000;
                let mut value = Value::from(1);
                for _ in 0..levels {
                    value = Value::Array(vec![value]);
                }
                value
            }
            _ => Value::Array((0..self.number() % 2_000).map(Value::from).collect()),
        }
    }

    fn envelope(&mut self) -> ErrorEnvelope {
        let category = ErrorCategory::ALL[usize::from(self.byte()) % 5];
        let mut envelope = ErrorEnvelope::new(category, self.text());
        let flags = self.byte();
        if flags & 1 != 0 {
            let retryable = !envelope.is_retryable();
            envelope = envelope.with_retryable(retryable);
        }
        if flags & 2 != 0 {
            envelope = envelope.with_reason(self.text());
        }
        if flags & 4 != 0 {
            envelope = envelope.with_attempted_query(self.value(0));
        }
        if flags & 8 != 0 {
            envelope = envelope.with_partial_results(self.value(0));
        }
        if flags & 16 != 0 {
            let count = self.number() % 300;
            let alternatives: Vec<String> = (0..count).map(|_| self.text()).collect();
            envelope = envelope.with_alternatives(alternatives);
        }
        if flags & 32 != 0 {
            let count = self.number() % 300;
            let violations: Vec<Violation> = (0..count)
                .map(|_| Violation::new(self.text(), self.text()))
                .collect();
            envelope = envelope.with_violations(violations);
        }
        if flags & 64 != 0 {
            envelope = envelope.with_retry_after(Duration::from_millis(self.number() as u64 * 997));
        }
        if flags & 128 != 0 {
            envelope = envelope.with_tool(self.text());
        }
        envelope
    }
}

thread_local! {
    /// The script of the current call.
    static SCRIPT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Does what the script says: gathers partial results, then succeeds with a
/// value, fails with an envelope, or panics.
#[tool(read_only)]
async fn scripted(round: u32, gathered: Partial<Value>) -> Result<Value, ErrorEnvelope> {
    let _ = round;
    let bytes = SCRIPT.with(|script| script.borrow().clone());
    let mut script = Script { bytes: &bytes };
    for _ in 0..script.byte() % 4 {
        gathered.push(script.value(0));
    }
    match script.byte() % 4 {
        0 => Ok(script.value(0)),
        1 => {
            let text = script.text();
            PANICKING_ON_PURPOSE.with(|flag| flag.set(true));
            panic!("{text}")
        }
        _ => Err(script.envelope()),
    }
}

fn tools() -> &'static [ToolSet; 2] {
    static TOOLS: OnceLock<[ToolSet; 2]> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let set = || {
            ToolSet::new()
                .tool::<scripted>()
                .max_result_bytes(MAX_RESULT_BYTES)
        };
        let retrying = set()
            .retry(RetryPolicy::default().constant(Duration::ZERO))
            .mask_internal_errors("Internal error.");
        [set(), retrying]
    })
}

thread_local! {
    /// Set while the tool panics on purpose.
    pub static PANICKING_ON_PURPOSE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs the tool on the script `data` (the first byte picks the tool set:
/// plain, or retrying and masking) and checks the reply. Panics on a
/// reply that breaks a promise.
pub fn call(data: &[u8], validate: &dyn Fn(&Value) -> Result<(), String>) {
    let Some((&selector, script)) = data.split_first() else {
        return;
    };
    SCRIPT.with(|slot| *slot.borrow_mut() = script.to_vec());
    PANICKING_ON_PURPOSE.with(|flag| flag.set(false));
    let set = &tools()[usize::from(selector) % 2];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    let result = runtime
        .block_on(set.call("scripted", serde_json::json!({"round": selector})))
        .expect("a known tool answers with a result");
    let sent = serde_json::to_string(&result).expect("a result serializes");
    assert!(
        sent.len() <= MAX_RESULT_BYTES,
        "a reply of {} bytes, over {MAX_RESULT_BYTES}",
        sent.len()
    );
    let structured = result
        .structured_content
        .as_ref()
        .expect("structured content");
    // Both parsed the same way, so that a float reads the same.
    let read = |json: &str| serde_json::from_str::<Value>(json).expect("JSON text");
    assert_eq!(
        read(result.text().expect("a text block")),
        read(&structured.to_string()),
        "the text mirrors the structured content"
    );
    if result.is_error {
        validate(structured).unwrap_or_else(|errors| panic!("{errors}: {structured}"));
        serde_json::from_value::<ErrorEnvelope>(structured.clone()).expect("an envelope");
    }
}
