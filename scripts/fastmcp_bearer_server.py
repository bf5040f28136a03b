"""A FastMCP server behind its bearer-token auth, for McpClient
(tests/mcp_client_servers.rs). Written against `fastmcp==4.2.3`.

Usage:
    python scripts/fastmcp_bearer_server.py PORT

Serves Streamable HTTP at http://127.0.0.1:PORT/mcp. The one token it
accepts is `fastmcp-token`.
"""

from __future__ import annotations

import sys

from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

auth = StaticTokenVerifier(
    tokens={"fastmcp-token": {"client_id": "tool-envelope-tests", "scopes": ["tools"]}},
)
mcp = FastMCP("fastmcp-bearer", auth=auth)


@mcp.tool(annotations={"readOnlyHint": True})
def greet(name: str) -> str:
    """Greets whoever holds the token."""
    return f"hello {name}"


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
