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

import pytest

from conftest import ROOT

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
        threading.Thread(target=self._read_log, daemon=True).start()
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


# ============================================================================================
# Who may reach it: Host, Origin, tokens; nothing reflected
# ============================================================================================


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


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_listen_streams_cost_no_cpu(serving):
    served = serving(PLAIN_SERVER.replace('Server("plain")', 'Server("plain", max_streams=200)'))
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


GUNICORN_APP = """
import sys
sys.path.insert(0, {root})
from mcp_min import Server
server = Server("threads", max_streams=3, heartbeat=0.5)

@server.tool
def add(a: int, b: int) -> int:
    return a + b

application = server.wsgi
"""


@pytest.fixture
def gunicorn(tmp_path):
    """gunicorn serving GUNICORN_APP with one gthread worker of 4 threads: its port."""
    pytest.importorskip("gunicorn")
    (tmp_path / "threads_app.py").write_text(GUNICORN_APP.replace("{root}", repr(str(ROOT))))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", "1", "--worker-class", "gthread",
         "--threads", "4", "--bind", "127.0.0.1:0", "--graceful-timeout", "1",
         "--no-control-socket", "--chdir", str(tmp_path), "threads_app:application"],
        stderr=subprocess.PIPE)
    port = None
    try:
        for raw in proc.stderr:
            listening = re.search(rb"Listening at: http://127\.0\.0\.1:(\d+)", raw)
            if listening:
                port = int(listening.group(1))
            if b"Booting worker" in raw:
                break
        assert port, "gunicorn did not start"
        threading.Thread(target=proc.stderr.read, daemon=True).start()   # never fills
        yield port
    finally:
        while OpenStream.opened:
            OpenStream.opened.pop().close()
        proc.terminate()
        proc.wait(15)
        proc.stderr.close()


def test_under_gunicorn_gthread_the_stream_cap_keeps_threads_for_calls(gunicorn):
    """With --threads 4 and max_streams=3, listens take three threads at most: the fourth
    is refused, and calls still find a thread (uncapped, four listens starve them)."""
    port = gunicorn
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
    # Big listens, one after another, each refused: nothing of them stays
    flood = [f"docs://{'x' * 40}/{i}" for i in range(100_000)]
    before = proc_status(served.pid, "VmRSS")
    for rid in range(3):
        refused = open_listen(port, "bob", rid, resourceSubscriptions=flood)
        assert status_of(refused.received) == 400, refused.received[:300]
    grown = proc_status(served.pid, "VmRSS") - before
    assert grown < 64 * 1024, f"{grown} KiB more resident after refusing 300,000 subscriptions"
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


# ============================================================================================
# Memory, time, connections and framing on the embedded server
# ============================================================================================


# ============================================================================================
# Resource templates and logs
# ============================================================================================
