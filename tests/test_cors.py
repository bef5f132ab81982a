"""Browser clients (CORS): a page on another origin may call the server, and read what it
responds, once the server allows that origin (allowed_origins, the server's own origin, or
this machine's when the server is on it); an origin not allowed gets none of the headers,
and its preflight is refused.

Over raw HTTP, on each engine (the embedded server, granian, gunicorn: the headers are the
WSGI application's): the preflight and each of its headers, the headers of every response
to an allowed origin in both eras (a result, an error, a 401, an SSE stream, a session's
end), an origin not allowed, Private Network Access. In-process: what "*" allows. And in
headless Chromium: a page served from one port calls tools/list and tools/call on a server
on another port with docs/http.md's snippet, and reads the results; with its origin not
allowed, the browser refuses the page the call."""

import html
import http.server
import importlib.util
import json
import re
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, Granian, require_tool, stop_process
from test_http import make_server, modern_headers, wsgi_call
from test_http_attacks import (Served, body_of, exchange, headers_of, modern, request_bytes,
                               status_of)

import mcp_min

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX sockets")

#: The origin the servers below allow, and one they do not
PAGE = "http://page.test:5173"
ELSEWHERE = "https://evil.example"
#: The request headers of the MCP (besides Mcp-Param-{Name}), which a page may send
MCP_HEADERS = ["Content-Type", "Accept", "Authorization", "MCP-Protocol-Version",
               "Mcp-Session-Id", "Mcp-Method", "Mcp-Name", "Last-Event-ID"]
TOKEN = "Bearer good"

#: A server that wants a token ("good"), allows PAGE, and has a tool whose argument is
#: mirrored in a header (Mcp-Param-Region) and one that streams its progress.
CORS_SERVER = """
import sys
sys.path.insert(0, {root})
from mcp_min import Context, Server
server = Server("cors", auth=lambda token: token == "good",
                authorization_servers=["https://auth.example"],
                allowed_origins=[%r])

@server.tool
def add(a: int, b: int) -> int:
    return a + b

@server.tool(input_schema={"type": "object", "required": ["region"], "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"}}})
def forecast(region):
    return "sunny in " + region

@server.tool
def report(steps: int, ctx: Context) -> str:
    for step in range(1, steps + 1):
        ctx.report_progress(step, total=steps)
    return "reported"
""" % PAGE


# ============================================================================================
# The engines
# ============================================================================================

def start_gunicorn(directory):
    """gunicorn, one gthread worker, serving ``directory``/cors_app.py's ``server``: its
    process and port."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", "1", "--worker-class", "gthread",
         "--threads", "4", "--bind", "127.0.0.1:0", "--no-control-socket",
         "--graceful-timeout", "2", "--chdir", str(directory), "cors_app:server"],
        stderr=subprocess.PIPE, text=True)
    port = booted = None
    # gunicorn's log: its port, then its worker
    for line in proc.stderr:
        match = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", line)
        port = int(match.group(1)) if match else port
        booted = "Booting worker" in line
        if booted:
            break
    assert port and booted, "gunicorn did not start"
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, port


@pytest.fixture(scope="module", params=["embedded", "granian", "gunicorn"])
def port(request, tmp_path_factory):
    """The port of CORS_SERVER on each engine (one process: the handshake era's sessions
    live in it)."""
    directory = tmp_path_factory.mktemp(request.param)
    source = CORS_SERVER.replace("{root}", repr(str(ROOT)))
    (directory / "cors_app.py").write_text(source)
    if request.param == "embedded":
        served = Served(directory, CORS_SERVER)
        yield served.port
        served.close()
    elif request.param == "granian":
        served = Granian("cors_app:server", cwd=directory, workers=1, threads=4)
        yield served.port
        served.close()
    else:
        if importlib.util.find_spec("gunicorn") is None:
            pytest.skip("gunicorn is not installed (tests/requirements.txt)")
        proc, port = start_gunicorn(directory)
        yield port
        stop_process(proc, 15)
        proc.stderr.close()


def ask(port, method="POST", message=None, body=None, **headers):
    """One request on a new connection: (status, headers, the raw response)."""
    response = exchange(port, request_bytes(port, method, message=message, body=body,
                                            Connection="close", **headers))
    return status_of(response), headers_of(response), response


def cors_headers(headers):
    return {name: value for name, value in headers.items()
            if name.startswith("access-control-") or name == "vary"}


def listed(value):
    """The names of a comma-separated header, lowercased."""
    return {name.strip().lower() for name in value.split(",")}


def readable_by(headers, origin):
    """The browser lets a page of ``origin`` read the response, and the headers a client
    reads."""
    assert headers.get("access-control-allow-origin") == origin, headers
    assert headers.get("vary") == "Origin", headers
    assert listed(headers.get("access-control-expose-headers", "")) >= {
        "mcp-session-id", "www-authenticate", "retry-after"}, headers


# ============================================================================================
# Over raw HTTP, on each engine
# ============================================================================================

def test_a_preflight_from_an_allowed_origin_is_204_with_what_the_page_may_send(port):
    """What a browser sends before a page's POST with the MCP headers: answered without a
    token (a preflight carries none), with every header a client of either era sends, and
    the Mcp-Param-{Name} headers of the tools' arguments."""
    status, headers, response = ask(
        port, "OPTIONS", Origin=PAGE, Access_Control_Request_Method="POST",
        Access_Control_Request_Headers="content-type,mcp-protocol-version,mcp-method,"
                                       "mcp-name,authorization,mcp-param-region")
    assert status == 204, response[:500]
    assert response.partition(b"\r\n\r\n")[2] == b""
    readable_by(headers, PAGE)
    assert listed(headers["access-control-allow-methods"]) == {"get", "post", "delete"}
    allowed = listed(headers["access-control-allow-headers"])
    assert allowed >= {name.lower() for name in MCP_HEADERS} | {"mcp-param-region"}
    assert headers["access-control-max-age"] == "3600"
    # a page on this machine asking a server on it: no private network to cross
    assert "access-control-allow-private-network" not in headers


def test_the_metadata_path_answers_a_preflight_too(port):
    """A browser client reads the RFC 9728 metadata before it has a token, sending
    MCP-Protocol-Version: that GET is preflighted."""
    path = "/.well-known/oauth-protected-resource/mcp"
    response = exchange(port, request_bytes(
        port, "OPTIONS", path=path, Origin=PAGE, Connection="close",
        Access_Control_Request_Method="GET",
        Access_Control_Request_Headers="mcp-protocol-version"))
    assert status_of(response) == 204, response[:500]
    headers = headers_of(response)
    readable_by(headers, PAGE)
    assert listed(headers["access-control-allow-methods"]) == {"get", "head"}
    response = exchange(port, request_bytes(port, "GET", path=path, Origin=PAGE,
                                            Connection="close"))
    assert status_of(response) == 200, response[:500]
    readable_by(headers_of(response), PAGE)
    assert body_of(response)["authorization_servers"] == ["https://auth.example"]


def test_every_2026_07_28_response_to_an_allowed_origin_can_be_read(port):
    """A result, an error (400, 404), a 401 (whose WWW-Authenticate the page may read),
    and an SSE stream."""
    call = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    status, headers, response = ask(port, message=call, Origin=PAGE, Authorization=TOKEN)
    assert status == 200, response[:500]
    readable_by(headers, PAGE)
    assert body_of(response)["result"]["structuredContent"] == {"result": 5}
    mirrored = modern("tools/call", {"name": "forecast", "arguments": {"region": "north"}})
    status, headers, response = ask(port, message=mirrored, Origin=PAGE,
                                    Authorization=TOKEN, Mcp_Param_Region="north")
    assert status == 200, response[:500]
    readable_by(headers, PAGE)
    status, headers, response = ask(port, message=call, Origin=PAGE, Authorization=TOKEN,
                                    Mcp_Name="other")
    assert status == 400 and body_of(response)["error"]["code"] == mcp_min.HEADER_MISMATCH
    readable_by(headers, PAGE)
    status, headers, response = ask(port, message=modern("no/such"), Origin=PAGE,
                                    Authorization=TOKEN)
    assert status == 404, response[:500]
    readable_by(headers, PAGE)
    status, headers, response = ask(port, message=call, Origin=PAGE)
    assert status == 401, response[:500]
    readable_by(headers, PAGE)
    assert headers["www-authenticate"].startswith("Bearer resource_metadata=")
    streamed = modern("tools/call", {"name": "report", "arguments": {"steps": 2}})
    streamed["params"]["_meta"]["progressToken"] = "p"
    status, headers, response = ask(port, message=streamed, Origin=PAGE,
                                    Authorization=TOKEN)
    assert status == 200 and headers["content-type"] == "text/event-stream", response[:500]
    readable_by(headers, PAGE)
    assert response.count(b"notifications/progress") == 2 and b"reported" in response


def test_every_handshake_era_response_to_an_allowed_origin_can_be_read(port):
    """initialize's Mcp-Session-Id (exposed: a page reads it), a request in the session,
    a notification's 202, an error, the session's end (DELETE)."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": mcp_min.V2025_11, "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"}}}
    handshake = {"Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream",
                 "Origin": PAGE, "Authorization": TOKEN}

    def post(message, **headers):
        body = json.dumps(message).encode()
        return ask(port, body=body, **{**handshake, **headers})
    status, headers, response = post(initialize)
    assert status == 200, response[:500]
    readable_by(headers, PAGE)
    session = headers["mcp-session-id"]
    in_session = {"Mcp-Session-Id": session, "MCP-Protocol-Version": mcp_min.V2025_11}
    status, headers, response = post(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}, **in_session)
    assert status == 202, response[:500]
    readable_by(headers, PAGE)
    status, headers, response = post(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1, "b": 1}}}, **in_session)
    assert status == 200, response[:500]
    readable_by(headers, PAGE)
    assert b'"structuredContent":{"result":2}' in response
    status, headers, response = post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                                     **{"Mcp-Session-Id": "not-a-session"})
    assert status == 404, response[:500]
    readable_by(headers, PAGE)
    status, headers, response = ask(port, "DELETE", Origin=PAGE, Authorization=TOKEN,
                                    **in_session)
    assert status == 204, response[:500]
    readable_by(headers, PAGE)


def test_an_origin_not_allowed_gets_no_cors_headers_and_its_preflight_is_refused(port):
    status, headers, response = ask(port, "OPTIONS", Origin=ELSEWHERE,
                                    Access_Control_Request_Method="POST",
                                    Access_Control_Request_Headers="content-type")
    assert status == 403, response[:500]
    assert "allowed_origins" in body_of(response)["error"]["message"]
    assert cors_headers(headers) == {}
    call = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    status, headers, response = ask(port, message=call, Origin=ELSEWHERE,
                                    Authorization=TOKEN)
    assert status == 403 and "result" not in body_of(response)
    assert cors_headers(headers) == {}


def test_a_client_that_sends_no_origin_gets_no_cors_headers(port):
    """Clients that are not browsers send no Origin: nothing changes for them; OPTIONS is
    no method of the endpoint."""
    call = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    status, headers, response = ask(port, message=call, Authorization=TOKEN)
    assert status == 200 and cors_headers(headers) == {}
    status, headers, response = ask(port, "OPTIONS", Authorization=TOKEN)
    assert status == 405 and cors_headers(headers) == {}


def test_private_network_access_only_for_an_origin_allowed_origins_names(port):
    """A page on a public origin asking a server on a private network: its preflight says
    so, and is answered yes only for an origin allowed_origins lists. One allowed as
    this machine's (a page on localhost) is answered without it."""
    for origin, allowed in ((PAGE, True), ("http://localhost:3000", False)):
        status, headers, response = ask(
            port, "OPTIONS", Origin=origin, Access_Control_Request_Method="POST",
            Access_Control_Request_Private_Network="true")
        assert status == 204, response[:500]
        readable_by(headers, origin)
        assert ("access-control-allow-private-network" in headers) == allowed, headers
        if allowed:
            assert headers["access-control-allow-private-network"] == "true"


# ============================================================================================
# In-process: what "*" allows, and a server without sessions
# ============================================================================================

def test_with_star_an_unlisted_origin_is_told_star_and_no_private_network():
    """What a client sends is never echoed unchecked: with "*", an Origin allowed_origins
    does not name (junk too) is answered Access-Control-Allow-Origin: *, and "*" is no
    consent to Private Network Access; a listed origin is named."""
    app = make_server(allowed_origins=["*", PAGE]).wsgi
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Private-Network": "true"}
    for origin, allowed_origin, private in (("https://any.example", "*", False),
                                            ("junk \x7f", "*", False),
                                            (PAGE, PAGE, True)):
        status, headers, _ = wsgi_call(app, "OPTIONS", headers={"Origin": origin,
                                                                **preflight})
        assert status == 204
        assert headers["access-control-allow-origin"] == allowed_origin
        assert ("access-control-allow-private-network" in headers) == private
        message = modern("tools/list")
        status, headers, _ = wsgi_call(app, body=message, headers={
            **modern_headers(message), "Origin": origin})
        assert status == 200 and headers["access-control-allow-origin"] == allowed_origin


def test_without_sessions_a_preflight_allows_post_alone():
    app = make_server(http_sessions=False, allowed_origins=[PAGE]).wsgi
    status, headers, _ = wsgi_call(app, "OPTIONS", headers={
        "Origin": PAGE, "Access-Control-Request-Method": "POST"})
    assert status == 204 and headers["access-control-allow-methods"] == "POST"


# ============================================================================================
# In a browser
# ============================================================================================

#: docs/http.md's snippet, as written but for its URL
SNIPPET = re.search(r"```js\n(.*?)```", (ROOT / "docs" / "http.md").read_text(), re.S)[1]
SNIPPET_URL = "http://127.0.0.1:8000/mcp"

#: The page: the snippet, then a handshake-era client reading its Mcp-Session-Id; what it
#: saw goes into #seen, where --dump-dom shows it.
PAGE_HTML = """<!doctype html>
<html><body><pre id="seen">nothing yet</pre>
<script type="module">
const seen = {};
try {
%s
  seen.tools = tools.tools.map((tool) => tool.name);
  seen.sum = sum.structuredContent;
  const response = await fetch(endpoint, {method: "POST", headers: {
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "initialize", params: {
      protocolVersion: "2025-11-25", capabilities: {},
      clientInfo: {name: "page", version: "1"}}})});
  seen.session = response.headers.get("Mcp-Session-Id");
} catch (error) {
  seen.error = String(error);
}
document.getElementById("seen").textContent = JSON.stringify(seen);
</script></body></html>
"""

#: A server without auth, allowing the origins given
BROWSER_SERVER = """
import sys
sys.path.insert(0, {root})
from mcp_min import Server
server = Server("browser", allowed_origins=%r)

@server.tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b
"""


class PageHandler(http.server.BaseHTTPRequestHandler):
    """Serves its server's ``page`` at any path."""

    def do_GET(self):
        body = self.server.page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class PageServer:
    """A page, served from a port of its own (an origin other than the MCP server's)."""

    def __init__(self):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PageHandler)
        self.httpd.page = ""
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def what_the_page_saw(tmp_path, allowed):
    """Serve the page and, on another port, an MCP server allowing ``allowed(page's
    origin)``; load the page in headless Chromium (the page's host, page.test, is this
    machine: its origin is not this machine's by name, so only allowed_origins lets it
    in) and return what it wrote into #seen."""
    chromium = require_tool("chromium", "a page on another origin calls the server")
    pages = PageServer()
    origin = f"http://page.test:{pages.port}"
    source = BROWSER_SERVER % (allowed(origin),)
    served = Served(tmp_path, source)
    try:
        url = f"http://127.0.0.1:{served.port}/mcp"
        script = SNIPPET.replace(SNIPPET_URL, url)
        assert script != SNIPPET
        pages.httpd.page = PAGE_HTML % script
        run = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
             "--host-resolver-rules=MAP page.test 127.0.0.1",
             "--virtual-time-budget=10000", "--dump-dom", f"{origin}/"],
            capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr[-2000:]
        seen = re.search(r'<pre id="seen">(.*?)</pre>', run.stdout, re.S)
        assert seen, run.stdout[-2000:]
        return json.loads(html.unescape(seen[1]))
    finally:
        served.close()
        pages.close()


def test_a_page_on_an_allowed_origin_calls_tools_and_reads_the_results(tmp_path):
    seen = what_the_page_saw(tmp_path, lambda origin: [origin])
    assert seen.get("error") is None, seen
    assert seen["tools"] == ["add"]
    assert seen["sum"] == {"result": 5}
    # the handshake era's session id, which only an exposed header shows a page
    assert isinstance(seen["session"], str) and len(seen["session"]) > 20


def test_a_page_on_an_origin_not_allowed_is_refused_the_call(tmp_path):
    seen = what_the_page_saw(tmp_path, lambda origin: [])
    assert seen == {"error": "TypeError: Failed to fetch"}
