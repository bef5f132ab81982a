"""Attacks on the HTTP surface, one test each, driving the real server over raw sockets
(``mcp_min.py serve --http`` in a subprocess, and gunicorn where the behaviour is the
engine's): who may reach the server (Host, Origin, tokens), what it reflects, what a client
can make it hold (sessions, memory, threads, connections, streams, subscriptions), resource
templates that a crafted URI could walk out of, and what a hostile request can make it log.

Each test asserts the refusal (status, JSON-RPC error), and where a resource is at stake its
bound, read from /proc (Linux); and then that a well-behaved client is still served. The
README's "Securing it" and docs/http.md say which protection is mcp_min's and which the
engine's."""

import http.client
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, stop_process

import mcp_min

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc and POSIX sockets")

V = mcp_min.V2026_07
ACCEPT = "application/json, text/event-stream"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}
MIB = 1 << 20


# ============================================================================================
# Helpers
# ============================================================================================

class Served:
    """``mcp_min.py serve --http HOST:0 SCRIPT`` as a subprocess; its stderr is read on a
    thread (``log``), never filling the pipe. ``source`` is the server script's text, with
    ``{root}`` standing for the repository (so it imports this mcp_min)."""

    def __init__(self, tmp_path, source, *extra, host="127.0.0.1", env=None):
        script = tmp_path / f"server_{id(self)}.py"
        script.write_text(source.replace("{root}", repr(str(ROOT))))
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "mcp_min.py"), "serve", "--http", f"{host}:0", *extra,
             str(script)], stderr=subprocess.PIPE, cwd=ROOT, env={**os.environ, **(env or {})})
        self.lines, self.log = queue.Queue(), []
        self.reader = threading.Thread(target=self._read_log, daemon=True)
        self.reader.start()
        self.port = None
        deadline = time.monotonic() + 20
        while self.port is None:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.close()
                raise AssertionError("the server did not start:\n" + self.stderr)
            match = re.search(r"http://[^ ]*:(\d+)/", line)
            if match:
                self.port = int(match.group(1))

    def _read_log(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace")
            self.log.append(line)
            self.lines.put(line)
        self.lines.put(None)

    @property
    def stderr(self):
        return "".join(self.log)

    @property
    def pid(self):
        return self.proc.pid

    def connection(self, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        self.proc.stderr.close()


@pytest.fixture
def serve(tmp_path):
    """serve(source, *cli_args, host=..., env=...) -> a running Served, closed afterwards."""
    started = []

    def start(source, *extra, **options):
        served = Served(tmp_path, source, *extra, **options)
        started.append(served)
        return served
    yield start
    for served in started:
        served.close()


#: A server with a quick tool, for the "still served afterwards" checks.
PLAIN_SERVER = """
import sys
sys.path.insert(0, {root})
from mcp_min import Server
server = Server("plain")

@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""


def modern(method, params=None, rid=1):
    params = dict(params or {})
    params["_meta"] = dict(ENVELOPE)
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def modern_headers(message):
    headers = {"MCP-Protocol-Version": V, "Mcp-Method": message["method"]}
    params = message.get("params", {})
    if message["method"] in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = params.get("name")
    elif message["method"] == "resources/read":
        headers["Mcp-Name"] = params.get("uri")
    return headers


def request_bytes(port, method="POST", path="/mcp", message=None, body=None, version="HTTP/1.1",
                  **headers):
    """An HTTP request as bytes. ``message``: a JSON-RPC message POSTed with its 2026-07-28
    headers (``body``, if given, is sent instead of its JSON). ``headers``: name=value, with
    ``_`` for ``-``; a value None leaves that header out, bytes are sent as they are."""
    fields = {"Host": f"127.0.0.1:{port}"}
    if message is not None:
        fields.update({"Content-Type": "application/json", "Accept": ACCEPT,
                       **modern_headers(message)})
        if body is None:
            body = json.dumps(message).encode()
    if body is not None:
        fields["Content-Length"] = len(body)
    fields.update({name.replace("_", "-"): value for name, value in headers.items()})
    head = b"".join(b"%s: %s\r\n" % (name.encode(), value if isinstance(value, bytes)
                                       else str(value).encode())
                    for name, value in fields.items() if value is not None)
    line = f"{method} {path}" + (f" {version}" if version else "")
    return b"%s\r\n%s\r\n%s" % (line.encode(), head, body or b"")


def exchange(port, data, timeout=10):
    """Send raw bytes on a new connection; everything that comes back until the server closes
    it (or ``timeout`` seconds pass)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return received


def status_of(response):
    """The status code of a raw HTTP response; None if it has no HTTP status line."""
    match = re.match(rb"HTTP/1\.[01] (\d{3}) ", response)
    return int(match.group(1)) if match else None


def headers_of(response):
    head = response.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    return {name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in head)}


def body_of(response):
    return json.loads(response.partition(b"\r\n\r\n")[2])


def proc_status(pid, field):
    """A field of /proc/PID/status as an integer: VmRSS and VmHWM in KiB, Threads."""
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith(field + ":"):
                return int(row.split()[1])
    raise KeyError(field)


def served_afterwards(port):
    """A well-behaved client is still served: a 2026-07-28 call gets its result."""
    message = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, rid=77)
    response = exchange(port, request_bytes(port, message=message, Connection="close"))
    assert status_of(response) == 200, response[:500]
    assert body_of(response)["result"]["structuredContent"] == {"result": 5}

@pytest.fixture
def gunicorn(tmp_path):
    """gunicorn(source, threads=4) -> the port of gunicorn, one gthread worker of ``threads``
    threads, serving ``source``'s ``server``; stopped afterwards."""
    pytest.importorskip("gunicorn")
    started = []

    def start(source, threads=4):
        name = f"app_{len(started)}"
        (tmp_path / f"{name}.py").write_text(source.replace("{root}", repr(str(ROOT))))
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", "1", "--worker-class", "gthread",
             "--threads", str(threads), "--bind", "127.0.0.1:0", "--no-control-socket",
             "--graceful-timeout", "2", "--chdir", str(tmp_path), f"{name}:server"],
            stderr=subprocess.PIPE, text=True)
        started.append(proc)
        port, booted = None, False
        for line in proc.stderr:              # gunicorn's log: its port, then its worker
            match = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", line)
            port = int(match.group(1)) if match else port
            if "Booting worker" in line:
                booted = True
                break
        assert port and booted, "gunicorn did not start"
        threading.Thread(target=proc.stderr.read, daemon=True).start()    # never fills
        return port
    yield start
    for proc in started:
        stop_process(proc, 15)
        proc.stderr.close()



# ============================================================================================
# Who may reach it: Host, Origin, tokens; nothing reflected
# ============================================================================================

#: A server whose auth hook answers "is this token good?": False for any other token.
YES_NO_AUTH_SERVER = """
import sys
sys.path.insert(0, {root})
from mcp_min import Server
server = Server("yes-no", auth=lambda token: token == "good",
                authorization_servers=["https://auth.example"]{settings})

@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""


def yes_no_auth_server(**settings):
    """YES_NO_AUTH_SERVER's source, with more Server settings."""
    return YES_NO_AUTH_SERVER.replace(
        "{settings}", "".join(f", {name}={value!r}" for name, value in settings.items()))


def served_with_a_token(port):
    """served_afterwards, for a server that wants a token: the good one gets its result."""
    message = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, rid=77)
    response = exchange(port, request_bytes(port, message=message, Connection="close",
                                            Authorization="Bearer good"))
    assert status_of(response) == 200, response[:500]
    assert body_of(response)["result"]["structuredContent"] == {"result": 5}


METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"


def test_dns_rebinding_a_dns_host_is_421_wherever_the_request_comes_from(serve):
    """A browser whose DNS an attacker rebound to this server's LAN address sends the
    attacker's name as Host and the attacker's page as Origin: its own origin, by that Host.
    Over loopback or not, the name is refused (the in-process test in test_http.py gives a
    LAN REMOTE_ADDR)."""
    served = serve(PLAIN_SERVER)
    port = served.port
    message = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    for host in (f"evil.example:{port}", "evil.example", f"EVIL.example.:{port}",
                 f"127.0.0.1.evil.example:{port}"):
        response = exchange(port, request_bytes(port, message=message, Connection="close",
                                                Host=host, Origin=f"http://{host}"))
        assert status_of(response) == 421, (host, response[:300])
        assert "allowed_hosts" in body_of(response)["error"]["message"]
        assert "result" not in body_of(response)
    served_afterwards(port)


@pytest.mark.parametrize("host", [None, b"", b"127.0.0.1:99999", b"127.0.0.1:80:80",
                                  b"127.0.0.1:x", b"[::1", b"[evil.example]",
                                  b"user@127.0.0.1", b"127.0.0.1, evil.example"])
def test_a_missing_or_malformed_host_is_400(serve, host):
    """RFC 9112 3.2: an HTTP/1.1 request without Host, or with an invalid one, is 400."""
    served = serve(PLAIN_SERVER)
    message = modern("tools/list")
    response = exchange(served.port, request_bytes(served.port, message=message,
                                                   Connection="close", Host=host))
    assert status_of(response) == 400, response[:300]
    assert "Host" in body_of(response)["error"]["message"]
    served_afterwards(served.port)


def test_a_second_host_header_is_400(serve):
    served = serve(PLAIN_SERVER)
    data = request_bytes(served.port, message=modern("tools/list"), Connection="close")
    data = data.replace(b"\r\n\r\n", b"\r\nHost: evil.example\r\n\r\n", 1)
    response = exchange(served.port, data)
    assert status_of(response) == 400, response[:300]
    served_afterwards(served.port)


def test_an_absolute_form_target_naming_a_dns_host_is_421(serve):
    """The embedded server takes the host of an absolute-form target over Host (RFC 9112
    3.2.2): the check applies to it."""
    served = serve(PLAIN_SERVER)
    port = served.port
    for target in (f"http://evil.example:{port}/mcp", "http://evil.example/mcp"):
        response = exchange(port, request_bytes(port, path=target, message=modern("tools/list"),
                                                Connection="close"))
        assert status_of(response) == 421, (target, response[:300])
    response = exchange(port, request_bytes(port, path=f"http://u@127.0.0.1:{port}/mcp",
                                            message=modern("tools/list"), Connection="close"))
    assert status_of(response) == 400
    served_afterwards(port)


def test_the_origin_of_a_page_elsewhere_on_the_lan_is_403(serve):
    """An IP-address Host passes; the page's Origin must then be that host[:port]."""
    served = serve(PLAIN_SERVER)
    port = served.port
    for host, origin, status in (
            (f"192.168.1.5:{port}", f"http://192.168.1.5:{port}", 200),
            (f"192.168.1.5:{port}", f"http://evil.example:{port}", 403),
            (f"192.168.1.5:{port}", "http://192.168.1.5:8080", 403),
            (f"192.168.1.5:{port}", "null", 403),
            (f"192.168.1.5:{port}", f"http://localhost:{port}", 403)):
        response = exchange(port, request_bytes(port, message=modern("tools/list"),
                                                Connection="close", Host=host, Origin=origin))
        assert status_of(response) == status, (origin, response[:300])
        if status == 403:
            assert "Origin" in body_of(response)["error"]["message"]
    served_afterwards(port)


def test_serving_other_machines_without_auth_or_allowed_hosts_warns(serve):
    """Binds 0.0.0.0 (connects to 127.0.0.1 alone). The warning says what is exposed and
    which settings to set; with auth, or on loopback, there is none."""
    served = serve(PLAIN_SERVER, host="0.0.0.0")
    served_afterwards(served.port)
    (warning,) = [line for line in served.log if "WARNING" in line]
    assert "0.0.0.0" in warning and "call this server's tools" in warning
    assert "Server(auth=...)" in warning and "Server(allowed_hosts=[...])" in warning
    quiet = [serve(yes_no_auth_server(), host="0.0.0.0"), serve(PLAIN_SERVER),
             serve(PLAIN_SERVER.replace('Server("plain"',
                                             'Server("plain", allowed_hosts=["mcp.example"]'),
                        host="0.0.0.0")]
    served_with_a_token(quiet[0].port)
    served_afterwards(quiet[1].port)
    served_afterwards(quiet[2].port)
    for served in quiet:
        assert "WARNING" not in served.stderr, served.stderr


def test_a_falsy_principal_is_401(serve):
    """auth=lambda token: token == "good" says False for a wrong token: that is nobody."""
    served = serve(yes_no_auth_server())
    port = served.port
    message = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    for token in ("wrong", "Good", "good2"):
        response = exchange(port, request_bytes(port, message=message, Connection="close",
                                                Authorization=f"Bearer {token}"))
        assert status_of(response) == 401, (token, response[:300])
        assert 'error="invalid_token"' in headers_of(response)["www-authenticate"]
        assert "result" not in body_of(response)
    served_with_a_token(port)


def test_the_host_is_not_reflected_in_www_authenticate(serve):
    served = serve(yes_no_auth_server())
    port = served.port
    for host in (b'127.0.0.1:1", error="injected', b"127.0.0.1:1\\", b"127.0.0.1:1 x"):
        response = exchange(port, request_bytes(port, message=modern("tools/list"),
                                                Connection="close", Host=host))
        assert status_of(response) == 400, response[:300]
        assert "www-authenticate" not in headers_of(response)
        assert b"injected" not in response.partition(b"\r\n\r\n")[0]
    response = exchange(port, request_bytes(port, message=modern("tools/list"),
                                            Connection="close", Host=b"LOCALHOST"))
    assert status_of(response) == 401 and headers_of(response)["www-authenticate"] == (
        f'Bearer resource_metadata="http://LOCALHOST{METADATA_PATH}"')
    served_with_a_token(port)


def test_the_metadata_does_not_name_an_attackers_host(serve):
    served = serve(yes_no_auth_server())
    port = served.port
    response = exchange(port, request_bytes(port, "GET", METADATA_PATH, Connection="close",
                                            Host="evil.example"))
    assert status_of(response) == 421, response[:300]
    assert b"evil.example/mcp" not in response
    response = exchange(port, request_bytes(port, "GET", METADATA_PATH, Connection="close",
                                            Origin="https://evil.example"))
    assert status_of(response) == 403
    response = exchange(port, request_bytes(port, "GET", METADATA_PATH, Connection="close"))
    assert status_of(response) == 200
    assert body_of(response)["resource"] == f"http://127.0.0.1:{port}/mcp"
    served_with_a_token(port)


def test_the_metadata_endpoint_answers_get_and_head_on_its_own_path_only(serve):
    served = serve(yes_no_auth_server())
    port = served.port
    response = exchange(port, request_bytes(port, "HEAD", METADATA_PATH, Connection="close"))
    assert status_of(response) == 200 and response.endswith(b"\r\n\r\n")
    assert int(headers_of(response)["content-length"]) > 0
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        response = exchange(port, request_bytes(port, method, METADATA_PATH, body=b"{}",
                                                Connection="close"))
        assert status_of(response) == 405, (method, response[:300])
        assert headers_of(response)["allow"] == "GET, HEAD"
    for path in (METADATA_PATH + "/anything", METADATA_PATH + "%2F..",
                 "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resourcex"):
        response = exchange(port, request_bytes(port, "GET", path, Connection="close"))
        assert status_of(response) == 404, (path, response[:300])
    served_with_a_token(port)


def test_public_url_is_what_the_urls_name(serve):
    served = serve(yes_no_auth_server(public_url="https://mcp.example.com/mcp"))
    port = served.port
    for host in ("mcp.example.com", f"127.0.0.1:{port}"):
        response = exchange(port, request_bytes(port, message=modern("tools/list"),
                                                Connection="close", Host=host))
        assert status_of(response) == 401 and headers_of(response)["www-authenticate"] == (
            'Bearer resource_metadata="https://mcp.example.com/.well-known/'
            'oauth-protected-resource/mcp"'), host
        response = exchange(port, request_bytes(port, "GET", METADATA_PATH, Connection="close",
                                                Host=host))
        assert body_of(response)["resource"] == "https://mcp.example.com/mcp"
    response = exchange(port, request_bytes(port, message=modern("tools/list"),
                                            Connection="close", Host="other.example.com"))
    assert status_of(response) == 421
    served_with_a_token(port)


YES_NO_GUNICORN_APP = """
import sys
sys.path.insert(0, {root})
from mcp_min import Server
server = Server("yes-no", auth=lambda token: token == "good", http_sessions=False)

@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""


def test_the_host_and_falsy_principal_rules_hold_on_gunicorn(gunicorn):
    """Both are mcp_min's (the application's), not the engine's."""
    port = gunicorn(YES_NO_GUNICORN_APP, threads=2)
    message = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    response = exchange(port, request_bytes(port, message=message, Connection="close",
                                            Host=f"evil.example:{port}",
                                            Origin=f"http://evil.example:{port}",
                                            Authorization="Bearer good"))
    assert status_of(response) == 421, response[:300]
    response = exchange(port, request_bytes(port, message=message, Connection="close",
                                            Authorization="Bearer wrong"))
    assert status_of(response) == 401, response[:300]
    assert "result" not in body_of(response)
    response = exchange(port, request_bytes(port, message=message, Connection="close",
                                            Host=b'127.0.0.1:1", error="injected'))
    assert status_of(response) == 400 and b"injected" not in response.partition(b"\r\n\r\n")[0]
    served_with_a_token(port)



# ============================================================================================
# What a client can make the server hold: sessions, streams, subscriptions
# ============================================================================================

#: A server with auth (the token is the user), a resource to subscribe to, and a tool that
#: tells of a change; ``{settings}`` are more Server settings.
HOLDING_SERVER = """
import sys
sys.path.insert(0, {root})
from mcp_min import Server

def may_hear(principal, uri):
    # bob may not hear of secret://..., nor of anything under docs://private
    return principal != "bob" or not uri.startswith(("secret://", "docs://private"))

server = Server("holding", auth=lambda token: token if token in USERS else None,
                can_subscribe=may_hear, heartbeat=0.5, {settings})
USERS = ("alice", "bob", "carol")

@server.resource("docs://{name}")
def doc(name: str) -> str:
    return name

@server.tool
def add(a: int, b: int) -> int:
    return a + b

@server.tool
def touch(uris: list[str]) -> int:
    for uri in uris:
        server.notify_resource_updated(uri)
    return len(uris)
"""

HANDSHAKE = "2025-11-25"
V2025 = "2025-03-26"         # the version with batches


@pytest.fixture
def serving(serve):
    """serve, and at the end the servers' stderr pipes closed too, once read to the end (a
    pipe left to the garbage collector fails a later test with a ResourceWarning)."""
    started = []

    def start(*args, **options):
        started.append(serve(*args, **options))
        return started[-1]
    yield start
    while OpenStream.opened:
        OpenStream.opened.pop().close()
    for served in started:
        served.close()
        while served.lines.get(timeout=10) is not None:
            pass
        served.proc.stderr.close()


def holding_server(serving, **settings):
    text = ", ".join(f"{name}={value!r}" for name, value in settings.items())
    return serving(HOLDING_SERVER.replace("{settings}", text))


def handshake_bytes(port, message, user=None, session=None):
    """A handshake-era POST (no 2026-07-28 headers), as ``user``, in ``session``."""
    return request_bytes(port, body=json.dumps(message).encode(),
                         Content_Type="application/json", Accept=ACCEPT,
                         Authorization=user and f"Bearer {user}", Mcp_Session_Id=session,
                         MCP_Protocol_Version=session and HANDSHAKE, Connection="close")


INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def initialize(port, user):
    response = exchange(port, handshake_bytes(port, INITIALIZE, user))
    assert status_of(response) == 200, response[:500]
    return headers_of(response)["mcp-session-id"]


def pinged(port, user, session):
    return status_of(exchange(port, handshake_bytes(port, PING, user, session)))


def listen_message(rid=1, **notifications):
    return modern("subscriptions/listen", {"notifications": notifications}, rid=rid)


def as_user(user):
    return {"Authorization": f"Bearer {user}"} if user else {}


class OpenStream:
    """A request whose response stays open (a listen, a GET), on a socket of its own: what
    has come so far, and its events."""

    opened = []                               # closed at the end of each test (serving)

    def __init__(self, port, data):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.opened.append(self.sock)
        self.sock.sendall(data)
        self.received = b""

    def read_until(self, pattern, timeout=10):
        """Read until ``pattern`` (bytes, a regex) shows, the server closes, or time is up."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.received) and time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            self.received += chunk
        return self.received

    @property
    def events(self):
        return [json.loads(line) for line in re.findall(rb"data: (.*)\r?\n", self.received)]

    def close(self):
        self.sock.close()


def open_listen(port, user=None, rid=1, **notifications):
    """A listen stream, acknowledged (else the refusal is in ``received``)."""
    stream = OpenStream(port, request_bytes(port, message=listen_message(rid, **notifications),
                                            **as_user(user)))
    stream.read_until(rb"(?s)subscriptions/acknowledged|\r\n\r\n\{.*\}$")
    return stream


def acknowledged(stream):
    ack = [e for e in stream.events if e.get("method") == "notifications/subscriptions/"
           "acknowledged"]
    assert status_of(stream.received) == 200 and ack, stream.received[:500]
    return ack[0]["params"]["notifications"]


def refusal_of(response):
    """(status, Retry-After, JSON-RPC error) of a whole refused response."""
    return status_of(response), headers_of(response).get("retry-after"), \
        body_of(response)["error"]


def call_as(port, user, name="add", arguments=None):
    message = modern("tools/call", {"name": name, "arguments": arguments or {"a": 2, "b": 3}})
    return exchange(port, request_bytes(port, message=message, Connection="close",
                                        **as_user(user)))


def served_afterwards_as(port, user):
    response = call_as(port, user)
    assert status_of(response) == 200, response[:500]
    assert body_of(response)["result"]["structuredContent"] == {"result": 5}


def test_a_principals_flood_of_initialize_never_ends_anothers_session(serving):
    served = holding_server(serving)
    port = served.port
    alice = initialize(port, "alice")
    connection = served.connection()
    headers = {"Content-Type": "application/json", "Accept": ACCEPT,
               "Authorization": "Bearer bob"}
    bobs = []
    for _ in range(1050):
        connection.request("POST", "/mcp", json.dumps(INITIALIZE), headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 200
        bobs.append(response.getheader("Mcp-Session-Id"))
    connection.close()
    assert pinged(port, "alice", alice) == 200
    # bob keeps his 16 latest (max_sessions_per_principal): each new one ended his oldest
    assert [pinged(port, "bob", s) for s in bobs[-16:]] == [200] * 16
    assert pinged(port, "bob", bobs[-17]) == pinged(port, "bob", bobs[0]) == 404
    served_afterwards_as(port, "carol")


def test_a_full_server_refuses_a_newcomer_rather_than_end_anothers_session(serving):
    served = holding_server(serving, max_sessions=4)
    port = served.port
    alice = initialize(port, "alice")
    bobs = [initialize(port, "bob") for _ in range(3)]
    # carol has no session to give up, and may not end alice's or bob's: 503, Retry-After
    status, retry, error = refusal_of(exchange(port, handshake_bytes(port, INITIALIZE, "carol")))
    assert status == 503 and int(retry) >= 1
    assert error["code"] == mcp_min.SERVER_BUSY and "max_sessions" in error["message"]
    # bob, at the limit, ends his own longest idle session for a new one
    newest = initialize(port, "bob")
    assert pinged(port, "bob", bobs[0]) == 404
    assert [pinged(port, "bob", s) for s in (*bobs[1:], newest)] == [200] * 3
    assert pinged(port, "alice", alice) == 200
    served_afterwards_as(port, "carol")


def test_streams_are_capped_for_all_clients_and_threads_stay_bounded(serving):
    served = serving(PLAIN_SERVER.replace('Server("plain")',
                                        'Server("plain", max_streams=5, heartbeat=0.5)'))
    port, threads = served.port, proc_status(served.pid, "Threads")
    streams = [open_listen(port, rid=i, toolsListChanged=True) for i in range(5)]
    for stream in streams:
        acknowledged(stream)
    crowd = [open_listen(port, rid=9, toolsListChanged=True) for _ in range(20)]
    for refused in crowd:
        refused.read_until(rb"\}$")
        status, retry, error = refusal_of(refused.received)
        assert status == 503 and retry, refused.received[:300]
        assert error["code"] == mcp_min.INTERNAL_ERROR and "max_streams" in error["message"]
        assert "acknowledged" not in refused.received.decode()   # refused before it opened
        refused.close()
    time.sleep(0.3)
    assert proc_status(served.pid, "Threads") <= threads + 5 + 2
    served_afterwards(port)
    streams.pop().close()                     # a client leaves: its place is free again
    deadline = time.monotonic() + 5
    while True:
        stream = open_listen(port, rid=9, toolsListChanged=True)
        if status_of(stream.received) == 200 or time.monotonic() > deadline:
            break
        stream.close()
        time.sleep(0.2)
    acknowledged(stream)
    for stream in [*streams, stream]:
        stream.close()


def test_one_principal_cannot_hold_all_the_threads(serving):
    served = holding_server(serving, max_streams_per_principal=3)
    port = served.port
    bob = [open_listen(port, "bob", rid=i, toolsListChanged=True) for i in range(3)]
    for stream in bob:
        acknowledged(stream)
    fourth = open_listen(port, "bob", rid=4, toolsListChanged=True)
    status, _, error = refusal_of(fourth.received)
    assert status == 429 and "max_streams_per_principal" in error["message"], fourth.received
    status, _, error = refusal_of(call_as(port, "bob"))     # a call would hold a thread too
    assert status == 429 and error["code"] == mcp_min.INTERNAL_ERROR
    session = initialize(port, "bob")          # a handshake-era GET stream is one as well
    status, _, error = refusal_of(exchange(port, request_bytes(
        port, "GET", Accept="text/event-stream", Authorization="Bearer bob",
        Mcp_Session_Id=session, MCP_Protocol_Version=HANDSHAKE, Connection="close")))
    assert status == 429 and error["code"] == mcp_min.SERVER_BUSY
    alice = open_listen(port, "alice", toolsListChanged=True)
    acknowledged(alice)
    served_afterwards_as(port, "alice")
    for stream in [*bob, fourth, alice]:
        stream.close()


#: HOLDING_SERVER with a tool that takes its time, a pool of 8 and shares of 4 calls
SHARING_SERVER = HOLDING_SERVER.replace("{settings}", "max_workers=8, "
                                        "max_streams_per_principal=4, grace_period=0") + """
import time

@server.tool
def slow(seconds: float) -> float:
    time.sleep(seconds)
    return seconds
"""


def slow_call(rid, seconds):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"seconds": seconds}}}


def answered_quickly(port, user, within=3.0):
    """``user``'s 0.1 s call is answered, within ``within`` seconds."""
    started = time.monotonic()
    message = modern("tools/call", {"name": "slow", "arguments": {"seconds": 0.1}})
    response = exchange(port, request_bytes(port, message=message, Connection="close",
                                            Accept="application/json", **as_user(user)),
                        timeout=within)
    took = time.monotonic() - started
    assert status_of(response) == 200 and took < within, (took, response[:300])
    assert body_of(response)["result"]["structuredContent"] == {"result": 0.1}


def test_each_call_of_a_batch_counts_against_its_principals_share(serving):
    """A 2025-03-26 batch once counted as one call: alice's batch of 60 slow calls filled
    the pool of 8, and bob's call waited behind them. Each call counts now: the 4 of her
    share run, each one past it gets its own error, and bob is answered at once."""
    served = serving(SHARING_SERVER)
    port = served.port
    opening = dict(INITIALIZE, params=dict(INITIALIZE["params"], protocolVersion=V2025))
    response = exchange(port, handshake_bytes(port, opening, "alice"))
    session = headers_of(response)["mcp-session-id"]
    batch = [slow_call(rid, 2) for rid in range(60)]
    alice = OpenStream(port, request_bytes(
        port, body=json.dumps(batch).encode(), Content_Type="application/json",
        Accept="application/json", Authorization="Bearer alice", Mcp_Session_Id=session,
        MCP_Protocol_Version=V2025, Connection="close"))
    time.sleep(0.3)
    answered_quickly(port, "bob")
    replies = body_of(alice.read_until(rb"\]$"))
    assert sorted(reply["id"] for reply in replies) == list(range(60))
    refused = [reply["error"] for reply in replies if "error" in reply]
    assert len(refused) == 56 and len(replies) - len(refused) == 4
    assert all(error["code"] == mcp_min.SERVER_BUSY
               and "max_streams_per_principal" in error["message"] for error in refused)
    answered_quickly(port, "alice")           # her share is hers again once they end


@pytest.mark.parametrize("era, seconds", [("handshake", 3), ("2026-07-28", 6)])
def test_a_call_whose_client_left_keeps_its_place_in_the_share_until_it_ends(serving, era,
                                                                             seconds):
    """A call runs on after its client leaves: in the handshake era leaving is no
    cancellation, and in 2026-07-28 a sync handler cancelled runs until it returns. Its
    place in alice's share was given back at once, so calls sent on connections closed
    at once took the pool (in the handshake era they queued too) and bob waited behind
    them. Each keeps its place until it ends now: past 4 they are refused, and bob is
    answered at once."""
    served = serving(SHARING_SERVER)
    port = served.port
    session = initialize(port, "alice") if era == "handshake" else None
    deadline, rid = time.monotonic() + 1.5, 0
    while time.monotonic() < deadline:
        rid += 1
        if session:
            data = handshake_bytes(port, slow_call(rid, seconds), "alice", session)
        else:
            message = modern("tools/call", slow_call(rid, seconds)["params"], rid)
            data = request_bytes(port, message=message, **as_user("alice"))
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(data)
        time.sleep(0.05)
    answered_quickly(port, "bob")
    # Her places are hers again once her calls end
    deadline = time.monotonic() + seconds + 2
    while status_of(call_as(port, "alice")) == 429 and time.monotonic() < deadline:
        time.sleep(0.2)
    served_afterwards_as(port, "alice")


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_listen_streams_cost_no_cpu(serving):
    served = serving(PLAIN_SERVER.replace('Server("plain")', 'Server("plain", max_streams=200, '
                                                              'max_connections=300, '
                                                              'max_connections_per_address=300)'))
    streams = [open_listen(served.port, rid=i, toolsListChanged=True) for i in range(200)]
    for stream in streams:
        acknowledged(stream)
    time.sleep(0.5)
    before, start = cpu_seconds(served.pid), time.monotonic()
    time.sleep(3)
    share = (cpu_seconds(served.pid) - before) / (time.monotonic() - start)
    assert share < 0.03, f"200 idle listens took {share:.1%} of a core"
    served_afterwards(served.port)
    for stream in streams:
        stream.close()


THREADS_GUNICORN_APP = """
import sys
sys.path.insert(0, {root})
from mcp_min import Server
server = Server("threads", max_streams=3, heartbeat=0.5)

@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""


def test_under_gunicorn_gthread_the_stream_cap_keeps_threads_for_calls(gunicorn, serving):
    """With --threads 4 and max_streams=3, listens take three threads at most: the fourth
    is refused, and calls still find a thread (uncapped, four listens starve them). (serving:
    its streams are closed before gunicorn stops.)"""
    port = gunicorn(THREADS_GUNICORN_APP)
    streams = [open_listen(port, rid=i, toolsListChanged=True) for i in range(3)]
    for stream in streams:
        acknowledged(stream)
    refused = open_listen(port, rid=4, toolsListChanged=True)
    status, retry, error = refusal_of(refused.received)
    assert status == 503 and retry and "max_streams" in error["message"]
    for _ in range(5):
        served_afterwards(port)


def test_a_listen_past_max_subscriptions_is_refused_and_holds_no_memory(serving):
    served = holding_server(serving)
    port = served.port
    uris = [f"docs://{i}" for i in range(1001)]
    refused = open_listen(port, "alice", resourceSubscriptions=uris)
    status, _, error = refusal_of(refused.received)
    assert status == 400 and error["code"] == mcp_min.INVALID_PARAMS
    assert "1001 resourceSubscriptions" in error["message"] and "max_subscriptions" in \
        error["message"]
    allowed = open_listen(port, "alice", resourceSubscriptions=uris[:1000])
    assert len(acknowledged(allowed)["resourceSubscriptions"]) == 1000
    # Big listens (under max_body_bytes), one after another, each refused: nothing stays
    flood = [f"docs://{'x' * 40}/{i}" for i in range(60_000)]
    before = proc_status(served.pid, "VmRSS")
    for rid in range(3):
        refused = open_listen(port, "bob", rid, resourceSubscriptions=flood)
        assert status_of(refused.received) == 400, refused.received[:300]
    grown = proc_status(served.pid, "VmRSS") - before
    assert grown < 64 * 1024, f"{grown} KiB more resident after refusing 180,000 subscriptions"
    served_afterwards_as(port, "alice")
    allowed.close()


def test_can_subscribe_decides_who_hears_of_what(serving):
    served = holding_server(serving)
    port = served.port
    wanted = ["secret://plan", "docs://readme", "docs://"]
    bob = open_listen(port, "bob", resourceSubscriptions=wanted)
    alice = open_listen(port, "alice", rid=2, resourceSubscriptions=wanted)
    assert acknowledged(bob) == {"resourceSubscriptions": ["docs://readme", "docs://"]}
    assert acknowledged(alice) == {"resourceSubscriptions": wanted}
    changed = ["secret://plan", "docs://private/salaries", "docs://readme"]
    assert status_of(call_as(port, "carol", "touch", {"uris": changed})) == 200
    for stream in (alice, bob):
        stream.read_until(rb"docs://readme")
    time.sleep(0.2)
    for stream in (alice, bob):
        stream.read_until(rb"docs://readme.*docs://readme", timeout=0.3)   # whatever else came

    def heard(stream):
        return [e["params"]["uri"] for e in stream.events
                if e.get("method") == "notifications/resources/updated"]
    # bob: readme, directly and as under docs://; never the secret, nor what lies under
    # docs://private, though his docs:// covers it
    assert sorted(heard(bob)) == ["docs://readme"]
    assert set(heard(alice)) == set(changed)
    # the handshake era: resources/subscribe refused with -32602
    session = initialize(port, "bob")
    subscribe = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
                 "params": {"uri": "secret://plan"}}
    response = exchange(port, handshake_bytes(port, subscribe, "bob", session))
    error = body_of(response)["error"]
    assert error["code"] == mcp_min.INVALID_PARAMS and "not allowed" in error["message"]
    subscribe["params"]["uri"] = "docs://readme"
    assert "result" in body_of(exchange(port, handshake_bytes(port, subscribe, "bob", session)))
    served_afterwards_as(port, "bob")
    for stream in (alice, bob):
        stream.close()


def test_handshake_subscriptions_are_capped_per_session(serving):
    served = holding_server(serving, max_subscriptions=3)
    port = served.port
    session = initialize(port, "alice")
    codes = []
    for i in range(5):
        subscribe = {"jsonrpc": "2.0", "id": i, "method": "resources/subscribe",
                     "params": {"uri": f"docs://{i}"}}
        reply = body_of(exchange(port, handshake_bytes(port, subscribe, "alice", session)))
        codes.append(reply["error"]["code"] if "error" in reply else 0)
        if "error" in reply:
            assert "max_subscriptions" in reply["error"]["message"]
    assert codes == [0, 0, 0, mcp_min.INVALID_PARAMS, mcp_min.INVALID_PARAMS]
    served_afterwards_as(port, "alice")


def test_what_a_session_keeps_is_bounded_in_bytes_not_only_in_number(serving):
    """Twelve initializes whose capabilities hold nearly 4 MiB of [{}, {}, ...] (under
    max_body_bytes), then sixty subscribes to 4 MiB URIs: each refused with -32602 naming
    its limit's setting, and the server ends within 200 MiB, at most 100 MiB above where it
    started (kept, the sessions held 1.2 GB)."""
    served = holding_server(serving)
    port = served.port
    session = initialize(port, "alice")
    served_afterwards_as(port, "alice")
    start = proc_status(served.pid, "VmRSS")
    params = dict(INITIALIZE["params"], capabilities={"experimental": {"pad": []}})
    big = dict(INITIALIZE, params=params)
    params["capabilities"]["experimental"]["pad"] = [{}] * ((4 * MIB - 1024) // 4)
    replies = [body_of(exchange(port, handshake_bytes(port, big, "bob"))) for _ in range(12)]
    uri = "docs://" + "x" * (4 * MIB - 1024)
    for i in range(60):
        subscribe = {"jsonrpc": "2.0", "id": i, "method": "resources/subscribe",
                     "params": {"uri": f"{uri}{i}"}}
        replies.append(body_of(exchange(port, handshake_bytes(port, subscribe, "alice",
                                                               session))))
    rss = proc_status(served.pid, "VmRSS")
    assert rss <= 200 << 10 and rss - start <= 100 << 10, f"{start} KiB -> {rss} KiB"
    for reply, setting in zip(replies, ["max_client_bytes"] * 12 + ["max_uri_length"] * 60):
        assert reply["error"]["code"] == mcp_min.INVALID_PARAMS, str(reply)[:300]
        assert setting in reply["error"]["message"]
    assert "(65536, max_client_bytes)" in replies[0]["error"]["message"]
    assert "(8192, max_uri_length)" in replies[-1]["error"]["message"]
    assert pinged(port, "alice", session) == 200
    served_afterwards_as(port, "alice")


# ============================================================================================
# Memory, time, connections and framing on the embedded server
# ============================================================================================

def limited_server(**settings):
    """PLAIN_SERVER's source with these Server settings."""
    options = ", ".join(f"{name}={value!r}" for name, value in settings.items())
    return PLAIN_SERVER.replace('Server("plain")', f'Server("plain", {options})')


def state_call(state_size, rid=1):
    """A retry of a tools/call whose requestState is ``state_size`` bytes of junk."""
    return modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2},
                                 "requestState": "v1." + "A" * (state_size - 3)}, rid)


def in_parallel(function, arguments):
    """function(argument) for each argument, each on a thread of its own; the results."""
    results = [None] * len(arguments)

    def run(i):
        results[i] = function(arguments[i])
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(arguments))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def head_and_start(port, message, sent=64 << 10, timeout=5):
    """POST ``message`` but send only its headers and ``sent`` bytes of its body; what comes
    back until the server closes the connection (or ``timeout`` seconds pass)."""
    data = request_bytes(port, message=message)
    head_length = data.index(b"\r\n\r\n") + 4
    return exchange(port, data[:head_length + sent], timeout)


def test_a_30_mib_request_state_is_refused_by_content_length_before_a_byte_is_read(serve):
    """8 clients at once each announce a 30 MiB requestState: 413 from the headers alone, and
    the server's memory, now and at its peak, hardly grows."""
    served = serve(PLAIN_SERVER)
    served_afterwards(served.port)
    rss, peak = proc_status(served.pid, "VmRSS"), proc_status(served.pid, "VmHWM")
    responses = in_parallel(lambda rid: head_and_start(served.port, state_call(30 * MIB, rid)),
                            list(range(8)))
    for response in responses:
        assert status_of(response) == 413, response[:300]
        assert "4194304 bytes" in body_of(response)["error"]["message"]
        assert headers_of(response)["connection"] == "close"
    assert proc_status(served.pid, "VmRSS") - rss <= 200 << 10
    assert proc_status(served.pid, "VmHWM") - peak <= 200 << 10
    served_afterwards(served.port)


def test_a_request_state_just_under_the_body_cap_is_refused_by_its_length_alone(serve):
    """8 clients at once each send a requestState of nearly 4 MiB: -32602 for its length,
    before its signature is computed, and the memory they took is given back."""
    served = serve(PLAIN_SERVER)
    served_afterwards(served.port)
    rss, peak = proc_status(served.pid, "VmRSS"), proc_status(served.pid, "VmHWM")
    responses = in_parallel(
        lambda rid: exchange(served.port, request_bytes(
            served.port, message=state_call(4 * MIB - 1024, rid), Connection="close")),
        list(range(8)))
    for rid, response in enumerate(responses):
        assert status_of(response) == 400, response[:300]
        error = body_of(response)
        assert error["id"] == rid and error["error"]["code"] == -32602
        assert "over the limit of 65536" in error["error"]["message"]
    assert proc_status(served.pid, "VmRSS") - rss <= 200 << 10
    assert proc_status(served.pid, "VmHWM") - peak <= 200 << 10
    served_afterwards(served.port)


def test_bodies_past_max_inflight_bytes_wait_for_none_and_get_503(serve):
    """Two requests whose bodies are coming hold the whole budget: a third is refused at once
    (503, Retry-After), and once they are gone, a body as large is served."""
    served = serve(limited_server(max_body_bytes=64 << 10, max_inflight_bytes=128 << 10))
    padded = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    padded["params"]["_meta"]["padding"] = ""
    padded["params"]["_meta"]["padding"] = "x" * ((60 << 10) - len(json.dumps(padded)))
    data = request_bytes(served.port, message=padded, Connection="close")
    head = data[:data.index(b"\r\n\r\n") + 4]
    holders = [socket.create_connection(("127.0.0.1", served.port)) for _ in range(2)]
    try:
        for holder in holders:                # headers and the body's first bytes, no more
            holder.sendall(head + b"{")
        time.sleep(0.3)
        response = exchange(served.port, data, timeout=5)
        assert status_of(response) == 503, response[:300]
        assert headers_of(response)["retry-after"] == "1"
        assert "max_inflight_bytes" in body_of(response)["error"]["message"]
    finally:
        for holder in holders:
            holder.close()
    time.sleep(0.3)
    response = exchange(served.port, data)
    assert status_of(response) == 200, response[:300]
    assert body_of(response)["result"]["structuredContent"] == {"result": 5}


def padded_to(message, size):
    """``message`` with a _meta padding that makes its JSON ``size`` bytes."""
    message["params"]["_meta"]["padding"] = ""
    message["params"]["_meta"]["padding"] = "x" * (size - len(json.dumps(message)))
    return message


def test_open_listens_hold_stream_slots_not_the_bytes_of_their_bodies(serving):
    """Eight listens padded to 4 MiB (max_body_bytes: together, all of max_inflight_bytes)
    stay open: a small request is still served at once, not refused with 503."""
    served = serving(PLAIN_SERVER)
    port = served.port
    streams = [OpenStream(port, request_bytes(port, message=padded_to(
        listen_message(rid, toolsListChanged=True), 4 * MIB))) for rid in range(10, 18)]
    for stream in streams:
        stream.read_until(rb"subscriptions/acknowledged")
        acknowledged(stream)
    response = exchange(port, request_bytes(port, message=modern("tools/list"),
                                            Connection="close"), timeout=3)
    assert status_of(response) == 200, response[:300]
    assert body_of(response)["result"]["tools"][0]["name"] == "add"
    served_afterwards(port)
    for stream in streams:
        stream.close()


def test_a_body_trickled_a_byte_at_a_time_gets_408_within_idle_timeout(serve):
    """Never silent for idle_timeout, the client still must send the whole body within it:
    else 408, the connection closes, and its thread is gone."""
    served = serve(limited_server(idle_timeout=1.0))
    served_afterwards(served.port)
    threads = proc_status(served.pid, "Threads")
    data = request_bytes(served.port, message=modern("tools/list"))
    head_length = data.index(b"\r\n\r\n") + 4
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
        sock.sendall(data[:head_length])
        started, received = time.monotonic(), b""
        sock.setblocking(False)
        for byte in data[head_length:]:
            time.sleep(0.2)
            try:
                sock.sendall(bytes([byte]))
                received += sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                break
            if received.endswith(b"}") or time.monotonic() > started + 4:
                break
        took = time.monotonic() - started
        sock.settimeout(2)
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except OSError:
            pass
    assert status_of(received) == 408, received[:300]
    assert headers_of(received)["connection"] == "close"
    assert took < 2
    time.sleep(0.2)
    assert proc_status(served.pid, "Threads") <= threads
    served_afterwards(served.port)


def test_connections_past_max_connections_wait_and_threads_stay_bounded(serve):
    """70 idle connections with max_connections=20: 20 are served, a thread each, and the
    others wait in the kernel's queue; a client among them is served once those end."""
    served = serve(limited_server(max_connections=20))
    served_afterwards(served.port)
    threads = proc_status(served.pid, "Threads")
    idle = [socket.create_connection(("127.0.0.1", served.port), timeout=5) for _ in range(70)]
    answered = []
    try:
        time.sleep(0.5)
        assert proc_status(served.pid, "Threads") <= threads + 20
        waiting = threading.Thread(target=lambda: answered.append(served_afterwards(
            served.port)))
        waiting.start()
        time.sleep(0.5)
        assert not answered                   # queued, not refused
    finally:
        for connection in idle:
            connection.close()
    waiting.join(10)
    assert answered == [None]
    assert proc_status(served.pid, "Threads") <= threads + 20
    served_afterwards(served.port)


def test_a_401_closes_its_connection(serve):
    """A client without a good token is told so once: the 401 closes its connection, which
    it cannot keep to hold one of the server's."""
    served = serve(yes_no_auth_server())
    message = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    with socket.create_connection(("127.0.0.1", served.port), timeout=3) as sock:
        sock.sendall(request_bytes(served.port, message=message, Authorization="Bearer bad"))
        received, closed = b"", False
        try:
            while not closed:
                chunk = sock.recv(65536)
                received, closed = received + chunk, not chunk
        except socket.timeout:
            pass
    assert status_of(received) == 401, received[:300]
    assert headers_of(received)["connection"] == "close"
    assert closed
    served_with_a_token(served.port)


def test_one_address_cannot_take_every_connection(serve):
    """60 idle connections from 127.0.0.1 and clients sending a bad token once a second
    held every place of max_connections=60: alice, with a good token, waited. Past
    max_connections_per_address (50) a connection gets 429 and a close at once; alice,
    from 127.0.0.2, is answered."""
    served = serve(yes_no_auth_server(max_connections=60))
    port = served.port
    idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(60)]
    stop = threading.Event()
    bad = request_bytes(port, message=modern("tools/list"), Authorization="Bearer bad")

    def attack():
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                    # once a second, on the same connection for as long as it stays open
                    while not stop.is_set():
                        sock.sendall(bad)
                        if not sock.recv(4096):
                            break
                        stop.wait(1)
            except OSError:
                pass
            stop.wait(0.1)
    attackers = [threading.Thread(target=attack) for _ in range(20)]
    for attacker in attackers:
        attacker.start()
    try:
        time.sleep(0.5)
        message = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        with socket.create_connection(("127.0.0.1", port), timeout=3,
                                      source_address=("127.0.0.2", 0)) as sock:
            sock.sendall(request_bytes(port, message=message, Connection="close",
                                       Authorization="Bearer good"))
            received = b""
            try:
                while chunk := sock.recv(65536):
                    received += chunk
            except socket.timeout:
                pass
        assert status_of(received) == 200, received[:300]
        assert body_of(received)["result"]["structuredContent"] == {"result": 5}
        refused = []
        for sock in idle:
            sock.setblocking(False)
            try:
                refused.append(sock.recv(65536))
            except BlockingIOError:
                pass
        assert len(refused) == 10
        for response in refused:
            assert status_of(response) == 429 and headers_of(response)["connection"] == "close"
            assert "max_connections_per_address" in body_of(response)["error"]["message"]
    finally:
        stop.set()
        for attacker in attackers:
            attacker.join(5)
        for sock in idle:
            sock.close()


@pytest.mark.parametrize("line", [b"GET /mcp", b"POST /mcp", b"GET"])
def test_a_request_line_without_a_version_gets_400_with_a_status_line(serve, line):
    """HTTP/0.9 would answer with a bare body: no status line, no headers."""
    served = serve(PLAIN_SERVER)
    response = exchange(served.port, line + b"\r\n\r\n")
    assert status_of(response) == 400, response[:300]
    assert headers_of(response)["connection"] == "close"
    served_afterwards(served.port)


def test_a_request_line_over_64_kib_gets_414_and_a_close(serve):
    served = serve(PLAIN_SERVER)
    response = exchange(served.port, b"GET /mcp?" + b"a" * (70 << 10) + b" HTTP/1.1\r\n\r\n")
    assert status_of(response) == 414, response[:300]
    assert headers_of(response)["connection"] == "close"
    served_afterwards(served.port)


@pytest.mark.parametrize("headers", [{"X_Long": "a" * (70 << 10)},
                                     {f"X_H{i}": "1" for i in range(101)}],
                         ids=["a line over 64 KiB", "101 headers"])
def test_headers_over_the_limits_get_431_and_a_close(serve, headers):
    served = serve(PLAIN_SERVER)
    response = exchange(served.port, request_bytes(served.port, message=modern("tools/list"),
                                                   **headers))
    assert status_of(response) == 431, response[:300]
    assert headers_of(response)["connection"] == "close"
    served_afterwards(served.port)



def test_under_gunicorn_the_body_cap_the_state_cap_and_the_inflight_budget_hold(gunicorn):
    """They are mcp_min's, not the engine's: gunicorn has no body limit of its own."""
    port = gunicorn(limited_server(max_body_bytes=128 << 10, max_inflight_bytes=256 << 10))
    served_afterwards(port)
    # announced over the cap: 413 from the headers alone (gunicorn then waits for the body)
    response = head_and_start(port, state_call(30 * MIB), sent=0, timeout=1)
    assert status_of(response) == 413, response[:300]
    assert "131072 bytes" in body_of(response)["error"]["message"]
    # no Content-Length (chunked): counted as it is read
    chunk = b"x" * (200 << 10)
    data = request_bytes(port, message=modern("tools/list"), body=b"",
                         Content_Length=None, Transfer_Encoding="chunked", Connection="close")
    response = exchange(port, data + b"%X\r\n%s\r\n0\r\n\r\n" % (len(chunk), chunk))
    assert status_of(response) == 413, response[:300]
    # a requestState over max_state_bytes: -32602, whatever it says
    response = exchange(port, request_bytes(port, message=state_call(65 << 10),
                                            Connection="close"))
    assert status_of(response) == 400, response[:300]
    assert "over the limit of 65536" in body_of(response)["error"]["message"]
    # bodies in flight past max_inflight_bytes: 503 at once
    data = request_bytes(port, message=state_call(120 << 10), Connection="close")
    head = data[:data.index(b"\r\n\r\n") + 4]
    holders = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    try:
        for holder in holders:
            holder.sendall(head + b"{")
        time.sleep(0.3)
        response = exchange(port, data, timeout=5)
        assert status_of(response) == 503, response[:300]
        assert headers_of(response)["retry-after"] == "1"
    finally:
        for holder in holders:
            holder.close()
    time.sleep(0.3)
    served_afterwards(port)


# ============================================================================================
# Resource templates and logs
# ============================================================================================

#: Notes under NOTES_ROOT/notes, read as a careless server would: the name decoded once more
#: and either slash taken as a separator (as Windows does). The secret lies one level up.
NOTES_SERVER = PLAIN_SERVER + """
import os, re
from urllib.parse import unquote
NOTES = os.path.join(os.environ["NOTES_ROOT"], "notes")

def open_under_notes(path):
    with open(os.path.join(NOTES, *re.split(r"[\\\\\\\\/]", unquote(path)))) as f:
        return f.read()

@server.resource("file:///notes/{name}")
def note(name: str) -> str:
    return open_under_notes(name)

@server.resource("file:///docs/{+path}")
def doc(path: str) -> str:
    return open_under_notes(path)
"""

SECRET = "SECRET-ONE-LEVEL-UP"
TRAVERSALS = [
    "file:///notes/%2e%2e%2fsecret.txt",            # one segment that decodes to two
    "file:///notes/..%2Fsecret.txt",                # %2F inside a segment
    "file:///notes/..",                             # a literal dot segment
    "file:///notes/..%5csecret.txt",                # a backslash: a separator on Windows
    "file:///notes/.",
    "file:///notes/%2e",
    "file:///notes/%252e%252e%252fsecret.txt",      # encoded twice
    "file:///notes/secret.txt%00",
    "file:///docs/../secret.txt",                   # {+path}: a '..' segment
    "file:///docs/sub/%2e%2e/%2E%2E/secret.txt",
    "file:///docs/..%5csecret.txt",
]


@pytest.fixture
def notes_served(serve, tmp_path):
    (tmp_path / "notes" / "sub").mkdir(parents=True)
    (tmp_path / "notes" / "hello.txt").write_text("hello note")
    (tmp_path / "notes" / "sub" / "deep.txt").write_text("deep note")
    (tmp_path / "secret.txt").write_text(SECRET)
    return serve(NOTES_SERVER, env={"NOTES_ROOT": str(tmp_path)})


def read_modern(port, uri):
    """resources/read in 2026-07-28 (with its Mcp-Name header): (status, JSON-RPC reply)."""
    message = modern("resources/read", {"uri": uri}, rid=5)
    response = exchange(port, request_bytes(port, message=message, Connection="close"))
    return status_of(response), body_of(response)


def reply_of(response):
    """The JSON-RPC message of a raw response: a JSON body, or an event stream's one."""
    body = response.partition(b"\r\n\r\n")[2]
    if headers_of(response).get("content-type", "").startswith("text/event-stream"):
        body = re.sub(rb"\r?\n[0-9A-Fa-f]+\r?\n", b"\n", b"\n" + body)   # chunked framing
        body = re.search(rb"^data: (.*)$", body, re.M).group(1)
    return json.loads(body)


def handshake_session(port):
    """A handshake-era session over HTTP: the headers its requests carry."""
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    response = exchange(port, request_bytes(port, body=json.dumps(hello).encode(),
                                            Content_Type="application/json", Accept=ACCEPT,
                                            Connection="close"))
    assert status_of(response) == 200, response[:500]
    session = {"Mcp-Session-Id": headers_of(response)["mcp-session-id"],
               "MCP-Protocol-Version": "2025-11-25", "Content-Type": "application/json",
               "Accept": ACCEPT, "Connection": "close"}
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    exchange(port, request_bytes(port, body=json.dumps(done).encode(),
                                 **{k.replace("-", "_"): v for k, v in session.items()}))
    return session


def read_in_session(port, session, uri):
    message = {"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": uri}}
    response = exchange(port, request_bytes(port, body=json.dumps(message).encode(),
                                            **{k.replace("-", "_"): v
                                               for k, v in session.items()}))
    return status_of(response), reply_of(response)


@pytest.mark.parametrize("uri", TRAVERSALS)
def test_a_template_variable_cannot_walk_out_of_its_directory(notes_served, uri):
    """2026-07-28: the URI matches no template, so the read is not found (-32602, with
    data.uri); the function never sees the value, and the secret one level up stays there."""
    port = notes_served.port
    status, reply = read_modern(port, uri)
    assert SECRET not in json.dumps(reply)
    assert reply["error"]["code"] == -32602, reply
    assert reply["error"]["message"].startswith("Resource not found"), reply
    assert reply["error"]["data"] == {"uri": uri}
    assert read_modern(port, "file:///notes/hello.txt")[1]["result"]["contents"][0]["text"] \
        == "hello note"
    served_afterwards(port)


def test_traversals_are_not_found_in_a_handshake_era_session(notes_served):
    """The same URIs in a session: -32002, the era's not-found code; its reads still work."""
    port = notes_served.port
    session = handshake_session(port)
    for uri in TRAVERSALS:
        status, reply = read_in_session(port, session, uri)
        assert status == 200 and SECRET not in json.dumps(reply), (uri, reply)
        assert reply["error"]["code"] == -32002, (uri, reply)
    for uri, text in (("file:///notes/hello.txt", "hello note"),
                      ("file:///docs/sub/deep.txt", "deep note"),
                      ("file:///notes/hello%2Etxt", "hello note")):
        assert read_in_session(port, session, uri)[1]["result"]["contents"][0]["text"] == text
    served_afterwards(port)


@pytest.mark.parametrize("uri, variables", [
    ("file:///notes/hello.txt", {"name": "hello.txt"}),
    ("file:///notes/a..b", {"name": "a..b"}),               # dots inside a name are a name
    ("file:///notes/...", {"name": "..."}),
    ("file:///notes/caf%C3%A9%20au%20lait", {"name": "café au lait"}),
    ("file:///notes/100%25.txt", {"name": "100%.txt"}),      # a percent sign, decoded once
    ("file:///notes/%2e%2e", None),
    ("file:///notes/.%2E", None),
    ("file:///notes/a%2Fb", None),
    ("file:///notes/a%5Cb", None),
    ("file:///notes/a\\b", None),
    ("file:///notes/%00", None),
    ("file:///notes/%252e%252e", None),                      # ".." once decoded again
    ("file:///notes/%252Fetc", None),
    ("file:///notes/a/b", None),                            # never matched two segments
])
def test_a_template_var_is_one_segment_once_decoded(uri, variables):
    server = mcp_min.Server("notes")

    @server.resource("file:///notes/{name}")
    def note(name: str) -> str:
        return name
    assert server.resources["file:///notes/{name}"].match(uri) == variables


@pytest.mark.parametrize("uri, allowed", [
    ("file:///docs/a/b.txt", True),
    ("file:///docs/a/..b/c..", True),
    ("file:///docs/a%2Fb", True),                           # passed on as it is, encoded
    ("file:///docs/../x", False),
    ("file:///docs/a/../../x", False),
    ("file:///docs/a/./x", True),                           # '.' stays where it is
    ("file:///docs/.", True),
    ("file:///docs/%2E%2e/x", False),
    ("file:///docs/a%2F..%2Fx", False),
    ("file:///docs/a\\..\\x", False),
    ("file:///docs/a%5C..", False),
    ("file:///docs/%252e%252e/x", False),
    ("file:///docs//etc/passwd", False),                    # absolute, once joined
    ("file:///docs/%2Fetc/passwd", False),
    ("file:///docs/a%00", False),
])
def test_a_template_plus_var_has_no_dot_dot_segments_unless_allowed(uri, allowed):
    server = mcp_min.Server("docs")

    @server.resource("file:///docs/{+path}")
    def doc(path: str) -> str:
        return path

    @server.resource("git:///{+range}", allow_dot_segments=True)
    def log(range: str) -> str:
        return range
    found = server.resources["file:///docs/{+path}"].match(uri)
    assert found == ({"path": uri[len("file:///docs/"):]} if allowed else None)
    # Opted in: every one matches (but NUL), as it is.
    rest = uri[len("file:///docs/"):]
    expected = None if "%00" in rest else {"range": rest}
    assert server.resources["git:///{+range}"].match("git:///" + rest) == expected


def test_allow_dot_segments_is_checked_where_it_is_given():
    server = mcp_min.Server("docs")
    with pytest.raises(ValueError, match=r"allow_dot_segments=True is for a \{\+var\}"):
        server.resource("file:///notes/{name}", allow_dot_segments=True)(lambda name: name)
    with pytest.raises(ValueError, match="allow_dot_segments must be True or False"):
        server.resource("file:///docs/{+path}", allow_dot_segments="yes")(lambda path: path)


def test_completion_and_template_listing_are_unaffected():
    server = mcp_min.Server("notes")

    @server.resource("file:///notes/{name}")
    def note(name: str) -> str:
        return name

    @server.completion("name", template="file:///notes/{name}")
    def names(value, arguments):
        return [n for n in ("..", "hello.txt") if n.startswith(value)]
    with mcp_min.Client(server) as client:
        templates = client.request("resources/templates/list")["resourceTemplates"]
        assert [t["uriTemplate"] for t in templates] == ["file:///notes/{name}"]
        completed = client.request("completion/complete", {
            "ref": {"type": "ref/resource", "uri": "file:///notes/{name}"},
            "argument": {"name": "name", "value": "h"}})
        assert completed["completion"]["values"] == ["hello.txt"]


#: Tools that fail deep: a result nested 3,000 deep (its encoding recurses past the limit),
#: and a mutual recursion that ends in a plain error with a long message.
DEEP_SERVER = PLAIN_SERVER + """
@server.tool
def nested(depth: int) -> list:
    value = []
    for _ in range(depth):
        value = [value]
    return value

def down(n):
    return across(n - 1) if n else int("x" * 20000)

def across(n):
    return down(n)

@server.tool
def fail_deep(depth: int) -> int:
    return down(depth)

if __name__ == "__main__":
    server.run()
"""
FAILURES = [("nested", {"depth": 3000}), ("fail_deep", {"depth": 400})]
LOG_BOUND = 4096 + 300            # the traceback's bound, and the line that introduces it


def logged_when(get_log, needle, count, timeout=10):
    """The log once ``needle`` is in it ``count`` times (it is written on another thread)."""
    deadline = time.monotonic() + timeout
    while get_log().count(needle) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)                   # and whatever else the failure writes
    return get_log()


@pytest.mark.parametrize("tool, arguments", FAILURES)
def test_a_deep_failure_logs_a_few_kib_per_http_request(serve, tool, arguments):
    served = serve(DEEP_SERVER)
    port = served.port
    for i in range(1, 4):
        before = len(served.stderr.encode())
        message = modern("tools/call", {"name": tool, "arguments": arguments}, rid=i)
        response = exchange(port, request_bytes(port, message=message, Connection="close"))
        assert status_of(response) == 200 and body_of(response)["result"]["isError"]
        log = logged_when(lambda: served.stderr, f"tool '{tool}' failed", i)
        grown = log.encode()[before:]
        assert b"failed" in grown and len(grown) <= LOG_BOUND, (len(grown), grown[-2000:])
    if tool == "nested":              # one line: where it recursed
        line = [row for row in log.splitlines() if "RecursionError" in row][-1]
        assert "_dump" in line and "frames deep" in line and "Traceback" not in log, line
    else:
        assert "frames left out" in log and "characters left out" in log, log[-3000:]
    served_afterwards(port)


def test_a_deep_failure_logs_a_few_kib_per_stdio_request(spawn, tmp_path):
    script = tmp_path / "deep_server.py"
    script.write_text(DEEP_SERVER.replace("{root}", repr(str(ROOT))))
    wire = spawn(str(script))
    wire.initialize()
    for count, (tool, arguments) in enumerate(FAILURES * 2, 1):
        before = len(wire.stderr.encode())
        result = wire.result("tools/call", {"name": tool, "arguments": arguments})
        assert result["isError"], result
        grown = logged_when(lambda: wire.stderr, "failed", count).encode()[before:]
        assert f"tool '{tool}' failed".encode() in grown, grown[-2000:]
        assert len(grown) <= LOG_BOUND, (len(grown), grown[-2000:])
    assert wire.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}) \
        ["structuredContent"] == {"result": 5}


#: A tool whose error quotes its argument: a forged log line and a screen-clear, when raw.
FORGING_SERVER = PLAIN_SERVER + """
@server.tool
def weather(city: str) -> str:
    raise ValueError(f"unknown city {city}")

if __name__ == "__main__":
    server.run()
"""
FORGED_CITY = "Paris\nmcp_min ERROR: forged line\n\x1b[2J"
ESCAPED_CITY = "unknown city Paris\\nmcp_min ERROR: forged line\\n\\x1b[2J"


def assert_not_forged(log):
    assert ESCAPED_CITY in log, log[-2000:]
    assert "\x1b" not in log
    assert not [line for line in log.splitlines() if line.startswith("mcp_min ERROR: forged")]


def test_a_failure_quoting_a_client_logs_it_escaped_over_http(serve):
    served = serve(FORGING_SERVER)
    message = modern("tools/call", {"name": "weather", "arguments": {"city": FORGED_CITY}})
    response = exchange(served.port, request_bytes(served.port, message=message,
                                                   Connection="close"))
    assert body_of(response)["result"]["isError"]
    assert_not_forged(logged_when(lambda: served.stderr, "tool 'weather' failed", 1))
    served_afterwards(served.port)


def test_a_failure_quoting_a_client_logs_it_escaped_over_stdio(spawn, tmp_path):
    script = tmp_path / "forging_server.py"
    script.write_text(FORGING_SERVER.replace("{root}", repr(str(ROOT))))
    wire = spawn(str(script))
    wire.initialize()
    result = wire.result("tools/call", {"name": "weather", "arguments": {"city": FORGED_CITY}})
    assert result["isError"] and FORGED_CITY in result["content"][0]["text"]
    assert_not_forged(logged_when(lambda: wire.stderr, "tool 'weather' failed", 1))


# ============================================================================================
# What the embedded server says of its own refusals
# ============================================================================================

@pytest.mark.parametrize("line", [b"GET /mcp FOO/1.0", b"GET /mcp HTTP/9.9",
                                  b"GET /mcp HTTP/1.1 " + b"\x1b[31mred" * 100])
def test_a_bad_request_line_gets_a_status_line_and_a_json_error_quoting_nothing_in_headers(
        serve, line):
    served = serve(PLAIN_SERVER)
    response = exchange(served.port, line + b"\r\nHost: 127.0.0.1\r\n\r\n")
    head = response.partition(b"\r\n\r\n")[0]
    assert status_of(response) in (400, 505), response[:300]
    assert b"FOO" not in head and b"9.9" not in head and b"red" not in head
    assert headers_of(response)["content-type"] == "application/json"
    error = body_of(response)["error"]
    assert error["code"] == -32600 and len(error["message"]) <= 300
    assert headers_of(response)["connection"] == "close"
    served_afterwards(served.port)


def test_expect_100_continue_is_not_answered_for_a_body_over_the_cap(serve):
    """A client that asks first is told 413 at once, not asked to send 4 MiB and more."""
    served = serve(PLAIN_SERVER)
    message = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    head = request_bytes(served.port, message=message, body=b"", Expect="100-continue",
                         Content_Length=(4 << 20) + 1)
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head)
        first = sock.recv(65536)
    assert status_of(first) == 413, first[:300]
    small = json.dumps(message).encode()
    head = request_bytes(served.port, message=message, body=b"", Expect="100-continue",
                         Content_Length=len(small))
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head)
        assert sock.recv(65536).startswith(b"HTTP/1.1 100 Continue\r\n")
        sock.sendall(small)
        received = b""
        while b'"result"' not in received:
            received += sock.recv(65536)
    served_afterwards(served.port)


def test_a_client_that_sends_its_whole_body_first_reads_the_413(serve):
    """urllib and httpx send the whole body before they read: the embedded server reads and
    drops the rest of a body it refused by its length (a lingering close), so they get the
    413 and its JSON-RPC error, not a broken pipe or a reset (urllib did)."""
    httpx2 = pytest.importorskip("httpx2")
    served = serve(PLAIN_SERVER)
    url = f"http://127.0.0.1:{served.port}/mcp"
    call = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    listen = listen_message(toolsListChanged=True)
    for message, size in ((call, 5 * MIB), (listen, 20_000_000)):
        body = json.dumps(padded_to(message, size)).encode()
        headers = {"Content-Type": "application/json", "Accept": ACCEPT,
                   **modern_headers(message)}
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=10)
        assert refused.value.code == 413
        error = json.loads(refused.value.read())["error"]
        refused.value.close()
        assert error["code"] == -32600 and f"{size} bytes is over" in error["message"]
        response = httpx2.post(url, content=body, headers=headers, timeout=10)
        assert response.status_code == 413
        assert response.json()["error"] == error
    served_afterwards(served.port)


def test_a_long_unknown_uri_is_not_echoed_whole_in_the_message(serve):
    served = serve(PLAIN_SERVER + '\n@server.resource("file:///notes/{name}")\n'
                                  'def note(name: str) -> str:\n    return name\n')
    uri = "file:///" + "a" * 5000
    message = modern("resources/read", {"uri": uri})
    response = exchange(served.port, request_bytes(served.port, message=message,
                                                   Connection="close"))
    error = body_of(response)["error"]
    assert len(error["message"]) < 300 and error["data"]["uri"] == uri


def test_a_bare_cr_in_a_header_line_is_400_not_a_header_smuggled_past_a_proxy(serve):
    """The header parser would split "Foo: x\\rMcp-Session-Id: y" in two; a proxy in front may
    read one line. Either way, such a request is refused."""
    served = serve(PLAIN_SERVER)
    message = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    response = exchange(served.port, request_bytes(
        served.port, message=message, X_Note=b"fine\rMcp-Method: tools/list"))
    assert status_of(response) == 400, response[:300]
    assert "CR" in body_of(response)["error"]["message"]
    served_afterwards(served.port)


@pytest.mark.parametrize("version", [b"HTTP/0.9", b"HTTP/2.0", b"HTTP/1"])
def test_a_version_other_than_1_0_and_1_1_gets_a_status_line(serve, version):
    served = serve(PLAIN_SERVER)
    response = exchange(served.port, b"GET /mcp " + version + b"\r\nHost: 127.0.0.1\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 ") and status_of(response) in (400, 505)
    assert body_of(response)["error"]["code"] == -32600
    served_afterwards(served.port)


def test_a_content_length_of_thousands_of_digits_is_400_not_a_crash(serve):
    served = serve(PLAIN_SERVER)
    message = modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    response = exchange(served.port, request_bytes(served.port, message=message,
                                                   Content_Length="9" * 5000))
    assert status_of(response) == 400 and "Content-Length" in body_of(response)["error"][
        "message"]
    assert "Traceback" not in served.stderr
    served_afterwards(served.port)


# ============================================================================================
# Arguments that are costly to check
# ============================================================================================

COSTLY_SERVER = PLAIN_SERVER + """
from typing import Literal, TypedDict, Union

class A(TypedDict):
    kind: Literal["a"]
    children: list[Union["A", "B"]]

class B(TypedDict):
    kind: Literal["b"]
    children: list[Union["A", "B"]]

@server.tool
def tree(root: Union[A, B]) -> int:
    return 1

# Two arms alike, which only a leaf can fail: no keyword tells them apart.
ARM = {"type": "object", "properties": {
    "c": {"type": "array", "items": {"$ref": "#/$defs/N"}}, "v": {"type": "integer"}}}

@server.tool(input_schema={"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}},
                           "$defs": {"N": {"anyOf": [ARM, ARM]}}})
def same(**arguments) -> int:
    return 1
"""


def union_tree(depth, leaf="b"):
    """A chain of ``depth`` nodes, their kinds alternating, ending in a ``leaf`` node."""
    node = {"kind": leaf, "children": []}
    for level in range(depth):
        node = {"kind": "ab"[level % 2], "children": [node]}
    return node


def costly_body(depth, rid=1):
    """A call of ``same`` that validates in about 2^depth steps, failing at its leaf."""
    node = {"v": "not an integer"}
    for _ in range(depth):
        node = {"c": [node]}
    return modern("tools/call", {"name": "same", "arguments": {"n": node}}, rid=rid)


@pytest.mark.parametrize("depth, leaf", [(16, "b"), (18, "c")])
def test_a_union_tree_of_16_levels_is_answered_within_3_s(serve, depth, leaf):
    """Each node's alternatives are told apart by their ``kind`` before their children are
    checked: linear, not 2^depth (3.3 s at 16 levels, 17 s at 18). A leaf of neither kind
    gets the error of the alternative meant for it."""
    served = serve(COSTLY_SERVER)
    message = modern("tools/call", {"name": "tree",
                                    "arguments": {"root": union_tree(depth, leaf)}})
    assert len(json.dumps(message)) < 1000
    began = time.monotonic()
    response = exchange(served.port, request_bytes(served.port, message=message,
                                                   Connection="close"))
    took = time.monotonic() - began
    result = body_of(response)["result"]
    assert took < 3, f"answered in {took:.1f} s"
    if leaf == "b":
        assert result["structuredContent"] == {"result": 1}
    else:
        assert result["isError"] and 'kind: must be "a", got "c"' in result["content"][0]["text"]
    served_afterwards(served.port)


def burning(pid, seconds=0.5):
    """The share of a core the process used over the next ``seconds``."""
    before, start = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - start)


def test_a_client_that_leaves_a_costly_validation_stops_it_within_a_second(serve):
    """Leaving cancels a 2026-07-28 call, its validation too: every 20,000 steps the
    validator looks whether the client has gone."""
    served = serve(COSTLY_SERVER.replace('Server("plain")',
                                         'Server("plain", max_validation_steps=10**12)'))
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(request_bytes(served.port, message=costly_body(24)))
        time.sleep(0.5)
        assert burning(served.pid) > 0.5, "the validation did not start"
    time.sleep(1)
    share = burning(served.pid)
    assert share < 0.1, f"still {share:.0%} of a core a second after the client left"
    served_afterwards(served.port)


def test_arguments_past_max_validation_steps_get_32602_naming_the_limit(serve):
    served = serve(COSTLY_SERVER.replace('Server("plain")',
                                         'Server("plain", max_validation_steps=100_000)'))
    began = time.monotonic()
    response = exchange(served.port, request_bytes(served.port, message=costly_body(24),
                                                   Connection="close"))
    error = body_of(response)["error"]
    assert error["code"] == -32602 and time.monotonic() - began < 5
    assert "too costly to check" in error["message"], error
    assert "100,000" in error["message"] and "max_validation_steps" in error["message"]
    served_afterwards(served.port)
