"""100 approvals through two replicas sharing Postgres, each refund made once.

Usage:
    python scripts/mcp_python_replicas.py BASE_URL N LOG_1 LOG_2 ACCESS_LOG REPLICA_1 REPLICA_2

Written against `mcp==2.3.0`; run by scripts/test-replicas.sh, which serves
two replicas of examples/mcp_server behind nginx (round-robin). With
`refunds-token`, the Python SDK's `Client` asks for N refunds over the cap:
each comes back `AWAITING_APPROVAL` with a ticket. An approver signs in to
the inbox through nginx and approves every ticket; the decisions land on
either replica, and both replicas' runners race to run every refund. The
SDK then calls each refund again until it reads the result. Finally the
replicas' own records (their logs: one line per refund made) must hold each
order exactly once, and both replicas must have served requests.

The exit status is 0 when every check holds, 1 otherwise, 2 on a usage
error.
"""

from __future__ import annotations

import collections
import re
import sys
import time

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_python_client import CheckFailed, check

RESULT_DEADLINE_SECONDS = 60.0


def csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    check(found is not None, f"no CSRF token in the page: {page[:300]}")
    return found.group(1)


async def run(base: str, count: int) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer refunds-token"}, timeout=30.0)
    orders = [f"R-{time.time_ns()}-{n}" for n in range(count)]
    async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="auto") as client:
        tickets = []
        for n, order in enumerate(orders):
            waiting = await client.call_tool("process_refund", {"order": order, "amount": 600 + n})
            envelope = waiting.structured_content or {}
            check(waiting.is_error and envelope.get("reason") == "AWAITING_APPROVAL", f"{order}: {envelope}")
            tickets.append(envelope["escalation"]["ticket"]["id"])
        check(len(set(tickets)) == count, "a ticket per refund")
        print(f"PASS  {count} refunds over the cap wait for an approver, each with its ticket")

        async with httpx2.AsyncClient(base_url=base, follow_redirects=False, timeout=30.0) as person:
            form = await person.get("/inbox")
            signed = await person.post("/inbox/sign-in", data={"token": "approver-token", "csrf": csrf(form.text)})
            check(signed.status_code == 303, f"sign-in: HTTP {signed.status_code}")
            token = csrf((await person.get("/inbox")).text)
            for ticket in tickets:
                decided = await person.post(
                    f"/inbox/approvals/{ticket}", data={"decision": "approve", "note": "batch", "csrf": token}
                )
                check(decided.status_code == 303, f"approving {ticket}: HTTP {decided.status_code} {decided.text[:200]}")
        print(f"PASS  the approver signed in once and approved all {count} through nginx, on both replicas")

        deadline = time.monotonic() + RESULT_DEADLINE_SECONDS
        for n, order in enumerate(orders):
            while True:
                result = await client.call_tool("process_refund", {"order": order, "amount": 600 + n})
                if not result.is_error:
                    break
                check(result.structured_content.get("reason") == "AWAITING_APPROVAL", f"{order}: {result!r}")
                check(time.monotonic() < deadline, f"{order}: the approved refund never ran")
                await anyio.sleep(0.1)
            check(result.structured_content == {"result": f"Refunded ${600 + n} on {order}"}, f"{result!r}")
        print(f"PASS  every approved refund's result is read back through either replica")
    return orders


def main() -> None:
    if len(sys.argv) != 8:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    base, count, log_1, log_2, access_log, first, second = sys.argv[1:]
    try:
        orders = anyio.run(run, base.rstrip("/"), int(count))
        made = collections.Counter()
        by_replica = collections.Counter()
        for replica, log in ((first, log_1), (second, log_2)):
            for line in open(log):
                found = re.match(r"refunded (\S+) \$", line)
                if found and found.group(1) in orders:
                    made[found.group(1)] += 1
                    by_replica[replica] += 1
        twice = [order for order, times in made.items() if times > 1]
        never = [order for order in orders if made[order] == 0]
        check(not twice, f"refunded more than once: {twice}")
        check(not never, f"never refunded: {never}")
        print(f"PASS  {len(orders)} approvals, {sum(made.values())} refunds, 0 duplicates; made per replica: {dict(by_replica)}")
        served = collections.Counter(line.split()[0] for line in open(access_log))
        check(served[first] > 0 and served[second] > 0, f"requests per replica: {dict(served)}")
        print(f"PASS  both replicas served requests: {dict(served)}")
    except CheckFailed as failure:
        print(f"FAIL  {failure}")
        sys.exit(1)


if __name__ == "__main__":
    main()
