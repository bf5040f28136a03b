#!/usr/bin/env bash
# Figure 11 of BENCHMARKS.md: a call through McpClient over TLS against one
# over plain HTTP, through the same nginx (Debian's package) to the same
# server (benches/servers' tool_envelope_server, release, stateless), in one
# run. nginx listens twice, plainly and with a certificate from a CA made
# here with openssl; benches/tls.rs calls through both, in alternating rounds.
#
# PROFILE=callgrind counts instructions instead, which do not depend on the
# machine's load: nginx (one process, no master) and the server run under
# valgrind's callgrind, and so does the bench, once per way of calling
# (McpClient and the bare client, plain and TLS) with 1 round and again with
# 3; the difference of the two, over the 2,000 calls between them, is each
# process's instructions a call, without start-up, connections or
# handshakes. The script prints them, and TLS / plain for each client as the
# throughput the whole chain's instructions would give; the profiles are
# left in target/bench-tls-profile/ (`callgrind_annotate --inclusive=yes`).
#
#   scripts/bench-tls.sh [ROUNDS]   # alternating rounds, 11 unless given
#   PROFILE=callgrind scripts/bench-tls.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
script_dir="$root/scripts"
cd "$root"
# shellcheck source=scripts/nginx-env.sh
source "$script_dir/nginx-env.sh"

profile=${PROFILE:-}
case "$profile" in
    "") ;;
    callgrind)
        command -v valgrind >/dev/null || { echo "PROFILE=callgrind needs valgrind (apt-get install valgrind)" >&2; exit 1; } ;;
    *) echo "PROFILE must be callgrind or unset, not $profile" >&2; exit 1 ;;
esac

cargo build --quiet --release -p tool-envelope-bench-servers
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
profiles="$target/bench-tls-profile"
# Under PROFILE=callgrind, what runs the server and nginx: valgrind, one
# profile per process (dumps add a suffix), its own messages in a file.
under=()
if [[ -n "$profile" ]]; then
    rm -rf "$profiles" && mkdir -p "$profiles"
    under=(valgrind --tool=callgrind --log-file="$profiles/valgrind.%p.log"
        --callgrind-out-file="$profiles/callgrind.%p")
fi
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

make_certificates "$work"

"${under[@]}" "$target/release/tool_envelope_server" --http 127.0.0.1:0 2>"$work/server.log" &
pids+=("$!")
upstream="$(wait_for_address "$work/server.log" "${pids[0]}")"
plain_port=$(free_port)
tls_port=$(free_port)

cat >"$work/nginx.conf" <<CONF
daemon off;
${profile:+master_process off;}
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
"${under[@]}" "$nginx_bin" -c "$work/nginx.conf" -p "$work" </dev/null >/dev/null &
pids+=("$!")
for _ in $(seq 1 600); do
    (: >"/dev/tcp/127.0.0.1/$tls_port") 2>/dev/null && break
    sleep 0.1
done

export TOOL_ENVELOPE_BENCH_PLAIN_URL="http://localhost:$plain_port/mcp"
export TOOL_ENVELOPE_BENCH_TLS_URL="https://localhost:$tls_port/mcp"
export TOOL_ENVELOPE_BENCH_CA="$work/ca.pem"
if [[ -z "$profile" ]]; then
    cargo bench --quiet --features client --bench tls -- "$@"
    exit 0
fi

bench=$(cargo bench --quiet --features client --bench tls --no-run --message-format=json |
    python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable")][0])')
server_pid=${pids[0]} nginx_pid=${pids[1]}
# Moves the dump labelled $2 of process $1 to $3, once callgrind wrote it.
take_dump() {
    local pid=$1 label=$2 to=$3 dump=""
    callgrind_control --dump="$label" "$pid" >/dev/null 2>&1
    for _ in $(seq 1 100); do
        dump=$(grep -l "^desc: Trigger: .*\b$label\$" "$profiles"/callgrind."$pid".* 2>/dev/null || true)
        [[ -n "$dump" ]] && break
        sleep 0.1
    done
    [[ -n "$dump" ]] || { echo "$label: callgrind wrote no profile for process $pid" >&2; exit 1; }
    mv "$dump" "$to"
}
for way in ours-plain ours-tls bare-plain bare-tls; do
    for rounds in 1 3; do
        callgrind_control --zero "$server_pid" >/dev/null 2>&1
        callgrind_control --zero "$nginx_pid" >/dev/null 2>&1
        TOOL_ENVELOPE_BENCH_ONLY=$way valgrind --tool=callgrind --log-file="$profiles/valgrind.bench.log" \
            --callgrind-out-file="$profiles/client.$way.$rounds" "$bench" --bench "$rounds" >/dev/null
        take_dump "$server_pid" "$way-$rounds" "$profiles/server.$way.$rounds"
        take_dump "$nginx_pid" "$way-$rounds" "$profiles/nginx.$way.$rounds"
    done
done
python3 - "$profiles" <<'PY'
import sys
profiles = sys.argv[1]
calls = 2_000  # 3 rounds of 1,000 calls against 1

def total(path):
    return next(int(line.split()[1]) for line in open(path) if line.startswith("summary:"))

def per_call(process, way):
    return (total(f"{profiles}/{process}.{way}.3") - total(f"{profiles}/{process}.{way}.1")) / calls

print("k instructions a call   client    nginx   server    whole")
whole = {}
for way in ("ours-plain", "ours-tls", "bare-plain", "bare-tls"):
    parts = [per_call(process, way) for process in ("client", "nginx", "server")]
    whole[way] = sum(parts)
    print(f"{way:22} " + " ".join(f"{part / 1000:8.1f}" for part in parts) + f" {whole[way] / 1000:8.1f}")
for name, client in (("McpClient", "ours"), ("bare reqwest", "bare")):
    print(f"TLS / plain in instructions, {name}: {whole[client + '-plain'] / whole[client + '-tls']:.3f}x")
PY
