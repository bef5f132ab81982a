"""The legacy lifecycle (spec checklist §4 L*, §5.1, G1, G6; pain points 12, 16): version
negotiation, serverInfo, capabilities derived from what is registered, the pre-initialize
window, and result shapes that follow the negotiated version (L14, R10).

Wire tests drive tests/servers/everything.py and tests/servers/lifecycle.py (titles, icons,
annotations, resource links, audio, structured output); capability derivation uses small
servers in memory (``mcp_min.Client(server)``)."""

import json
import sys
import time

import pytest

import mcp_min
from conftest import INIT_PARAMS, SERVERS, Wire
from mcp_min import Client, JSONRPCError, Server

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = "2025-11-25"

# Content block types each version defines (§11): audio from 2025-03-26, resource_link from 2025-06-18.
CONTENT_TYPES = {
    "2024-11-05": {"text", "image", "resource"},
    "2025-03-26": {"text", "image", "audio", "resource"},
    "2025-06-18": {"text", "image", "audio", "resource", "resource_link"},
    "2025-11-25": {"text", "image", "audio", "resource", "resource_link"},
}


def request(request_id, method, params=None):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def init_params(version):
    return dict(INIT_PARAMS, protocolVersion=version)


def keys_anywhere(value, key):
    """Every path at which ``key`` appears as an object key inside ``value``."""
    found = []

    def walk(v, path):
        if isinstance(v, dict):
            for k, item in v.items():
                if k == key:
                    found.append(path + (k,))
                walk(item, path + (k,))
        elif isinstance(v, list):
            for i, item in enumerate(v):
                walk(item, path + (i,))
    walk(value, ())
    return found



# ============================================================================================
# Version negotiation (L4, L5, G6)
# ============================================================================================

@pytest.mark.parametrize("version", VERSIONS)
def test_L4_supported_version_is_echoed(spawn, version):
    wire = spawn("everything.py")
    result = wire.result("initialize", init_params(version))
    assert result["protocolVersion"] == version


@pytest.mark.parametrize("requested", ["2026-07-28", "1999-01-01", "2024-10-07", "DRAFT-2026-v1", ""])
def test_L4_G6_unsupported_version_gets_a_counter_offer_not_an_error(spawn, requested):
    wire = spawn("everything.py")
    reply = wire.request("initialize", init_params(requested))
    assert "error" not in reply, reply
    assert reply["result"]["protocolVersion"] == LATEST
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    # and the session then speaks the counter-offered version (titles: 2025-06-18+)
    tools = wire.result("tools/list")["tools"]
    assert next(t for t in tools if t["name"] == "sleep")["title"] == "Sleep"


@pytest.mark.parametrize("params", [{"capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
                                    dict(INIT_PARAMS, protocolVersion=20251125),
                                    dict(INIT_PARAMS, protocolVersion=None)],
                         ids=["missing", "number", "null"])
def test_L2_initialize_without_a_string_protocol_version_is_32602_and_can_be_retried(spawn, params):
    wire = spawn("everything.py")
    reply = wire.request("initialize", params)
    assert reply["error"]["code"] == -32602, reply
    assert "protocolVersion" in reply["error"]["message"]
    assert wire.initialize()["protocolVersion"] == LATEST      # a failed initialize is no initialize


def test_L3_initialize_result_shape(spawn):
    wire = spawn("everything.py")
    result = wire.result("initialize", init_params(LATEST))
    assert set(result) == {"protocolVersion", "capabilities", "serverInfo", "instructions"}
    assert result["serverInfo"] == {"name": "everything", "version": "1.2.3", "title": "Everything"}
    assert result["instructions"] == "A test server."
    assert all(isinstance(v, dict) for v in result["capabilities"].values())
    assert set(result["capabilities"]) == {"logging", "tools", "resources", "prompts", "completions"}


def test_L3_no_instructions_key_when_the_server_has_none():
    server = Server("plain")

    @server.tool
    def t() -> str:
        return "t"
    with Client(server, initialize=False) as client:
        result = client.initialize()
    assert "instructions" not in result
    assert result["serverInfo"] == {"name": "plain", "version": "0.1.0"}


# ============================================================================================
# serverInfo and shapes by negotiated version (L3, L14, R10)
# ============================================================================================

_sessions = {}


@pytest.fixture(scope="module")
def sessions():
    """One lifecycle.py server per protocol version, initialized once for the module."""
    def get(version):
        if version not in _sessions:
            wire = Wire([sys.executable, str(SERVERS / "lifecycle.py")])
            _sessions[version] = (wire, wire.initialize(version))
        return _sessions[version]
    yield get
    for wire, _ in _sessions.values():
        wire.close()
    _sessions.clear()


@pytest.mark.parametrize("version", VERSIONS)
def test_L3_server_info_fields_follow_the_version(sessions, version):
    _, result = sessions(version)
    assert result["protocolVersion"] == version
    info = result["serverInfo"]
    expected = {"name": "lifecycle", "version": "2.0.0"}
    if version >= "2025-06-18":
        expected["title"] = "Lifecycle Server"
    if version >= "2025-11-25":
        expected.update(description="Shapes by version.", websiteUrl="https://example.com/lifecycle",
                        icons=[{"src": "https://example.com/icon.png", "mimeType": "image/png",
                                "sizes": ["48x48"]}])
    assert info == expected
    assert result["instructions"] == "Call link to get a resource link."


@pytest.mark.parametrize("version", VERSIONS)
def test_tools_list_fields_follow_the_version(sessions, version):
    wire, _ = sessions(version)
    tools = {t["name"]: t for t in wire.result("tools/list")["tools"]}
    link, data, plain = tools["link"], tools["data"], tools["plain"]
    assert ("title" in link) == (version >= "2025-06-18")
    assert ("annotations" in link) == (version >= "2025-03-26")
    if version >= "2025-03-26":
        assert link["annotations"]["readOnlyHint"] is True
    assert ("icons" in link) == (version >= "2025-11-25")
    assert ("outputSchema" in data) == (version >= "2025-06-18")
    for tool in tools.values():
        assert "inputSchema" in tool and "description" in tool
        if version < "2025-06-18":
            assert "outputSchema" not in tool and "title" not in tool and "_meta" not in tool
        if version < "2025-03-26":
            assert "annotations" not in tool
    assert "title" not in plain and "icons" not in plain and "annotations" not in plain


@pytest.mark.parametrize("version", VERSIONS)
def test_resource_and_prompt_lists_follow_the_version(sessions, version):
    wire, _ = sessions(version)
    listed = {"resources": wire.result("resources/list")["resources"],
              "resourceTemplates": wire.result("resources/templates/list")["resourceTemplates"],
              "prompts": wire.result("prompts/list")["prompts"]}
    for kind, items in listed.items():
        assert len(items) == 1, (kind, items)
        item = items[0]
        assert ("title" in item) == (version >= "2025-06-18"), (kind, item)
        assert ("icons" in item) == (version >= "2025-11-25"), (kind, item)


@pytest.mark.parametrize("version", VERSIONS)
def test_structured_content_only_from_2025_06_18(sessions, version):
    wire, _ = sessions(version)
    result = wire.result("tools/call", {"name": "data", "arguments": {}})
    assert ("structuredContent" in result) == (version >= "2025-06-18"), result
    # the text block carries the data in every version (R6)
    assert json.loads(result["content"][0]["text"]) == {"answer": 42, "unit": "none"}
    if "structuredContent" in result:
        assert result["structuredContent"] == {"answer": 42, "unit": "none"}


@pytest.mark.parametrize("version", VERSIONS)
def test_audio_content_only_from_2025_03_26(sessions, version):
    wire, _ = sessions(version)
    result = wire.result("tools/call", {"name": "sound", "arguments": {}})
    types = {block["type"] for block in result["content"]}
    assert types <= CONTENT_TYPES[version], (version, result)
    assert ("audio" in types) == (version >= "2025-03-26")


@pytest.mark.parametrize("version", [
    "2024-11-05", "2025-03-26",
    "2025-06-18",
    "2025-11-25"])
def test_resource_link_only_from_2025_06_18_and_its_icons_only_from_2025_11_25(sessions, version):
    wire, _ = sessions(version)
    result = wire.result("tools/call", {"name": "link", "arguments": {}})
    types = {block["type"] for block in result["content"]}
    assert types <= CONTENT_TYPES[version], (version, result)
    if version >= "2025-06-18":
        block = result["content"][0]
        assert block["type"] == "resource_link" and block["uri"] == "test://doc"
        assert block["title"] == "The Doc"
    else:
        assert "test://doc" in json.dumps(result)          # the link survives as text
    assert ("icons" in json.dumps(result)) == (version >= "2025-11-25"), result


@pytest.mark.parametrize("version", [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18", "2025-11-25"])
def test_prompt_messages_follow_the_version(sessions, version):
    wire, _ = sessions(version)
    result = wire.result("prompts/get", {"name": "read_doc", "arguments": {"topic": "t"}})
    types = {m["content"]["type"] for m in result["messages"]}
    assert types <= CONTENT_TYPES[version], (version, result)
    assert "test://doc" in json.dumps(result)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_no_icons_anywhere_before_2025_11_25_in_lists(sessions, version):
    wire, init = sessions(version)
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        assert keys_anywhere(wire.result(method), "icons") == [], method
    assert keys_anywhere(init, "icons") == []


# ============================================================================================
# Capabilities derived from what is registered (§5.1)
# ============================================================================================

def make_server(tools=False, resources=False, prompts=False, completer=False):
    server = Server("caps")
    if tools:
        @server.tool
        def t() -> str:
            return "t"
    if resources:
        @server.resource("test://r")
        def r() -> str:
            return "r"
    if prompts:
        @server.prompt
        def p(style: str) -> str:
            return style
    if completer:
        @server.completion("style", prompt="p")
        def complete(value, arguments):
            return ["warm"]
    return server


GATED = {
    "tools": [("tools/list", None), ("tools/call", {"name": "t", "arguments": {}})],
    "resources": [("resources/list", None), ("resources/templates/list", None),
                  ("resources/read", {"uri": "test://r"}), ("resources/subscribe", {"uri": "test://r"}),
                  ("resources/unsubscribe", {"uri": "test://r"})],
    "prompts": [("prompts/list", None), ("prompts/get", {"name": "p", "arguments": {"style": "x"}})],
    "completions": [("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"},
                                             "argument": {"name": "style", "value": "w"}})],
}


@pytest.mark.parametrize("registered", ["tools", "resources", "prompts"])
def test_capabilities_declare_only_what_is_registered_and_the_rest_is_32601(registered):
    server = make_server(**{registered: True})
    with Client(server) as client:
        caps = client.server_capabilities
        assert registered in caps
        assert set(caps) <= {registered, "logging"}, caps
        for capability, calls in GATED.items():
            for method, params in calls:
                if capability == registered:
                    client.request(method, params)           # works
                    continue
                with pytest.raises(JSONRPCError) as info:
                    client.request(method, params)
                assert info.value.code == -32601, (method, info.value.message)
                assert method in info.value.message


def test_empty_server_declares_no_tools_resources_prompts():
    with Client(Server("empty")) as client:
        assert not {"tools", "resources", "prompts", "completions"} & set(client.server_capabilities)
        with pytest.raises(JSONRPCError) as info:
            client.request("tools/list")
        assert info.value.code == -32601


@pytest.mark.parametrize("version", VERSIONS)
def test_completions_declared_only_with_a_completer_and_not_in_2024_11_05(version):
    with Client(make_server(prompts=True, completer=True), protocol_version=version) as client:
        assert ("completions" in client.server_capabilities) == (version >= "2025-03-26")
    with Client(make_server(prompts=True), protocol_version=version) as client:
        assert "completions" not in client.server_capabilities


@pytest.mark.parametrize("argument, context", [
    ({"name": "style", "value": None}, None), ({"name": "style", "value": 5}, None),
    ({"name": "style", "value": "w"}, {"arguments": ["x"]})])
def test_completion_refuses_a_value_that_is_no_string_and_arguments_that_are_no_object(
        argument, context):
    params = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": argument}
    if context is not None:
        params["context"] = context
    with Client(make_server(prompts=True, completer=True)) as client:
        with pytest.raises(JSONRPCError) as info:
            client.request("completion/complete", params)
        assert client.request(*GATED["completions"][0])["completion"]["values"] == ["warm"]
    assert info.value.code == -32602
    assert info.value.message == ("completion/complete: argument.value must be a string, and "
                                  "context.arguments an object")


def test_an_async_completer_is_awaited_like_an_async_tool():
    server = Server("s")

    @server.prompt
    def p(style: str) -> str:
        return style

    @server.completion("style", prompt="p")
    async def styles(value, arguments):
        return [s for s in ("warm", "formal", "witty") if s.startswith(value)]
    with Client(server) as client:
        result = client.request("completion/complete", {
            "ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "style", "value": "w"}})
    assert result["completion"] == {"values": ["warm", "witty"], "total": 2, "hasMore": False}


def test_completion_without_a_completer_is_32601():
    with Client(make_server(prompts=True)) as client:
        with pytest.raises(JSONRPCError) as info:
            client.request(*GATED["completions"][0])
        assert info.value.code == -32601


def test_list_changed_and_subscribe_flags():
    with Client(make_server(tools=True, resources=True, prompts=True)) as client:
        caps = client.server_capabilities
    assert caps["tools"].get("listChanged") is True
    assert caps["prompts"].get("listChanged") is True
    assert caps["resources"].get("subscribe") is True


# ============================================================================================
# Before initialize (L11, L13, L16, G1; pain points 12, 16)
# ============================================================================================

def test_L13_ping_before_initialize(spawn):
    wire = spawn("everything.py")
    assert wire.result("ping") == {}
    assert wire.result("ping", {"_meta": {"progressToken": 1}}) == {}
    assert wire.initialize()["protocolVersion"] == LATEST
    assert wire.result("ping") == {}


PRE_INIT = [("tools/list", None), ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
            ("resources/list", None), ("resources/templates/list", None),
            ("resources/read", {"uri": "test://static/text"}),
            ("resources/subscribe", {"uri": "test://static/text"}),
            ("prompts/list", None), ("prompts/get", {"name": "greet", "arguments": {"name": "x"}}),
            ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                     "argument": {"name": "style", "value": "w"}}),
            ("logging/setLevel", {"level": "debug"})]


def test_L11_L16_requests_before_initialize_say_send_initialize_first(spawn):
    wire = spawn("everything.py")
    for i, (method, params) in enumerate(PRE_INIT):
        reply = wire.request(method, params, request_id=f"pre-{i}")
        assert "error" in reply, (method, reply)
        assert "send initialize first" in reply["error"]["message"], (method, reply)
        assert reply["error"]["code"] not in range(-32099, -32019), reply          # G2
    # nothing was done: the session still initializes normally afterwards
    assert wire.initialize()["protocolVersion"] == LATEST
    assert wire.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})["content"][0]["text"] == "3"


def test_L16_requests_between_initialize_and_initialized_are_served(spawn):
    wire = spawn("everything.py")
    wire.result("initialize", init_params(LATEST))          # no notifications/initialized yet
    assert any(t["name"] == "add" for t in wire.result("tools/list")["tools"])


@pytest.mark.parametrize("when", ["before", "after"])
def test_server_discover_is_answered_beside_the_handshake(spawn, when):
    """A dual-era server answers server/discover whether or not the pipe has done the
    handshake, and initialize still works after it: one process serves both eras."""
    wire = spawn("everything.py")
    if when == "after":
        wire.initialize()
    params = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {}}}
    result = wire.result("server/discover", params, request_id="discover", timeout=3)
    assert result["supportedVersions"] == ["2026-07-28"] and result["resultType"] == "complete"
    if when == "before":
        assert wire.initialize()["protocolVersion"] == LATEST


def test_unknown_method_before_initialize_is_32601(spawn):
    wire = spawn("everything.py")
    reply = wire.request("tools/lisst", request_id=5)
    assert reply["error"]["code"] == -32601 and "tools/lisst" in reply["error"]["message"]


def test_G12_task_on_tools_call_is_ignored_without_the_tasks_capability(spawn):
    """2025-11-25: a server that declares no tasks capability MUST ignore params.task and
    process tools/call normally: a CallToolResult, not a CreateTaskResult, and no tasks/*."""
    wire = spawn("everything.py")
    assert "tasks" not in wire.initialize(LATEST)["capabilities"]
    called = wire.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3},
                                        "task": {"ttl": 60000}})
    assert called["content"] == [{"type": "text", "text": "5"}] and "task" not in called
    assert wire.request("tasks/get", {"taskId": "1"})["error"]["code"] == -32601


# ============================================================================================
# A second initialize (L9)
# ============================================================================================

def test_L9_second_initialize_is_rejected_and_the_session_keeps_its_version(spawn):
    wire = spawn("lifecycle.py")
    assert wire.initialize(LATEST)["protocolVersion"] == LATEST
    reply = wire.request("initialize", init_params("2024-11-05"))
    assert reply["error"]["code"] in (-32600, -32602), reply
    assert "initialize" in reply["error"]["message"].lower()
    tools = {t["name"]: t for t in wire.result("tools/list")["tools"]}
    assert "icons" in tools["link"] and "title" in tools["link"]      # still 2025-11-25 shapes


def test_L9_second_initialize_in_memory_client():
    with Client(make_server(tools=True)) as client:
        with pytest.raises(JSONRPCError):
            client.request("initialize", init_params("2025-03-26"))
        assert client.request("ping") == {}


def test_protocol_versions_constant_matches_the_spec():
    assert mcp_min.PROTOCOL_VERSIONS == VERSIONS
    assert mcp_min.LATEST_PROTOCOL_VERSION == LATEST


# ============================================================================================
# The end of input: calls still running are cancelled before the lifespan closes
# ============================================================================================

SHUTDOWN_SERVER = """
import asyncio, sys, time
from contextlib import contextmanager
sys.path.insert(0, {root!r})
from mcp_min import Context, Server

def say(what):
    print(what, file=sys.stderr, flush=True)

@contextmanager
def life(server):
    say("lifespan open")
    yield
    say("lifespan closed")

server = Server("shutdown", lifespan=life, grace_period=0.3, cancel_timeout={cancel_timeout})

@server.tool
def polite(ctx: Context) -> str:
    say("polite started")
    try:
        while True:
            ctx.check_cancelled()
            time.sleep(0.01)
    finally:
        say(f"polite ended, cancelled={{ctx.cancelled}}")

@server.tool
async def waiting() -> str:
    say("waiting started")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        say("waiting cancelled")
        raise
    return "woke"

@server.tool
async def tidy() -> str:
    say("tidy started")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        await asyncio.sleep(0.3)      # its cleanup takes a while
        say("tidy cleaned up")
        raise

@server.tool
def stubborn(seconds: float) -> str:
    say("stubborn started")
    time.sleep(seconds)               # never looks at cancellation
    say("stubborn ended")
    return "done"

server.run()
"""


def shutdown_server(spawn, tmp_path, cancel_timeout):
    from conftest import ROOT
    script = tmp_path / "shutdown_server.py"
    script.write_text(SHUTDOWN_SERVER.format(root=str(ROOT), cancel_timeout=cancel_timeout))
    wire = spawn(str(script))
    wire.initialize()
    return wire


def wait_for_line(wire, text, timeout=10):
    deadline = time.monotonic() + timeout
    while text not in wire.stderr:
        assert time.monotonic() < deadline, wire.stderr
        time.sleep(0.01)


def test_calls_still_running_after_the_grace_period_are_cancelled_before_the_lifespan_closes(
        spawn, tmp_path):
    wire = shutdown_server(spawn, tmp_path, cancel_timeout=2.0)
    for rid, name in ((1, "polite"), (2, "waiting")):
        wire.send(request(rid, "tools/call", {"name": name, "arguments": {}}))
        wait_for_line(wire, f"{name} started")
    wire.close_stdin()
    started = time.monotonic()
    replies = {reply["id"]: reply for reply in wire.rest_of_stdout()}
    assert wire.wait(10) == 0
    assert time.monotonic() - started < 2.0           # they returned at once when cancelled
    # Cancelled by the server, not the client: each still gets a reply, saying why.
    assert set(replies) == {1, 2}
    for reply in replies.values():
        assert reply["error"]["code"] == -32603 and "shutting down" in reply["error"]["message"]
    log = wire.stderr
    assert "polite ended, cancelled=True" in log and "waiting cancelled" in log
    closed = log.index("lifespan closed")
    assert log.index("polite ended") < closed and log.index("waiting cancelled") < closed
    assert "were cancelled" in log and "Traceback" not in log


def test_a_cancelled_coroutine_unwinds_before_the_lifespan_closes(spawn, tmp_path):
    """Its call is over once its cleanup has run, not as soon as it is told."""
    wire = shutdown_server(spawn, tmp_path, cancel_timeout=2.0)
    wire.send(request(1, "tools/call", {"name": "tidy", "arguments": {}}))
    wait_for_line(wire, "tidy started")
    wire.close_stdin()
    replies = list(wire.rest_of_stdout())
    assert wire.wait(10) == 0
    assert [reply["id"] for reply in replies] == [1]
    assert "shutting down" in replies[0]["error"]["message"]
    log = wire.stderr
    assert "tidy cleaned up" in log
    assert log.index("tidy cleaned up") < log.index("lifespan closed"), log


def test_a_call_that_returns_within_cancel_timeout_is_answered_and_then_the_lifespan_closes(
        spawn, tmp_path):
    wire = shutdown_server(spawn, tmp_path, cancel_timeout=3.0)
    wire.send(request(1, "tools/call", {"name": "stubborn", "arguments": {"seconds": 1.0}}))
    wait_for_line(wire, "stubborn started")
    wire.close_stdin()
    (reply,) = wire.rest_of_stdout()
    assert reply["result"]["content"][0]["text"] == "done"
    assert wire.wait(10) == 0
    log = wire.stderr
    assert log.index("stubborn ended") < log.index("lifespan closed")


def test_a_call_that_ignores_cancellation_is_left_after_cancel_timeout_with_a_warning(
        spawn, tmp_path):
    wire = shutdown_server(spawn, tmp_path, cancel_timeout=0.3)
    wire.send(request(1, "tools/call", {"name": "stubborn", "arguments": {"seconds": 30}}))
    wait_for_line(wire, "stubborn started")
    wire.close_stdin()
    started = time.monotonic()
    assert wire.rest_of_stdout() == []
    assert wire.wait(10) == 0
    assert time.monotonic() - started < 3.0          # grace 0.3 s + cancel_timeout 0.3 s
    log = wire.stderr
    assert "1 call(s) unfinished" in log and "cancel" in log and "lifespan closed" in log
    assert "stubborn ended" not in log


def test_cancel_timeout_is_a_setting_with_a_default():
    assert Server("t").cancel_timeout == 2.0 and Server("t", cancel_timeout=0).cancel_timeout == 0
