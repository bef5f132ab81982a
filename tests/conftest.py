"""Shared fixtures: a real server subprocess driven line by line over its pipes (``Wire``),
and the in-memory client for unit tests. For Streamable HTTP: granian serving a server
as in production (``Granian``), and 2026-07-28 requests sent over real connections."""

import http.client
import importlib.util
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# The SDK test modules' shared checks: their asserts are rewritten (to say what differed)
# only if registered before any test module imports them.
pytest.register_assert_rewrite("sdk_compat", "sdk_suite")

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"
sys.path.insert(0, str(ROOT))

import mcp_min  # noqa: E402

# A shell starts a background command with Ctrl+C (SIGINT) ignored, and the servers the tests
# start would inherit that: the tests of Ctrl+C would fail. Caught here, it is back to its
# default in every program the tests start.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

INIT_PARAMS = {"protocolVersion": mcp_min.LATEST_PROTOCOL_VERSION, "capabilities": {},
               "clientInfo": {"name": "pytest", "version": "1"}}


class Wire:
    """A server subprocess and its raw stdio: send lines, read lines, check the framing."""

    def __init__(self, argv, env=None, cwd=None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=full_env, cwd=cwd or ROOT)
        self.lines = queue.Queue()
        self.stderr_chunks = []
        self.notifications = []
        self.next_id = 1000
        self.pumps = [threading.Thread(target=pump, daemon=True)
                      for pump in (self._pump_stdout, self._pump_stderr)]
        for pump in self.pumps:
            pump.start()

    def _pump_stdout(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self):
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):
            self.stderr_chunks.append(chunk)

    @property
    def stderr(self):
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    # -- writing -----------------------------------------------------------------------------
    def send(self, message):
        """Write a dict/list as one JSON line, or bytes/str verbatim (add your own newline)."""
        if isinstance(message, (dict, list)):
            data = (json.dumps(message) + "\n").encode()
        elif isinstance(message, str):
            data = message.encode()
        else:
            data = message
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close_stdin(self):
        self.proc.stdin.close()

    # -- reading -----------------------------------------------------------------------------
    def recv_raw(self, timeout=10):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout} s; stderr:\n{self.stderr}") from None
        if line is None:
            self.lines.put(None)
            raise AssertionError(f"server closed stdout; stderr:\n{self.stderr}")
        return line

    def recv(self, timeout=10):
        """The next line, parsed; every line on stdout must be one JSON-RPC message (T2, T4)."""
        return self.parse(self.recv_raw(timeout))

    def rest_of_stdout(self, timeout=15):
        """Every message still to come, in order, until the server closes stdout."""
        messages, deadline = [], time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if line is None:
                self.lines.put(None)
                return messages
            messages.append(self.parse(line))

    @staticmethod
    def parse(line):
        assert line.endswith(b"\n") and b"\n" not in line[:-1], line[:200]
        message = json.loads(line)
        items = message if isinstance(message, list) else [message]
        for item in items:
            assert item.get("jsonrpc") == "2.0", item
            assert ("result" in item) != ("error" in item) or "method" in item, item
        return message

    def expect_silence(self, timeout=0.3):
        """Nothing more is written for ``timeout`` seconds."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected output: {line[:300]!r}")

    def response(self, request_id, timeout=10):
        """Read until the response to ``request_id``, keeping notifications on the side."""
        while True:
            message = self.recv(timeout)
            if isinstance(message, dict) and "method" in message and "id" not in message:
                self.notifications.append(message)
                continue
            assert isinstance(message, dict) and message.get("id") == request_id, message
            return message

    def request(self, method, params=None, request_id=None, timeout=10):
        if request_id is None:
            self.next_id += 1
            request_id = self.next_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response(request_id, timeout)

    def result(self, method, params=None, **kw):
        response = self.request(method, params, **kw)
        assert "result" in response, response
        return response["result"]

    def initialize(self, version=mcp_min.LATEST_PROTOCOL_VERSION, capabilities=None):
        params = dict(INIT_PARAMS, protocolVersion=version, capabilities=capabilities or {})
        result = self.result("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def wait(self, timeout=10):
        return self.proc.wait(timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self):
        """Kill the server if it still runs, and close our ends of its pipes."""
        self.kill()
        for pump in self.pumps:               # they read to the end first: no read on a
            pump.join(5)                      # closed file from a thread of ours
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


@pytest.fixture
def spawn():
    """spawn(script, *args, env=...) -> Wire running ``python3 script`` (tests/servers/ or a path)."""
    wires = []

    def start(script="everything.py", *args, env=None, python_args=()):
        path = SERVERS / script if not os.path.isabs(script) and (SERVERS / script).exists() else script
        wire = Wire([sys.executable, *python_args, str(path), *args], env=env)
        wires.append(wire)
        return wire
    yield start
    for wire in wires:
        wire.close()


@pytest.fixture
def wire(spawn):
    """The everything server, initialized at the latest protocol version."""
    w = spawn("everything.py")
    w.initialize()
    return w


# -- Programs the tests start, which CI installs --------------------------------------
#: Debian's packages that .ci/run installs (as root) for the tests that start them, and
#: how a newcomer gets each.
SYSTEM_TOOLS = {"haproxy": "apt install haproxy",
                "redis-server": "apt install redis-server",
                "chromium": "apt install chromium"}


def require_tool(name, why):
    """The path of the program ``name``, which a test needs for ``why``. Missing, the
    test is skipped, saying how to get it; but in CI (CI=true), which installs it, the
    test fails: a missing install step must not pass as a green run of skips."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if found:
        return found
    message = f"{name} is not installed: {why} ({SYSTEM_TOOLS[name]})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI installs it (.ci/run), so it should be here")
    pytest.skip(message)


# -- Streamable HTTP on an engine ------------------------------------------------------
ACCEPT = "application/json, text/event-stream"
TRIES = 60          # fresh connections tried before concluding that a second worker
                    # never answers


def free_port():
    """A port of 127.0.0.1 that nothing listens on, for an engine that cannot take 0."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Granian:
    """granian (pinned in tests/requirements.txt; the test is skipped without it)
    serving the WSGI application ``target`` ("module:name", imported from ``cwd``) on a
    free port of 127.0.0.1: ``workers`` processes, ``threads`` blocking threads each,
    and the command-line ``options`` given.
    Its log (granian writes it, and what its workers print, to stdout) is read on a
    thread: it says when the workers are up and what their pids are, and the pipe never
    fills."""

    def __init__(self, target, cwd=SERVERS, workers=1, threads=8, env=None, options=()):
        if importlib.util.find_spec("granian") is None:
            pytest.skip("granian is not installed (tests/requirements.txt)")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "granian", "--interface", "wsgi",
             "--workers", str(workers), "--blocking-threads", str(threads),
             "--port", str(self.port), "--log-level", "info", *options, target],
            cwd=cwd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, encoding="utf-8", errors="replace",
            start_new_session=True)           # a group of its own: close() kills it all
        self.log = []
        self.reader = threading.Thread(target=lambda: self.log.extend(self.proc.stdout),
                                       daemon=True)
        self.reader.start()
        deadline = time.monotonic() + 30
        while self.text().count("Started worker-") < workers:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise AssertionError(f"granian did not start:\n{self.text()}")
            time.sleep(0.05)
        spawned = re.findall(r"Spawning worker-\d+ with PID: (\d+)", self.text())
        self.worker_pids = {int(pid) for pid in spawned}
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def text(self, since=0):
        """The log from its line ``since`` on."""
        return "".join(self.log[since:])

    def connection(self, timeout=15):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.reader.join(5)
        self.proc.stdout.close()


# A 2026-07-28 request says its version and the client's capabilities in its _meta,
# and repeats in headers what its body says (docs/http.md).
def modern(method, params=None, rid=1, **meta):
    params = dict(params or {})
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": mcp_min.V2026_07,
                       "io.modelcontextprotocol/clientCapabilities": {}, **meta}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def call(name, arguments=None, rid=1, **meta):
    params = {"name": name, "arguments": arguments or {}}
    return modern("tools/call", params, rid, **meta)


#: The methods whose requests name their target in Mcp-Name, and where it is in params.
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def send(connection, message, headers=None, path="/mcp"):
    """POST one message to `path`; the response, unread. The 2026-07-28 headers repeat
    the body."""
    extra, params = {}, message.get("params", {})
    if "_meta" in params:
        extra = {"MCP-Protocol-Version": mcp_min.V2026_07,
                 "Mcp-Method": message["method"]}
        if message["method"] in NAMED:
            extra["Mcp-Name"] = params[NAMED[message["method"]]]
    connection.request("POST", path, json.dumps(message), {
        "Content-Type": "application/json", "Accept": ACCEPT, **extra,
        **(headers or {})})
    return connection.getresponse()


def messages_of(response):
    """The JSON-RPC messages of a response, JSON or SSE, read to the end."""
    body = response.read()
    if response.getheader("Content-Type", "").startswith("text/event-stream"):
        return [json.loads(line[6:]) for line in body.decode().splitlines()
                if line.startswith("data: ")]
    return [json.loads(body)] if body else []


def exchange(farm, message, headers=None):
    """POST on a fresh connection to ``farm`` (so that any worker may take it): the
    status and the messages."""
    connection = farm.connection()
    try:
        response = send(connection, message, headers)
        return response.status, messages_of(response)
    finally:
        connection.close()


def value(result):
    return result["structuredContent"]["result"]


def logged_pid(messages):
    """The pid a tool of tests/servers/workers.py logged as it started; None if it never
    ran."""
    lines = [m["params"]["data"] for m in messages
             if m.get("method") == "notifications/message"]
    if not lines:
        return None
    (line,) = lines
    return int(line.split()[1])


def mrtr_rounds(farm, name="Ada"):
    """One tools/call of tests/servers/workers.py's `greet` in two rounds, each on a
    fresh connection: the pids that answered the first round and the retry (None if
    refused), the retry's status and messages."""
    meta = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/logLevel": "info"}
    status, first = exchange(farm, call("greet", rid=1, **meta))
    assert status == 200, first
    result = first[-1]["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["user_name"]
    answer = {"action": "accept", "content": {"name": name}}
    retry = modern("tools/call", {
        "name": "greet", "arguments": {}, "requestState": result["requestState"],
        "inputResponses": {"user_name": answer}}, 2, **meta)
    status, second = exchange(farm, retry)
    return logged_pid(first), logged_pid(second), status, second


def retry_on_the_other_worker(farm):
    """mrtr_rounds, each answered (every worker has the same MCP_MIN_STATE_KEY), until a
    retry reaches the worker that did not ask: the pids that asked and answered."""
    for attempt in range(TRIES):
        asked_by, retried_on, status, messages = mrtr_rounds(farm, f"Ada {attempt}")
        assert status == 200, messages                 # whichever worker gets it
        result = messages[-1]["result"]
        assert result["resultType"] == "complete"
        assert result["structuredContent"] == {"greeting": f"Hello, Ada {attempt}!",
                                               "pid": retried_on}
        if asked_by != retried_on:
            return asked_by, retried_on
    raise AssertionError(f"no retry reached another worker in {TRIES} tries")


def stop_process(proc, timeout=10):
    """End a server the tests started: SIGTERM, then SIGKILL if it does not exit."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
