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


# ============================================================================================
# Who may reach it: Host, Origin, tokens; nothing reflected
# ============================================================================================


# ============================================================================================
# What a client can make the server hold: sessions, streams, subscriptions
# ============================================================================================


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



@pytest.fixture
def gunicorn(tmp_path):
    """gunicorn (one gthread worker, 4 threads) serving ``source``'s ``server``; its port."""
    import importlib.util
    if importlib.util.find_spec("gunicorn") is None:
        pytest.skip("gunicorn is not installed (tests/requirements.txt)")
    started = []

    def start(source):
        (tmp_path / "limited.py").write_text(source.replace("{root}", repr(str(ROOT))))
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", "1", "--worker-class", "gthread",
             "--threads", "4", "--bind", "127.0.0.1:0", "--no-control-socket",
             "--graceful-timeout", "2", "--chdir", str(tmp_path), "limited:server"],
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
        proc.terminate()
        proc.wait(15)
        proc.stderr.close()


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
