//! `cargo +nightly fuzz run tool_output`: arbitrary results, envelopes,
//! partial results and panics from a tool, through `ToolSet::call`. See
//! SECURITY.md.
#![no_main]

use std::sync::{Once, OnceLock};

use libfuzzer_sys::fuzz_target;
use tool_envelope_fuzz::output::{self, PANICKING_ON_PURPOSE};

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema = serde_json::from_str(include_str!("../../schema/error-envelope.schema.json"))
            .expect("the envelope schema");
        jsonschema::validator_for(&schema).expect("a valid schema")
    })
}

fuzz_target!(|data: &[u8]| {
    // The tool panics on purpose now and then, and the tool set catches it:
    // only other panics — a broken promise — abort the run.
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            if !PANICKING_ON_PURPOSE.with(|flag| flag.get()) {
                eprintln!("{info}");
                std::process::abort();
            }
        }))
    });
    output::call(data, &|envelope| {
        let errors: Vec<String> = validator().iter_errors(envelope).map(|e| e.to_string()).collect();
        if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
    });
});
