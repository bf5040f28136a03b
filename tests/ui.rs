//! Compile-fail and compile-pass cases for the macros; the expected
//! diagnostics are committed next to each case. Regenerate them with
//! `TRYBUILD=overwrite cargo test --test ui` and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
