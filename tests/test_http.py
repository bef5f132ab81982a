"""Streamable HTTP: ``server.wsgi`` called in-process for the HTTP rules of both eras, and the
embedded wsgiref server (``mcp_min.py serve --http``) as a subprocess for what needs a real
socket: keep-alive, streams, a client that goes away."""

import functools
import http.client
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, SERVERS

import mcp_min
from mcp_min import Context, Server

V = mcp_min.V2026_07
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT = "application/json, text/event-stream"


# -- in-process: a WSGI call --------------------------------------------------------------------
def wsgi_call(app, method="POST", body=None, headers=None, path="/mcp", remote="127.0.0.1"):
    """Call a WSGI app once; returns (status code, headers dict, body bytes)."""
    status, response_headers, result = wsgi_open(app, method, body, headers, path, remote)
    try:
        data = b"".join(result)
    finally:
        getattr(result, "close", lambda: None)()
    return status, response_headers, data


def wsgi_open(app, method="POST", body=None, headers=None, path="/mcp", remote="127.0.0.1"):
    """Call a WSGI app and start its response; returns (status code, headers dict, the
    iterable of the body, to read and close as a WSGI server does)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None \
        else b""
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "wsgi.input": io.BytesIO(raw),
               "CONTENT_LENGTH": str(len(raw)), "CONTENT_TYPE": "application/json",
               "HTTP_HOST": "127.0.0.1:8000", "HTTP_ACCEPT": ACCEPT, "REMOTE_ADDR": remote,
               "wsgi.url_scheme": "http", "SERVER_NAME": "127.0.0.1"}
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ[key] = value
        elif value is None:
            environ.pop(f"HTTP_{key}", None)
        else:
            environ[f"HTTP_{key}"] = value
    started = {}

    def start_response(status, response_headers, exc_info=None):
        started["status"] = int(status.split()[0])
        started["headers"] = {k.lower(): v for k, v in response_headers}
    result = app(environ, start_response)
    return started["status"], started["headers"], result


def events(data):
    """The JSON messages of an SSE body."""
    return [json.loads(line[6:]) for line in data.decode().splitlines()
            if line.startswith("data: ")]


def modern(method, params=None, rid=1, **meta):
    params = dict(params or {})
    params["_meta"] = {**ENVELOPE, **meta}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def modern_headers(message):
    headers = {"MCP-Protocol-Version": V, "Mcp-Method": message["method"]}
    params = message.get("params", {})
    if message["method"] in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = params.get("name")
    elif message["method"] == "resources/read":
        headers["Mcp-Name"] = params.get("uri")
    return headers


def post_modern(app, method, params=None, rid=1, headers=None, **meta):
    message = modern(method, params, rid, **meta)
    return wsgi_call(app, body=message, headers={**modern_headers(message), **(headers or {})})


def make_server(**settings):
    server = Server("http-test", "1.0", **settings)

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def report(steps: int, ctx: Context) -> str:
        for i in range(1, steps + 1):
            ctx.report_progress(i, total=steps)
        ctx.info("halfway there")
        return "reported"

    @server.tool
    def whoami(ctx: Context) -> str:
        return repr(ctx.principal)

    @server.tool
    def ask_name(ctx: Context) -> str:
        answer = ctx.elicit("Your name?", {"type": "object",
                                           "properties": {"name": {"type": "string"}}})
        return "Hello, " + answer["content"]["name"]

    return server


@pytest.fixture
def app():
    return make_server().wsgi


# -- 2026-07-28 -----------------------------------------------------------------------------------
def test_modern_call_is_json_with_no_session(app):
    status, headers, body = post_modern(app, "tools/call", {"name": "add",
                                                            "arguments": {"a": 2, "b": 3}})
    assert status == 200 and headers["content-type"] == "application/json"
    assert "mcp-session-id" not in headers
    assert int(headers["content-length"]) == len(body)
    result = json.loads(body)["result"]
    assert result["structuredContent"] == {"result": 5} and result["resultType"] == "complete"


def test_every_call_runs_on_the_pool_and_the_http_thread_waits_for_it():
    """One path for every call: the HTTP server's thread hands it to the pool, which
    keeps its stream alive while it lasts, and waits for its response."""
    server, threads = Server("where"), []

    @server.tool
    def where(ms: int = 0) -> str:
        threads.append(threading.get_ident())
        time.sleep(ms / 1000)
        return "here"
    me = threading.get_ident()

    def call(ms=0, **meta):
        status, _, body = post_modern(server.wsgi, "tools/call", {
            "name": "where", "arguments": {"ms": ms}}, **meta)
        assert status == 200 and "here" in body.decode(), body
        return threads[-1]
    assert call() != me and call() != me
    assert call(**{"progressToken": "p"}) != me
    assert call(ms=150) != me


def test_modern_progress_and_logs_stream_before_the_response(app):
    status, headers, body = post_modern(app, "tools/call", {
        "name": "report", "arguments": {"steps": 3}, "_meta": {"progressToken": "p"}},
        **{"io.modelcontextprotocol/logLevel": "info", "progressToken": "p"})
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert headers["x-accel-buffering"] == "no"     # a proxy (nginx) passes each event on at once
    messages = events(body)
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + [
        "notifications/message", None]
    assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
    assert messages[-1]["result"]["content"][0]["text"] == "reported"


def test_modern_without_log_level_sends_no_log_lines(app):
    status, headers, body = post_modern(app, "tools/call", {"name": "report",
                                                            "arguments": {"steps": 0}})
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["result"]["content"][0]["text"] == "reported"


def test_json_only_client_gets_json_and_loses_only_the_notifications(app):
    message = modern("tools/call", {"name": "report", "arguments": {"steps": 2}},
                     progressToken="p")
    status, headers, body = wsgi_call(app, body=message, headers={
        **modern_headers(message), "Accept": "application/json"})
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body)["result"]["content"][0]["text"] == "reported"


@pytest.mark.parametrize("accept, content_type", [
    ("Application/JSON, Text/Event-Stream", "text/event-stream"),   # media types: any case
    ("application/json, text/*", "text/event-stream"),
    ("application/json, text/event-stream;q=0", "application/json"),  # q=0: not acceptable
    ("*/*, text/event-stream; q=0.0", "application/json"),
    ("text/event-stream;q=0, application/json;q=0", None),
    ("application/json-seq", None),
])
def test_accept_is_read_as_http_reads_it(app, accept, content_type):
    message = modern("tools/call", {"name": "report", "arguments": {"steps": 1}},
                     progressToken="p")
    status, headers, _ = wsgi_call(app, body=message, headers={**modern_headers(message),
                                                               "Accept": accept})
    assert (status, headers["content-type"]) == ((200, content_type) if content_type
                                                 else (406, "application/json"))


def test_modern_notification_is_202(app):
    status, _, body = wsgi_call(app, body={"jsonrpc": "2.0", "method": "notifications/whatever"},
                                headers={"MCP-Protocol-Version": V})
    assert status == 202 and body == b""


@pytest.mark.parametrize("change, expected", [
    ({"MCP-Protocol-Version": "2025-11-25"}, "MCP-Protocol-Version"),
    ({"MCP-Protocol-Version": None}, "MCP-Protocol-Version is missing"),
    ({"Mcp-Method": "tools/list"}, "Mcp-Method"),
    ({"Mcp-Method": None}, "Mcp-Method"),
    ({"Mcp-Name": "other"}, "Mcp-Name"),
    ({"Mcp-Name": None}, "Mcp-Name"),         # required for tools/call, as for the other two
])
def test_modern_headers_must_match_the_body(app, change, expected):
    message = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}, rid=7)
    status, _, body = wsgi_call(app, body=message, headers={**modern_headers(message), **change})
    error = json.loads(body)
    assert status == 400 and error["id"] == 7
    assert error["error"]["code"] == -32020 and expected in error["error"]["message"]


def mirroring_server():
    server = Server("mirrors")

    @server.tool(input_schema={"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "shard": {"type": "integer", "x-mcp-header": "Shard"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "where": {"type": "object", "properties": {
            "zone": {"type": "string", "x-mcp-header": "Zone"}}},
        "query": {"type": "string"}}})
    def execute(region, query="", shard=None, dry=None, where=None):
        return f"{region} {shard} {dry}"
    return server


@pytest.mark.parametrize("arguments, headers, ok", [
    ({"region": "us-west1"}, {"Mcp-Param-Region": "us-west1"}, True),
    ({"region": "us-west1"}, {}, False),                      # present in the body: required
    ({"region": "us-west1"}, {"Mcp-Param-Region": "eu-west1"}, False),
    ({"region": "Zürich"}, {"Mcp-Param-Region": "=?base64?WsO8cmljaA==?="}, True),
    ({"region": "r", "shard": 42}, {"Mcp-Param-Region": "r", "Mcp-Param-Shard": "42.0"}, True),
    ({"region": "r", "shard": 42}, {"Mcp-Param-Region": "r", "Mcp-Param-Shard": "43"}, False),
    ({"region": "r", "dry": False}, {"Mcp-Param-Region": "r", "Mcp-Param-Dry-Run": "false"},
     True),
    ({"region": "r", "dry": False}, {"Mcp-Param-Region": "r", "Mcp-Param-Dry-Run": "0"}, False),
    ({"region": "r", "where": {"zone": "b"}}, {"Mcp-Param-Region": "r", "Mcp-Param-Zone": "b"},
     True),
    ({"region": "r", "where": {"zone": "b"}}, {"Mcp-Param-Region": "r"}, False),
    ({"region": "r", "shard": None}, {"Mcp-Param-Region": "r"}, True),    # null: no header
])
def test_arguments_marked_x_mcp_header_must_be_repeated_in_mcp_param_headers(arguments, headers,
                                                                             ok):
    """2026-07-28 over HTTP: a proxy may route on Mcp-Param-{Name}, so the server refuses a
    call whose headers do not say what its arguments say (400, -32020)."""
    message = modern("tools/call", {"name": "execute", "arguments": arguments}, rid=3)
    status, _, body = wsgi_call(mirroring_server().wsgi, body=message,
                                headers={**modern_headers(message), **headers})
    reply = json.loads(body)
    if ok:
        assert status == 200 and "result" in reply, body
    else:
        assert status == 400 and reply["error"]["code"] == -32020, body
        assert "Mcp-Param-" in reply["error"]["message"]


@pytest.mark.parametrize("schema, problem", [
    ({"type": "object", "x-mcp-header": "All"}, "reached from the root"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {
        "type": "string", "x-mcp-header": "A"}}}}, "reached from the root"),
    ({"type": "object", "properties": {"a": {"anyOf": [
        {"type": "string", "x-mcp-header": "A"}]}}}, "reached from the root"),
    ({"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
     "string, integer or boolean"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A B"}}},
     "header name"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}},
     "header name"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Id"},
                                       "b": {"type": "string", "x-mcp-header": "ID"}}}, "unique"),
])
def test_an_x_mcp_header_the_spec_does_not_allow_is_refused_at_registration(schema, problem):
    """Clients drop such a tool from tools/list: better to hear of it when it is made."""
    with pytest.raises(ValueError, match=problem):
        Server("s").tool(lambda **kw: "", name="t", input_schema=schema)


def test_base64_header_values_are_decoded(app):
    server = Server("names")

    @server.resource("test://café")
    def cafe() -> str:
        return "crème"
    message = modern("resources/read", {"uri": "test://café"})
    encoded = "=?base64?" + mcp_min.b64encode("test://café".encode()) + "?="
    status, _, body = wsgi_call(server.wsgi, body=message, headers={
        **modern_headers(message), "Mcp-Name": encoded})
    assert status == 200, body
    assert json.loads(body)["result"]["contents"][0]["text"] == "crème"


@pytest.mark.parametrize("encoded", ["Y!W*R#k", "Y W R k", "YWRk====", "YWR"])
def test_a_base64_header_value_that_is_not_base64_is_refused(app, encoded):
    """Only "YWRk" is "add": the others are refused, not read with what is not base64
    skipped (a proxy routing on the raw header would disagree with the server)."""
    message = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, rid=4)
    good = {**modern_headers(message), "Mcp-Name": "=?base64?YWRk?="}
    assert wsgi_call(app, body=message, headers=good)[0] == 200
    status, _, body = wsgi_call(app, body=message, headers={**good,
                                                            "Mcp-Name": f"=?base64?{encoded}?="})
    assert status == 400 and json.loads(body)["error"]["code"] == -32020, body


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "no/such"])
def test_modern_unknown_or_removed_method_is_404(app, method):
    status, _, body = post_modern(app, method, rid=9)
    assert status == 404
    assert json.loads(body)["error"]["code"] == -32601 and json.loads(body)["id"] == 9


def test_modern_envelope_errors_are_400(app):
    message = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
    status, _, body = wsgi_call(app, body=message, headers=modern_headers(message))
    assert status == 400 and json.loads(body)["error"]["code"] == -32602
    message = modern("tools/list")
    message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
    status, _, body = wsgi_call(app, body=message, headers={
        **modern_headers(message), "MCP-Protocol-Version": "2099-01-01"})
    error = json.loads(body)["error"]
    assert status == 400 and error["code"] == -32022 and error["data"]["requested"] == "2099-01-01"


def test_missing_capability_is_400(app):
    status, _, body = post_modern(app, "tools/call", {"name": "ask_name", "arguments": {}})
    error = json.loads(body)["error"]
    assert status == 400 and error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"elicitation": {}}


def test_mrtr_round_trip_over_http(app):
    caps = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    status, _, body = post_modern(app, "tools/call", {"name": "ask_name", "arguments": {}},
                                  **caps)
    first = json.loads(body)["result"]
    assert status == 200 and first["resultType"] == "input_required"
    (key,) = first["inputRequests"]
    status, _, body = post_modern(app, "tools/call", {
        "name": "ask_name", "arguments": {}, "requestState": first["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}, **caps)
    assert json.loads(body)["result"]["content"][0]["text"] == "Hello, Ada"


def test_get_and_delete_without_sessions_are_405():
    app = make_server(http_sessions=False).wsgi
    for method in ("GET", "DELETE"):
        status, headers, body = wsgi_call(app, method=method)
        assert status == 405 and headers["allow"] == "POST"
        assert json.loads(body)["error"]["code"] == -32600


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("headers, body, status, code", [
    ({"Accept": "text/html"}, None, 406, -32600),
    ({"Content-Type": "text/plain"}, None, 415, -32600),
    ({}, b"{not json", 400, -32700),
    ({}, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600),
    ({}, b'{"jsonrpc":"2.0","id":1}', 400, -32600),
    ({"Content-Length": "abc"}, None, 400, -32600),
])
def test_bad_input_gets_a_status_and_a_jsonrpc_error(app, headers, body, status, code):
    got, _, data = wsgi_call(app, body=body if body is not None else modern("tools/list"),
                             headers={"MCP-Protocol-Version": V, "Mcp-Method": "tools/list",
                                      **headers})
    assert got == status
    assert json.loads(data)["error"]["code"] == code


def test_oversize_body_is_413_and_not_read():
    app = make_server(max_line_bytes=100).wsgi
    message = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2},
                                    "padding": "x" * 200})
    status, _, body = wsgi_call(app, body=message, headers=modern_headers(message))
    assert status == 413 and "100 bytes" in json.loads(body)["error"]["message"]


def test_the_body_limit_is_max_body_bytes_or_max_line_bytes_if_less():
    message = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2},
                                    "padding": "x" * 2000})
    for settings in ({"max_body_bytes": 1000}, {"max_body_bytes": 5000, "max_line_bytes": 1000}):
        app = make_server(**settings).wsgi
        status, _, body = wsgi_call(app, body=message, headers=modern_headers(message))
        assert status == 413 and "1000 bytes" in json.loads(body)["error"]["message"]


def test_a_request_state_over_max_state_bytes_is_refused_before_its_signature(monkeypatch):
    server = make_server(max_state_bytes=1000)
    monkeypatch.setattr(server.request_state, "signature", lambda body: pytest.fail("hashed"))
    status, _, body = post_modern(server.wsgi, "tools/call", {
        "name": "add", "arguments": {"a": 1, "b": 2}, "requestState": "v1." + "A" * 2000})
    error = json.loads(body)["error"]
    assert status == 400 and error["code"] == -32602
    assert "2003 characters long, over the limit of 1000" in error["message"]


def test_a_request_state_too_long_to_be_sent_back_is_not_issued():
    caps = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    status, _, body = post_modern(make_server(max_state_bytes=100).wsgi, "tools/call",
                                  {"name": "ask_name", "arguments": {}}, **caps)
    error = json.loads(body)["error"]
    assert status == 400 and error["code"] == -32602
    assert "over the limit of 100 (Server(max_state_bytes=...))" in error["message"]


def test_the_inflight_budget_is_held_while_a_response_streams_and_no_longer():
    streamed = modern("tools/call", {"name": "report", "arguments": {"steps": 2}},
                      progressToken="p")
    whole = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    size = max(len(json.dumps(streamed)), len(json.dumps(whole)))   # room for one, not two
    server = make_server(max_body_bytes=size, max_inflight_bytes=size + 10)
    status, headers, stream = wsgi_open(server.wsgi, body=streamed,
                                        headers=modern_headers(streamed))
    assert status == 200 and headers["content-type"] == "text/event-stream"
    status, headers, body = wsgi_call(server.wsgi, body=whole, headers=modern_headers(whole))
    error = json.loads(body)["error"]
    assert status == 503 and headers["retry-after"] == "1" and error["code"] == -32603
    assert "max_inflight_bytes" in error["message"]
    assert b'"text":"reported"' in b"".join(stream)
    stream.close()
    assert server._http.inflight == 0
    # A whole answer gives its budget back as it is returned, before it is sent.
    status, _, answer = wsgi_open(server.wsgi, body=whole, headers=modern_headers(whole))
    assert status == 200 and server._http.inflight == 0
    assert json.loads(b"".join(answer))["result"]["structuredContent"] == {"result": 3}


@pytest.mark.parametrize("settings, problem", [
    ({"max_body_bytes": 0}, "max_body_bytes must be an integer of at least 1"),
    ({"max_connections": "100"}, "max_connections must be an integer of at least 1"),
    ({"max_state_bytes": 1.5}, "max_state_bytes must be an integer of at least 1"),
    ({"max_body_bytes": 2000, "max_inflight_bytes": 1000},
     "max_inflight_bytes (1000) must be at least max_body_bytes (2000)")])
def test_the_http_limits_are_checked(settings, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        Server("limits", **settings)

def test_unknown_path_is_404(app):
    status, _, body = wsgi_call(app, body=modern("tools/list"), path="/other")
    assert status == 404 and "/mcp" in json.loads(body)["error"]["message"]


def test_endpoint_path_is_a_setting():
    app = make_server(http_path="/tools/mcp").wsgi
    status, _, _ = post_modern(app, "server/discover")
    assert status == 404
    message = modern("server/discover")
    status, _, body = wsgi_call(app, body=message, headers=modern_headers(message),
                                path="/tools/mcp")
    assert status == 200 and "supportedVersions" in json.loads(body)["result"]


# -- security --------------------------------------------------------------------------------------
def test_foreign_origin_is_403_own_and_listed_ones_pass():
    app = make_server(allowed_origins=["https://app.example"]).wsgi
    for origin, expected in (("https://evil.example", 403), ("http://127.0.0.1:8000", 200),
                             ("http://localhost:3000", 200), ("https://app.example", 200)):
        status, _, _ = post_modern(app, "server/discover", headers={"Origin": origin})
        assert status == expected, origin


@pytest.mark.parametrize("remote", ["127.0.0.1", "::ffff:127.0.0.1", "192.168.1.5", "10.1.2.3"])
def test_a_dns_name_not_allowed_is_421_wherever_the_request_comes_from(app, remote):
    """A browser after DNS rebinding names the attacker's site in Host, whether it reaches
    the server over loopback or over the LAN: only localhost, IP addresses and the names in
    allowed_hosts are this server's."""
    message = modern("server/discover")
    for host in ("evil.example:8000", "127.evil.example", "mcp.example", "x"):
        status, _, body = wsgi_call(app, body=message, remote=remote, headers={
            **modern_headers(message), "Host": host, "Origin": f"http://{host}"})
        error = json.loads(body)["error"]["message"]
        assert status == 421 and "allowed_hosts" in error, host
    for host in ("127.0.0.2:8000", "[::1]:8000", "[::ffff:127.0.0.1]:8000", "LocalHost",
                 "192.168.1.5:8000", "[::ffff:a01:203]", "[2001:db8::1]:443"):
        status, _, _ = wsgi_call(app, body=message, remote=remote, headers={
            **modern_headers(message), "Host": host})
        assert status == 200, host


@pytest.mark.parametrize("host", [None, "", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:0",
                                  "127.0.0.1:80:80", "[::1", "[mcp.example]", "[1.2.3.4]",
                                  "user@127.0.0.1", "127.0.0.1,evil.example", "a b", "127.0.0.1/x"])
def test_a_missing_or_malformed_host_is_400(app, host):
    message = modern("server/discover")
    status, _, body = wsgi_call(app, body=message, headers={**modern_headers(message),
                                                             "Host": host})
    assert status == 400 and "Host" in json.loads(body)["error"]["message"], host


def test_allowed_hosts():
    app = make_server(allowed_hosts=["MCP.example"]).wsgi
    message = modern("server/discover")
    for host, expected in (("mcp.example:443", 200), ("Mcp.Example", 200),
                           ("other.example", 421), ("localhost", 200), ("10.1.2.3", 200)):
        status, _, _ = wsgi_call(app, body=message, remote="10.1.2.3", headers={
            **modern_headers(message), "Host": host})
        assert status == expected, host


@pytest.mark.parametrize("value", ["mcp.example", "mcp.example:443", ["mcp.example:443"],
                                   ["https://mcp.example"], [None], 5])
def test_allowed_hosts_are_names_without_a_port(value):
    with pytest.raises(ValueError, match="allowed_hosts"):
        mcp_min.Server("s", allowed_hosts=value)


@pytest.mark.parametrize("url", ["mcp.example/mcp", "ftp://mcp.example/mcp", "https:///mcp",
                                 "https://mcp.example/mcp?x=1", "https://mcp.example/mcp#f",
                                 'https://mcp.example/m"cp', "https://mcp.example/m\r\ncp",
                                 "https://u@mcp.example/mcp", "https://mcp.example:0/mcp",
                                 " https://mcp.example/mcp", b"https://mcp.example/mcp"])
def test_public_url_is_checked(url):
    with pytest.raises(ValueError, match="public_url"):
        mcp_min.Server("s", public_url=url)


def test_bearer_auth_401_metadata_and_principal(caplog):
    tokens = {"s3cret-token": "alice"}
    app = make_server(auth=tokens.get,
                      authorization_servers=["https://auth.example"]).wsgi
    status, headers, body = post_modern(app, "tools/list")
    assert status == 401
    assert headers["www-authenticate"] == ('Bearer resource_metadata="http://127.0.0.1:8000'
                                           '/.well-known/oauth-protected-resource/mcp"')
    status, headers, _ = post_modern(app, "tools/list",
                                     headers={"Authorization": "Bearer wrong"})
    assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
    status, headers, _ = post_modern(app, "tools/list",     # a scheme it does not take: no
                                     headers={"Authorization": "Basic YTpi"})   # error (RFC 6750)
    assert status == 401 and "error=" not in headers["www-authenticate"]
    status, _, body = wsgi_call(app, method="GET",
                                path="/.well-known/oauth-protected-resource/mcp")
    assert status == 200 and json.loads(body) == {
        "resource": "http://127.0.0.1:8000/mcp", "authorization_servers": ["https://auth.example"],
        "bearer_methods_supported": ["header"]}
    status, _, body = post_modern(app, "tools/call", {"name": "whoami", "arguments": {}},
                                  headers={"Authorization": "Bearer s3cret-token"})
    assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "'alice'"
    assert "s3cret" not in caplog.text


class User:
    """What a user table lookup might return: a fresh object per request."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"User({self.name!r})"


class Anonymous:
    """An object that cannot be told from another: no JSON form, no __repr__."""


#: Auth hooks: one returning a user id, one an object (told apart by its repr).
AUTH_HOOKS = pytest.mark.parametrize("auth", [{"a": "alice", "b": "bob"}.get, User],
                                     ids=["user-id", "object"])


def test_auth_urls_name_the_prefix_the_server_is_mounted_under():
    app = make_server(auth={"t": "alice"}.get).wsgi

    def mounted(environ, start_response):     # as a WSGI middleware serving it under /api
        return app({**environ, "SCRIPT_NAME": "/api"}, start_response)
    status, headers, _ = post_modern(mounted, "tools/list")
    assert status == 401 and headers["www-authenticate"] == (
        'Bearer resource_metadata="http://127.0.0.1:8000/api/.well-known/'
        'oauth-protected-resource/mcp"')
    status, _, body = wsgi_call(mounted, method="GET",
                                path="/.well-known/oauth-protected-resource/mcp")
    assert status == 200 and json.loads(body)["resource"] == "http://127.0.0.1:8000/api/mcp"


@pytest.mark.parametrize("falsy", [None, False, "", 0, {}, []])
def test_a_falsy_principal_is_401(falsy):
    """A hook that answers "is this token good?" says False for a bad one: that is nobody."""
    app = make_server(auth=lambda token: "alice" if token == "good" else falsy).wsgi
    status, headers, _ = post_modern(app, "tools/call", {"name": "whoami", "arguments": {}},
                                     headers={"Authorization": "Bearer wrong"})
    assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
    status, _, body = post_modern(app, "tools/call", {"name": "whoami", "arguments": {}},
                                  headers={"Authorization": "Bearer good"})
    assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "'alice'"


@pytest.mark.parametrize("host, origin, expected", [
    ("192.168.1.5:8000", "http://192.168.1.5:8000", 200),      # its own, over the LAN
    ("192.168.1.5:8000", "http://192.168.1.5:9000", 403),      # another port: another site
    ("192.168.1.5:8000", "http://localhost:8000", 403),        # the server is not local
    ("mcp.example", "https://mcp.example", 200),               # default ports
    ("mcp.example", "https://mcp.example:443", 200),
    ("mcp.example:8443", "https://mcp.example", 403),
    ("MCP.example:8443", "https://mcp.EXAMPLE:8443", 200),
    ("127.0.0.1:8000", "http://localhost:3000", 200),          # both on this machine
    ("127.0.0.1:8000", "null", 403),
    ("127.0.0.1:8000", "http://127.0.0.1:8000/page", 403),     # junk, not an origin
    ("127.0.0.1:8000", "http://user@127.0.0.1:8000", 403),
    ("127.0.0.1:8000", "127.0.0.1:8000", 403),
])
def test_an_origin_is_the_servers_own_only_for_its_checked_host(host, origin, expected):
    app = make_server(allowed_hosts=["mcp.example"]).wsgi
    message = modern("server/discover")
    status, _, body = wsgi_call(app, body=message, remote="192.168.1.9", headers={
        **modern_headers(message), "Host": host, "Origin": origin})
    assert status == expected, json.loads(body)
    if expected == 403:
        assert "allowed_origins" in json.loads(body)["error"]["message"]


def test_a_listed_null_origin_passes_and_star_allows_any():
    message = modern("server/discover")
    for allowed, origin in ((["null"], "null"), (["*"], "https://other.example")):
        app = make_server(allowed_origins=allowed).wsgi
        status, _, _ = wsgi_call(app, body=message, headers={**modern_headers(message),
                                                             "Origin": origin})
        assert status == 200, allowed


METADATA = "/.well-known/oauth-protected-resource/mcp"


def test_the_metadata_endpoint_answers_get_and_head_on_its_own_path_only():
    app = make_server(auth={"t": "alice"}.get).wsgi
    status, headers, body = wsgi_call(app, method="GET", path=METADATA)
    assert status == 200 and json.loads(body)["resource"] == "http://127.0.0.1:8000/mcp"
    status, head_headers, head_body = wsgi_call(app, method="HEAD", path=METADATA)
    assert status == 200 and head_body == b"" and head_headers == headers
    for method in ("POST", "PUT", "DELETE"):
        status, headers, _ = wsgi_call(app, method=method, path=METADATA)
        assert status == 405 and headers["allow"] == "GET, HEAD", method
    for path in ("/.well-known/oauth-protected-resource", METADATA + "/x", METADATA + "/",
                 "/.well-known/oauth-protected-resource/other"):
        status, _, _ = wsgi_call(app, method="GET", path=path)
        assert status == 404, path
    status, _, body = wsgi_call(app, method="GET", path=METADATA,
                                headers={"Host": "evil.example"})
    assert status == 421 and b"evil.example/mcp" not in body
    status, _, _ = wsgi_call(app, method="GET", path=METADATA,
                             headers={"Origin": "https://evil.example"})
    assert status == 403
    status, _, _ = wsgi_call(make_server().wsgi, method="GET", path=METADATA)
    assert status == 404                      # no auth, no metadata


def test_public_url_names_the_resource_and_its_host_is_allowed():
    app = make_server(auth={"t": "alice"}.get, public_url="https://mcp.example.com/mcp").wsgi
    for host in ("mcp.example.com", "127.0.0.1:8000"):
        status, headers, _ = post_modern(app, "tools/list", headers={"Host": host})
        assert status == 401 and headers["www-authenticate"] == (
            'Bearer resource_metadata="https://mcp.example.com/.well-known/'
            'oauth-protected-resource/mcp"'), host
        status, _, body = wsgi_call(app, method="GET", path=METADATA, headers={"Host": host})
        assert status == 200 and json.loads(body)["resource"] == "https://mcp.example.com/mcp"
    status, _, _ = post_modern(app, "tools/list", headers={"Host": "other.example.com"})
    assert status == 421


def test_nothing_a_client_sends_can_break_out_of_www_authenticate():
    """The URLs in it are built from the checked Host and a percent-encoded prefix."""
    app = make_server(auth={"t": "alice"}.get).wsgi

    def mounted(environ, start_response):
        prefix = '/a"b\\c\r\nX: y/\xe9'              # as a WSGI server hands over bytes
        return app({**environ, "SCRIPT_NAME": prefix, "wsgi.url_scheme": 'x"'},
                   start_response)
    status, headers, _ = post_modern(mounted, "tools/list")
    assert status == 401 and headers["www-authenticate"] == (
        'Bearer resource_metadata="http://127.0.0.1:8000/a%22b%5Cc%0D%0AX:%20y/%E9'
        '/.well-known/oauth-protected-resource/mcp"')
    status, headers, _ = post_modern(app, "tools/list",
                                     headers={"Host": '127.0.0.1:1", error="injected'})
    assert status == 400 and "www-authenticate" not in headers


@AUTH_HOOKS
def test_request_state_is_bound_to_the_principal(auth):
    app = make_server(auth=auth).wsgi
    caps = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    _, _, body = post_modern(app, "tools/call", {"name": "ask_name", "arguments": {}},
                             headers={"Authorization": "Bearer a"}, **caps)
    first = json.loads(body)["result"]
    (key,) = first["inputRequests"]
    retry = {"name": "ask_name", "arguments": {}, "requestState": first["requestState"],
             "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}
    status, _, body = post_modern(app, "tools/call", retry,
                                  headers={"Authorization": "Bearer b"}, **caps)
    assert status == 400 and json.loads(body)["error"]["code"] == -32602
    status, _, body = post_modern(app, "tools/call", retry,
                                  headers={"Authorization": "Bearer a"}, **caps)
    assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "Hello, Ada"


def test_a_principal_that_cannot_be_told_apart_is_a_clear_error(caplog):
    """Sessions and calls are counted per principal: one that cannot be told from another is
    refused from the start, the reason in the log."""
    app = make_server(auth=lambda token: Anonymous()).wsgi
    status, _, body = wsgi_call(app, body={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {}}}, headers={"Authorization": "Bearer x"})
    assert status == 500 and "see its log" in json.loads(body)["error"]["message"]
    assert "no JSON form and no __repr__" in caplog.text
    status, _, body = post_modern(app, "tools/call", {"name": "ask_name", "arguments": {}},
                                  headers={"Authorization": "Bearer x"}, **{
                                      "io.modelcontextprotocol/clientCapabilities":
                                      {"elicitation": {}}})
    assert status == 500 and "see its log" in json.loads(body)["error"]["message"]


# -- the handshake era -------------------------------------------------------------------------------
def initialize(app, headers=None, version="2025-11-25"):
    status, response_headers, body = wsgi_call(app, body={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {"elicitation": {}}}}, headers=headers)
    assert status == 200, body
    session = response_headers["mcp-session-id"]
    wsgi_call(app, body={"jsonrpc": "2.0", "method": "notifications/initialized"},
              headers={"Mcp-Session-Id": session, **(headers or {})})
    return session


def test_a_question_the_server_gives_up_on_is_cancelled_where_it_was_asked():
    """No GET stream: the notifications/cancelled for a timed-out elicitation goes in the
    POST's stream, where the question went, and not nowhere."""
    server = make_server(request_timeout=0.3)

    @server.tool
    def ask(ctx: Context) -> str:
        try:
            ctx.elicit("Proceed?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        except TimeoutError:
            return "gave up"
        return "answered"
    session = initialize(server.wsgi)
    status, _, body = wsgi_call(server.wsgi, body={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}},
        headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    events = [json.loads(line[6:]) for line in body.decode().splitlines()
              if line.startswith("data: ")]
    assert [e.get("method") for e in events] == [
        "elicitation/create", "notifications/cancelled", None]
    assert events[1]["params"]["requestId"] == events[0]["id"]
    assert events[2]["result"]["content"][0]["text"] == "gave up"


def test_after_a_json_response_a_helper_thread_can_no_longer_reach_its_request():
    """The request's response came as JSON: what a thread of the tool sends about it later has
    nowhere to go, so a log says False, and a question fails at once, not request_timeout
    seconds later."""
    server = make_server(request_timeout=5)
    later = {}

    @server.tool
    def leave_behind(ctx: Context) -> str:
        def after():
            ctx_done.wait(5)
            time.sleep(0.1)
            later["log"] = ctx.info("still here")
            started = time.monotonic()
            try:
                ctx.elicit("Still there?", {"type": "object", "properties": {}})
            except Exception as e:
                later["elicit"] = type(e).__name__
            later["took"] = time.monotonic() - started
        threading.Thread(target=after).start()
        return "returned"
    ctx_done = threading.Event()
    session = initialize(server.wsgi)
    wsgi_call(server.wsgi, body={"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel",
                                 "params": {"level": "debug"}},
              headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    status, _, body = wsgi_call(server.wsgi, body={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "leave_behind"}},
        headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "returned"
    ctx_done.set()
    deadline = time.monotonic() + 8
    while "took" not in later and time.monotonic() < deadline:
        time.sleep(0.02)
    assert later["log"] is False and later["elicit"] == "ConnectionError"
    assert later["took"] < 1

def test_handshake_session_lifecycle(app):
    session = initialize(app)
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", session)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    status, _, body = wsgi_call(app, body=call, headers={"Mcp-Session-Id": session,
                                                         "MCP-Protocol-Version": "2025-11-25"})
    assert status == 200 and json.loads(body)["result"]["structuredContent"] == {"result": 3}
    assert "resultType" not in json.loads(body)["result"]
    status, _, body = wsgi_call(app, body=call)
    assert status == 400 and "Mcp-Session-Id" in json.loads(body)["error"]["message"]
    status, _, _ = wsgi_call(app, body=call, headers={"Mcp-Session-Id": "nope"})
    assert status == 404
    status, _, _ = wsgi_call(app, body=call, headers={"Mcp-Session-Id": session,
                                                      "MCP-Protocol-Version": "2024-11-05"})
    assert status == 400
    status, _, _ = wsgi_call(app, method="DELETE", headers={"Mcp-Session-Id": session})
    assert status == 204
    status, _, _ = wsgi_call(app, body=call, headers={"Mcp-Session-Id": session})
    assert status == 404


def test_handshake_elicitation_travels_on_the_post_stream(app):
    session = initialize(app)
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "ask_name", "arguments": {}}}
    headers = {"Mcp-Session-Id": session}
    result = {}
    done = threading.Thread(target=lambda: result.update(
        answer=wsgi_call(app, body=call, headers=headers)))
    done.start()                              # the POST waits for its answer meanwhile
    http_session = app.__self__._http.sessions[session]
    deadline = time.monotonic() + 5
    while not http_session.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    (question_id,) = http_session.pending     # the server asked: answer with a new POST
    status, _, _ = wsgi_call(app, body={"jsonrpc": "2.0", "id": question_id, "result": {
        "action": "accept", "content": {"name": "Grace"}}}, headers=headers)
    assert status == 202
    done.join(5)
    status, response_headers, body = result["answer"]
    assert response_headers["content-type"] == "text/event-stream"
    messages = events(body)
    assert messages[0]["method"] == "elicitation/create"
    assert messages[-1]["result"]["content"][0]["text"] == "Hello, Grace"


def test_a_botched_answer_to_the_servers_question_fails_it_at_once():
    """An answer with neither result nor error gets 400, and the question it answers fails
    there and then, as on stdio, instead of waiting for request_timeout."""
    app = make_server(request_timeout=10).wsgi
    session = initialize(app)
    headers = {"Mcp-Session-Id": session}
    result = {}
    done = threading.Thread(target=lambda: result.update(answer=wsgi_call(app, body={
        "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "ask_name", "arguments": {}}}, headers=headers)))
    done.start()
    http_session = app.__self__._http.sessions[session]
    deadline = time.monotonic() + 5
    while not http_session.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    (question_id,) = http_session.pending
    status, _, _ = wsgi_call(app, body={"jsonrpc": "2.0", "id": question_id}, headers=headers)
    assert status == 400
    done.join(3)
    assert not done.is_alive()
    reply = events(result["answer"][2])[-1]["result"]
    assert reply["isError"] is True and "Invalid Request" in reply["content"][0]["text"]


def test_a_question_to_a_json_only_client_fails_at_once():
    """A client that accepts JSON alone cannot be asked anything: it says so, no waiting."""
    app = make_server(request_timeout=2).wsgi
    headers = {"Accept": "application/json"}
    session = initialize(app, headers=headers)
    started = time.monotonic()
    status, _, body = wsgi_call(app, body={"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                           "params": {"name": "ask_name", "arguments": {}}},
                                headers={**headers, "Mcp-Session-Id": session})
    result = json.loads(body)["result"]
    assert status == 200 and result["isError"] is True and time.monotonic() - started < 1
    assert "accepts only application/json" in result["content"][0]["text"]
    assert "elicitation/create" in result["content"][0]["text"]


def test_of_two_gets_at_once_one_gets_the_stream(app, monkeypatch):
    class SlowToOpen(mcp_min.HttpExchange):     # widens the window between check and set
        def __init__(self, *args, **kwargs):
            time.sleep(0.1)
            super().__init__(*args, **kwargs)
    monkeypatch.setattr(mcp_min, "HttpExchange", SlowToOpen)
    session = initialize(app)
    opened = []

    def get():
        status, _, stream = wsgi_open(app, method="GET", headers={
            "Mcp-Session-Id": session, "Accept": "text/event-stream"})
        opened.append((status, stream))
    getters = [threading.Thread(target=get) for _ in range(2)]
    for getter in getters:
        getter.start()
    for getter in getters:
        getter.join(5)
    assert sorted(status for status, _ in opened) == [200, 409]
    for _, stream in opened:
        getattr(stream, "close", lambda: None)()


def test_sessions_are_bounded_and_expire():
    app = make_server(max_sessions=2, session_idle=0.2).wsgi
    first, second = initialize(app), initialize(app)
    third = initialize(app)                   # evicts the first, the longest idle
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert wsgi_call(app, body=ping, headers={"Mcp-Session-Id": first})[0] == 404
    assert wsgi_call(app, body=ping, headers={"Mcp-Session-Id": third})[0] == 200
    time.sleep(0.3)
    assert wsgi_call(app, body=ping, headers={"Mcp-Session-Id": second})[0] == 404


def test_a_session_is_idle_from_the_end_of_its_stream_or_its_call():
    server = make_server(session_idle=0.3, heartbeat=0.05)

    @server.tool
    def wait(seconds: float) -> str:
        time.sleep(seconds)
        return "waited"
    session = initialize(server.wsgi)
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    status, _, stream = wsgi_open(server.wsgi, method="GET", headers={
        **headers, "Accept": "text/event-stream"})
    assert status == 200 and next(iter(stream)) == b": keep-alive\n\n"
    time.sleep(0.4)                           # listening longer than session_idle
    stream.close()                            # the client went away
    assert wsgi_call(server.wsgi, body=ping, headers=headers)[0] == 200
    status, _, body = wsgi_call(server.wsgi, body={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "wait", "arguments": {"seconds": 0.4}}}, headers=headers)
    assert status == 200 and "waited" in body.decode()
    assert wsgi_call(server.wsgi, body=ping, headers=headers)[0] == 200
    time.sleep(0.4)                           # and it does expire, counted from then
    assert wsgi_call(server.wsgi, body=ping, headers=headers)[0] == 404


def test_delete_ends_the_sessions_call_in_flight_and_its_get_stream():
    server = make_server(heartbeat=0.05)
    stopped = threading.Event()

    @server.tool
    def busy(ctx: Context) -> str:
        while not ctx.cancelled:
            time.sleep(0.01)
        stopped.set()
        return "stopped"
    session = initialize(server.wsgi)
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    _, _, stream = wsgi_open(server.wsgi, method="GET", headers={
        **headers, "Accept": "text/event-stream"})
    status, _, call = wsgi_open(server.wsgi, body={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "busy"}},
        headers=headers)
    assert status == 200 and next(iter(call)) == b": keep-alive\n\n"   # still running
    assert wsgi_call(server.wsgi, method="DELETE", headers=headers)[0] == 204
    assert stopped.wait(5)
    bodies = []
    readers = [threading.Thread(target=lambda body=body: bodies.append(b"".join(body)))
               for body in (stream, call)]
    for reader in readers:
        reader.start()
        reader.join(5)
    assert len(bodies) == 2 and not any(b"data:" in body for body in bodies)  # ended, no answer
    assert wsgi_call(server.wsgi, method="GET", headers=headers)[0] == 404


def test_a_failed_initialize_opens_no_session():
    app = make_server(max_sessions=1).wsgi
    session = initialize(app)
    _, headers, body = wsgi_call(app, body={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                            "params": {}})
    assert "error" in json.loads(body) and "mcp-session-id" not in headers
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert wsgi_call(app, body=ping, headers={"Mcp-Session-Id": session})[0] == 200


@AUTH_HOOKS
def test_session_belongs_to_its_principal(auth):
    app = make_server(auth=auth).wsgi
    session = initialize(app, headers={"Authorization": "Bearer a"})
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert wsgi_call(app, body=ping, headers={"Mcp-Session-Id": session,
                                              "Authorization": "Bearer b"})[0] == 404
    assert wsgi_call(app, body=ping, headers={"Mcp-Session-Id": session,
                                              "Authorization": "Bearer a"})[0] == 200


def test_stateless_handshake_mode_serves_without_initialize():
    app = make_server(http_sessions=False).wsgi
    status, headers, body = wsgi_call(app, body={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
    assert status == 200 and "mcp-session-id" not in headers
    status, _, body = wsgi_call(app, body={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                           "params": {"name": "add",
                                                      "arguments": {"a": 4, "b": 5}}},
                                headers={"MCP-Protocol-Version": "2025-06-18"})
    assert status == 200 and json.loads(body)["result"]["structuredContent"] == {"result": 9}
    status, _, body = wsgi_call(app, body={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                           "params": {"name": "ask_name", "arguments": {}}},
                                headers={"MCP-Protocol-Version": "2025-11-25"})
    result = json.loads(body)["result"]                       # no one to ask, and why
    assert result["isError"] is True and "http_sessions=False" in result["content"][0]["text"]
    for version in ("1999-01-01", "garbage"):
        status, _, body = wsgi_call(app, body={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                                    headers={"MCP-Protocol-Version": version})
        message = json.loads(body)["error"]["message"]
        assert status == 400 and f"unsupported MCP-Protocol-Version {version!r}" in message


def test_a_2025_03_26_session_takes_a_batch_and_answers_it_as_one_array(app):
    session = initialize(app, version="2025-03-26")
    headers = {"Mcp-Session-Id": session}
    status, response_headers, body = wsgi_call(app, body=[
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}], headers=headers)
    assert status == 200 and response_headers["content-type"] == "application/json"
    replies = json.loads(body)
    assert [reply["id"] for reply in replies] == [1, 2]
    assert replies[1]["result"]["content"][0]["text"] == "3"
    # what comes before the replies streams first, then the replies as one event
    status, response_headers, body = wsgi_call(app, body=[
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "report", "arguments": {"steps": 1}, "_meta": {"progressToken": "p"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"}], headers=headers)
    messages = events(body)
    assert status == 200 and response_headers["content-type"] == "text/event-stream"
    assert messages[0]["method"] == "notifications/progress"
    assert sorted(reply["id"] for reply in messages[-1]) == [3, 4]
    status, _, body = wsgi_call(app, body=[                   # nothing to answer: 202
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": 99, "result": {}}], headers=headers)
    assert status == 202 and body == b""
    status, _, body = wsgi_call(app, body=[], headers=headers)
    assert status == 400 and "empty batch" in json.loads(body)["error"]["message"]


def test_a_batch_is_refused_outside_a_2025_03_26_session():
    ping = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
    app = make_server().wsgi
    status, _, body = wsgi_call(app, body=ping, headers={"Mcp-Session-Id": initialize(app)})
    error = json.loads(body)["error"]
    assert status == 400 and error["code"] == -32600 and "2025-11-25" in error["message"]
    app = make_server(http_sessions=False).wsgi
    status, _, body = wsgi_call(app, body=ping, headers={"MCP-Protocol-Version": "2025-03-26"})
    error = json.loads(body)["error"]
    assert status == 400 and error["code"] == -32600 and "session" in error["message"]


# -- the embedded server: a real socket ----------------------------------------------------------
class HttpServerProcess:
    def __init__(self, script, *extra, env=None):
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "mcp_min.py"), "serve", "--http", "127.0.0.1:0",
             *extra, str(script)], stderr=subprocess.PIPE, cwd=ROOT, env=env)
        line = self.proc.stderr.readline().decode()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert match, line
        self.port = int(match.group(1))

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def served():
    server = HttpServerProcess(SERVERS / "modern.py")
    yield server
    server.close()


def send(connection, message, headers=None):
    body = json.dumps(message)
    connection.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                              "Accept": ACCEPT, **modern_headers(message),
                                              **(headers or {})})
    return connection.getresponse()


def open_session(connection):
    """initialize over a real connection; returns the headers its session's requests carry."""
    connection.request("POST", "/mcp", json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        {"Content-Type": "application/json", "Accept": ACCEPT})
    response = connection.getresponse()
    response.read()
    return {"Mcp-Session-Id": response.getheader("Mcp-Session-Id"),
            "MCP-Protocol-Version": "2025-11-25"}


def test_keep_alive_serves_many_requests_on_one_connection(served):
    connection = served.connection()
    for i in range(20):
        response = send(connection, modern("tools/call", {"name": "add",
                                                          "arguments": {"a": i, "b": 1}}, rid=i))
        assert response.status == 200 and response.version == 11
        assert json.loads(response.read())["result"]["structuredContent"] == {"result": i + 1}
    # a stream (chunked) on the same connection, then a JSON response again
    response = send(connection, modern("tools/call", {"name": "report", "arguments": {"steps": 2}},
                                       rid=99, progressToken="t"))
    assert response.getheader("Transfer-Encoding") == "chunked"
    assert [m.get("method") for m in events(response.read())][:2] == [
        "notifications/progress"] * 2
    response = send(connection, modern("tools/list", rid=100))
    assert response.status == 200 and json.loads(response.read())["result"]["tools"]
    connection.close()


def test_a_burst_of_new_connections_is_queued_until_accepted():
    """Connections the server has not accepted yet wait in the listening socket's queue: past
    its length, a client's connect waits for its SYN to be sent again (a second or more)."""
    httpd = mcp_min.make_http_server(make_server().wsgi, "127.0.0.1", 0)
    clients = []
    try:                                      # not serving: nothing is accepted meanwhile
        for _ in range(32):
            clients.append(socket.create_connection(httpd.server_address, timeout=0.5))
    finally:
        for client in clients:
            client.close()
        httpd.server_close()
    assert len(clients) == 32


def test_refused_request_does_not_poison_the_connection(served):
    connection = served.connection()
    response = send(connection, modern("tools/list"), headers={"Origin": "https://evil.example"})
    assert response.status == 403
    response.read()
    response = send(connection, modern("tools/list", rid=2))
    assert response.status == 200 and json.loads(response.read())["id"] == 2
    connection.close()


def raw_exchange(port, data):
    """Send raw bytes on a new connection; what comes back until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def raw_request(port, method, message=None, body=None, **headers):
    """An HTTP/1.1 request as bytes: POSTing ``message`` with its 2026-07-28 headers (and
    ``body`` as sent, if given); ``headers`` as name=value (``_`` for ``-``), or bytes."""
    fields = {"Host": f"127.0.0.1:{port}"}
    if message is not None:
        fields.update({"Content-Type": "application/json", "Accept": ACCEPT,
                       **modern_headers(message)})
        if body is None:
            body = json.dumps(message).encode()
            fields["Content-Length"] = len(body)
    fields.update({name.replace("_", "-"): value for name, value in headers.items()})
    head = b"".join(b"%s: %s\r\n" % (name.encode(), value if isinstance(value, bytes)
                                       else str(value).encode())
                    for name, value in fields.items())
    return b"%s /mcp HTTP/1.1\r\n%s\r\n%s" % (method.encode(), head, body or b"")


def json_body(response):
    return json.loads(response.partition(b"\r\n\r\n")[2])


@pytest.mark.parametrize("length", [b"abc", b"-5", b"+5", b"5 5", b"\xb2",
                                    b"5\r\nContent-Length: 6"])
def test_invalid_content_length_is_400_and_closes_the_connection(served, length):
    """Where the body ends is unknown: it must not be served as a request of its own."""
    inner = raw_request(served.port, "POST", modern("tools/list", rid=99))
    received = raw_exchange(served.port, raw_request(
        served.port, "POST", modern("tools/list"), body=inner, Content_Length=length))
    assert received.startswith(b"HTTP/1.1 400 ") and received.count(b"HTTP/1.1") == 1
    assert b"Connection: close" in received
    assert json_body(received)["error"]["message"] == "Bad Request: invalid Content-Length"


@pytest.mark.parametrize("name", ["Content-Length", "Accept"])
def test_whitespace_before_a_header_colon_is_400_and_closes_the_connection(served, name):
    """HTTP refuses such a header (RFC 9112 5.1). The parser would drop it and the headers
    after it: without its Content-Length, the body would be served as a request of its own."""
    inner = raw_request(served.port, "POST", modern("tools/list", rid=99))
    request = raw_request(served.port, "POST", modern("tools/list"), body=inner,
                          Content_Length=len(inner))
    received = raw_exchange(served.port, request.replace(f"\r\n{name}:".encode(),
                                                         f"\r\n{name} :".encode(), 1))
    assert received.startswith(b"HTTP/1.1 400 ") and received.count(b"HTTP/1.1") == 1
    assert b"Connection: close" in received


def test_blanks_around_the_content_length_are_no_part_of_it(served):
    message = modern("tools/list")
    length = len(json.dumps(message))
    received = raw_exchange(served.port, raw_request(
        served.port, "POST", message, Connection="close", Content_Length=f"{length} \t"))
    assert received.startswith(b"HTTP/1.1 200 ") and json_body(received)["result"]["tools"]


@pytest.mark.parametrize("target, host, status", [
    ("http://127.0.0.1:{port}/mcp", "127.0.0.1:{port}", 200),
    ("http://127.0.0.1:{port}/mcp", "evil.example", 200),  # the target's host, not Host's
    ("http://evil.example/mcp", "127.0.0.1:{port}", 421),
    ("http://user@127.0.0.1:{port}/mcp", "127.0.0.1:{port}", 400),
])
def test_a_request_in_absolute_form_is_served_for_the_host_it_names(served, target, host,
                                                                    status):
    request = raw_request(served.port, "POST", modern("tools/list"), Connection="close",
                          Host=host.format(port=served.port))
    request = request.replace(b" /mcp ", b" %s " % target.format(port=served.port).encode(), 1)
    received = raw_exchange(served.port, request)
    assert received.startswith(b"HTTP/1.1 %d " % status)


def test_an_http_1_0_client_asking_for_keep_alive_is_told_it_may_reuse_the_connection(served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
        for rid, connection in ((1, "keep-alive"), (2, "close")):
            request = raw_request(served.port, "POST", modern("tools/list", rid=rid),
                                  Connection=connection)
            sock.sendall(request.replace(b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1))
            response = http.client.HTTPResponse(sock)
            response.begin()
            assert response.status == 200 and json.loads(response.read())["id"] == rid
            told = response.getheader("Connection") == "keep-alive"
            assert told == (connection == "keep-alive")
        assert sock.recv(1) == b""            # closed after the request that did not ask


def test_chunked_body_is_411_on_the_embedded_server(served):
    """wsgiref reads no chunked body: it says so (gunicorn reads one)."""
    message = modern("tools/list")
    body = json.dumps(message).encode()
    received = raw_exchange(served.port, raw_request(
        served.port, "POST", message, body=b"%X\r\n%s\r\n0\r\n\r\n" % (len(body), body),
        Transfer_Encoding="chunked"))
    assert received.startswith(b"HTTP/1.1 411 ") and b"Connection: close" in received
    assert "Content-Length" in json_body(received)["error"]["message"]


def test_head_and_204_responses_have_no_body(served):
    """A body after them would be read as the next response on a kept-alive connection."""
    received = raw_exchange(served.port, raw_request(served.port, "HEAD") + raw_request(
        served.port, "POST", modern("tools/list", rid=2), Connection="close"))
    head_response, _, rest = received.partition(b"\r\n\r\n")
    assert head_response.startswith(b"HTTP/1.1 405 ")
    assert rest.startswith(b"HTTP/1.1 200 ") and json_body(rest)["id"] == 2
    connection = served.connection()
    session = open_session(connection)
    connection.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session["Mcp-Session-Id"]})
    response = connection.getresponse()
    assert response.status == 204 and response.getheader("Content-Length") is None
    assert response.read() == b""
    response = send(connection, modern("tools/list", rid=3))     # the connection still serves
    assert response.status == 200 and json.loads(response.read())["id"] == 3
    connection.close()


def test_listen_stream_delivers_list_changes(served):
    listener = served.connection()
    response = send(listener, modern("subscriptions/listen",
                                     {"notifications": {"toolsListChanged": True}}, rid="L1"))
    assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
    lines = []

    def read_events():
        try:
            for raw in response:
                if raw.startswith(b"data: "):
                    lines.append(json.loads(raw[6:]))
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass                              # the test hung up
    reader = threading.Thread(target=read_events, daemon=True)
    reader.start()
    deadline = time.monotonic() + 5
    while not lines and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lines and lines[0]["method"] == "notifications/subscriptions/acknowledged"
    caller = served.connection()
    for present in (True, False):
        send(caller, modern("tools/call", {"name": "toggle",
                                           "arguments": {"present": present}})).read()
    while len(lines) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [m["method"] for m in lines[1:3]] == ["notifications/tools/list_changed"] * 2
    assert lines[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1"
    listener.sock.shutdown(socket.SHUT_RDWR)
    reader.join(5)
    response.close()
    listener.close()
    caller.close()


SLOW_SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from mcp_min import Server, Context
server = Server("slow", max_workers=1, heartbeat=0.1)

@server.tool
def slow(ctx: Context) -> str:
    while True:
        ctx.check_cancelled()
        time.sleep(0.01)

@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""


def test_client_that_goes_away_cancels_its_call(tmp_path):
    script = tmp_path / "slow_server.py"
    script.write_text(SLOW_SERVER.format(root=str(ROOT)))
    server = HttpServerProcess(script)
    try:
        connection = server.connection()
        response = send(connection, modern("tools/call", {"name": "slow", "arguments": {}}))
        assert response.getheader("Content-Type") == "text/event-stream"   # heartbeats
        connection.sock.shutdown(socket.SHUT_RDWR)
        response.close()
        connection.close()
        # The only worker is busy until the call is cancelled: this call needs it.
        other = server.connection()
        response = send(other, modern("tools/call", {
            "name": "add", "arguments": {"a": 1, "b": 1}}))
        body = response.read()                # SSE if it waited past a heartbeat, else JSON
        if response.getheader("Content-Type") == "text/event-stream":
            (message,) = events(body)
        else:
            message = json.loads(body)
        assert message["result"]["structuredContent"] == {"result": 2}
        other.close()
    finally:
        server.close()


def test_a_handshake_era_client_that_goes_away_does_not_cancel_its_call():
    """2025-11-25: "Disconnection SHOULD NOT be interpreted as the client cancelling its
    request" (notifications/cancelled is how it cancels): the call runs to its end."""
    server, outcome = make_server(), []

    @server.tool
    def chore(ctx: Context) -> str:
        for _ in range(40):                   # 1 s, looking for a cancellation all along
            if ctx.cancelled:
                outcome.append("cancelled")
                return "stopped"
            time.sleep(0.025)
        outcome.append("done")
        return "done"
    httpd = mcp_min.make_http_server(server.wsgi, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        connection = http.client.HTTPConnection(*httpd.server_address, timeout=10)
        headers = {"Content-Type": "application/json", "Accept": ACCEPT,
                   **open_session(connection)}
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "chore"}}
        connection.request("POST", "/mcp", json.dumps(call), headers)
        time.sleep(0.3)                       # the call is running
        connection.sock.shutdown(socket.SHUT_RDWR)
        connection.close()
        deadline = time.monotonic() + 5
        while not outcome and time.monotonic() < deadline:
            time.sleep(0.02)
        assert outcome == ["done"]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_client_is_not_taken_for_gone_when_the_server_has_many_files_open():
    """Whether a client is still there is asked every 0.25 s during a call: it must work for
    a connection past descriptor 1023 (a busy server), where select() fails."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200 and hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("needs more than 1200 open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    server = make_server()

    @server.tool
    def nap() -> str:
        time.sleep(0.6)
        return "rested"
    httpd = mcp_min.make_http_server(server.wsgi, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    fillers = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        connection = http.client.HTTPConnection(*httpd.server_address, timeout=10)
        response = send(connection, modern("tools/call", {"name": "nap", "arguments": {}}))
        assert response.status == 200 and b"rested" in response.read()
        connection.close()
    finally:
        for fd in fillers:
            os.close(fd)
        httpd.shutdown()
        httpd.server_close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


GRACEFUL_SERVER = """
import contextlib, sys, time
sys.path.insert(0, {root!r})
from mcp_min import Server, Context

@contextlib.contextmanager
def life(server):
    state = {{"db": "open"}}
    yield state
    state["db"] = "closed"
    print("lifespan exited", file=sys.stderr, flush=True)

server = Server("graceful", lifespan=life, grace_period=5)

@server.tool
def work(ctx: Context) -> str:
    print("working", file=sys.stderr, flush=True)
    time.sleep(0.5)
    return "done, the db is " + ctx.lifespan["db"]
"""


def test_sigterm_lets_calls_in_flight_finish_before_the_lifespan_exits(tmp_path):
    script = tmp_path / "graceful_server.py"
    script.write_text(GRACEFUL_SERVER.format(root=str(ROOT)))
    server = HttpServerProcess(script)
    listener, idle, calling = server.connection(), server.connection(), server.connection()
    try:
        stream = send(listener, modern("subscriptions/listen",
                                       {"notifications": {"toolsListChanged": True}}))
        assert send(idle, modern("tools/list")).read()        # kept alive, then idle
        answer = {}
        caller = threading.Thread(target=lambda: answer.update(
            response=send(calling, modern("tools/call", {"name": "work"}))))
        caller.start()
        assert server.proc.stderr.readline() == b"working\n"
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        events = [json.loads(line[6:]) for line in stream.read().decode().splitlines()
                  if line.startswith("data: ")]  # the listen stream ends, not waited for,
        ended = events[-1]                     # with the response that says it ended well
        assert ended["id"] == events[0]["params"]["_meta"][mcp_min.SUBSCRIPTION_ID_KEY]
        assert ended["result"]["resultType"] == "complete"
        assert ended["result"]["_meta"][mcp_min.SUBSCRIPTION_ID_KEY] == ended["id"]
        response = send(idle, modern("tools/list", rid=2))
        assert response.status == 503 and response.getheader("Connection") == "close"
        assert "shutting down" in json.loads(response.read())["error"]["message"]
        caller.join(5)
        response = answer["response"]
        assert response.status == 200
        assert json.loads(response.read())["result"]["content"][0]["text"] == (
            "done, the db is open")
        assert server.proc.wait(5) == 0 and time.monotonic() - started < 3
        assert server.proc.stderr.read() == b"lifespan exited\n"
    finally:
        for connection in (listener, idle, calling):
            connection.close()
        server.close()


# The stop signal comes while the server is taking a connection: after the connection's thread
# has started, before socketserver returns to its loop, whose "except: close the connection;
# raise" would cut the connection under that thread.
SIGNAL_AS_TAKEN_SERVER = """
import os, select, signal, socketserver, sys, threading, time
sys.path.insert(0, {root!r})
from mcp_min import Server

server = Server("taken", grace_period=5)
working = threading.Event()

@server.tool
def work() -> str:
    working.set()
    time.sleep(0.3)
    return "done"

process_request = socketserver.ThreadingMixIn.process_request
setup = socketserver.StreamRequestHandler.setup

def taking(self, request, client_address):
    process_request(self, request, client_address)          # its thread started
    if {unread}:
        select.select([request], [], [], 5)                  # the request came, not yet read
    else:
        working.wait(5)                                      # the request is being served
    os.kill(os.getpid(), signal.SIGTERM)

def late_setup(self):
    if {unread}:
        time.sleep(0.3)                                      # the thread reads after the stop
    setup(self)

socketserver.ThreadingMixIn.process_request = taking
socketserver.StreamRequestHandler.setup = late_setup
"""


@pytest.mark.parametrize("unread", [False, True], ids=["request_in_progress", "request_unread"])
def test_a_stop_signal_while_a_connection_is_taken_drops_no_request(tmp_path, unread):
    script = tmp_path / "taken_server.py"
    script.write_text(SIGNAL_AS_TAKEN_SERVER.format(root=str(ROOT), unread=unread))
    server = HttpServerProcess(script)
    connection = server.connection()
    try:
        response = send(connection, modern("tools/call", {"name": "work"}))
        body = json.loads(response.read())
        if unread:                            # read once the stop began: refused, not dropped
            assert response.status == 503 and "shutting down" in body["error"]["message"]
        else:                                 # begun before the stop: answered
            assert response.status == 200 and body["result"]["content"][0]["text"] == "done"
        assert server.proc.wait(5) == 0
    finally:
        connection.close()
        server.close()


RUN_HTTP_THEN_REPORT = """
import json, signal, sys
sys.path.insert(0, {root!r})
from mcp_min import Server

signal.signal(signal.SIGTERM, signal.SIG_IGN)           # the application's own choice
server = Server("host")

@server.tool
def during() -> str:
    return signal.getsignal(signal.SIGTERM).__qualname__

handlers = [signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)]
code = server.run_http("127.0.0.1:0")
restored = handlers == [signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)]
print(json.dumps({{"code": code, "restored": restored}}))
"""


def test_run_http_stops_on_sigterm_and_gives_the_signal_handlers_back(tmp_path):
    script = tmp_path / "host.py"
    script.write_text(RUN_HTTP_THEN_REPORT.format(root=str(ROOT)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        port = int(re.search(rb"127\.0\.0\.1:(\d+)/mcp", proc.stderr.readline())[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        response = send(connection, modern("tools/call", {"name": "during"}))
        handler = json.loads(response.read())["result"]["content"][0]["text"]
        connection.close()
        assert handler.endswith(".stop")      # run_http's, while it serves
        proc.send_signal(signal.SIGTERM)
        assert json.loads(proc.communicate(timeout=10)[0]) == {"code": 0, "restored": True}
    finally:
        proc.kill()
        proc.wait()


def test_several_processes_offer_no_changes_they_cannot_deliver(caplog):
    server = make_server(http_sessions=False)

    @server.resource("test://r")
    def r() -> str:
        return "r"

    @server.prompt
    def p() -> str:
        return "p"
    status, _, body = post_modern(server.wsgi, "server/discover")
    assert json.loads(body)["result"]["capabilities"] == {
        "logging": {}, "tools": {}, "resources": {}, "prompts": {}}
    assert "MCP_MIN_STATE_KEY" in caplog.text     # a retry may reach another worker
    _, _, body = wsgi_call(server.wsgi, body={
        "jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "test://r"}},
        headers={"MCP-Protocol-Version": "2025-11-25"})
    assert json.loads(body)["error"]["code"] == -32601
    status, _, body = post_modern(server.wsgi, "subscriptions/listen", {
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://r"]}})
    assert status == 404 and json.loads(body)["error"]["code"] == -32601


def test_listen_needs_an_event_stream(app):
    message = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    status, _, body = wsgi_call(app, body=message, headers={**modern_headers(message),
                                                            "Accept": "application/json"})
    assert status == 406 and "text/event-stream" in json.loads(body)["error"]["message"]


def test_a_resource_update_finds_its_listens_in_a_few_lookups():
    """notify_resource_updated runs inside tools: with 300 listens of 1,000 URIs each it
    takes a few set lookups per listen, not a look at each of 300,000 URIs."""
    server = make_server(max_streams=400)

    @server.resource("docs://{name}")
    def doc(name: str) -> str:
        return name
    streams = []
    for i in range(300):
        uris = [f"docs://{i}/{j}" for j in range(1000)]
        message = modern("subscriptions/listen", {"notifications": {
            "resourceSubscriptions": uris}}, rid=i)
        status, _, stream = wsgi_open(server.wsgi, body=message, headers=modern_headers(message))
        assert status == 200
        streams.append(stream)
    started = time.perf_counter()
    for _ in range(10):
        server.notify_resource_updated("docs://nobody/listens/to/this")
    took = (time.perf_counter() - started) / 10
    assert took < 0.01, f"{took * 1000:.1f} ms for one update"
    # what covers what is unchanged: the URI itself, or a parent (with or without its "/")
    for uri in ("docs://7/3", "docs://8/3/part", "docs://9/3/"):
        server.notify_resource_updated(uri)
    heard = []
    for i in (7, 8, 9):
        body = iter(streams[i])
        ack, update = events(next(body) + next(body))
        heard.append((update["params"]["_meta"][mcp_min.SUBSCRIPTION_ID_KEY],
                      update["params"]["uri"]))
    assert heard == [(7, "docs://7/3"), (8, "docs://8/3/part"), (9, "docs://9/3/")]
    for stream in streams:
        stream.close()


def test_the_settings_that_bound_what_a_client_holds_are_checked():
    for setting in ("max_sessions", "max_sessions_per_principal", "max_streams",
                    "max_streams_per_principal"):
        with pytest.raises(ValueError, match=setting):
            Server("s", **{setting: 0})
    with pytest.raises(ValueError, match="max_subscriptions"):
        Server("s", max_subscriptions=-1)
    with pytest.raises(ValueError, match="can_subscribe must be a function"):
        Server("s", can_subscribe="everyone")


def test_notification_method_sent_as_a_request_is_refused(app):
    status, _, body = post_modern(app, "notifications/initialized", rid=4)
    error = json.loads(body)["error"]
    assert status == 400 and error["code"] == -32600 and "without an id" in error["message"]


IDLE_SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from mcp_min import Server, Context
server = Server("idle", max_workers=1, heartbeat=0.2, idle_timeout=0.5)

@server.tool
def flood(ctx: Context) -> str:
    step = 0
    while True:                               # until cancelled
        step += 1
        ctx.report_progress(step, message="x" * 65536)
        ctx.check_cancelled()

@server.tool
def wait(seconds: float) -> str:
    time.sleep(seconds)
    return "waited"

@server.tool
def big() -> str:
    return "x" * (8 << 20)

@server.tool
def toggle() -> str:
    server.tool(lambda: "", name="extra")
    return "ok"

@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""


@pytest.fixture(scope="module")
def idle_served(tmp_path_factory):
    script = tmp_path_factory.mktemp("idle") / "idle_server.py"
    script.write_text(IDLE_SERVER.format(root=str(ROOT)))
    server = HttpServerProcess(script)
    yield server
    server.close()


def closed_after(sock, limit=5):
    """Seconds until the server closes ``sock`` (what it sends meanwhile is read)."""
    started = time.monotonic()
    sock.settimeout(limit)
    while sock.recv(65536):
        pass
    return time.monotonic() - started


@pytest.mark.parametrize("sent", ["nothing", "a request line", "part of a body",
                                  "a request, then nothing"])
def test_a_client_silent_for_idle_timeout_loses_its_connection(idle_served, sent):
    """Else each such client holds a thread for ever (slowloris)."""
    port = idle_served.port
    data = {"nothing": b"", "a request line": b"POST /mcp HTTP/1.1\r\nHost: x\r\n",
            "part of a body": raw_request(port, "POST", modern("tools/list"))[:-5],
            "a request, then nothing": raw_request(port, "POST", modern("tools/list"))}[sent]
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(data)
        assert closed_after(sock) < 2


def test_a_client_sending_its_headers_a_byte_at_a_time_loses_its_connection(idle_served):
    """Never silent for idle_timeout, yet it must not keep its thread for ever (slowloris):
    a request's line and headers must all come within idle_timeout."""
    with socket.create_connection(("127.0.0.1", idle_served.port)) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nX-Slow: ")
        started = time.monotonic()
        with pytest.raises(OSError):          # the server closed the connection
            while time.monotonic() < started + 3:
                time.sleep(0.2)
                sock.sendall(b"z")
        assert time.monotonic() - started < 2


def test_a_stream_whose_client_stops_reading_ends_and_its_call_is_cancelled(idle_served):
    """Else what the call sends piles up in the server for as long as the client stays."""
    message = modern("tools/call", {"name": "flood", "arguments": {}}, progressToken="p")
    with socket.create_connection(("127.0.0.1", idle_served.port)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(raw_request(idle_served.port, "POST", message))
        assert sock.recv(12) == b"HTTP/1.1 200"
        time.sleep(1.5)                       # the client reads no more
        # The only worker is busy until the flood is cancelled: this call needs it.
        connection = idle_served.connection()
        response = send(connection, modern("tools/call", {"name": "add", "arguments": {
            "a": 1, "b": 1}}), headers={"Accept": "application/json"})    # no keep-alives
        assert json.loads(response.read())["result"]["structuredContent"] == {"result": 2}
        connection.close()


def test_a_stream_whose_client_reads_slower_than_it_fills_ends(idle_served):
    """A message the client has not taken idle_timeout after it was sent ends its stream and
    cancels the call: else a client that reads, but slowly, lets the queue grow for ever."""
    connection = idle_served.connection()
    connection.connect()
    connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
    response = send(connection, modern("tools/call", {"name": "flood", "arguments": {}},
                                       progressToken="p"))
    received, started, ended = b"", time.monotonic(), False
    while not ended and time.monotonic() < started + 4:
        try:
            chunk = response.read1(1 << 16)
        except http.client.IncompleteRead:    # cut inside a chunk: the socket closed
            chunk = b""
        ended = not chunk
        received += chunk
        if time.monotonic() < started + 1.5:  # 640 KiB/s; the flood, much more
            time.sleep(0.1)
    assert ended                              # the stream ended, with no response
    whole_events = received[:received.rfind(b"\n\n") + 2]
    assert {m.get("method") for m in events(whole_events)} == {"notifications/progress"}
    connection.close()
    connection = idle_served.connection()
    response = send(connection, modern("tools/call", {"name": "add", "arguments": {
        "a": 1, "b": 1}}), headers={"Accept": "application/json"})    # the only worker
    assert json.loads(response.read())["result"]["structuredContent"] == {"result": 2}
    connection.close()


def test_a_slow_client_that_is_still_there_keeps_its_connection(idle_served):
    """A long call (its stream kept alive), a GET stream while nothing happens, a long
    response read slowly: each outlasts idle_timeout."""
    connection = idle_served.connection()
    response = send(connection, modern("tools/call", {"name": "wait",
                                                      "arguments": {"seconds": 1.5}}))
    assert response.getheader("Content-Type") == "text/event-stream"
    assert events(response.read())[-1]["result"]["content"][0]["text"] == "waited"
    session = open_session(connection)
    listener = idle_served.connection()
    listener.request("GET", "/mcp", headers={"Accept": "text/event-stream", **session})
    stream = listener.getresponse()
    assert stream.status == 200
    time.sleep(1.5)
    connection.close()                        # it was idle: the server closed it
    connection = idle_served.connection()
    connection.request("POST", "/mcp", json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "toggle", "arguments": {}}}),
        {"Content-Type": "application/json", "Accept": ACCEPT, **session})
    connection.getresponse().read()
    while (line := stream.readline()) and not line.startswith(b"data: "):
        pass                                  # the keep-alive lines
    assert json.loads(line[6:])["method"] == "notifications/tools/list_changed"
    listener.close()
    connection.close()
    connection = idle_served.connection()
    connection.connect()
    connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 18)
    response = send(connection, modern("tools/call", {"name": "big", "arguments": {}}))
    received = b""
    while chunk := response.read(1 << 18):    # 8 MiB in 2 s: over 0.5 s, but going on
        received += chunk
        time.sleep(0.05)
    (message,) = events(received) or [json.loads(received)]    # SSE if it took 0.2 s
    assert len(message["result"]["content"][0]["text"]) == 8 << 20
    connection.close()


LIFESPAN_HTTP_SERVER = """
import sys, time
from contextlib import contextmanager
sys.path.insert(0, {root!r})
from mcp_min import Context, Server

def say(what):
    print(what, file=sys.stderr, flush=True)

@contextmanager
def life(server):
    yield
    say("lifespan closed")

server = Server("stopping", lifespan=life, grace_period=0.3, cancel_timeout=2.0)

@server.tool
def polite(ctx: Context) -> str:
    say("polite started")
    try:
        while True:
            ctx.check_cancelled()
            time.sleep(0.01)
    finally:
        say(f"polite ended, cancelled={{ctx.cancelled}}")
"""


def test_sigterm_over_http_cancels_calls_left_after_the_grace_period_before_the_lifespan_closes(
        tmp_path):
    """As at the end of input on stdio: told, answered, and only then the lifespan closes."""
    script = tmp_path / "stopping.py"
    script.write_text(LIFESPAN_HTTP_SERVER.format(root=str(ROOT)))
    server = HttpServerProcess(script)
    try:
        connection = server.connection()
        answer = {}

        def call():
            response = send(connection, modern("tools/call", {"name": "polite",
                                                              "arguments": {}}))
            answer["status"], answer["body"] = response.status, response.read()
        thread = threading.Thread(target=call)
        thread.start()
        log = b""
        while b"polite started" not in log:
            log += server.proc.stderr.readline()
        server.proc.send_signal(signal.SIGTERM)
        thread.join(10)
        assert server.proc.wait(10) == 0
        log += server.proc.stderr.read()
        message = json.loads(answer["body"]) if answer["body"][:1] == b"{" else \
            events(answer["body"])[-1]
        assert "shutting down" in message["error"]["message"]
        assert b"polite ended, cancelled=True" in log
        assert log.index(b"polite ended") < log.index(b"lifespan closed")
        connection.close()
    finally:
        server.close()


# -- every call takes the one path: a worker runs it, the HTTP thread waits ---------------
def test_a_call_is_counted_held_by_its_session_and_a_shutdown_waits_for_it():
    """While a 2026-07-28 call runs, on a worker of the pool, it counts against its
    principal's cap and its session (where a shutdown finds the calls to cancel) holds
    it; a shutdown cancels it and waits for it (within cancel_timeout), and its client
    gets the response."""
    server = Server("counted", cancel_timeout=5,
                    auth=lambda token: token == "t" and "alice")
    during, started = [], threading.Event()

    @server.tool
    def slow(ctx: Context, ms: int) -> int:
        sessions = [session for session in server.http_sessions_alive
                    if session.running.get(ctx.request_id) is ctx]
        during.append((threading.get_ident(), dict(server._http.held), sessions))
        started.set()
        time.sleep(ms / 1000)
        return ms
    answers = []
    caller = threading.Thread(target=lambda: answers.append(post_modern(
        server.wsgi, "tools/call", {"name": "slow", "arguments": {"ms": 400}},
        headers={"Authorization": "Bearer t"})))
    caller.start()
    assert started.wait(5)
    [(worker, held, sessions)] = during
    assert worker != caller.ident
    assert held == {'"alice"': 1} and len(sessions) == 1
    began = time.monotonic()
    server._cancel_http_calls(None)
    waited = time.monotonic() - began
    caller.join(5)
    status, _, body = answers[0]
    assert status == 200 and b'"structuredContent":{"result":400}' in body, body
    assert 0.2 < waited < 4
    # given back with the response
    assert server._http.held == {}


def test_a_lifespan_that_failed_is_tried_again_after_lifespan_retry_seconds(caplog):
    """A database down at the first request is not down for good: 503 with Retry-After
    until the retry is due, then the lifespan is entered again, and the request served."""
    from contextlib import contextmanager
    tries = []

    @contextmanager
    def life(server):
        tries.append(time.monotonic())
        if len(tries) == 1:
            raise ConnectionRefusedError("the database is not up yet")
        yield {"db": "up"}

    server = Server("retry", lifespan=life)
    server.lifespan_retry = 0.3

    @server.tool
    def db(ctx: Context) -> str:
        return ctx.lifespan["db"]
    message = modern("tools/call", {"name": "db", "arguments": {}})
    call = functools.partial(wsgi_call, server.wsgi, body=message,
                             headers={**modern_headers(message), "Mcp-Name": "db"})
    for _ in range(2):
        status, headers, body = call()
        assert status == 503 and headers["retry-after"] == "1"
        assert "lifespan failed: ConnectionRefusedError" in body.decode()
    assert len(tries) == 1
    time.sleep(0.35)
    status, _, body = call()
    assert status == 200 and len(tries) == 2
    assert json.loads(body)["result"]["content"] == [{"type": "text", "text": "up"}]
    server.stop_http()
