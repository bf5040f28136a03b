#!/usr/bin/env bash
# The store against Debian's PostgreSQL, as replicas would share it: starts a
# throwaway cluster (installing the `postgresql` package if it is missing),
# points TOOL_ENVELOPE_TEST_POSTGRES at it, and runs tests/store.rs's
# Postgres contract (two stores on one database racing to decide, claim and
# redeem) and tests/tickets.rs's (two replicas racing to run 100 approved
# calls: each runs once). The cluster is removed when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
[[ "$(id -u)" -ne 0 ]] && sudo="sudo"
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
if [[ -z "$(pg_bin)" ]]; then
    echo "==> installing postgresql (Debian package)"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
fi
bin="$(pg_bin)"

# PostgreSQL will not run as root: as root, run it as the package's user.
as_owner=()
[[ "$(id -u)" -eq 0 ]] && as_owner=(runuser -u postgres --)

dir="$(mktemp -d)"
chmod 755 "$dir"
[[ "$(id -u)" -eq 0 ]] && chown postgres: "$dir"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
stop() {
    "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT

"${as_owner[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
"${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null

export TOOL_ENVELOPE_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
# The store's contract, then approved calls run once by two replicas.
for suite in store tickets; do
    out="$(cargo test --all-features --test "$suite" -- --nocapture postgres 2>&1)" || { echo "$out"; exit 1; }
    echo "$out" | grep -E "^test |test result"
    if ! echo "$out" | grep -q "test result: ok. 1 passed"; then
        echo "the Postgres test of $suite did not run" >&2
        exit 1
    fi
    if echo "$out" | grep -q "is not set"; then
        echo "the Postgres test of $suite was skipped" >&2
        exit 1
    fi
done
