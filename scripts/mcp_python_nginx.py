"""Many calls through a load balancer, with the official MCP Python SDK.

Usage:
    python scripts/mcp_python_nginx.py URL CALLS

Written against `mcp==2.3.0`. scripts/test-nginx.sh starts two stateless
replicas of examples/mcp_server behind nginx and runs this file against
nginx's URL. One session makes CALLS calls, ten at a time, cycling through a
mix of successes and failures, and checks every answer: the value of a
success, the category, retry flag, reason and pillars of a failure. With
round-robin, consecutive requests of the session reach different replicas,
which works only because they are stateless.

The exit status is 0 when every answer is right, 1 otherwise, 2 on a usage
error.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from mcp_python_client import assert_text_mirrors_structured, check

CONCURRENCY = 10
OVERALL_TIMEOUT_SECONDS = 300.0


def structured(result: CallToolResult) -> dict[str, Any]:
    """The structured content, and its text copy checked against it."""
    content = result.structured_content
    check(isinstance(content, dict), f"no structured content: {result!r}")
    assert_text_mirrors_structured(result)
    return content


def orders(result: CallToolResult) -> None:
    check(not result.is_error, f"lookup_orders C-1001 failed: {result!r}")
    found = structured(result)
    check(found["matches"] == 2 and not found["empty"], f"lookup_orders C-1001 gave {found}")
    check([order["id"] for order in found["results"]] == ["O-77", "O-78"], f"orders {found['results']}")


def empty(result: CallToolResult) -> None:
    check(not result.is_error, f"an empty look-up is not an error: {result!r}")
    check(structured(result) == {"isError": False, "empty": True, "matches": 0}, f"empty gave {result!r}")


def payroll(result: CallToolResult) -> None:
    check(result.is_error, "read_payroll succeeded")
    envelope = structured(result)
    check(envelope["errorCategory"] == "permission", f"category {envelope['errorCategory']}")
    check(envelope["isRetryable"] is False, "a permission error is retryable")
    check(envelope["reason"] == "PAYROLL_DENIED", f"reason {envelope.get('reason')}")
    check(envelope["attempted_query"] == {"dept": "ENG"}, f"attempted_query {envelope.get('attempted_query')}")
    check(len(envelope["alternatives"]) == 2, f"alternatives {envelope.get('alternatives')}")


def refund(result: CallToolResult) -> None:
    check(result.is_error, "a refund over the cap ran")
    envelope = structured(result)
    check(envelope["errorCategory"] == "business", f"category {envelope['errorCategory']}")
    check(envelope["reason"] == "REFUND_OVER_CAP", f"reason {envelope.get('reason')}")
    check(envelope["escalation"]["attempts"] == 0, f"a blocked call ran: {envelope['escalation']}")


def research(result: CallToolResult) -> None:
    check(result.is_error, "research gathered everything")
    envelope = structured(result)
    check(envelope["errorCategory"] == "transient", f"category {envelope['errorCategory']}")
    titles = [source["title"] for source in envelope["partial_results"]]
    check(titles == [f"EU AI Act: source {i}" for i in range(1, 7)], f"partial results {titles}")
    check(envelope["escalation"]["attempts"] >= 1, f"escalation {envelope['escalation']}")


def undeclared(result: CallToolResult) -> None:
    check(result.is_error, "an undeclared argument was accepted")
    envelope = structured(result)
    check(envelope["errorCategory"] == "validation", f"category {envelope['errorCategory']}")
    fields = [violation["field"] for violation in envelope.get("violations", [])]
    check("password" in fields, f"the undeclared key is not named: {fields}")
    check("hunter2" not in result.content[0].text, "an undeclared value was echoed")


CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("lookup_orders", {"customer_id": "C-1001"}, orders),
    ("lookup_orders", {"customer_id": "C-0000"}, empty),
    ("read_payroll", {"dept": "ENG"}, payroll),
    ("process_refund", {"order": "O-77", "amount": 900}, refund),
    ("research", {"topic": "EU AI Act"}, research),
    ("lookup_orders", {"customer_id": "C-1001", "password": "hunter2"}, undeclared),
]


async def run(url: str, calls: int) -> int:
    answered: Counter[str] = Counter()
    wrong: list[str] = []
    started = time.monotonic()
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60.0) as session:
            await session.initialize()

            async def worker(first: int) -> None:
                for index in range(first, calls, CONCURRENCY):
                    name, arguments, expect = CASES[index % len(CASES)]
                    result = await session.call_tool(name, arguments)
                    try:
                        expect(result)
                        answered[name] += 1
                    except (AssertionError, KeyError, TypeError) as error:
                        wrong.append(f"call {index} ({name} {arguments}): {error!r}")

            async with anyio.create_task_group() as group:
                for first in range(CONCURRENCY):
                    group.start_soon(worker, first)
    elapsed = time.monotonic() - started
    total = sum(answered.values())
    print(f"{total} of {calls} calls answered correctly in {elapsed:.1f} s: {dict(answered)}")
    for line in wrong[:20]:
        print(f"FAIL  {line}")
    return 0 if total == calls and not wrong else 1


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(f"usage: {argv[0]} URL CALLS", file=sys.stderr)
        return 2

    async def bounded() -> int:
        with anyio.fail_after(OVERALL_TIMEOUT_SECONDS):
            return await run(argv[1], int(argv[2]))

    return anyio.run(bounded)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
