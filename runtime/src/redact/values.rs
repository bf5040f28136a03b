//! Secret values, wherever they turn up: a call knows the values that were
//! sent where its tool's schema marks a secret and into a
//! [`Secret`](crate::Secret) — and, calling a remote tool, those sent under
//! keys its schema does not declare, or every text it sent when it has no
//! schema; no text about the call may quote them.
//! A server's message that echoes a rejected password, an `attempted_query`
//! a server wrote with the arguments it received, a violation that quotes
//! the value: each is masked by the values themselves, whatever the schema
//! says of the place they turn up in.
//!
//! A value of four characters or more is masked wherever it appears; a
//! shorter one only where it stands as a word of its own (not inside a
//! longer run of letters and digits), so that a one-letter secret does not
//! take every such letter out of a message. A number is masked where it is
//! the number, or a word of a text.
//!
//! One call's secrets are bounded — the first [`MAX_VALUES`] texts,
//! [`MAX_BYTES`] in all — so that a client cannot make a server build a
//! search for half a million strings by sending them where a password goes.
//! Past the bound, the texts left out are not searched for, and every text
//! of the call is masked whole instead: none could be shown safely.
//!
//! A secret of 24 to 512 characters is searched for in stretches of 12
//! too, so that a text quoting it cut short shows none of it (pydantic
//! quotes a long input as its first 25 characters, `...` and its last 24).
//! Each string is searched for as it is, as JSON and Rust's `{:?}` escape
//! it, and as a URL carries it (percent-encoded, spaces as `%20` or `+`);
//! a whole float also as Rust writes it (`1234`, not `1234.0`).

use std::borrow::Cow;
use std::collections::HashSet;

use aho_corasick::AhoCorasick;
use serde_json::Value;

use crate::redact::REDACTED;

/// Values shorter than this are masked only where they stand as a word.
const ANYWHERE: usize = 4;

/// The most texts one call searches for.
pub(crate) const MAX_VALUES: usize = 4096;

/// How many characters of a long secret a text may quote, cut short,
/// before it is masked.
const WINDOW: usize = 12;

/// The shortest secret searched for in stretches too: shorter ones are
/// not cut short when quoted.
const WINDOWED: usize = 2 * WINDOW;

/// The longest: a key or a token, not a document.
const MOST_WINDOWED: usize = 512;

/// The most bytes of texts one call searches for.
pub(crate) const MAX_BYTES: usize = 256 * 1024;

/// The secret values of one call, as the texts to look for.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecretValues {
    texts: Vec<String>,
    known: HashSet<String>,
    bytes: usize,
    /// Whether a text was left out past the bound: then no text of the
    /// call can be shown as it is.
    overflowed: bool,
    /// The stretches of long secrets, bounded apart: they never crowd out
    /// a secret itself.
    stretches: Vec<String>,
    /// The ends of secrets too long for stretches, each with its secret:
    /// a text cut short quotes a secret's beginning (or, cut at its start,
    /// its end), which is masked as far as it goes on matching.
    ends: Vec<End>,
}

/// The first or the last [`END`] characters of a secret too long for
/// stretches (a key file, a document), and the secret.
#[derive(Debug, Clone)]
struct End {
    text: String,
    secret: std::sync::Arc<str>,
    head: bool,
}

/// How many characters of a very long secret's beginning or end find it.
const END: usize = 24;

/// The most very long secrets one call searches for by their ends.
const MAX_ENDS: usize = 512;

/// The most stretches of long secrets one call searches for.
const MAX_STRETCHES: usize = 4096;

/// What a URL's component encoding escapes: all but RFC 3986's unreserved.
const COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

impl SecretValues {
    /// Every string and number inside `value` is secret.
    pub(crate) fn add(&mut self, value: &Value) {
        self.walk(value, |_| true);
    }

    /// Every string inside `value` long enough to be masked wherever it
    /// appears: what is sent to a tool whose schema says nothing of where
    /// its secrets are.
    pub(crate) fn add_long_strings(&mut self, value: &Value) {
        self.walk(
            value,
            |text| matches!(text, Value::String(text) if text.chars().count() >= ANYWHERE),
        );
    }

    fn walk(&mut self, value: &Value, wanted: impl Fn(&Value) -> bool) {
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                Value::String(text) if wanted(value) => self.add_text(text.clone()),
                Value::Number(number) if wanted(value) => {
                    // `1234.0` as Rust's `Display` writes it: `1234`.
                    if let Some(whole) = number
                        .as_f64()
                        .filter(|n| n.fract() == 0.0 && n.abs() < 1e15)
                        && number.is_f64()
                    {
                        self.add_text(format!("{whole}"));
                    }
                    self.add_text(number.to_string());
                }
                Value::Array(items) => pending.extend(items),
                Value::Object(members) => pending.extend(members.values()),
                _ => {}
            }
        }
    }

    fn add_text(&mut self, text: String) {
        if text.is_empty() || text == REDACTED || self.known.contains(&text) {
            return;
        }
        // As a JSON text would quote it, as Rust's `{:?}` would, and as a
        // URL carries it (a component; a form, spaces as `+`), where those
        // differ.
        let escaped = serde_json::to_string(&text).expect("a string serializes");
        let escaped = &escaped[1..escaped.len() - 1];
        let debug = text.escape_debug().to_string();
        let component = percent_encoding::utf8_percent_encode(&text, COMPONENT).to_string();
        let form = component.replace("%20", "+");
        for form in [escaped, &debug, &component, &form] {
            if form != text {
                self.push(form.to_owned());
                // Cut short, a very long secret is quoted in its escaped
                // forms too (a request body echoed as JSON).
                if form.chars().count() > MOST_WINDOWED {
                    self.add_ends(form);
                }
            }
        }
        self.push(text.clone());
        self.add_windows(&text);
    }

    /// The stretches of [`WINDOW`] characters of a long secret, to mask
    /// what a text quotes of it cut short: pydantic quotes a long input
    /// as its first 25 characters, `...` and its last 24. Past the bound,
    /// stretches are left out, never a secret (each is searched for whole
    /// still): they are bounded apart ([`MAX_STRETCHES`]).
    fn add_windows(&mut self, text: &str) {
        let count = text.chars().count();
        if count > MOST_WINDOWED {
            self.add_ends(text);
            return;
        }
        if count < WINDOWED {
            return;
        }
        let bounds: Vec<usize> = (text.char_indices().map(|(at, _)| at))
            .chain([text.len()])
            .collect();
        for start in 0..=count - WINDOW {
            if self.stretches.len() == MAX_STRETCHES {
                return;
            }
            let window = &text[bounds[start]..bounds[start + WINDOW]];
            if self.known.insert(window.to_owned()) {
                self.stretches.push(window.to_owned());
            }
        }
    }

    /// The first and last [`END`] characters of a secret too long for
    /// stretches: a text cut to length after a few KiB quotes its
    /// beginning, and no stretch of it is searched for.
    fn add_ends(&mut self, text: &str) {
        if self.ends.iter().any(|known| &*known.secret == text) {
            return;
        }
        if self.ends.len() + 2 > MAX_ENDS {
            // Not searched for by its ends: no text can be shown as it is.
            self.overflowed = true;
            return;
        }
        let secret: std::sync::Arc<str> = std::sync::Arc::from(text);
        let head_end = text
            .char_indices()
            .nth(END)
            .map_or(text.len(), |(at, _)| at);
        let count = text.chars().count();
        let tail_start = text.char_indices().nth(count - END).map_or(0, |(at, _)| at);
        for (end, head) in [(&text[..head_end], true), (&text[tail_start..], false)] {
            self.ends.push(End {
                text: end.to_owned(),
                secret: std::sync::Arc::clone(&secret),
                head,
            });
        }
    }

    fn push(&mut self, text: String) {
        if self.known.contains(&text) {
            return;
        }
        if self.texts.len() == MAX_VALUES || self.bytes + text.len() > MAX_BYTES {
            self.overflowed = true;
            return;
        }
        self.bytes += text.len();
        self.known.insert(text.clone());
        self.texts.push(text);
    }

    /// Every text of `other` too.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn merge(&mut self, other: &SecretValues) {
        self.overflowed |= other.overflowed;
        for text in &other.texts {
            self.push(text.clone());
        }
        for stretch in &other.stretches {
            if self.stretches.len() < MAX_STRETCHES && self.known.insert(stretch.clone()) {
                self.stretches.push(stretch.clone());
            }
        }
        for end in &other.ends {
            let known = |known: &End| known.head == end.head && known.secret == end.secret;
            if self.ends.iter().any(known) {
                continue;
            }
            if self.ends.len() == MAX_ENDS {
                self.overflowed = true;
                break;
            }
            self.ends.push(end.clone());
        }
    }

    /// The values `masked` hides of `original`: wherever the masked value
    /// holds `"[redacted]"` and the original one something else.
    pub(crate) fn add_hidden(&mut self, original: &Value, masked: &Value) {
        let mut pending = vec![(original, masked)];
        while let Some((original, masked)) = pending.pop() {
            match (original, masked) {
                (original, Value::String(text)) if text == REDACTED && original != masked => {
                    self.add(original);
                }
                (Value::Object(original), Value::Object(masked)) => pending.extend(
                    original
                        .iter()
                        .filter_map(|(key, value)| Some((value, masked.get(key)?))),
                ),
                (Value::Array(original), Value::Array(masked)) => {
                    pending.extend(original.iter().zip(masked));
                }
                _ => {}
            }
        }
    }

    /// What masks the values, or `None` when there are none.
    pub(crate) fn masker(&self) -> Option<Masker> {
        if self.texts.is_empty() && !self.overflowed {
            return None;
        }
        // Bounded as they are, the texts always fit an automaton.
        let patterns = || {
            (self.texts.iter().chain(&self.stretches)).chain(self.ends.iter().map(|end| &end.text))
        };
        let automaton = AhoCorasick::new(patterns()).expect("the secret values fit an automaton");
        let short = patterns()
            .map(|text| text.chars().count() < ANYWHERE)
            .collect();
        let first_end = self.texts.len() + self.stretches.len();
        Some(Masker {
            automaton,
            short,
            whole: self.overflowed,
            ends: self.ends.clone(),
            first_end,
            secrets: patterns().take(first_end).cloned().collect(),
            codes: std::sync::OnceLock::new(),
        })
    }
}

/// The most matches of secret values searched for in one text.
const MAX_MATCHES: usize = 64 * 1024;

/// Masks a call's secret values in texts and JSON values.
#[derive(Debug)]
pub(crate) struct Masker {
    automaton: AhoCorasick,
    /// Per value: whether it is masked only as a word of its own.
    short: Vec<bool>,
    /// Whether every text is masked whole: the call's secrets were past
    /// the bound, and some are not searched for.
    whole: bool,
    /// The ends of very long secrets, the patterns from `first_end` on.
    ends: Vec<End>,
    first_end: usize,
    /// The secrets and their stretches, for `codes`.
    secrets: Vec<String>,
    /// The secrets as a code reads them ([`codes::as_code`]), built when
    /// first needed: most calls never read a server's reason.
    codes: std::sync::OnceLock<Option<AhoCorasick>>,
}

impl Masker {
    /// `text` with every secret value in it replaced by `"[redacted]"`;
    /// borrowed when there is none.
    ///
    /// Secret values that overlap each other are all found, so their
    /// matches are bounded ([`MAX_MATCHES`]): values a caller chose to
    /// nest inside each other (`aaaa`, `aaaaa`, …) would otherwise find
    /// hundreds of matches at every byte of a long text. A text past the
    /// bound is masked whole.
    pub(crate) fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.whole && !text.is_empty() && text != REDACTED {
            return Cow::Owned(REDACTED.to_owned());
        }
        self.searched(text)
    }

    /// Where `found` is masked in `text`: where it matched, or, for the
    /// end of a very long secret, as far before or after it as the text
    /// goes on quoting the secret — never into what that end already
    /// reached (`covered`, one place per end), so that the ends of a
    /// secret that repeats itself (`abab…`) cost one pass over the text,
    /// not one a match.
    fn span(
        &self,
        text: &str,
        found: &aho_corasick::Match,
        covered: &mut [usize],
    ) -> (usize, usize) {
        let (start, end) = (found.start(), found.end());
        let Some((at, long)) = (found.pattern().as_usize())
            .checked_sub(self.first_end)
            .and_then(|at| Some((at, self.ends.get(at)?)))
        else {
            return (start, end);
        };
        let reached = &mut covered[at];
        if end <= *reached {
            return (start, end);
        }
        let secret = long.secret.as_bytes();
        let span = if long.head {
            let from = start.max(*reached);
            let same = (text.as_bytes()[from..].iter())
                .zip(secret.get(from - start..).unwrap_or_default())
                .take_while(|(a, b)| a == b)
                .count();
            let mut until = from + same;
            while !text.is_char_boundary(until) {
                until -= 1;
            }
            (start, until.max(end))
        } else {
            let same = (text.as_bytes()[*reached..end].iter().rev())
                .zip(secret.iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            let mut from = end - same;
            while !text.is_char_boundary(from) {
                from += 1;
            }
            (from.min(start), end)
        };
        *reached = (*reached).max(span.1);
        span
    }

    /// `text` with every secret value searched for masked.
    fn searched<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let word = |at: Option<char>| at.is_none_or(|c| !c.is_alphanumeric());
        let mut covered = vec![0; self.ends.len()];
        let mut found = self.automaton.find_overlapping_iter(text);
        let mut spans: Vec<(usize, usize)> = (found.by_ref())
            .take(MAX_MATCHES)
            .filter(|found| {
                !self.short[found.pattern().as_usize()]
                    || (word(text[..found.start()].chars().next_back())
                        && word(text[found.end()..].chars().next()))
            })
            .map(|found| self.span(text, &found, &mut covered))
            .collect();
        if found.next().is_some() {
            return Cow::Owned(REDACTED.to_owned());
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut masked = String::with_capacity(text.len());
        let mut copied = 0;
        for (start, end) in spans {
            if end <= copied {
                continue;
            }
            if start >= copied {
                masked.push_str(&text[copied..start]);
                masked.push_str(REDACTED);
            }
            copied = end;
        }
        masked.push_str(&text[copied..]);
        Cow::Owned(masked)
    }

    /// Masks the secret values everywhere in `envelope`: its texts, its
    /// attempted query, its partial results, and the original error it
    /// keeps (its `Debug`, its `source()`) — through the visitors the
    /// envelope offers.
    pub(crate) fn envelope(&self, envelope: &mut crate::ErrorEnvelope) {
        envelope.visit_texts(&mut |text| {
            if let Cow::Owned(masked) = self.text(text) {
                *text = masked;
            }
        });
        envelope.visit_values(&mut |value| self.value(value));
        envelope.mask_origin(&|text| match self.text(text) {
            Cow::Owned(masked) => Some(masked),
            Cow::Borrowed(_) => None,
        });
    }

    /// Whether `text` is, whole, one of the secret values.
    fn is_whole(&self, text: &str) -> bool {
        self.whole
            || self
                .automaton
                .find_overlapping_iter(text)
                .any(|found| found.start() == 0 && found.end() == text.len())
    }

    /// Masks `value` in place: secret values inside its strings and keys,
    /// and numbers that are one (a number that merely holds one keeps its
    /// type: `7.5` is not the secret `7`).
    pub(crate) fn value(&self, value: &mut Value) {
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                Value::String(text) => {
                    if let Cow::Owned(masked) = self.text(text) {
                        *text = masked;
                    }
                }
                Value::Number(number) => {
                    if self.is_whole(&number.to_string()) {
                        *value = Value::String(REDACTED.to_owned());
                    }
                }
                Value::Array(items) => pending.extend(items.iter_mut()),
                Value::Object(members) => {
                    // Keys are searched, never masked whole: they name what
                    // an object holds, each its own place.
                    if members
                        .keys()
                        .any(|key| matches!(self.searched(key), Cow::Owned(_)))
                    {
                        *members = std::mem::take(members)
                            .into_iter()
                            .map(|(key, value)| (self.searched(&key).into_owned(), value))
                            .collect();
                    }
                    pending.extend(members.values_mut());
                }
                Value::Bool(_) | Value::Null => {}
            }
        }
    }
}

mod codes;

#[cfg(test)]
mod tests;
