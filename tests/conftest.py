"""Shared fixtures: a real server subprocess driven line by line over its pipes (``Wire``),
and the in-memory client for unit tests."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

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
