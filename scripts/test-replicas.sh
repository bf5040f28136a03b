#!/usr/bin/env bash
# Approvals decided once and run once by real replicas: Debian's PostgreSQL
# and nginx (installed with apt-get when missing), two replicas of
# examples/mcp_server (`--require-token --stateless --store postgres://…`)
# behind nginx, round-robin for `/mcp` and `/inbox` alike. The official
# Python SDK asks for 100 refunds over the cap; a person signs in to the
# inbox through nginx (the replicas share its cookie key) and approves all
# 100, the decisions landing on either replica; both replicas' runners race
# for every approved refund; the SDK then reads each result. The replicas'
# own records of the refunds they made must hold each order exactly once
# (scripts/mcp_python_replicas.py).
#
#     scripts/test-replicas.sh MCP_SERVER_BINARY
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 MCP_SERVER_BINARY" >&2
    exit 2
fi
server="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=scripts/nginx-env.sh
source "$script_dir/nginx-env.sh"
# shellcheck source=scripts/postgres-env.sh
source "$script_dir/postgres-env.sh"
# shellcheck source=scripts/python-env.sh
source "$script_dir/python-env.sh"

work="$(mktemp -d)"
chmod 755 "$work"  # the cluster under it runs as the postgres user
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    stop_postgres "$work/pg"
    rm -rf "$work"
}
trap cleanup EXIT

start_postgres "$work/pg"
echo "==> PostgreSQL at $postgres_url"

export TOOL_ENVELOPE_STATE_KEY="replicas-test-key-shared-by-every-replica"
export TOOL_ENVELOPE_INBOX_KEY="replicas-test-inbox-key-shared-by-every-replica"
port="$(free_port)"

start_replica() {
    "$server" --http 127.0.0.1:0 --stateless --allowed-host tools.internal \
        --require-token --resource "http://127.0.0.1:$port/mcp" --store "$postgres_url" \
        >/dev/null 2>"$work/replica-$1.log" &
    pids+=("$!")
}
# One after the other: the first migrates the shared database.
start_replica 1
first="$(wait_for_address "$work/replica-1.log" "${pids[0]}")"
start_replica 2
second="$(wait_for_address "$work/replica-2.log" "${pids[1]}")"
echo "==> replicas at $first and $second; nginx at 127.0.0.1:$port"

cat >"$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
    log_format upstream '\$upstream_addr \$status \$request_method \$uri';
    access_log $work/access.log upstream;
$(nginx_temp_paths "$work")
    upstream replicas {
        server $first max_fails=0;
        server $second max_fails=0;
        keepalive 16;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host tools.internal;
            proxy_buffering off;
            proxy_next_upstream off;
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

"$venv_python" -O "$script_dir/mcp_python_replicas.py" "http://127.0.0.1:$port" 100 \
    "$work/replica-1.log" "$work/replica-2.log" "$work/access.log" "$first" "$second"
