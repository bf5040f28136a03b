#!/usr/bin/env bash
# The inbox page in a real browser: Debian's Chromium, driven by Playwright
# (playwright-core from npm, which downloads no browser of its own).
#
# Serves examples/mcp_server with `--require-token` (its store a SQLite file
# here, its inbox at /inbox), then:
#   1. the agent (examples/agent, with `refunds-token` and `--approve`) asks
#      for a $620 refund: it cannot approve it, and gets a ticket; the
#      approval's notice, signed as Standard Webhooks says, reaches a
#      receiver that checks it with the `standardwebhooks` library from PyPI
#      (scripts/webhook_receiver.py) — signed mid-rotation, with a secret
#      the receiver no longer holds and the one it does;
#   2. in Chromium, a token without `refunds:approve` is refused at sign-in;
#      `approver-token` signs in, sees the $620 refund with its reason and
#      context, approves it with a note, and sees the result — the page
#      refreshes itself until the call has run, once;
#   3. a POST without the CSRF token, from the signed-in browser, is refused;
#      the approver signs out, and the session cookie copied before,
#      put back into the browser, is refused; signed in on two browsers,
#      "Sign out everywhere" on one ends the other's session too;
#   4. the agent, calling again, reads the refund's result;
#   5. the official Python SDK's `Client` (auto and legacy) and the
#      TypeScript SDK v2 client each get a $700 refund as a ticket, never
#      asked to approve it; it is approved on the inbox over HTTP, and
#      calling again reads the result (scripts/mcp_python_tickets.py,
#      scripts/ts_v2_tickets.mjs); and the Python SDK, given MCP's tasks
#      extension through its own `ClientExtension`, follows the refund as a
#      task that says whom it waits for, then completes with the result
#      (scripts/mcp_python_task_approval.py); the TypeScript SDK v2 does
#      the same over its own transport (its 2.4.0 `Client` refuses a task
#      result: "Unsupported result type 'task' for tools/call"), and another
#      token reads nothing of the task (scripts/ts_v2_task_approval.mjs).
# Screenshots land in $TOOL_ENVELOPE_SCREENSHOTS (a temporary directory by
# default).
#
#     scripts/test-inbox.sh target/debug/examples/mcp_server target/debug/examples/agent
#
# Installs what it needs: `chromium` with apt-get if missing, playwright-core
# under ${TOOL_ENVELOPE_CACHE:-target/ci-cache}/playwright, the Python SDK
# (scripts/python-env.sh) and the TypeScript SDK v2 client.
set -euo pipefail

PLAYWRIGHT_VERSION=1.65.1
STANDARD_WEBHOOKS_VERSION=1.3.0

server="${1:?usage: test-inbox.sh MCP_SERVER AGENT}"
agent="${2:?usage: test-inbox.sh MCP_SERVER AGENT}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${TOOL_ENVELOPE_CACHE:-$root/target/ci-cache}"
prefix="$cache/playwright"

sudo=""
[[ "$(id -u)" -ne 0 ]] && sudo="sudo"
if ! command -v chromium >/dev/null; then
    echo "==> installing chromium (Debian package)"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
chromium --version

if [[ ! -f "$prefix/node_modules/playwright-core/package.json" ]] ||
    [[ "$(node -p "require('$prefix/node_modules/playwright-core/package.json').version")" != "$PLAYWRIGHT_VERSION" ]]; then
    echo "==> installing playwright-core@$PLAYWRIGHT_VERSION into $prefix"
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --silent "playwright-core@$PLAYWRIGHT_VERSION"
fi

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n "${TOOL_ENVELOPE_SCREENSHOTS:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT

# The receiver of the approvals' notices, checking their signatures.
# shellcheck source=scripts/python-env.sh
source "$root/scripts/python-env.sh"
"$venv_python" -m pip install --quiet "standardwebhooks==$STANDARD_WEBHOOKS_VERSION"
webhook_secret="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
# Mid-rotation: the server signs with the old secret too, which the
# receiver no longer holds.
old_secret="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
"$venv_python" "$root/scripts/webhook_receiver.py" "$webhook_secret" "$work/webhook.port" "$work/notices" &
pids+=("$!")
for _ in $(seq 1 200); do
    [[ -s "$work/webhook.port" ]] && break
    sleep 0.05
done
[[ -s "$work/webhook.port" ]] || { echo "the webhook receiver did not start" >&2; exit 1; }
webhook="http://127.0.0.1:$(cat "$work/webhook.port")/hook"

# The browser also reaches the inbox as `inbox.test` (another host's name
# over plain HTTP): listed, as every name the inbox answers to must be.
TOOL_ENVELOPE_WEBHOOK_SECRET="$webhook_secret $old_secret" \
    "$server" --http 127.0.0.1:0 --allowed-host inbox.test --require-token --tasks --store "sqlite:$work/store.db" \
    --webhook "$webhook" 2>"$work/server.log" &
pids=("$!" "${pids[@]}")
address=""
for _ in $(seq 1 200); do
    address="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/server.log" | head -1 || true)"
    [[ -n "$address" ]] && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/server.log"; echo "the server exited" >&2; exit 1; }
    sleep 0.05
done
[[ -n "$address" ]] || { cat "$work/server.log"; echo "the server did not start" >&2; exit 1; }
grep -q "inbox on" "$work/server.log" || { echo "the server serves no inbox (build it with --features inbox)" >&2; exit 1; }
base="${address%/mcp}"
echo "==> server at $base"

fail() { echo "FAIL  $*" >&2; exit 1; }

# 1. The agent answers yes to any question; none is asked: it gets a ticket.
first="$("$agent" "$address" --bearer refunds-token --approve)"
line="$(grep -A1 'a \$620 refund' <<<"$first")"
grep -q "awaiting_approval" <<<"$line" || fail "the agent's refund did not wait for an approver: $line"
ticket="$(grep -o 'ticket [A-Za-z0-9_-]* waits' <<<"$line" | head -1 | cut -d' ' -f2)"
[[ -n "$ticket" ]] || fail "no ticket in: $line"
grep -q "the server asks" <<<"$first" && fail "the agent was asked to approve: $first"
echo "PASS  the agent's --approve cannot approve a refund over the cap: ticket $ticket"
# Sent in the background, once: read as soon as it is there.
for _ in $(seq 1 200); do
    grep -q "$ticket" "$work/notices" 2>/dev/null && break
    sleep 0.05
done
grep -q '^refused' "$work/notices" 2>/dev/null && fail "a notice's signature was refused: $(cat "$work/notices")"
grep "$ticket" "$work/notices" 2>/dev/null | grep -q '"ticket"' ||
    fail "no notice of ticket $ticket reached the receiver: $(cat "$work/notices" 2>/dev/null)"
echo "PASS  the approval's notice, signed mid-rotation, is accepted by the Standard Webhooks library"

# 2-3. The browser.
shots="${TOOL_ENVELOPE_SCREENSHOTS:-$work}"
mkdir -p "$shots"
NODE_PATH="$prefix/node_modules" node "$root/scripts/inbox_browser.mjs" "$base" "$ticket" "$shots"

# 4. The agent calls again, and reads the result.
again="$("$agent" "$address" --bearer refunds-token)"
grep 'a \$620 refund' <<<"$again" | grep -q "→ answered" ||
    fail "the agent did not read the refund's result: $(grep -A1 'a \$620 refund' <<<"$again")"
echo "PASS  the agent, calling again, reads the refund's result"

# 5. Clients nobody here wrote.
"$venv_python" -O "$root/scripts/mcp_python_tickets.py" "$base"
"$venv_python" -O "$root/scripts/mcp_python_task_approval.py" "$base"
# shellcheck source=scripts/ts-v2-env.sh
source "$root/scripts/ts-v2-env.sh"
ts_client="$(ts_v2_install client)"
cp "$root/scripts/ts_v2_inbox.mjs" "$root/scripts/ts_v2_tickets.mjs" "$root/scripts/ts_v2_task_approval.mjs" "$ts_client/"
node "$ts_client/ts_v2_tickets.mjs" "$base"
node "$ts_client/ts_v2_task_approval.mjs" "$base"
echo "inbox: every check passed"
