//! Local `$ref`s of a JSON Schema: `#` (the whole document) or a JSON
//! pointer in the fragment — `#/$defs/Name` as schemars writes it,
//! `#/definitions/Name` as draft-07 and zod-to-json-schema do, or any other
//! place such as `#/properties/a/items`.

use serde_json::Value;

/// The schema `reference` points at inside `root`, or `None` when it points
/// at another document, at an `$anchor`, or at nothing.
pub(crate) fn resolve<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    if !fragment.starts_with('/') {
        return None;
    }
    // A fragment is percent-encoded; a pointer escapes `~` and `/` itself,
    // and `Value::pointer` undoes that.
    root.pointer(&percent_decode(fragment)?)
}

/// `text` with its `%XX` escapes decoded; `None` if they do not make UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                decoded.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn local_references_in_every_spelling() {
        let root = json!({
            "properties": {"a": {"items": {"type": "string"}}},
            "$defs": {"New": {"type": "integer"}, "With Space": {"type": "null"}},
            "definitions": {"Old": {"type": "boolean"}, "a/b": {"const": 1}}
        });
        assert_eq!(resolve(&root, "#"), Some(&root));
        assert_eq!(
            resolve(&root, "#/$defs/New"),
            Some(&json!({"type": "integer"}))
        );
        assert_eq!(
            resolve(&root, "#/definitions/Old"),
            Some(&json!({"type": "boolean"}))
        );
        assert_eq!(
            resolve(&root, "#/properties/a/items"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(
            resolve(&root, "#/$defs/With%20Space"),
            Some(&json!({"type": "null"}))
        );
        assert_eq!(
            resolve(&root, "#/definitions/a~1b"),
            Some(&json!({"const": 1}))
        );
        assert_eq!(resolve(&root, "#/$defs/Missing"), None);
        assert_eq!(resolve(&root, "other.json#/$defs/New"), None);
        assert_eq!(resolve(&root, "#anchor"), None);
    }
}
