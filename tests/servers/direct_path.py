"""A server for comparing the two ways a 2026-07-28 request is answered over HTTP: the
direct path (HttpEndpoint.answer_at_once) and the general one (exchange). With
DIRECT_PATH=off the direct path declines every request, so the general one answers all.
modern.py's tools (a result, input_required, progress and log lines...) and a few
more give each kind of answer: structured content, a tool error, a crash, a call that
lasts."""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from modern import server  # noqa: E402  (it puts mcp_min on the path)

import mcp_min  # noqa: E402
from mcp_min import ToolError  # noqa: E402

if os.environ.get("DIRECT_PATH") == "off":
    mcp_min.HttpEndpoint.answer_at_once = lambda self, *args: None


@server.tool
def point(x: float, y: float) -> dict:
    """A point, as structured content."""
    return {"x": x, "y": y}


@server.tool
def refuse() -> str:
    """Fails as tools fail: a result with isError."""
    raise ToolError("no luck today")


@server.tool
def crash() -> str:
    """Fails as code fails."""
    raise ValueError("a bug")


@server.tool
def nap(ms: int) -> int:
    """Sleeps: longer than a quick call, if asked to."""
    time.sleep(ms / 1000)
    return ms


@server.tool
def path() -> str:
    """Which way its request came: the direct path or the general one."""
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "answer_at_once":
            return "direct"
        frame = frame.f_back
    return "general"
