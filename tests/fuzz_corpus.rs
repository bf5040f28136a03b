//! Replays the fuzz target's seed corpus (fuzz/corpus/toolset_call) through
//! the same check the fuzzer runs, so that CI exercises it without nightly.

#[path = "../fuzz/src/lib.rs"]
mod fuzz;

#[test]
fn the_seed_corpus_passes_the_fuzz_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/toolset_call");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        fuzz::call(&std::fs::read(&path).unwrap());
        count += 1;
    }
    assert!(count >= 10, "the seed corpus has {count} inputs");
}
