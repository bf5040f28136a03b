//! A path into a call's arguments, as a failure names it: the field of a
//! violation (`a.b[2].c`), or a JSON pointer (`/a/b/2/c`).

use std::borrow::Cow;

/// One step of a path into the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// An object member.
    Key(Cow<'a, str>),
    /// An array item.
    Index(usize),
}

/// The steps of a path as `serde_path_to_error` writes it (`a.b[2].c`) or
/// as a JSON pointer (`/a/b/2/c`); `None` for one that does not read as
/// such — a map's key is written as it was sent, brackets and all, so a
/// path may be anything a client chose.
pub(crate) fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    if let Some(pointer) = path.strip_prefix('/') {
        let steps = pointer
            .split('/')
            .map(|token| match token.parse::<usize>() {
                Ok(index) => Step::Index(index),
                Err(_) if token.contains('~') => {
                    Step::Key(Cow::Owned(token.replace("~1", "/").replace("~0", "~")))
                }
                Err(_) => Step::Key(Cow::Borrowed(token)),
            });
        return Some(steps.collect());
    }
    let mut steps = Vec::new();
    for part in path.split('.').filter(|part| !part.is_empty()) {
        let (key, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(Step::Key(Cow::Borrowed(key)));
        }
        // Each `[n]` in turn, and nothing else.
        while !rest.is_empty() {
            let close = rest.find(']')?;
            let index = rest.strip_prefix('[')?.get(..close - 1)?.parse().ok()?;
            steps.push(Step::Index(index));
            rest = &rest[close + 1..];
        }
    }
    Some(steps)
}
