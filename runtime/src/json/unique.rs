//! Reading back a capture for a guard, refusing an object that repeats a
//! key. `serde_json` keeps the last of two equal keys, and a type's own
//! `Serialize` may write both — a `#[serde(flatten)]` map beside a field of
//! the same name: the guard would judge one value and the tool read the
//! other.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The arguments object written as `text`, or the argument (its key) inside
/// which an object repeats a key.
pub(crate) fn object(text: &str) -> Result<Map<String, Value>, String> {
    let at = RefCell::new(None);
    let read =
        Unique { top: true, at: &at }.deserialize(&mut serde_json::Deserializer::from_str(text));
    match read {
        Ok(Value::Object(arguments)) => Ok(arguments),
        _ => Err(at.take().unwrap_or_default()),
    }
}

/// Reads a JSON value, failing on a repeated key; at the top, it notes the
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
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let inner = Unique { top: false, ..self };
        let mut read = Vec::with_capacity(items.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = items.next_element_seed(inner)? {
            read.push(item);
        }
        Ok(Value::Array(read))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let inner = Unique { top: false, ..self };
        let mut read = Map::new();
        while let Some(key) = members.next_key::<String>()? {
            let value = match members.next_value_seed(inner) {
                Ok(value) => value,
                Err(error) => {
                    self.failed_at(key);
                    return Err(error);
                }
            };
            if read.contains_key(&key) {
                let error = de::Error::custom(format_args!("the key `{key}` is repeated"));
                self.failed_at(key);
                return Err(error);
            }
            read.insert(key, value);
        }
        Ok(Value::Object(read))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_serde_json_reads() {
        let text = r#"{"a":1,"b":[-2,3.5,"x",null,true,{"c":{}}],"d":18446744073709551615}"#;
        assert_eq!(
            Value::Object(object(text).unwrap()),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert_eq!(object("{}").unwrap(), Map::new());
        assert_eq!(
            Value::Object(object(r#"{"a":{"k":1},"b":{"k":2}}"#).unwrap()),
            json!({"a": {"k": 1}, "b": {"k": 2}})
        );
    }

    #[test]
    fn a_repeated_key_names_the_argument_it_is_in() {
        assert_eq!(object(r#"{"a":1,"a":2}"#).unwrap_err(), "a");
        assert_eq!(
            object(r#"{"a":1,"order":{"amount":900,"amount":1}}"#).unwrap_err(),
            "order"
        );
        assert_eq!(
            object(r#"{"list":[{"x":1},{"x":1,"x":2}]}"#).unwrap_err(),
            "list"
        );
    }
}
