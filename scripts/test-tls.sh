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
if ! command -v openssl >/dev/null; then
    echo "==> installing openssl (Debian package)"
    sudo=""
    [[ "$(id -u)" -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends openssl >/dev/null
fi
openssl version

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
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$work/ca.key" -out "$work/ca.pem" -subj "/CN=tool-envelope CI CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -days 2 -out "$work/server.pem" -extfile "$work/ext.cnf" 2>/dev/null
openssl verify -CAfile "$work/ca.pem" "$work/server.pem"

free_port() {
    "$venv_python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
port="$(free_port)"
url="https://localhost:$port/mcp"

# Starts replica $1, its log in $work/replica-$1.log; the metadata names
# the URL clients reach it by, through nginx.
start_replica() {
    "$server" --http 127.0.0.1:0 --stateless --allowed-host localhost \
        --require-token --resource "$url" >/dev/null 2>"$work/replica-$1.log" &
    pids+=("$!")
}
replica_address() {
    local log="$work/replica-$1.log" address=""
    for _ in $(seq 1 100); do
        address="$(grep -o '127.0.0.1:[0-9]*' "$log" | head -1 || true)"
        [[ -n "$address" ]] && break
        kill -0 "$2" 2>/dev/null || { cat "$log" >&2; echo "replica $1 exited" >&2; return 1; }
        sleep 0.1
    done
    [[ -n "$address" ]] || { cat "$log" >&2; echo "replica $1 did not start" >&2; return 1; }
    echo "$address"
}
start_replica 1
start_replica 2
first="$(replica_address 1 "${pids[0]}")"
second="$(replica_address 2 "${pids[1]}")"
echo "==> replicas at $first and $second; nginx at $url"

mkdir -p "$work/tmp"
cat >"$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log stderr crit;
events { worker_connections 512; }
http {
    log_format upstream '\$upstream_addr \$status \$request_method';
    access_log $work/access.log upstream;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    upstream mcp_replicas {
        server $first;
        server $second;
        keepalive 16;
    }
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $work/server.pem;
        ssl_certificate_key $work/server.key;
        location / {
            proxy_pass http://mcp_replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host localhost;
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

# Both replicas took their share, and nginx answered nothing itself.
"$venv_python" - "$work/access.log" "$first" "$second" <<'PY'
import collections, sys
log, *replicas = sys.argv[1:]
counts = collections.Counter(line.split()[0] for line in open(log))
print(f"requests per replica: {dict(counts)}")
if counts["-"]:
    sys.exit(f"nginx answered {counts['-']} requests itself")
for replica in replicas:
    if counts[replica] < 300:
        sys.exit(f"replica {replica} answered {counts[replica]} requests")
PY
echo "tls: passed"
