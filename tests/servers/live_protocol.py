"""A server for the "live protocol" wire tests (tests/test_context.py): Context fields, async
tools, late progress, URL elicitation, tools/resources/prompts changing while serving,
resource-updated notifications, Python logging forwarded to the client, and a lifespan whose
shutdown half leaves a mark on the wire (so a test can check it ran after in-flight replies).

Settings from the environment:
  LIVE_FORWARD=1         Server(forward_logging=True)
  LIVE_ADD_AT_START=1    a background thread registers tool "early" 0.1 s after start
  LIVE_ADD_IN_INIT=1     while initialize is answered (before its response is written),
                         another thread registers tool "gap" and logs to the session
  LIVE_GRACE=<seconds>   grace_period (default 5)
"""

import asyncio
import json
import logging
import os
import sys
import threading
import time
from contextlib import contextmanager

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mcp_min import Context, Server  # noqa: E402

SESSIONS = []          # sessions seen by tools: the lifespan's shutdown half writes on them


@contextmanager
def lifespan(server):
    print("live lifespan: start", file=sys.stderr, flush=True)
    yield {"name": "live", "pid": os.getpid()}
    # The shutdown half: a mark on the wire itself (ordering is exact there) and on stderr.
    for session in SESSIONS[-1:]:
        session.notify("notifications/message",
                       {"level": "emergency", "logger": "lifespan", "data": "lifespan: stop"})
    print("live lifespan: stop", file=sys.stderr, flush=True)


server = Server("live", "0.0.1", lifespan=lifespan,
                forward_logging=os.environ.get("LIVE_FORWARD") == "1",
                grace_period=float(os.environ.get("LIVE_GRACE", "5")))


@server.tool
def whoami(c: Context) -> str:
    """Everything the Context knows, as JSON text."""
    return json.dumps({
        "request_id": c.request_id, "meta": c.meta, "protocol_version": c.protocol_version,
        "client_info": c.client_info, "client_capabilities": c.client_capabilities,
        "lifespan": c.lifespan, "thread": threading.current_thread().name,
        "is_main": threading.current_thread() is threading.main_thread()})


@server.tool
async def async_nap(ms: float, ctx: Context) -> str:
    """An async tool: awaits, then reports its thread and request id."""
    await asyncio.sleep(ms / 1000)
    ctx.check_cancelled()
    return json.dumps({"thread": threading.current_thread().name, "request_id": ctx.request_id,
                       "is_main": threading.current_thread() is threading.main_thread()})


@server.tool
def report(values: str, ctx: Context) -> str:
    """Report progress for each value in the JSON list `values`; returns what report_progress
    returned for each (a raised error ends the call as an isError result)."""
    return json.dumps([ctx.report_progress(v, total=10, message=f"at {v}")
                       for v in json.loads(values)])


@server.tool
def progress_then_return(ctx: Context) -> str:
    """Report progress 1, then return; a thread tries progress 2 after the response."""
    ctx.report_progress(1, total=2)

    def later():
        time.sleep(0.15)
        sent = ctx.report_progress(2, total=2)
        print(f"late progress sent: {sent}", file=sys.stderr, flush=True)
    threading.Thread(target=later, daemon=True).start()
    return "returned"


@server.tool
def elicit_url(url: str, ctx: Context) -> str:
    """URL-mode elicitation."""
    return json.dumps(ctx.elicit("Please sign in", url=url))


@server.tool
def elicit_form(ctx: Context) -> str:
    """Form-mode elicitation."""
    return json.dumps(ctx.elicit("Your name?", {"type": "object",
                                                "properties": {"name": {"type": "string"}}}))


def _extra_tool() -> str:
    """A tool added while serving."""
    return "extra!"


def _extra_prompt() -> str:
    """A prompt added while serving."""
    return "extra prompt"


@server.tool
def mutate(action: str, name: str) -> str:
    """Add or remove a tool, resource or prompt: action is add_tool, remove_tool,
    add_resource, remove_resource, add_prompt or remove_prompt."""
    if action == "add_tool":
        server.tool(_extra_tool, name=name)
    elif action == "remove_tool":
        server.remove_tool(name)
    elif action == "add_resource":
        server.resource(name)(lambda: f"content of {name}")
    elif action == "remove_resource":
        server.remove_resource(name)
    elif action == "add_prompt":
        server.prompt(_extra_prompt, name=name)
    elif action == "remove_prompt":
        server.remove_prompt(name)
    else:
        raise ValueError(action)
    return "ok"


@server.tool
def touch(uri: str) -> str:
    """server.notify_resource_updated(uri)."""
    server.notify_resource_updated(uri)
    return "touched"


@server.tool
def slow(ms: float, ctx: Context) -> str:
    """Log 'started' to the client, then sleep (ignoring cancellation)."""
    SESSIONS.append(ctx.session)
    ctx.log("emergency", "started", logger="slow")
    time.sleep(ms / 1000)
    return "slow done"


@server.tool
def log_python(level: str, message: str) -> str:
    """Emit a Python logging record on logger 'live.tool' (set to DEBUG)."""
    logger = logging.getLogger("live.tool")
    logger.setLevel(logging.DEBUG)
    logger.log(getattr(logging, level.upper()), message)
    return "logged"


@server.resource("test://live/a")
def res_a() -> str:
    return "a"


@server.resource("test://live/b")
def res_b() -> str:
    return "b"


@server.resource("test://live/items/{item_id}")
def item(item_id: str) -> str:
    return f"item {item_id}"


@server.prompt
def hello(name: str, ctx: Context) -> str:
    """A prompt that also sees the Context."""
    return f"Hello {name} from request {ctx.request_id!r}"


@server.completion("item_id", template="test://live/items/{item_id}")
def complete_item(value, arguments):
    return [i for i in ("apple", "apricot", "banana") if i.startswith(value)]


if os.environ.get("LIVE_ADD_AT_START") == "1":
    def _early() -> str:
        return "early"
    def _add_early():
        server.tool(_early, name="early")
        print("live: early tool added", file=sys.stderr, flush=True)
    threading.Timer(0.1, _add_early).start()

if os.environ.get("LIVE_ADD_IN_INIT") == "1":
    _initialize = server.handlers["initialize"]

    def _initialize_with_a_change(ctx, params):
        result = _initialize(ctx, params)
        change = threading.Thread(target=lambda: (
            server.tool(lambda: "gap", name="gap"), ctx.session.log("emergency", "gap")))
        change.start()
        change.join()
        return result
    server.handlers["initialize"] = _initialize_with_a_change


if __name__ == "__main__":
    server.run()
