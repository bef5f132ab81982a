"""The server the official-SDK-client tests drive (tests/test_sdk_python.py and
tests/test_sdk_typescript.py): every capability, with small pages so that every list is
paginated.

    python3 tests/servers/sdk_features.py

Environment: SDK_PAGE_SIZE (default 2; 0 means one page for everything); SDK_HEARTBEAT
(seconds between SSE keep-alive lines, default 15: on an engine, where only a failed
write tells that a client left, how soon a call whose client left is cancelled).

Tools        echo; stats and point (structured output from a TypedDict and a dataclass);
             moments, naive_time, pair (datetime, date and tuple results);
             mismatch (breaks its own outputSchema: mcp_min answers isError); forged (the
             same, answered past mcp_min's check, for the client to catch); fail_with_data
             (isError with structuredContent); picture, sound; link, embed; refuse
             (ToolError); slow (reports progress, stops when cancelled); stubborn (ignores
             cancellation); cancellations; progress; chatty (logs at every level);
             ask_model (sampling); ask_user (elicitation); roots; toggle_extra (adds or
             removes tool "extra": list_changed); bump (resources/updated); environment
Resources    test://sdk/text, test://sdk/blob, test://sdk/counter; templates
             test://sdk/items/{category}/{item_id}, test://sdk/docs/{+path},
             test://sdk/users/{user_id}
Prompts      greet(name, style), debate(topic, rounds), cite()
Completions  greet.style, items.item_id (uses the category already chosen)
"""

import io
import os
import struct
import sys
import threading
import time
import wave
import zlib
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mcp_min import (Cancelled, Context, Server, ToolError, ToolResult, audio,  # noqa: E402
                     embedded_resource, image, resource_link, text)

PAGE_SIZE = int(os.environ.get("SDK_PAGE_SIZE", "2")) or None
HEARTBEAT = float(os.environ.get("SDK_HEARTBEAT", "15"))

ICONS = [{"src": "https://example.com/sdk-features.png", "mimeType": "image/png", "sizes": ["48x48"]}]

server = Server("sdk-features", "2.0.0", title="SDK feature tour",
                description="Every MCP feature, for the SDK client tests.",
                website_url="https://example.com/sdk-features", icons=ICONS,
                instructions="A test server: one of every MCP feature, two items per page.",
                page_size=PAGE_SIZE, grace_period=1.0, request_timeout=10.0,
                heartbeat=HEARTBEAT)

STATE = {"counter": 0, "cancelled": []}
LOCK = threading.Lock()


def png_1x1():
    """A valid 1x1 red PNG, built with the standard library."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def wav_silence():
    """10 ms of 8 kHz mono silence as a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(b"\x80" * 80)
    return buffer.getvalue()


# ------------------------------------------------------------------------------- tools

@server.tool(title="Echo", icons=ICONS, meta={"example.com/kind": "demo"},
             annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: what to echo
    """
    return text


class Stats(TypedDict):
    count: int
    total: float
    mean: float


@server.tool(annotations={"readOnlyHint": True})
def stats(numbers: list[float]) -> Stats:
    """Count, total and mean of some numbers (structured output from a TypedDict)."""
    if not numbers:
        raise ToolError("need at least one number")
    total = sum(numbers)
    return Stats(count=len(numbers), total=total, mean=total / len(numbers))


@dataclass
class Point:
    x: float
    y: float
    label: str


@server.tool
def point(x: float, y: float) -> Point:
    """A labelled point (structured output from a dataclass)."""
    return Point(x=x, y=y, label=f"({x:g}, {y:g})")


class Moments(TypedDict):
    at: datetime
    day: date


@server.tool
def moments() -> Moments:
    """A timezone-aware datetime and a date (format "date-time" and "date" in the schema)."""
    return Moments(at=datetime(2025, 11, 25, 12, 30, tzinfo=timezone.utc), day=date(2025, 11, 25))


@server.tool
def naive_time() -> datetime:
    """A datetime without a timezone."""
    return datetime(2025, 11, 25, 12, 30)


@server.tool
def pair() -> tuple[int, str]:
    """A fixed-length tuple (prefixItems in the schema)."""
    return (7, "seven")


N_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@server.tool(output_schema=N_SCHEMA)
def mismatch() -> dict:
    """Returns data that breaks its own outputSchema: mcp_min answers isError instead."""
    return {"n": "not a number"}


@server.tool(output_schema=N_SCHEMA)
def forged() -> dict:
    """Answered by forged_output() below, not by mcp_min's tool machinery."""
    return {"n": 1}


def forged_output(call_tool):
    """A tools/call handler that answers "forged" with structured content breaking its
    outputSchema, as a server that does not check its output would: only the client can
    catch it. Every other call goes to mcp_min's handler."""
    def handler(ctx, params):
        if params.get("name") == "forged":
            return {"content": [{"type": "text", "text": '{"n": "not a number"}'}],
                    "structuredContent": {"n": "not a number"}, "isError": False}
        return call_tool(ctx, params)
    return handler


server.handlers["tools/call"] = forged_output(server.handlers["tools/call"])


@server.tool(output_schema=N_SCHEMA)
def fail_with_data() -> ToolResult:
    """An isError result that carries structuredContent not matching the outputSchema."""
    return ToolResult([text("failed, details attached")], structured={"detail": "x"}, is_error=True)


@server.tool
def picture():
    """A 1x1 PNG image."""
    return image(png_1x1(), annotations={"audience": ["user"], "priority": 0.8})


@server.tool
def sound():
    """A short WAV clip."""
    return audio(wav_silence())


@server.tool
def link():
    """A link to the text resource."""
    return resource_link("test://sdk/text", "sdk-text", title="The text resource",
                         description="Plain text", mime_type="text/plain")


@server.tool
def embed():
    """Two embedded resources: text and binary."""
    return [text("two resources follow"),
            embedded_resource("test://sdk/text", text="hello from sdk_features",
                              mime_type="text/plain"),
            embedded_resource("test://sdk/blob", blob=bytes(range(16)),
                              mime_type="application/octet-stream")]


@server.tool
def refuse(reason: str = "no") -> str:
    """Always fails with a ToolError (an isError result)."""
    raise ToolError(f"refused: {reason}")


@server.tool
def slow(ticks: int, tick_ms: int, ctx: Context) -> str:
    """Work for `ticks` ticks of `tick_ms` ms, reporting progress each tick and stopping as
    soon as the client cancels (which cancellations() then reports)."""
    try:
        for i in range(1, ticks + 1):
            ctx.check_cancelled()
            ctx.report_progress(i, total=ticks, message=f"tick {i}")
            deadline = time.monotonic() + tick_ms / 1000
            while time.monotonic() < deadline:
                ctx.check_cancelled()
                time.sleep(0.005)
    except Cancelled:
        with LOCK:
            STATE["cancelled"].append(ctx.request_id)
        raise
    return f"finished {ticks} ticks"


@server.tool
def stubborn(ms: int) -> str:
    """Sleep `ms` ms without looking at cancellation, then return: if the client cancelled
    meanwhile, the server must still not answer."""
    time.sleep(ms / 1000)
    return f"slept {ms:g} ms"


@server.tool
def cancellations() -> dict:
    """The request ids of the slow() calls the server saw cancelled."""
    with LOCK:
        return {"cancelled": list(STATE["cancelled"])}


@server.tool
def progress(steps: int, pause_ms: int, ctx: Context) -> str:
    """Report progress `steps` times, pausing `pause_ms` ms after each report (so the last
    notification and the response do not share a read on the client's side)."""
    for i in range(1, steps + 1):
        ctx.report_progress(i, total=steps, message=f"step {i}")
        time.sleep(pause_ms / 1000)
    return f"{steps} steps"


@server.tool
def chatty(ctx: Context) -> str:
    """Log one message at every level (the client's logging/setLevel filters them)."""
    sent = [level for level in ("debug", "info", "notice", "warning", "error", "critical",
                                "alert", "emergency")
            if ctx.log(level, {"said": f"a {level} message"}, logger="chatty")]
    return ",".join(sent)


@server.tool
def ask_model(question: str, ctx: Context) -> dict:
    """Ask the client's model (sampling/createMessage)."""
    reply = ctx.sample(question, max_tokens=64, system_prompt="Answer briefly.")
    return {"text": reply["content"].get("text"), "model": reply.get("model"),
            "role": reply.get("role")}


@server.tool
def ask_user(ctx: Context) -> dict:
    """Ask the user for details (elicitation/create, form mode)."""
    return ctx.elicit("Tell me about you", {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "your name"},
                       "age": {"type": "integer", "minimum": 0},
                       "subscribe": {"type": "boolean"},
                       "colour": {"type": "string", "enum": ["red", "green"]}},
        "required": ["name"]})


@server.tool
def roots(ctx: Context) -> dict:
    """The client's roots (roots/list; cached until notifications/roots/list_changed)."""
    return {"roots": ctx.list_roots()}


def extra(word: str = "extra") -> str:
    """A tool that comes and goes."""
    return f"{word}!"


@server.tool
def toggle_extra(present: bool) -> str:
    """Add or remove the tool "extra" (notifications/tools/list_changed)."""
    if present:
        server.tool(extra)
    else:
        server.remove_tool("extra")
    return "added" if present else "removed"


@server.tool
def bump() -> dict:
    """Increment the counter resource (notifications/resources/updated to subscribers)."""
    with LOCK:
        STATE["counter"] += 1
        count = STATE["counter"]
    server.notify_resource_updated("test://sdk/counter")
    return {"count": count}


@server.tool
def environment() -> dict:
    """The names of the environment variables this server was started with, and its cwd."""
    return {"names": sorted(os.environ), "cwd": os.getcwd()}


# --------------------------------------------------------------------------- resources

@server.resource("test://sdk/text", name="sdk-text", title="Text", description="Plain text.",
                 mime_type="text/plain", size=23, icons=ICONS,
                 annotations={"audience": ["user", "assistant"], "priority": 0.5,
                              "lastModified": "2025-11-25T00:00:00Z"})
def sdk_text() -> str:
    return "hello from sdk_features"


@server.resource("test://sdk/blob", name="sdk-blob", mime_type="application/octet-stream")
def sdk_blob() -> bytes:
    return bytes(range(16))


@server.resource("test://sdk/counter", name="counter", mime_type="application/json")
def counter() -> dict:
    """How many times bump() ran."""
    with LOCK:
        return {"count": STATE["counter"]}


ITEMS = {"fruit": ["apple", "apricot", "banana"], "veg": ["asparagus", "beet", "carrot"]}


@server.resource("test://sdk/items/{category}/{item_id}", name="item", mime_type="application/json")
def item(category: str, item_id: str) -> dict:
    """One item of a category."""
    return {"category": category, "id": item_id, "known": item_id in ITEMS.get(category, ())}


@server.resource("test://sdk/docs/{+path}", name="doc", mime_type="text/plain")
def doc(path: str) -> str:
    """A document by path (slashes allowed)."""
    return f"doc at {path}"


@server.resource("test://sdk/users/{user_id}", name="user")
def user(user_id: str) -> dict:
    """A user by id."""
    return {"user": user_id}


# ----------------------------------------------------------------------------- prompts

@server.prompt(title="Greeting")
def greet(name: str, style: str = "warm") -> str:
    """A greeting.

    Args:
        name: who to greet
        style: how to greet
    """
    return f"Write a {style} greeting for {name}."


@server.prompt
def debate(topic: str, rounds: int = 2) -> list:
    """A short debate: user and assistant turns."""
    return [f"Debate {topic} in {rounds} rounds.",
            {"role": "assistant", "content": f"Round 1 on {topic}: for."},
            {"role": "user", "content": "Now against."}]


@server.prompt
def cite() -> list:
    """A prompt carrying an embedded resource."""
    return ["Summarise this:",
            embedded_resource("test://sdk/text", text="hello from sdk_features",
                              mime_type="text/plain")]


@server.completion("style", prompt="greet")
def complete_style(value, arguments):
    return [s for s in ("warm", "formal", "wacky") if s.startswith(value)]


@server.completion("item_id", template="test://sdk/items/{category}/{item_id}")
def complete_item(value, arguments):
    return [i for i in ITEMS.get(arguments.get("category"), ()) if i.startswith(value)]


if __name__ == "__main__":
    server.run()
