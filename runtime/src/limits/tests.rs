//! Tests of `limits`.

use super::*;

#[test]
fn small_values_are_untouched() {
    let query = json!({"a": 1});
    assert!(matches!(query_for_wire(&query, 100), Cow::Borrowed(_)));
    let partial = json!([1, 2]);
    assert!(matches!(partial_for_wire(&partial, 100), Cow::Borrowed(_)));
    assert!(matches!(text_for_wire("short", 100), Cow::Borrowed(_)));
}

#[test]
fn long_text_keeps_its_start_and_fits() {
    let text = "é".repeat(3000);
    let trimmed = text_for_wire(&text, 1000);
    assert!(trimmed.len() <= 1000, "{}", trimmed.len());
    assert!(trimmed.starts_with("éé"));
    assert!(trimmed.ends_with("of 6000 bytes dropped]"));
}

#[test]
fn escapes_count_against_the_cap() {
    // A control character takes six bytes in JSON: 1,000 of them are 6,000.
    let text = "\u{1}".repeat(1000);
    assert_eq!(escaped_len(&text), 6000);
    let trimmed = text_for_wire(&text, 1000);
    assert!(
        serde_json::to_string(&*trimmed).unwrap().len() <= 1000 + 2,
        "{}",
        serde_json::to_string(&*trimmed).unwrap().len()
    );
    assert!(trimmed.ends_with("bytes dropped]"));
    assert_eq!(text_for_wire("a\"b", 4), "a\"b");
}

#[test]
fn every_marker_fits_inside_its_cap() {
    let text = "x\n".repeat(5000);
    let query = json!({"q": "y".repeat(5000)});
    let items = json!((0..500).map(|i| json!({"id": i})).collect::<Vec<_>>());
    let members = Value::Object((0..500).map(|i| (format!("k{i}"), json!(i))).collect());
    for cap in [0, 1, 2, 3, 4, 8, 16, 32, 40, 50, 64, 80, 100, 128, 200, 500] {
        let cut = text_for_wire(&text, cap);
        assert!(escaped_len(&cut) <= cap, "text under {cap}: {cut:?}");
        if cap >= MIN_VALUE_BYTES {
            let trimmed = query_for_wire(&query, cap);
            assert!(json_len(&*trimmed) <= cap, "query under {cap}: {trimmed}");
            for partial in [&items, &members] {
                let trimmed = partial_for_wire(partial, cap);
                assert!(json_len(&*trimmed) <= cap, "partial under {cap}: {trimmed}");
                assert!(trimmed.to_string().contains("_truncated"), "{trimmed}");
            }
        }
    }
}

#[test]
fn trimmed_values_fit_their_caps_and_say_what_was_dropped() {
    let query = json!({"q": "é\"".repeat(1000)});
    let query = query_for_wire(&query, 200);
    assert!(json_len(&*query) <= 200, "{}", json_len(&*query));
    let partial = json!((0..1000).map(|i| json!({"id": i})).collect::<Vec<_>>());
    let partial = partial_for_wire(&partial, 300);
    assert!(json_len(&*partial) <= 300, "{}", json_len(&*partial));
    let items = partial.as_array().unwrap();
    let marker = &items.last().unwrap()["_truncated"];
    assert_eq!(marker["totalItems"], 1000);
    assert_eq!(
        marker["droppedItems"].as_u64().unwrap() as usize + items.len() - 1,
        1000
    );
    assert_eq!(items[0], json!({"id": 0}), "the first items are kept");
}

#[test]
fn the_bound_is_never_below_the_exact_size() {
    let values = [
        json!(null),
        json!(-1.797_693_134_862_315_7e308),
        json!(i64::MIN),
        json!(u64::MAX),
        json!("\u{1}\u{1f}\"\\é"),
        json!({"\u{1}": [true, false, null, {"": ""}], "b": [[], {}]}),
    ];
    for value in values {
        let exact = json_len(&value);
        // Whenever the bound claims the value fits, it really does.
        for cap in 0..=exact + 200 {
            let mut budget = cap;
            if within_bound(&value, &mut budget) {
                assert!(exact <= cap, "{value}: {exact} > {cap}");
            }
        }
        assert!(fits(&value, exact) && !fits(&value, exact - 1), "{value}");
    }
}

#[test]
fn objects_keep_the_fields_that_fit() {
    let mut partial = json!({"a": "x".repeat(50), "b": "y".repeat(500), "c": 1});
    trim_partial(&mut partial, 200);
    assert_eq!(partial["a"], "x".repeat(50));
    assert!(partial.get("b").is_none());
    assert_eq!(partial["_truncated"]["droppedFields"], 1);
    assert!(json_len(&partial) <= 200);
}

#[test]
fn scaling_keeps_the_floors() {
    // The byte caps fall to their floors; a text keeps 256 bytes, and the
    // number of entries is not scaled.
    let small = EnvelopeLimits::default().scaled(1, 1_000_000);
    assert_eq!(
        small,
        EnvelopeLimits::default()
            .with_attempted_query_bytes(0)
            .with_partial_results_bytes(0)
            .with_text_bytes(256)
            .floored()
    );
    assert_eq!(
        EnvelopeLimits::default()
            .with_text_bytes(100)
            .with_list_items(3)
            .scaled(1, 1_000_000),
        EnvelopeLimits::floors()
            .with_text_bytes(100)
            .with_list_items(3)
    );
    assert_eq!(
        EnvelopeLimits::default().scaled(2, 1),
        EnvelopeLimits::default()
    );
}
