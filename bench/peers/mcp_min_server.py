"""The benchmark's tools served by mcp_min, imported from the repository root.

The drivers set MCP_MIN_BENCH_MODULE_DIR to serve another mcp_min.py with the same
script (--baseline: the file of an earlier commit, in the run's scratch directory).
"""

import os
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.environ.get("MCP_MIN_BENCH_MODULE_DIR") or REPO_ROOT)

from mcp_min import Server  # noqa: E402  (needs the path above)

server = Server("bench-mcp-min", version="1.0.0")


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
def sleep(ms: float) -> str:
    """Block the calling thread for `ms` milliseconds."""
    time.sleep(ms / 1000)
    return "slept"


if __name__ == "__main__":
    server.run()
