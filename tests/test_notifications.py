"""The live protocol, part 2: list_changed notifications while serving, resource
subscriptions, completion/complete, and list changes during pagination.

Rule IDs refer to /work/shared/spec-checklist.md (§5.1 capabilities, §7 methods, §8 P*,
§9 notifications)."""

from __future__ import annotations

import json
import threading
import time

import pytest

import mcp_min
from mcp_min import Client, JSONRPCError, Server

from test_context import (gather, initialize, is_notification, is_response, read_until,
                          send_call, send_request, tool_text)

V2024_11, V2025_03, V2025_06, V2025_11 = mcp_min.PROTOCOL_VERSIONS


def server(**options):
    options.setdefault("grace_period", 1.0)
    return Server("unit", "0", **options)


def listed(wire, method, key, field):
    return [item[field] for item in wire.result(method)[key]]


# ==========================================================================================
# list_changed (§5.1 listChanged, §9)
# ==========================================================================================

def test_list_changed_capabilities_declared(spawn):
    """§5.1: a server that sends list_changed declares listChanged for tools, resources and
    prompts, and resources.subscribe for resources/subscribe."""
    w = spawn("live_protocol.py")
    caps = initialize(w)["capabilities"]
    assert caps["tools"]["listChanged"] is True
    assert caps["prompts"]["listChanged"] is True
    assert caps["resources"]["listChanged"] is True
    assert caps["resources"]["subscribe"] is True


KINDS = [("tool", "tools", "tools/list", "tools", "name", "extra_tool"),
         ("resource", "resources", "resources/list", "resources", "uri", "test://live/new"),
         ("prompt", "prompts", "prompts/list", "prompts", "name", "extra_prompt")]


@pytest.mark.parametrize("kind,plural,method,key,field,name", KINDS)
def test_add_and_remove_while_serving_sends_list_changed(spawn, kind, plural, method, key, field,
                                                         name):
    """§9: adding (server.tool / server.resource / server.prompt) and removing (remove_tool /
    remove_resource / remove_prompt) while serving sends notifications/<kind>/list_changed
    (here before the reply of the call that made the change); the list reflects it."""
    w = spawn("live_protocol.py")
    initialize(w)
    assert name not in listed(w, method, key, field)
    rid = send_call(w, "mutate", {"action": f"add_{kind}", "name": name})
    response, before = read_until(w, is_response(rid))
    assert tool_text(response) == "ok"
    changed = [m for m in before if is_notification(f"notifications/{plural}/list_changed")(m)]
    assert len(changed) == 1 and changed[0].get("params") in (None, {})
    assert not [m for m in before if m.get("method", "").endswith("list_changed")
                and m["method"] != f"notifications/{plural}/list_changed"]
    assert name in listed(w, method, key, field)
    rid = send_call(w, "mutate", {"action": f"remove_{kind}", "name": name})
    response, before = read_until(w, is_response(rid))
    assert tool_text(response) == "ok"
    assert len([m for m in before if is_notification(f"notifications/{plural}/list_changed")(m)]) == 1
    assert name not in listed(w, method, key, field)


def test_added_tool_is_callable_and_removed_tool_is_unknown(spawn):
    """A tool added while serving can be called at once; once removed it is an unknown tool
    (-32602, §13.2)."""
    w = spawn("live_protocol.py")
    initialize(w)
    rid = send_call(w, "mutate", {"action": "add_tool", "name": "fresh"})
    read_until(w, is_response(rid))
    rid = send_call(w, "fresh")
    assert tool_text(read_until(w, is_response(rid))[0]) == "extra!"
    rid = send_call(w, "mutate", {"action": "remove_tool", "name": "fresh"})
    read_until(w, is_response(rid))
    rid = send_call(w, "fresh")
    response, _ = read_until(w, is_response(rid))
    assert response["error"]["code"] == -32602


def test_remove_unknown_raises_keyerror():
    """remove_tool / remove_resource / remove_prompt of something not registered is an error
    (KeyError), and sends nothing."""
    srv = server()
    for remove, key in ((srv.remove_tool, "nope"), (srv.remove_resource, "test://nope"),
                        (srv.remove_prompt, "nope")):
        with pytest.raises(KeyError):
            remove(key)


def test_no_list_changed_before_initialize_on_the_wire(spawn):
    """L15/§9: a tool registered (by a background thread) before the client initialized
    sends no list_changed; the client sees the tool in tools/list."""
    w = spawn("live_protocol.py", env={"LIVE_ADD_AT_START": "1"})
    deadline = time.monotonic() + 10
    while "early tool added" not in w.stderr and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "early tool added" in w.stderr, w.stderr
    w.expect_silence(0.2)
    initialize(w)
    rid = send_request(w, "tools/list")
    response, before = read_until(w, is_response(rid))
    assert "early" in [t["name"] for t in response["result"]["tools"]]
    assert before == []
    w.expect_silence(0.2)


def test_no_list_changed_before_initialize_in_process():
    """L15/§9: registration while a connection is open but not yet initialized sends
    nothing; after initialize the change is visible in the list, with no stale notification."""
    srv = server()

    @srv.tool
    def first() -> str:
        return "1"

    client = Client(srv, timeout=5, initialize=False)
    try:
        time.sleep(0.05)
        srv.tool(lambda: "2", name="second")
        time.sleep(0.05)
        assert client.notifications == []
        client.initialize()
        assert [t["name"] for t in client.list_tools()] == ["first", "second"]
        assert client.notifications == []
        srv.tool(lambda: "3", name="third")
        deadline = time.monotonic() + 2
        while not client.notifications and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [n["method"] for n in client.notifications] == ["notifications/tools/list_changed"]
    finally:
        client.close()


def test_nothing_for_the_session_before_its_initialize_response_on_the_wire(spawn):
    """L15: a tool registered and a log line sent (by another thread) while initialize is
    answered, before its response is written, send nothing ahead of the response; the
    client's tools/list shows the tool."""
    w = spawn("live_protocol.py", env={"LIVE_ADD_IN_INIT": "1"})
    rid = send_request(w, "initialize", {"protocolVersion": V2025_11, "capabilities": {},
                                         "clientInfo": {"name": "pytest", "version": "1"}})
    _, before = read_until(w, is_response(rid))
    assert before == []
    w.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert "gap" in [t["name"] for t in w.result("tools/list")["tools"]]
    assert w.notifications == []
    w.expect_silence(0.2)


def test_nothing_for_the_session_before_its_initialize_response():
    """L15: a change (and a log line) another thread makes while initialize is answered,
    after its capabilities were worked out but before the response is written, sends no
    notification ahead of the response; the client's tools/list shows the change, and later
    changes are notified."""
    srv = server()

    @srv.tool
    def first() -> str:
        return "1"
    real = srv.handlers["initialize"]

    def initialize(ctx, params):              # widens the gap before the response is written
        result = real(ctx, params)
        other = threading.Thread(target=lambda: (
            srv.tool(lambda: "2", name="second"), srv.remove_tool("first"),
            ctx.session.log("emergency", "in the gap")))
        other.start()
        other.join()
        return result
    srv.handlers["initialize"] = initialize
    frames = []
    with Client(srv, timeout=5, trace=lambda way, raw: frames.append((way, json.loads(raw)))
                ) as client:
        assert [t["name"] for t in client.list_tools()] == ["second"]
        incoming = [message for way, message in frames if way == "in"]
        assert incoming[0].get("id") == 1 and "result" in incoming[0], incoming
        srv.tool(lambda: "3", name="third")
        assert client.ping() == {}
        deadline = time.monotonic() + 2
        while not client.notifications and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [n["method"] for n in client.notifications] == ["notifications/tools/list_changed"]


def test_a_change_once_the_initialize_response_is_written_is_notified(monkeypatch):
    """§9: a tool registered once the client has the initialize response, while the server
    has not yet moved on from writing it, is notified: the session listens from the moment
    that response is written."""
    proceed, send_frame = threading.Event(), mcp_min.Session.send_frame

    def send_then_pause(self, frame):
        sent = send_frame(self, frame)
        if b'"protocolVersion"' in frame:     # the initialize response: out, and the server
            proceed.wait(0.5)                 # stays right after writing it for a while
        return sent
    monkeypatch.setattr(mcp_min.Session, "send_frame", send_then_pause)
    srv = server()

    @srv.tool
    def first() -> str:
        return "1"
    with Client(srv, timeout=5) as client:
        srv.tool(lambda: "2", name="second")
        proceed.set()
        assert client.ping() == {}
        deadline = time.monotonic() + 2
        while not client.notifications and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [n["method"] for n in client.notifications] == ["notifications/tools/list_changed"]


def test_no_list_changed_without_the_capability():
    """§5.1/L14: a server that declared no `tools` capability (none registered at
    initialize) sends no tools/list_changed when a tool appears later."""
    srv = server()

    @srv.prompt
    def only() -> str:
        return "p"

    with Client(srv, timeout=5) as client:
        assert "tools" not in client.server_capabilities
        srv.tool(lambda: "late", name="late")
        srv.prompt(lambda: "q", name="another")
        time.sleep(0.1)
        assert [n["method"] for n in client.notifications] == ["notifications/prompts/list_changed"]


# ==========================================================================================
# resources/subscribe, resources/unsubscribe, notifications/resources/updated (§7, §9)
# ==========================================================================================

def updates(messages):
    return [m["params"]["uri"] for m in messages
            if is_notification("notifications/resources/updated")(m)]


def test_resource_updated_only_for_subscribed_uri(spawn):
    """§7/§9: after resources/subscribe (result {}), notify_resource_updated(uri) sends
    notifications/resources/updated {uri} for that uri only; after unsubscribe, nothing."""
    w = spawn("live_protocol.py")
    initialize(w)
    assert w.result("resources/subscribe", {"uri": "test://live/a"}) == {}
    rid = send_call(w, "touch", {"uri": "test://live/a"})
    _, before = read_until(w, is_response(rid))
    assert updates(before) == ["test://live/a"]
    rid = send_call(w, "touch", {"uri": "test://live/b"})
    _, before = read_until(w, is_response(rid))
    assert updates(before) == []
    assert w.result("resources/unsubscribe", {"uri": "test://live/a"}) == {}
    rid = send_call(w, "touch", {"uri": "test://live/a"})
    _, before = read_until(w, is_response(rid))
    assert updates(before) == []
    assert gather(w, 0.2) == []


@pytest.mark.parametrize("method", ["resources/subscribe", "resources/unsubscribe"])
@pytest.mark.parametrize("params", [{}, {"uri": 5}, {"url": "test://live/a"}])
def test_subscribe_needs_a_uri(wire, method, params):
    """§7: resources/subscribe and unsubscribe need params.uri (a string): -32602."""
    response = wire.request(method, params)
    assert response["error"]["code"] == -32602, response


def test_resource_updated_goes_only_to_subscribers_in_process():
    """§9: with two connections, only the one that subscribed gets the update."""
    srv = server()

    @srv.resource("test://shared")
    def shared() -> str:
        return "s"

    with Client(srv, timeout=5) as alice, Client(srv, timeout=5) as bob:
        alice.subscribe("test://shared")
        srv.notify_resource_updated("test://shared")
        srv.notify_resource_updated("test://other")
        assert alice.ping() == {} and bob.ping() == {}
        time.sleep(0.05)
        assert [(n["method"], n["params"]) for n in alice.notifications] == [
            ("notifications/resources/updated", {"uri": "test://shared"})]
        assert bob.notifications == []


def test_an_initialize_whose_client_info_and_capabilities_are_too_big_is_32602(spawn):
    """A session keeps clientInfo and capabilities for its life: more than max_client_bytes
    (64 KiB) of them as JSON is refused with -32602 naming the limit and its setting, and
    the connection may initialize again with less."""
    w = spawn("live_protocol.py")
    params = {"protocolVersion": V2025_11, "clientInfo": {"name": "big", "version": "1"},
              "capabilities": {"experimental": {"pad": "x" * (64 << 10)}}}
    error = w.request("initialize", params)["error"]
    assert error["code"] == -32602, error
    assert "(65536, max_client_bytes)" in error["message"]
    assert "clientInfo and capabilities" in error["message"]
    params["capabilities"]["experimental"]["pad"] = "x" * ((64 << 10) - 100)
    assert w.result("initialize", params)["protocolVersion"] == V2025_11


def test_what_a_session_subscribes_to_is_bounded_in_characters():
    """A URI longer than max_uri_length, or one that takes a session's subscribed URIs past
    max_subscribed_length, is refused with -32602 naming the limit and its setting; one it
    holds already costs nothing more, and one unsubscribed makes room."""
    srv = server(max_uri_length=100, max_subscribed_length=250)

    @srv.resource("test://shared")
    def shared() -> str:
        return "s"

    with Client(srv, timeout=5) as client:
        with pytest.raises(JSONRPCError) as refused:
            client.subscribe("test://" + "x" * 94)
        assert refused.value.code == -32602
        assert "a URI of 101 characters" in refused.value.message
        assert "(100, max_uri_length)" in refused.value.message
        held = [f"test://{i}" + "x" * 72 for i in range(3)]     # 80 characters each
        for uri in held + held[:1]:
            assert client.subscribe(uri) == {}
        with pytest.raises(JSONRPCError) as refused:
            client.subscribe("test://abcd")
        assert refused.value.code == -32602
        assert "251 characters" in refused.value.message
        assert "(250, max_subscribed_length)" in refused.value.message
        assert client.subscribe("test://abc") == {}
        assert client.unsubscribe(held[0]) == {}
        assert client.subscribe("test://abcd") == {}


def test_what_a_listen_subscribes_to_is_bounded_in_characters():
    """The same limits for the resourceSubscriptions of one subscriptions/listen."""
    srv = server(max_uri_length=100, max_subscribed_length=250)

    @srv.resource("test://shared")
    def shared() -> str:
        return "s"

    with Client(srv, timeout=5, era=mcp_min.V2026_07) as client:
        with pytest.raises(JSONRPCError) as refused:
            client.listen(resource_uris=["test://shared", "test://" + "x" * 94])
        assert refused.value.code == -32602
        assert "(100, max_uri_length)" in refused.value.message
        with pytest.raises(JSONRPCError) as refused:
            client.listen(resource_uris=["test://" + "x" * 93] * 3)
        assert refused.value.code == -32602
        assert "(250, max_subscribed_length)" in refused.value.message
        listening = client.listen(resource_uris=["test://" + "x" * 93] * 2)
        assert listening.honoured == {"resourceSubscriptions": ["test://" + "x" * 93]}


# ==========================================================================================
# completion/complete (§7, §5.1 completions)
# ==========================================================================================

def test_completion_for_prompt_argument(wire):
    """§7 completion/complete with ref/prompt: values, total, hasMore; the capability is
    declared (the everything server has a completer)."""
    result = wire.result("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                                 "argument": {"name": "style", "value": "w"}})
    assert result == {"completion": {"values": ["warm", "wacky"], "total": 2, "hasMore": False}}


def test_completions_capability_declared_with_completer(spawn):
    """§5.1: `completions` is declared from 2025-03-26 when a completer exists; 2024-11-05
    had no flag, but the method still answers."""
    w = spawn("everything.py")
    assert initialize(w)["capabilities"].get("completions") == {}
    w = spawn("everything.py")
    assert "completions" not in initialize(w, V2024_11)["capabilities"]
    result = w.result("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                              "argument": {"name": "style", "value": "f"}})
    assert result["completion"]["values"] == ["formal"]


def test_completion_for_template_variable(spawn):
    """§7 completion/complete with ref/resource (a resource template's uriTemplate)."""
    w = spawn("live_protocol.py")
    initialize(w)
    result = w.result("completion/complete",
                      {"ref": {"type": "ref/resource", "uri": "test://live/items/{item_id}"},
                       "argument": {"name": "item_id", "value": "ap"}})
    assert result["completion"]["values"] == ["apple", "apricot"]
    assert result["completion"]["total"] == 2 and result["completion"]["hasMore"] is False


@pytest.mark.parametrize("ref", [{"type": "ref/prompt", "name": "nope"},
                                 {"type": "ref/resource", "uri": "test://nope/{x}"},
                                 {"type": "ref/tool", "name": "greet"}])
def test_completion_unknown_ref_is_32602(wire, ref):
    """§7: a bad prompt name (or unknown template, or ref type) is -32602."""
    response = wire.request("completion/complete", {"ref": ref,
                                                    "argument": {"name": "style", "value": ""}})
    assert response["error"]["code"] == -32602, response


@pytest.mark.parametrize("params", [
    {"ref": {"type": "ref/prompt", "name": ["greet"]}, "argument": {"name": "style", "value": ""}},
    {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": ["style"], "value": ""}}])
def test_completion_malformed_names_are_32602(wire, params):
    """§7/§13: malformed completion params are invalid params (-32602), not internal errors."""
    response = wire.request("completion/complete", params)
    assert response["error"]["code"] == -32602, response


def test_completion_limits_and_context_unit():
    """§7: at most 100 values, with total and hasMore; context.arguments (2025-06-18) is
    passed through to the completer; no completer for an argument -> no values."""
    srv = server()
    seen = []

    @srv.prompt
    def pick(kind: str, item: str) -> str:
        return f"{kind}/{item}"

    @srv.completion("item", prompt="pick")
    def items(value, arguments):
        seen.append((value, arguments))
        return [f"{arguments.get('kind', 'x')}-{i}" for i in range(150) if str(i).startswith(value)]

    with Client(srv, timeout=5) as client:
        assert client.server_capabilities.get("completions") == {}
        ref = {"type": "ref/prompt", "name": "pick"}
        out = client.complete(ref, "item", "", context={"kind": "fruit"})
        assert len(out["values"]) == 100 and out["values"][0] == "fruit-0"
        assert out["total"] == 150 and out["hasMore"] is True
        assert seen[-1] == ("", {"kind": "fruit"})
        out = client.complete(ref, "item", "14")
        assert out == {"values": [f"x-{i}" for i in (14, 140, 141, 142, 143, 144, 145, 146, 147,
                                                     148, 149)], "total": 11, "hasMore": False}
        assert seen[-1] == ("14", {})
        assert client.complete(ref, "kind", "f")["values"] == []


def test_no_completions_capability_without_completer():
    """§5.1/§13: no completer, no `completions` capability, and completion/complete is
    -32601 (a method of an undeclared capability)."""
    srv = server()

    @srv.prompt
    def plain(x: str) -> str:
        return x

    with Client(srv, timeout=5) as client:
        assert "completions" not in client.server_capabilities
        with pytest.raises(JSONRPCError) as info:
            client.complete({"type": "ref/prompt", "name": "plain"}, "x", "")
        assert info.value.code == -32601


# ==========================================================================================
# list changes during pagination (§8 P2-P5)
# ==========================================================================================

def _register(srv, kind, name):
    if kind == "tools":
        srv.tool(lambda: name, name=name)
    elif kind == "prompts":
        srv.prompt(lambda: name, name=name)
    else:
        srv.resource(f"test://{name}", name=name)(lambda: name)


def _unregister(srv, kind, name):
    {"tools": srv.remove_tool, "prompts": srv.remove_prompt,
     "resources": lambda n: srv.remove_resource(f"test://{n}")}[kind](name)


@pytest.mark.parametrize("kind,method", [("tools", "tools/list"), ("prompts", "prompts/list"),
                                         ("resources", "resources/list")])
def test_list_changes_during_pagination(kind, method):
    """P5 (keep cursors stable): with page_size=2, removing items already shown (including
    the one the cursor names), removing one not yet shown and adding new ones between pages
    neither repeats nor skips the surviving items; additions appear at the end."""
    srv = server(page_size=2)
    for i in range(6):
        _register(srv, kind, f"n{i}")
    with Client(srv, timeout=5) as client:
        page = client.request(method)
        assert [e["name"] for e in page[kind]] == ["n0", "n1"]
        _unregister(srv, kind, "n1")          # the item the cursor points after
        _unregister(srv, kind, "n0")
        _unregister(srv, kind, "n3")          # not yet shown
        _register(srv, kind, "n6")
        names, cursor = [], page["nextCursor"]
        while cursor:
            page = client.request(method, {"cursor": cursor})
            names += [e["name"] for e in page[kind]]
            assert len(page[kind]) <= 2
            cursor = page.get("nextCursor")
            if cursor and "n7" not in names and len(names) == 2:
                _register(srv, kind, "n7")    # added while the client is mid-way
        assert names == ["n2", "n4", "n5", "n6", "n7"]
        listed_now = [e["name"] for e in client.list_all(method, kind)]
        assert listed_now == ["n2", "n4", "n5", "n6", "n7"]


def test_pagination_cursor_still_valid_after_everything_shown_is_removed():
    """P4/P5: a cursor whose items were all removed still continues the listing (no -32602),
    and an invalid cursor is -32602."""
    srv = server(page_size=2)
    for i in range(4):
        srv.tool(lambda: "", name=f"t{i}")
    with Client(srv, timeout=5) as client:
        first = client.request("tools/list")
        srv.remove_tool("t0")
        srv.remove_tool("t1")
        rest = client.request("tools/list", {"cursor": first["nextCursor"]})
        assert [t["name"] for t in rest["tools"]] == ["t2", "t3"]
        assert "nextCursor" not in rest
        with pytest.raises(JSONRPCError) as info:
            client.request("tools/list", {"cursor": "not-a-cursor"})
        assert info.value.code == -32602


def test_concurrent_registration_while_listing():
    """Registering tools from another thread while the client pages through tools/list never
    breaks a page, repeats a name or loses one that was there from the start."""
    import threading
    srv = server(page_size=3)
    for i in range(30):
        srv.tool(lambda: "", name=f"base{i:02d}")
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            srv.tool(lambda: "", name=f"churn{i}")
            if i >= 1:
                srv.remove_tool(f"churn{i - 1}")
            i += 1
            time.sleep(0.0005)

    with Client(srv, timeout=5) as client:
        thread = threading.Thread(target=churn, daemon=True)
        thread.start()
        try:
            for _ in range(5):
                names = [t["name"] for t in client.list_tools()]
                assert len(names) == len(set(names)), names
                assert [n for n in names if n.startswith("base")] == [f"base{i:02d}" for i in range(30)]
        finally:
            stop.set()
            thread.join(2)
