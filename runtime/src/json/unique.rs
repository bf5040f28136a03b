//! Checking a capture before a guard reads it: no object in it may repeat
//! a key. `serde_json` keeps the last of two equal keys, and a type's own
//! `Serialize` may write both — a `#[serde(flatten)]` map beside a field of
//! the same name: the guard would judge one value and the tool read the
//! other.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// The argument (its key) inside which an object of the arguments object
/// written as `text` repeats a key; `None` when none does. Only checks:
/// read the value itself with `serde_json`, as every other reader does.
pub(crate) fn repeated_in(text: &str) -> Option<String> {
    let at = RefCell::new(None);
    let checked =
        Unique { top: true, at: &at }.deserialize(&mut serde_json::Deserializer::from_str(text));
    match checked {
        Ok(()) => None,
        Err(_) => at.take(),
    }
}

/// Walks a JSON value, failing on a repeated key; at the top, it notes the
/// key under which it failed.
#[derive(Clone, Copy)]
struct Unique<'a> {
    top: bool,
    at: &'a RefCell<Option<String>>,
}

impl Unique<'_> {
    fn failed_at(self, key: String) {
        if self.top {
            self.at.borrow_mut().get_or_insert(key);
        }
    }
}

impl<'de> DeserializeSeed<'de> for Unique<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let inner = Unique { top: false, ..self };
        while items.next_element_seed(inner)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        let inner = Unique { top: false, ..self };
        let mut keys = std::collections::HashSet::new();
        while let Some(key) = members.next_key::<String>()? {
            if let Err(error) = members.next_value_seed(inner) {
                self.failed_at(key);
                return Err(error);
            }
            if !keys.insert(key.clone()) {
                self.failed_at(key);
                return Err(de::Error::custom("a repeated key"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_repeats_no_key_passes() {
        let text = r#"{"a":1,"b":[-2,3.5,"x",null,true,{"c":{}}],"d":18446744073709551615}"#;
        assert_eq!(repeated_in(text), None);
        assert_eq!(repeated_in("{}"), None);
        assert_eq!(repeated_in(r#"{"a":{"k":1},"b":{"k":2}}"#), None);
    }

    #[test]
    fn a_repeated_key_names_the_argument_it_is_in() {
        assert_eq!(repeated_in(r#"{"a":1,"a":2}"#).as_deref(), Some("a"));
        assert_eq!(
            repeated_in(r#"{"a":1,"order":{"amount":900,"amount":1}}"#).as_deref(),
            Some("order")
        );
        assert_eq!(
            repeated_in(r#"{"list":[{"x":1},{"x":1,"x":2}]}"#).as_deref(),
            Some("list")
        );
    }
}
