"""A person approves a refund through a load balancer: the question comes
from one replica and the answer lands on the other.

Usage:
    python scripts/mcp_python_nginx_rounds.py URL

Written against `mcp==2.3.0`. scripts/test-nginx.sh starts two stateless
replicas of examples/mcp_server behind nginx, both sealing `requestState`
with one key, nginx naming the replica of each response in `X-Replica`. The
official Python SDK's `Client`, in `auto` mode (2026-07-28), asks for
refunds over the $500 cap: the first round of each call answers with the
question, the second carries the answer and the sealed state. Round-robin
sends the two rounds to different replicas; every approved refund must
complete, every declined one must come back as `HUMAN_DECLINED`, and at
least one call must have had its rounds on two replicas. The replicas share
a SQLite store (`--store`): the approving round of an approved refund, sent
again 4 times, is refused by both replicas and refunds nothing.

The exit status is 0 when every check holds, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import httpx2
from mcp import Client, types
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from mcp_python_client import check

CALLS = 10


async def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} URL", file=sys.stderr)
        return 2
    url = argv[1]
    rounds: list[str] = []

    approving: list[httpx2.Request] = []

    async def record(response: httpx2.Response) -> None:
        if response.request.headers.get("mcp-method") == "tools/call":
            rounds.append(response.headers.get("x-replica", "?"))
            if b"requestState" in response.request.content and not decline:
                approving.append(response.request)

    decline = False

    async def on_elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        if decline:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"approver": "ops-on-call"})

    spanned = 0
    try:
        with anyio.fail_after(120):
            async with httpx2.AsyncClient(event_hooks={"response": [record]}, timeout=30) as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode="auto", elicitation_callback=on_elicitation) as client:
                    check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")
                    for call in range(CALLS):
                        decline = call % 2 == 1
                        rounds.clear()
                        result = await client.call_tool("process_refund", {"order": "O-77", "amount": 620})
                        check(len(rounds) == 2, f"call {call}: {len(rounds)} rounds: {rounds}")
                        spanned += len(set(rounds)) == 2
                        content: Any = result.structured_content
                        if decline:
                            check(result.is_error, f"a declined refund ran: {result!r}")
                            check(content["reason"] == "HUMAN_DECLINED", f"{content}")
                            check(content["escalation"]["reason"] == "human_declined", f"{content}")
                        else:
                            check(not result.is_error, f"an approved refund failed: {result!r}")
                            check(content == {"result": "Refunded $620 on O-77"}, f"{content}")
                            audit = (result.meta or {})["tool-envelope/approvals"][0]
                            check(audit["approver"] == "ops-on-call" and audit["action"] == "accept", f"{audit}")
                    # The approving round of the last approved refund, sent
                    # again as it was, 4 times: round-robin takes it to both
                    # replicas, and neither runs the refund again.
                    replayed = approving[-1]
                    replicas = set()
                    for _ in range(4):
                        again = await http.send(http.build_request(
                            "POST", replayed.url, headers=replayed.headers, content=replayed.content))
                        replicas.add(again.headers.get("x-replica", "?"))
                        body = again.text
                        check("requestState was refused" in body and "-32602" in body,
                              f"a replayed approval was not refused: {again.status_code} {body[:300]}")
                        check("Refunded" not in body, f"a replayed approval refunded again: {body[:300]}")
                    check(len(replicas) == 2, f"the replays reached {replicas}, not both replicas")
        check(spanned > 0, "no call had its two rounds on two replicas")
    except Exception as error:  # noqa: BLE001 - the check's failure is the report
        print(f"FAIL  refund approvals through nginx: {error!r}")
        return 1
    print(f"PASS  {CALLS} refund approvals through nginx, {spanned} with their rounds on two replicas")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv))
