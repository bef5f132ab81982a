"""The live protocol: Context, progress, cancellation, logging to the client, server-to-client
requests, lifespan. Change notifications, subscriptions, completion and pagination races are
in test_notifications.py.

Rule IDs refer to /work/shared/spec-checklist.md (B*, L*, G*, §n) and pain points to
/work/shared/pain-points.md (#n). Wire tests drive a real server subprocess through
``Wire`` and play the client, answering the server's own requests by id; unit-level checks
use ``mcp_min.Client(server)`` in process."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import pytest
from typing import Any

import mcp_min
from conftest import ROOT
from mcp_min import Cancelled, Client, Context, JSONRPCError, Server

V2024_11, V2025_03, V2025_06, V2025_11 = mcp_min.PROTOCOL_VERSIONS
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


# ------------------------------------------------------------------------------------------
# helpers: the test plays the client on the raw wire
# ------------------------------------------------------------------------------------------

def send_request(wire, method, params=None, rid=None):
    if rid is None:
        wire.next_id += 1
        rid = wire.next_id
    message = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    wire.send(message)
    return rid


def send_call(wire, name, arguments=None, rid=None, meta=None):
    params = {"name": name, "arguments": arguments or {}}
    if meta is not None:
        params["_meta"] = meta
    return send_request(wire, "tools/call", params, rid)


def cancel(wire, request_id, reason="test"):
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": request_id, "reason": reason}})


def is_response(rid):
    """The response to ``rid``: same value *and* type (B5)."""
    return lambda m: (isinstance(m, dict) and "method" not in m and "id" in m
                      and type(m["id"]) is type(rid) and m["id"] == rid)


def is_request(method):
    return lambda m: isinstance(m, dict) and m.get("method") == method and "id" in m


def is_notification(method):
    return lambda m: isinstance(m, dict) and m.get("method") == method and "id" not in m


def read_until(wire, predicate, timeout=5.0):
    """Read messages until one matches; return (it, the messages read before it)."""
    seen, deadline = [], time.monotonic() + timeout
    while True:
        message = wire.recv(timeout=max(0.05, deadline - time.monotonic()))
        if predicate(message):
            return message, seen
        seen.append(message)


def gather(wire, seconds):
    """Every message written within ``seconds``."""
    out, deadline = [], time.monotonic() + seconds
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return out
        try:
            line = wire.lines.get(timeout=remaining)
        except Exception:
            return out
        if line is None:
            wire.lines.put(None)
            return out
        out.append(json.loads(line))


def answer(wire, request, result=None, error=None):
    """Reply to a server-to-client request, by its id."""
    message = {"jsonrpc": "2.0", "id": request["id"]}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    wire.send(message)


def tool_text(response):
    assert "result" in response, response
    return response["result"]["content"][0]["text"]


def initialize(wire, version=V2025_11, capabilities=None, initialized=True):
    result = wire.result("initialize", {"protocolVersion": version,
                                        "capabilities": capabilities or {},
                                        "clientInfo": {"name": "pytest", "version": "1"}})
    if initialized:
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return result


def ping_ok(wire, timeout=5.0):
    """The server still answers (and nothing else is written before the pong)."""
    rid = send_request(wire, "ping")
    message, before = read_until(wire, is_response(rid), timeout)
    assert message["result"] == {}
    return before


SAMPLING_ANSWER = {"role": "assistant", "content": {"type": "text", "text": "4"},
                   "model": "test-model", "stopReason": "endTurn"}


def server(**options):
    options.setdefault("grace_period", 1.0)
    return Server("unit", "0", **options)


# ==========================================================================================
# Context
# ==========================================================================================

def test_context_fields_on_the_wire(spawn):
    """A Context parameter (any name) carries request_id (with its JSON type, B5), meta
    (B13/B14), protocol_version, client_info, client_capabilities (§5.2) and ctx.lifespan;
    plain def tools run on a worker thread, not the reader."""
    w = spawn("live_protocol.py")
    caps = {"roots": {"listChanged": True}, "sampling": {}}
    initialize(w, V2025_06, caps)
    meta = {"progressToken": "tok-1", "com.example/trace": "abc"}
    rid = send_call(w, "whoami", rid="ctx-1", meta=meta)
    info = json.loads(tool_text(read_until(w, is_response(rid))[0]))
    assert info["request_id"] == "ctx-1"
    assert info["meta"] == meta
    assert info["protocol_version"] == V2025_06
    assert info["client_info"] == {"name": "pytest", "version": "1"}
    assert info["client_capabilities"] == caps
    assert info["lifespan"] == {"name": "live", "pid": w.proc.pid}
    assert info["is_main"] is False
    rid = send_call(w, "whoami", rid=7)
    info = json.loads(tool_text(read_until(w, is_response(7))[0]))
    assert info["request_id"] == 7 and type(info["request_id"]) is int
    assert info["meta"] == {}


def test_context_parameter_never_in_input_schema(spawn):
    """The Context parameter is injected, not an argument: absent from inputSchema (T: tool
    inputSchema, §11.2) and from a prompt's arguments."""
    w = spawn("live_protocol.py")
    initialize(w)
    tools = {t["name"]: t for t in w.result("tools/list")["tools"]}
    for name, ctx_name in (("whoami", "c"), ("async_nap", "ctx"), ("report", "ctx")):
        schema = tools[name]["inputSchema"]
        assert ctx_name not in schema.get("properties", {}), schema
        assert ctx_name not in schema.get("required", []), schema
    assert "ms" in tools["async_nap"]["inputSchema"]["properties"]
    prompts = {p["name"]: p for p in w.result("prompts/list")["prompts"]}
    assert [a["name"] for a in prompts["hello"]["arguments"]] == ["name"]
    # a call without the Context argument works
    rid = send_call(w, "whoami", {})
    assert tool_text(read_until(w, is_response(rid))[0]).startswith("{")


def test_async_tools_run_concurrently_on_the_event_loop_thread(spawn):
    """``async def`` tools run on mcp_min's one event loop (a thread of its own, not the
    reader's nor the main one), and two of them overlap in time (pain point #3)."""
    w = spawn("live_protocol.py")
    initialize(w)
    start = time.monotonic()
    a = send_call(w, "async_nap", {"ms": 1000}, rid="a")
    b = send_call(w, "async_nap", {"ms": 1000}, rid="b")
    ra, _ = read_until(w, lambda m: is_response(a)(m) or is_response(b)(m))
    rb, _ = read_until(w, lambda m: is_response(a)(m) or is_response(b)(m))
    elapsed = time.monotonic() - start
    replies = {r["id"]: json.loads(tool_text(r)) for r in (ra, rb)}
    assert replies["a"]["request_id"] == "a" and replies["b"]["request_id"] == "b"
    assert not replies["a"]["is_main"] and not replies["b"]["is_main"]
    assert replies["a"]["thread"] == replies["b"]["thread"] == "mcp_min-event-loop"
    assert elapsed < 1.8, f"two 1000 ms async tools took {elapsed:.2f} s: not concurrent"


def test_async_handlers_and_an_async_lifespan_share_one_event_loop():
    """Every async tool, resource and prompt runs on the loop the async lifespan was entered
    on, so asyncio objects shared between calls work: an asyncio.Lock the lifespan made, held
    by three calls at once, used to fail with "bound to a different event loop"."""
    import asyncio
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(srv):
        yield {"loop": asyncio.get_running_loop(), "lock": asyncio.Lock()}

    srv = server(lifespan=lifespan)

    @srv.tool
    async def hold(ctx: Context) -> bool:
        async with ctx.lifespan["lock"]:
            await asyncio.sleep(0.1)
        return asyncio.get_running_loop() is ctx.lifespan["loop"]

    @srv.resource("test://loop")
    async def which(ctx: Context) -> str:
        return str(asyncio.get_running_loop() is ctx.lifespan["loop"])

    @srv.prompt
    async def where(ctx: Context) -> str:
        return str(asyncio.get_running_loop() is ctx.lifespan["loop"])

    @srv.tool
    def plain() -> str:
        return threading.current_thread().name

    with Client(srv, timeout=5) as client:
        results = []
        calls = [threading.Thread(target=lambda: results.append(client.call_tool("hold")))
                 for _ in range(3)]
        for call in calls:
            call.start()
        for call in calls:
            call.join()
        assert [r["content"][0]["text"] for r in results] == ["true"] * 3, results
        assert client.read_resource("test://loop")["contents"][0]["text"] == "True"
        assert client.get_prompt("where")["messages"][0]["content"]["text"] == "True"
        assert client.call_tool("plain")["content"][0]["text"] != "mcp_min-event-loop"


def test_cancelling_an_async_tool_cancels_its_coroutine():
    """notifications/cancelled reaches an async tool as asyncio.CancelledError where it
    awaits (it used to sleep on to the end), and no reply is written for it."""
    import asyncio
    seen = {}
    srv = server()

    @srv.tool
    async def sleepy() -> str:
        seen["started"] = time.monotonic()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            seen["cancelled"] = time.monotonic()
            raise
        return "slept"

    with Client(srv, timeout=5) as client:
        with pytest.raises(TimeoutError):     # the client gives up: notifications/cancelled
            client.call_tool("sleepy", timeout=0.3)
        deadline = time.monotonic() + 2
        while "cancelled" not in seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "cancelled" in seen, "the coroutine never saw CancelledError"
        assert seen["cancelled"] - seen["started"] < 1.5
        assert client.ping() == {}
    assert not any(m.get("id") is not None for m in client.notifications)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_context_methods_are_awaitable_in_async_tools(era):
    """In an async tool, ``await ctx.info(...)``, ``await ctx.report_progress(...)`` and
    ``await ctx.elicit(...)`` work as in FastMCP (they used to fail: "object bool can't be
    used in 'await' expression"). While elicit waits for the client, the event loop keeps
    serving other async calls. In a plain def the same methods are plain calls."""
    import asyncio
    srv = server()
    form = {"type": "object", "properties": {"name": {"type": "string"}}}

    @srv.tool
    async def greet(ctx: Context) -> str:
        sent = await ctx.info("greeting")
        await ctx.report_progress(1, total=2)
        answer = await ctx.elicit("Your name?", form)
        ctx.debug("not awaited: sent all the same, if the level lets it")
        return f"{sent} {answer['content']['name']}"

    @srv.tool
    async def quick() -> str:
        await asyncio.sleep(0)
        return "quick"

    @srv.tool
    def plain(ctx: Context) -> str:
        return repr(ctx.info("plain"))

    asked = threading.Event()

    def elicitation(params):
        asked.set()
        time.sleep(0.5)                       # the user thinks it over
        return {"action": "accept", "content": {"name": "Ada"}}

    with Client(srv, timeout=5, era=era, elicitation=elicitation, log_level="debug") as client:
        client.set_logging_level("debug")
        progress, result = [], {}
        call = threading.Thread(target=lambda: result.update(
            greet=client.call_tool("greet", progress=progress.append)))
        call.start()
        assert asked.wait(3)
        start = time.monotonic()
        assert client.call_tool("quick")["content"][0]["text"] == "quick"
        assert time.monotonic() - start < 0.4, "the elicitation held up the event loop"
        call.join()
        assert result["greet"]["content"][0]["text"] == "True Ada", result
        assert progress and progress[0]["progress"] == 1
        logged = [n["params"]["data"] for n in client.notifications
                  if n["method"] == "notifications/message"]
        assert "greeting" in logged and any(d.startswith("not awaited") for d in logged)
        assert client.call_tool("plain")["content"][0]["text"] == "True"


def test_a_waiting_context_call_left_unawaited_is_a_coroutine_named_for_it():
    """In an async tool, ctx.elicit(...) without await is a coroutine (it would never run):
    using it as the answer fails at once, and Python's "was never awaited" warning names
    Context.elicit. Quick calls left unawaited are sent anyway (see above)."""
    srv = server()

    @srv.tool
    async def forgetful(ctx: Context) -> str:
        answer = ctx.elicit("Proceed?")
        try:
            return answer["action"]
        except TypeError as e:
            return f"{answer.__qualname__}: {e}"
        finally:
            answer.close()                    # this test's own: no warning at collection

    with Client(srv, timeout=5, elicitation=lambda p: {"action": "accept"}) as client:
        assert client.call_tool("forgetful")["content"][0]["text"] == \
            "Context.elicit: 'coroutine' object is not subscriptable"


def test_the_event_loop_refuses_to_wait_for_itself():
    """A coroutine on the loop that would block waiting for the loop gets an error, not a
    deadlock."""
    loop = mcp_min._event_loop()

    async def inner():
        return "never"

    async def outer():
        with pytest.raises(RuntimeError, match="cannot wait for itself"):
            loop.submit(inner()).result()
        return "refused"
    assert loop.submit(outer()).result() == "refused"


def test_context_in_resources_and_prompts_and_async_variants():
    """Resources (fixed and templated) and prompts get a Context too; their async forms work;
    the Context parameter does not count as a template variable or prompt argument."""
    srv = server()
    seen = {}

    @srv.resource("test://ctx/{key}")
    def templated(key: str, ctx: Context) -> str:
        seen["resource"] = (ctx.method, ctx.request_id)
        return f"key={key}"

    @srv.resource("test://ctx/async")
    async def fixed(ctx: Context) -> str:
        return f"async resource {ctx.method}"

    @srv.prompt
    async def ask(topic: str, here: Context) -> str:
        """Ask about a topic."""
        return f"{topic} via {here.method}"

    @srv.tool
    def plain() -> str:
        return "plain"

    @srv.tool
    def optional_ctx(x: int, ctx: Context = None) -> str:
        return f"{x} {ctx.method}"

    with Client(srv, timeout=5) as client:
        schema = {t["name"]: t for t in client.list_tools()}["optional_ctx"]["inputSchema"]
        assert "ctx" not in schema["properties"] and schema.get("required") == ["x"]
        assert client.call_tool("optional_ctx", {"x": 1})["content"][0]["text"] == "1 tools/call"
        out = client.read_resource("test://ctx/k1")
        assert out["contents"][0]["text"] == "key=k1"
        assert seen["resource"][0] == "resources/read" and seen["resource"][1] is not None
        assert client.read_resource("test://ctx/async")["contents"][0]["text"] == \
            "async resource resources/read"
        prompt = client.get_prompt("ask", {"topic": "owls"})
        assert prompt["messages"][0]["content"]["text"] == "owls via prompts/get"
        assert [a["name"] for a in client.list_prompts()[0]["arguments"]] == ["topic"]
        assert client.call_tool("plain")["content"][0]["text"] == "plain"


def test_lifespan_value_reachable_in_process():
    """Server(lifespan=fn): fn(server) is entered once; ctx.lifespan is what it yields."""
    from contextlib import contextmanager
    calls = []

    @contextmanager
    def lifespan(srv):
        calls.append(("enter", srv.name))
        yield {"db": "connected"}
        calls.append(("exit", srv.name))

    srv = server(lifespan=lifespan)

    @srv.tool
    def probe(ctx: Context) -> str:
        return ctx.lifespan["db"]

    with Client(srv, timeout=5) as client:
        for _ in range(3):
            assert client.call_tool("probe")["content"][0]["text"] == "connected"
        assert calls == [("enter", "unit")]
    assert calls == [("enter", "unit"), ("exit", "unit")]


def test_lifespan_runs_once_for_concurrent_connections():
    """The lifespan is shared: two connections at once enter it once and exit it once, after
    the last one closes."""
    from contextlib import contextmanager
    calls = []

    @contextmanager
    def lifespan(srv):
        calls.append("enter")
        yield len(calls)
        calls.append("exit")

    srv = server(lifespan=lifespan)

    @srv.tool
    def value(ctx: Context) -> str:
        return str(ctx.lifespan)

    first = Client(srv, timeout=5)
    second = Client(srv, timeout=5)
    try:
        assert first.call_tool("value")["content"][0]["text"] == "1"
        assert second.call_tool("value")["content"][0]["text"] == "1"
        first.close()
        assert calls == ["enter"]
    finally:
        second.close()
        first.close()
    assert calls == ["enter", "exit"]


ASYNC_LIFESPAN_SERVER = """
import asyncio, json, sys
from contextlib import asynccontextmanager
sys.path.insert(0, {root!r})
from mcp_min import Context, Server


async def tick(state):
    while True:
        state["ticks"] += 1
        await asyncio.sleep(0.01)


{decorator}
async def lifespan(server):
    state = {{"name": "async", "ticks": 0}}
    ticker = asyncio.create_task(tick(state))     # bound to the loop that entered the lifespan
    yield state
    ticker.cancel()                                # so this must run on that loop too
    await asyncio.gather(ticker, return_exceptions=True)
    print(f"lifespan: stop after {{state['ticks'] > 0}} ticks", file=sys.stderr, flush=True)


server = Server("async-lifespan", lifespan=lifespan)


@server.tool
def probe(ctx: Context) -> str:
    return ctx.lifespan["name"]


server.run()
"""


@pytest.mark.parametrize("decorator", ["@asynccontextmanager", ""])
def test_an_async_lifespan_is_entered_and_exited_on_one_loop(spawn, tmp_path, decorator):
    """An @asynccontextmanager lifespan (or a bare async generator) starts, handlers see what
    it yields, and its shutdown half runs on the loop it started on when the input ends."""
    script = tmp_path / "async_lifespan.py"
    script.write_text(ASYNC_LIFESPAN_SERVER.format(root=str(ROOT), decorator=decorator))
    w = spawn(str(script))
    initialize(w)
    rid = send_call(w, "probe")
    assert tool_text(read_until(w, is_response(rid))[0]) == "async"
    w.close_stdin()
    assert w.wait(10) == 0, w.stderr
    assert "lifespan: stop after True ticks" in w.stderr, w.stderr
    assert "Traceback" not in w.stderr


def test_a_bare_generator_lifespan_is_a_context_manager():
    calls = []

    def lifespan(srv):                            # no @contextmanager
        calls.append("enter")
        yield "plain"
        calls.append("exit")

    srv = server(lifespan=lifespan)

    @srv.tool
    def probe(ctx: Context) -> str:
        return ctx.lifespan

    with Client(srv, timeout=5) as client:
        assert client.call_tool("probe")["content"][0]["text"] == "plain"
    assert calls == ["enter", "exit"]


def test_a_lifespan_may_register_and_remove_tools():
    """Registering from the lifespan used to deadlock: the server held its registry lock while
    it entered the lifespan. Tools added there are served; its exit may remove them."""
    from contextlib import contextmanager

    @contextmanager
    def lifespan(srv):
        srv.tool(lambda: "added by the lifespan", name="late")
        yield
        srv.remove_tool("late")

    srv = server(lifespan=lifespan)
    with Client(srv, timeout=3) as client:
        assert client.call_tool("late")["content"][0]["text"] == "added by the lifespan"
    assert "late" not in srv.tools


def test_a_lifespan_that_returns_no_context_manager_says_how_to_fix_it():
    srv = server(lifespan=lambda srv: {"db": 1})
    read_fd, write_fd = os.pipe()
    try:
        with pytest.raises(TypeError, match="@contextlib.asynccontextmanager"):
            srv.serve_connection(read_fd, write_fd)
    finally:
        os.close(read_fd)
        os.close(write_fd)


# ==========================================================================================
# Progress (B14, G9, §9 notifications/progress, pain point #15)
# ==========================================================================================

def test_progress_with_string_token_arrives_before_the_response(wire):
    """B14/§9: with _meta.progressToken the tool's report_progress calls become
    notifications/progress carrying that token, progress, total and message, all before the
    response."""
    rid = send_call(wire, "progress", {"steps": 3}, meta={"progressToken": "tok"})
    response, before = read_until(wire, is_response(rid))
    assert tool_text(response) == "done"
    progress = [m["params"] for m in before if is_notification("notifications/progress")(m)]
    assert progress == [{"progressToken": "tok", "progress": i, "total": 3, "message": f"step {i}"}
                        for i in (1, 2, 3)]


def test_progress_token_zero_integer(wire):
    """B14: the TS client uses the integer request id as token, including 0; 0 is a valid
    token (not falsy-ignored) and is echoed as the integer 0, not "0"."""
    rid = send_call(wire, "progress", {"steps": 2}, rid=0, meta={"progressToken": 0})
    response, before = read_until(wire, is_response(0))
    assert tool_text(response) == "done"
    tokens = [m["params"]["progressToken"] for m in before
              if is_notification("notifications/progress")(m)]
    assert tokens == [0, 0] and all(type(t) is int for t in tokens)
    assert rid == 0


@pytest.mark.parametrize("meta", [None, {}, {"progressToken": None}, ["progressToken"], "tok"])
def test_no_progress_without_token(wire, meta):
    """B14: no (usable) progressToken, no notifications/progress (report_progress is a
    no-op), and a malformed _meta does not break the call."""
    rid = send_call(wire, "progress", {"steps": 3}, meta=meta)
    response, before = read_until(wire, is_response(rid))
    assert tool_text(response) == "done"
    assert before == []


def test_progress_must_strictly_increase(spawn):
    """G9: a repeated or smaller progress value is rejected with a clear error and not sent;
    floats are fine."""
    w = spawn("live_protocol.py")
    initialize(w)
    rid = send_call(w, "report", {"values": "[1, 2, 2]"}, meta={"progressToken": "p"})
    response, before = read_until(w, is_response(rid))
    sent = [m["params"]["progress"] for m in before if is_notification("notifications/progress")(m)]
    assert sent == [1, 2]
    assert response["result"]["isError"] is True
    assert "increase" in tool_text(response)
    rid = send_call(w, "report", {"values": "[3, 1]"}, meta={"progressToken": "q"})
    response, before = read_until(w, is_response(rid))
    assert [m["params"]["progress"] for m in before
            if is_notification("notifications/progress")(m)] == [3]
    assert response["result"]["isError"] is True
    rid = send_call(w, "report", {"values": "[0.5, 1.5, 9.25]"}, meta={"progressToken": "r"})
    response, before = read_until(w, is_response(rid))
    assert json.loads(tool_text(response)) == [True, True, True]
    assert [m["params"]["progress"] for m in before
            if is_notification("notifications/progress")(m)] == [0.5, 1.5, 9.25]


def test_progress_from_several_threads_still_increases_on_the_wire():
    import itertools
    server = Server("threads")

    @server.tool
    def parallel(ctx: Context) -> int:
        counter, lock, refused = itertools.count(1), threading.Lock(), []

        def work():
            for _ in range(1000):
                with lock:
                    n = next(counter)
                try:
                    ctx.report_progress(n)
                except ValueError:        # a smaller value than one already sent: refused
                    refused.append(n)
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return len(refused)
    sent = []
    with Client(server, timeout=30) as client:
        refused = client.call_tool("parallel", progress=lambda p: sent.append(p["progress"]))
    assert len(sent) + refused["structuredContent"]["result"] == 4000
    assert all(a < b for a, b in zip(sent, sent[1:]))


def test_progress_total_and_message_are_checked_and_any_number_is_a_token():
    server = Server("fields")

    @server.tool
    def report(total: Any = None, message: Any = None, ctx: Context = None) -> bool:
        return ctx.report_progress(1, total, message)
    with Client(server) as client:
        bad_total = client.call_tool("report", {"total": "ten"})["content"][0]["text"]
        bad_message = client.call_tool("report", {"message": 5})["content"][0]["text"]
        sent = client.request("tools/call", {"name": "report", "arguments": {"total": 2},
                                             "_meta": {"progressToken": 1.5}})
        time.sleep(0.05)
        progress = [n["params"] for n in client.notifications
                    if n["method"] == "notifications/progress"]
    assert bad_total == 'TypeError: total must be a number, not "ten"'
    assert bad_message == "TypeError: message must be a str, not 5"
    assert sent["structuredContent"] == {"result": True}
    assert progress == [{"progressToken": 1.5, "progress": 1, "total": 2}]



@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_logger_or_an_elicitation_message_that_is_not_a_string_is_refused(era):
    """The spec makes notifications/message's logger and elicitation/create's message strings:
    a tool that passes anything else gets a TypeError, and the client is sent nothing."""
    server = Server("fields")

    @server.tool
    def odd(what: str, ctx: Context) -> str:
        if what == "logger":
            return repr(ctx.info("hello", logger=5))
        if what == "url":
            return repr(ctx.elicit(None, url="https://example.com/form"))
        return repr(ctx.elicit(5, {"type": "object", "properties": {}}))
    asked = []
    with Client(server, era=era, log_level="debug",
                capabilities={"elicitation": {"form": {}, "url": {}}},
                elicitation=lambda params: asked.append(params) or {"action": "decline"}) as client:
        if era == "legacy":
            client.set_logging_level("debug")
        texts = [client.call_tool("odd", {"what": what})["content"][0]["text"]
                 for what in ("logger", "url", "form")]
        time.sleep(0.05)
        messages = [n for n in client.notifications if n["method"] == "notifications/message"]
    assert texts == ["TypeError: logger must be a str, not 5",
                     "TypeError: message must be a str, not null",
                     "TypeError: message must be a str, not 5"]
    assert asked == [] and messages == []

def test_an_async_tool_that_raises_system_exit_leaves_the_event_loop_serving():
    server = Server("async")

    @server.tool
    async def leave(how: str) -> str:
        raise SystemExit(3) if how == "exit" else KeyboardInterrupt()

    @server.tool
    async def hello() -> str:
        return "hi"
    with Client(server) as client:
        texts = [client.call_tool("leave", {"how": how})["content"][0]["text"]
                 for how in ("exit", "interrupt")]
        assert client.call_tool("hello")["content"][0]["text"] == "hi"
    assert texts == ["SystemExit: 3", "KeyboardInterrupt: "]


def test_no_progress_after_the_response(spawn):
    """§9/G9: progress MUST stop once the response is sent: a thread reporting after the
    tool returned sends nothing (report_progress returns False)."""
    w = spawn("live_protocol.py")
    initialize(w)
    rid = send_call(w, "progress_then_return", meta={"progressToken": "late"})
    response, before = read_until(w, is_response(rid))
    assert tool_text(response) == "returned"
    assert [m["params"]["progress"] for m in before
            if is_notification("notifications/progress")(m)] == [1]
    w.expect_silence(0.4)
    assert "late progress sent: False" in w.stderr


@pytest.mark.parametrize("version,has_message", [(V2024_11, False), (V2025_03, True)])
def test_progress_message_only_from_2025_03(spawn, version, has_message):
    """§1: progress `message` was added in 2025-03-26; a 2024-11-05 client never gets it."""
    w = spawn("everything.py")
    initialize(w, version)
    rid = send_call(w, "progress", {"steps": 2}, meta={"progressToken": "m"})
    _, before = read_until(w, is_response(rid))
    params = [m["params"] for m in before if is_notification("notifications/progress")(m)]
    assert len(params) == 2
    assert all(("message" in p) is has_message for p in params)


def test_report_progress_unit():
    """report_progress: False without a token; raises on non-increasing values (G9) and
    non-numbers; False once the response is written."""
    srv = server()
    kept, outcomes = {}, {}

    @srv.tool
    def work(ctx: Context) -> str:
        kept["ctx"] = ctx
        outcomes["first"] = ctx.report_progress(1)
        try:
            ctx.report_progress(1)
        except ValueError as e:
            outcomes["repeat"] = str(e)
        try:
            ctx.report_progress("2")
        except TypeError as e:
            outcomes["type"] = str(e)
        outcomes["second"] = ctx.report_progress(2.5, total=3)
        return "ok"

    with Client(srv, timeout=5) as client:
        got = []
        client.call_tool("work", progress=got.append)
        assert outcomes["first"] is True and outcomes["second"] is True
        assert "increase" in outcomes["repeat"] and "type" in outcomes
        assert [p["progress"] for p in got] == [1, 2.5]
        assert kept["ctx"].report_progress(3) is False         # after the response
        client.call_tool("work")                                # no token
        assert outcomes["first"] is False and outcomes["second"] is False
        time.sleep(0.05)
        assert [n for n in client.notifications if n["method"] == "notifications/progress"
                and n["params"]["progress"] == 3] == []


# ==========================================================================================
# Cancellation (§9 notifications/cancelled, G8, G11, L7, pain point #4)
# ==========================================================================================

def test_cancel_during_call_gets_no_reply_and_the_tool_stops(spawn):
    """§9/G8: a cancelled request gets no response; ctx.check_cancelled() lets the tool stop,
    freeing the only worker at once (EVERYTHING_WORKERS=1)."""
    w = spawn("everything.py", env={"EVERYTHING_WORKERS": "1"})
    initialize(w)
    rid = send_call(w, "sleep", {"ms": 20000}, rid=1)
    time.sleep(0.15)
    cancel(w, rid)
    w.expect_silence(0.4)
    start = time.monotonic()
    echo = send_call(w, "echo", {"text": "after"})
    response, before = read_until(w, is_response(echo), timeout=3)
    assert tool_text(response) == "after"
    assert time.monotonic() - start < 4
    assert not any(is_response(1)(m) for m in before)
    assert ping_ok(w) == []


@pytest.mark.parametrize("tool,arguments", [("block", {"ms": 300}), ("async_nap", {"ms": 300})])
def test_cancelled_reply_never_written_even_if_the_tool_finishes(spawn, tool, arguments):
    """§9/G8, pain point #4: a tool that ignores cancellation (block) or only checks at the end
    (an async tool) still runs to its end, but its reply is never written."""
    w = spawn("live_protocol.py" if tool == "async_nap" else "everything.py")
    initialize(w)
    rid = send_call(w, tool, arguments, rid="ignored")
    time.sleep(0.1)
    cancel(w, rid)
    assert [m for m in gather(w, 0.5) if is_response(rid)(m)] == []
    assert ping_ok(w) == []


def test_cancel_before_start_gets_no_reply(spawn):
    """§9: a call still waiting in the queue when its cancel arrives is never answered; the
    call ahead of it is."""
    w = spawn("everything.py", env={"EVERYTHING_WORKERS": "1", "EVERYTHING_QUEUE": "10"})
    initialize(w)
    send_call(w, "block", {"ms": 300}, rid="running")
    send_call(w, "echo", {"text": "queued"}, rid="queued")
    cancel(w, "queued")
    response, before = read_until(w, is_response("running"))
    assert tool_text(response) == "woke"
    after = gather(w, 0.4)
    assert not any(is_response("queued")(m) for m in before + after), before + after
    assert ping_ok(w) == []


def test_cancelled_queued_call_is_never_started(spawn):
    """§9 ("SHOULD stop work, free resources"): a call cancelled before a worker picked it up
    should not run at all. The queued call is `chatty`, whose logging makes running visible."""
    w = spawn("everything.py", env={"EVERYTHING_WORKERS": "1", "EVERYTHING_QUEUE": "10"})
    initialize(w)
    send_call(w, "block", {"ms": 300}, rid="running")
    send_call(w, "chatty", rid="queued")
    cancel(w, "queued")
    _, before = read_until(w, is_response("running"))
    after = gather(w, 0.4)
    assert not any(is_response("queued")(m) for m in before + after)
    assert [m for m in before + after if is_notification("notifications/message")(m)] == []


def test_cancel_after_the_reply_is_ignored(wire):
    """§9: cancelling a finished request is ignored: no reply to the notification, no
    second reply to the request, the server keeps serving."""
    rid = send_call(wire, "echo", {"text": "x"}, rid=5)
    assert tool_text(read_until(wire, is_response(5))[0]) == "x"
    cancel(wire, rid)
    wire.expect_silence(0.3)
    assert ping_ok(wire) == []


def test_unknown_and_invalid_cancels_are_ignored(wire):
    """§9/B9: cancels for unknown ids, or with a missing/null/object requestId, are ignored
    and never answered."""
    cancel(wire, 424242)
    cancel(wire, "nobody")
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled"})
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": None}})
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}})
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": True}})
    wire.expect_silence(0.3)
    assert ping_ok(wire) == []


@pytest.mark.parametrize("call_id,cancel_id", [(1, "1"), ("2", 2), (3, 3.0), (1, True)])
def test_cancel_matches_request_id_with_its_type(wire, call_id, cancel_id):
    """G11/B5: requestId is matched with its JSON type: "1" does not cancel 1, 2 does not
    cancel "2", 3.0 (a float) does not cancel 3, true does not cancel 1."""
    send_call(wire, "sleep", {"ms": 250}, rid=call_id)
    time.sleep(0.05)
    cancel(wire, cancel_id)
    response, _ = read_until(wire, is_response(call_id))
    assert tool_text(response) == "slept 250 ms"


def test_cancel_of_initialize_is_ignored(spawn):
    """L7/§9: initialize MUST NOT be cancelled; a cancel for its id is ignored and the
    initialize result is still written."""
    w = spawn("everything.py")
    init = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": V2025_11, "capabilities": {},
                       "clientInfo": {"name": "pytest", "version": "1"}}}
    cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": "init"}}
    w.send((json.dumps(init) + "\n" + json.dumps(cancelled) + "\n").encode())
    response, _ = read_until(w, is_response("init"))
    assert response["result"]["protocolVersion"] == V2025_11


def test_cancel_racing_the_response_is_harmless(spawn):
    """§9: "race conditions MUST be handled gracefully": cancels that arrive just before,
    during or just after the reply give zero or one reply per id, never two, never an error
    reply, and the server keeps working."""
    w = spawn("everything.py")
    initialize(w)
    ids = []
    for i in range(40):
        rid = f"race-{i}"
        ids.append(rid)
        send_call(w, "sleep", {"ms": i % 4}, rid=rid)
        if i % 3:
            time.sleep((i % 5) / 1000)
        cancel(w, rid)
    before = ping_ok(w)
    before += gather(w, 0.3)
    replies = [m for m in before if isinstance(m, dict) and m.get("id") in ids]
    for rid in ids:
        mine = [m for m in replies if m["id"] == rid]
        assert len(mine) <= 1, mine
        assert all("result" in m for m in mine), mine
    assert not any("error" in m for m in before), before
    assert ping_ok(w) == []


def test_cancel_storm_after_replies(wire):
    """§9: a cancel that arrives after the reply (the client's timeout fired late) changes
    nothing: exactly one reply each."""
    ids = [send_call(wire, "echo", {"text": str(i)}, rid=100 + i) for i in range(20)]
    for rid in ids:
        cancel(wire, rid)
    got = gather(wire, 0.6)
    counts = {rid: sum(1 for m in got if is_response(rid)(m)) for rid in ids}
    assert all(c <= 1 for c in counts.values()), counts
    assert ping_ok(wire) == []


def test_cancelled_sent_as_a_request_is_an_error(wire):
    """G8/B9: notifications/cancelled is a notification. Sent with an id it is not a valid
    request: the server answers with a JSON-RPC error, not a (null) result."""
    send_call(wire, "sleep", {"ms": 200}, rid=1)
    rid = send_request(wire, "notifications/cancelled", {"requestId": 1}, rid=2)
    response, _ = read_until(wire, is_response(rid))
    assert "error" in response, response
    assert response["error"]["code"] in (-32600, -32601)


def test_cancel_also_cancels_the_servers_outbound_request(spawn):
    """§9 + §10: when a call waiting on sampling/createMessage is cancelled, the server sends
    notifications/cancelled for its own outbound id, never replies to the call, and ignores a
    late answer from the client."""
    w = spawn("everything.py")
    initialize(w, capabilities={"sampling": {}})
    rid = send_call(w, "ask_model", {"question": "2+2?"}, rid=11)
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    cancel(w, rid)
    note, before = read_until(w, is_notification("notifications/cancelled"))
    assert note["params"]["requestId"] == outbound["id"]
    assert type(note["params"]["requestId"]) is type(outbound["id"])
    answer(w, outbound, SAMPLING_ANSWER)
    after = gather(w, 0.4)
    assert not any(is_response(rid)(m) for m in before + after), before + after
    assert ping_ok(w) == []


def test_cancelled_flag_and_check_cancelled_unit():
    """ctx.cancelled turns True when notifications/cancelled arrives; ctx.check_cancelled()
    raises Cancelled, and the cancelled call is never answered."""
    srv = server()
    started, observed, finished = threading.Event(), {}, threading.Event()

    @srv.tool
    def loop(ctx: Context) -> str:
        started.set()
        observed["before"] = ctx.cancelled
        deadline = time.monotonic() + 5
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        observed["after"] = ctx.cancelled
        try:
            ctx.check_cancelled()
        except Cancelled as e:
            observed["raised"] = str(e)
            raise
        finally:
            finished.set()
        return "not cancelled"

    with Client(srv, timeout=5) as client:
        answers, original = [], client.handle_response

        def spy(message):                             # see every response the server writes
            answers.append(message)
            original(message)
        client.handle_response = spy
        client.send({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
                     "params": {"name": "loop", "arguments": {}}})
        assert started.wait(2)
        client.notify("notifications/cancelled", {"requestId": "c1"})
        assert finished.wait(2)
        assert observed["before"] is False and observed["after"] is True
        assert "c1" in observed["raised"]
        assert client.ping() == {}
        time.sleep(0.1)
        assert [a for a in answers if a.get("id") == "c1"] == []


# ==========================================================================================
# Logging to the client (§5.1 logging, §7 logging/setLevel, §9 notifications/message)
# ==========================================================================================

def messages_of(seen):
    return [m["params"] for m in seen if is_notification("notifications/message")(m)]


def test_logging_capability_declared(spawn):
    """§5.1: a server that emits notifications/message declares `logging`."""
    w = spawn("everything.py")
    assert initialize(w)["capabilities"].get("logging") == {}


def test_default_level_is_info(wire):
    """§7: before any logging/setLevel the server sends info and above (not debug), each with
    its logger and data, all before the tool's reply."""
    rid = send_call(wire, "chatty")
    response, before = read_until(wire, is_response(rid))
    assert tool_text(response) == "logged"
    assert messages_of(before) == [{"level": level, "logger": "chatty", "data": f"a {level} message"}
                                   for level in LEVELS[1:]]


@pytest.mark.parametrize("level", ["warning", "debug", "emergency"])
def test_set_level_filters(wire, level):
    """§7 logging/setLevel: result {}; afterwards only messages at that level or above."""
    assert wire.result("logging/setLevel", {"level": level}) == {}
    rid = send_call(wire, "chatty")
    _, before = read_until(wire, is_response(rid))
    assert [p["level"] for p in messages_of(before)] == list(LEVELS[LEVELS.index(level):])


@pytest.mark.parametrize("params", [{"level": "verbose"}, {"level": "INFO"}, {}, {"level": 3},
                                    {"level": None}])
def test_set_level_invalid_is_32602(wire, params):
    """§7/§13: an invalid log level is -32602, and the previous level stays in force."""
    response = wire.request("logging/setLevel", params)
    assert response["error"]["code"] == -32602, response
    rid = send_call(wire, "chatty")
    _, before = read_until(wire, is_response(rid))
    assert len(messages_of(before)) == 7


@pytest.mark.parametrize("level", [["debug"], {"level": "debug"}])
def test_set_level_unhashable_is_32602(wire, level):
    """§7/§13: an invalid log level of any JSON type is -32602 (not an internal error)."""
    response = wire.request("logging/setLevel", {"level": level})
    assert response["error"]["code"] == -32602, response


def test_log_shorthands_and_return_values_unit():
    """ctx.log(level, data, logger) and ctx.debug ... ctx.emergency: each sends one
    notifications/message at its level when at or above the client's level; they return
    whether it was sent; data may be any JSON value; an unknown level is an error."""
    srv = server()
    sent = {}

    @srv.tool
    def speak(ctx: Context) -> str:
        for level in LEVELS:
            sent[level] = getattr(ctx, level)({"level": level, "n": [1, 2]}, logger="unit")
        sent["log"] = ctx.log("notice", "plain", logger=None)
        try:
            ctx.log("verbose", "x")
        except ValueError as e:
            sent["bad"] = str(e)
        return "ok"

    with Client(srv, timeout=5) as client:
        client.set_logging_level("debug")
        client.call_tool("speak")
        got = [n["params"] for n in client.notifications if n["method"] == "notifications/message"]
        assert got == [{"level": level, "logger": "unit", "data": {"level": level, "n": [1, 2]}}
                       for level in LEVELS] + [{"level": "notice", "data": "plain"}]
        assert all(sent[level] is True for level in LEVELS) and sent["log"] is True
        assert "verbose" in sent["bad"]
        client.notifications.clear()
        client.set_logging_level("error")
        client.call_tool("speak")
        got = [n["params"]["level"] for n in client.notifications
               if n["method"] == "notifications/message"]
        assert got == ["error", "critical", "alert", "emergency"]
        assert sent["warning"] is False and sent["error"] is True and sent["log"] is False


def test_forward_logging_on_the_wire(spawn):
    """Server(forward_logging=True): Python logging records emitted inside a tool reach the
    client as notifications/message (logger = the record's logger), filtered by the client's
    level (default info; then setLevel error)."""
    w = spawn("live_protocol.py", env={"LIVE_FORWARD": "1"})
    initialize(w)
    for level in ("debug", "info", "warning"):
        rid = send_call(w, "log_python", {"level": level, "message": f"py {level}"})
        _, before = read_until(w, is_response(rid))
        got = [p for p in messages_of(before) if p.get("logger") == "live.tool"]
        if level == "debug":
            assert got == []
        else:
            assert len(got) == 1 and got[0]["level"] == level and f"py {level}" in got[0]["data"]
    assert w.result("logging/setLevel", {"level": "error"}) == {}
    rid = send_call(w, "log_python", {"level": "warning", "message": "py filtered"})
    _, before = read_until(w, is_response(rid))
    assert messages_of(before) == []
    rid = send_call(w, "log_python", {"level": "error", "message": "py error"})
    _, before = read_until(w, is_response(rid))
    assert [p["level"] for p in messages_of(before)] == ["error"]
    w.close_stdin()
    assert w.wait(5) == 0                   # forwarding adds to stderr logging, never replaces it
    assert "py warning" in w.stderr and "py filtered" in w.stderr and "py error" in w.stderr


def test_forward_logging_in_process():
    """Server(forward_logging="unit.fwd") also works when serving in process (serve_connection())."""
    import logging
    srv = server(forward_logging="unit.fwd")

    @srv.tool
    def emit() -> str:
        logging.getLogger("unit.fwd").warning("forwarded %d", 42)
        return "ok"

    with Client(srv, timeout=5) as client:
        client.call_tool("emit")
        time.sleep(0.05)
        got = [n["params"] for n in client.notifications if n["method"] == "notifications/message"]
        assert [(p["level"], p.get("logger")) for p in got] == [("warning", "unit.fwd")]
        assert "forwarded 42" in got[0]["data"]


def test_forward_logging_sends_a_level_between_two_at_the_lower():
    """A NOTICE at 25 is "notice", 35 is no more than "warning", 15 is "debug"."""
    import logging
    srv = server(forward_logging="unit.levels")
    logging.getLogger("unit.levels").setLevel(1)       # records below WARNING are made too

    @srv.tool
    def emit() -> str:
        for levelno in (15, 22, 25, 35, 45, 60):
            logging.getLogger("unit.levels").log(levelno, "at %d", levelno)
        return "ok"

    with Client(srv, timeout=5) as client:
        client.set_logging_level("debug")
        client.call_tool("emit")
        time.sleep(0.05)
        got = [(n["params"]["level"], n["params"]["data"]) for n in client.notifications
               if n["method"] == "notifications/message"]
    assert [level for level, _ in got] == ["debug", "info", "notice", "warning", "error",
                                           "critical"]
    assert [data.rsplit(" ", 1)[1] for _, data in got] == ["15", "22", "25", "35", "45", "60"]


def test_forward_logging_from_an_async_tool():
    """Records logged by an async tool (on the event loop, and in a thread it starts with
    asyncio.to_thread) reach the client of the request that logged them."""
    import asyncio
    import logging
    srv = server(forward_logging="unit.async-fwd")
    logger = logging.getLogger("unit.async-fwd")

    @srv.tool
    async def emit(label: str) -> str:
        logger.warning("on the loop for %s", label)
        await asyncio.to_thread(logger.warning, "in a thread for %s", label)
        return "ok"

    with Client(srv, timeout=5) as client:
        client.call_tool("emit", {"label": "one"})
        time.sleep(0.05)
        got = [n["params"]["data"] for n in client.notifications
               if n["method"] == "notifications/message"]
        assert got == ["on the loop for one", "in a thread for one"], got


# ==========================================================================================
# Server-to-client requests (§10, §4.3 timeouts, L12, L14, §5.2, B4)
# ==========================================================================================

def test_sampling_round_trip(spawn):
    """§10 sampling/createMessage: a real outbound request (own id, messages, maxTokens); the
    test answers it by id and the tool gets the result."""
    w = spawn("everything.py")
    initialize(w, capabilities={"sampling": {}})
    rid = send_call(w, "ask_model", {"question": "2+2?"}, rid=1)
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    assert type(outbound["id"]) in (int, str)
    assert outbound["params"]["messages"] == [{"role": "user",
                                               "content": {"type": "text", "text": "2+2?"}}]
    assert outbound["params"]["maxTokens"] == 50
    answer(w, outbound, SAMPLING_ANSWER)
    response, _ = read_until(w, is_response(rid))
    assert tool_text(response) == "4"


def test_an_answer_whose_id_has_another_type_is_not_the_answer(spawn):
    """B5 for the server's own requests: 1 and "1" are different ids, so an answer echoing
    the id with another type is ignored (never answered) and the tool keeps waiting for the
    real one."""
    w = spawn("everything.py")
    initialize(w, capabilities={"sampling": {}})
    rid = send_call(w, "ask_model", {"question": "2+2?"})
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    other = str(outbound["id"]) if type(outbound["id"]) is int else 10 ** 6
    answer(w, {"id": other}, dict(SAMPLING_ANSWER, content={"type": "text", "text": "wrong"}))
    assert ping_ok(w) == []                             # nothing answered it, nothing done
    answer(w, outbound, SAMPLING_ANSWER)
    assert tool_text(read_until(w, is_response(rid))[0]) == "4"


@pytest.mark.parametrize("returned", [None, "yes", ["a"]])
def test_client_callback_that_returns_no_object_answers_an_error_not_a_bad_result(returned):
    """§10 from the client's side: a response's result is a JSON object, so a sampling or
    elicitation callback returning anything else is answered -32603, never "result": null."""
    sent = []
    server = [sys.executable, str(ROOT / "tests" / "servers" / "everything.py")]
    with Client(server, sampling=lambda p: returned, elicitation=lambda p: returned,
                trace=lambda way, raw: way == "out" and sent.append(json.loads(raw))) as client:
        for tool, arguments in (("ask_model", {"question": "q"}), ("ask_user", {})):
            assert client.call_tool(tool, arguments)["isError"] is True
    answers = [m for m in sent if "method" not in m]
    assert len(answers) == 2 and all("result" not in m for m in answers), answers
    assert all(m["error"]["code"] == -32603 and "callback returned" in m["error"]["message"]
               for m in answers), answers


@pytest.mark.parametrize("bad_answer", [
    {"jsonrpc": "2.0", "result": {}, "error": {"code": 1, "message": "both"}},
    {"jsonrpc": "1.0", "result": SAMPLING_ANSWER},
    {"jsonrpc": "2.0"},                 # JSON.stringify of a result that is undefined
], ids=["result-and-error", "wrong-jsonrpc", "no-result"])
def test_a_malformed_response_fails_its_request_and_is_never_answered(spawn, bad_answer):
    """B6/B7 + §10: a response that is not a valid one is never answered (no error reply
    carrying the id of the server's own request); the tool waiting on it fails at once."""
    w = spawn("everything.py")
    initialize(w, capabilities={"sampling": {}})
    rid = send_call(w, "ask_model", {"question": "2+2?"})
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    w.send(dict(bad_answer, id=outbound["id"]))
    response, before = read_until(w, is_response(rid), timeout=3)
    assert before == []                                 # nothing answered the bad response
    assert response["result"]["isError"] is True and "Invalid" in tool_text(response)
    assert ping_ok(w) == []


def test_an_over_long_response_fails_its_request_and_is_never_answered(spawn):
    """The line cap applies to responses too: an over-long answer to a sampling request is
    skipped, the tool gets an isError result saying so, and the client gets no -32600."""
    w = spawn("everything.py", env={"EVERYTHING_MAX_LINE": "1000"})
    initialize(w, capabilities={"sampling": {}})
    rid = send_call(w, "ask_model", {"question": "2+2?"})
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    answer(w, outbound, dict(SAMPLING_ANSWER, content={"type": "text", "text": "4" * 5000}))
    response, before = read_until(w, is_response(rid), timeout=3)
    assert before == []
    assert response["result"]["isError"] is True and "too large" in tool_text(response)
    w.send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "n" * 5000}})
    assert ping_ok(w) == []                             # an over-long notification: no reply


def test_an_over_long_response_is_known_by_its_first_key_whatever_it_holds(spawn):
    """A response whose result holds a "method" key is still a response: its first key
    after "jsonrpc" and "id" is "result". It must fail the request, never be answered."""
    w = spawn("everything.py", env={"EVERYTHING_MAX_LINE": "1000"})
    initialize(w, capabilities={"sampling": {}})
    rid = send_call(w, "ask_model", {"question": "2+2?"})
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    w.send(b'{"jsonrpc":"2.0","id":' + json.dumps(outbound["id"]).encode()
           + b',"result":{"method":"card","pad":"' + b"p" * 5000 + b'"}}\n')
    response, before = read_until(w, is_response(rid), timeout=3)
    assert before == []
    assert response["result"]["isError"] is True and "too large" in tool_text(response)
    assert ping_ok(w) == []


def test_outbound_ids_unique_and_answered_out_of_order(spawn):
    """B4 + the pending table: two concurrent sampling requests get distinct ids; answered in
    reverse order, each tool still gets its own answer."""
    w = spawn("everything.py")
    initialize(w, capabilities={"sampling": {}})
    send_call(w, "ask_model", {"question": "A"}, rid="call-a")
    send_call(w, "ask_model", {"question": "B"}, rid="call-b")
    first, _ = read_until(w, is_request("sampling/createMessage"))
    second, _ = read_until(w, is_request("sampling/createMessage"))
    assert first["id"] != second["id"]
    for request in (second, first):
        question = request["params"]["messages"][0]["content"]["text"]
        answer(w, request, dict(SAMPLING_ANSWER, content={"type": "text", "text": question + "!"}))
    replies = {}
    for _ in range(2):
        message, _ = read_until(w, lambda m: "result" in m and m.get("id") in ("call-a", "call-b"))
        replies[message["id"]] = tool_text(message)
    assert replies == {"call-a": "A!", "call-b": "B!"}
    # a third request never reuses an id (B4)
    send_call(w, "ask_model", {"question": "C"}, rid="call-c")
    third, _ = read_until(w, is_request("sampling/createMessage"))
    assert third["id"] not in (first["id"], second["id"])
    answer(w, third, SAMPLING_ANSWER)
    read_until(w, is_response("call-c"))


def test_outbound_timeout_sends_cancelled_and_is_error(spawn):
    """§4.3: an unanswered sampling request times out (EVERYTHING_TIMEOUT=0.5): the server
    sends notifications/cancelled for its outbound id, then the tool's isError result mentions
    the timeout; an answer arriving later is ignored."""
    w = spawn("everything.py", env={"EVERYTHING_TIMEOUT": "0.5"})
    initialize(w, capabilities={"sampling": {}})
    start = time.monotonic()
    rid = send_call(w, "ask_model", {"question": "slow?"})
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    note, _ = read_until(w, is_notification("notifications/cancelled"), timeout=3)
    assert note["params"]["requestId"] == outbound["id"]
    response, _ = read_until(w, is_response(rid), timeout=3)
    assert 0.4 < time.monotonic() - start < 4.5
    assert response["result"]["isError"] is True
    assert "timeout" in tool_text(response).lower() or "timed out" in tool_text(response).lower()
    answer(w, outbound, SAMPLING_ANSWER)
    w.expect_silence(0.3)
    assert ping_ok(w) == []


def test_outbound_error_reply_is_raised_as_is_error(spawn):
    """§10: the client answers sampling with a JSON-RPC error; the tool sees an exception and
    the call ends as an isError result carrying the client's message."""
    w = spawn("everything.py")
    initialize(w, capabilities={"sampling": {}})
    rid = send_call(w, "ask_model", {"question": "no?"})
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    answer(w, outbound, error={"code": -1, "message": "User rejected sampling request"})
    response, _ = read_until(w, is_response(rid))
    assert response["result"]["isError"] is True
    assert "User rejected sampling request" in tool_text(response)


def test_outbound_error_reply_unit():
    """The same in process: a client callback raising JSONRPCError reaches the tool as a
    JSONRPCError with the client's code and message."""
    srv = server()
    caught = {}

    @srv.tool
    def ask(ctx: Context) -> str:
        try:
            ctx.sample("hi")
        except JSONRPCError as e:
            caught["error"] = (e.code, e.message)
            raise
        return "unreachable"

    def refuse(params):
        raise JSONRPCError(-1, "nope")

    with Client(srv, sampling=refuse, timeout=5) as client:
        result = client.call_tool("ask")
    assert caught["error"] == (-1, "nope")
    assert result["isError"] is True and "nope" in result["content"][0]["text"]


@pytest.mark.parametrize("tool,capability", [("ask_model", "sampling"), ("ask_user", "elicitation"),
                                             ("roots", "roots")])
def test_undeclared_client_capability_is_a_clear_error(spawn, tool, capability):
    """L14/§10: the server MUST NOT send a request whose client capability was not declared;
    the tool gets a clear exception, reported as an isError result naming the capability, and
    nothing is sent to the client."""
    w = spawn("everything.py")
    others = {c: {} for c in ("sampling", "elicitation", "roots") if c != capability}
    initialize(w, capabilities=others)
    arguments = {"question": "q"} if tool == "ask_model" else {}
    rid = send_call(w, tool, arguments)
    response, before = read_until(w, is_response(rid))
    assert before == []
    assert response["result"]["isError"] is True
    assert capability in tool_text(response)


def test_no_outbound_request_before_initialized(spawn):
    """L12: before notifications/initialized the server sends no requests (other than ping):
    ctx.sample raises, naming notifications/initialized; nothing reaches the client."""
    w = spawn("everything.py")
    initialize(w, capabilities={"sampling": {}}, initialized=False)
    rid = send_call(w, "ask_model", {"question": "early"})
    response, before = read_until(w, is_response(rid))
    assert before == []
    assert response["result"]["isError"] is True
    assert "initialized" in tool_text(response)
    w.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    rid = send_call(w, "ask_model", {"question": "now"})
    outbound, _ = read_until(w, is_request("sampling/createMessage"))
    answer(w, outbound, SAMPLING_ANSWER)
    assert tool_text(read_until(w, is_response(rid))[0]) == "4"


PINGING_SERVER = """
import sys
sys.path.insert(0, {root!r})
from mcp_min import Context, Server
server = Server("pinging")

@server.tool
def pong(ctx: Context) -> str:
    return repr(ctx.request("ping"))

server.run()
"""


def test_ping_to_the_client_is_allowed_before_initialized(spawn, tmp_path):
    """L12: "other than pings": a ping may go to the client between the initialize response
    and notifications/initialized, and its answer reaches the tool."""
    script = tmp_path / "pinging.py"
    script.write_text(PINGING_SERVER.format(root=str(ROOT)))
    w = spawn(str(script))
    initialize(w, initialized=False)
    rid = send_call(w, "pong")
    outbound, before = read_until(w, lambda m: is_request("ping")(m) or is_response(rid)(m))
    assert before == [] and outbound.get("method") == "ping", outbound
    answer(w, outbound, {})
    response, _ = read_until(w, is_response(rid))
    assert response["result"]["isError"] is False and tool_text(response) == "{}", response


@pytest.mark.parametrize("version,mode", [(V2025_11, "form"), (V2025_06, None)])
def test_elicitation_form_mode_field_by_version(spawn, version, mode):
    """§10 elicitation/create: `mode: "form"` exists only in 2025-11-25; a 2025-06-18 client
    gets message + requestedSchema without `mode`. The accepted content reaches the tool."""
    w = spawn("everything.py")
    initialize(w, version, capabilities={"elicitation": {}})
    rid = send_call(w, "ask_user")
    outbound, _ = read_until(w, is_request("elicitation/create"))
    params = outbound["params"]
    assert params.get("mode") == mode and (("mode" in params) is (mode is not None))
    assert params["message"] == "Your name?"
    assert params["requestedSchema"]["properties"] == {"name": {"type": "string"}}
    answer(w, outbound, {"action": "accept", "content": {"name": "Bob"}})
    response, _ = read_until(w, is_response(rid))
    assert response["result"]["isError"] is False
    assert json.loads(tool_text(response)) == {"action": "accept", "content": {"name": "Bob"}}


def test_elicitation_url_mode(spawn):
    """§5.2/§10: URL mode only where the client declared elicitation.url: mode "url", the
    url, a message and an elicitationId."""
    w = spawn("live_protocol.py")
    initialize(w, capabilities={"elicitation": {"url": {}, "form": {}}})
    rid = send_call(w, "elicit_url", {"url": "https://example.com/login"})
    outbound, _ = read_until(w, is_request("elicitation/create"))
    params = outbound["params"]
    assert params["mode"] == "url" and params["url"] == "https://example.com/login"
    assert params["message"] == "Please sign in"
    assert isinstance(params["elicitationId"], str) and params["elicitationId"]
    answer(w, outbound, {"action": "accept"})
    assert json.loads(tool_text(read_until(w, is_response(rid))[0])) == {"action": "accept"}


@pytest.mark.parametrize("declared,tool,needle", [({}, "elicit_url", "url"),
                                                  ({"form": {}}, "elicit_url", "url"),
                                                  ({"url": {}}, "elicit_form", "form")])
def test_elicitation_mode_not_declared(spawn, declared, tool, needle):
    """§5.2: "The server MUST NOT use a mode the client did not declare" (`{}` means form
    only): a clear isError, nothing sent."""
    w = spawn("live_protocol.py")
    initialize(w, capabilities={"elicitation": declared})
    arguments = {"url": "https://example.com"} if tool == "elicit_url" else {}
    rid = send_call(w, tool, arguments)
    response, before = read_until(w, is_response(rid))
    assert before == []
    assert response["result"]["isError"] is True and needle in tool_text(response)


def test_roots_cached_until_list_changed(spawn):
    """§10 roots/list + §9 notifications/roots/list_changed: the first list_roots asks the
    client, the next is served from the cache, list_changed invalidates it."""
    w = spawn("everything.py")
    initialize(w, capabilities={"roots": {"listChanged": True}})
    first = [{"uri": "file:///one", "name": "one"}]
    rid = send_call(w, "roots")
    outbound, _ = read_until(w, is_request("roots/list"))
    answer(w, outbound, {"roots": first})
    response, _ = read_until(w, is_response(rid))
    assert json.loads(tool_text(response)) == first
    rid = send_call(w, "roots")
    response, before = read_until(w, is_response(rid))
    assert before == [] and json.loads(tool_text(response)) == first
    w.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    second = [{"uri": "file:///two"}]
    rid = send_call(w, "roots")
    again, _ = read_until(w, is_request("roots/list"))
    assert again["id"] != outbound["id"]
    answer(w, again, {"roots": second})
    assert json.loads(tool_text(read_until(w, is_response(rid))[0])) == second


def test_roots_list_changed_while_roots_list_pending(spawn):
    """§9 notifications/roots/list_changed: a change announced while the server's roots/list
    is still unanswered must not be lost: the next list_roots() asks the client again."""
    w = spawn("everything.py")
    initialize(w, capabilities={"roots": {"listChanged": True}})
    rid = send_call(w, "roots")
    outbound, _ = read_until(w, is_request("roots/list"))
    w.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    assert ping_ok(w) == []                    # the notification has been read
    answer(w, outbound, {"roots": [{"uri": "file:///old"}]})
    assert json.loads(tool_text(read_until(w, is_response(rid))[0])) == [{"uri": "file:///old"}]
    rid = send_call(w, "roots")
    first, _ = read_until(w, lambda m: is_request("roots/list")(m) or is_response(rid)(m))
    assert is_request("roots/list")(first), f"served stale roots from the cache: {first}"
    answer(w, first, {"roots": [{"uri": "file:///new"}]})
    assert json.loads(tool_text(read_until(w, is_response(rid))[0])) == [{"uri": "file:///new"}]


def test_roots_changed_hook_and_refetch_unit():
    """notifications/roots/list_changed calls Server.roots_changed(session) and the next
    ctx.list_roots() asks the client again."""
    hooked = []

    class Hooked(Server):
        def roots_changed(self, session):
            hooked.append(session)

    srv = Hooked("unit", grace_period=1.0)
    asked = []

    @srv.tool
    def where(ctx: Context) -> list:
        return [r["uri"] for r in ctx.list_roots()]

    def roots():
        asked.append(1)
        return [{"uri": f"file:///r{len(asked)}"}]

    with Client(srv, roots=roots, timeout=5) as client:
        assert client.call_tool("where")["content"][0]["text"] == '["file:///r1"]'
        assert client.call_tool("where")["content"][0]["text"] == '["file:///r1"]'
        assert len(asked) == 1
        client.notify("notifications/roots/list_changed")
        assert client.ping() == {}                 # the notification has been handled
        assert len(hooked) == 1 and isinstance(hooked[0], mcp_min.Session)
        assert client.call_tool("where")["content"][0]["text"] == '["file:///r2"]'
        assert len(asked) == 2


def test_sample_elicit_unit():
    """ctx.sample and ctx.elicit through the in-process Client callbacks: the request params
    the client sees, and the results the tool gets."""
    srv = server()
    seen = {}

    @srv.tool
    def both(ctx: Context) -> dict:
        reply = ctx.sample([{"role": "user", "content": "hi"}], max_tokens=7, system_prompt="be brief",
                           temperature=0.1)
        form = ctx.elicit("Age?", {"type": "object", "properties": {"age": {"type": "integer"}}})
        return {"model": reply["model"], "form": form}

    def sampling(params):
        seen["sampling"] = params
        return SAMPLING_ANSWER

    def elicitation(params):
        seen["elicitation"] = params
        return {"action": "decline"}

    with Client(srv, sampling=sampling, elicitation=elicitation, timeout=5) as client:
        result = client.call_tool("both")
    assert result["structuredContent"] == {"model": "test-model", "form": {"action": "decline"}}
    assert seen["sampling"]["messages"] == [{"role": "user", "content": {"type": "text", "text": "hi"}}]
    assert seen["sampling"]["maxTokens"] == 7 and seen["sampling"]["systemPrompt"] == "be brief"
    assert seen["sampling"]["temperature"] == 0.1
    assert seen["elicitation"]["mode"] == "form" and seen["elicitation"]["message"] == "Age?"



@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_sample_with_one_message_dict_or_content_block_sends_that_one_message(era):
    """ctx.sample(message) with one {"role", "content"} dict, or one content block, asks about
    that message: not about its keys, each sent as a user turn of its own."""
    srv = server()
    seen = []

    @srv.tool
    def ask(what: str, ctx: Context) -> str:
        one = {"role": "user", "content": "2+2?"}
        return ctx.sample(one if what == "turn" else mcp_min.text("2+2?"))["model"]

    with Client(srv, era=era, sampling=lambda params: seen.append(params["messages"])
                or SAMPLING_ANSWER, timeout=5) as client:
        models = [client.call_tool("ask", {"what": what})["content"][0]["text"]
                  for what in ("turn", "block")]
    assert models == ["test-model", "test-model"]
    assert seen == [[{"role": "user", "content": {"type": "text", "text": "2+2?"}}]] * 2

# ==========================================================================================
# Lifespan shutdown ordering (§3 T8/T9, pain point #5)
# ==========================================================================================

def _start_slow_call(spawn, ms=400):
    w = spawn("live_protocol.py")
    initialize(w)
    rid = send_call(w, "slow", {"ms": ms}, rid="inflight")
    started, _ = read_until(w, is_notification("notifications/message"))
    assert started["params"]["data"] == "started"
    return w, rid


def _check_drained_then_stopped(w, rid):
    response, before = read_until(w, is_response(rid), timeout=5)
    assert tool_text(response) == "slow done"
    assert not any(m.get("params", {}).get("data") == "lifespan: stop" for m in before), \
        "the lifespan shutdown half ran before the in-flight reply was written"
    stop, _ = read_until(w, lambda m: m.get("params", {}).get("data") == "lifespan: stop")
    assert stop["params"]["logger"] == "lifespan"
    code = w.wait(5)
    assert w.stderr.count("live lifespan: start") == 1
    assert w.stderr.count("live lifespan: stop") == 1
    assert "Traceback" not in w.stderr, w.stderr
    return code


def test_lifespan_shutdown_after_in_flight_reply_on_eof(spawn):
    """T9 + lifespan: on stdin EOF the in-flight call finishes and its reply is written, then
    the shutdown half runs (its mark is the next line on the wire), then exit 0."""
    w, rid = _start_slow_call(spawn)
    w.close_stdin()
    assert _check_drained_then_stopped(w, rid) == 0


def test_lifespan_shutdown_after_in_flight_reply_on_sigterm(spawn):
    """T8 + lifespan: SIGTERM stops reading, drains the in-flight call (reply written), then
    runs the shutdown half, then exits cleanly."""
    w, rid = _start_slow_call(spawn)
    w.proc.send_signal(signal.SIGTERM)
    assert _check_drained_then_stopped(w, rid) == 0


def test_lifespan_shutdown_after_in_flight_reply_on_ctrl_c(spawn):
    """Pain point #5: the first Ctrl+C (SIGINT) drains the in-flight call, runs the shutdown
    half and exits (not killed by the signal, no traceback)."""
    w, rid = _start_slow_call(spawn)
    w.proc.send_signal(signal.SIGINT)
    code = _check_drained_then_stopped(w, rid)
    assert code >= 0, "killed by the signal instead of shutting down"


def test_eof_with_an_outbound_request_pending_ends_promptly(spawn):
    """T9 + §10: at stdin EOF no answer can come back; a tool waiting on sampling fails at
    once (its isError reply is still written) and the server exits without waiting for the
    request timeout (60 s here)."""
    w = spawn("everything.py")
    initialize(w, capabilities={"sampling": {}})
    rid = send_call(w, "ask_model", {"question": "anyone?"})
    read_until(w, is_request("sampling/createMessage"))
    start = time.monotonic()
    w.close_stdin()
    response, _ = read_until(w, is_response(rid), timeout=5)
    assert response["result"]["isError"] is True
    assert w.wait(5) == 0
    assert time.monotonic() - start < 4.5


def test_everything_lifespan_runs_once(spawn):
    """The lifespan is entered once per process however many calls come, and its shutdown
    half runs at EOF."""
    w = spawn("everything.py")
    initialize(w)
    for _ in range(3):
        rid = send_call(w, "lifespan_value")
        assert tool_text(read_until(w, is_response(rid))[0]) == "true"
    w.close_stdin()
    assert w.wait(5) == 0
    assert w.stderr.count("lifespan: start") == 1 and w.stderr.count("lifespan: stop") == 1
    assert w.stderr.index("lifespan: start") < w.stderr.index("lifespan: stop")


# ==========================================================================================
# The peers under stress: odd failures never hang a request or stop a reader
# ==========================================================================================

def test_a_tool_raising_cancelled_uncancelled_still_gets_a_reply():
    """§9: only a request the client cancelled goes unanswered; Cancelled raised for any
    other reason is an error reply, not silence."""
    srv = server()

    @srv.tool
    def gives_up() -> str:
        raise Cancelled("nobody asked")

    with Client(srv, timeout=5) as client:
        with pytest.raises(JSONRPCError) as caught:
            client.call_tool("gives_up")
        assert caught.value.code == -32603 and "nobody asked" in caught.value.message


def test_an_outbound_request_that_cannot_be_encoded_leaves_nothing_pending():
    peer = mcp_min.Peer()
    with pytest.raises(TypeError):
        peer.request("sampling/createMessage", {"bad": object()}, timeout=1)
    assert peer.pending == {}


def test_after_end_of_input_an_outbound_request_fails_at_once():
    """No response can arrive once the input has ended: don't wait for the timeout."""
    read_fd, write_fd = __import__("os").pipe()
    try:
        peer = mcp_min.Peer(mcp_min.Writer(write_fd))
        peer.fail_pending(ConnectionError("gone"))
        start = time.monotonic()
        with pytest.raises(ConnectionError):
            peer.request("roots/list", timeout=30)
        assert time.monotonic() - start < 1 and peer.pending == {}
    finally:
        __import__("os").close(read_fd)
        __import__("os").close(write_fd)


def test_a_failing_notification_callback_does_not_stop_the_client():
    srv = server()

    @srv.tool
    def chat(ctx: Context) -> str:
        ctx.info("hello")
        return "done"

    def explode(message):
        raise RuntimeError("callback bug")

    with Client(srv, timeout=5, on_notification=explode) as client:
        assert client.call_tool("chat")["content"][0]["text"] == "done"
        assert client.call_tool("chat")["content"][0]["text"] == "done"     # still reading
        assert [n["params"]["data"] for n in client.notifications] == ["hello", "hello"]


def test_no_cancelled_for_a_request_answered_as_it_times_out(monkeypatch):
    """§4.3: the server's sampling request times out at the moment its answer is filed: the
    tool gets the answer, and no notifications/cancelled follows the answer."""
    class TimesOutAsAnswered(mcp_min._Pending):
        def __init__(self, owner):
            super().__init__(owner)
            if owner is not None:             # the server's request (the client's have none)
                wait = self.done.wait         # a wait with a timeout ends with the answer,
                self.done.wait = lambda timeout=None: wait() and timeout is None    # "late"
    monkeypatch.setattr(mcp_min, "_Pending", TimesOutAsAnswered)
    srv = server()

    @srv.tool
    def ask(ctx: Context) -> str:
        return ctx.sample("2+2?")["content"]["text"]
    frames = []
    with Client(srv, timeout=5, sampling=lambda params: SAMPLING_ANSWER,
                trace=lambda direction, raw: frames.append((direction, json.loads(raw)))) as client:
        assert client.call_tool("ask")["content"][0]["text"] == "4"
        assert client.ping() == {}
    assert not [m for d, m in frames if m.get("method") == "notifications/cancelled"], frames


def test_the_client_does_not_answer_a_request_the_server_cancelled():
    """§9 the other way round: the server times out its sampling request and cancels it; the
    client's answer, ready later, is not sent."""
    srv = server(request_timeout=0.2)

    @srv.tool
    def ask(ctx: Context) -> str:
        return ctx.sample("slow?")["content"]["text"]

    frames = []

    def sampling(params):
        time.sleep(0.6)
        return SAMPLING_ANSWER

    with Client(srv, timeout=5, sampling=sampling,
                trace=lambda direction, raw: frames.append((direction, json.loads(raw)))) as client:
        result = client.call_tool("ask")
        assert result["isError"] is True
        time.sleep(0.8)                                  # the callback has returned by now
        [outbound] = [m for d, m in frames if d == "in" and m.get("method") == "sampling/createMessage"]
        assert {"requestId": outbound["id"]}.items() <= next(
            m["params"].items() for d, m in frames if d == "in" and m.get("method") == "notifications/cancelled")
        assert not any(d == "out" and "method" not in m and m.get("id") == outbound["id"]
                       for d, m in frames)


def test_the_client_leaves_the_callers_capabilities_alone():
    capabilities = {"roots": {}}
    with Client(server(), capabilities=capabilities, roots=lambda: []) as client:
        assert client.capabilities is capabilities
    assert capabilities == {"roots": {}}


@pytest.fixture
def started(monkeypatch):
    """The processes subprocess.Popen starts during the test."""
    import subprocess
    processes, real_popen = [], subprocess.Popen

    def popen(*args, **kwargs):
        processes.append(real_popen(*args, **kwargs))
        return processes[-1]
    monkeypatch.setattr(subprocess, "Popen", popen)
    return processes


def test_a_client_whose_handshake_fails_stops_its_server(started):
    silent = [__import__("sys").executable, "-c", "import sys; sys.stdin.read()"]
    with pytest.raises(TimeoutError):
        Client(silent, timeout=0.3)
    assert started[0].wait(5) == 0                       # its stdin was closed: it ended


def test_a_failed_handshake_raises_its_own_error_even_if_the_server_ignores_sigterm(started):
    """close() escalates to SIGKILL; the caller still gets the TimeoutError of the handshake."""
    stubborn = [__import__("sys").executable, "-c", "import signal, time; "
                "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"]
    with pytest.raises(TimeoutError):
        Client(stubborn, timeout=0.3)
    assert started[0].poll() is not None                  # killed, not left behind


def test_worker_pool_survives_a_thread_that_cannot_start(monkeypatch):
    done = threading.Event()
    pool = mcp_min.WorkerPool(max_workers=4, max_queue=4)

    def refuse(*args):
        raise RuntimeError("can't start new thread")
    real_start = mcp_min._thread.start_new_thread
    monkeypatch.setattr(mcp_min._thread, "start_new_thread", refuse)
    assert pool.submit(done.set) is False                 # no worker at all: refused
    assert (pool.threads, pool.outstanding) == (0, 0)
    monkeypatch.setattr(mcp_min._thread, "start_new_thread", real_start)
    gate = threading.Event()
    assert pool.submit(gate.wait, 5)                      # one real worker, busy
    monkeypatch.setattr(mcp_min._thread, "start_new_thread", refuse)
    assert pool.submit(done.set)                          # queued for the worker we have
    gate.set()
    assert done.wait(5)


def test_elicitation_needs_protocol_2025_06_18():
    srv = server()

    @srv.tool
    def ask(ctx: Context) -> str:
        return ctx.elicit("name?")["action"]

    with Client(srv, timeout=5, protocol_version=V2025_03,
                elicitation=lambda params: {"action": "accept", "content": {}}) as client:
        result = client.call_tool("ask")
        assert result["isError"] is True and "2025-06-18" in result["content"][0]["text"]


def test_sampling_with_tools_needs_protocol_2025_11_25():
    srv = server()

    @srv.tool
    def ask(ctx: Context) -> str:
        return ctx.sample("hi", tools=[{"name": "t", "inputSchema": {"type": "object"}}])["model"]

    for version, ok in ((V2025_06, False), (V2025_11, True)):
        with Client(srv, timeout=5, protocol_version=version,
                    capabilities={"sampling": {"tools": {}}},
                    sampling=lambda params: SAMPLING_ANSWER) as client:
            result = client.call_tool("ask")
            assert result["isError"] is not ok, result


def test_frame_printer_forgets_requests_never_answered():
    import io
    printer = mcp_min.FramePrinter({"in": "<", "out": ">"}, io.StringIO(), colour=False)
    for i in range(5000):
        printer("out", json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode())
    assert len(printer.methods) <= 4096
    printer("in", b'{"jsonrpc":"2.0","id":4999,"result":{}}')
    assert "response 4999 ping" in printer.stream.getvalue()


# ============================================================================================
# Elicitation forms: checked before they are sent, and the answer against them
# ============================================================================================

def test_an_elicitation_form_must_be_flat_and_the_answer_must_fit_it():
    from mcp_min import Client, Context, Server
    server = Server("forms")
    form = {"type": "object", "properties": {"age": {"type": "integer"},
                                             "tags": {"type": "array", "items": {
                                                 "type": "string", "enum": ["a", "b"]}}},
            "required": ["age"]}

    @server.tool
    def ask(shape: str, ctx: Context) -> dict:
        if shape == "nested":
            return ctx.elicit("?", {"type": "object", "properties": {
                "address": {"type": "object", "properties": {}}}})
        return ctx.elicit("How old?", form)

    answers = iter([{"action": "accept", "content": {"age": 7, "tags": ["a"]}},
                    {"action": "accept", "content": {"age": "seven"}}])
    for era in ("legacy", "2026-07-28"):
        with Client(server, era=era, elicitation=lambda params: next(answers)) as client:
            nested = client.call_tool("ask", {"shape": "nested"})
            assert nested["isError"] is True
            assert "property 'address'" in nested["content"][0]["text"]
            if era == "legacy":
                assert client.call_tool("ask", {"shape": "flat"})["structuredContent"] == {
                    "action": "accept", "content": {"age": 7, "tags": ["a"]}}
                wrong = client.call_tool("ask", {"shape": "flat"})
                assert wrong["isError"] is True
                assert "does not fit the form" in wrong["content"][0]["text"]
                assert "age: expected integer" in wrong["content"][0]["text"]


def test_answers_sent_before_the_question_are_taken_and_checked():
    server = Server("early")

    @server.tool
    def hello(ctx: Context) -> str:
        answer = ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}},
                            key="user_name")
        return "Hello, " + answer["content"]["name"]
    with Client(server, era=mcp_min.V2026_07, elicitation=lambda p: {"action": "decline"}) as c:
        meta = {"_meta": {**c.envelope(), "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {}}}}
        result = c.request("tools/call", {"name": "hello", "arguments": {}, **meta,
                                          "inputResponses": {"user_name": {
                                              "action": "accept", "content": {"name": "Ann"}},
                                              "unexpected": {"x": 1}}})
        assert result["content"][0]["text"] == "Hello, Ann"
        with pytest.raises(mcp_min.JSONRPCError) as wrong:
            c.request("tools/call", {"name": "hello", "arguments": {}, **meta,
                                     "inputResponses": {"user_name": {
                                         "action": "accept", "content": {"name": 5}}}})
        assert wrong.value.code == -32602 and "does not fit the form" in wrong.value.message


def test_handshake_answers_of_the_wrong_shape_are_a_clear_error():
    """As in 2026-07-28, where such an answer is -32602: never handed to the tool as if it
    were one, nor an AttributeError from inside mcp_min."""
    server = Server("shapes")

    @server.tool
    def model(ctx: Context) -> dict:
        return ctx.sample("hi")

    @server.tool
    def ask(ctx: Context) -> dict:
        return ctx.elicit("ok?")

    @server.tool
    def roots(ctx: Context) -> list:
        return ctx.list_roots()
    with Client(server, sampling=lambda p: {}, elicitation=lambda p: {"action": "maybe"},
                roots=lambda: "not a list") as client:
        texts = [client.call_tool(name)["content"][0]["text"] for name in ("model", "ask", "roots")]
    assert texts == [
        "InvalidAnswer: The client's answer is not a result of sampling/createMessage (it "
        "needs 'content')",
        'InvalidAnswer: The client\'s answer has the action "maybe": it must be "accept", '
        '"decline" or "cancel"',
        "InvalidAnswer: The client's answer is not a result of roots/list (it needs 'roots')"]


def test_a_2026_07_28_request_asks_only_what_that_era_can_carry():
    """inputRequests hold elicitation, sampling or roots requests, and only those the
    client declared: a raw ctx.request() is held to both, and a capability declared as null
    is no capability."""
    server = Server("raw")

    @server.tool
    def raw(method: str, ctx: Context) -> dict:
        return ctx.request(method, {"messages": [], "maxTokens": 1})

    @server.tool
    def with_tools(ctx: Context) -> dict:
        return ctx.sample("hi", tools=[{"name": "t", "inputSchema": {"type": "object"}}])
    with Client(server, era=mcp_min.V2026_07, capabilities={"sampling": None}) as client:
        ping = client.call_tool("raw", {"method": "ping"})
        assert ping["isError"] is True and ping["content"][0]["text"] == (
            "ValueError: ping cannot be sent to a 2026-07-28 client: a server asks it only "
            "for elicitation, sampling or roots")
        for name, arguments in (("raw", {"method": "sampling/createMessage"}), ("with_tools", {})):
            with pytest.raises(JSONRPCError) as info:
                client.call_tool(name, arguments)
            assert info.value.code == -32021, info.value.message
            assert "sampling" in info.value.data["requiredCapabilities"]


def test_answers_too_deep_to_carry_in_request_state_are_32602():
    import types
    server = Server("deep")
    deep = []
    for _ in range(100_000):            # past the limit of every CPython's C encoder (3.13: 10k)
        deep = [deep]
    ctx = types.SimpleNamespace(method="tools/call", params={"name": "t"}, principal=None,
                                answers={"earlier": ["digest", {"roots": deep}]})
    asked = mcp_min.InputRequired({"roots-2": ({"method": "roots/list"}, "digest2")})
    with pytest.raises(JSONRPCError) as info:
        server.input_required(ctx, asked)
    assert info.value.code == -32602
    assert info.value.message == ("Invalid params: the answers in inputResponses are nested "
                                  "too deeply to carry")


def test_handshake_prompt_needing_a_capability_is_a_clear_error():
    server = Server("caps")

    @server.prompt
    def needs_roots(ctx: Context) -> str:
        return str(ctx.list_roots())
    with Client(server, era="legacy") as client:
        with pytest.raises(mcp_min.JSONRPCError) as error:
            client.get_prompt("needs_roots")
        assert error.value.code == -32600 and "roots" in error.value.message
        assert error.value.data == {"requiredCapabilities": {"roots": {}}}


def test_a_server_shutting_down_tells_the_client_why_its_questions_are_withdrawn():
    """A call cancelled by the server (stopping) withdraws the questions it asked with the
    server's reason; one the client cancelled says the client did."""
    sent = []

    class Recorder(mcp_min.Stream):
        def send(self, frame):
            sent.append(json.loads(frame))
            return True

        def respond(self, frame, before=None):
            pass

    session = mcp_min.Session(mcp_min.Server("t"), Recorder())
    for rid, question in ((7, "q7"), (8, "q8")):
        ctx = mcp_min.Context(session, rid, "tools/call", {}, session.stream)
        session.running[rid] = ctx
        session.pending[question] = mcp_min._Pending(ctx)
    session.cancel(7, "the server is shutting down", stopping=True)
    session.cancel(8, "no longer needed")
    assert [message["params"] for message in sent] == [
        {"requestId": "q7", "reason": "the server is shutting down"},
        {"requestId": "q8", "reason": "request 8 was cancelled by the client"}]
    assert {message["method"] for message in sent} == {"notifications/cancelled"}


def test_former_names_still_work():
    """Renamed public names keep their old spelling (docs/reference.md lists them)."""
    assert mcp_min.Outlet is mcp_min.Stream
    assert mcp_min.MODERN_PROTOCOL_VERSIONS == mcp_min.STATELESS_PROTOCOL_VERSIONS
    sent = []

    class Recorder(mcp_min.Stream):
        def respond(self, frame, before=None):
            if frame is not None:
                sent.append(json.loads(frame))

    session = mcp_min.Session(mcp_min.Server("t"), Recorder())
    session.handle_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert sent == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    ctx = mcp_min.Context(session, 2, "tools/call", {}, session.stream)
    assert ctx.outlet is ctx.stream is session.stream
