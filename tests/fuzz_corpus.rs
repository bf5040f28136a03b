//! Replays the seed corpora of the fuzz targets (`fuzz/corpus/toolset_call` and
//! `fuzz/corpus/tool_output`) through the same checks the fuzzer runs, so that
//! CI exercises them without nightly.

#[path = "../fuzz/src/lib.rs"]
mod fuzz;

use std::path::Path;

fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(name);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
        .collect();
    inputs.sort();
    inputs
}

#[test]
fn the_input_corpus_passes_the_fuzz_check() {
    let inputs = corpus("toolset_call");
    assert!(
        inputs.len() >= 10,
        "the seed corpus has {} inputs",
        inputs.len()
    );
    for input in inputs {
        fuzz::call(&input);
    }
}

#[test]
fn the_output_corpus_passes_the_fuzz_check() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/error-envelope.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let validate = |envelope: &serde_json::Value| {
        let errors: Vec<String> = validator
            .iter_errors(envelope)
            .map(|e| e.to_string())
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    };
    let inputs = corpus("tool_output");
    assert!(
        inputs.len() >= 10,
        "the seed corpus has {} inputs",
        inputs.len()
    );
    for input in inputs {
        fuzz::output::call(&input, &validate);
    }
}
