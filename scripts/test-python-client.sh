#!/usr/bin/env bash
# Run the MCP server through an independent client: the official MCP Python
# SDK (pip `mcp`, pinned). See scripts/mcp_python_client.py for the checks.
#
# Usage: scripts/test-python-client.sh SERVER_BINARY [CLIENT_SCRIPT]
#
# CLIENT_SCRIPT defaults to scripts/mcp_python_client.py (the checks of
# examples/mcp_server); scripts/mcp_python_full_server.py checks
# examples/full_server.
#
# The virtual environment lives under ${TOOL_ENVELOPE_CACHE:-<repository>/target/ci-cache}
# and is reused between runs; one that no longer works (for example because
# the interpreter it was made from is gone) is rebuilt from scratch.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 SERVER_BINARY [CLIENT_SCRIPT]" >&2
    exit 2
fi
server="$1"
if [[ ! -x "$server" ]]; then
    echo "error: server binary '$server' does not exist or is not executable" >&2
    exit 2
fi
# The client starts the server itself, so give it a path that does not
# depend on the working directory.
server="$(cd "$(dirname "$server")" && pwd)/$(basename "$server")"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
client="${2:-$script_dir/mcp_python_client.py}"

# shellcheck source=scripts/python-env.sh
source "$script_dir/python-env.sh"

echo "==> running $(basename "$client") (the Python SDK) against $server"
# With -O, which strips `assert`: the checks must hold without it.
exec "$venv_python" -O "$client" "$server"
