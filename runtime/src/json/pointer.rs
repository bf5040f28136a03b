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
    // and `Value::pointer` undoes that. Escapes that do not make UTF-8
    // point at nothing.
    let pointer = percent_encoding::percent_decode_str(fragment)
        .decode_utf8()
        .ok()?;
    root.pointer(&pointer)
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
        // Escapes that do not make UTF-8 point at nothing.
        assert_eq!(resolve(&root, "#/$defs/%FF"), None);
    }
}
