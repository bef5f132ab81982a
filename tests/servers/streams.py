"""A server for the tests of streams on an engine (tests/test_granian.py): keep-alive
lines every STREAMS_HEARTBEAT seconds (default 0.2), a slow tool that records whether it
finished or was cancelled, progress, tools that change the tool list and say that a
resource changed, and how many streams are open. One worker: the calls that change
something and the streams that hear of it must meet in one process.

    granian --interface wsgi --workers 1 --working-dir tests/servers streams:server
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import mcp_min  # noqa: E402
from mcp_min import Context, Server  # noqa: E402

server = Server("streams", "1.0.0",
                heartbeat=float(os.environ.get("STREAMS_HEARTBEAT", "0.2")))
COUNTER = "test://streams/counter"
OUTCOMES = {"finished": [], "cancelled": []}          # request ids of slow() calls
LOCK = threading.Lock()


@server.tool
def slow(ms: float, ctx: Context) -> str:
    """Work for `ms` ms, stopping as soon as the call is cancelled (outcomes() tells
    which)."""
    deadline = time.monotonic() + ms / 1000
    while time.monotonic() < deadline and not ctx.cancelled:
        time.sleep(0.005)
    with LOCK:
        OUTCOMES["cancelled" if ctx.cancelled else "finished"].append(ctx.request_id)
    ctx.check_cancelled()                     # cancelled: it answers nothing
    return f"worked {ms:g} ms"


@server.tool
def outcomes() -> dict:
    """The request ids of the slow() calls that finished, and of those cancelled."""
    with LOCK:
        return {kind: list(ids) for kind, ids in OUTCOMES.items()}


@server.tool
def report(steps: int, ctx: Context) -> str:
    """Report progress `steps` times, then answer."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, total=steps, message=f"step {step}")
    return f"{steps} steps"


def extra() -> str:
    """A tool that comes and goes."""
    return "extra!"


@server.tool
def toggle(present: bool) -> str:
    """Add or remove the tool `extra` (a list change)."""
    if present:
        server.tool(extra, replace=True)
    else:
        server.remove_tool("extra")
    return "added" if present else "removed"


@server.tool
def touch() -> str:
    """Say that the counter resource changed (a resource update)."""
    server.notify_resource_updated(COUNTER)
    return "touched"


@server.resource(COUNTER)
def counter() -> str:
    return "a resource whose changes are announced"


@server.tool
def listeners() -> int:
    """How many streams that hear of changes (listen, GET) are open in this process."""
    return len(server.sessions)


@server.tool
def allocator_tuned() -> bool:
    """Whether mcp_min will pin glibc's mmap threshold in this process at its first
    large message, as it does in an engine's worker (not in a user's application)."""
    return mcp_min._tune_allocator
