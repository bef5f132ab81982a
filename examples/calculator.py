"""The smallest useful MCP server: one tool.

    python3 examples/calculator.py
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mcp_min import Server  # noqa: E402

server = Server("calculator")


@server.tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    server.run()
