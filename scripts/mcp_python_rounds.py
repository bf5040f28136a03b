"""A tool asks its client, on both revisions: the official MCP Python SDK's
`Client` against examples/full_server, in `auto` mode (it negotiates
2026-07-28: the questions come back as `InputRequiredResult` rounds) and in
`legacy` mode (2025-11-25: the server sends requests); and FastMCP's client
(4.2.3), in both modes.

Usage:
    python scripts/mcp_python_rounds.py FULL_SERVER_BINARY MCP_SERVER_BINARY

Written against `mcp==2.3.0` and `fastmcp==4.2.3`; scripts/test-rounds.sh
installs both and runs this file. Over stdio and over Streamable HTTP, in each
mode:

* the negotiated revision is the one the mode asks for;
* elicitation: the user's answer reaches the tool, and a decline too;
* sampling and roots reach the tool;
* a tool that asks twice gets both answers (two rounds on 2026-07-28);
* on 2026-07-28 a tool's log messages arrive only under the client's
  `log_level`;
* examples/mcp_server's refunds over the $500 cap ask the user: approved,
  the refund runs; declined, a `HUMAN_DECLINED` envelope — with sessions in
  both modes, and stateless in `auto` mode; stateless on 2025-11-25, where
  nobody can be asked, the block comes back with its alternatives.

Every check prints one line; the exit status is 0 when all pass, 1 otherwise.
"""

from __future__ import annotations

import re
import subprocess
import sys
import traceback
import warnings
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, types
from mcp.client.session import ClientRequestContext

from mcp_python_client import Checks, check, describe

# Sampling, roots and logging are deprecated as of 2026-07-28 (SEP-2577) and
# still defined by it: the checks use them on purpose.
warnings.filterwarnings("ignore", message=".*deprecated.*")
OVERALL_TIMEOUT_SECONDS = 120.0


class Answers:
    """The client's side: what a person and a model would answer."""

    def __init__(self, decline: bool = False) -> None:
        self.decline = decline
        self.elicited: list[str] = []
        self.logs: list[Any] = []

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicited.append(params.message)
        if self.decline:
            return types.ElicitResult(action="decline")
        content: dict[str, Any] = {"username": "ada", "email": "ada@example.com"}
        if "name" in params.message.lower():
            content = {"name": "Ada"}
        if "color" in params.message.lower():
            content = {"color": "teal"}
        return types.ElicitResult(action="accept", content=content)

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Paris"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)


def text(result: types.CallToolResult) -> str:
    """The text a tool returned: its content block, or the `result` a
    string success is sent as in `structuredContent`."""
    check(result.is_error is not True, f"the call failed: {describe(result)}")
    structured = result.structured_content
    if isinstance(structured, dict) and isinstance(structured.get("result"), str):
        return structured["result"]
    check(result.content and result.content[0].type == "text", describe(result))
    return result.content[0].text


def client(server: Any, mode: str, answers: Answers, log_level: str | None = None) -> Client:
    return Client(
        server,
        mode=mode,
        elicitation_callback=answers.on_elicitation,
        sampling_callback=answers.on_sampling,
        list_roots_callback=answers.on_roots,
        logging_callback=answers.on_log,
        log_level=log_level,
        read_timeout_seconds=30.0,
    )


async def check_mode(server: Any, transport: str, mode: str, checks: Checks) -> None:
    expected = "2026-07-28" if mode == "auto" else "2025-11-25"
    label = f"{transport}, mode={mode}"

    async def asks() -> None:
        answers = Answers()
        async with client(server, mode, answers) as session:
            check(session.protocol_version == expected, f"negotiated {session.protocol_version}")
            elicited = text(await session.call_tool("test_elicitation", {"message": "Who are you?"}))
            check("ada@example.com" in elicited and "action=accept" in elicited, elicited)
            check(answers.elicited == ["Who are you?"], f"{answers.elicited}")
            sampled = text(await session.call_tool("test_sampling", {"prompt": "Capital of France?"}))
            check(sampled == "LLM response: Paris", sampled)
            roots = text(await session.call_tool("test_input_required_result_list_roots", {}))
            check("file:///work" in roots, roots)
            twice = text(await session.call_tool("test_input_required_result_multi_round", {}))
            check(twice == "Ada likes teal", twice)

    await checks.run(f"{label}: elicitation, sampling, roots and two questions answer ({expected})", asks)

    async def declines() -> None:
        async with client(server, mode, Answers(decline=True)) as session:
            declined = text(await session.call_tool("test_elicitation", {"message": "Who are you?"}))
            check("action=decline" in declined, declined)

    await checks.run(f"{label}: a declined form reaches the tool as a decline", declines)

    if mode == "auto":

        async def logs() -> None:
            quiet = Answers()
            async with client(server, mode, quiet) as session:
                text(await session.call_tool("test_logging_tool", {}))
            check(quiet.logs == [], f"logged without a log level: {quiet.logs}")
            told = Answers()
            async with client(server, mode, told, log_level="info") as session:
                text(await session.call_tool("test_logging_tool", {}))
            check(told.logs == ["test_logging_tool ran"], f"{told.logs}")

        await checks.run(f"{label}: log messages only under the request's log level", logs)


async def check_fastmcp_refunds(url: str, mode: str, checks: Checks) -> None:
    """FastMCP's client approves and declines a refund over the cap."""
    import fastmcp

    async def refunds() -> None:
        for decline in (False, True):

            async def on_elicitation(message: str, response_type: Any, params: Any, context: Any) -> Any:
                check("Approve `process_refund`" in message, message)
                if decline:
                    return fastmcp.client.elicitation.ElicitResult(action="decline")
                return {"approver": "fastmcp"}

            client = fastmcp.Client(url, mode=mode, elicitation_handler=on_elicitation, timeout=30)
            async with client:
                result = await client.call_tool_mcp("process_refund", {"order": "O-77", "amount": 620})
            content: Any = result.structured_content
            if decline:
                check(result.is_error and content["reason"] == "HUMAN_DECLINED", describe(result))
            else:
                check(content == {"result": "Refunded $620 on O-77"}, describe(result))

    await checks.run(f"FastMCP, mode={mode}: a refund over the cap, approve and decline", refunds)


async def check_fastmcp(url: str, mode: str, checks: Checks) -> None:
    """FastMCP's client, with its own handler shapes."""
    import fastmcp

    expected = "2026-07-28" if mode == "auto" else "2025-11-25"
    asked: list[str] = []

    async def on_elicitation(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        if "color" in message.lower():
            return {"color": "teal"}
        if "name" in message.lower():
            return {"name": "Ada"}
        return {"username": "ada", "email": "ada@example.com"}

    async def on_sampling(messages: Any, params: Any, context: Any) -> str:
        return "Paris"

    async def asks() -> None:
        client = fastmcp.Client(
            url, mode=mode, elicitation_handler=on_elicitation, sampling_handler=on_sampling, timeout=30
        )
        async with client:
            check(client.protocol_version == expected, f"negotiated {client.protocol_version}")
            elicited = text(await client.call_tool_mcp("test_elicitation", {"message": "Who are you?"}))
            check("ada@example.com" in elicited, elicited)
            sampled = text(await client.call_tool_mcp("test_sampling", {"prompt": "Capital of France?"}))
            check(sampled == "LLM response: Paris", sampled)
            twice = text(await client.call_tool_mcp("test_input_required_result_multi_round", {}))
            check(twice == "Ada likes teal", twice)
        check(asked[0] == "Who are you?", f"{asked}")

    await checks.run(f"FastMCP {fastmcp.__version__}, mode={mode}: elicitation, sampling, two questions ({expected})", asks)


async def check_refunds(url: str, server: str, mode: str, checks: Checks) -> None:
    """A refund over the cap, approved and declined."""
    can_ask = not (server == "stateless" and mode == "legacy")

    async def refunds() -> None:
        for decline in (False, True):
            answers = Answers(decline=decline)
            async with client(url, mode, answers) as session:
                result = await session.call_tool("process_refund", {"order": "O-77", "amount": 620})
            content: Any = result.structured_content
            if not can_ask:
                check(result.is_error and content["reason"] == "REFUND_OVER_CAP", describe(result))
                check("Escalate to a human for approval" in content["alternatives"], describe(result))
                check(answers.elicited == [], f"asked {answers.elicited}")
                continue
            check(len(answers.elicited) == 1, f"asked {answers.elicited}")
            check("Approve `process_refund`" in answers.elicited[0], answers.elicited[0])
            if decline:
                check(result.is_error and content["reason"] == "HUMAN_DECLINED", describe(result))
            else:
                check(content == {"result": "Refunded $620 on O-77"}, describe(result))
                audit = (result.meta or {}).get("tool-envelope/approvals", [])
                check(audit and audit[0]["action"] == "accept", f"audit {audit}")

    outcome = "approve and decline" if can_ask else "the block: nobody can be asked"
    await checks.run(f"mcp_server {server}, mode={mode}: a refund over the cap, {outcome}", refunds)


def serve(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """Starts an HTTP server and returns it with its URL."""
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    line = process.stderr.readline() if process.stderr else ""
    found = re.search(r"http://\S+/mcp", line)
    if not found:
        process.terminate()
        raise RuntimeError(f"{command[0]} did not start: {line!r}")
    return process, found.group(0)


async def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(f"usage: {argv[0]} FULL_SERVER_BINARY MCP_SERVER_BINARY", file=sys.stderr)
        return 2
    binary = argv[1]
    checks = Checks()
    refunds = [
        ("sessions", serve([argv[2], "--http", "127.0.0.1:0"])),
        ("stateless", serve([argv[2], "--http", "127.0.0.1:0", "--stateless"])),
    ]
    http = subprocess.Popen([binary, "--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    try:
        line = http.stderr.readline() if http.stderr else ""
        found = re.search(r"http://\S+/mcp", line)
        if not found:
            print(f"FAIL  the HTTP server did not start: {line!r}")
            return 1
        servers = [("stdio", StdioServerParameters(command=binary, args=[])), ("HTTP", found.group(0))]
        with anyio.fail_after(OVERALL_TIMEOUT_SECONDS):
            for transport, server in servers:
                for mode in ("auto", "legacy"):
                    try:
                        await check_mode(server, transport, mode, checks)
                    except Exception:
                        print(f"FAIL  {transport}, mode={mode}")
                        traceback.print_exc()
                        checks.failed.append(f"{transport}, mode={mode}")
            for mode in ("auto", "legacy"):
                await check_fastmcp(found.group(0), mode, checks)
            for server, (_, url) in refunds:
                for mode in ("auto", "legacy"):
                    await check_refunds(url, server, mode, checks)
            for mode in ("auto", "legacy"):
                await check_fastmcp_refunds(refunds[0][1][1], mode, checks)
    finally:
        for process in [http] + [process for _, (process, _) in refunds]:
            process.terminate()
            process.wait()
    return checks.summary()


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv))
