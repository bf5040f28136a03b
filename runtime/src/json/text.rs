//! A short JSON text kept inline: a captured call's arguments, an envelope's
//! attempted query, moved from one to the other without a copy on the heap.

use std::fmt;

/// Texts up to this many bytes are kept inline.
pub(crate) const INLINE: usize = 118;

/// A JSON text: inline when short — the common case, no allocation at
/// all — or in one allocation of the exact size.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum JsonText {
    /// Up to [`INLINE`] bytes of UTF-8.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// A longer text.
    Heap(Box<[u8]>),
}

impl JsonText {
    /// The text `text`, copied in.
    pub(crate) fn new(text: &str) -> Self {
        JsonText::of_utf8(text.as_bytes())
    }

    /// The text `utf8` holds, copied in: UTF-8 that `serde_json` wrote. It
    /// is checked when it is read, so that keeping a text that is never
    /// read costs no check.
    pub(crate) fn of_utf8(utf8: &[u8]) -> Self {
        match u8::try_from(utf8.len()) {
            Ok(len) if utf8.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..utf8.len()].copy_from_slice(utf8);
                JsonText::Inline { len, bytes }
            }
            _ => JsonText::Heap(utf8.into()),
        }
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        let bytes = match self {
            JsonText::Inline { len, bytes } => &bytes[..usize::from(*len)],
            JsonText::Heap(bytes) => bytes,
        };
        std::str::from_utf8(bytes).expect("a JSON text is kept from UTF-8")
    }

    /// Whether the text is kept inline.
    #[cfg(test)]
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self, JsonText::Inline { .. })
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::{INLINE, JsonText};

    #[test]
    fn short_texts_are_inline_and_long_ones_on_the_heap() {
        let edge = "y".repeat(INLINE);
        for (text, inline) in [
            (String::new(), true),
            (r#"{"id":42}"#.to_owned(), true),
            (edge.clone(), true),
            (format!("{edge}z"), false),
            ("é".repeat(100), false),
        ] {
            let kept = JsonText::new(&text);
            assert_eq!(kept.as_str(), text);
            assert_eq!(kept.is_inline(), inline, "{text}");
        }
    }
}
