"""The engines a user deploys on: the lifespan follows the worker processes (entered before a
worker serves its first request, left when it exits, on SIGTERM and Ctrl+C alike), and a
lifespan that fails says so loudly, once, instead of a traceback per request. Each engine is
started as a subprocess on 127.0.0.1: the embedded server (`mcp_min.py serve --http`),
gunicorn and granian (pinned in tests/requirements.txt; skipped if missing)."""

import http.client
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, free_port

import mcp_min

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")

APP = """
import os, sys, contextlib
sys.path.insert(0, {root!r})
from mcp_min import Server

def note(what):
    with open({log!r}, "a") as f:
        f.write(f"{{what}} {{os.getpid()}}\\n")

@contextlib.contextmanager
def life(server):
    if {fail!r}:
        raise ConnectionRefusedError("the database at db.example:5432 refused the connection")
    note("open")
    yield
    note("closed")

server = Server("engines", lifespan=life, http_sessions=False)

@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""

ENGINES = {
    "gunicorn": lambda app, port: [sys.executable, "-m", "gunicorn", "--workers", "2",
                                   "--worker-class", "gthread", "--threads", "4", "--bind",
                                   f"127.0.0.1:{port}", "--no-control-socket",
                                   "--graceful-timeout", "5", app],
    "granian": lambda app, port: [sys.executable, "-m", "granian", "--interface", "wsgi",
                                  "--workers", "2", "--blocking-threads", "8", "--port",
                                  str(port), "--log-level", "info", app],
}
# What each engine logs once a worker is ready to serve.
WORKER_READY = {"gunicorn": "Booting worker with pid", "granian": "Started worker-"}


def call(port, a=2, b=3, timeout=5):
    """A 2026-07-28 tools/call add; returns (status, parsed body)."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": a, "b": b}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": mcp_min.V2026_07,
            "io.modelcontextprotocol/clientCapabilities": {}}}}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/mcp", json.dumps(message), {
            "Content-Type": "application/json", "Accept": "application/json",
            "MCP-Protocol-Version": mcp_min.V2026_07, "Mcp-Method": "tools/call",
            "Mcp-Name": "add"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


class Engine:
    """An engine serving APP from tmp_path, on a free port, its log read on a thread."""

    def __init__(self, name, tmp_path, fail=False):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (tests/requirements.txt)")
        self.name, self.life_log = name, tmp_path / "life.log"
        (tmp_path / "engine_app.py").write_text(
            APP.format(root=str(ROOT), log=str(self.life_log), fail=fail))
        self.port = free_port()
        self.proc = subprocess.Popen(ENGINES[name]("engine_app:server", self.port),
                                     cwd=tmp_path, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.log = []                         # (granian logs to stdout, gunicorn to stderr)
        threading.Thread(target=lambda: self.log.extend(self.proc.stdout), daemon=True).start()
        deadline = time.monotonic() + 20
        while "".join(self.log).count(WORKER_READY[name]) < 2:     # both workers up
            assert time.monotonic() < deadline and self.proc.poll() is None, "".join(self.log)
            time.sleep(0.05)

    def lifespans(self):
        """{pid: [what the lifespan noted, in order]}."""
        found = {}
        if self.life_log.exists():
            for line in self.life_log.read_text().splitlines():
                what, pid = line.split()
                found.setdefault(int(pid), []).append(what)
        return found

    def stop(self, signum):
        """SIGTERM to every process of gunicorn, as systemd sends it; to granian's master
        alone, and SIGINT to the master alone: with the signal reaching the workers too, the
        engines themselves sometimes fail (granian 2.8.7 hung at exit in 3 of 12 runs of a
        bare WSGI app at SIGINT; gunicorn 27 killed a worker before its exit handlers ran
        in 4 of 30). Their masters pass the signal on."""
        if self.name == "gunicorn" and signum == signal.SIGTERM:
            os.killpg(self.proc.pid, signum)
        else:
            self.proc.send_signal(signum)
        try:
            code = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.name} did not exit:\n{''.join(self.log)[-3000:]}")
        self.proc.stdout.close()
        return code

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc.stdout.close()


@pytest.fixture
def engine(tmp_path):
    started = []

    def start(name, **options):
        started.append(Engine(name, tmp_path, **options))
        return started[-1]
    yield start
    for each in started:
        each.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("name", sorted(ENGINES))
def test_each_workers_lifespan_opens_before_it_serves_and_closes_as_it_exits(engine, name,
                                                                            signum):
    served = engine(name)
    for _ in range(20):                       # enough for both workers to serve
        status, body = call(served.port)
        assert status == 200 and body["result"]["structuredContent"] == {"result": 5}
    opened = served.lifespans()
    assert opened and all(notes == ["open"] for notes in opened.values()), opened
    served.stop(signum)
    closed = served.lifespans()
    assert set(closed) == set(opened)
    assert all(notes == ["open", "closed"] for notes in closed.values()), closed


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_a_lifespan_that_fails_is_logged_once_and_every_request_gets_503_saying_why(engine,
                                                                                   name):
    served = engine(name, fail=True)
    for _ in range(10):
        status, body = call(served.port)
        assert status == 503
        message = body["error"]["message"]
        assert message == ("Service Unavailable: the server's lifespan failed: "
                           "ConnectionRefusedError: the database at db.example:5432 refused "
                           "the connection")
    served.stop(signal.SIGTERM)
    log = "".join(served.log)
    # once per worker that tried (2 at most), not once per request
    assert 1 <= log.count("the lifespan failed: ConnectionRefusedError") <= 2, log[-3000:]
    assert served.lifespans() == {}


def test_the_embedded_server_opens_the_lifespan_before_it_serves(tmp_path):
    log = tmp_path / "life.log"
    (tmp_path / "app.py").write_text(APP.format(root=str(ROOT), log=str(log), fail=False))
    proc = subprocess.Popen([sys.executable, str(ROOT / "mcp_min.py"), "serve", "--http",
                             "127.0.0.1:0", "app.py"], cwd=tmp_path, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stderr.readline()
        assert "serving engines on http://" in line
        assert log.read_text().split()[0] == "open"       # before any request
        port = int(re.search(r":(\d+)/mcp", line)[1])
        assert call(port)[0] == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert [row.split()[0] for row in log.read_text().splitlines()] == ["open", "closed"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_serve_http_with_a_failing_lifespan_exits_1_naming_the_error(tmp_path):
    (tmp_path / "app.py").write_text(APP.format(root=str(ROOT), log=str(tmp_path / "l"),
                                                fail=True))
    done = subprocess.run([sys.executable, str(ROOT / "mcp_min.py"), "serve", "--http",
                           "127.0.0.1:0", "app.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 1
    assert "serving" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "mcp_min: cannot serve engines: its lifespan failed: ConnectionRefusedError: the "
        "database at db.example:5432 refused the connection")
