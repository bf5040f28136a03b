#!/usr/bin/env bash
# Figure 7 of BENCHMARKS.md: stateless Streamable HTTP under load. The same
# tools, served by tool-envelope's ToolSet and by rmcp's own macros
# (benches/servers, release build), each stateless over HTTP; oha (from
# crates.io, installed here when missing) drives each with CONNECTIONS
# concurrent connections for DURATION, every request a `tools/call` of
# `mixed`, which succeeds three calls in four and fails the fourth with an
# envelope. Prints requests per second, the latency percentiles and the
# status codes, and checks that every answer was a 200.
#
#   scripts/bench-http.sh            # CONNECTIONS=256 DURATION=20s ROUNDS=3
set -euo pipefail

connections=${CONNECTIONS:-256}
duration=${DURATION:-20s}
rounds=${ROUNDS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=scripts/oha-env.sh
source "$root/scripts/oha-env.sh"

cargo build --quiet --release -p tool-envelope-bench-servers
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
work=$(mktemp -d)
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mixed","arguments":{"text":"C-4821"}}}'
headers=(-H "Accept: application/json, text/event-stream" -H "Content-Type: application/json" -H "MCP-Protocol-Version: 2025-11-25")

for round in $(seq 1 "$rounds"); do
    for server in tool_envelope_server rmcp_macros_server; do
        "$target/release/$server" --http 127.0.0.1:0 2>"$work/$server.log" &
        pid=$!
        url=""
        for _ in $(seq 1 100); do
            url=$(grep -o 'http://[^ ]*/mcp' "$work/$server.log" || true)
            [[ -n "$url" ]] && break
            sleep 0.1
        done
        [[ -n "$url" ]] || { cat "$work/$server.log"; echo "$server did not start" >&2; exit 1; }
        # Four calls by hand: three successes, then an envelope.
        for _ in 1 2 3 4; do
            curl -s "${headers[@]}" -d "$body" "$url" >>"$work/$server.sample"
            echo >>"$work/$server.sample"
        done
        python3 - "$work/$server.sample" "$server" <<'PY'
import json, sys
path, server = sys.argv[1:]
answers = [json.loads(line)["result"] for line in open(path) if line.strip()][-4:]
errors = [answer.get("isError", False) for answer in answers]
assert errors == [False, False, False, True], f"{server}: isError of four calls {errors}"
assert answers[3]["structuredContent"]["errorCategory"] == "transient", answers[3]
PY
        "$oha" -c "$connections" -z "$duration" --no-tui --output-format json -m POST "${headers[@]}" -d "$body" "$url" >"$work/$server.json"
        kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
        python3 - "$work/$server.json" "$server" "$round" <<'PY'
import json, sys
path, server, round_ = sys.argv[1:]
result = json.load(open(path))
summary = result["summary"]
p = result["latencyPercentiles"]
codes = result.get("statusCodeDistribution", {})
print(f"round {round_} {server:22} {summary['requestsPerSec']:9.0f} req/s  "
      f"p50 {p['p50'] * 1000:6.2f} ms  p99 {p['p99'] * 1000:6.2f} ms  statuses {codes}")
if set(codes) != {"200"}:
    sys.exit(f"{server}: answers other than 200: {codes}")
PY
    done
done
