"""Widgets (MCP Apps, io.modelcontextprotocol/ui, and ChatGPT's keys for the same): a ui://
resource and the tools linked to it, refused at registration when the link is wrong; both
key families, or MCP Apps' alone; the extension declared at initialize and in
server/discover, and ctx.client_shows_widgets in both eras; the text a client without
widgets reads; the gift picker's widget over stdio and HTTP, in both eras.
(tests/test_apps_browser.py shows it in a real browser.)"""

import http.client
import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT, free_port, stop_process

import mcp_min
from mcp_min import Client, Context, Server

UI = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
SHOWS = {"extensions": {UI: {"mimeTypes": [MIME]}}}
PAGE = "<!DOCTYPE html><html><body><p>hello</p></body></html>"
OPENAI_KEYS = {"openai/outputTemplate", "openai/widgetCSP", "openai/widgetDomain",
               "openai/widgetPrefersBorder", "ui/resourceUri"}
GIFT_SERVER = ROOT / "examples" / "gift_server.py"
PICKER = "ui://gift-server/picker.html"
ARGUMENTS = {"occasion": "birthday", "budget": 25, "recipient": "friend who loves board games"}


def widget_server(**settings):
    server = Server("widgets", **settings)

    @server.resource("ui://widgets/board.html", title="Board",
                     csp={"connectDomains": ["https://api.example.com"],
                          "resourceDomains": ["https://cdn.example.com"],
                          "baseUriDomains": ["https://cdn.example.com"]},
                     permissions={"clipboardWrite": {}}, domain="widgets.example.com",
                     prefers_border=False)
    def board() -> str:
        return PAGE

    @server.tool(ui="ui://widgets/board.html")
    def show(n: int, ctx: Context) -> dict:
        """Show n on the board."""
        return {"n": n, "shows_widgets": ctx.client_shows_widgets}

    @server.tool(ui="ui://widgets/board.html", visibility=["app"])
    def refresh() -> str:
        return "refreshed"

    @server.tool
    def plain(ctx: Context) -> bool:
        return ctx.client_shows_widgets

    return server


# -- registration ---------------------------------------------------------------------------
def test_a_ui_resource_is_served_as_mcp_app_html_with_its_options_in_meta_ui():
    server = widget_server()
    with Client(server) as client:
        (listed,) = client.list_resources()
        (content,) = client.read_resource("ui://widgets/board.html")["contents"]
    ui = {"csp": {"connectDomains": ["https://api.example.com"],
                  "resourceDomains": ["https://cdn.example.com"],
                  "baseUriDomains": ["https://cdn.example.com"]},
          "permissions": {"clipboardWrite": {}}, "domain": "widgets.example.com",
          "prefersBorder": False}
    assert listed["mimeType"] == content["mimeType"] == MIME
    assert content["text"] == PAGE
    # on its resources/list entry and on its content alike (hosts read the content's)
    assert listed["_meta"]["ui"] == content["_meta"]["ui"] == ui


def test_a_linked_tool_names_its_widget_and_who_may_call_it():
    with Client(widget_server()) as client:
        tools = {tool["name"]: tool for tool in client.list_tools()}
    assert tools["show"]["_meta"]["ui"] == {"resourceUri": "ui://widgets/board.html"}
    assert tools["refresh"]["_meta"]["ui"] == {"resourceUri": "ui://widgets/board.html",
                                               "visibility": ["app"]}
    assert "_meta" not in tools["plain"]


def test_a_ui_resource_keeps_a_mime_type_and_meta_of_its_own():
    server = Server("widgets")
    server.resource("ui://w/old.html", mime_type="text/html+skybridge",
                    meta={"openai/widgetDescription": "an old one"})(lambda: PAGE)
    (entry,) = [r.describe(mcp_min.LATEST_PROTOCOL_VERSION) for r in server.resources.values()]
    assert entry["mimeType"] == "text/html+skybridge"
    assert entry["_meta"] == {"openai/widgetDescription": "an old one", "ui": {}}


@pytest.mark.parametrize("link, problem", [
    ({"ui": "ui://widgets/none.html"}, "@server.tool(ui='ui://widgets/none.html'): no widget "
                                       "is registered at that URI"),
    ({"ui": "file:///notes.txt"}, "@server.tool(ui='file:///notes.txt'): no widget"),
    ({"visibility": "app"}, "@server.tool(visibility='app'): a list of \"model\" and/or"),
    ({"visibility": ["model", "widget"]}, "visibility=['model', 'widget']"),
])
def test_a_tool_linked_to_no_widget_is_refused_at_registration_naming_it(link, problem):
    server = widget_server()
    server.resource("file:///notes.txt")(lambda: "notes")
    with pytest.raises(ValueError, match=re.escape(problem)):
        server.tool(**link)(lambda: "x")
    assert set(server.tools) == {"show", "refresh", "plain"}


def test_widget_options_on_a_resource_that_is_no_widget_are_refused():
    server = Server("widgets")
    with pytest.raises(TypeError, match="csp"):
        server.resource("file:///notes.txt", csp={})(lambda: "notes")
    assert server.resources == {}


# -- the two key families -------------------------------------------------------------------
def test_chatgpts_keys_say_the_same_in_its_own_names():
    server = widget_server()
    with Client(server) as client:
        (content,) = client.read_resource("ui://widgets/board.html")["contents"]
        tools = {tool["name"]: tool for tool in client.list_tools()}
    meta = content["_meta"]
    assert meta["openai/widgetCSP"] == {"connect_domains": ["https://api.example.com"],
                                        "resource_domains": ["https://cdn.example.com"]}
    assert meta["openai/widgetDomain"] == "widgets.example.com"
    assert meta["openai/widgetPrefersBorder"] is False
    shown = tools["show"]["_meta"]
    assert shown["openai/outputTemplate"] == shown["ui/resourceUri"] == "ui://widgets/board.html"


def test_openai_keys_false_leaves_mcp_apps_keys_alone():
    server = widget_server(openai_keys=False)
    with Client(server) as client:
        (content,) = client.read_resource("ui://widgets/board.html")["contents"]
        tools = client.list_tools()
    assert set(content["_meta"]) == {"ui"}
    assert content["_meta"]["ui"]["domain"] == "widgets.example.com"
    assert [set(tool.get("_meta", {})) for tool in tools] == [{"ui"}, {"ui"}, set()]
    with pytest.raises(TypeError, match="did you mean .openai_keys."):
        Server("x", openai_kyes=False)


# -- negotiation ----------------------------------------------------------------------------
@pytest.mark.parametrize("version, declared", [("2025-11-25", True), ("2025-06-18", True),
                                               ("2025-03-26", False), ("2024-11-05", False)])
def test_initialize_declares_the_extension_from_2025_06_18(version, declared):
    with Client(widget_server(), protocol_version=version) as client:
        extensions = client.server_capabilities.get("extensions")
    assert extensions == ({UI: {}} if declared else None)


def test_server_discover_declares_the_extension_and_a_server_without_widgets_does_not():
    with Client(widget_server(), era=mcp_min.V2026_07) as client:
        assert client.server_capabilities["extensions"] == {UI: {}}
    plain = Server("plain")
    plain.tool(lambda: "x", name="x")
    for era in (mcp_min.HANDSHAKE, mcp_min.V2026_07):
        with Client(plain, era=era) as client:
            assert "extensions" not in client.server_capabilities


@pytest.mark.parametrize("era", [mcp_min.HANDSHAKE, mcp_min.V2026_07])
@pytest.mark.parametrize("capabilities, shows", [
    (SHOWS, True), ({}, False), ({"extensions": {UI: {}}}, False),
    ({"extensions": {UI: {"mimeTypes": ["text/html+skybridge"]}}}, False),
    ({"extensions": {"com.example/other": {"mimeTypes": [MIME]}}}, False),
    # malformed: not a widget client, and no error either
    ({"extensions": [UI]}, False), ({"extensions": {UI: {"mimeTypes": 7}}}, False)])
def test_a_handler_sees_whether_the_client_shows_widgets_in_either_era(era, capabilities,
                                                                        shows):
    with Client(widget_server(), era=era, capabilities=capabilities) as client:
        assert client.stateless == (era != mcp_min.HANDSHAKE)
        assert client.call_tool("plain")["structuredContent"] == {"result": shows}
        assert client.call_tool("show", {"n": 2})["structuredContent"]["shows_widgets"] is shows


# -- text for clients without widgets -------------------------------------------------------
@pytest.mark.parametrize("era", [mcp_min.HANDSHAKE, mcp_min.V2026_07])
def test_a_client_without_widgets_reads_the_same_ideas_as_text(era):
    with Client([sys.executable, str(GIFT_SERVER)], era=era, capabilities={}) as client:
        result = client.call_tool("suggest_gifts", ARGUMENTS)
    (block,) = result["content"]
    assert block["type"] == "text"
    assert json.loads(block["text"]) == result["structuredContent"]
    assert "Dice set with velvet bag" in block["text"]


# -- the gift picker over stdio and HTTP, in both eras --------------------------------------
def check_gift_picker(tools, read, call):
    """What a host needs from the gift server: the link, the widget, the result."""
    tools = {tool["name"]: tool for tool in tools}
    assert tools["suggest_gifts"]["_meta"]["ui"]["resourceUri"] == PICKER
    assert tools["suggest_gifts"]["_meta"]["openai/outputTemplate"] == PICKER
    (content,) = read["contents"]
    assert content["uri"] == PICKER and content["mimeType"] == MIME
    assert content["_meta"]["ui"] == {"prefersBorder": True}
    page = (GIFT_SERVER.parent / "gift_picker.html").read_text(encoding="utf-8")
    assert content["text"] == page and "ui/initialize" in page
    gifts = call["structuredContent"]["gifts"]
    assert [gift["name"] for gift in gifts][0] == "Dice set with velvet bag"
    assert json.loads(call["content"][0]["text"]) == call["structuredContent"]


@pytest.mark.parametrize("era", [mcp_min.HANDSHAKE, mcp_min.V2026_07])
def test_the_gift_picker_over_stdio(era):
    with Client([sys.executable, str(GIFT_SERVER)], era=era, capabilities=SHOWS) as client:
        assert client.server_capabilities["extensions"] == {UI: {}}
        check_gift_picker(client.list_tools(), client.read_resource(PICKER),
                          client.call_tool("suggest_gifts", ARGUMENTS))


class Http:
    """`mcp_min.py serve --http` running the gift server, and a client of it in one era:
    initialize and its session (the handshake era), or every request enveloped."""

    def __init__(self, stateless):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "mcp_min.py"), "serve", "--http",
             f"127.0.0.1:{self.port}", str(GIFT_SERVER)],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.stateless = stateless
        self.headers = {}
        self.ids = iter(range(1, 100))
        try:
            started = self.proc.stderr.readline()
            assert started.startswith("mcp_min: serving gift-server"), started
            if stateless:
                self.capabilities = self.post("server/discover")["capabilities"]
            else:
                result = self.post("initialize", {
                    "protocolVersion": "2025-11-25", "capabilities": SHOWS,
                    "clientInfo": {"name": "t", "version": "1"}})
                self.capabilities = result["capabilities"]
                self.post("notifications/initialized")
        except BaseException:
            self.close()
            raise

    def post(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method, "params": dict(params or {})}
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", **self.headers}
        if not method.startswith("notifications/"):
            message["id"] = next(self.ids)
        if self.stateless:
            message["params"]["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": mcp_min.V2026_07,
                "io.modelcontextprotocol/clientCapabilities": SHOWS}
            headers.update({"MCP-Protocol-Version": mcp_min.V2026_07, "Mcp-Method": method})
            named = message["params"].get("name") or message["params"].get("uri")
            if named:
                headers["Mcp-Name"] = named
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        try:
            connection.request("POST", "/mcp", json.dumps(message), headers)
            response = connection.getresponse()
            body = response.read()
            if "Mcp-Session-Id" in response.headers:
                self.headers = {"Mcp-Session-Id": response.headers["Mcp-Session-Id"],
                                "MCP-Protocol-Version": "2025-11-25"}
        finally:
            connection.close()
        if "id" not in message:
            assert response.status == 202, body
            return None
        if response.headers["Content-Type"].startswith("text/event-stream"):
            body = [line[6:] for line in body.decode().splitlines()
                    if line.startswith("data: ")][-1]
        answer = json.loads(body)
        assert "result" in answer, answer
        return answer["result"]

    def close(self):
        stop_process(self.proc)
        self.proc.stderr.close()


@pytest.mark.parametrize("stateless", [False, True])
def test_the_gift_picker_over_http(stateless):
    http_client = Http(stateless)
    try:
        assert http_client.capabilities["extensions"] == {UI: {}}
        check_gift_picker(http_client.post("tools/list")["tools"],
                          http_client.post("resources/read", {"uri": PICKER}),
                          http_client.post("tools/call", {"name": "suggest_gifts",
                                                          "arguments": ARGUMENTS}))
    finally:
        http_client.close()


# -- docs/widgets.md ------------------------------------------------------------------------
def test_the_examples_of_docs_widgets_run_as_written():
    text = (ROOT / "docs" / "widgets.md").read_text(encoding="utf-8")
    first, second = re.findall(r"```python\n(.*?)```", text, re.S)
    namespace = {}
    exec(first, namespace)
    server = namespace["server"]
    with Client(server) as client:
        (tool,) = client.list_tools()
        assert tool["_meta"]["ui"]["resourceUri"] == "ui://board/view.html"
        (content,) = client.read_resource("ui://board/view.html")["contents"]
        assert content["mimeType"] == MIME and content["_meta"]["ui"] == {"prefersBorder": True}
        assert client.call_tool("roll")["structuredContent"] == {"sides": 6, "value": 4}
    # the second one, in its place
    server.remove_tool("roll")
    exec("import random\nfrom mcp_min import Context, ToolResult\n" + second, namespace)
    for capabilities, text in ((SHOWS, "Rolled 1."), ({}, "Rolled 1 of 1.")):
        with Client(server, capabilities=capabilities) as client:
            result = client.call_tool("roll", {"sides": 1})
        assert result["content"] == [{"type": "text", "text": text}]
        assert result["structuredContent"] == {"sides": 1, "value": 1}
