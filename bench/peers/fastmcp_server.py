"""The benchmark's tools served by FastMCP 4.x."""

import time

from fastmcp import FastMCP

server = FastMCP("bench-fastmcp", version="1.0.0")


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
    # No banner: it is decoration on stderr, and showing it may check for updates.
    server.run("stdio", show_banner=False)
