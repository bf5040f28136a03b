#!/usr/bin/env bash
# TLS and bearer tokens, end to end: nginx (Debian's package) terminates TLS
# with a certificate from a CA this script makes with openssl (also
# Debian's), in front of two stateless replicas of the example server in
# `--require-token` mode.
#
# - McpClient, trusting that CA and sending a token, makes 1,000 calls
#   through nginx: every one answers (tests/mcp_tls.rs, ignored by
#   `cargo test`).
# - Without the CA, every attempt fails with the certificate envelope
#   (`permission`, `TLS_CERTIFICATE`), and nothing reaches the replicas:
#   nginx's access log does not grow.
# - Every request that reached nginx came over TLS 1.3.
# - The official Python SDK's client (scripts/mcp_python_bearer.py), over
#   the same TLS: 401 without a token, served with one, and the refund
#   guard on the `refunds:write` scope.
# - examples/agent.rs (built next to the server) with `--ca-cert` and
#   `--bearer`, as it is pointed at a deployment.
#
# Usage: scripts/test-tls.sh MCP_SERVER_BINARY
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

echo "==> a CA, and a certificate it issues for localhost"
make_certificates "$work"
openssl version

port="$(free_port)"
url="https://localhost:$port/mcp"

# Starts replica $1, its log in $work/replica-$1.log; the metadata names
# the URL clients reach it by, through nginx.
start_replica() {
    "$server" --http 127.0.0.1:0 --stateless --allowed-host localhost \
        --require-token --resource "$url" --approvals client --store "sqlite:$work/store.db" \
        >/dev/null 2>"$work/replica-$1.log" &
    pids+=("$!")
}
start_replica 1
start_replica 2
first="$(wait_for_address "$work/replica-1.log" "${pids[0]}")"
second="$(wait_for_address "$work/replica-2.log" "${pids[1]}")"
echo "==> replicas at $first and $second; nginx at $url"

cat >"$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log stderr crit;
events { worker_connections 512; }
http {
    log_format upstream '\$ssl_protocol \$upstream_addr \$status \$request_method';
    access_log $work/access.log upstream;
$(nginx_temp_paths "$work")
    upstream mcp_replicas {
        server $first;
        server $second;
        keepalive 16;
    }
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $work/server.pem;
        ssl_certificate_key $work/server.key;
        # nginx 1.22 (Debian 12) offers TLS 1.3 only when asked.
        ssl_protocols TLSv1.2 TLSv1.3;
        location / {
            proxy_pass http://mcp_replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host localhost;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_buffering off;
            proxy_request_buffering off;
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

echo "==> the Python SDK with a bearer token, over TLS"
SSL_CERT_FILE="$work/ca.pem" "$venv_python" -O "$script_dir/mcp_python_bearer.py" "$url" "$work/ca.pem"

echo "==> examples/agent.rs at the deployment: https, --ca-cert, --bearer"
agent="$(dirname "$server")/agent"
"$agent" "$url" --ca-cert "$work/ca.pem" --bearer refunds-token >"$work/agent.out"
cat "$work/agent.out"
grep -q "^speaking MCP 2026-07-28" "$work/agent.out" || { echo "error: the agent did not connect" >&2; exit 1; }
grep -q "^orders of C-1001 .*answered" "$work/agent.out" || { echo "error: the agent was not served" >&2; exit 1; }
if "$agent" "$url" --bearer refunds-token >"$work/agent.out" 2>&1; then
    echo "error: the agent connected without the CA" >&2
    exit 1
fi
grep -q "TLS_CERTIFICATE" "$work/agent.out" || { cat "$work/agent.out" >&2; exit 1; }
echo "PASS  the agent: served with the CA and a token; without the CA, TLS_CERTIFICATE"

echo "==> McpClient over TLS: 1,000 calls with the CA, none without it"
before="$(wc -l <"$work/access.log")"
(cd "$script_dir/.." &&
    TOOL_ENVELOPE_TLS_URL="$url" TOOL_ENVELOPE_TLS_CA="$work/ca.pem" \
        cargo test --quiet --all-features --test mcp_tls -- --ignored --nocapture --test-threads 1 without_the_ca)
after="$(wc -l <"$work/access.log")"
if [[ "$after" -ne "$before" ]]; then
    echo "error: requests reached the replicas without the CA ($before → $after log lines)" >&2
    exit 1
fi
echo "PASS  without the CA: nothing reached nginx's upstreams ($after log lines before and after)"
(cd "$script_dir/.." &&
    TOOL_ENVELOPE_TLS_URL="$url" TOOL_ENVELOPE_TLS_CA="$work/ca.pem" \
        cargo test --quiet --all-features --test mcp_tls -- --ignored --nocapture --test-threads 1 a_thousand_calls)

# Both replicas took their share, nginx answered nothing itself, and every
# client (McpClient, the agent, the Python SDK) spoke TLS 1.3.
"$venv_python" - "$work/access.log" "$first" "$second" <<'PY'
import collections, sys
log, *replicas = sys.argv[1:]
# The protocol first: an upstream retried is logged as "a, b".
lines = [line.split(maxsplit=1) for line in open(log)]
counts = collections.Counter(rest.split()[0].rstrip(",") for _, rest in lines)
print(f"requests per replica: {dict(counts)}")
if counts["-"]:
    sys.exit(f"nginx answered {counts['-']} requests itself")
protocols = collections.Counter(protocol for protocol, _ in lines)
print(f"TLS versions: {dict(protocols)}")
if set(protocols) != {"TLSv1.3"}:
    sys.exit(f"not every request came over TLS 1.3: {dict(protocols)}")
for replica in replicas:
    if counts[replica] < 300:
        sys.exit(f"replica {replica} answered {counts[replica]} requests")
PY
echo "tls: passed"
