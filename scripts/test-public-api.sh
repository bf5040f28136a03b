#!/usr/bin/env bash
# The public API, as `cargo public-api` lists it (every item with its
# signature, on the nightly toolchain's rustdoc JSON), against the committed
# lists in api/: a change of surface is a visible diff. Installs
# cargo-public-api (pinned) under target/ci-cache the first time.
#
#   scripts/test-public-api.sh            # check
#   scripts/test-public-api.sh --bless    # write the lists anew
set -euo pipefail

readonly CARGO_PUBLIC_API_VERSION="0.52.0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${TOOL_ENVELOPE_CACHE:-$root/target/ci-cache}"
tool_root="$cache/cargo-public-api"
export PATH="$tool_root/bin:$PATH"

installed="$(cargo-public-api --version 2>/dev/null || true)"
if [[ "$installed" != *"$CARGO_PUBLIC_API_VERSION"* ]]; then
    echo "==> installing cargo-public-api $CARGO_PUBLIC_API_VERSION"
    cargo install --quiet --locked --root "$tool_root" "cargo-public-api@$CARGO_PUBLIC_API_VERSION"
fi
rustup run nightly rustc --version

cd "$root"

# -sss: no blanket impls, auto traits or auto-derived impls.
api_of() {
    cargo public-api --package "$1" --all-features -sss 2>/dev/null
}

# What a user of the facade sees: its own items (the macros), and the
# runtime it re-exports whole (`pub use tool_envelope_runtime::*`, which
# cargo-public-api prints unexpanded) under the facade's name.
facade_api() {
    local own runtime
    own="$(api_of tool-envelope)"
    runtime="$(api_of tool-envelope-runtime)"
    {
        printf '%s\n' "$own" | grep -v -F 'pub use tool_envelope::<<tool_envelope_runtime::*>>'
        printf '%s\n' "$runtime" | sed 's/\btool_envelope_runtime\b/tool_envelope/g'
    }
}

status=0
for crate in tool-envelope tool-envelope-runtime; do
    list="api/$crate.txt"
    if [[ "$crate" == tool-envelope ]]; then
        current="$(facade_api)"
    else
        current="$(api_of "$crate")"
    fi
    if [[ "${1:-}" == "--bless" ]]; then
        printf '%s\n' "$current" > "$list"
        echo "==> wrote $list ($(wc -l < "$list") lines)"
    elif ! diff -u "$list" <(printf '%s\n' "$current"); then
        echo "error: the public API of $crate changed: review the diff above, then run scripts/test-public-api.sh --bless" >&2
        status=1
    else
        echo "==> $crate: the public API is as committed ($(wc -l < "$list") lines)"
    fi
done
exit "$status"
