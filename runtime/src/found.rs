//! The success of a look-up: found something, or validly found nothing.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// The result of a look-up that ran. Finding nothing is a valid, final answer —
/// not an error, and nothing to retry.
///
/// It serializes as `{"isError": false, "empty": true, "matches": 0}` when
/// nothing matched and as `{"isError": false, "empty": false, "matches": N,
/// "results": [...]}` otherwise.
///
/// ```
/// use tool_envelope::{tool, ErrorEnvelope, Found};
/// use serde_json::json;
///
/// /// Look up a customer's orders.
/// #[tool(read_only)]
/// fn lookup_orders(customer_id: String) -> Result<Found<String>, ErrorEnvelope> {
///     let orders: Vec<String> = Vec::new(); // the query ran and matched nothing
///     Ok(Found::new(orders))
/// }
///
/// let found = lookup_orders("C-0000".into()).unwrap(); // Ok, not Err
/// assert!(found.is_empty());
/// assert_eq!(serde_json::to_value(&found).unwrap(),
///            json!({"isError": false, "empty": true, "matches": 0}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Found<T> {
    results: Vec<T>,
}

impl<T> Found<T> {
    /// A look-up that matched `results` (possibly none).
    pub fn new(results: Vec<T>) -> Self {
        Found { results }
    }

    /// A look-up that ran and matched nothing.
    pub fn none() -> Self {
        Found {
            results: Vec::new(),
        }
    }

    /// Whether nothing matched.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// The number of matches.
    pub fn matches(&self) -> usize {
        self.results.len()
    }

    /// The matches.
    pub fn results(&self) -> &[T] {
        &self.results
    }

    /// The matches, by value.
    pub fn into_results(self) -> Vec<T> {
        self.results
    }

    /// Iterates over the matches.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.results.iter()
    }
}

impl<T> Default for Found<T> {
    fn default() -> Self {
        Found::none()
    }
}

impl<T> From<Vec<T>> for Found<T> {
    fn from(results: Vec<T>) -> Self {
        Found::new(results)
    }
}

impl<T> From<Option<T>> for Found<T> {
    /// A single-item look-up: `Some` is one match, `None` is a valid empty result.
    fn from(result: Option<T>) -> Self {
        Found::new(result.into_iter().collect())
    }
}

impl<T> FromIterator<T> for Found<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Found::new(iter.into_iter().collect())
    }
}

impl<T> IntoIterator for Found<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.results.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Found<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.results.iter()
    }
}

impl<T: Serialize> Serialize for Found<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let empty = self.results.is_empty();
        let mut map = serializer.serialize_map(Some(if empty { 3 } else { 4 }))?;
        map.serialize_entry(crate::keys::IS_ERROR, &false)?;
        map.serialize_entry("empty", &empty)?;
        map.serialize_entry("matches", &self.results.len())?;
        if !empty {
            map.serialize_entry("results", &self.results)?;
        }
        map.end()
    }
}

#[derive(Deserialize)]
struct Wire<T> {
    #[serde(rename = "isError")] // crate::keys::IS_ERROR; an attribute takes a literal
    is_error: bool,
    empty: bool,
    matches: usize,
    #[serde(default = "Vec::new")]
    results: Vec<T>,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Found<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::<T>::deserialize(deserializer)?;
        if wire.is_error {
            return Err(de::Error::custom(
                "`isError` is true: this is an error envelope, not a look-up result",
            ));
        }
        if wire.matches != wire.results.len() || wire.empty != wire.results.is_empty() {
            return Err(de::Error::custom(format_args!(
                "inconsistent look-up result: empty = {}, matches = {}, but {} results",
                wire.empty,
                wire.matches,
                wire.results.len()
            )));
        }
        Ok(Found::new(wire.results))
    }
}

impl<T: JsonSchema> JsonSchema for Found<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("Found_{}", T::schema_name()).into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("tool_envelope::Found<{}>", T::schema_id()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<T>();
        json_schema!({
            "description": "The result of a look-up that ran: `empty: true, matches: 0` is a valid answer, not an error.",
            "type": "object",
            "properties": {
                (crate::keys::IS_ERROR): { "const": false },
                "empty": { "type": "boolean" },
                "matches": { "type": "integer", "minimum": 0 },
                "results": { "type": "array", "items": item }
            },
            "required": [crate::keys::IS_ERROR, "empty", "matches"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_and_non_empty_wire_shapes() {
        let none: Found<u32> = Found::none();
        assert_eq!(
            serde_json::to_value(&none).unwrap(),
            json!({"isError": false, "empty": true, "matches": 0})
        );
        let some = Found::new(vec![1, 2]);
        assert_eq!(
            serde_json::to_value(&some).unwrap(),
            json!({"isError": false, "empty": false, "matches": 2, "results": [1, 2]})
        );
    }

    #[test]
    fn round_trips_and_rejects_errors_and_inconsistencies() {
        let some = Found::new(vec!["a".to_string()]);
        let back: Found<String> =
            serde_json::from_str(&serde_json::to_string(&some).unwrap()).unwrap();
        assert_eq!(back, some);
        assert!(
            serde_json::from_value::<Found<u8>>(
                json!({"isError": true, "empty": true, "matches": 0})
            )
            .is_err()
        );
        assert!(
            serde_json::from_value::<Found<u8>>(
                json!({"isError": false, "empty": true, "matches": 3})
            )
            .is_err()
        );
    }

    #[test]
    fn option_is_a_single_item_lookup() {
        assert!(Found::<u8>::from(None).is_empty());
        assert_eq!(Found::from(Some(5)).results(), [5]);
    }
}
