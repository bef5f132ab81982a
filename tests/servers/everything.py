"""A server with one of everything, for the wire tests. Settings come from the environment:
EVERYTHING_PAGE_SIZE, EVERYTHING_MAX_LINE, EVERYTHING_WORKERS, EVERYTHING_QUEUE,
EVERYTHING_GRACE, EVERYTHING_TIMEOUT."""

import os
import subprocess
import sys
import time
from contextlib import contextmanager

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import mcp_min  # noqa: E402
from mcp_min import Context, Server, ToolError  # noqa: E402


def setting(name, default, kind=float):
    value = os.environ.get(f"EVERYTHING_{name}")
    return default if value is None else kind(value)


@contextmanager
def lifespan(server):
    print("lifespan: start", file=sys.stderr, flush=True)
    yield {"started": time.time()}
    print("lifespan: stop", file=sys.stderr, flush=True)


server = Server("everything", "1.2.3", title="Everything", instructions="A test server.",
                lifespan=lifespan,
                page_size=setting("PAGE_SIZE", 100, int),
                max_line_bytes=setting("MAX_LINE", 32 << 20, int),
                max_workers=setting("WORKERS", 64, int),
                max_queue=setting("QUEUE", 1024, int),
                grace_period=setting("GRACE", 5.0),
                request_timeout=setting("TIMEOUT", 60.0))


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool(annotations={"readOnlyHint": True}, title="Sleep")
def sleep(ms: float, ctx: Context) -> str:
    """Sleep for ms milliseconds, checking for cancellation every 10 ms."""
    deadline = time.monotonic() + ms / 1000
    while time.monotonic() < deadline:
        ctx.check_cancelled()
        time.sleep(min(0.01, max(0.0, deadline - time.monotonic())))
    return f"slept {ms:g} ms"


@server.tool
def block(ms: float) -> str:
    """Sleep without looking at cancellation."""
    time.sleep(ms / 1000)
    return "woke"


@server.tool
def progress(steps: int, ctx: Context) -> str:
    """Report progress `steps` times."""
    for i in range(1, steps + 1):
        ctx.report_progress(i, total=steps, message=f"step {i}")
    return "done"


@server.tool
def chatty(ctx: Context) -> str:
    """Log at every level."""
    for level in mcp_min.LOG_LEVELS:
        ctx.log(level, f"a {level} message", logger="chatty")
    return "logged"


@server.tool
def noisy() -> str:
    """Write to stdout in every way a tool can."""
    print("print() from a tool")
    os.write(1, b"os.write(1) from a tool\n")
    subprocess.run([sys.executable, "-c", "print('a child process')"], check=True)
    return "quiet wire"


@server.tool
def fail(kind: str = "runtime") -> str:
    """Fail in the way asked."""
    if kind == "tool":
        raise ToolError("the tool said no")
    if kind == "exit":
        raise SystemExit(3)
    if kind == "interrupt":
        raise KeyboardInterrupt
    if kind == "recursion":
        def down(n):
            return down(n + 1)
        return down(0)
    raise RuntimeError("something broke")


@server.tool
def big(size: int) -> str:
    """A string of `size` characters."""
    return "x" * size


@server.tool
def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's model."""
    answer = ctx.sample(question, max_tokens=50)
    return answer["content"]["text"]


@server.tool
def ask_user(ctx: Context) -> dict:
    """Ask the user for a name."""
    return ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}},
                                     "required": ["name"]})


@server.tool
def roots(ctx: Context) -> list:
    """The client's roots."""
    return ctx.list_roots()


@server.tool
def lifespan_value(ctx: Context) -> bool:
    """Whether the lifespan value is visible."""
    return "started" in ctx.lifespan


@server.resource("test://static/text", description="Plain text.")
def static_text() -> str:
    return "hello, resource"


@server.resource("test://static/blob", mime_type="application/octet-stream")
def static_blob() -> bytes:
    return bytes(range(8))


@server.resource("test://items/{item_id}")
def item(item_id: str) -> dict:
    """One item by id."""
    return {"id": item_id}


@server.prompt
def greet(name: str, style: str = "warm") -> str:
    """A greeting.

    Args:
        name: who to greet
        style: how
    """
    return f"Write a {style} greeting for {name}."


@server.completion("style", prompt="greet")
def complete_style(value, arguments):
    return [s for s in ("warm", "formal", "wacky") if s.startswith(value)]


if __name__ == "__main__":
    server.run()
