//! The README's MCP server is a program in `examples/`: the first
//! `rust,no_run` block of the README, formatted by rustfmt, is the example
//! file it names, below its doc comment. The README compiles them as doctests; the examples
//! run them (tests/examples.rs). SECURITY.md names only tests that exist.

use std::io::Write;
use std::process::{Command, Stdio};

/// The README's `rust,no_run` blocks, in order.
fn no_run_blocks() -> Vec<String> {
    let readme = include_str!("../README.md");
    let mut blocks = Vec::new();
    let mut rest = readme;
    while let Some(start) = rest.find("```rust,no_run\n") {
        let body = &rest[start + "```rust,no_run\n".len()..];
        let end = body.find("```").expect("a closed block");
        blocks.push(body[..end].to_owned());
        rest = &body[end..];
    }
    blocks
}

fn rustfmt(code: &str) -> String {
    let rustfmt = std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".to_owned());
    let mut child = Command::new(&rustfmt)
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{rustfmt} runs (rustup component add rustfmt): {error}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(code.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "rustfmt failed on a README block");
    String::from_utf8(output.stdout).unwrap()
}

/// An example's code, below its `//!` doc comment.
fn example_code(name: &str) -> String {
    let path = format!("{}/examples/{name}.rs", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .skip_while(|line| line.starts_with("//!"))
        .skip_while(|line| line.is_empty())
        .map(|line| format!("{line}\n"))
        .collect()
}

#[test]
fn the_readme_mcp_examples_are_the_example_programs() {
    let blocks = no_run_blocks();
    assert_eq!(
        blocks.len(),
        4,
        "the rmcp-native example, then the client's, its handler's and the protected one's (no example: they need a server)"
    );
    for (block, name) in blocks.iter().zip(["rmcp_native"]) {
        assert_eq!(
            rustfmt(block),
            example_code(name),
            "the README's block and examples/{name}.rs differ: copy the block, run `cargo fmt`"
        );
    }
}

/// Every test SECURITY.md names (`tests/x.rs::name`, `runtime/src/x.rs::name`)
/// exists, and so does every file it names: a promise never points at a test
/// that was renamed or removed.
#[test]
fn security_md_names_only_tests_that_exist() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/SECURITY.md")).unwrap();
    let mut named = 0;
    for reference in text.split('`').skip(1).step_by(2) {
        let (path, test) = match reference.split_once("::") {
            Some((path, test)) => (path, Some(test)),
            None => (reference, None),
        };
        let is_file = ["tests/", "runtime/src/", "scripts/"]
            .iter()
            .any(|dir| path.starts_with(dir))
            && path.contains('.');
        if !is_file {
            continue;
        }
        let source = std::fs::read_to_string(format!("{root}/{path}"))
            .unwrap_or_else(|_| panic!("SECURITY.md names {path}, which does not exist"));
        if let Some(test) = test {
            assert!(
                source.contains(&format!("fn {test}(")),
                "SECURITY.md names {path}::{test}, which does not exist"
            );
            named += 1;
        }
    }
    assert!(named > 30, "only {named} tests found: the parser is broken");
}
