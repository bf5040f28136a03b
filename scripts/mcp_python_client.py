"""Check the example MCP server with an independent client: the official MCP Python SDK.

Usage:
    python scripts/mcp_python_client.py SERVER_COMMAND [ARGS...]

Written against `mcp==2.3.0` (SDK v2: `MCPError`, snake_case model fields).
scripts/test-python-client.sh installs it into a virtual environment and runs
this file. The server is started over stdio and must behave as
examples/mcp_server.rs describes:

* tools/list lists the five example tools, each with an inputSchema (a 2020-12
  object schema) and an outputSchema (anyOf the success schema and the
  compact ErrorEnvelope schema, under 500 bytes);
* successful calls return is_error False with the expected structured_content;
* failing calls return is_error True, an error envelope in structured_content
  and the same JSON as the first text block;
* arguments that do not match the inputSchema give a validation envelope that
  names every offending field;
* an unknown tool is a JSON-RPC error -32602.

Every check prints one line; a summary follows. The exit status is 0 when all
checks pass, 1 when any fails and 2 on a usage error.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from jsonschema import Draft202012Validator
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent, Tool

# How long a single request may take before the SDK gives up with MCPError.
READ_TIMEOUT_SECONDS = 30.0
# A hard ceiling on the whole run, so a wedged server cannot hang CI.
OVERALL_TIMEOUT_SECONDS = 120.0

SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
EXPECTED_TOOLS = {"lookup_orders", "stock_level", "process_refund", "read_payroll", "research"}
# Keys every error envelope must carry (the ErrorEnvelope schema's `required`).
ENVELOPE_REQUIRED = ("isError", "errorCategory", "isRetryable", "message")
# JSON-RPC "Invalid params", which the server uses for an unknown tool.
INVALID_PARAMS = -32602


class CheckFailed(AssertionError):
    """A check that did not hold."""


def check(condition: object, message: str) -> None:
    """Fails the current check with `message` unless `condition` holds.

    A function, not `assert`: `python -O` removes assert statements, and the
    checks must run however the script is started.
    """
    if not condition:
        raise CheckFailed(message)


class Checks:
    """Runs named checks, prints one line each and keeps the tally."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    async def run(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        try:
            await body()
        except AssertionError as e:
            self._fail(name, str(e) or "assertion failed")
        except MCPError as e:
            self._fail(name, f"unexpected JSON-RPC error {e.code}: {e.message}")
        except RuntimeError as e:
            # The SDK raises RuntimeError when a successful result does not
            # match the tool's outputSchema.
            self._fail(name, f"RuntimeError: {e}")
        else:
            self.passed += 1
            print(f"PASS  {name}")

    def _fail(self, name: str, why: str) -> None:
        self.failed.append(name)
        print(f"FAIL  {name}\n      {why}")

    def summary(self) -> int:
        total = self.passed + len(self.failed)
        print(f"\n{self.passed}/{total} checks passed, {len(self.failed)} failed")
        for name in self.failed:
            print(f"  failed: {name}")
        return 0 if not self.failed else 1


# --- helpers ---------------------------------------------------------------


def first_text(result: CallToolResult) -> str:
    check(result.content, "result has no content blocks")
    block = result.content[0]
    check(isinstance(block, TextContent), f"content[0] is {block.type!r}, expected a text block")
    return block.text


def assert_text_mirrors_structured(result: CallToolResult) -> None:
    """content[0].text must be the JSON of structured_content (compared as parsed JSON)."""
    text = first_text(result)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as e:
        raise AssertionError(f"content[0].text is not JSON ({e}): {text!r}") from None
    check(parsed == result.structured_content, f"content[0].text differs from structured_content:\n"
        f"      text:       {text}\n"
        f"      structured: {json.dumps(result.structured_content, sort_keys=True)}")


def assert_matches_output_schema(tool: Tool, structured: Any) -> None:
    """Validate against the tool's outputSchema. The SDK does this only for
    successes, so error envelopes are checked here explicitly."""
    validator = Draft202012Validator(tool.output_schema or {})
    errors = sorted(validator.iter_errors(structured), key=lambda e: list(e.path))
    check(not errors, f"structured_content does not match the outputSchema of {tool.name}: " + "; ".join(
        f"{'/'.join(map(str, e.path)) or '<root>'}: {e.message}" for e in errors
    ))


def describe(result: CallToolResult) -> str:
    return json.dumps(result.model_dump(by_alias=True, exclude_none=True, mode="json"), sort_keys=True)


def assert_success(result: CallToolResult) -> dict[str, Any]:
    check(result.is_error is False, f"expected is_error False, got {result.is_error!r}: {describe(result)}")
    check(isinstance(result.structured_content, dict), f"no structured_content: {describe(result)}")
    assert_text_mirrors_structured(result)
    return result.structured_content


def assert_envelope(
    result: CallToolResult, tool: Tool, category: str, retryable: bool
) -> dict[str, Any]:
    """The common shape of every failing call; returns the envelope."""
    check(result.is_error is True, f"expected is_error True, got {result.is_error!r}: {describe(result)}")
    env = result.structured_content
    check(isinstance(env, dict), f"is_error result has no structured_content envelope: {describe(result)}")
    missing = [key for key in ENVELOPE_REQUIRED if key not in env]
    check(not missing, f"envelope lacks required keys {missing}: {json.dumps(env, sort_keys=True)}")
    check(env["isError"] is True, f"envelope isError is {env['isError']!r}, expected true")
    check(env["errorCategory"] == category, f"errorCategory is {env['errorCategory']!r}, expected {category!r}")
    check(env["isRetryable"] is retryable, f"isRetryable is {env['isRetryable']!r}, expected {retryable}")
    check(isinstance(env["message"], str) and env["message"], f"message is empty or not a string: {env['message']!r}")
    check(env.get("tool") == tool.name, f"envelope tool is {env.get('tool')!r}, expected {tool.name!r}")
    assert_text_mirrors_structured(result)
    assert_matches_output_schema(tool, env)
    return env


# --- the checks --------------------------------------------------------------


async def check_server(session: ClientSession, checks: Checks) -> None:
    init = await session.initialize()
    print(f"connected: {init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}")

    tools: dict[str, Tool] = {}

    async def tools_list() -> None:
        listed = await session.list_tools()
        tools.update((t.name, t) for t in listed.tools)
        names = set(tools)
        check(names == EXPECTED_TOOLS, f"tools/list returned {sorted(names)}; missing {sorted(EXPECTED_TOOLS - names)}, "
            f"unexpected {sorted(names - EXPECTED_TOOLS)}")

    await checks.run("tools/list lists the 5 example tools", tools_list)
    if not tools:
        return  # nothing else can be checked without the listing

    for name in sorted(EXPECTED_TOOLS & set(tools)):
        tool = tools[name]

        async def schemas(tool: Tool = tool) -> None:
            inp = tool.input_schema
            check(isinstance(inp, dict), f"inputSchema is {inp!r}")
            check(inp.get("type") == "object", f"inputSchema root type is {inp.get('type')!r}, expected 'object'")
            check(inp.get("$schema") == SCHEMA_2020_12, f"inputSchema $schema is {inp.get('$schema')!r}")
            out = tool.output_schema
            check(isinstance(out, dict), "no outputSchema")
            check(out.get("type") == "object", f"outputSchema root type is {out.get('type')!r}")
            branches = out.get("anyOf")
            check(isinstance(branches, list) and len(branches) == 2, f"outputSchema anyOf is {branches!r}")
            envelope = branches[1]
            check(envelope.get("title") == "ErrorEnvelope", f"outputSchema's second branch is {envelope!r}")
            check(
                envelope.get("required") == list(ENVELOPE_REQUIRED),
                f"the envelope branch requires {envelope.get('required')!r}",
            )
            size = len(json.dumps(envelope, separators=(",", ":")))
            check(size <= 500, f"the envelope branch is {size} bytes, over 500")
            Draft202012Validator.check_schema(inp)
            Draft202012Validator.check_schema(out)

        await checks.run(f"tools/list: {name} has inputSchema and outputSchema", schemas)

    async def call(name: str, args: dict[str, Any]) -> CallToolResult:
        return await session.call_tool(name, args)

    # Successes. The SDK itself validates each against the outputSchema.
    async def empty_lookup() -> None:
        sc = assert_success(await call("lookup_orders", {"customer_id": "C-0000"}))
        check(sc == {"isError": False, "empty": True, "matches": 0}, f"structured_content is {sc}")

    async def found_lookup() -> None:
        sc = assert_success(await call("lookup_orders", {"customer_id": "C-1001"}))
        check(sc.get("isError") is False and sc.get("empty") is False, f"structured_content is {sc}")
        results = sc.get("results")
        check(isinstance(results, list) and results, f"no results: {sc}")
        check(sc.get("matches") == len(results), f"matches {sc.get('matches')} but {len(results)} results")

    async def stock() -> None:
        sc = assert_success(await call("stock_level", {"sku": "SKU-1"}))
        check(sc == {"result": 35}, f"structured_content is {sc}, expected {{'result': 35}}")

    async def small_refund() -> None:
        sc = assert_success(await call("process_refund", {"order": "O-78", "amount": 300}))
        check(isinstance(sc.get("result"), str), f"structured_content is {sc}")

    await checks.run("lookup_orders C-0000: success, empty", empty_lookup)
    await checks.run("lookup_orders C-1001: success with results", found_lookup)
    await checks.run("stock_level SKU-1: success, result 35", stock)
    await checks.run("process_refund 300: success", small_refund)

    # Failures: is_error with an envelope.
    async def timeout_lookup() -> None:
        args = {"customer_id": "C-4821"}
        # Escalated after the server's own retries: not an invitation to retry again.
        env = assert_envelope(await call("lookup_orders", args), tools["lookup_orders"], "transient", False)
        check(env.get("attempted_query") == args, f"attempted_query is {env.get('attempted_query')!r}")
        escalation = env.get("escalation") or {}
        check(escalation.get("reason") == "retries_exhausted", f"escalation is {escalation!r}")

    async def big_refund() -> None:
        env = assert_envelope(
            await call("process_refund", {"order": "O-77", "amount": 620}),
            tools["process_refund"],
            "business",
            False,
        )
        alternatives = env.get("alternatives") or []
        check(alternatives[:1] == ["Escalate to a human for approval"], f"alternatives are {alternatives!r}")
        escalation = env.get("escalation") or {}
        check(escalation.get("reason") == "blocked_by_guard", f"escalation is {escalation!r}")

    async def payroll() -> None:
        assert_envelope(await call("read_payroll", {"dept": "ENG"}), tools["read_payroll"], "permission", False)

    async def research() -> None:
        env = assert_envelope(
            await call("research", {"topic": "EU AI Act timelines"}), tools["research"], "transient", False
        )
        partial = env.get("partial_results")
        check(isinstance(partial, list) and len(partial) == 6, f"partial_results is {partial!r}, expected 6 items")

    await checks.run("lookup_orders C-4821: transient envelope, retries exhausted", timeout_lookup)
    await checks.run("process_refund 620: business envelope, blocked by guard", big_refund)
    await checks.run("read_payroll ENG: permission envelope", payroll)
    await checks.run("research: transient envelope with 6 partial results", research)

    # Arguments that break the inputSchema: a wrong type and an unknown key.
    async def bad_arguments() -> None:
        args = {"customer_id": 4821, "colour": "red", "password": "hunter2"}
        env = assert_envelope(await call("lookup_orders", args), tools["lookup_orders"], "validation", False)
        # The arguments as sent, but keys the tool does not declare are named, never shown.
        shown = {"customer_id": 4821, "colour": "[redacted]", "password": "[redacted]"}
        check(env.get("attempted_query") == shown, f"attempted_query is {env.get('attempted_query')!r}, expected {shown!r}")
        check("hunter2" not in json.dumps(env), "an undeclared argument's value came back")
        violations = env.get("violations")
        check(isinstance(violations, list), f"violations is {violations!r}")
        fields = {v.get("field") for v in violations if isinstance(v, dict)}
        check({"customer_id", "colour", "password"} <= fields, f"violations name {sorted(map(str, fields))}, expected customer_id, colour and password")

    await checks.run("lookup_orders bad arguments: validation envelope naming every field, values of unknown keys hidden", bad_arguments)

    # An unknown tool is a protocol error, not a tool result.
    async def unknown_tool() -> None:
        try:
            result = await call("no_such_tool", {})
        except MCPError as e:
            check(e.code == INVALID_PARAMS, f"MCPError code is {e.code} ({e.message}), expected {INVALID_PARAMS}")
        else:
            raise AssertionError(f"expected MCPError {INVALID_PARAMS}, got a result: {describe(result)}")

    await checks.run("unknown tool: JSON-RPC error -32602", unknown_tool)


async def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(f"usage: {argv[0]} SERVER_COMMAND [ARGS...]", file=sys.stderr)
        return 2
    # env=None gives the server the SDK's default, reduced environment.
    params = StdioServerParameters(command=argv[1], args=argv[2:], env=None)
    checks = Checks()
    try:
        with anyio.fail_after(OVERALL_TIMEOUT_SECONDS):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT_SECONDS) as session:
                    await check_server(session, checks)
    except Exception:
        # Could not connect, the server died, or the run timed out: report it
        # as a failure of its own after whatever checks did run.
        print("FAIL  session with the server")
        traceback.print_exc()
        checks.failed.append("session with the server")
    return checks.summary()


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv))
