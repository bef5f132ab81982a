"""A server for the 2026-07-28 wire tests: tools that ask the client for input over several
rounds, resources with their own cache hints, and a tool that changes the tool list.
Settings from the environment: MODERN_TTL_MS, MODERN_SCOPE, MODERN_STATE_TTL, MODERN_WORKERS,
MODERN_QUEUE
(the signing key comes from MCP_MIN_STATE_KEY, as in any mcp_min server)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mcp_min import CapabilityError, Context, Server  # noqa: E402

server = Server("modern", "3.0.0", instructions="Serves both eras.",
                cache_ttl_ms=int(os.environ.get("MODERN_TTL_MS", "0")),
                cache_scope=os.environ.get("MODERN_SCOPE", "public"),
                state_ttl=float(os.environ.get("MODERN_STATE_TTL", "600")),
                max_workers=int(os.environ.get("MODERN_WORKERS", "8")),
                max_queue=int(os.environ.get("MODERN_QUEUE", "100")))
runs = {"count": 0}            # how often `count_runs` started: a side effect before a question
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def greet(ctx: Context) -> str:
    """Ask for a name, then greet."""
    answer = ctx.elicit("Your name?", NAME_FORM, key="user_name")
    if answer["action"] != "accept":
        return f"no name ({answer['action']})"
    return f"Hello, {answer['content']['name']}!"


@server.tool
def interview(topic: str, ctx: Context) -> str:
    """Three questions over three rounds: a name, the model's opinion, the roots."""
    name = ctx.elicit("Your name?", NAME_FORM)["content"]["name"]
    opinion = ctx.sample(f"What does {name} think of {topic}?", max_tokens=20)
    roots = ctx.list_roots()
    return f"{name} / {opinion['content']['text']} / {len(roots)} roots"


@server.tool
def survey(topic: str, ctx: Context) -> str:
    """The interview's three questions, asked together: one round."""
    name, opinion, roots = ctx.ask_together(
        lambda: ctx.elicit("Your name?", NAME_FORM),
        lambda: ctx.sample(f"What do you think of {topic}?", max_tokens=20),
        lambda: ctx.list_roots())
    return f"{name['content']['name']} / {opinion['content']['text']} / {len(roots)} roots"


@server.tool
def count_runs(ctx: Context) -> dict:
    """Counts its own starts, then asks: every retry runs it again from the top."""
    runs["count"] += 1
    ctx.elicit("Go on?", {"type": "object", "properties": {}})
    return {"runs": runs["count"]}


@server.tool
def optional_model(ctx: Context) -> str:
    """Uses the model if the client offers sampling, and says so if not."""
    try:
        return ctx.sample("hi")["content"]["text"]
    except CapabilityError as e:
        return f"without a model: {e.required}"


@server.tool
def secret_link(ctx: Context) -> str:
    """Sends the user to a page (URL elicitation)."""
    return ctx.elicit("Sign in", url="https://example.com/sign-in")["action"]


@server.tool
def report(steps: int, ctx: Context) -> str:
    """Progress and a log line at every level."""
    for i in range(1, steps + 1):
        ctx.report_progress(i, total=steps)
    for level in ("debug", "info", "warning", "error"):
        ctx.log(level, f"{level} line")
    return "reported"


@server.tool
def slow(ms: float, ctx: Context) -> str:
    """Sleeps, looking at cancellation."""
    deadline = time.monotonic() + ms / 1000
    while time.monotonic() < deadline:
        ctx.check_cancelled()
        time.sleep(0.005)
    return "slept"


@server.tool
def toggle(present: bool) -> str:
    """Adds or removes the tool `extra`."""
    if present:
        server.tool(lambda: "extra!", name="extra")
    else:
        server.remove_tool("extra")
    return "ok"


@server.tool
def touch(uri: str) -> str:
    """Says that a resource changed."""
    server.notify_resource_updated(uri)
    return "touched"


@server.resource("test://modern/text", ttl_ms=60000, cache_scope="private")
def text_resource() -> str:
    return "cached for a minute, per user"


@server.resource("test://modern/plain")
def plain_resource() -> str:
    return "server defaults"


@server.resource("test://modern/ask")
def asking_resource(ctx: Context) -> str:
    return "for " + ctx.elicit("Who reads it?", NAME_FORM)["content"]["name"]


@server.prompt
def poem(ctx: Context) -> str:
    """A poem on a subject the user picks."""
    subject = ctx.elicit("About what?", {"type": "object", "properties": {
        "subject": {"type": "string"}}})["content"]["subject"]
    return f"Write a poem about {subject}."


@server.completion("subject", prompt="poem")
def complete_subject(value, arguments):
    return ["sea", "sky"]


def ask_outside_a_call(ctx, params):
    """A method of this server's own: it may not ask the client (only tools/call,
    prompts/get and resources/read may)."""
    return ctx.elicit("Allowed?")


server.handlers["example/ask"] = ask_outside_a_call

if __name__ == "__main__":
    server.run()
