#!/usr/bin/env bash
# Figure 11 of BENCHMARKS.md: a call through McpClient over TLS against one
# over plain HTTP, through the same nginx (Debian's package) to the same
# server (benches/servers' tool_envelope_server, release, stateless), in one
# run. nginx listens twice, plainly and with a certificate from a CA made
# here with openssl; the criterion bench benches/tls.rs calls through both.
#
#   scripts/bench-tls.sh            # the bench's own criterion arguments may follow
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
script_dir="$root/scripts"
cd "$root"
# shellcheck source=scripts/nginx-env.sh
source "$script_dir/nginx-env.sh"

cargo build --quiet --release -p tool-envelope-bench-servers
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$work/ca.key" -out "$work/ca.pem" -subj "/CN=tool-envelope bench CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -days 2 -out "$work/server.pem" -extfile "$work/ext.cnf" 2>/dev/null

"$target/release/tool_envelope_server" --http 127.0.0.1:0 2>"$work/server.log" &
pids+=("$!")
upstream=""
for _ in $(seq 1 100); do
    upstream="$(grep -o '127.0.0.1:[0-9]*' "$work/server.log" | head -1 || true)"
    [[ -n "$upstream" ]] && break
    sleep 0.1
done
[[ -n "$upstream" ]] || { cat "$work/server.log" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
plain_port=$(free_port)
tls_port=$(free_port)

mkdir -p "$work/tmp"
cat >"$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log stderr crit;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    upstream server { server $upstream; keepalive 16; }
    server {
        listen 127.0.0.1:$plain_port;
        listen 127.0.0.1:$tls_port ssl;
        ssl_certificate $work/server.pem;
        ssl_certificate_key $work/server.key;
        location / {
            proxy_pass http://server;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host localhost;
        }
    }
}
CONF
"$nginx_bin" -t -q -c "$work/nginx.conf" -p "$work"
"$nginx_bin" -c "$work/nginx.conf" -p "$work" </dev/null >/dev/null &
pids+=("$!")
for _ in $(seq 1 100); do
    (: >"/dev/tcp/127.0.0.1/$tls_port") 2>/dev/null && break
    sleep 0.1
done

TOOL_ENVELOPE_BENCH_PLAIN_URL="http://localhost:$plain_port/mcp" \
TOOL_ENVELOPE_BENCH_TLS_URL="https://localhost:$tls_port/mcp" \
TOOL_ENVELOPE_BENCH_CA="$work/ca.pem" \
    cargo bench --quiet --features client --bench tls -- "$@"
