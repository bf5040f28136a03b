//! The argument errors of the common MCP SDKs, which arrive as the text of
//! an `isError` result rather than as a JSON-RPC `-32602`: read as the
//! `validation` failures they are, with a violation for each field the text
//! names, whichever SDK the server was written with.
//!
//! | SDK | the text |
//! |---|---|
//! | TypeScript v1 (`@modelcontextprotocol/sdk` ≥ 1.30, and the servers on it) | `MCP error -32602: Input validation error: Invalid arguments for tool T: <message> at <path>`, one issue per line |
//! | TypeScript v1 ≤ 1.29 | the same, the issues as zod's JSON array (`path`, `message`) |
//! | TypeScript v1, unknown tool | `MCP error -32602: Tool T not found` (or `disabled`) |
//! | TypeScript v2 (`@modelcontextprotocol/server`) | `Input validation error: Invalid arguments for tool T: <path>: <message>, <path>: <message>` |
//! | Python SDK (`MCPServer`) | `Error executing tool T: N validation errors for TArguments`, then pydantic's blocks |
//! | `FastMCP` | `N validation errors for call[T]`, then pydantic's blocks |
//! | Python SDK, `FastMCP`, unknown tool | `Unknown tool: T` (`FastMCP` quotes it: `'T'`) |
//!
//! Any other `MCP error -32602: …` text is `validation` too, as the same
//! code sent as a JSON-RPC error is. Field paths are written as this crate
//! writes them (`opts.tags[0]`). A pydantic description drops the bracket
//! that quotes the rejected input (`[type=…, input_value=…]`): a value is
//! never copied into a violation.

use serde_json::Value;

use crate::envelope::{ErrorEnvelope, Violation};
use crate::mcp::violations::summary;
use crate::reasons;

/// The most violations read from one text.
const MAX_VIOLATIONS: usize = 256;

/// The `validation` envelope of `text`, the `isError` text of a call of the
/// tool `name`, if it is one of the argument errors above. `text` is
/// bounded already: what it gives is no longer than it is.
pub(crate) fn recognize(text: &str, name: &str) -> Option<ErrorEnvelope> {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix("MCP error -32602: ") {
        return Some(typescript(rest, name, Issues::V1));
    }
    if text.starts_with(INVALID_ARGUMENTS) {
        return Some(typescript(text, name, Issues::V2));
    }
    if let Some(quoted) = text.strip_prefix("Unknown tool: ")
        && (quoted == name
            || quoted
                .strip_prefix('\'')
                .and_then(|quoted| quoted.strip_suffix('\''))
                == Some(name))
    {
        return Some(invalid(text.to_owned(), Vec::new()));
    }
    let pydantic = text
        .strip_prefix("Error executing tool ")
        .and_then(|rest| rest.strip_prefix(name)?.strip_prefix(": "))
        .unwrap_or(text);
    pydantic_errors(pydantic, name).map(|violations| invalid_with(name, violations))
}

const INVALID_ARGUMENTS: &str = "Input validation error: Invalid arguments for tool ";

/// How a TypeScript SDK lists the issues of one call.
#[derive(Clone, Copy)]
enum Issues {
    /// `<message> at <path>`, one a line; or zod's JSON array.
    V1,
    /// `<path>: <message>`, joined by `, `.
    V2,
}

/// A TypeScript SDK's `-32602` text, its `MCP error` prefix removed.
fn typescript(text: &str, name: &str, format: Issues) -> ErrorEnvelope {
    let issues = text
        .strip_prefix(INVALID_ARGUMENTS)
        .and_then(|rest| rest.strip_prefix(name)?.strip_prefix(": "));
    let Some(issues) = issues else {
        return invalid(text.to_owned(), Vec::new());
    };
    let violations = match format {
        Issues::V1 => match serde_json::from_str::<Vec<Value>>(issues) {
            Ok(array) => array.iter().filter_map(zod_issue).collect(),
            Err(_) => issues
                .lines()
                .filter(|line| !line.trim().is_empty())
                .map(|line| match line.rsplit_once(" at ") {
                    Some((message, path)) if is_path(path) => violation(&field(path), message),
                    _ => violation("", line),
                })
                .collect(),
        },
        Issues::V2 => comma_issues(issues),
    };
    invalid_with(name, violations)
}

/// One issue of zod's JSON array: `{"path": ["opts", "tags", 0], "message": …}`.
fn zod_issue(issue: &Value) -> Option<Violation> {
    let message = issue.get("message")?.as_str()?;
    let mut path = String::new();
    for step in issue
        .get("path")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match step {
            Value::Number(index) => path.push_str(&format!("[{index}]")),
            Value::String(key) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            _ => {}
        }
    }
    Some(violation(&path, message))
}

/// The TypeScript SDK v2's issues, `path: message` joined by `, `: a `, `
/// starts the next issue only where a path and `: ` follow it, since zod's
/// messages hold commas of their own.
fn comma_issues(text: &str) -> Vec<Violation> {
    let mut starts = vec![0];
    let mut from = 0;
    while let Some(at) = text[from..].find(", ") {
        let next = from + at + 2;
        // A path is the run of path characters right after the `, `: each
        // is read once, whatever the text holds.
        let rest = &text[next..];
        let end = rest.find(|c| !is_path_char(c)).unwrap_or(rest.len());
        if is_path(&rest[..end]) && rest[end..].starts_with(": ") {
            starts.push(next);
        }
        from = next;
    }
    starts.push(text.len() + 2);
    starts
        .windows(2)
        .map(|pair| &text[pair[0]..pair[1] - 2])
        .map(|issue| match issue.split_once(": ") {
            Some((path, message)) if is_path(path) => violation(&field(path), message),
            _ => violation("", issue),
        })
        .collect()
}

/// pydantic's `ValidationError` text for the arguments of `name`: its
/// header names the model the SDK built for them (`nameArguments` in the
/// Python SDK, `call[name]` in `FastMCP`), then one block per error — the
/// field's location, then the message, indented.
fn pydantic_errors(text: &str, name: &str) -> Option<Vec<Violation>> {
    let mut lines = text.lines();
    let header = lines.next()?;
    let (count, model) = header.split_once(" for ")?;
    let count = count
        .strip_suffix(" validation errors")
        .or_else(|| count.strip_suffix(" validation error"))?;
    count.parse::<usize>().ok()?;
    let ours = model.strip_suffix("Arguments") == Some(name)
        || model
            .strip_prefix("call[")
            .and_then(|m| m.strip_suffix(']'))
            == Some(name);
    if !ours {
        return None;
    }
    let mut violations = Vec::new();
    let mut location: Option<&str> = None;
    for line in lines {
        if line.starts_with("    ") || line.trim().is_empty() {
            continue;
        }
        if let Some(message) = line.strip_prefix("  ") {
            // The bracket quotes the input: never copied.
            let message = message.find(" [type=").map_or(message, |at| &message[..at]);
            violations.push(violation(&field(location.take().unwrap_or("")), message));
        } else {
            location = Some(line.trim());
        }
    }
    Some(violations)
}

/// Whether `text` reads as a field path: names and indexes joined by `.`
/// or in `[…]`, no spaces.
fn is_path(text: &str) -> bool {
    !text.is_empty() && text.len() <= 256 && text.chars().all(is_path_char)
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']' | '$')
}

/// A path as this crate writes it: `opts.tags.0` → `opts.tags[0]`.
fn field(path: &str) -> String {
    let mut field = String::with_capacity(path.len());
    for step in path.split('.').filter(|step| !step.is_empty()) {
        if step.bytes().all(|b| b.is_ascii_digit()) {
            field.push_str(&format!("[{step}]"));
        } else {
            if !field.is_empty() {
                field.push('.');
            }
            field.push_str(step);
        }
    }
    field
}

/// A violation at `path` (the arguments as a whole when it is empty).
fn violation(path: &str, message: &str) -> Violation {
    let path = if path.is_empty() { "arguments" } else { path };
    Violation::new(path, message.trim())
}

/// The `validation` envelope of `violations` of the arguments of `name`,
/// worded as this crate's servers word it; `text` stays the message when
/// no field was named.
fn invalid_with(name: &str, mut violations: Vec<Violation>) -> ErrorEnvelope {
    violations.truncate(MAX_VIOLATIONS);
    match violations.is_empty() {
        true => invalid(format!("Invalid arguments for `{name}`"), violations),
        false => invalid(summary(name, &violations), violations),
    }
}

fn invalid(message: String, violations: Vec<Violation>) -> ErrorEnvelope {
    ErrorEnvelope::validation(message)
        .with_reason(reasons::INVALID_ARGUMENTS)
        .with_violations(violations)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(envelope: &ErrorEnvelope) -> Vec<(&str, &str)> {
        envelope
            .violations()
            .iter()
            .map(|v| (v.field.as_str(), v.description.as_str()))
            .collect()
    }

    #[test]
    fn typescript_v1_lines_and_json() {
        let lines = recognize(
            "MCP error -32602: Input validation error: Invalid arguments for tool add: Invalid input: expected number, received undefined at a\nInvalid input: expected string, received number at opts.tags[0]",
            "add",
        )
        .unwrap();
        assert_eq!(
            fields(&lines),
            [
                ("a", "Invalid input: expected number, received undefined"),
                (
                    "opts.tags[0]",
                    "Invalid input: expected string, received number"
                ),
            ]
        );
        assert_eq!(
            lines.message(),
            "Invalid arguments for `add`: `a` Invalid input: expected number, received undefined (and 1 more)"
        );
        let json = recognize(
            "MCP error -32602: Input validation error: Invalid arguments for tool add: [\n  {\n    \"expected\": \"number\",\n    \"code\": \"invalid_type\",\n    \"path\": [\n      \"opts\",\n      \"tags\",\n      0\n    ],\n    \"message\": \"Invalid input: expected number, received string\"\n  }\n]",
            "add",
        )
        .unwrap();
        assert_eq!(
            fields(&json),
            [(
                "opts.tags[0]",
                "Invalid input: expected number, received string"
            )]
        );
        let unknown = recognize("MCP error -32602: Tool nope not found", "nope").unwrap();
        assert_eq!(unknown.category(), crate::ErrorCategory::Validation);
        assert!(unknown.violations().is_empty());
        assert_eq!(unknown.message(), "Tool nope not found");
    }

    #[test]
    fn typescript_v2_commas() {
        let envelope = recognize(
            "Input validation error: Invalid arguments for tool add: a: Invalid input: expected number, received undefined, opts.tags.0: Invalid input: expected string, received number",
            "add",
        )
        .unwrap();
        assert_eq!(
            fields(&envelope),
            [
                ("a", "Invalid input: expected number, received undefined"),
                (
                    "opts.tags[0]",
                    "Invalid input: expected string, received number"
                ),
            ]
        );
    }

    #[test]
    fn pydantic_blocks_without_the_input() {
        let python = recognize(
            "Error executing tool login: 2 validation errors for loginArguments\npassword\n  Input should be a valid string [type=string_type, input_value=12345678, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type\nitems.0.k\n  Field required [type=missing, input_value={'password': 'hunter2'}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing",
            "login",
        )
        .unwrap();
        assert_eq!(
            fields(&python),
            [
                ("password", "Input should be a valid string"),
                ("items[0].k", "Field required"),
            ]
        );
        assert!(!format!("{python:?}").contains("12345678"));
        let fastmcp = recognize(
            "1 validation error for call[add]\nb\n  Missing required argument [type=missing_argument, input_value={'a': 1}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.14/v/missing_argument",
            "add",
        )
        .unwrap();
        assert_eq!(fields(&fastmcp), [("b", "Missing required argument")]);
        assert!(recognize("Unknown tool: 'nope'", "nope").is_some());
        assert!(recognize("Unknown tool: nope", "nope").is_some());
    }

    #[test]
    fn an_input_that_quotes_the_bracket_is_not_copied_either() {
        let python = recognize(
            "1 validation error for loginArguments\npassword\n  Input should be a valid string [type=string_type, input_value='x [type=y] hunter2', input_type=str]",
            "login",
        )
        .unwrap();
        assert_eq!(
            fields(&python),
            [("password", "Input should be a valid string")]
        );
    }

    #[test]
    fn a_text_of_many_commas_is_read_in_one_pass() {
        // Each `, ` once, and the path after it once: a text of a million
        // commas, none of them starting an issue, is one issue.
        let text = format!("{INVALID_ARGUMENTS}add: a: bad{}", ", x".repeat(1_000_000));
        let envelope = recognize(&text, "add").unwrap();
        assert_eq!(envelope.violations().len(), 1);
        assert_eq!(envelope.violations()[0].field, "a");
    }

    #[test]
    fn other_texts_are_not_argument_errors() {
        for text in [
            "Error executing tool add: division by zero",
            "1 validation error for UpstreamPayload\nx\n  Field required [type=missing]",
            "Unknown tool: other",
            "tool refused: bad input",
            "MCP error -32603: internal",
        ] {
            assert!(recognize(text, "add").is_none(), "{text}");
        }
    }
}
