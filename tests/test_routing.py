"""Routing through ``server.handlers`` and the errors of the built-in methods (spec checklist
§13, R3, G3, G4; pain points 9, 12, 16), and cursor pagination on every list method (§8
P1-P5).

In-memory servers (``mcp_min.Client(server)``, the real wire code over OS pipes) for the
handlers dict and list mutations; the everything server as a subprocess for the wire."""

import base64
import json
import sys
import threading
import time

import pytest

from conftest import SERVERS, Wire
from mcp_min import Client, JSONRPCError, Server


def error_of(client, method, params=None):
    with pytest.raises(JSONRPCError) as info:
        client.request(method, params, timeout=5)
    return info.value


def small_server(**options):
    server = Server("routing", **options)

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def adder(a: int) -> int:
        return a

    @server.resource("test://here")
    def here() -> str:
        return "here"

    @server.prompt
    def greet(name: str) -> str:
        return f"hi {name}"
    return server


def start_wire(env=None):
    wire = Wire([sys.executable, str(SERVERS / "everything.py")], env=env)
    wire.initialize()
    return wire



@pytest.fixture(scope="module")
def shared():
    """One initialized everything server (default settings) for the read-only error tests."""
    wire = start_wire()
    yield wire
    wire.close()


@pytest.fixture(scope="module")
def paged():
    """The everything server with EVERYTHING_PAGE_SIZE=2."""
    wire = start_wire({"EVERYTHING_PAGE_SIZE": "2"})
    yield wire
    wire.close()


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.005)


# ============================================================================================
# server.handlers is a plain dict
# ============================================================================================

def test_handlers_is_a_plain_dict_of_every_builtin_method():
    server = small_server()
    assert type(server.handlers) is dict
    for method in ("initialize", "ping", "tools/list", "tools/call", "resources/list",
                   "resources/templates/list", "resources/read", "prompts/list", "prompts/get",
                   "completion/complete", "logging/setLevel", "notifications/initialized",
                   "notifications/cancelled"):
        assert callable(server.handlers[method]), method


def test_custom_method_runs_off_the_reader_thread_and_does_not_block_ping():
    server = small_server()
    started, release, seen = threading.Event(), threading.Event(), {}

    def slow(ctx, params):
        seen["thread"], seen["params"], seen["method"] = threading.current_thread(), params, ctx.method
        started.set()
        release.wait(10)
        return {"echo": params["x"]}
    server.handlers["custom/slow"] = slow
    with Client(server) as client:
        results = {}
        caller = threading.Thread(target=lambda: results.update(
            slow=client.request("custom/slow", {"x": [1, "two"]})))
        caller.start()
        assert started.wait(5), "custom handler never ran"
        assert client.request("ping", timeout=2) == {}          # the reader is free
        assert client.request("tools/list", timeout=2)["tools"]
        assert "slow" not in results
        release.set()
        caller.join(5)
        assert results["slow"] == {"echo": [1, "two"]}
        assert seen["thread"] is not client.server_thread       # not the thread serving
        assert seen["thread"] is not threading.main_thread()
        assert seen["method"] == "custom/slow" and seen["params"] == {"x": [1, "two"]}


def test_custom_method_before_initialize_says_send_initialize_first():
    server = small_server()
    server.handlers["custom/hello"] = lambda ctx, params: {"hello": True}
    with Client(server, initialize=False) as client:
        error = error_of(client, "custom/hello")
        assert "send initialize first" in error.message
        client.initialize()
        assert client.request("custom/hello") == {"hello": True}


def test_replacing_tools_list_works():
    server = small_server()
    virtual = {"name": "virtual", "description": "not registered",
               "inputSchema": {"type": "object", "properties": {}}}
    server.handlers["tools/list"] = lambda ctx, params: {"tools": [virtual]}
    with Client(server) as client:
        assert client.request("tools/list") == {"tools": [virtual]}


def test_wrapping_tools_call_sees_every_call():
    server = small_server()
    original, calls = server.handlers["tools/call"], []

    def wrapper(ctx, params):
        calls.append(params["name"])
        return original(ctx, params)
    server.handlers["tools/call"] = wrapper
    with Client(server) as client:
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
    assert calls == ["add"]


def test_removing_ping_makes_it_32601():
    server = small_server()
    del server.handlers["ping"]
    with Client(server) as client:
        error = error_of(client, "ping")
    assert error.code == -32601 and "ping" in error.message


def test_custom_handler_errors_become_error_responses():
    server = small_server()

    def refuse(ctx, params):
        raise JSONRPCError(1234, "refused politely", {"why": "test"})

    def crash(ctx, params):
        raise ValueError("kaboom")

    def unserializable(ctx, params):
        return {"value": object()}
    server.handlers.update({"custom/refuse": refuse, "custom/crash": crash,
                            "custom/object": unserializable})
    with Client(server) as client:
        error = error_of(client, "custom/refuse")
        assert (error.code, error.message, error.data) == (1234, "refused politely", {"why": "test"})
        error = error_of(client, "custom/crash")
        assert error.code == -32603 and "kaboom" in error.message
        error = error_of(client, "custom/object")
        assert error.code == -32603
        assert client.request("ping") == {}                   # still serving


def test_custom_notification_handler_is_called_and_never_answered():
    server = small_server()
    got = []
    server.handlers["notifications/custom"] = lambda ctx, params: got.append(params) or {"ignored": 1}
    with Client(server) as client:
        client.notify("notifications/custom", {"a": 1})
        assert client.request("ping") == {}
        wait_until(lambda: got)
    assert got == [{"a": 1}]


# ============================================================================================
# Errors of the built-in methods, on the wire (§13.2)
# ============================================================================================

def test_unknown_method_is_32601_naming_it(shared):
    reply = shared.request("tools/lisst", {"x": 1})
    assert reply["error"]["code"] == -32601
    assert "tools/lisst" in reply["error"]["message"]


def test_G3_unknown_tool_is_32602_naming_it_with_suggestions(shared):
    reply = shared.request("tools/call", {"name": "ad", "arguments": {"a": 1, "b": 2}})
    error = reply["error"]
    assert error["code"] == -32602
    assert "ad" in error["message"] and "'add'" in error["message"]      # did you mean 'add'?
    reply = shared.request("tools/call", {"name": "zzzzzz", "arguments": {}})
    assert reply["error"]["code"] == -32602 and "zzzzzz" in reply["error"]["message"]


def test_R3_tools_call_with_tool_instead_of_name_hints_did_you_mean(shared):
    reply = shared.request("tools/call", {"tool": "add", "arguments": {"a": 1, "b": 2}})
    error = reply["error"]
    assert error["code"] == -32602
    assert "did you mean" in error["message"] and '"name"' in error["message"]


def test_R3_tools_call_with_args_instead_of_arguments_hints_did_you_mean(shared):
    reply = shared.request("tools/call", {"name": "add", "args": {"a": 1, "b": 2}})
    error = reply["error"]
    assert error["code"] == -32602 and "did you mean" in error["message"]
    assert "arguments" in error["message"]


@pytest.mark.parametrize("params", [{}, {"name": 5, "arguments": {}}, {"name": None},
                                    {"name": "add", "arguments": [1, 2]},
                                    {"name": "add", "arguments": "a=1"}],
                         ids=["no-name", "name-number", "name-null", "arguments-array",
                              "arguments-string"])
def test_R3_malformed_tools_call_is_32602(shared, params):
    reply = shared.request("tools/call", params)
    assert reply["error"]["code"] == -32602, reply


def test_G4_resources_read_unknown_uri_is_32002_with_data_uri(shared):
    reply = shared.request("resources/read", {"uri": "test://no/such/thing"})
    error = reply["error"]
    assert error["code"] == -32002
    assert error["data"] == {"uri": "test://no/such/thing"}
    assert "test://no/such/thing" in error["message"]


def test_resources_read_with_url_instead_of_uri_hints_did_you_mean(shared):
    reply = shared.request("resources/read", {"url": "test://static/text"})
    assert reply["error"]["code"] == -32602
    assert "did you mean" in reply["error"]["message"] and '"uri"' in reply["error"]["message"]


def test_resources_read_known_uri_and_template(shared):
    assert shared.result("resources/read", {"uri": "test://static/text"})["contents"][0]["text"] == \
        "hello, resource"
    contents = shared.result("resources/read", {"uri": "test://items/42"})["contents"]
    assert contents[0]["uri"] == "test://items/42"


def test_prompts_get_unknown_prompt_is_32602_naming_it(shared):
    reply = shared.request("prompts/get", {"name": "gret", "arguments": {"name": "x"}})
    error = reply["error"]
    assert error["code"] == -32602 and "gret" in error["message"]
    assert "'greet'" in error["message"]                                # a suggestion


def test_prompts_get_missing_required_argument_is_32602(shared):
    reply = shared.request("prompts/get", {"name": "greet", "arguments": {"style": "formal"}})
    error = reply["error"]
    assert error["code"] == -32602, error
    assert "name" in error["message"]


def test_prompts_get_with_arguments_works(shared):
    result = shared.result("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})
    assert "Ada" in result["messages"][0]["content"]["text"]


def test_prompts_get_arguments_not_an_object_is_32602(shared):
    reply = shared.request("prompts/get", {"name": "greet", "arguments": ["Ada"]})
    assert reply["error"]["code"] == -32602


# ============================================================================================
# Pagination (§8 P1-P5)
# ============================================================================================

LISTS = [("tools/list", "tools", "name"), ("resources/list", "resources", "uri"),
         ("resources/templates/list", "resourceTemplates", "uriTemplate"),
         ("prompts/list", "prompts", "name")]


def walk_pages(request, method, key, first_params=None):
    """Follow nextCursor to the end: (all items, pages)."""
    items, pages, params = [], [], dict(first_params or {})
    for _ in range(1000):
        result = request(method, params)
        pages.append(result)
        items += result[key]
        if "nextCursor" not in result:
            return items, pages
        cursor = result["nextCursor"]
        assert isinstance(cursor, str) and cursor, result              # P2: an opaque string
        params = {"cursor": cursor}
    raise AssertionError("pagination never ended")


@pytest.mark.parametrize("method,key,ident", LISTS)
def test_P1_P3_following_next_cursor_returns_every_item_exactly_once(paged, shared, method, key, ident):
    everything = shared.result(method)
    assert "nextCursor" not in everything                       # P3: one page holds all
    items, pages = walk_pages(paged.result, method, key)
    assert all(len(page[key]) <= 2 for page in pages)
    assert all("nextCursor" in page for page in pages[:-1])
    assert [i[ident] for i in items] == [i[ident] for i in everything[key]]   # same order, once
    assert len({i[ident] for i in items}) == len(items)


def test_P1_tools_list_really_pages(paged):
    items, pages = walk_pages(paged.result, "tools/list", "tools")
    assert len(items) > 4 and len(pages) == (len(items) + 1) // 2
    assert [len(p["tools"]) for p in pages[:-1]] == [2] * (len(pages) - 1)


def test_P3_no_next_cursor_when_the_last_page_is_exactly_full(paged):
    result = paged.result("resources/list")                     # everything.py has 2 resources
    assert len(result["resources"]) == 2 and "nextCursor" not in result


def test_P5_the_same_cursor_gives_the_same_page(paged):
    cursor = paged.result("tools/list")["nextCursor"]
    first = paged.result("tools/list", {"cursor": cursor})
    again = paged.result("tools/list", {"cursor": cursor})
    assert first == again and first["tools"]


def test_P4_cursor_null_means_first_page(paged):
    assert paged.result("tools/list", {"cursor": None}) == paged.result("tools/list")


@pytest.mark.parametrize("method,key,ident", LISTS)
@pytest.mark.parametrize("cursor", ["not a cursor", "!!!", base64.b64encode(b"hello").decode(),
                                    "\u00e9t\u00e9", 42, {"after": 1}, ["x"], True],
                         ids=["words", "punctuation", "base64-junk", "non-ascii", "number",
                              "object", "array", "bool"])
def test_P4_invalid_cursor_is_32602(paged, method, key, ident, cursor):
    reply = paged.request(method, {"cursor": cursor})
    assert "error" in reply, reply
    assert reply["error"]["code"] == -32602
    assert f"Invalid cursor: {json.dumps(cursor, ensure_ascii=False)} is not" in reply["error"][
        "message"]                                         # as JSON, not as Python writes it
    assert "cursor" in reply["error"]["message"].lower()


def many(n=10, page_size=3):
    server = Server("many", page_size=page_size)
    for i in range(n):
        add_items(server, i)
    return server


def add_items(server, i):
    def fn() -> str:
        return "x"
    fn.__name__ = f"t{i}"
    server.tool(fn)
    server.prompt(fn)
    server.resource(f"test://r/{i}")(fn)

    def templ(v: str) -> str:
        return v
    templ.__name__ = f"tmpl{i}"
    server.resource(f"test://tmpl{i}/{{v}}")(templ)


def remove_items(server, i):
    server.remove_tool(f"t{i}")
    server.remove_prompt(f"t{i}")
    server.remove_resource(f"test://r/{i}")
    server.remove_resource(f"test://tmpl{i}/{{v}}")


IDENT = {"tools": ("name", "t{}"), "prompts": ("name", "t{}"), "resources": ("uri", "test://r/{}"),
         "resourceTemplates": ("uriTemplate", "test://tmpl{}/{{v}}")}


@pytest.mark.parametrize("method,key,_", LISTS)
def test_P1_every_list_pages_in_memory(method, key, _):
    with Client(many(10, 3)) as client:
        items, pages = walk_pages(client.request, method, key)
    ident, fmt = IDENT[key]
    assert [i[ident] for i in items] == [fmt.format(n) for n in range(10)]
    assert [len(p[key]) for p in pages] == [3, 3, 3, 1]


@pytest.mark.parametrize("method,key,_", LISTS)
def test_P5_list_changes_between_pages_neither_repeat_nor_skip(method, key, _):
    server = many(10, 3)
    ident, fmt = IDENT[key]
    with Client(server) as client:
        first = client.request(method)
        shown = [i[ident] for i in first[key]]
        assert shown == [fmt.format(n) for n in range(3)]
        remove_items(server, 2)          # the item the cursor names
        remove_items(server, 0)          # an item already shown
        remove_items(server, 5)          # an item not shown yet
        add_items(server, 10)            # a new item
        rest, _pages = walk_pages(client.request, method, key, {"cursor": first["nextCursor"]})
    rest = [i[ident] for i in rest]
    assert rest == [fmt.format(n) for n in (3, 4, 6, 7, 8, 9, 10)]


def test_page_size_none_is_one_page():
    with Client(many(10, None)) as client:
        result = client.request("tools/list")
    assert len(result["tools"]) == 10 and "nextCursor" not in result


def test_P6_the_client_follows_an_empty_string_cursor():
    """An empty string is a valid cursor, which a client MUST NOT take for the end of the
    results: only a missing nextCursor is."""
    server = Server("empty-cursor")
    server.tool(lambda: "", name="a")         # the tools capability
    pages = {None: {"tools": [{"name": "a", "inputSchema": {"type": "object"}}],
                    "nextCursor": ""},
             "": {"tools": [{"name": "b", "inputSchema": {"type": "object"}}]}}
    server.handlers["tools/list"] = lambda ctx, params: pages[params.get("cursor")]
    with Client(server) as client:
        assert [t["name"] for t in client.list_tools()] == ["a", "b"]


def test_a_string_argument_typed_a_number_or_a_literal_takes_either():
    """Prompt arguments and URI variables arrive as strings: "10" for int | Literal["all"]
    is the number, "all" the literal, and anything else is refused naming both."""
    from typing import Literal
    server = Server("either")

    @server.prompt
    def top(limit: int | Literal["all"]) -> str:
        return f"limit={limit!r}"

    @server.resource("test://items/{limit}")
    def items(limit: int | Literal["all"]) -> str:
        return f"limit={limit!r}"
    with Client(server) as client:
        said = [client.get_prompt("top", {"limit": value})["messages"][0]["content"]["text"]
                for value in ("10", "all")]
        read = [client.read_resource(f"test://items/{value}")["contents"][0]["text"]
                for value in ("10", "all")]
        with pytest.raises(JSONRPCError) as info:
            client.get_prompt("top", {"limit": "some"})
    assert said == read == ["limit=10", "limit='all'"]
    assert info.value.code == -32602 and "limit" in info.value.message


def test_only_the_argument_that_did_not_fit_is_parsed_again():
    """Whether "s" stays the string it was sent as must not depend on another argument."""
    from typing import Literal
    server = Server("either")

    @server.prompt
    def show(n: int | Literal["all"], s: str | list[str]) -> str:
        return f"{n!r} {s!r}"
    with Client(server) as client:
        texts = [client.get_prompt("show", {"n": n, "s": '["a", "b"]'})["messages"][0]
                 ["content"]["text"] for n in ("all", "10")]
    assert texts == ["'all' '[\"a\", \"b\"]'", "10 '[\"a\", \"b\"]'"]
