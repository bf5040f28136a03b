//! Text shown to a person who decides — on the inbox's pages, in a notice
//! posted to a chat — with every character that does not show itself
//! written out: what a caller sent cannot make one order read as another.

use unicode_general_category::{GeneralCategory, get_general_category};

/// How many combining marks in a row are shown as they are: past it, they
/// are written out, so that a stack of them cannot spill over the line
/// above or below (an amount beside it).
const MOST_MARKS_IN_A_ROW: usize = 2;

/// Whether `c` does not show itself: controls, formatting characters (the
/// marks that turn the direction of what follows, those of no width),
/// line and paragraph separators, private and unassigned code points, and
/// the other characters Unicode says to ignore by default (fillers,
/// variation selectors).
fn hidden(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
            | GeneralCategory::Unassigned
    ) || matches!(
        c,
        '\u{034f}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{ffa0}'
            | '\u{e0100}'..='\u{e01ef}'
    )
}

/// Whether `c` is a combining mark, drawn over the character before it.
fn combining(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::NonspacingMark | GeneralCategory::EnclosingMark
    )
}

/// `text` with each character that does not show itself ([`hidden`]), and
/// each combining mark past [`MOST_MARKS_IN_A_ROW`] in a row, written out
/// as `\u{202e}`. A backslash the text itself has before `u{` is written
/// out too (`\u{005c}u{202e}`): no two different texts are shown alike.
/// Any other backslash (a path's, a JSON escape's) is shown as it is. (A
/// look-alike of a backslash is shown as it is too: to a person,
/// `∖u{202e}` may still read as a character written out.)
pub(crate) fn visible(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    let mut marks = 0;
    for (at, c) in text.char_indices() {
        marks = if combining(c) { marks + 1 } else { 0 };
        let looks_written_out = c == '\\' && text[at + 1..].starts_with("u{");
        match hidden(c) || marks > MOST_MARKS_IN_A_ROW || looks_written_out {
            true => shown.push_str(&format!("\\u{{{:04x}}}", u32::from(c))),
            false => shown.push(c),
        }
    }
    shown
}

/// `json`, pretty-printed JSON, shown as [`visible`] shows a text, its
/// lines kept: a line break in pretty JSON is its layout (one inside a
/// string is written `\n` already).
pub(crate) fn visible_lines(json: &str) -> String {
    json.lines().map(visible).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::{visible, visible_lines};

    #[test]
    fn pretty_json_keeps_its_lines() {
        let pretty =
            serde_json::to_string_pretty(&serde_json::json!({"a": "x\ny\u{202e}"})).unwrap();
        assert_eq!(visible_lines(&pretty), "{\n  \"a\": \"x\\ny\\u{202e}\"\n}");
    }

    #[test]
    fn what_does_not_show_itself_is_written_out() {
        assert_eq!(visible("IN-\u{202e}0621"), "IN-\\u{202e}0621");
        assert_eq!(
            visible("a\u{200b}b\u{2028}c\u{2029}"),
            "a\\u{200b}b\\u{2028}c\\u{2029}"
        );
        assert_eq!(
            visible("\u{1bca0}\u{0600}\u{e0041}\u{fe0f}"),
            "\\u{1bca0}\\u{0600}\\u{e0041}\\u{fe0f}"
        );
        assert_eq!(visible("\u{7}\u{85}"), "\\u{0007}\\u{0085}");
        // A caller's own `\u{202e}` is not the mark written out.
        assert_eq!(visible("IN-\\u{202e}0621"), "IN-\\u{005c}u{202e}0621");
        assert_ne!(visible("IN-\\u{202e}0621"), visible("IN-\u{202e}0621"));
        assert_eq!(visible("\\\u{202e}"), "\\\\u{202e}");
        assert_eq!(visible(r"C:\temp\users \n \\"), r"C:\temp\users \n \\");
        // Letters of any script show themselves; accents, two at a time.
        assert_eq!(visible("Zoë א 1234"), "Zoë א 1234");
        assert_eq!(
            visible("e\u{301}\u{302}\u{303}"),
            "e\u{301}\u{302}\\u{0303}"
        );
    }
}
