#!/usr/bin/env bash
# A tool asks its client on both MCP revisions: the official Python SDK's
# `Client` (auto: 2026-07-28; legacy: 2025-11-25) and FastMCP's client, both
# pinned, against examples/full_server over stdio and Streamable HTTP; and a
# person approving refunds of examples/mcp_server, with sessions and
# stateless. See scripts/mcp_python_rounds.py for the checks.
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
exec "$venv_python" -O "$script_dir/mcp_python_rounds.py" "$server" "$refunds"
