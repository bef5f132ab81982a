"""The benchmark's tools served by the official Python SDK (mcp 2.x, MCPServer)."""

import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-sdk", version="1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def sleep(ms: float) -> str:
    """Block the calling thread for `ms` milliseconds."""
    time.sleep(ms / 1000)
    return "slept"


if __name__ == "__main__":
    server.run("stdio")
