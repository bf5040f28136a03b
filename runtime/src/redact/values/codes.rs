//! Secrets as a code made of them reads: a server's `reason` is made a
//! code as it is read (`reasons::normalize`: upper case, `_` for the
//! rest), so a secret it quotes is looked for in that form.

use aho_corasick::AhoCorasick;

use super::Masker;

/// The shortest secret looked for in a code, its letters and digits
/// counted: a shorter one is a word any code may hold.
const IN_A_CODE: usize = 6;

/// `text` as it reads in a code made of it: its ASCII letters and digits,
/// upper case, and nothing else.
pub(super) fn as_code(text: &str) -> String {
    let kept = text.chars().filter(char::is_ascii_alphanumeric);
    kept.map(|c| c.to_ascii_uppercase()).collect()
}

/// What finds any of `secrets` in a code, as [`as_code`] reads each —
/// whole, and without its leading digits, which a code drops where it
/// begins; `None` when none is long enough to look for.
pub(super) fn automaton<'a>(secrets: impl Iterator<Item = &'a String>) -> Option<AhoCorasick> {
    let mut codes = std::collections::HashSet::new();
    for secret in secrets {
        let code = as_code(secret);
        let trimmed = code
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .to_owned();
        codes.extend(
            [code, trimmed]
                .into_iter()
                .filter(|code| code.len() >= IN_A_CODE),
        );
    }
    (!codes.is_empty())
        .then(|| AhoCorasick::new(&codes).expect("the secret values fit an automaton"))
}

impl Masker {
    /// Whether `code` — a reason, made a code of whatever a server sent —
    /// quotes a secret: its letters and digits hold one's, whatever case
    /// and punctuation the code gave them.
    pub(crate) fn in_a_code(&self, code: &str) -> bool {
        let codes = self.codes.get_or_init(|| automaton(self.secrets.iter()));
        self.whole || (codes.as_ref()).is_some_and(|codes| codes.is_match(&as_code(code)))
    }
}
