"""A refund over the cap run as a task, followed by the official MCP Python SDK.

Usage:
    python scripts/mcp_python_task_approval.py BASE_URL

Written against `mcp==2.3.0`. scripts/test-inbox.sh serves examples/mcp_server
with `--require-token --tasks` and runs this file against it. The SDK's
`Client` (auto: 2026-07-28) is given a client extension for MCP's tasks
extension (`io.modelcontextprotocol/tasks`, SEP-2663), built from the SDK's
own `ClientExtension` and `ResultClaim`: it declares the extension, claims
the `task` result a call answers with, and follows the task with `tasks/get`
until it ends. Then:

- a $730 refund, called with `refunds-token`, becomes a task that waits:
  `working`, its status message naming `refunds:approve` and the ticket;
- an approver approves the ticket on the inbox (over HTTP, as a browser
  would);
- the task completes with the refund's result, which the SDK's `call_tool`
  returns.

The exit status is 0 when every check holds, 1 otherwise, 2 on a usage
error.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any, Literal

import anyio
import httpx2
import mcp_types
from mcp import Client, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from pydantic import ConfigDict, Field

from mcp_python_client import CheckFailed, check

DEADLINE_SECONDS = 60.0


class TaskCreated(mcp_types.Result):
    """The `task` result a call answers with when it runs as a task: the
    task's fields inline (`taskId`, `status`, …)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str = Field(alias="taskId")


class AnyResult(mcp_types.Result):
    """A result read as it is."""

    model_config = ConfigDict(extra="allow")


class GetTask(types.GetTaskRequest):
    """`tasks/get`, naming its task in the `Mcp-Name` header as 2026-07-28 asks."""

    name_param = "taskId"


class Tasks(ClientExtension):
    """MCP's tasks extension: follows each task to its end with `tasks/get`."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self.follow)]

    async def follow(self, created: TaskCreated, context: ClaimContext) -> types.CallToolResult:
        task_id = created.task_id
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:
            request = GetTask(params=types.GetTaskRequestParams(task_id=task_id))
            state = (await context.session.send_request(request, AnyResult)).model_dump(by_alias=True)
            self.seen.append(state)
            if state.get("status") == "completed":
                return types.CallToolResult.model_validate(state["result"])
            check(state.get("status") in ("working", "input_required"), f"task {task_id}: {state}")
            check(time.monotonic() < deadline, f"task {task_id} never ended: {state}")
            await anyio.sleep(0.2)


def csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    check(found is not None, f"no CSRF token in the page: {page[:300]}")
    return found.group(1)


async def approve_when_waiting(base: str, tasks: Tasks) -> None:
    """Waits until the task says whom it waits for, then approves it."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        messages = [state.get("statusMessage") or "" for state in tasks.seen]
        waiting = [message for message in messages if "ticket" in message]
        if waiting:
            break
        check(time.monotonic() < deadline, f"the task never said whom it waits for: {tasks.seen}")
        await anyio.sleep(0.1)
    message = waiting[0]
    check("refunds:approve" in message, f"status message: {message}")
    check(all(state.get("status") == "working" for state in tasks.seen), f"{tasks.seen}")
    ticket = re.search(r"ticket ([A-Za-z0-9_-]+)", message).group(1)
    print(f"PASS  the task waits, and says for whom: {message!r}")
    async with httpx2.AsyncClient(base_url=base, follow_redirects=False) as person:
        form = await person.get("/inbox")
        signed = await person.post("/inbox/sign-in", data={"token": "approver-token", "csrf": csrf(form.text)})
        check(signed.status_code == 303, f"sign-in: HTTP {signed.status_code}")
        inbox = await person.get("/inbox")
        decided = await person.post(
            f"/inbox/approvals/{ticket}", data={"decision": "approve", "note": "task", "csrf": csrf(inbox.text)}
        )
        check(decided.status_code == 303, f"approve: HTTP {decided.status_code} {decided.text[:200]}")


async def run(base: str) -> None:
    tasks = Tasks()
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer refunds-token"}, timeout=60.0)
    async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="auto", extensions=[tasks]) as client:
        result: dict[str, Any] = {}

        async def call() -> None:
            result["value"] = await client.call_tool("process_refund", {"order": "O-PY-TASK", "amount": 730})

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await approve_when_waiting(base, tasks)
        refund = result["value"]
        check(not refund.is_error, f"{refund!r}")
        check(refund.structured_content == {"result": "Refunded $730 on O-PY-TASK"}, f"{refund!r}")
        print("PASS  approved on the inbox: the task completed with the refund's result, read by call_tool")


def main() -> None:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        anyio.run(run, sys.argv[1].rstrip("/"))
    except CheckFailed as failure:
        print(f"FAIL  {failure}")
        sys.exit(1)


if __name__ == "__main__":
    main()
