#!/usr/bin/env bash
# The client against servers nobody here wrote: installs FastMCP (PyPI,
# pinned, into the Python SDK's virtual environment, which serves
# scripts/mcp_python_server.py on the SDK's own MCPServer too),
# @modelcontextprotocol/server-everything (npm, pinned, on the TypeScript SDK
# v1) and the TypeScript SDK v2 (npm, pinned, serving
# scripts/ts_v2_server.mjs), all run on the system's Node 20; then runs the
# ignored tests of tests/mcp_client_servers.rs that need them: classification
# of their failures (argument errors, a refused protocol version), secrets
# their texts quote, progress, and one coordinator across FastMCP,
# server-everything and this crate's example server with one of them killed
# mid-run.
#
#   scripts/test-client-servers.sh
set -euo pipefail

readonly FASTMCP_VERSION="4.2.3"
readonly EVERYTHING_VERSION="2026.8.31"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$script_dir/.." && pwd)"
cache="${TOOL_ENVELOPE_CACHE:-$root/target/ci-cache}"

# shellcheck source=scripts/python-env.sh
source "$script_dir/python-env.sh"
echo "==> installing fastmcp==$FASTMCP_VERSION"
"$venv_python" -m pip install --quiet "fastmcp==$FASTMCP_VERSION"
# fastmcp pins its own mcp: the same 2.3.0 the Python SDK checks use.
"$venv_python" -c 'from importlib.metadata import version; print("fastmcp", version("fastmcp"), "mcp", version("mcp"))'

prefix="$cache/everything"
everything="$prefix/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
installed="$(node -p 'require(process.argv[1]).version' "$prefix/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null || true)"
if [[ "$installed" != "$EVERYTHING_VERSION" ]]; then
    echo "==> installing @modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
fi
[[ -f "$everything" ]] || { echo "error: server-everything not found at $everything" >&2; exit 1; }
echo "==> node $(node --version), server-everything $EVERYTHING_VERSION"

# shellcheck source=scripts/ts-v2-env.sh
source "$script_dir/ts-v2-env.sh"
ts_v2="$(ts_v2_install server)"
# An ES module finds its packages next to itself.
cp "$script_dir/ts_v2_server.mjs" "$ts_v2/ts_v2_server.mjs"
echo "==> @modelcontextprotocol/server $TS_V2_VERSION"

cd "$root"
TOOL_ENVELOPE_FASTMCP="$venv_python" \
TOOL_ENVELOPE_NODE="$(command -v node)" \
TOOL_ENVELOPE_EVERYTHING="$everything" \
TOOL_ENVELOPE_TS_V2="$ts_v2/ts_v2_server.mjs" \
    cargo test --quiet --all-features --test mcp_client_servers -- --ignored \
        fastmcp server_everything python_sdk typescript_v2 one_coordinator
