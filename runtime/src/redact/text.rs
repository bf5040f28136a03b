//! Credentials in free text: an error message that quotes a connection
//! string or a header carries its password to whoever reads the message.
//!
//! [`scrub`] masks what is recognisably a credential and leaves the rest, so
//! that the message still says what failed and where:
//!
//! - the user information of a URL: `postgres://orders_admin:Pa55w0rd@10.0.3.7/orders`
//!   → `postgres://[redacted]@10.0.3.7/orders`;
//! - the value after a key that names a secret, with `=` or `:` —
//!   `password=…`, `"api_key": "…"`, `db_password: …`, `token=…&`,
//!   `Authorization: Bearer …`;
//! - the token after `Bearer`, and the credentials after `Basic` (base64
//!   of a `user:password` pair);
//! - a value quoted with escaped quotes (`{\"password\":\"…\"}`), or
//!   holding some (`password="pa\"ss"`).

use std::borrow::Cow;

use serde_json::Value;

use crate::redact::REDACTED;

/// Key names that mark the value after them as a secret, in lower case with
/// `-` read as `_`; a key ending in `_` and one of them counts too
/// (`db_password`, `aws_secret_access_key`).
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "secret",
    "token",
    "key",
    "apikey",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "cookie",
    "session",
    "signature",
    "sig",
];

/// `text` with every credential it recognises replaced by `[redacted]`;
/// borrowed when there is none.
pub(crate) fn scrub(text: &str) -> Cow<'_, str> {
    let mut current = Cow::Borrowed(text);
    for step in [scrub_userinfo, scrub_key_values, scrub_schemes] {
        let changed = match step(&current) {
            Cow::Owned(changed) => Some(changed),
            Cow::Borrowed(_) => None,
        };
        if let Some(changed) = changed {
            current = Cow::Owned(changed);
        }
    }
    current
}

/// [`scrub`] in place: `text` rewritten only when it held a credential.
pub(crate) fn scrub_in_place(text: &mut String) {
    if let Cow::Owned(clean) = scrub(text) {
        *text = clean;
    }
}

/// [`scrub`] through a JSON value, at any depth: each string scrubbed, and
/// what is under a key that names a secret (`"password": …`,
/// `"api_key": […]`, `"credentials": {…}`) replaced whole, as `password=…`
/// is in a text — but `null` and `true`/`false`, which say only whether
/// there is one. What an
/// escalation carries besides its texts — the attempted query a branch
/// wrote, the partial results it gathered — is masked so before a person
/// reads it.
pub(crate) fn scrub_value(value: &mut Value) {
    // A loop, not recursion: a value built by hand has no depth bound.
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => scrub_in_place(text),
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(fields) => {
                for (key, field) in fields.iter_mut() {
                    match field {
                        Value::Null | Value::Bool(_) => {}
                        _ if is_secret_key(key) => *field = Value::String(REDACTED.to_owned()),
                        _ => pending.push(field),
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// `scheme://user:password@host` → `scheme://[redacted]@host`.
fn scrub_userinfo(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        // Not at `?` or `#`: a password written with one unescaped
        // (`postgres://app:pa#ss@db`) is masked whole, where the part after
        // it would be shown; a query or fragment is rarely followed by `@`
        // before the next `/`, and masking it then is the safe side.
        let authority_end = text[start..]
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'')
            .map_or(text.len(), |end| start + end);
        from = authority_end.max(start);
        if let Some(at) = text[start..authority_end].rfind('@') {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = start + at;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEYS.iter().any(|secret| {
        key == *secret
            || key
                .strip_suffix(secret)
                .is_some_and(|rest| rest.ends_with('_'))
            || (secret.len() > 4 && key.ends_with(secret))
    })
}

/// `password=…`, `"token": "…"`, `Api-Key: …`: the value after a secret key.
fn scrub_key_values(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c != b'=' && c != b':' {
            i += 1;
            continue;
        }
        // The key: the identifier before the separator, past a closing quote.
        let mut key_end = i;
        while key_end > 0 && bytes[key_end - 1] == b' ' {
            key_end -= 1;
        }
        if key_end > 0 && (bytes[key_end - 1] == b'"' || bytes[key_end - 1] == b'\'') {
            key_end -= 1;
            // JSON quoted again (`{\"password\":\"…\"}`, a body's `Debug`).
            if key_end > 0 && bytes[key_end - 1] == b'\\' {
                key_end -= 1;
            }
        }
        let mut key_start = key_end;
        while key_start > 0 && is_key_char(bytes[key_start - 1] as char) {
            key_start -= 1;
        }
        // `://` is a URL, not a key.
        let is_url = c == b':' && text[i..].starts_with("://");
        if is_url || key_start == key_end || !is_secret_key(&text[key_start..key_end]) {
            i += 1;
            continue;
        }
        // The value: past spaces and an opening quote, up to its end.
        let mut start = i + 1;
        // Ruby's `"password" => "…"`.
        if c == b'=' && bytes.get(start) == Some(&b'>') {
            start += 1;
        }
        while start < bytes.len() && bytes[start] == b' ' {
            start += 1;
        }
        // A quote escaped itself (`\"…\"`) opens a value that ends at the
        // same escaped quote.
        let escaped = bytes.get(start) == Some(&b'\\');
        let quote = bytes
            .get(start + usize::from(escaped))
            .copied()
            .filter(|q| *q == b'"' || *q == b'\'');
        if quote.is_some() {
            start += 1 + usize::from(escaped);
        }
        // `Authorization: Bearer abc`: the scheme stays, the token goes.
        for scheme in ["Bearer ", "Basic ", "bearer ", "basic ", "Token ", "token "] {
            if text[start..].starts_with(scheme) {
                start += scheme.len();
                break;
            }
        }
        let end = match quote {
            Some(q) if escaped => text[start..]
                .find(if q == b'"' { "\\\"" } else { "\\'" })
                .map_or(text.len(), |end| start + end),
            Some(q) => quoted_end(&bytes[start..], q).map_or(text.len(), |end| start + end),
            None => text[start..]
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '&' | ';' | ',' | '"' | '\'' | ')' | ']' | '}')
                })
                .map_or(text.len(), |end| start + end),
        };
        if end > start && !text[start..].starts_with(REDACTED) {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
        }
        i = end.max(i + 1);
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Where the quoted value at the start of `value` ends: at its closing
/// quote `q`, past quotes escaped with `\`.
fn quoted_end(value: &[u8], q: u8) -> Option<usize> {
    let mut escaped = false;
    for (at, &b) in value.iter().enumerate() {
        match b {
            b'\\' if !escaped => escaped = true,
            _ if b == q && !escaped => return Some(at),
            _ => escaped = false,
        }
    }
    None
}

/// Whether `token` is HTTP Basic credentials: base64 (padded or not) of a
/// `user:password` pair. Not a word after "basic" in prose.
fn is_basic_credentials(token: &str) -> bool {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
    let decoded = STANDARD
        .decode(token)
        .or_else(|_| STANDARD_NO_PAD.decode(token));
    decoded.is_ok_and(|pair| pair.contains(&b':'))
}

/// `Bearer abc.def` anywhere: the token after the scheme; and after
/// `Basic`, credentials.
fn scrub_schemes(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    loop {
        let next = ["Bearer ", "bearer ", "Basic ", "basic "]
            .iter()
            .filter_map(|scheme| {
                text[from..]
                    .find(scheme)
                    .map(|at| (from + at, scheme.len()))
            })
            .min();
        let Some((at, len)) = next else { break };
        let start = at + len;
        let end = text[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';'))
            .map_or(text.len(), |end| start + end);
        // Basic credentials end where base64 does (`…dw==.`, `…dw==\"`).
        let basic = len == "Basic ".len();
        let end = match basic {
            true => text[start..end]
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')))
                .map_or(end, |stop| start + stop),
            false => end,
        };
        if end > start
            && !text[start..].starts_with(REDACTED)
            && (!basic || is_basic_credentials(&text[start..end]))
        {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
        }
        from = end.max(start);
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_of_a_connection_string_is_masked() {
        assert_eq!(
            scrub("could not connect to postgres://orders_admin:Pa55w0rd@10.0.3.7:5432/orders"),
            "could not connect to postgres://[redacted]@10.0.3.7:5432/orders"
        );
        assert_eq!(
            scrub("GET https://user:pw@api.example.com/v1?x=1 failed"),
            "GET https://[redacted]@api.example.com/v1?x=1 failed"
        );
    }

    #[test]
    fn values_after_secret_keys_are_masked() {
        for (text, masked) in [
            (
                "login failed: password=hunter2 user=ops",
                "login failed: password=[redacted] user=ops",
            ),
            (
                r#"{"api_key": "sk_live_123", "id": 4}"#,
                r#"{"api_key": "[redacted]", "id": 4}"#,
            ),
            (
                "db_password: s3cret; host=db",
                "db_password: [redacted]; host=db",
            ),
            (
                "GET /v1?token=abc123&page=2",
                "GET /v1?token=[redacted]&page=2",
            ),
            (
                "Authorization: Bearer eyJhbGciOi.x.y",
                "Authorization: Bearer [redacted]",
            ),
            ("X-Api-Key: k-123", "X-Api-Key: [redacted]"),
            (
                "sent Bearer abc.def to the proxy",
                "sent Bearer [redacted] to the proxy",
            ),
            (
                "AWS_SECRET_ACCESS_KEY=wJalr",
                "AWS_SECRET_ACCESS_KEY=[redacted]",
            ),
        ] {
            assert_eq!(scrub(text), masked, "{text}");
        }
    }

    /// The shapes a quoted body, a Ruby hash or a proxy's log line takes.
    #[test]
    fn escaped_quotes_basic_credentials_and_odd_passwords_are_masked() {
        for (text, masked) in [
            (
                r#"body: "{\"password\":\"hunter2\",\"user\":\"ops\"}""#,
                r#"body: "{\"password\":\"[redacted]\",\"user\":\"ops\"}""#,
            ),
            (
                r#"password="pa\"ss word" user=ops"#,
                r#"password="[redacted]" user=ops"#,
            ),
            (
                r#"{"password"=>"hunter2"}"#,
                r#"{"password"=>"[redacted]"}"#,
            ),
            (
                "sent Basic dXNlcjpwdw== upstream",
                "sent Basic [redacted] upstream",
            ),
            (
                "sent Basic dXNlcjpwdw upstream",
                "sent Basic [redacted] upstream",
            ),
            (
                r#"sent "Basic dXNlcjpwdw==\" and Basic dXNlcjpwdw==."#,
                r#"sent "Basic [redacted]\" and Basic [redacted]."#,
            ),
            (
                "could not reach postgres://app:pa#ss@db/orders",
                "could not reach postgres://[redacted]@db/orders",
            ),
            // Prose after "basic" stays.
            ("basic authentication failed", "basic authentication failed"),
        ] {
            assert_eq!(scrub(text), masked, "{text}");
        }
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        for text in [
            "Connection to orders DB timed out after 5s",
            "Rate limit hit: retry at 12:30",
            "see https://example.com/docs#errors",
            "ratio 3:1, key count = 4",
            "",
        ] {
            assert!(matches!(scrub(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn scrubbing_twice_changes_nothing_more() {
        let once = scrub("postgres://a:b@h password=x Bearer y").into_owned();
        assert_eq!(scrub(&once), once);
        assert!(!once.contains(":b@") && !once.contains("=x") && !once.contains(" y"));
    }
}
