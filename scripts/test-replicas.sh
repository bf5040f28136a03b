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
# Tasks (`--tasks`), through the same nginx, with this crate's client
# (tests/mcp_client_servers.rs, ignored by `cargo test`): 20 tasks, each
# followed to its result with `tasks/get` requests that land on either
# replica. Then, through a second nginx port that sends every request of a
# client to one replica while it lives: a slow destructive refund and a slow
# read-only report start as tasks on one replica, which is killed (-9)
# mid-run; the other takes both over once their lease runs out — the report
# runs again, the refund does not and ends `MAY_HAVE_TAKEN_EFFECT`.
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
pinned_port="$(free_port)"

start_replica() {
    "$server" --http 127.0.0.1:0 --stateless --allowed-host tools.internal \
        --require-token --resource "http://127.0.0.1:$port/mcp" --store "$postgres_url" --tasks \
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
    log_format upstream '\$upstream_addr \$status \$request_method \$uri \$http_mcp_method';
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
    # One replica per client (its x-pin header) while it lives, then the
    # other: nginx passes a request the dead replica refuses on.
    upstream pinned {
        hash \$http_x_pin;
        server $first max_fails=0;
        server $second max_fails=0;
    }
    server {
        listen 127.0.0.1:$pinned_port;
        location / {
            proxy_pass http://pinned;
            proxy_http_version 1.1;
            proxy_set_header Host tools.internal;
            proxy_buffering off;
            proxy_next_upstream error timeout;
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

echo "==> 20 tasks through nginx, each followed on either replica (this crate's client)"
export TOOL_ENVELOPE_REPLICAS_URL="http://127.0.0.1:$port/mcp"
export TOOL_ENVELOPE_PINNED_URL="http://127.0.0.1:$pinned_port/mcp"
cd "$script_dir/.."
out="$(cargo test --quiet --all-features --test mcp_client_servers -- --ignored --exact \
    twenty_tasks_through_nginx_each_followed_to_its_result 2>&1)" || { echo "$out"; exit 1; }
echo "$out" | grep -q "1 passed" || { echo "$out"; echo "the tasks test did not run" >&2; exit 1; }
"$venv_python" - "$work/access.log" "$first" "$second" <<'PY'
import collections, sys
log, *replicas = sys.argv[1:]
gets = collections.Counter(line.split()[0] for line in open(log) if line.split()[-1] == "tasks/get")
print(f"PASS  20 tasks, each followed to its result; tasks/get answered per replica: {dict(gets)}")
for replica in replicas:
    if gets[replica] == 0:
        sys.exit(f"replica {replica} answered no tasks/get: not read across replicas")
PY

echo "==> a replica killed mid-task: the other takes its tasks over"
cargo test --quiet --all-features --test mcp_client_servers -- --ignored --exact \
    tasks_whose_replica_dies_are_taken_over_and_the_refund_is_not_run_again >"$work/kill-test.log" 2>&1 &
test_pid=$!
holder=""
for _ in $(seq 1 600); do
    if grep -q "started slow_refund O-KILL" "$work/replica-1.log"; then holder=1; break; fi
    if grep -q "started slow_refund O-KILL" "$work/replica-2.log"; then holder=2; break; fi
    kill -0 "$test_pid" 2>/dev/null || break
    sleep 0.1
done
[[ -n "$holder" ]] || { cat "$work/kill-test.log"; echo "the slow refund never started" >&2; exit 1; }
for _ in $(seq 1 100); do
    grep -q "started slow_report Q-KILL" "$work/replica-$holder.log" && break
    sleep 0.1
done
grep -q "started slow_report Q-KILL" "$work/replica-$holder.log" ||
    { echo "the slow report did not start on the same replica" >&2; exit 1; }
kill -9 "${pids[$((holder - 1))]}"
survivor=$((3 - holder))
echo "==> killed replica $holder mid-run; replica $survivor takes over"
wait "$test_pid" || { cat "$work/kill-test.log"; exit 1; }
grep -q "1 passed" "$work/kill-test.log" || { cat "$work/kill-test.log"; echo "the kill test did not run" >&2; exit 1; }
grep -q "started slow_report Q-KILL" "$work/replica-$survivor.log" ||
    { echo "the read-only report was not run again on replica $survivor" >&2; exit 1; }
if grep -q "slow_refund O-KILL" "$work/replica-$survivor.log"; then
    echo "the destructive refund ran again on replica $survivor" >&2
    exit 1
fi
if grep -q "refunded O-KILL" "$work/replica-$holder.log"; then
    echo "the refund finished before its replica was killed: the test proves nothing" >&2
    exit 1
fi
echo "PASS  replica $holder killed mid-run: replica $survivor ran the report again; the refund ended MAY_HAVE_TAKEN_EFFECT, not run twice"
