"""The official MCP Python SDK's client with a bearer token, over TLS.

Usage:
    python scripts/mcp_python_bearer.py URL CA_PEM

Written against `mcp==2.3.0`. scripts/test-tls.sh serves examples/mcp_server
with `--require-token` behind nginx, which terminates TLS with a certificate
its CA_PEM issued, and runs this file against nginx's URL, in the client's
`auto` (2026-07-28) and `legacy` (2025-11-25) modes:

- without a token, HTTP 401 with a challenge that names the resource
  metadata (served), and the SDK's client fails to connect;
- with `reader-token`, orders are served, and a refund is refused by the
  tool's guard: a `permission` envelope, reason `INSUFFICIENT_SCOPE`;
- with `refunds-token`, the refund is made;
- a refund over the cap asks for a person's approval (2026-07-28): its
  approving round, sent first with another desk's token
  (`second-desk-token`, the same scopes), is refused (the state is bound to
  the caller that started it), then sent with its own token, refunds.

The exit status is 0 when every answer is right, 1 otherwise, 2 on a usage
error.
"""

from __future__ import annotations

import ssl
import sys

import anyio
import httpx2
from mcp import Client, types
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from mcp_python_client import CheckFailed, check


def client(url: str, tls: ssl.SSLContext, mode: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(verify=tls, headers=headers, timeout=30.0)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


async def run(url: str, tls: ssl.SSLContext) -> None:
    # The server's refusal, as HTTP says it: 401, and where to log in.
    async with httpx2.AsyncClient(verify=tls) as http:
        answer = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"},
        )
        check(answer.status_code == 401, f"no token: HTTP {answer.status_code}")
        challenge = answer.headers.get("www-authenticate", "")
        metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        check(challenge == f'Bearer resource_metadata="{metadata_url}"', f"challenge {challenge!r}")
        metadata = (await http.get(metadata_url)).json()
        check(metadata.get("resource") == url, f"metadata {metadata}")
    print("PASS  no token: HTTP 401, its challenge names the resource metadata, served")

    for mode in ("auto", "legacy"):
        try:
            async with client(url, tls, mode, None) as anonymous:
                await anonymous.list_tools()
        except BaseException as refused:  # noqa: BLE001 - what the SDK raises for a 401
            print(f"PASS  {mode}: no token, the SDK refuses: {type(refused).__name__}")
        else:
            check(False, f"{mode}: served without a token")

        async with client(url, tls, mode, "reader-token") as reader:
            orders = await reader.call_tool("lookup_orders", {"customer_id": "C-1001"})
            check(not orders.is_error, f"{mode}: lookup_orders failed: {orders!r}")
            refused = await reader.call_tool("process_refund", {"order": "O-77", "amount": 300})
            check(refused.is_error, f"{mode}: a reader refunded: {refused!r}")
            envelope = refused.structured_content or {}
            check(envelope.get("errorCategory") == "permission", f"{mode}: {envelope}")
            check(envelope.get("reason") == "INSUFFICIENT_SCOPE", f"{mode}: {envelope}")
            check(envelope.get("isRetryable") is False, f"{mode}: {envelope}")
            check("refunds:write" in envelope.get("message", ""), f"{mode}: {envelope}")
            check("reader-token" not in str(envelope), f"{mode}: the token came back: {envelope}")
        print(f"PASS  {mode}: reader-token reads orders; its refund is a permission envelope")

        async with client(url, tls, mode, "refunds-token") as writer:
            refund = await writer.call_tool("process_refund", {"order": "O-77", "amount": 300})
            check(not refund.is_error, f"{mode}: the refund desk could not refund: {refund!r}")
        print(f"PASS  {mode}: refunds-token refunds")


async def another_callers_replay(url: str, tls: ssl.SSLContext) -> None:
    stolen: list[str] = []
    async with httpx2.AsyncClient(verify=tls, timeout=30.0) as thief:

        async def steal(request: httpx2.Request) -> None:
            if request.headers.get("mcp-method") == "tools/call" and b"requestState" in request.content:
                headers = request.headers.copy()
                headers["Authorization"] = "Bearer second-desk-token"
                answer = await thief.post(request.url, headers=headers, content=request.content)
                stolen.append(answer.text)

        async def on_elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action="accept", content={"approver": "ops-on-call"})

        http = httpx2.AsyncClient(
            verify=tls,
            headers={"Authorization": "Bearer refunds-token"},
            timeout=30.0,
            event_hooks={"request": [steal]},
        )
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode="auto", elicitation_callback=on_elicitation) as writer:
            refund = await writer.call_tool("process_refund", {"order": "O-77", "amount": 620})
    check(len(stolen) == 1, f"{len(stolen)} approving rounds seen")
    check(
        "requestState was refused" in stolen[0] and "-32602" in stolen[0],
        f"another desk's token opened the state: {stolen[0][:300]}",
    )
    check("Refunded" not in stolen[0], f"another desk's token refunded: {stolen[0][:300]}")
    check(not refund.is_error, f"the approved refund failed: {refund!r}")
    check(refund.structured_content == {"result": "Refunded $620 on O-77"}, f"{refund.structured_content}")
    print("PASS  auto: another token's replay of an approving state is refused; its own caller's refunds")


def main() -> None:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    url, ca = sys.argv[1:]
    tls = ssl.create_default_context(cafile=ca)
    try:
        anyio.run(run, url, tls)
        anyio.run(another_callers_replay, url, tls)
    except CheckFailed as failed:
        print(f"FAIL  {failed}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
