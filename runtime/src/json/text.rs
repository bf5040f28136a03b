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

/// A [`JsonText`] being written: in place up to [`INLINE`] bytes — the
/// common case, no allocation, nothing copied at the end but the bytes
/// themselves — and on the heap past that.
///
/// While it is inline, every byte past what was written is zero, so that
/// two texts alike compare equal however they were written.
pub struct TextBuf {
    len: u8,
    inline: [u8; INLINE],
    /// Past [`INLINE`] bytes, everything so far; empty, with no capacity,
    /// until then.
    heap: Vec<u8>,
}

/// What was written so far, quoted.
impl fmt::Debug for TextBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&String::from_utf8_lossy(self.as_bytes()), f)
    }
}

// A `TextBuf`'s length, while inline, is kept in a `u8`.
const _: () = assert!(INLINE <= u8::MAX as usize);

impl TextBuf {
    /// A text that starts with `start`, which fits inline.
    pub(crate) fn starting_with(start: &[u8]) -> Self {
        let mut text = TextBuf {
            len: 0,
            inline: [0; INLINE],
            heap: Vec::new(),
        };
        text.extend(start);
        text
    }

    fn spilled(&self) -> bool {
        self.heap.capacity() != 0
    }

    /// What was written so far.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self.spilled() {
            true => &self.heap,
            false => &self.inline[..usize::from(self.len)],
        }
    }

    /// How many bytes were written.
    pub(crate) fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Writes `bytes` after what was written.
    #[inline]
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        if !self.spilled() {
            let len = usize::from(self.len);
            if let Some(room) = self.inline.get_mut(len..len + bytes.len()) {
                room.copy_from_slice(bytes);
                // At most `INLINE`, which a `u8` holds.
                self.len = (len + bytes.len()) as u8;
                return;
            }
            self.spill(bytes.len());
        }
        self.heap.extend_from_slice(bytes);
    }

    /// Moves what was written to the heap, with room for `more`.
    #[cold]
    fn spill(&mut self, more: usize) {
        let written = &self.inline[..usize::from(self.len)];
        let mut heap = Vec::with_capacity((written.len() + more).max(2 * INLINE));
        heap.extend_from_slice(written);
        self.heap = heap;
    }

    /// Forgets what was written past `len` bytes.
    pub(crate) fn truncate(&mut self, len: usize) {
        match self.spilled() {
            true => self.heap.truncate(len),
            false if len < usize::from(self.len) => {
                self.inline[len..usize::from(self.len)].fill(0);
                // Less than it was.
                self.len = len as u8;
            }
            false => {}
        }
    }

    /// The text written: UTF-8 that `serde_json` wrote, checked when read
    /// as [`JsonText`] is.
    pub(crate) fn into_text(self) -> JsonText {
        match self.spilled() {
            false => JsonText::Inline {
                len: self.len,
                bytes: self.inline,
            },
            true if self.heap.len() > INLINE => JsonText::Heap(self.heap.into_boxed_slice()),
            // Short again, after a truncation.
            true => JsonText::of_utf8(&self.heap),
        }
    }
}

impl std::io::Write for TextBuf {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.extend(bytes);
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.extend(bytes);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::{INLINE, JsonText, TextBuf};

    #[test]
    fn a_text_written_in_pieces_is_the_text_made_at_once() {
        let edge = "y".repeat(INLINE - 2);
        for pieces in [
            vec!["{", "}"],
            vec!["{", &edge, "}"],
            vec!["{", &edge, "}", "z"],
            vec!["{", &edge, &edge, "}"],
        ] {
            let mut buf = TextBuf::starting_with(b"");
            pieces.iter().for_each(|piece| buf.extend(piece.as_bytes()));
            let whole = pieces.concat();
            assert_eq!(buf.len(), whole.len());
            let text = buf.into_text();
            assert_eq!(text, JsonText::new(&whole), "{whole}");
            assert_eq!(text.is_inline(), whole.len() <= INLINE);
        }
    }

    #[test]
    fn a_truncated_text_equals_one_never_longer() {
        for long in [10, INLINE + 50] {
            let mut buf = TextBuf::starting_with(b"{\"a\":");
            let start = buf.len();
            buf.extend("x".repeat(long).as_bytes());
            buf.truncate(start);
            buf.extend(b"1}");
            let text = buf.into_text();
            assert_eq!(text, JsonText::new(r#"{"a":1}"#), "{long}");
            assert!(text.is_inline());
        }
    }

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
