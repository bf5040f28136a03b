# Sourced by the scripts that run the official MCP Python SDK: makes (or
# reuses) the virtual environment under ${TOOL_ENVELOPE_CACHE:-target/ci-cache}
# with the pinned SDK, and sets $venv_python to its interpreter. A venv that
# no longer works (its interpreter gone) is rebuilt from scratch.

readonly MCP_VERSION="2.3.0"
readonly PYTHON="python3"  # Python 3.11 in CI; mcp 2.x needs >= 3.10

python_env_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python_env_cache="${TOOL_ENVELOPE_CACHE:-$python_env_root/target/ci-cache}"
venv="$python_env_cache/python-venv"

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
    mkdir -p "$python_env_cache"
    "$PYTHON" -m venv "$venv"
fi

echo "==> installing mcp==$MCP_VERSION"
"$venv/bin/python" -m pip install --quiet "mcp==$MCP_VERSION"

# Guard against a resolver surprise: the clients are written against the 2.x API.
installed="$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("mcp"))')"
if [[ "$installed" != "$MCP_VERSION" ]]; then
    echo "error: expected mcp $MCP_VERSION in $venv, found $installed" >&2
    exit 1
fi
venv_python="$venv/bin/python"
