#!/usr/bin/env bash
# Counts the lines `#[tool]` expands to, per tool, for the figure in
# BENCHMARKS.md: a scratch crate with one tool of each shape — served free
# functions (sync and async), a method of a `#[tools]` block, a tool only
# called from Rust — expanded with `cargo +nightly rustc -- -Zunpretty=expanded`
# and formatted by rustfmt, then compared with the same crate without the
# attributes. Needs a nightly toolchain (for -Zunpretty only).
#
#   scripts/expansion-lines.sh [REPOSITORY]      (default: this checkout)
#
# With EXPANSION_OUT=FILE, the expanded crate is also written to FILE.
set -euo pipefail

repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

write_crate() { # DIR ATTRIBUTES(true|false)
    local dir=$1 with=$2
    mkdir -p "$dir/src"
    cat >"$dir/Cargo.toml" <<TOML
[package]
name = "expansion"
version = "0.0.0"
edition = "2024"

[dependencies]
tool-envelope = { path = "$repo" }
serde = { version = "1", features = ["derive"] }
schemars = "1"

[workspace]
TOML
    local tool="" tools="" local_tool=""
    if [[ $with == true ]]; then
        tool="#[tool(read_only)]"
        tools="#[tools]"
        local_tool="#[tool(read_only, local)]"
    fi
    cat >"$dir/src/lib.rs" <<RUST
#![allow(unused)]
use tool_envelope::{tool, tools, ErrorEnvelope};

/// Looks up a customer's orders.
$tool
pub fn lookup(customer_id: String, status: Option<String>) -> Result<Vec<String>, ErrorEnvelope> {
    Ok(vec![customer_id])
}

/// Fetches a page.
$tool
pub async fn fetch(url: String, page: u32) -> Result<String, ErrorEnvelope> {
    Ok(url)
}

/// Shared state.
pub struct Db;

$tools
impl Db {
    /// Reads a row.
    $tool
    pub fn row(&self, table: String, id: u64) -> Result<String, ErrorEnvelope> {
        Ok(table)
    }
}

/// Only called from Rust.
$local_tool
pub fn helper(x: u32, y: u32) -> Result<u32, ErrorEnvelope> {
    Ok(x + y)
}
RUST
}

expanded_lines() { # DIR
    (cd "$1" && CARGO_TARGET_DIR="$work/target" cargo +nightly rustc --quiet --lib -- -Zunpretty=expanded 2>/dev/null) \
        | rustfmt --edition 2024 2>/dev/null >"$1/expanded.rs"
    grep -cv '^\s*$' "$1/expanded.rs"
}

write_crate "$work/with" true
write_crate "$work/without" false
with=$(expanded_lines "$work/with")
without=$(expanded_lines "$work/without")
if [[ -n ${EXPANSION_OUT:-} ]]; then cp "$work/with/expanded.rs" "$EXPANSION_OUT"; fi
echo "lines for 4 tools (2 served free functions, 1 served method, 1 local): $((with - without)) ($with with #[tool], $without without)"
echo "per tool: $(( (with - without) / 4 ))"
