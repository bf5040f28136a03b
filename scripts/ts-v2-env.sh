# Sourced by the scripts that run the TypeScript SDK v2 (npm, pinned here
# once): `ts_v2_install PACKAGE` installs `@modelcontextprotocol/PACKAGE`
# (`client` or `server`) with zod under
# ${TOOL_ENVELOPE_CACHE:-target/ci-cache}/ts-v2-PACKAGE when it is missing or
# of another version, and prints that directory: an ES module copied there
# finds its packages next to itself.

readonly TS_V2_VERSION="2.4.0"
readonly ZOD_VERSION="4.6.7"

ts_v2_env_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

ts_v2_install() {
    local package=$1
    local dir="${TOOL_ENVELOPE_CACHE:-$ts_v2_env_root/target/ci-cache}/ts-v2-$package"
    local installed
    installed="$(node -p 'require(process.argv[1]).version' \
        "$dir/node_modules/@modelcontextprotocol/$package/package.json" 2>/dev/null || true)"
    if [[ "$installed" != "$TS_V2_VERSION" ]]; then
        echo "==> installing @modelcontextprotocol/$package@$TS_V2_VERSION" >&2
        mkdir -p "$dir"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
            "@modelcontextprotocol/$package@$TS_V2_VERSION" "zod@$ZOD_VERSION" >&2
    fi
    echo "$dir"
}
