//! Tests of `schema`.

use super::build::may_match;
use super::*;
use serde_json::json;

fn schema(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

/// `config: Config { upstream: Option<Upstream { auth: Option<Auth {
/// basic: Option<Basic { user, password: Secret<String> }> }> }> }`, as
/// schemars writes it.
fn nested_config() -> Map<String, Value> {
    schema(json!({
        "type": "object",
        "properties": {
            "config": {"$ref": "#/$defs/Config"},
            "dept": {"type": "string"}
        },
        "$defs": {
            "Config": {"type": "object", "properties": {"upstream": {"anyOf": [{"$ref": "#/$defs/Upstream"}, {"type": "null"}]}}},
            "Upstream": {"type": "object", "properties": {"auth": {"anyOf": [{"$ref": "#/$defs/Auth"}, {"type": "null"}]}}},
            "Auth": {"type": "object", "properties": {"basic": {"anyOf": [{"$ref": "#/$defs/Basic"}, {"type": "null"}]}}},
            "Basic": {"type": "object", "properties": {
                "user": {"type": "string"},
                "password": {"type": "string", "writeOnly": true}
            }}
        }
    }))
}

#[test]
fn a_secret_four_options_deep_is_masked() {
    let secrets = SecretPaths::from_schema(&nested_config(), &[]);
    let arguments = json!({
        "dept": "ENG",
        "config": {"upstream": {"auth": {"basic": {"user": "ops", "password": "hunter2"}}}}
    });
    let masked = secrets.mask(arguments.as_object().unwrap());
    assert_eq!(
        Value::Object(masked.into_owned()),
        json!({
            "dept": "ENG",
            "config": {"upstream": {"auth": {"basic": {"user": "ops", "password": "[redacted]"}}}}
        })
    );
    assert!(matches!(secrets.param("config"), Some(Some(_))));
    assert!(matches!(secrets.param("dept"), Some(None)));
}

#[test]
fn a_secret_of_the_wrong_type_is_masked_too() {
    let secrets = SecretPaths::from_schema(&nested_config(), &[]);
    let arguments =
        json!({"config": {"upstream": {"auth": {"basic": {"password": {"nested": "hunter2"}}}}}});
    let masked = Value::Object(secrets.mask(arguments.as_object().unwrap()).into_owned());
    assert!(!masked.to_string().contains("hunter2"), "{masked}");
    assert!(secrets.may_hold_secret("config", &steps("upstream.auth.basic.password").unwrap()));
    assert!(secrets.may_hold_secret("config", &steps("upstream.auth").unwrap()));
    assert!(!secrets.may_hold_secret("config", &steps("upstream.auth.basic.user").unwrap()));
    assert!(!secrets.may_hold_secret("dept", &[]));
    assert!(secrets.may_hold_secret("apiKey", &[]), "undeclared");
}

/// A path names declared places up to a secret, never what is past it.
#[test]
fn a_path_is_quoted_up_to_the_secret_it_leads_into() {
    let secrets = SecretPaths::from_schema(&nested_config(), &[]);
    let quotable = |param, path| secrets.quotable(param, &steps(path).unwrap());
    assert_eq!(quotable("config", "upstream.auth.basic.user"), Some(4));
    assert_eq!(quotable("config", "upstream.auth.basic.password"), Some(4));
    assert_eq!(
        quotable("config", "upstream.auth.basic.password.nested"),
        Some(4)
    );
    assert_eq!(
        quotable("config", "upstream.auth.basic.password[0].x"),
        Some(4)
    );
    assert_eq!(quotable("dept", "a.b"), Some(2));
    assert_eq!(quotable("apiKey", "a"), None, "undeclared");
}

/// A map whose values are secrets: its keys are the client's, and are
/// never named, whatever they look like.
#[test]
fn a_key_of_a_map_of_secrets_is_never_quoted() {
    let schema = json!({"type": "object", "properties": {"vault": {
        "type": "object",
        "additionalProperties": {"type": "string", "writeOnly": true}
    }, "notes": {"type": "object", "additionalProperties": {"type": "string"}}}});
    let secrets = SecretPaths::from_schema(schema.as_object().unwrap(), &[]);
    let quotable = |param, path| secrets.quotable(param, &steps(path).unwrap());
    assert_eq!(quotable("vault", "sk_live_1"), Some(0));
    assert_eq!(
        quotable("vault", "[4111111111111111]"),
        Some(0),
        "a key read as an index"
    );
    assert_eq!(quotable("notes", "anything"), Some(1));
}

#[test]
fn undeclared_keys_are_never_shown() {
    let secrets = SecretPaths::from_schema(&nested_config(), &[]);
    let arguments = json!({"dept": "ENG", "apiKey": "hunter2"});
    let masked = secrets.mask(arguments.as_object().unwrap());
    assert_eq!(
        Value::Object(masked.into_owned()),
        json!({"dept": "ENG", "apiKey": "[redacted]"})
    );
    let clean = json!({"dept": "ENG"});
    assert!(matches!(
        secrets.mask(clean.as_object().unwrap()),
        Cow::Borrowed(_)
    ));
}

#[test]
fn maps_lists_enums_and_recursive_types() {
    let schema = schema(json!({
        "type": "object",
        "properties": {
            "keys": {"type": "object", "additionalProperties": {"type": "string", "writeOnly": true}},
            "tokens": {"type": "array", "items": {"type": "string", "writeOnly": true}},
            "login": {"oneOf": [
                {"type": "object", "properties": {"Password": {"type": "string", "writeOnly": true}}},
                {"type": "object", "properties": {"Anonymous": {"type": "null"}}}
            ]},
            "tree": {"$ref": "#/$defs/Tree"},
            "named": {"type": "string"}
        },
        "$defs": {
            "Tree": {"type": "object", "properties": {
                "secret": {"type": "string", "writeOnly": true},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
            }}
        }
    }));
    let secrets = SecretPaths::from_schema(&schema, &["named"]);
    let arguments = json!({
        "keys": {"a": "k1", "b": "k2"},
        "tokens": ["t1", "t2"],
        "login": {"Password": "p1"},
        "tree": {"secret": "s1", "children": [{"secret": "s2", "children": [{"secret": "s3"}]}]},
        "named": "n1"
    });
    let masked = Value::Object(secrets.mask(arguments.as_object().unwrap()).into_owned());
    for secret in ["k1", "k2", "t1", "t2", "p1", "s1", "s2", "s3", "n1"] {
        assert!(!masked.to_string().contains(secret), "{secret} in {masked}");
    }
}

#[test]
fn every_local_reference_is_followed_and_a_foreign_one_is_a_secret() {
    // draft-07 `definitions`, a pointer into `properties`, the root.
    let schema = schema(json!({
        "type": "object",
        "properties": {
            "creds": {"$ref": "#/definitions/Creds"},
            "backup": {"$ref": "#/properties/creds"},
            "remote": {"$ref": "https://example.com/schemas/creds.json"},
            "tree": {"type": "object", "properties": {
                "key": {"type": "string", "writeOnly": true},
                "child": {"$ref": "#/properties/tree"}
            }},
            "user": {"type": "string"}
        },
        "definitions": {"Creds": {"type": "object", "properties": {
            "password": {"type": "string", "writeOnly": true},
            "login": {"type": "string"}
        }}}
    }));
    let secrets = SecretPaths::from_schema(&schema, &[]);
    let arguments = json!({
        "creds": {"password": "p1", "login": "ops"},
        "backup": {"password": "p2"},
        "remote": {"anything": "p3"},
        "tree": {"key": "p4", "child": {"key": "p5"}},
        "user": "ada"
    });
    let masked = Value::Object(secrets.mask(arguments.as_object().unwrap()).into_owned());
    assert_eq!(
        masked,
        json!({
            "creds": {"password": "[redacted]", "login": "ops"},
            "backup": {"password": "[redacted]"},
            "remote": "[redacted]",
            "tree": {"key": "[redacted]", "child": {"key": "[redacted]"}},
            "user": "ada"
        })
    );
}

/// Draft-07's tuples (`items` as a list, then `additionalItems`), and
/// references resolved only at validation time (`$dynamicRef`,
/// `$recursiveRef`): what they say is unknown, so their values are secrets.
#[test]
fn tuples_of_draft_07_and_dynamic_references_are_read() {
    let schema = schema(json!({
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [
                {"type": "string"},
                {"type": "string", "writeOnly": true}
            ], "additionalItems": {"type": "string", "writeOnly": true}},
            "node": {"$dynamicRef": "#node"},
            "old": {"$recursiveRef": "#"},
            "user": {"type": "string"}
        }
    }));
    let secrets = SecretPaths::from_schema(&schema, &[]);
    let arguments = json!({
        "pair": ["ops", "p1", "p2"],
        "node": {"anything": "p3"},
        "old": "p4",
        "user": "ada"
    });
    let masked = Value::Object(secrets.mask(arguments.as_object().unwrap()).into_owned());
    assert_eq!(
        masked,
        json!({
            "pair": ["ops", "[redacted]", "[redacted]"],
            "node": "[redacted]",
            "old": "[redacted]",
            "user": "ada"
        })
    );
}

#[test]
fn paths_as_serde_writes_them() {
    assert_eq!(
        steps("filters.status[2].x").unwrap(),
        [
            Step::Key("filters".into()),
            Step::Key("status".into()),
            Step::Index(2),
            Step::Key("x".into())
        ]
    );
    // A map's key as sent is a key, not a JSON pointer.
    assert_eq!(steps("/a/0").unwrap(), [Step::Key("/a/0".into())]);
    assert!(steps("").unwrap().is_empty());
    // A map's key is written as sent: a path that does not read as one is
    // none, never a panic.
    for path in ["a[0]]", "a[x]", "a[0]b", "a[", "a[0][", "[]]"] {
        assert_eq!(steps(path), None, "{path}");
    }
}

#[test]
fn a_target_is_built_once_however_its_refs_spell_it() {
    // One big target, referred to under many spellings of its address.
    let big: Map<String, Value> = (0..200)
        .map(|i| (format!("f{i}"), json!({"type": "string"})))
        .collect();
    let spellings = ["#/$defs/A", "#/%24defs/A", "#/$defs/%41", "#/%24defs/%41"];
    let properties: Map<String, Value> = (0..400)
        .map(|i| (format!("p{i}"), json!({"$ref": spellings[i % 4]})))
        .collect();
    let paths = SecretPaths::from_schema(
        &schema(json!({
            "type": "object",
            "properties": properties,
            "$defs": {"A": {"type": "object", "properties": big}}
        })),
        &[],
    );
    // 400 parameters and their refs, and the target's 201 nodes once.
    assert!(paths.nodes.len() < 1_100, "{} nodes", paths.nodes.len());
}

#[test]
fn a_chain_of_refs_longer_than_the_walk_follows_is_a_secret() {
    // A server's schema: each definition refers to the next, 10,000 long,
    // the last one harmless. Followed link by link it would take the stack.
    let mut defs = Map::new();
    for i in 0..10_000 {
        defs.insert(
            format!("D{i}"),
            json!({"$ref": format!("#/$defs/D{}", i + 1)}),
        );
    }
    defs.insert("D10000".to_owned(), json!({"type": "string"}));
    let paths = SecretPaths::from_schema(
        &schema(json!({
            "type": "object",
            "properties": {"deep": {"$ref": "#/$defs/D0"}, "id": {"type": "string"}},
            "$defs": defs
        })),
        &[],
    );
    let arguments = json!({"deep": "x", "id": "A-1"});
    let masked = paths.mask(arguments.as_object().unwrap());
    assert_eq!(
        Value::Object(masked.into_owned()),
        json!({"deep": "[redacted]", "id": "A-1"})
    );
}

#[test]
fn without_a_schema_every_value_is_hidden_and_every_long_text_is_secret() {
    let arguments = json!({"user": "ops", "password": "hunter2", "n": 5});
    let arguments = arguments.as_object().unwrap();
    let masked = SecretPaths::UNKNOWN.mask(arguments);
    assert_eq!(
        Value::Object(masked.into_owned()),
        json!({"user": "[redacted]", "password": "[redacted]", "n": "[redacted]"})
    );
    let mut values = SecretValues::default();
    SecretPaths::UNKNOWN.add_values(arguments, &mut values);
    let masker = values.masker().unwrap();
    assert_eq!(masker.text("ops: hunter2 5"), "ops: [redacted] 5");
}

#[test]
fn values_of_keys_not_declared_are_searched_for_only_for_a_remote_tool() {
    let paths = SecretPaths::from_schema(
        &schema(
            json!({"type": "object", "properties": {"password": {"type": "string", "writeOnly": true}}}),
        ),
        &[],
    );
    let arguments = json!({"password": "hunter2", "extra": "a-long-value"});
    let mut values = SecretValues::default();
    paths.add_values(arguments.as_object().unwrap(), &mut values);
    let masker = values.masker().unwrap();
    assert_eq!(
        masker.text("hunter2 a-long-value"),
        "[redacted] a-long-value"
    );
    // A remote tool's server may quote them: there, they are searched for.
    let mut values = SecretValues::default();
    paths
        .of_remote_tool()
        .add_values(arguments.as_object().unwrap(), &mut values);
    let masker = values.masker().unwrap();
    assert_eq!(masker.text("hunter2 a-long-value"), "[redacted] [redacted]");
}

/// A named property a secret pattern matches is masked: JSON Schema
/// applies `patternProperties` to it beside its own schema.
#[test]
fn a_pattern_marks_the_named_properties_it_matches() {
    let secrets = SecretPaths::from_schema(
        &schema(json!({
            "type": "object",
            "properties": {
                "api_token": {"type": "string"},
                "region": {"type": "string"},
                "upstream": {
                    "type": "object",
                    "properties": {"X-Api-Key": {"type": "string"}, "host": {"type": "string"}},
                    "patternProperties": {"^X-": {"writeOnly": true}}
                }
            },
            "patternProperties": {"token": {"type": "string", "writeOnly": true}}
        })),
        &[],
    );
    let arguments = json!({
        "api_token": "tok-8812",
        "region": "eu",
        "upstream": {"X-Api-Key": "k-77", "host": "db1"}
    });
    let masked = Value::Object(secrets.mask(arguments.as_object().unwrap()).into_owned());
    assert_eq!(
        masked,
        json!({
            "api_token": "[redacted]",
            "region": "eu",
            "upstream": {"X-Api-Key": "[redacted]", "host": "db1"}
        })
    );
    assert!(secrets.may_hold_secret("api_token", &[]));
    assert!(!secrets.may_hold_secret("region", &[]));
    assert!(!secrets.may_hold_secret("upstream", &steps("host").unwrap()));
    // `host.x` may be one key of the map, as a client sent it.
    assert!(secrets.may_hold_secret("upstream", &steps("host.x").unwrap()));
    assert!(secrets.may_hold_secret("upstream", &steps("[0]").unwrap()));
}

#[test]
fn a_pattern_is_decided_for_a_plain_word_and_assumed_otherwise() {
    assert!(may_match("token", "api_token_2"));
    assert!(!may_match("token", "region"));
    assert!(may_match("^X-", "X-Api-Key") && !may_match("^X-", "a-X-"));
    assert!(may_match("key$", "api_key") && !may_match("key$", "keys"));
    assert!(may_match("^id$", "id") && !may_match("^id$", "ids"));
    // Anything else may match anything.
    assert!(may_match("^(?i)secret", "region"));
    assert!(may_match("[a-z]+", "1"));
    assert!(may_match("a.b", "region"));
}

/// A pattern behind the root's `$ref` (zod-to-json-schema's shape) or in
/// an `allOf` branch applies to the properties beside it.
#[test]
fn a_pattern_behind_a_reference_or_a_branch_marks_the_properties_it_matches() {
    let key = json!({"type": "string"});
    let secret = json!({"type": "string", "writeOnly": true});
    for schema in [
        json!({"$ref": "#/definitions/Env", "definitions": {"Env": {
            "type": "object",
            "properties": {"API_KEY": key, "REGION": key},
            "patternProperties": {"_KEY$": secret}
        }}}),
        json!({"allOf": [
            {"properties": {"API_KEY": key, "REGION": key}},
            {"patternProperties": {"_KEY$": secret}}
        ]}),
    ] {
        let secrets = SecretPaths::from_schema(&self::schema(schema.clone()), &[]);
        let arguments = json!({"API_KEY": "k-77", "REGION": "eu"});
        let masked = Value::Object(secrets.mask(arguments.as_object().unwrap()).into_owned());
        assert_eq!(
            masked,
            json!({"API_KEY": "[redacted]", "REGION": "eu"}),
            "{schema}"
        );
    }
}

/// Many properties and many patterns cost each once: the secret map
/// grows with their sum, not their product.
#[test]
fn many_patterns_and_properties_build_a_map_of_their_sum() {
    let n = 2_000;
    // Every name holds the words w0 … w199.
    let words: String = (0..200).map(|j| format!("w{j}_")).collect();
    let properties: Map<String, Value> = (0..n)
        .map(|i| (format!("{words}{i}"), json!({"type": "string"})))
        .collect();
    // Half plain words, 200 of them in every name; half patterns that may
    // match any name.
    let patterns: Map<String, Value> = (0..n)
        .map(|i| match i % 2 {
            0 => (format!("w{}_", i / 2), json!({"writeOnly": true})),
            _ => (format!(".{i}"), json!({"writeOnly": true})),
        })
        .collect();
    let secrets = SecretPaths::from_schema(
        &schema(json!({"type": "object", "properties": properties, "patternProperties": patterns})),
        &[],
    );
    let edges: usize = secrets.nodes.iter().map(|node| node.branches.len()).sum();
    assert!(
        secrets.nodes.len() < 3 * (2 * n),
        "{} nodes",
        secrets.nodes.len()
    );
    assert!(edges < n * 70 + 2 * n, "{edges} edges");
    let name = format!("{words}7");
    let arguments = json!({ name.clone(): "hunter2" });
    let masked = Value::Object(secrets.mask(arguments.as_object().unwrap()).into_owned());
    assert_eq!(masked, json!({ name: "[redacted]" }));
}

/// A secret marked only through `unevaluatedProperties`,
/// `unevaluatedItems`, `contains` or `dependentSchemas` (a remote tool's
/// schema may) is found there too.
#[test]
fn secrets_under_the_2020_12_keywords_are_found() {
    let secret = json!({"type": "string", "writeOnly": true});
    let schema = json!({"type": "object", "properties": {
        "labels": {"type": "object", "unevaluatedProperties": secret},
        "keys": {"type": "array", "unevaluatedItems": secret},
        "tokens": {"type": "array", "contains": secret},
        "login": {"type": "object", "dependentSchemas": {
            "user": {"properties": {"password": secret}}}}
    }});
    let secrets = SecretPaths::from_schema(schema.as_object().unwrap(), &[]);
    for (param, path) in [
        ("labels", "team"),
        ("keys", "[0]"),
        ("tokens", "[3]"),
        ("login", "password"),
    ] {
        let steps = steps(path).unwrap();
        assert!(secrets.may_hold_secret(param, &steps), "{param} {path}");
    }
    let arguments = json!({"labels": {"team": "hunter2"}, "keys": ["hunter3"],
        "tokens": ["hunter4"], "login": {"user": "ops", "password": "hunter5"}});
    let masked = Value::Object(secrets.mask(arguments.as_object().unwrap()).into_owned());
    for secret in ["hunter2", "hunter3", "hunter4", "hunter5"] {
        assert!(!masked.to_string().contains(secret), "{masked}");
    }
}
