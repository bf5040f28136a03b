#!/usr/bin/env bash
# Run the MCP server through an independent client: the official MCP Python
# SDK (pip `mcp`, pinned). See scripts/mcp_python_client.py for the checks.
#
# Usage: scripts/test-python-client.sh SERVER_BINARY
#
# The virtual environment lives under ${TOOL_ENVELOPE_CACHE:-<repository>/target/ci-cache}
# and is reused between runs; one that no longer works (for example because
# the interpreter it was made from is gone) is rebuilt from scratch.
set -euo pipefail

readonly MCP_VERSION="2.3.0"
readonly PYTHON="python3"  # Python 3.11 in CI; mcp 2.x needs >= 3.10

if [[ $# -ne 1 ]]; then
    echo "usage: $0 SERVER_BINARY" >&2
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
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${TOOL_ENVELOPE_CACHE:-$root/target/ci-cache}"
venv="$cache/python-venv"

export PIP_DISABLE_PIP_VERSION_CHECK=1
export PYTHONDONTWRITEBYTECODE=1

# A venv is usable if its interpreter starts and has pip.
venv_works() {
    [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -m pip --version >/dev/null 2>&1
}

if [[ -d "$venv" ]] && ! venv_works; then
    echo "==> removing broken virtual environment $venv"
    rm -rf "$venv"
fi
if [[ ! -d "$venv" ]]; then
    echo "==> creating virtual environment $venv ($("$PYTHON" --version 2>&1))"
    mkdir -p "$cache"
    "$PYTHON" -m venv "$venv"
fi

echo "==> installing mcp==$MCP_VERSION"
"$venv/bin/python" -m pip install --quiet "mcp==$MCP_VERSION"

# Guard against a resolver surprise: the client is written against the 2.x API.
installed="$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("mcp"))')"
if [[ "$installed" != "$MCP_VERSION" ]]; then
    echo "error: expected mcp $MCP_VERSION in $venv, found $installed" >&2
    exit 1
fi

echo "==> running the Python SDK client against $server"
# With -O, which strips `assert`: the checks must hold without it.
exec "$venv/bin/python" -O "$script_dir/mcp_python_client.py" "$server"
