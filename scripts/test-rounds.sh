#!/usr/bin/env bash
# A tool asks its client on both MCP revisions: the official Python SDK's
# `Client` (auto: 2026-07-28; legacy: 2025-11-25) and FastMCP's client, both
# pinned, against examples/full_server over stdio and Streamable HTTP; and a
# person approving refunds of examples/mcp_server, with sessions and
# stateless. See scripts/mcp_python_rounds.py for the checks. Then the
# TypeScript SDK v2 client (npm, pinned; `versionNegotiation: 'auto'`) calls
# a tool of examples/full_server that asks the user (scripts/ts_v2_client.mjs).
#
#   scripts/test-rounds.sh FULL_SERVER_BINARY MCP_SERVER_BINARY
set -euo pipefail

readonly FASTMCP_VERSION="4.2.3"

usage="usage: scripts/test-rounds.sh FULL_SERVER_BINARY MCP_SERVER_BINARY"
server=${1:?$usage}
refunds=${2:?$usage}
server="$(cd "$(dirname "$server")" && pwd)/$(basename "$server")"
refunds="$(cd "$(dirname "$refunds")" && pwd)/$(basename "$refunds")"
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=scripts/python-env.sh
source "$script_dir/python-env.sh"
echo "==> installing fastmcp==$FASTMCP_VERSION"
"$venv_python" -m pip install --quiet "fastmcp==$FASTMCP_VERSION"

echo "==> running mcp_python_rounds.py against $server"
# With -O, which strips `assert`: the checks must hold without it.
"$venv_python" -O "$script_dir/mcp_python_rounds.py" "$server" "$refunds"

# shellcheck source=scripts/ts-v2-env.sh
source "$script_dir/ts-v2-env.sh"
ts_client="$(ts_v2_install client)"
cp "$script_dir/ts_v2_client.mjs" "$ts_client/ts_v2_client.mjs"
log="$(mktemp)"
"$server" --http 127.0.0.1:0 2>"$log" &
http=$!
trap 'kill "$http" 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 1 100); do
    url="$(grep -o 'http://[^ ]*/mcp' "$log" || true)"
    [[ -n "$url" ]] && break
    sleep 0.1
done
[[ -n "$url" ]] || { cat "$log" >&2; echo "error: full_server did not start" >&2; exit 1; }
echo "==> the TypeScript SDK v2 client (node $(node --version)) against $url"
node "$ts_client/ts_v2_client.mjs" "$url"
