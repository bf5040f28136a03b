"""Check examples/full_server with the official MCP Python SDK: the paths a
tool set opens inside a server of rmcp's own.

Usage:
    python scripts/mcp_python_full_server.py SERVER_COMMAND [ARGS...]

Written against `mcp==2.3.0`; scripts/test-python-client.sh installs it and
runs this file (`scripts/test-python-client.sh FULL_SERVER
scripts/mcp_python_full_server.py`). Over stdio:

* the composed server lists this crate's tools next to rmcp's own
  `lookup_order`, whose outputSchema admits the error envelope it sends;
* progress notifications reach the caller's progress callback, increasing;
* log messages reach the logging callback, and follow `logging/setLevel`;
* a cancelled call stops on the server, and nothing of it arrives afterwards;
* rich results arrive as MCP content blocks (image, audio, embedded resource,
  mixed);
* a tool reaches the client for sampling and elicitation;
* prompts, resources and completion answer as MCP defines them.

Every check prints one line; the exit status is 0 when all pass, 1 otherwise.
"""

from __future__ import annotations

import base64
import json
import sys
import traceback
from typing import Any

import warnings

import anyio
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types
from mcp.client.session import ClientRequestContext

from mcp_python_client import Checks, check, describe

READ_TIMEOUT_SECONDS = 30.0

# Logging and sampling are deprecated in the 2026-07-28 revision, not in
# 2025-11-25, which this session negotiates.
warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")
OVERALL_TIMEOUT_SECONDS = 120.0


class Client:
    """The callbacks of the session: what the server sent, and the answers
    it gets to its own requests."""

    def __init__(self) -> None:
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.three_logs = anyio.Event()
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.elicited: list[types.ElicitRequestParams] = []

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        if len(self.logs) >= 3:
            self.three_logs.set()

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Paris"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicited.append(params)
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


def block_types(result: types.CallToolResult) -> list[str]:
    return [block.type for block in result.content]


async def check_server(session: ClientSession, client: Client, checks: Checks) -> None:
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}

    async def both_worlds() -> None:
        for name in ("lookup_order", "test_tool_with_progress", "test_image_content", "slow_count"):
            check(name in listed, f"{name} is not listed: {sorted(listed)}")
        schema = listed["lookup_order"].output_schema
        check(isinstance(schema, dict) and schema.get("type") == "object", f"lookup_order outputSchema {schema!r}")
        envelope_branch = [branch for branch in schema.get("anyOf", []) if branch.get("title") == "ErrorEnvelope"]
        check(envelope_branch, "lookup_order's outputSchema does not admit the envelope")
        size = len(json.dumps(envelope_branch[0], separators=(",", ":")))
        check(size <= 500, f"the envelope branch is {size} bytes")

    await checks.run("tools/list: this crate's tools and rmcp's own, in one server", both_worlds)

    async def rmcp_tool_envelope() -> None:
        found = await session.call_tool("lookup_order", {"order_id": "O-77"})
        check(found.is_error is False, describe(found))
        check(found.structured_content["id"] == "O-77", describe(found))
        failed = await session.call_tool("lookup_order", {"order_id": "O-99"})
        check(failed.is_error is True, describe(failed))
        envelope = failed.structured_content
        check(envelope["errorCategory"] == "business", describe(failed))
        check(envelope["reason"] == "UNKNOWN_ORDER", describe(failed))
        check(envelope["attempted_query"] == {"order_id": "O-99"}, describe(failed))
        check(envelope["tool"] == "lookup_order", describe(failed))
        check(json.loads(failed.content[0].text) == envelope, "the text block does not mirror the envelope")
        errors = list(Draft202012Validator(listed["lookup_order"].output_schema).iter_errors(envelope))
        check(not errors, f"the envelope does not match lookup_order's outputSchema: {errors[:1]}")

    await checks.run("rmcp's own tool: an envelope its outputSchema admits", rmcp_tool_envelope)

    async def progress() -> None:
        seen: list[tuple[float, float | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total))

        result = await session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        check(result.is_error is False, describe(result))
        check(seen == [(0.0, 100.0), (50.0, 100.0), (100.0, 100.0)], f"progress {seen}")

    await checks.run("progress: 0, 50, 100 of 100 before the result", progress)

    async def logging() -> None:
        await session.set_logging_level("debug")
        result = await session.call_tool("test_tool_with_logging", {})
        check(result.is_error is False, describe(result))
        with anyio.fail_after(10):
            await client.three_logs.wait()
        texts = [log.data for log in client.logs]
        check(texts == ["Tool execution started", "Tool processing data", "Tool execution completed"], f"{texts}")
        check(all(log.level == "info" and log.logger == "test_tool_with_logging" for log in client.logs), "levels")
        # Above the level now: nothing more is sent.
        await session.set_logging_level("error")
        await session.call_tool("test_tool_with_logging", {})
        await session.send_ping()
        check(len(client.logs) == 3, f"{len(client.logs)} log messages after setLevel error")

    await checks.run("logging: notifications/message under logging/setLevel", logging)

    async def cancellation() -> None:
        first_step = anyio.Event()
        steps: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(progress)
            first_step.set()

        before = (await session.call_tool("stopped_early", {})).structured_content["result"]
        async with anyio.create_task_group() as group:

            async def count() -> None:
                await session.call_tool("slow_count", {"to": 10_000}, progress_callback=on_progress)

            group.start_soon(count)
            with anyio.fail_after(10):
                await first_step.wait()
            # Abandoning the call sends notifications/cancelled.
            group.cancel_scope.cancel()
        stopped = before
        for _ in range(200):
            stopped = (await session.call_tool("stopped_early", {})).structured_content["result"]
            if stopped > before:
                break
        check(stopped == before + 1, f"the cancelled call was not stopped: {before} -> {stopped}")
        seen = len(steps)
        await session.call_tool("test_simple_text", {})
        check(len(steps) == seen, "progress arrived after the call was stopped")
        check(seen < 10_000, "the count finished")

    await checks.run("cancellation: the server stops the call, nothing follows", cancellation)

    async def rich() -> None:
        image = await session.call_tool("test_image_content", {})
        check(block_types(image) == ["image"], describe(image))
        check(image.content[0].mime_type == "image/png", describe(image))
        check(base64.b64decode(image.content[0].data).startswith(b"\x89PNG"), "the image is not a PNG")
        audio = await session.call_tool("test_audio_content", {})
        check(block_types(audio) == ["audio"] and audio.content[0].mime_type == "audio/wav", describe(audio))
        embedded = await session.call_tool("test_embedded_resource", {})
        check(block_types(embedded) == ["resource"], describe(embedded))
        check(str(embedded.content[0].resource.uri) == "test://embedded-resource", describe(embedded))
        mixed = await session.call_tool("test_multiple_content_types", {})
        check(block_types(mixed) == ["text", "image", "resource"], describe(mixed))
        failed = await session.call_tool("test_error_handling", {})
        check(failed.is_error is True and failed.structured_content["errorCategory"] == "business", describe(failed))

    await checks.run("rich results: image, audio, embedded resource, mixed; failures stay envelopes", rich)

    async def sampling_and_elicitation() -> None:
        sampled = await session.call_tool("test_sampling", {"prompt": "Capital of France?"})
        check(sampled.content[0].text == "LLM response: Paris", describe(sampled))
        check(len(client.sampled) == 1 and client.sampled[0].max_tokens == 100, f"{client.sampled}")
        elicited = await session.call_tool("test_elicitation", {"message": "Who are you?"})
        check("ada@example.com" in elicited.content[0].text, describe(elicited))
        check(client.elicited[0].message == "Who are you?", f"{client.elicited}")

    await checks.run("the client peer: sampling and elicitation", sampling_and_elicitation)

    async def prompts_resources_completion() -> None:
        prompts = {prompt.name for prompt in (await session.list_prompts()).prompts}
        check("test_prompt_with_arguments" in prompts, f"{prompts}")
        prompt = await session.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        check("'a'" in prompt.messages[0].content.text, f"{prompt}")
        text = await session.read_resource("test://static-text")
        check(text.contents[0].text.startswith("This is the content"), f"{text}")
        template = await session.read_resource("test://template/123/data")
        check("123" in template.contents[0].text, f"{template}")
        completion = await session.complete(
            types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "test"},
        )
        check(completion.completion.values, f"{completion}")

    await checks.run("prompts, resources and completion of the same server", prompts_resources_completion)


async def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(f"usage: {argv[0]} SERVER_COMMAND [ARGS...]", file=sys.stderr)
        return 2
    params = StdioServerParameters(command=argv[1], args=argv[2:], env=None)
    checks = Checks()
    client = Client()
    try:
        with anyio.fail_after(OVERALL_TIMEOUT_SECONDS):
            async with stdio_client(params) as (read, write):
                async with ClientSession(
                    read,
                    write,
                    read_timeout_seconds=READ_TIMEOUT_SECONDS,
                    sampling_callback=client.on_sampling,
                    elicitation_callback=client.on_elicitation,
                    logging_callback=client.on_log,
                ) as session:
                    await session.initialize()
                    await check_server(session, client, checks)
    except Exception:
        print("FAIL  session with the server")
        traceback.print_exc()
        checks.failed.append("session with the server")
    return checks.summary()


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv))
