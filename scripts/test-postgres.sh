#!/usr/bin/env bash
# The store against Debian's PostgreSQL, as replicas would share it: starts a
# throwaway cluster (installing the `postgresql` package if it is missing),
# points TOOL_ENVELOPE_TEST_POSTGRES at it, and runs tests/store.rs's
# Postgres contract (two stores on one database racing to decide, claim and
# redeem), tests/tickets.rs's (two replicas racing to run 100 approved
# calls: each runs once) and tests/mixed_approvals.rs's (what a client's
# user approved, kept for the approved run). The cluster is removed when the script ends.
set -euo pipefail
script_dir="$(cd "$(dirname "$0")" && pwd)"
cd "$script_dir/.."

# shellcheck source=scripts/postgres-env.sh
source "$script_dir/postgres-env.sh"
dir="$(mktemp -d)"
stop() {
    stop_postgres "$dir"
    rm -rf "$dir"
}
trap stop EXIT
start_postgres "$dir"

export TOOL_ENVELOPE_TEST_POSTGRES="$postgres_url"
# The store's contract, then approved calls run once by two replicas.
for suite in "store 3" "tickets 1" "mixed_approvals 1"; do
    read -r suite count <<<"$suite"
    out="$(cargo test --all-features --test "$suite" -- --nocapture postgres 2>&1)" || { echo "$out"; exit 1; }
    echo "$out" | grep -E "^test |test result"
    if ! echo "$out" | grep -q "test result: ok. $count passed"; then
        echo "the Postgres test of $suite did not run" >&2
        exit 1
    fi
    if echo "$out" | grep -q "is not set"; then
        echo "the Postgres test of $suite was skipped" >&2
        exit 1
    fi
done
