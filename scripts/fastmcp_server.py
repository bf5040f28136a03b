"""A FastMCP server for the client tests (tests/mcp_client_servers.rs): tools
that raise errors, time out, report progress, return empty results and ask
the user, as Python servers do. Written against `fastmcp==4.2.3`.

Usage:
    python scripts/fastmcp_server.py                    # stdio
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from mcp import types as mcp_types

mcp = FastMCP("fastmcp-test-server")


@mcp.tool(annotations={"readOnlyHint": True})
def tool_error(reason: str = "bad input") -> str:
    """Refuses with a ToolError."""
    raise ToolError(f"tool refused: {reason}")


@mcp.tool
def value_error(x: int = 1) -> str:
    """Fails with an unexpected exception."""
    raise ValueError(f"internal detail x={x}")


@mcp.tool(timeout=1.0, annotations={"readOnlyHint": True})
async def slow_timeout(seconds: float = 3.0) -> str:
    """Runs past the server's own 1-second timeout."""
    await asyncio.sleep(seconds)
    return "done"


@mcp.tool(annotations={"readOnlyHint": True})
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps, reporting progress every 0.1 s."""
    steps = max(1, int(seconds * 10))
    for step in range(steps):
        await ctx.report_progress(progress=step + 1, total=steps, message=f"step {step + 1}")
        await asyncio.sleep(0.1)
    return "done"


@mcp.tool
async def slow_write(seconds: float, ctx: Context) -> str:
    """Like `slow`, but writes: not safe to repeat."""
    steps = max(1, int(seconds * 10))
    for step in range(steps):
        await ctx.report_progress(progress=step + 1, total=steps)
        await asyncio.sleep(0.1)
    return "written"


@mcp.tool(annotations={"readOnlyHint": True})
def empty_list() -> list[str]:
    """Finds nothing."""
    return []


@mcp.tool(annotations={"readOnlyHint": True})
async def ask_name(ctx: Context) -> Any:
    """Asks the user for their name, the way FastMCP does on each revision:
    on 2026-07-28 the guard pattern (the tool returns an
    InputRequiredResult, and reads the answer in `ctx.input_responses` when
    it runs again); on 2025-11-25 `ctx.elicit`, a request to the client."""
    answer = (ctx.input_responses or {}).get("user_name")
    if answer is not None:
        content = getattr(answer, "content", None) or {}
        return f"Hello, {content.get('name')}!"
    try:
        elicited = await ctx.elicit("What is your name?", response_type=str)
    except Exception as error:  # noqa: BLE001 - FastMCP's way of saying "2026-07-28"
        if "2026-07-28" not in str(error):
            raise
        form = mcp_types.ElicitRequestFormParams(
            message="What is your name?",
            requested_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        )
        request = mcp_types.ElicitRequest(method="elicitation/create", params=form)
        return mcp_types.InputRequiredResult(input_requests={"user_name": request})
    if elicited.action == "accept":
        return f"Hello, {elicited.data}!"
    return f"no name: {elicited.action}"


@mcp.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
