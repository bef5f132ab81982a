"""A server for several worker processes (gunicorn, tests/test_gunicorn.py): no handshake-era
sessions, and tools that say which process answered. Every worker must get the same
MCP_MIN_STATE_KEY, or a retry that lands on another worker is refused.

    gunicorn -w 2 -k gthread --threads 4 --chdir tests/servers workers:server

(a Server is itself the WSGI application, so gunicorn is given its plain name)
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mcp_min import Context, Server  # noqa: E402

# Sessions live in one process; with several workers the next request may reach another.
server = Server("workers", "1.0.0", http_sessions=False)
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def pid() -> int:
    """The id of the worker process that answered."""
    return os.getpid()


@server.tool
def greet(ctx: Context) -> dict:
    """Ask for a name, then greet. Each run first logs its process id: the question must not
    carry it, since a retry is only answered when it asks the very same question."""
    ctx.info(f"pid {os.getpid()}")
    answer = ctx.elicit("Your name?", NAME_FORM, key="user_name")
    return {"greeting": f"Hello, {answer['content']['name']}!", "pid": os.getpid()}


@server.tool
def slow(ms: float, ctx: Context) -> int:
    """Log which process runs it, sleep (watching for cancellation), return that pid."""
    ctx.info(f"pid {os.getpid()}")
    deadline = time.monotonic() + ms / 1000
    while time.monotonic() < deadline:
        ctx.check_cancelled()
        time.sleep(0.005)
    return os.getpid()

