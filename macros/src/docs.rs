//! Doc comments as rustdoc shows them: the text a tool's description and
//! its parameters' are made of.

use syn::Attribute;

/// One run of a doc comment: text written in place, or a macro rustc expands
/// (`#[doc = include_str!("search.md")]`).
pub enum DocPart<'a> {
    /// Lines written in place, read as rustdoc reads them.
    Text(String),
    /// A `#[doc = some_macro!(...)]`, kept for rustc to expand.
    Macro(&'a syn::Expr),
}

/// The doc comment of `attrs`, in runs: text written in place as rustdoc
/// reads it (one leading space stripped from each line, the lines of a Rust
/// code example that rustdoc hides left out), and the macros between them.
pub fn doc_parts(attrs: &[Attribute]) -> Vec<DocPart<'_>> {
    let mut parts = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    // Carried across a macro's text: `/// ```` and `#[doc =
    // include_str!("example.rs")]` then `/// ```` is one example.
    let mut fence = None;
    let mut flush = |lines: &mut Vec<String>, parts: &mut Vec<DocPart<'_>>| {
        if !lines.is_empty() {
            parts.push(DocPart::Text(shown_lines(lines, &mut fence).join("\n")));
            lines.clear();
        }
    };
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("doc")) {
        let syn::Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => lines.extend(text.value().split('\n').map(|line| {
                let line = line.trim_end_matches('\r');
                line.strip_prefix(' ').unwrap_or(line).to_owned()
            })),
            expr @ syn::Expr::Macro(_) => {
                flush(&mut lines, &mut parts);
                parts.push(DocPart::Macro(expr));
            }
            _ => {}
        }
    }
    flush(&mut lines, &mut parts);
    parts
}

/// The text of `#[doc = "..."]` attributes, as rustdoc reads it: one leading
/// space stripped from each line, hidden example lines left out, lines
/// joined, trimmed. A macro's text (`include_str!`) is not read here.
pub fn doc_text(attrs: &[Attribute]) -> String {
    let texts: Vec<String> = doc_parts(attrs)
        .into_iter()
        .filter_map(|part| match part {
            DocPart::Text(text) => Some(text),
            DocPart::Macro(_) => None,
        })
        .collect();
    texts.join("\n").trim().to_owned()
}

/// An open code fence: its mark (`` ` `` or `~`), how many, and whether
/// rustdoc reads the example as Rust.
#[derive(Clone, Copy)]
struct Fence {
    mark: char,
    len: usize,
    rust: bool,
}

/// The fence `line` writes, as the `CommonMark` spec reads one: three or more of a
/// mark after at most three spaces, and for backticks, none in the rest.
fn fence_of(line: &str) -> Option<(char, usize, &str)> {
    let rest = line.trim_start_matches(' ');
    if line.len() - rest.len() > 3 {
        return None;
    }
    ['`', '~'].into_iter().find_map(|mark| {
        let len = rest.chars().take_while(|&c| c == mark).count();
        let info = &rest[len..];
        (len >= 3 && !(mark == '`' && info.contains('`'))).then_some((mark, len, info))
    })
}

/// `lines` without those rustdoc hides: in a fenced code example it reads as
/// Rust (no language, `rust`, or only rustdoc's own words such as
/// `no_run`), a line that is `#` or starts with `# ` is left out, and a
/// leading `##` is shown as `#`. The model reads what a reader of the docs
/// sees, not the set-up around an example. `fence`: the fence open before
/// the first line, and after the last.
fn shown_lines(lines: &[String], fence: &mut Option<Fence>) -> Vec<String> {
    let mut shown = Vec::with_capacity(lines.len());
    for line in lines {
        match (*fence, fence_of(line)) {
            (None, Some((mark, len, info))) => {
                *fence = Some(Fence {
                    mark,
                    len,
                    rust: is_rust(info),
                });
            }
            (Some(open), Some((mark, len, info)))
                if mark == open.mark && len >= open.len && info.trim().is_empty() =>
            {
                *fence = None;
            }
            (Some(Fence { rust: true, .. }), _) => {
                let code = line.trim_start();
                if code.starts_with("##") {
                    let at = line.len() - code.len();
                    shown.push(format!("{}{}", &line[..at], &code[1..]));
                } else if code != "#" && !code.starts_with("# ") && !code.starts_with("#\t") {
                    shown.push(line.clone());
                }
                continue;
            }
            _ => {}
        }
        shown.push(line.clone());
    }
    shown
}

/// Whether a code fence's info string makes rustdoc read the example as
/// Rust, as stable rustdoc decides: not when it says `custom`; else when
/// it says nothing rustdoc does not know, or says `rust` — or one of
/// rustdoc's own words (`no_run`, `edition2021`) — before the first word it
/// does not know.
fn is_rust(info: &str) -> bool {
    let own = |word: &str| {
        matches!(
            word,
            "rust"
                | "ignore"
                | "should_panic"
                | "no_run"
                | "compile_fail"
                | "test_harness"
                | "standalone_crate"
        ) || word.starts_with("edition")
            || word.starts_with("ignore-")
    };
    let (mut seen_own, mut seen_other) = (false, false);
    for word in info
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|word| !word.is_empty())
    {
        match word {
            "custom" => return false,
            "rust" => seen_own = true,
            word if own(word) => seen_own |= !seen_other,
            _ => seen_other = true,
        }
    }
    !seen_other || seen_own
}
