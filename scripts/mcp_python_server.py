"""A server on the official Python SDK's `MCPServer` for the client tests
(tests/mcp_client_servers.rs): its argument errors are pydantic's text, which
quotes the rejected input, and one tool quotes its password in its own error,
as careless code does. Written against `mcp==2.3.0`.

Usage:
    python scripts/mcp_python_server.py                 # stdio
"""

from __future__ import annotations

from pydantic import SecretStr

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("python-sdk-test-server")


@mcp.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@mcp.tool()
def login(username: str, password: SecretStr) -> str:
    """Logs in; the directory rejects every password, and says which."""
    raise ToolError(
        f"the directory rejected {username} with password {password.get_secret_value()}"
    )


if __name__ == "__main__":
    mcp.run(transport="stdio")
