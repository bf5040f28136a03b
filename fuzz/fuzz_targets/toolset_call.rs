//! `cargo +nightly fuzz run toolset_call`: arbitrary bytes as the arguments
//! of `tools/call` on the example tool set. See SECURITY.md.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tool_envelope_fuzz::call(data));
