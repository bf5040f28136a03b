use super::*;
use serde_json::json;

fn masker(values: Value) -> Masker {
    let mut secrets = SecretValues::default();
    secrets.add(&values);
    secrets.masker().unwrap()
}

/// Secrets a caller nested inside each other find hundreds of matches
/// at every byte of a long text: past the bound, the text is masked
/// whole — in bounded time and memory, and hiding its tail too.
#[test]
fn nested_secrets_cost_a_bounded_search() {
    let nested: Vec<Value> = (4..600).map(|n| json!("a".repeat(n))).collect();
    let masker = masker(Value::Array(nested));
    let text = format!("{}tail-visible", "a".repeat(100_000));
    assert_eq!(masker.text(&text), REDACTED);
    // Below the bound, masked as always.
    assert_eq!(masker.text("xx aaaa yy"), "xx [redacted] yy");
}

#[test]
fn a_secret_is_masked_wherever_a_text_quotes_it() {
    let masker = masker(json!(["hunter2", 12345678]));
    for (text, masked) in [
        (
            "Input should be a valid string [type=string_type, input_value=12345678, input_type=int]",
            "Input should be a valid string [type=string_type, input_value=[redacted], input_type=int]",
        ),
        (
            "Field required [type=missing, input_value={'password': 'hunter2'}, input_type=dict]",
            "Field required [type=missing, input_value={'password': '[redacted]'}, input_type=dict]",
        ),
        ("xhunter2y", "x[redacted]y"),
        ("nothing here", "nothing here"),
    ] {
        assert_eq!(masker.text(text), masked, "{text}");
    }
    assert!(matches!(masker.text("nothing here"), Cow::Borrowed(_)));
}

#[test]
fn a_short_secret_is_masked_only_as_a_word() {
    let masker = masker(json!(["ab", "abcdef"]));
    assert_eq!(masker.text("pin ab rejected"), "pin [redacted] rejected");
    assert_eq!(masker.text("tab, cab, abc"), "tab, cab, abc");
    assert_eq!(masker.text("xabcdefx"), "x[redacted]x");
    assert_eq!(masker.text("ab=abcdef"), "[redacted]=[redacted]");
}

#[test]
fn json_escapes_are_found_too() {
    let masker = masker(json!("pa\"ss\\word"));
    let quoted = serde_json::to_string(&json!({"password": "pa\"ss\\word"})).unwrap();
    assert_eq!(masker.text(&quoted), r#"{"password":"[redacted]"}"#);
}

#[test]
fn values_keys_and_numbers_are_masked() {
    let masker = masker(json!({"a": "hunter2", "b": 424242, "c": 7}));
    let mut value = json!({"password": "hunter2", "pin": 424242, "hunter2": true,
        "note": ["said hunter2"], "other": 8, "price": 7.5, "delta": -7, "seven": 7});
    masker.value(&mut value);
    assert_eq!(
        value,
        json!({"password": "[redacted]", "pin": "[redacted]", "[redacted]": true,
            "note": ["said [redacted]"], "other": 8, "price": 7.5, "delta": -7,
            "seven": "[redacted]"})
    );
}

#[test]
fn hidden_values_are_those_the_mask_replaced() {
    let original = json!({"user": "ops", "creds": {"password": "hunter2"}, "apiKey": "sk-1"});
    let masked =
        json!({"user": "ops", "creds": {"password": "[redacted]"}, "apiKey": "[redacted]"});
    let mut secrets = SecretValues::default();
    secrets.add_hidden(&original, &masked);
    let masker = secrets.masker().unwrap();
    assert_eq!(
        masker.text("ops: hunter2 sk-1"),
        "ops: [redacted] [redacted]"
    );
}

#[test]
fn a_call_searches_for_a_bounded_number_of_values() {
    // Half a million short strings where a password goes: the search
    // holds the first MAX_VALUES, each added in constant time.
    let many: Vec<Value> = (0..500_000).map(|i| json!(format!("v{i:06}"))).collect();
    let mut secrets = SecretValues::default();
    secrets.add(&Value::Array(many));
    assert_eq!(secrets.texts.len(), MAX_VALUES);
    assert!(secrets.masker().is_some());
    let mut big = SecretValues::default();
    big.add(&json!(["x".repeat(MAX_BYTES), "hunter2"]));
    assert_eq!(big.texts, ["hunter2"]);
    // What is left out is not searched for, so nothing is shown.
    // Keys are searched still, not masked whole.
    for (secrets, key) in [(secrets, "v499999"), (big, "hunter2")] {
        let masker = secrets.masker().unwrap();
        assert_eq!(masker.text("the directory is down"), REDACTED);
        let mut value = json!({"user": "ops", "n": 7, key: true});
        masker.value(&mut value);
        assert_eq!(
            value,
            json!({"user": REDACTED, "n": REDACTED, REDACTED: true})
        );
    }
}

/// A long secret quoted cut short, as pydantic quotes a long input.
#[test]
fn a_long_secret_quoted_cut_short_shows_none_of_it() {
    let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijklmnop";
    let masker = masker(json!([key]));
    let quoted = format!(
        "Field required [type=missing, input_value={{'api_key': '{}...{}'}}, input_type=dict]",
        &key[..25],
        &key[key.len() - 24..]
    );
    assert_eq!(
        masker.text(&quoted),
        "Field required [type=missing, input_value={'api_key': '[redacted]...[redacted]'}, input_type=dict]"
    );
    // Words of it shorter than a stretch are left alone.
    assert_eq!(
        masker.text("sk-proj-Ab is a prefix"),
        "sk-proj-Ab is a prefix"
    );
}

/// Stretches are bounded apart: forty long secrets crowd out neither
/// the secret after them nor the texts that hold none.
#[test]
fn stretches_never_crowd_out_a_secret() {
    let long: Vec<Value> = (0..40)
        .map(|n| {
            json!(format!(
                "{n:03}-{}",
                "abcdefghijklmnopqrstuvwxyz0123456789".repeat(14)
            ))
        })
        .collect();
    let mut secrets = SecretValues::default();
    secrets.add(&Value::Array(long));
    secrets.add(&json!("hunter2"));
    let masker = secrets.masker().unwrap();
    assert_eq!(
        masker.text("the directory is down"),
        "the directory is down"
    );
    assert_eq!(
        masker.text("bad password hunter2"),
        "bad password [redacted]"
    );
}

/// A secret as a URL, Rust's `{:?}` or Rust's `Display` of a float
/// writes it.
#[test]
fn a_secret_is_masked_in_the_forms_it_is_written_in() {
    let masker = masker(json!(["Ab+c/d== x", "tab\there\u{1}", 1234.0]));
    for (text, masked) in [
        (
            "GET https://api.test/v1?key=Ab%2Bc%2Fd%3D%3D%20x failed",
            "GET https://api.test/v1?key=[redacted] failed",
        ),
        ("key=Ab%2Bc%2Fd%3D%3D+x", "key=[redacted]"),
        (&format!("{:?}", "tab\there\u{1}"), "\"[redacted]\""),
        ("took 1234 ms", "took [redacted] ms"),
    ] {
        assert_eq!(masker.text(text), masked, "{text}");
    }
}

#[test]
fn an_unknown_schema_makes_every_long_string_sent_a_secret() {
    let mut secrets = SecretValues::default();
    secrets.add_long_strings(&json!({"user": "ops", "password": "hunter2", "n": 123_456}));
    assert_eq!(secrets.texts, ["hunter2"]);
}

/// A secret too long for stretches (a key file, a kubeconfig) quoted in a
/// text cut to a few KiB — its beginning up to the cut — or quoted from
/// its end shows none of what it quotes.
#[test]
fn a_very_long_secret_cut_by_a_texts_bound_shows_none_of_it() {
    let key: String = (0..3000)
        .map(|n: u32| char::from_digit((n * 7 + n / 13) % 36, 36).unwrap())
        .collect();
    let key = format!("-----BEGIN PRIVATE KEY-----{key}-----END PRIVATE KEY-----");
    let masker = masker(json!([key.clone()]));
    let cut = format!("cannot parse: {}", &key[..1000]);
    assert_eq!(masker.text(&cut), "cannot parse: [redacted]");
    let from_end = format!("…{} at the end", &key[key.len() - 700..]);
    assert_eq!(masker.text(&from_end), "…[redacted] at the end");
    // Whole, it is masked as before; a text that only starts the same
    // way is masked as far as it is the secret.
    assert_eq!(masker.text(&format!("[{key}]")), "[[redacted]]");
    let diverges = format!("{}XYZ and more", &key[..40]);
    assert_eq!(masker.text(&diverges), "[redacted]XYZ and more");
}

/// The same cut short in the forms a text escapes it in — a PEM key's line
/// breaks as `\n` in a JSON body echoed back, a service account's JSON
/// with its quotes escaped — and two secrets of one boilerplate (two PEM
/// keys) each found by their own ends.
#[test]
fn a_very_long_secret_cut_short_in_an_escaped_form_shows_none_of_it() {
    let body = |seed: u32| -> String {
        (0..40)
            .map(|line| {
                (0..64)
                    .map(|n: u32| char::from_digit((n * seed + line) % 36, 36).unwrap())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let pem = |seed| {
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----",
            body(seed)
        )
    };
    let (first, second) = (pem(7), pem(11));
    let account = format!(
        r#"{{"type": "service_account", "private_key": "{}"}}"#,
        body(13)
    );
    let keys = masker(json!([first.clone(), second.clone(), account.clone()]));
    for secret in [&first, &second, &account] {
        let escaped = serde_json::to_string(secret).unwrap();
        let echoed = format!(r#"{{"error": "bad key", "body": {}"#, &escaped[..1500]);
        let shown = keys.text(&echoed);
        assert_eq!(
            shown, r#"{"error": "bad key", "body": "[redacted]"#,
            "{shown}"
        );
    }
    // The repeated pattern of a secret that repeats itself is masked in
    // one pass: every quote of it, cut short or whole.
    let repeated = "ab".repeat(400);
    let repeats = masker(json!([repeated.clone()]));
    let text = format!("x {} y {}", &repeated[..700], repeated);
    assert_eq!(repeats.text(&text), "x [redacted] y [redacted]");
}

/// A server's reason is made a code (upper case, `_` for the rest, no
/// leading digit): a secret is found in it as a code reads it — its
/// digits kept where the code keeps them, a stretch of a long one too —
/// and a short or absent one is not.
#[test]
fn a_secret_is_found_in_a_code_as_a_code_reads_it() {
    let masker = masker(json!([
        "4111 1111 1111 1111",
        "sk-live-4f3a9c2e1b7d",
        "x".repeat(40)
    ]));
    for code in [
        "CARD_4111_1111_1111_1111",
        "SK_LIVE_4F3A9C2E1B7D",
        "BAD_KEY_SKLIVE4F3A9C2E1B7D_SEEN",
        "TOO_XXXXXXXXXXXX_LONG",
    ] {
        assert!(masker.in_a_code(code), "{code}");
    }
    for code in ["CARD_DECLINED", "OVER_CAP", "INVALID_ARGUMENTS"] {
        assert!(!masker.in_a_code(code), "{code}");
    }
}
