#!/usr/bin/env bash
# Figure 11 of BENCHMARKS.md: a call through McpClient over TLS against one
# over plain HTTP, through the same nginx (Debian's package) to the same
# server (benches/servers' tool_envelope_server, release, stateless), in one
# run. nginx listens twice, plainly and with a certificate from a CA made
# here with openssl; benches/tls.rs calls through both, in alternating rounds.
#
#   scripts/bench-tls.sh [ROUNDS]   # alternating rounds, 11 unless given
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

make_certificates "$work"

"$target/release/tool_envelope_server" --http 127.0.0.1:0 2>"$work/server.log" &
pids+=("$!")
upstream="$(wait_for_address "$work/server.log" "${pids[0]}")"
plain_port=$(free_port)
tls_port=$(free_port)

cat >"$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log stderr crit;
events { worker_connections 512; }
http {
    access_log off;
$(nginx_temp_paths "$work")
    upstream server { server $upstream; keepalive 16; }
    server {
        listen 127.0.0.1:$plain_port;
        listen 127.0.0.1:$tls_port ssl;
        ssl_certificate $work/server.pem;
        ssl_certificate_key $work/server.key;
        # nginx 1.22 (Debian 12) offers TLS 1.3 only when asked; later
        # versions offer it by default, as any current deployment does.
        ssl_protocols TLSv1.2 TLSv1.3;
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
