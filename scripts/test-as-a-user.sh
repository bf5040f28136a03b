#!/usr/bin/env bash
# The README, tried as a newcomer tries it: a fresh binary crate whose
# Cargo.toml takes the README's dependency lines (the path pointing at this
# checkout) and whose src/main.rs is the README's quickstart, pasted as it is.
# It must build and run, print exactly the envelope the README shows, and its
# `cargo doc` must show the tool's signature as `-> ToolResult<Found<String>>`.
#
#   scripts/test-as-a-user.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
crate="$work/orders"
mkdir -p "$crate/src"

# The README's quickstart: the first `toml` block and the first `rust` block
# under its "## Quickstart" heading.
python3 - "$root/README.md" "$crate" "$root" <<'PY'
import re, sys
readme, crate, root = sys.argv[1:]
text = open(readme).read()
text = text[text.index("## Quickstart"):]
blocks = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
toml = next(body for lang, body in blocks if lang == "toml")
rust = next(body for lang, body in blocks if lang == "rust")
toml = toml.replace('path = "../tool-envelope"', f'path = "{root}"')
open(f"{crate}/Cargo.toml", "w").write(
    '[package]\nname = "orders"\nversion = "0.1.0"\nedition = "2024"\n\n' + toml + "\n[workspace]\n"
)
open(f"{crate}/src/main.rs", "w").write(rust)
PY

cd "$crate"
echo "==> cargo run (the README's quickstart as src/main.rs)"
output=$(CARGO_TARGET_DIR="$work/target" cargo run --quiet)
echo "$output"
# What it prints is, byte for byte, the first `json` block after it ("It prints:").
expected=$(python3 - "$root/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = text[text.index("## Quickstart"):]
print(next(body for lang, body in re.findall(r"```(\w+)\n(.*?)```", text, re.S) if lang == "json"), end="")
PY
)
if [ "$output" != "$expected" ]; then
    echo "error: the quickstart does not print what the README shows" >&2
    diff <(echo "$expected") <(echo "$output") >&2 || true
    exit 1
fi

echo "==> cargo doc: the tool's signature as the user reads it"
CARGO_TARGET_DIR="$work/target" cargo doc --quiet --no-deps --document-private-items
page="$work/target/doc/orders/fn.lookup_orders.html"
[[ -f $page ]] || { echo "error: no docs for lookup_orders" >&2; exit 1; }
# The signature as text, links taken out.
signature=$(grep -o 'fn lookup_orders.*</code>' "$page" | head -1 | sed 's/<[^>]*>//g; s/&lt;/</g; s/&gt;/>/g')
echo "$signature"
if [[ $signature != *"-> ToolResult<Found<String>>"* ]]; then
    echo "error: the docs of lookup_orders do not read -> ToolResult<Found<String>>" >&2
    exit 1
fi
if grep -q 'OkOf\|__private' "$page"; then
    echo "error: the docs of lookup_orders show macro plumbing" >&2
    exit 1
fi
echo "the quickstart runs, and its docs read -> ToolResult<Found<String>>"
