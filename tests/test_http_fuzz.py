"""Fuzzing the HTTP surface with hostile requests: request lines (methods, targets, versions,
the absolute form, overlong lines), header sets (duplicates, odd casing, blanks before the
colon, obs-fold, NULs, non-ASCII, huge values, Content-Length against Transfer-Encoding,
Host and Origin variants, the MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id and
Authorization values) and bodies (JSON-RPC of both eras, truncated JSON, deep nesting, wrong
types, batches, huge numbers, bad UTF-8).

Two layers:

1. In-process, ``server.wsgi`` called with environ dicts built as a WSGI server builds them
   (duplicate headers joined with commas, obs-fold kept in the value), on four servers: open,
   with a token hook, with allowed hosts and origins, and without sessions. Every answer:
   no exception out of the application; a status of a known set (never 500: the tool that
   raises on purpose is answered 200 with isError); every non-empty body JSON, or SSE whose
   data lines are JSON; every JSON-RPC error with an int code and a str message, the
   message bounded; header values latin-1 printable, without CR or LF, never holding the
   raw Host, Origin or Authorization sent (but an allowed Origin of an origin's strict
   form, whole, in Access-Control-Allow-Origin); no token the hook refuses let through; no DNS
   name in Host taken from another machine when no hosts are listed.
2. Over raw sockets against the embedded server (``mcp_min.py serve --http``): each
   response starts with a valid ``HTTP/1.1 NNN`` status line, or the connection closes
   without a byte; after each batch of attacks the process is alive and answers a normal
   2026-07-28 tools/call; its stderr never shows a Python traceback, nor a line long enough
   to be a request written out unbounded.

A broken invariant is a ``Violation`` with a kind, and fails the test. The holes the first
runs found (``CLOSED_HOLES``) each keep a test of their own below.

The default run is small and fast; MCP_MIN_SLOW=1 runs thousands of examples."""

import base64
import http.client
import io
import json
import os
import re
import socket
import sys
import threading
import time
import traceback
from collections import namedtuple

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from test_http_attacks import Served

import mcp_min
from mcp_min import Context, Server

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX sockets")

SLOW = os.environ.get("MCP_MIN_SLOW") == "1"
_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much,
                                      HealthCheck.function_scoped_fixture])
# CI: no shrinking (the falsifying request is printed whole); slow mode shrinks.
settings.register_profile("mcp_min_http_fuzz_ci", max_examples=150, **_COMMON,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.register_profile("mcp_min_http_fuzz_slow", max_examples=3000, **_COMMON)
PROFILE = settings.get_profile("mcp_min_http_fuzz_slow" if SLOW else "mcp_min_http_fuzz_ci")
WIRE_EXAMPLES = 1000 if SLOW else 40          # batches of raw requests (1-3 each)
SERVER_LIFETIME = 3600 if SLOW else 300       # seconds before a fuzzed server is killed

V = mcp_min.V2026_07
ACCEPT = "application/json, text/event-stream"
LIMIT = 64 << 10                              # max_line_bytes of the fuzzed servers
MESSAGE_BOUND = 1000                          # the longest JSON-RPC error message allowed

# Holes the first fuzz runs found, each closed since, with a test of its own below.
CLOSED_HOLES = {
    "dns-host-from-afar": "a DNS name in Host is accepted on a request from another machine",
    "falsy-principal": "a falsy principal from the auth hook passes authentication",
    "host-reflected": "Host is reflected in WWW-Authenticate and the RFC 9728 document",
    "http09": "an HTTP/0.9 request line is answered with a bare body",
    "long-request-line": "a request line over 64 KiB is closed without 414",
}
Violation = namedtuple("Violation", "kind detail")


def shorten(value, most=200):
    """A repr that stays readable when a request holds 60 kB values."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most]}...({len(text)} characters)"


class Raw(bytes):
    """A raw request's bytes, shown shortened (the failure message shows 2,000 bytes)."""

    def __repr__(self):
        return shorten(bytes(self))


def check_violations(found, what):
    """Fail on any violation not of a known hole."""
    news = list(found)
    assert not news, f"{what}\n" + "\n".join(f"[{v.kind}] {v.detail}" for v in news)


def assert_closed(found, hole, what):
    """The test of a known hole: no violation of that kind."""
    assert hole in CLOSED_HOLES
    check_violations(found, what)


# ============================================================================================
# What a request is made of
# ============================================================================================

GOOD_TOKENS = {"good-token": "alice", "dict-token": {"sub": "bob", "scope": ["mcp"]}}
FALSY = {"falsy-empty": "", "falsy-zero": 0, "falsy-false": False, "falsy-dict": {}}


def auth_hook(token):
    if token == "raise":
        raise RuntimeError("the hook fails on purpose")
    if token in FALSY:
        return FALSY[token]
    return GOOD_TOKENS.get(token)


def make_server(**options):
    """The fuzzed server: quick streams (heartbeat), a short wait for a client's answer, a
    small limit on a message (413), and tools of every kind (one raises on purpose)."""
    server = Server("http-fuzz", "1.0", **{"heartbeat": 0.05, "request_timeout": 2,
                                           "max_line_bytes": LIMIT, **options})

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def boom() -> str:
        raise RuntimeError("this tool raises on purpose")

    @server.tool
    def report(steps: int, ctx: Context) -> str:
        for i in range(1, min(steps, 5) + 1):
            ctx.report_progress(i, total=steps)
        ctx.info("logged")
        return "reported"

    @server.tool
    def ask_name(ctx: Context) -> str:
        answer = ctx.elicit("Your name?", {"type": "object",
                                           "properties": {"name": {"type": "string"}}})
        return "Hello, " + str(answer.get("content"))

    @server.tool
    def whoami(ctx: Context) -> str:
        return repr(ctx.principal)

    @server.tool(input_schema={"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "shard": {"type": "integer", "x-mcp-header": "Shard"}}})
    def route(region, shard=None):
        return f"{region} {shard}"

    @server.resource("note://{name}")
    def note(name: str) -> str:
        return "note " + name

    @server.prompt
    def hello(who: str) -> str:
        return "Hello " + who

    return server


TOOL_CALLS = [("add", {"a": 2, "b": 3}), ("add", {"a": "x", "b": None}), ("echo", {"text": "hi"}),
              ("echo", {"text": "\u2028\x00é" * 3}), ("boom", {}), ("report", {"steps": 2}),
              ("ask_name", {}), ("whoami", {}), ("route", {"region": "eu", "shard": 3}),
              ("nope", {}), ("", {}), ("n" * 3000, {})]
METHODS = ["tools/call", "tools/list", "server/discover", "subscriptions/listen",
           "resources/read", "resources/list", "resources/templates/list", "prompts/get",
           "prompts/list", "completion/complete", "initialize", "ping", "logging/setLevel",
           "resources/subscribe", "unknown/method", ""]
NOTIFICATIONS = ["notifications/initialized", "notifications/cancelled",
                 "notifications/roots/list_changed", "notifications/unknown"]
VERSIONS = [V, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2099-01-01", "", "1",
            V + " ", V.upper() + "x"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=8)
ids = st.one_of(st.integers(-3, 1000), st.sampled_from(
    ["x", "", 0, -1, 2**63, 10**30, 1.5, None, True, [], {}, "i" * 300]))


def params_for(method, draw):
    """Valid-looking params for ``method`` (its arguments drawn)."""
    if method == "tools/call":
        name, arguments = draw(st.sampled_from(TOOL_CALLS))
        return {"name": name, "arguments": arguments}
    if method == "resources/read":
        return {"uri": draw(st.sampled_from(["note://a", "note://../etc", "x://y", "", "n" * 80]))}
    if method == "prompts/get":
        return {"name": draw(st.sampled_from(["hello", "nope"])), "arguments": {"who": "w"}}
    if method == "initialize":
        return {"protocolVersion": draw(st.sampled_from(VERSIONS)), "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "1"}}
    if method == "logging/setLevel":
        return {"level": draw(st.sampled_from(["debug", "loud", 3]))}
    if method == "completion/complete":
        return {"ref": {"type": "ref/prompt", "name": "hello"},
                "argument": {"name": "who", "value": "w"}}
    return {}


def envelope(draw):
    """A 2026-07-28 envelope in params._meta: valid, or with a key missing or wrong."""
    meta = {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}
    change = draw(st.sampled_from(["none"] * 4 + ["version", "drop", "caps", "log", "progress",
                                                  "junk"]))
    if change == "version":
        meta["io.modelcontextprotocol/protocolVersion"] = draw(
            st.sampled_from(VERSIONS) | json_values)
    elif change == "drop":
        del meta[draw(st.sampled_from(sorted(meta)))]
    elif change == "caps":
        meta["io.modelcontextprotocol/clientCapabilities"] = draw(json_values)
    elif change == "log":
        meta["io.modelcontextprotocol/logLevel"] = draw(st.sampled_from(["debug", "nope", 1]))
    elif change == "progress":
        meta["progressToken"] = draw(st.sampled_from(["p", 1, None, [1]]))
    elif change == "junk":
        return draw(json_values)
    return meta


@st.composite
def messages(draw):
    """A JSON-RPC message of either era (or a batch of them), sometimes with a field of the
    wrong type."""
    shape = draw(st.sampled_from(["modern"] * 5 + ["handshake"] * 3 + ["notification",
                                                                        "response", "batch"]))
    if shape == "batch":
        return draw(st.lists(messages(), max_size=3))
    if shape == "notification":
        return {"jsonrpc": "2.0", "method": draw(st.sampled_from(NOTIFICATIONS)),
                "params": {"requestId": draw(ids)}}
    if shape == "response":
        return {"jsonrpc": "2.0", "id": draw(ids), "result": draw(json_values)}
    method = draw(st.sampled_from(METHODS))
    message = {"jsonrpc": "2.0", "id": draw(ids), "method": method,
               "params": params_for(method, draw)}
    if shape == "modern":
        message["params"]["_meta"] = envelope(draw)
    if draw(st.integers(0, 5)) == 0:         # one field of the wrong type, or missing
        field = draw(st.sampled_from(["jsonrpc", "id", "method", "params"]))
        if draw(st.booleans()):
            message.pop(field, None)
        else:
            message[field] = draw(json_values)
    return message


def nested(depth, inside=b"1"):
    return b"[" * depth + inside + b"]" * depth


@st.composite
def bodies(draw, message):
    """The bytes of a body: ``message`` encoded, or broken in one of many ways."""
    text = json.dumps(message, ensure_ascii=draw(st.booleans())).encode()
    kind = draw(st.sampled_from(["as is"] * 8 + [
        "truncated", "deep", "deep argument", "huge number", "bad utf-8", "lone surrogate",
        "bom", "nul", "trailing", "duplicate keys", "empty", "scalar", "too large"]))
    if kind == "truncated":
        return text[:draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == "deep":
        return nested(draw(st.sampled_from([40, 1000, 30000])))
    if kind == "deep argument":
        depth = draw(st.sampled_from([100, 5000, 30000]))
        return (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
                b'"arguments":{"text":' + nested(depth, b'"x"') + b'},"_meta":'
                + json.dumps(envelope(draw)).encode()
                + b"}}")
    if kind == "huge number":
        number = draw(st.sampled_from([b"1e400", b"-1e400", b"1" * 5000, b"-0", b"1E-400",
                                       b"0.0000000000000000000000001", b"123456789" * 100]))
        return re.sub(rb'"id": ?[^,}]*', b'"id": ' + number, text, count=1) if b'"id"' in \
            text else b'{"jsonrpc":"2.0","id":' + number + b',"method":"ping"}'
    if kind == "bad utf-8":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80",
                                                 b"\xf4\x90\x80\x80", b"\x80"])) + text[at:]
    if kind == "lone surrogate":
        return text.replace(b'"2.0"', b'"2.0\\ud800"', 1) if draw(st.booleans()) else \
            text.replace(b'"method": "', b'"method": "\\udfff', 1)
    if kind == "bom":
        return b"\xef\xbb\xbf" + text
    if kind == "nul":
        at = draw(st.integers(0, len(text)))
        return text[:at] + b"\x00" + text[at:]
    if kind == "trailing":
        return text + draw(st.sampled_from([b" ", b"\n", b"x", b"{}", b"\x00", b"]"]))
    if kind == "duplicate keys":
        return b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","method":"tools/list",' \
               b'"params":{}}'
    if kind == "empty":
        return draw(st.sampled_from([b"", b" ", b"\r\n"]))
    if kind == "scalar":
        return draw(st.sampled_from([b"null", b"1", b'"x"', b"[]", b"{}", b"true", b"[[]]"]))
    if kind == "too large":
        return b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":"' + b"x" * LIMIT + b'"}'
    return text


def right_headers(message):
    """The 2026-07-28 headers a correct client sends with ``message``."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return {}
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    headers = {"MCP-Protocol-Version": V, "Mcp-Method": message["method"]}
    if message["method"] in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = params.get("name")
    elif message["method"] == "resources/read":
        headers["Mcp-Name"] = params.get("uri")
    arguments = params.get("arguments")
    if params.get("name") == "route" and isinstance(arguments, dict):
        headers["Mcp-Param-Region"] = arguments.get("region")
        headers["Mcp-Param-Shard"] = arguments.get("shard")
    return {name: value if isinstance(value, str) else json.dumps(value)
            for name, value in headers.items() if value is not None}


# Header values: latin-1 (what a WSGI server hands on), with NULs and other controls; CR and
# LF only as obs-fold leaves them in a value.
latin1 = st.text(st.characters(min_codepoint=0, max_codepoint=255,
                               blacklist_characters="\r\n"), max_size=24)
folded = st.builds(lambda a, fold, b: a + fold + b, latin1, st.sampled_from(["\r\n ", "\r\n\t"]),
                   latin1)
huge = st.builds(lambda ch, n: ch * n, st.sampled_from(["a", "é", "%", "\x00", "1"]),
                 st.sampled_from([300, 9000, 60000]))


def hostile(*specials):
    """A header value: one of ``specials`` (two times in five), or random latin-1, folded or
    huge."""
    named = st.sampled_from(specials)
    return st.one_of(named, named, latin1, folded, huge)


HOSTS = ["127.0.0.1:8000", "127.0.0.1", "localhost", "LOCALHOST:1", "localhost.", "[::1]:8000",
         "[::1]", "[::1", "::1", "[::ffff:127.0.0.1]:80", "127.1", "2130706433", "0x7f.0.0.1",
         "127.0.0.1.", "evil.example", "evil.example:8000", "127.0.0.1.nip.io", "mcp.example.com",
         "MCP.Example.COM:443", "10.0.0.7", "[fe80::1%25eth0]", "", " ", "a:b:c",
         "127.0.0.1:8000@evil.example", "evil.example\x00.localhost", "xn--80ak6aa92e.com",
         "localhost:8000, evil.example", "127.0.0.1:99999999999999999999"]
ORIGINS = ["null", "http://127.0.0.1:8000", "http://localhost", "http://localhost:3000",
           "https://app.example.com", "https://evil.example", "http://[::1]:8000", "file://",
           "http://127.0.0.1:8000.evil.example", "http://evil@127.0.0.1", "*", "",
           "HTTP://LOCALHOST", "http://127.0.0.1:8000/", "http://mcp.example.com"]
AUTHORIZATIONS = ["Bearer good-token", "bearer dict-token", "BEARER  good-token ",
                  "Bearer\tgood-token", "Basic Zm9vOmJhcg==", "Bearer", "Bearer ", "Bearer x",
                  "Bearer falsy-empty", "Bearer falsy-zero", "Bearer falsy-false",
                  "Bearer falsy-dict", "Bearer raise", "Bearer good-token,Bearer x",
                  "Bearer good-token\x00", "Bearer g\xf6od-token"]
ACCEPTS = [ACCEPT, "application/json", "text/event-stream", "*/*", "", "text/html",
           "application/json;q=0, text/event-stream;q=0", "Application/JSON", "*/*;q=0"]
CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
                 "text/plain", "", "application/json-seq", "multipart/form-data; boundary=x",
                 "application/json\x00"]
LENGTHS = ["", "0", "+5", "-1", " 5 ", "5,5", "1" * 25, "\u0663", "0x10", "5 5", "1e3"]
ENCODINGS = ["chunked", "gzip, chunked", "identity", "CHUNKED", "chunked, identity", ""]


@st.composite
def header_sets(draw, message):
    """(name, value) pairs as a client sends them: the right ones, some dropped or changed,
    duplicates and extras."""
    host = st.sampled_from(HOSTS[:3]) | st.sampled_from(HOSTS)    # mostly this machine
    fields = [("Host", draw(host)), ("Accept", ACCEPT), ("Content-Type", "application/json")]
    fields += list(right_headers(message).items())
    if draw(st.integers(0, 2)) == 0:
        fields.append(("Authorization", draw(st.sampled_from(AUTHORIZATIONS))))
    for _ in range(draw(st.integers(0, 4))):
        change = draw(st.sampled_from(["drop", "replace", "duplicate", "add"]))
        if change == "drop" and fields:
            fields.pop(draw(st.integers(0, len(fields) - 1)))
            continue
        name = draw(st.sampled_from([
            "Host", "Origin", "Authorization", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name",
            "Mcp-Session-Id", "Accept", "Content-Type", "Content-Length", "Transfer-Encoding",
            "Mcp-Param-Region", "Mcp-Param-Shard", "Last-Event-ID", "X-Forwarded-Host",
            "Expect", "Connection", "mcp_method"]))
        value = draw(value_for(name, message))
        if change == "replace":
            fields = [(n, v) for n, v in fields if n.lower() != name.lower()]
        fields.append((name, value))
    return fields


#: The values worth trying in each header (besides random, folded and huge ones).
SPECIALS = {"host": HOSTS, "x-forwarded-host": HOSTS, "origin": ORIGINS,
            "authorization": AUTHORIZATIONS, "mcp-protocol-version": VERSIONS,
            "mcp-session-id": ["SESSION", "SESSION ", "SESSION,SESSION", "", "x" * 32],
            "accept": ACCEPTS, "content-type": CONTENT_TYPES, "content-length": LENGTHS,
            "transfer-encoding": ENCODINGS, "expect": ["100-continue", "100-Continue", "200-ok"],
            "connection": ["close", "keep-alive", "Upgrade", "TE, close"]}
MIRRORED = ["eu", "3", "=?base64?ZXU=?=", "1.0", "true"]     # Mcp-Param-* and the like


def value_for(name, message):
    key = name.lower()
    if key in ("mcp-method", "mcp_method", "mcp-name"):
        sent = right_headers(message).get("Mcp-Name" if key == "mcp-name" else "Mcp-Method",
                                          "tools/call")
        encoded = "=?base64?" + base64.b64encode(sent.encode()).decode() + "?="
        return hostile(sent, encoded, "=?base64?!!!!?=", "=?base64?", "=?base64?/w==?=",
                       sent.upper(), sent + " ", "tools/list")
    return hostile(*SPECIALS.get(key, MIRRORED))


# ============================================================================================
# Layer 1: server.wsgi in-process
# ============================================================================================

REMOTES = ["127.0.0.1", "::1", "::ffff:127.0.0.1", "127.0.0.2", "10.0.0.7", "203.0.113.9",
           "2001:db8::1", "", "unknown"]
WSGI_METHODS = ["POST"] * 6 + ["GET", "DELETE", "PUT", "HEAD", "OPTIONS", "post", "CONNECT", ""]
PATHS = ["/mcp"] * 8 + ["/mcp/", "/MCP", "/mcp//", "/", "", "/.well-known/oauth-protected-resource",
                        "/.well-known/oauth-protected-resource/mcp", "/%6dcp", "/../mcp",
                        "/mcp\x00", "/mcp;x", "/\xe9", "//mcp"]
CONFIGS = ["open", "auth", "hosts", "stateless"]
STATUSES = {200, 202, 204, 400, 401, 403, 404, 405, 406, 409, 411, 413, 415, 421, 503}
ALLOWED_NAMES = {"hosts": {"mcp.example.com"}}
# What a Host may be (with a port or not): localhost, an IPv4 address, a bracketed IPv6 one.
NAMED_HERE = re.compile(r"(localhost|\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\])(:\d{1,5})?")


def accepted_host(host, config):
    """Whether the server may take ``host`` as the name it is reached by (and so may build
    URLs from it): the rule of docs/http.md, written again here."""
    host = host.lower()                       # names are not case-sensitive
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return bool(NAMED_HERE.fullmatch(host)) or name in ALLOWED_NAMES.get(config, ())



class WsgiRequest(namedtuple("WsgiRequest", "config remote method path fields body chunked "
                                            "session")):
    def __repr__(self):
        return "WsgiRequest(" + ", ".join(f"{name}={shorten(value, 400)}" for name, value in
                                          self._asdict().items()) + ")"


@st.composite
def wsgi_requests(draw):
    message = draw(messages())
    fields = draw(header_sets(message))
    return WsgiRequest(
        config=draw(st.sampled_from(CONFIGS)), remote=draw(st.sampled_from(REMOTES)),
        method=draw(st.sampled_from(WSGI_METHODS) | latin1 | huge),
        path=draw(st.sampled_from(PATHS)), fields=fields, body=draw(bodies(message)),
        chunked=draw(st.integers(0, 9)) == 0,
        session=draw(st.sampled_from(["none"] * 3 + ["real"])))


@pytest.fixture(scope="module")
def servers():
    made = {"open": make_server(), "auth": make_server(
                auth=auth_hook, authorization_servers=["https://auth.example"]),
            "hosts": make_server(allowed_hosts=["mcp.example.com"],
                                 allowed_origins=["https://app.example.com"]),
            "stateless": make_server(http_sessions=False)}
    yield made
    for server in made.values():
        if server._http is not None:
            server._http.end_streams()


def environ_of(request, session_id=None):
    """The environ a WSGI server builds: HTTP_ names, duplicates joined by commas, values
    stripped, the body's length in CONTENT_LENGTH (unless a header says otherwise)."""
    body = request.body
    environ = {"REQUEST_METHOD": request.method, "PATH_INFO": request.path,
               "SCRIPT_NAME": "", "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
               "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": request.remote,
               "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
               "wsgi.errors": sys.stderr, "wsgi.multithread": True,
               "wsgi.multiprocess": False, "wsgi.run_once": False, "wsgi.version": (1, 0)}
    if request.chunked:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    for name, value in request.fields:
        value = value.replace("SESSION", session_id or "no-such-session").strip()
        key = name.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ.setdefault(key, value)    # the first one, as wsgiref takes it
            continue
        key = "HTTP_" + key
        environ[key] = environ[key] + "," + value if key in environ else value
    environ.setdefault("CONTENT_TYPE", "")
    if not request.chunked:
        environ.setdefault("CONTENT_LENGTH", str(len(body)))
    return environ


def open_session(server):
    """A handshake-era session on ``server``, the id it answered with (None if refused)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "fuzz", "version": "1"}}}).encode()
    environ = environ_of(WsgiRequest("open", "127.0.0.1", "POST", "/mcp", [
        ("Host", "127.0.0.1:8000"), ("Accept", ACCEPT), ("Content-Type", "application/json"),
        ("Authorization", "Bearer good-token")], body, False, "none"))
    status, headers, _ = run_wsgi(server.wsgi, environ)
    return dict((k.lower(), v) for k, v in headers).get("mcp-session-id")


def run_wsgi(app, environ, read_for=0.3):
    """Call ``app`` as a WSGI server does: (status line, header list, body). An event stream
    is read for at most ``read_for`` seconds (a listen never ends), then closed."""
    started = []

    def start_response(status, headers, exc_info=None):
        assert not started or exc_info, "start_response called twice"
        started.append((status, headers))
    result = app(environ, start_response)
    chunks, deadline = [], time.monotonic() + read_for
    try:
        for chunk in result:
            assert isinstance(chunk, bytes), f"a body chunk of type {type(chunk).__name__}"
            assert started, "body before start_response"
            chunks.append(chunk)
            if time.monotonic() > deadline:
                break
    finally:
        getattr(result, "close", lambda: None)()
    assert started, "no start_response"
    status, headers = started[-1]
    return status, headers, b"".join(chunks)


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
PRINTABLE = re.compile(r"[\t\x20-\x7e\xa0-\xff]*")


def sent_values(environ):
    """The Host, Origin and Authorization credentials sent that a response must not carry:
    those long enough to tell apart from what a response says anyway ("Bearer" is in
    WWW-Authenticate, digits in Content-Length)."""
    credentials = environ.get("HTTP_AUTHORIZATION", "").strip().partition(" ")[2]
    values = {"Host": environ.get("HTTP_HOST", ""), "Origin": environ.get("HTTP_ORIGIN", ""),
              "Authorization": credentials}
    return {name: value for name, value in values.items()
            if len(value.strip()) >= 6 and not value.strip().isdigit()}


def json_rpc_problems(item):
    """What is wrong with one JSON-RPC message of a response."""
    if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
        return [f"not a JSON-RPC message: {str(item)[:200]}"]
    if "error" not in item:
        return []
    error = item["error"]
    if not isinstance(error, dict) or type(error.get("code")) is not int \
            or not isinstance(error.get("message"), str):
        return [f"a malformed error: {str(error)[:200]}"]
    if len(error["message"]) > MESSAGE_BOUND:
        return [f"an error message of {len(error['message'])} characters quotes the "
                f"request unbounded: {error['message'][:150]!r}..."]
    return []


def response_violations(request, environ, status_line, headers, body):
    """Every invariant of layer 1 a response breaks."""
    found = []

    def add(kind, detail):
        found.append(Violation(kind, detail))
    match = re.fullmatch(r"(\d{3}) [^\r\n]+", status_line)
    status = int(match.group(1)) if match else None
    if status not in STATUSES:
        add("status", f"status line {status_line!r}")
    names, host = {}, environ.get("HTTP_HOST", "")
    # The Host may appear in WWW-Authenticate and the RFC 9728 document once it has passed
    # the server's check; nothing else a client sends may appear in a header at all.
    named = accepted_host(host, request.config)
    for name, value in headers:
        if not isinstance(name, str) or not HEADER_NAME.fullmatch(name) \
                or not isinstance(value, str) or not PRINTABLE.fullmatch(value):
            # An obs-fold in the Host reflected (the known hole) brings its CR LF along
            reflected = host.strip() and host.strip() in str(value) and \
                str(name).lower() == "www-authenticate"
            add("host-reflected" if reflected else "header", f"header {name!r}: {value!r:.300}")
            continue
        names[name.lower()] = value
        if name.lower() == "access-control-allow-origin":
            add_origin_violations(add, environ, status, request.config, value)
            continue
        # (an Origin of the same name as the Host is in WWW-Authenticate as the Host is)
        host_in_it = host.strip() and host.strip() in value and name.lower() == \
            "www-authenticate"
        for sent, raw in sent_values(environ).items():
            if host_in_it and named and raw in host:
                continue                      # the checked Host, in the URL built from it
            if raw in value or raw.strip() in value:
                kind = "host-reflected" if host_in_it else "reflected"
                add(kind, f"the {sent} sent ({raw[:80]!r}) is in the response's {name} header")
    content_type = names.get("content-type", "")
    if status == 204 and body:
        add("body", "a 204 with a body")
    if "content-length" in names and names["content-length"] != str(len(body)) and \
            content_type != "text/event-stream":
        add("body", f"Content-Length {names['content-length']} for {len(body)} bytes")
    if body and content_type == "application/json":
        try:
            document = json.loads(body)
        except ValueError:
            add("body", f"a JSON response that is not JSON: {body[:300]!r}")
        else:
            if request.path.startswith("/.well-known/oauth-protected-resource"):
                if host.strip() and host in document.get("resource", "") and not named:
                    add("host-reflected", f"Host {host[:80]!r} is in the RFC 9728 document")
            else:
                for item in document if isinstance(document, list) else [document]:
                    for problem in json_rpc_problems(item):
                        add("json-rpc", problem)
    elif body and content_type == "text/event-stream":
        for line in body.split(b"\n"):
            if line.startswith(b"data: "):
                try:
                    item = json.loads(line[6:])
                except ValueError:
                    add("sse", f"an SSE data line that is not JSON: {line[:300]!r}")
                    continue
                for problem in json_rpc_problems(item):
                    add("json-rpc", problem)
            elif line and not line.startswith((b"event: ", b":")):
                add("sse", f"an SSE line of no known kind: {line[:300]!r}")
    elif body:
        add("body", f"a body of Content-Type {content_type!r}: {body[:300]!r}")
    found += access_violations(request, environ, status)
    return found


#: An Origin the server may name back (CORS): a scheme, then a host as Host has it
ORIGIN_FORM = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)"
                         r"(:[0-9]{1,5})?")
LISTED_ORIGINS = {"hosts": {"https://app.example.com"}}


def add_origin_violations(add, environ, status, config, value):
    """Access-Control-Allow-Origin names the Origin sent, whole, only once the server has
    allowed it (not a 403), and only if it has an origin's strict form or the server
    lists it: else it is "*"."""
    origin = environ.get("HTTP_ORIGIN")
    if status == 403:
        add("cors", f"a refused Origin ({origin!r:.80}) is told it may read the response")
    elif value != "*" and (value != origin or not (
            ORIGIN_FORM.fullmatch(value) or value in LISTED_ORIGINS.get(config, ()))):
        add("reflected", f"Access-Control-Allow-Origin {value!r:.80} for Origin "
                         f"{origin!r:.80}")


def access_violations(request, environ, status):
    """Who got in who should not have: a token the hook refuses, a Host that names neither
    this machine nor a listed name, wherever the request comes from."""
    found = []
    endpoint = request.path.rstrip("/") == "/mcp"
    if request.config == "auth" and endpoint and status is not None and status < 300:
        scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or token not in GOOD_TOKENS:
            kind = "falsy-principal" if token in FALSY and scheme.lower() == "bearer" \
                else "auth-bypass"
            found.append(Violation(kind, f"token {token[:40]!r} got {status}"))
    host = environ.get("HTTP_HOST", "").strip().lower()
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    dns_name = re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)*\.?", name) and not re.fullmatch(
        r"[0-9.]+|0x.*", name) and name.rstrip(".") != "localhost"
    allowed = name.rstrip(".") in ALLOWED_NAMES.get(request.config, ())
    if endpoint and dns_name and not allowed and status is not None and status < 300:
        found.append(Violation("dns-host-from-afar", f"Host {host[:60]!r} from "
                                                     f"{request.remote!r} got {status}"))
    return found


def wsgi_violations(servers, request):
    server = servers[request.config]
    session_id = open_session(server) if request.session == "real" else None
    environ = environ_of(request, session_id)
    try:
        status, headers, body = run_wsgi(server.wsgi, environ)
    except Exception:
        return [Violation("exception", traceback.format_exc())]
    return response_violations(request, environ, status, headers, body)


@settings(PROFILE)
@given(request=wsgi_requests())
def test_wsgi_answers_every_hostile_request_within_the_rules(servers, request):
    check_violations(wsgi_violations(servers, request), f"request: {request!r}")


def known_hole_request(**changes):
    base = WsgiRequest("open", "127.0.0.1", "POST", "/mcp", [
        ("Host", "127.0.0.1:8000"), ("Accept", ACCEPT), ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list")],
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode(), False, "none")
    return base._replace(**changes)


def replace_field(fields, name, value):
    return [(n, v) for n, v in fields if n != name] + [(name, value)]


def test_known_hole_dns_name_in_host_from_another_machine(servers):
    request = known_hole_request(remote="203.0.113.9")
    request = request._replace(fields=replace_field(request.fields, "Host", "evil.example"))
    assert_closed(wsgi_violations(servers, request), "dns-host-from-afar", repr(request))


@pytest.mark.parametrize("token", sorted(FALSY))
def test_known_hole_falsy_principal(servers, token):
    request = known_hole_request(config="auth")
    request = request._replace(fields=[*request.fields, ("Authorization", f"Bearer {token}")])
    assert_closed(wsgi_violations(servers, request), "falsy-principal", repr(request))


@pytest.mark.parametrize("path", ["/mcp", "/.well-known/oauth-protected-resource/mcp"])
def test_known_hole_host_reflected(servers, path):
    request = known_hole_request(config="auth", path=path)
    request = request._replace(fields=replace_field(request.fields, "Host",
                                                    "localhost:1\"injected"))
    assert_closed(wsgi_violations(servers, request), "host-reflected", repr(request))


# ============================================================================================
# Layer 2: raw sockets against the embedded server
# ============================================================================================

WIRE_SERVER = """
import os
import sys
sys.path.insert(0, {root})
sys.path.insert(0, os.path.join({root}, "tests"))
from test_http_fuzz import make_server
server = make_server(idle_timeout=3, heartbeat=0.5)
server.remove_tool("boom")     # its traceback in the log is on purpose: not for this layer
"""
STATUS_LINE = re.compile(rb"HTTP/1\.1 [1-5]\d\d [^\r\n]*\r\n")
WIRE_STATUSES = STATUSES | {100, 414, 431, 501, 505}
VERSIONS_ON_WIRE = ["HTTP/1.1"] * 8 + ["HTTP/1.0", "HTTP/2.0", "HTTP/1.10", "http/1.1",
                                       "HTTP/1.1 x", "HTTP/1", "HTTP/1.1\x00", "HTTP/3"]
TARGETS = ["/mcp"] * 8 + ["http://127.0.0.1:@PORT@/mcp", "http://evil.example/mcp",
                          "HTTP://[::1]/mcp", "*", "mcp", "//mcp", "/mcp?x=1#f", "/%2e%2e/mcp",
                          "/mcp/../mcp", "/\xe9", "/mcp\t"]
WIRE_METHODS = ["POST"] * 8 + ["GET", "DELETE", "HEAD", "OPTIONS", "PUT", "post", "PRI",
                               "CONNECT", "G\x00T", "\xe9"]


@pytest.fixture(scope="module")
def wire_server(tmp_path_factory):
    """The fuzz server on the embedded HTTP server; killed after SERVER_LIFETIME seconds
    whatever happens."""
    served = Served(tmp_path_factory.mktemp("http_fuzz"), WIRE_SERVER)
    killer = threading.Timer(SERVER_LIFETIME, served.proc.kill)
    killer.daemon = True
    killer.start()
    yield served
    killer.cancel()
    served.close()


def line_of(name, value, style):
    """A header line as bytes, written in one of the ways a hostile client might."""
    name_bytes = name.encode("latin-1")
    try:
        value_bytes = value.encode("latin-1")
    except UnicodeEncodeError:                # "\u0663", a digit to str.isdigit()
        value_bytes = value.encode("utf-8")
    if style == "upper":
        name_bytes = name_bytes.upper()
    elif style == "lower":
        name_bytes = name_bytes.lower()
    elif style == "space before colon":
        return name_bytes + b" : " + value_bytes + b"\r\n"
    elif style == "no space":
        return name_bytes + b":" + value_bytes + b"\r\n"
    elif style == "bare LF":
        return name_bytes + b": " + value_bytes + b"\n"
    elif style == "obs-fold":
        return name_bytes + b": " + value_bytes[:3] + b"\r\n\t" + value_bytes[3:] + b"\r\n"
    elif style == "tab":
        return name_bytes + b":\t" + value_bytes + b"\t\r\n"
    return name_bytes + b": " + value_bytes + b"\r\n"


@st.composite
def raw_requests(draw):
    """One raw request's bytes (with @PORT@ for the server's port)."""
    message = draw(messages())
    body = draw(bodies(message))
    fields = draw(header_sets(message))
    names = {name.lower() for name, _ in fields}
    length = draw(st.sampled_from(["right"] * 6 + ["none", "longer", "shorter", "twice"]))
    if "content-length" not in names and length != "none":
        sent = {"right": len(body), "longer": len(body) + 5, "twice": len(body),
                "shorter": max(0, len(body) - 3)}[length]
        fields.append(("Content-Length", str(sent)))
        if length == "twice":
            fields.append(("Content-Length", str(sent + draw(st.sampled_from([0, 1])))))
    styles = st.sampled_from(["plain"] * 10 + ["upper", "lower", "space before colon",
                                               "no space", "bare LF", "obs-fold", "tab"])
    head = b"".join(line_of(name, value.replace("SESSION", "x" * 32), draw(styles))
                    for name, value in fields)
    method, target = draw(st.sampled_from(WIRE_METHODS)), draw(st.sampled_from(TARGETS))
    version = draw(st.sampled_from(VERSIONS_ON_WIRE))
    line = f"{method} {target} {version}".encode("latin-1")
    if draw(st.integers(0, 30)) == 0:
        line = draw(st.sampled_from([b"GET /mcp", b"POST /mcp HTTP/0.9", b"GET /mcp HTTP/0.9",
                                     b"", b" ", b"POST", b"\x16\x03\x01\x02\x00\x01\x00",
                                     b"POST /" + b"m" * 70000 + b" HTTP/1.1"]))
    return Raw(line + b"\r\n" + head + b"\r\n" + body)


def read_response(sock, deadline, bodiless=False):
    """Bytes of one response: the head and, by its framing, the body (an event stream: its
    head alone; ``bodiless``: the answer to a HEAD). Returns (bytes, complete)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = recv_until(sock, deadline)
        if not chunk:
            return data, False
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = {}
    for row in lines[1:]:
        name, _, value = row.partition(b":")
        headers[name.strip().lower()] = value.strip()
    status = re.match(rb"HTTP/1\.1 (\d{3})", head)
    if bodiless or not status or status.group(1)[:1] == b"1" or status.group(1) == b"204" \
            or b"event-stream" in headers.get(b"content-type", b""):
        return head + b"\r\n\r\n" + (b"" if status else rest), True
    if b"content-length" in headers and headers[b"content-length"].isdigit():
        want = int(headers[b"content-length"])
        while len(rest) < want:
            chunk = recv_until(sock, deadline)
            if not chunk:
                return head + b"\r\n\r\n" + rest, False
            rest += chunk
        return head + b"\r\n\r\n" + rest, True
    if headers.get(b"transfer-encoding") == b"chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            chunk = recv_until(sock, deadline)
            if not chunk:
                return head + b"\r\n\r\n" + rest, False
            rest += chunk
        return head + b"\r\n\r\n" + rest, True
    while chunk := recv_until(sock, deadline):
        rest += chunk
    return head + b"\r\n\r\n" + rest, True


def recv_until(sock, deadline):
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        return sock.recv(65536)
    except (socket.timeout, ConnectionResetError):
        return b""


def send_raw(port, data):
    """Send one raw request on a new connection: every response that comes back, until the
    server closes the connection. With nothing after 1.5 s, our end of the connection is
    closed (a body that never comes), and the server has 3 s more."""
    responses = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        try:
            sock.sendall(data.replace(b"@PORT@", b"%d" % port))
        except OSError:                       # refused before we finished: read what came
            pass
        first_wait = time.monotonic() + 1.5
        sock.settimeout(1.5)
        try:
            ready = sock.recv(1, socket.MSG_PEEK)
        except (socket.timeout, ConnectionResetError):
            ready = None
        if ready is None:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        deadline = max(first_wait, time.monotonic()) + 3
        # A HEAD's answer has no body, if the server could read that it is a HEAD
        bodiless = re.match(rb"HEAD [^ ]+ HTTP/1\.[01]\r?\n", data) is not None
        while time.monotonic() < deadline:
            response, complete = read_response(sock, deadline, bodiless)
            bodiless = False                  # what follows answers what the server read next
            if response:
                responses.append(response)
            if not complete or b"event-stream" in response.partition(b"\r\n\r\n")[0]:
                break
            try:                              # after a whole response: tell the server we
                sock.shutdown(socket.SHUT_WR)     # are done, and read what else comes
            except OSError:
                pass
    return responses


def wire_violations(data, responses):
    found = []
    http09 = re.match(rb"[^ \r\n]+ [^ \r\n]+(\r?\n| HTTP/0\.9\r?\n)", data) is not None
    line_length = len(data.partition(b"\n")[0])
    if line_length > 65536 and not (responses and re.match(rb"HTTP/1\.1 414 ", responses[0])):
        found.append(Violation("long-request-line", f"a request line of {line_length} bytes "
                                                    f"got {responses[:1]!r:.200}"))
    for response in responses:
        if not STATUS_LINE.match(response):
            kind = "http09" if http09 and response is responses[0] else "status-line"
            found.append(Violation(kind, f"a response without a status line: "
                                         f"{response[:300]!r}"))
        elif int(response[9:12]) not in WIRE_STATUSES:
            found.append(Violation("status", f"status {response[:60]!r}"))
    return found


def normal_call(port):
    """A well-behaved 2026-07-28 tools/call, by http.client: its result (from JSON, or from
    the last event of a stream)."""
    message = {"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 2, "b": 3}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}}}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/mcp", json.dumps(message), {
            "Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": V,
            "Mcp-Method": "tools/call", "Mcp-Name": "add"})
        response = connection.getresponse()
        assert response.status == 200, response.status
        body = response.read()
    finally:
        connection.close()
    if response.getheader("Content-Type") == "text/event-stream":
        body = [line for line in body.split(b"\n") if line.startswith(b"data: ")][-1][6:]
    return json.loads(body)["result"]["structuredContent"]


LOG_LINE_BOUND = 1000                         # the longest stderr line a request may cause


def log_violations(lines):
    """A traceback in the server's stderr, or a line long enough to be a client's request
    written out unbounded."""
    text = "".join(lines)
    found = []
    if "Traceback (most recent call last)" in text:
        found.append(Violation("traceback", text[-3000:]))
    for line in lines:
        if len(line) > LOG_LINE_BOUND:
            found.append(Violation("log", f"a log line of {len(line)} characters: "
                                          f"{line[:200]!r}..."))
    return found


@settings(PROFILE, max_examples=WIRE_EXAMPLES)
@given(batch=st.lists(raw_requests(), min_size=1, max_size=3))
def test_embedded_server_frames_every_answer_and_survives(wire_server, batch):
    logged = len(wire_server.log)
    for data in batch:
        responses = send_raw(wire_server.port, data)
        check_violations(wire_violations(data, responses),
                         f"request: {data[:2000]!r}\nresponses: {responses!r:.2000}")
    assert wire_server.proc.poll() is None, "the server died:\n" + "".join(wire_server.log)
    assert normal_call(wire_server.port) == {"result": 5}
    time.sleep(0.05)                          # what the server's threads log about the batch
    check_violations(log_violations(wire_server.log[logged:]),
                     f"requests: {[bytes(data[:2000]) for data in batch]!r}")


@pytest.mark.parametrize("line", [b"GET /mcp", b"GET /mcp HTTP/0.9"])
def test_known_hole_http09_request_line(wire_server, line):
    data = line + b"\r\nHost: 127.0.0.1:@PORT@\r\n\r\n"
    assert_closed(wire_violations(data, send_raw(wire_server.port, data)), "http09", repr(data))


def test_known_hole_request_line_over_64_kib(wire_server):
    data = b"POST /" + b"m" * 70000 + b" HTTP/1.1\r\nHost: 127.0.0.1:@PORT@\r\n\r\n"
    assert_closed(wire_violations(data, send_raw(wire_server.port, data)), "long-request-line",
                  "a request line of 70 kB")

