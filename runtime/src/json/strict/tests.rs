//! Tests of `strict`.

use super::*;
use serde_json::json;

#[derive(Serialize)]
enum Tree {
    Leaf,
    Node(Box<Tree>),
}

fn tree(depth: usize) -> Tree {
    (0..depth).fold(Tree::Leaf, |tree, _| Tree::Node(Box::new(tree)))
}

struct Panics;

impl Serialize for Panics {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        panic!("Serialize blew up")
    }
}

#[test]
fn plain_values_serialize_as_serde_json_does() {
    let value = json!({"a": [1, 2.5, "x", null, {"b": true}]});
    assert_eq!(to_value(&value).unwrap(), value);
    let mut out = Vec::new();
    to_writer(&value, &mut out).unwrap();
    assert_eq!(out, serde_json::to_vec(&value).unwrap());
}

#[test]
fn non_finite_numbers_are_refused_not_turned_into_null() {
    assert_eq!(to_value(&f64::NAN), Err(Problem::NonFinite));
    assert_eq!(to_value(&[1.0, f64::INFINITY]), Err(Problem::NonFinite));
    assert_eq!(to_value(&Some(f32::NEG_INFINITY)), Err(Problem::NonFinite));
    assert_eq!(to_value(&None::<f64>).unwrap(), Value::Null);
}

#[test]
fn deep_values_are_refused_without_touching_the_stack_limit() {
    assert!(to_value(&tree(MAX_DEPTH - 1)).is_ok());
    assert_eq!(to_value(&tree(MAX_DEPTH + 1)), Err(Problem::TooDeep));
    // Far deeper than any stack would take: refused at the limit.
    let deep = tree(200_000);
    assert_eq!(to_value(&deep), Err(Problem::TooDeep));
    let mut out = Vec::new();
    assert_eq!(to_writer(&deep, &mut out), Err(Problem::TooDeep));
    // Dropping it is the test's business: iteratively.
    let mut next = Some(deep);
    while let Some(Tree::Node(inner)) = next.take() {
        next = Some(*inner);
    }
}

#[test]
fn a_panicking_serialize_is_a_problem_not_an_unwind() {
    assert_eq!(
        to_value(&vec![Panics]),
        Err(Problem::Panicked("Serialize blew up".to_owned()))
    );
}

#[test]
fn a_failing_serialize_says_why() {
    let mut map = std::collections::HashMap::new();
    map.insert(vec![1u8], 1);
    assert!(matches!(to_value(&map), Err(Problem::Failed(_))));
}

/// `serde_json`'s `RawValue` (its `raw_value` feature, which a dependency
/// may turn on)
/// is written as given: a number past what JSON readers keep, a depth past
/// the limit, a key twice — none of it read. It is refused.
#[test]
fn raw_json_text_is_refused_unread() {
    for raw in ["1e400", "{\"a\": 1, \"a\": 2}", "[1]"] {
        let raw = serde_json::value::RawValue::from_string(raw.to_owned()).unwrap();
        assert_eq!(to_value(&raw), Err(Problem::Raw), "{raw}");
        assert_eq!(to_value(&vec![raw]), Err(Problem::Raw));
    }
}
