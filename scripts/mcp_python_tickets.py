"""A refund over the cap, seen by the official MCP Python SDK's `Client`.

Usage:
    python scripts/mcp_python_tickets.py BASE_URL

Written against `mcp==2.3.0`. scripts/test-inbox.sh serves
examples/mcp_server with `--require-token` (a store, an inbox) and runs this
file against it, in the client's `auto` (2026-07-28) and `legacy`
(2025-11-25) modes, with `refunds-token` and an elicitation handler that
would approve anything:

- a $700 refund is not asked of the client: it comes back `isError`, a
  `business` envelope, not retryable, reason `AWAITING_APPROVAL`, whose
  `escalation` (`awaiting_approval`) carries a ticket naming
  `refunds:approve`;
- calling again gives the same ticket;
- an approver signs in to the inbox (`approver-token`, over HTTP, as a
  browser would: its sign-in cookie and CSRF tokens) and approves it;
- calling again reads the refund's result.

The exit status is 0 when every answer is right, 1 otherwise, 2 on a usage
error.
"""

from __future__ import annotations

import re
import sys
import time

import anyio
import httpx2
from mcp import Client, types
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from mcp_python_client import CheckFailed, check

# How long the script waits for an approved refund to have run.
RESULT_DEADLINE_SECONDS = 30.0


def csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    check(found is not None, f"no CSRF token in the page: {page[:300]}")
    return found.group(1)


async def approve(base: str, ticket: str, note: str) -> None:
    """Approves `ticket` on the inbox page, as a person in a browser would."""
    async with httpx2.AsyncClient(base_url=base, follow_redirects=False) as http:
        form = await http.get("/inbox")
        signed = await http.post("/inbox/sign-in", data={"token": "approver-token", "csrf": csrf(form.text)})
        check(signed.status_code == 303, f"sign-in: HTTP {signed.status_code} {signed.text[:300]}")
        inbox = await http.get("/inbox")
        check(ticket in inbox.text, f"the ticket {ticket} is not in the inbox")
        decided = await http.post(
            f"/inbox/approvals/{ticket}",
            data={"decision": "approve", "note": note, "csrf": csrf(inbox.text)},
        )
        check(decided.status_code == 303, f"approve: HTTP {decided.status_code} {decided.text[:300]}")


async def run(base: str, mode: str) -> None:
    asked: list[str] = []

    async def on_elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approver": "agent", "note": "approve"})

    http = httpx2.AsyncClient(headers={"Authorization": "Bearer refunds-token"}, timeout=30.0)
    order = f"O-PY-{mode}"
    arguments = {"order": order, "amount": 700}
    async with Client(
        streamable_http_client(f"{base}/mcp", http_client=http), mode=mode, elicitation_callback=on_elicitation
    ) as client:
        waiting = await client.call_tool("process_refund", arguments)
        check(waiting.is_error, f"{mode}: the refund ran without approval: {waiting!r}")
        envelope = waiting.structured_content or {}
        check(envelope.get("errorCategory") == "business", f"{mode}: {envelope}")
        check(envelope.get("isRetryable") is False, f"{mode}: {envelope}")
        check(envelope.get("reason") == "AWAITING_APPROVAL", f"{mode}: {envelope}")
        escalation = envelope.get("escalation", {})
        check(escalation.get("reason") == "awaiting_approval", f"{mode}: {escalation}")
        ticket = escalation.get("ticket", {})
        check(ticket.get("approvers") == "refunds:approve", f"{mode}: {ticket}")
        check(not asked, f"{mode}: the client was asked to approve: {asked}")
        again = await client.call_tool("process_refund", arguments)
        check(again.structured_content["escalation"]["ticket"]["id"] == ticket["id"], f"{mode}: {again!r}")
        print(f"PASS  {mode}: a $700 refund waits for refunds:approve with ticket {ticket['id']}; the client is never asked")

        await approve(base, ticket["id"], f"checked ({mode})")
        deadline = time.monotonic() + RESULT_DEADLINE_SECONDS
        while True:
            result = await client.call_tool("process_refund", arguments)
            if not result.is_error:
                break
            check(
                result.structured_content.get("reason") == "AWAITING_APPROVAL",
                f"{mode}: after the approval: {result.structured_content}",
            )
            check(time.monotonic() < deadline, f"{mode}: the approved refund never ran")
            await anyio.sleep(0.1)
        check(result.structured_content == {"result": f"Refunded $700 on {order}"}, f"{mode}: {result!r}")
        print(f"PASS  {mode}: approved on the inbox, the refund ran, and calling again reads its result")


def main() -> None:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    base = sys.argv[1].rstrip("/")
    try:
        for mode in ("auto", "legacy"):
            anyio.run(run, base, mode)
    except CheckFailed as failure:
        print(f"FAIL  {failure}")
        sys.exit(1)


if __name__ == "__main__":
    main()
