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


# ============================================================================================
# Resource templates and logs
# ============================================================================================
