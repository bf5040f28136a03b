//! A path into a call's arguments, as a failure names it: the field of a
//! violation (`a.b[2].c`).

use std::borrow::Cow;

/// One step of a path into the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// An object member.
    Key(Cow<'a, str>),
    /// An array item.
    Index(usize),
}

/// The steps of a path as `serde_path_to_error` writes it (`a.b[2].c`);
/// `None` for one that does not read as such. A map's key is written as it
/// was sent, dots and brackets included, so past a map a path is the
/// client's: `SecretPaths::may_hold_secret` stops
/// reading it there.
pub(crate) fn steps(path: &str) -> Option<Vec<Step<'_>>> {
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
