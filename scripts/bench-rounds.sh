#!/usr/bin/env bash
# Figure 8 of BENCHMARKS.md: the two MCP revisions over stateless Streamable
# HTTP under load, and what one question costs. One release build of
# benches/servers' tool_envelope_server, serving stateless; oha (from
# crates.io, installed here when missing) drives it with CONNECTIONS
# concurrent connections for DURATION per request kind, the kinds taking
# turns, ROUNDS times:
#
# - `call-2025`: a `tools/call` of `echo` at 2025-11-25 (no `_meta`);
# - `call-2026`: the same call at 2026-07-28: `_meta` with the version and
#   the client's capabilities, and the `Mcp-Method`/`Mcp-Name` headers;
# - `ask-round-1`: the first round of `ask`, a tool that asks the user: the
#   answer is an `InputRequiredResult` with a sealed `requestState`;
# - `ask-round-2`: its second round, the answer and the state sent back:
#   the state opened and checked, the tool run again, its result.
#
# A question costs one round trip of each of the last two, against one
# `call-2026`. Every answer must be a 200, and each kind is checked by hand
# before it is measured. With SERVER=rmcp_macros_server, the same four
# against rmcp's own macros, its `ask` written with rmcp alone (a form from
# the type, a state sealed with rmcp's `RequestStateCodec`): what the
# revision and a question cost rmcp itself.
#
# PROFILE=callgrind counts instructions instead, which do not depend on the
# machine's load: the server runs under valgrind's callgrind, and each kind
# is sent REQUESTS times (1000) over one kept connection after 200 to warm
# up; the counters are zeroed before and dumped after, and the script
# prints the server's instructions per request and leaves each kind's
# profile in target/bench-rounds-profile/ (`callgrind_annotate --inclusive=yes`).
# Under valgrind, sha2 cannot use the CPU's SHA extensions and runs its
# software SHA-256: a seal or an open costs ~20k instructions more there.
#
#   scripts/bench-rounds.sh          # CONNECTIONS=256 DURATION=10s ROUNDS=3
set -euo pipefail

connections=${CONNECTIONS:-256}
duration=${DURATION:-10s}
rounds=${ROUNDS:-3}
server=${SERVER:-tool_envelope_server}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=scripts/oha-env.sh
source "$root/scripts/oha-env.sh"

cargo build --quiet --release -p tool-envelope-bench-servers --bin "$server"
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
work=$(mktemp -d)
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

profile=${PROFILE:-}
requests=${REQUESTS:-1000}
profiles="$target/bench-rounds-profile"
if [[ "$profile" == callgrind ]]; then
    command -v valgrind >/dev/null || { echo "PROFILE=callgrind needs valgrind (apt-get install valgrind)" >&2; exit 1; }
    rm -rf "$profiles" && mkdir -p "$profiles"
    valgrind --tool=callgrind --callgrind-out-file="$profiles/callgrind.%p" \
        "$target/release/$server" --http 127.0.0.1:0 2>"$work/server.log" </dev/null &
elif [[ -n "$profile" ]]; then
    echo "PROFILE must be callgrind or unset, not $profile" >&2
    exit 1
else
    "$target/release/$server" --http 127.0.0.1:0 2>"$work/server.log" &
fi
pid=$!
url=""
for _ in $(seq 1 600); do
    url=$(grep -o 'http://[^ ]*/mcp' "$work/server.log" || true)
    [[ -n "$url" ]] && break
    sleep 0.1
done
[[ -n "$url" ]] || { cat "$work/server.log"; echo "the server did not start" >&2; exit 1; }

accept=(-H "Accept: application/json, text/event-stream" -H "Content-Type: application/json")
old=(-H "MCP-Protocol-Version: 2025-11-25")
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
new_echo=(-H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/call" -H "Mcp-Name: echo")
new_ask=(-H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/call" -H "Mcp-Name: ask")
call_2025='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"C-4821"}}}'
call_2026='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"C-4821"},'"$meta"'}}'
round_1='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{},'"$meta"'}}'

# The first round by hand: its question and the state to send back.
state=""
curl -s "${accept[@]}" "${new_ask[@]}" -d "$round_1" "$url" >"$work/round-1"
state=$(python3 - "$work/round-1" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
# A JSON body, or one SSE event carrying it.
body = text if text.lstrip().startswith("{") else next(
    line[len("data:"):] for line in text.splitlines() if line.startswith("data:"))
result = json.loads(body)["result"]
assert result["resultType"] == "input_required", result
assert result["inputRequests"]["name"]["method"] == "elicitation/create", result
print(result["requestState"])
PY
)
answer='{"name":{"action":"accept","content":{"name":"Ada"}}}'
round_2='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{},"inputResponses":'"$answer"',"requestState":"'"$state"'",'"$meta"'}}'

# Every kind by hand first: each answers as it should.
check() {
    local kind=$1 expect=$2
    shift 2
    curl -s "${accept[@]}" "$@" "$url" >"$work/$kind.sample"
    grep -q "$expect" "$work/$kind.sample" || { echo "$kind: expected $expect in:" >&2; cat "$work/$kind.sample" >&2; exit 1; }
}
check call-2025 '"text":"C-4821"' "${old[@]}" -d "$call_2025"
check call-2026 '"text":"C-4821"' "${new_echo[@]}" -d "$call_2026"
check ask-round-1 '"input_required"' "${new_ask[@]}" -d "$round_1"
check ask-round-2 '"text":"Ada"' "${new_ask[@]}" -d "$round_2"

measure() {
    local kind=$1 round=$2
    shift 2
    "$oha" -c "$connections" -z "$duration" --no-tui --output-format json -m POST "${accept[@]}" "$@" "$url" >"$work/$kind.json"
    python3 - "$work/$kind.json" "$kind" "$round" <<'PY'
import json, sys
path, kind, round_ = sys.argv[1:]
result = json.load(open(path))
summary = result["summary"]
p = result["latencyPercentiles"]
codes = result.get("statusCodeDistribution", {})
print(f"round {round_} {kind:12} {summary['requestsPerSec']:9.0f} req/s  "
      f"p50 {p['p50'] * 1000:6.2f} ms  p99 {p['p99'] * 1000:6.2f} ms  statuses {codes}")
if set(codes) != {"200"}:
    sys.exit(f"{kind}: answers other than 200: {codes}")
PY
}

# Instructions per request of one kind, the server under callgrind.
count() {
    local kind=$1
    shift
    "$oha" -c 1 -n 200 --no-tui -m POST "${accept[@]}" "$@" "$url" >/dev/null
    callgrind_control --zero "$pid" >/dev/null 2>&1
    "$oha" -c 1 -n "$requests" --no-tui --output-format json -m POST "${accept[@]}" "$@" "$url" >"$work/$kind.json"
    callgrind_control --dump="$kind" "$pid" >/dev/null 2>&1
    local dump=""
    for _ in $(seq 1 100); do
        dump=$(grep -l "^desc: Trigger: .*\b$kind\$" "$profiles"/callgrind.* 2>/dev/null || true)
        [[ -n "$dump" ]] && break
        sleep 0.1
    done
    [[ -n "$dump" ]] || { echo "$kind: callgrind wrote no profile" >&2; exit 1; }
    mv "$dump" "$profiles/$kind.callgrind"
    python3 - "$profiles/$kind.callgrind" "$work/$kind.json" "$kind" "$requests" <<'PY'
import json, sys
profile, result, kind, requests = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
codes = json.load(open(result)).get("statusCodeDistribution", {})
if codes != {"200": requests}:
    sys.exit(f"{kind}: answers other than {requests} 200s: {codes}")
total = next(int(line.split()[1]) for line in open(profile) if line.startswith("summary:"))
print(f"{kind:12} {total / requests / 1000:8.1f} k instructions a request ({requests} requests)")
PY
}

if [[ "$profile" == callgrind ]]; then
    count call-2025 "${old[@]}" -d "$call_2025"
    count call-2026 "${new_echo[@]}" -d "$call_2026"
    count ask-round-1 "${new_ask[@]}" -d "$round_1"
    count ask-round-2 "${new_ask[@]}" -d "$round_2"
    exit 0
fi

for round in $(seq 1 "$rounds"); do
    measure call-2025 "$round" "${old[@]}" -d "$call_2025"
    measure call-2026 "$round" "${new_echo[@]}" -d "$call_2026"
    measure ask-round-1 "$round" "${new_ask[@]}" -d "$round_1"
    measure ask-round-2 "$round" "${new_ask[@]}" -d "$round_2"
done
