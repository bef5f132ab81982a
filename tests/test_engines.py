"""The engines a user deploys on: the lifespan follows the worker processes (entered before a
worker serves its first request, left when it exits, on SIGTERM and Ctrl+C alike), and a
lifespan that fails says so loudly, once, instead of a traceback per request. On
granian, a stream whose client left gives its thread back. Each engine is started as a
subprocess on 127.0.0.1: the embedded server (`mcp_min.py serve --http`), gunicorn and
granian (pinned in tests/requirements.txt; skipped if missing).

Several processes behind a load balancer, deployed as docs/http.md ("Several processes
and machines") says: two single-process granian backends with sessions and one
MCP_MIN_STATE_KEY, behind HAProxy running the configuration shown there (only its ports
replaced), driven over raw HTTP through the proxy, each request on a fresh connection: a
handshake-era session keeps to the backend that opened it (POSTs, its GET stream,
DELETE), sessions are spread over both, and without the stick lines a session is lost
(404). The official Python SDK client in legacy mode goes through it too. Skipped
without haproxy."""

import functools
import http.client
import importlib.util
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, free_port, require_tool, stop_process
from sdk_compat import CLIENTS, Run

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
    "gunicorn": lambda app, port, workers: [
        sys.executable, "-m", "gunicorn", "--workers", str(workers),
        "--worker-class", "gthread", "--threads", "4", "--bind", f"127.0.0.1:{port}",
        "--no-control-socket", "--graceful-timeout", "5", app],
    "granian": lambda app, port, workers: [
        sys.executable, "-m", "granian", "--interface", "wsgi",
        "--workers", str(workers), "--blocking-threads", "8", "--port", str(port),
        "--log-level", "info", app],
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
    """An engine serving APP (or `source`) from tmp_path with `workers` processes, on a
    free port, its log read on a thread; `env` is added to the environment it gets."""

    def __init__(self, name, tmp_path, fail=False, source=None, workers=2, env=None):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (tests/requirements.txt)")
        self.name, self.life_log = name, tmp_path / "life.log"
        (tmp_path / "engine_app.py").write_text(
            source or APP.format(root=str(ROOT), log=str(self.life_log), fail=fail))
        self.port = free_port()
        command = ENGINES[name]("engine_app:server", self.port, workers)
        self.proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True,
                                     env={**os.environ, **(env or {})})
        self.log = []                         # (granian logs to stdout, gunicorn to stderr)
        threading.Thread(target=lambda: self.log.extend(self.proc.stdout), daemon=True).start()
        deadline = time.monotonic() + 20
        while "".join(self.log).count(WORKER_READY[name]) < workers:   # all of them up
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


# ======================================================================================
# Single-process backends behind HAProxy (docs/http.md, "Several processes and
# machines")
# ======================================================================================

HTTP_DOC = (ROOT / "docs" / "http.md").read_text(encoding="utf-8")
HANDSHAKE = "2025-11-25"


def documented(language, marker=""):
    """The one code block of `language` in docs/http.md that contains `marker`."""
    blocks = re.findall(rf"```{language}\n(.*?)```", HTTP_DOC, re.S)
    (block,) = [block for block in blocks if marker in block]
    return block


def haproxy_config(port, backend_ports, sticky=True):
    """THE HAProxy configuration docs/http.md shows, with its ports replaced and nothing
    else: the bind's 127.0.0.1:8000 by `port`, the servers' 127.0.0.1:8001 and :8002 by
    `backend_ports` (exactly those three must be found). Without `sticky`, its three
    `stick` lines are left out."""
    config = documented("haproxy")
    ports = {"8000": port, "8001": backend_ports[0], "8002": backend_ports[1]}
    config, replaced = re.subn(r"(?<=127\.0\.0\.1:)(800[012])\b",
                               lambda found: str(ports[found[1]]), config)
    assert replaced == 3, config
    if not sticky:
        config, removed = re.subn(r"^ *stick.*\n", "", config, flags=re.M)
        assert removed == 3, config
    return config


def test_the_documented_proxy_timeouts_outlast_the_heartbeat():
    """HAProxy cuts a connection quiet for `timeout client` or `timeout server`; a
    stream is never quiet for longer than the Server's `heartbeat`, so both must be
    several times that (by hand, a GET stream through HAProxy with 3 s timeouts lives on
    at a 1 s heartbeat, and is cut after 3 s at a 10 s one)."""
    heartbeat = mcp_min.SETTINGS["heartbeat"].default
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    timeouts = {side: int(number) * units[unit] for side, number, unit in
                re.findall(r"timeout (client|server) (\d+)(ms|s|m|h|d)\b",
                           documented("haproxy"))}
    assert set(timeouts) == {"client", "server"}
    assert all(seconds >= 3 * heartbeat for seconds in timeouts.values()), timeouts


# The backends' application: a tool naming the process that answers, one that announces a
# change to this process's clients (across processes, changes travel as
# examples/scale_out_server.py has them: tests/test_scale_out.py), and a resource.
SCALE_APP = """
import os, sys
sys.path.insert(0, {root!r})
from mcp_min import Server

server = Server("notes")

@server.tool
def whoami() -> int:
    return os.getpid()

@server.tool
def announce(kind: str, what: str) -> int:
    if kind == "updated":
        server.notify_resource_updated(what)
    else:
        server.notify_list_changed(what)
    return os.getpid()

@server.resource("notes://{{name}}")
def note(name: str) -> str:
    return name
"""


def post(port, message, session=None):
    """`message` POSTed on a fresh connection (so that only the proxy's rules route it):
    (status, the response's Mcp-Session-Id, its JSON body or None)."""
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": HANDSHAKE})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/mcp", json.dumps(message), headers)
        response = connection.getresponse()
        body = response.read()
        return (response.status, response.getheader("Mcp-Session-Id"),
                json.loads(body) if body else None)
    finally:
        connection.close()


def rpc(method, params=None):
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


INITIALIZE = rpc("initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                "clientInfo": {"name": "pytest", "version": "1"}})


def open_session(port):
    status, session, body = post(port, INITIALIZE)
    assert status == 200 and session, body
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(port, initialized, session)[0] == 202
    return session


def call_tool(port, session, name, **arguments):
    message = rpc("tools/call", {"name": name, "arguments": arguments})
    status, _, body = post(port, message, session)
    assert status == 200 and body["result"]["isError"] is False, body
    return body["result"]["structuredContent"]["result"]


def next_message(stream):
    """The next message of an SSE response (keep-alive lines skipped)."""
    while line := stream.readline():
        if line.startswith(b"data: "):
            return json.loads(line[6:])
    raise AssertionError("the stream ended")


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    """Two granian backends of one process each (`--workers 1`), with sessions and the
    same MCP_MIN_STATE_KEY: their ports."""
    # granian first: the other CPythons' runs in CI have none, and may start before
    # .ci/run installs haproxy
    if importlib.util.find_spec("granian") is None:
        pytest.skip("granian is not installed (tests/requirements.txt)")
    require_tool("haproxy", "the scale-out tests run it in front of two backends")
    source = SCALE_APP.format(root=str(ROOT))
    key = {"MCP_MIN_STATE_KEY": secrets.token_hex(32)}
    started = []
    try:
        for name in ("backend-a", "backend-b"):
            started.append(Engine("granian", tmp_path_factory.mktemp(name),
                                  source=source, workers=1, env=key))
        yield [each.port for each in started]
    finally:
        for each in started:
            each.close()


class HAProxy:
    """haproxy in the foreground (-db) running `config` from `folder`, once it listens
    on the port of the config's bind line; its output in `folder`."""

    def __init__(self, config, folder, name="haproxy"):
        executable = require_tool("haproxy", "the scale-out tests run it")
        path, self.log_path = folder / f"{name}.cfg", folder / f"{name}.log"
        path.write_text(config)
        with open(self.log_path, "w") as out:
            self.proc = subprocess.Popen([executable, "-db", "-f", str(path)], stdout=out,
                                         stderr=subprocess.STDOUT)
        self.port = int(re.search(r"bind 127\.0\.0\.1:(\d+)", config)[1])
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise AssertionError(f"haproxy did not start:\n{self.log()}")
                time.sleep(0.05)

    def log(self):
        return self.log_path.read_text()

    def close(self):
        if self.proc.poll() is None:
            stop_process(self.proc)


@pytest.fixture
def haproxy(tmp_path):
    """start(config): a HAProxy running `config`, stopped after the test; its port."""
    started = []

    def start(config):
        started.append(HAProxy(config, tmp_path, f"haproxy-{len(started)}"))
        return started[-1].port
    yield start
    for each in started:
        each.close()


def test_behind_haproxy_a_session_keeps_to_its_backend(backends, haproxy):
    port = haproxy(haproxy_config(free_port(), backends))
    session = open_session(port)
    home = call_tool(port, session, "whoami")
    # each on a fresh connection: only the stick table sends it to the session's process
    assert [call_tool(port, session, "whoami") for _ in range(12)] == [home] * 12

    # its GET stream goes there too, and hears the changes that a tool call announces
    listener = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        listener.request("GET", "/mcp", headers={
            "Accept": "text/event-stream", "Mcp-Session-Id": session,
            "MCP-Protocol-Version": HANDSHAKE})
        stream = listener.getresponse()
        assert stream.status == 200
        assert stream.getheader("Content-Type") == "text/event-stream"
        subscribe = rpc("resources/subscribe", {"uri": "notes://a"})
        status, _, body = post(port, subscribe, session)
        assert status == 200 and body["result"] == {}, body
        announce = functools.partial(call_tool, port, session, "announce")
        assert announce(kind="updated", what="notes://a") == home
        assert next_message(stream) == {"jsonrpc": "2.0",
                                        "method": "notifications/resources/updated",
                                        "params": {"uri": "notes://a"}}
        assert announce(kind="list_changed", what="tools") == home
        assert next_message(stream)["method"] == "notifications/tools/list_changed"
    finally:
        listener.close()

    # round robin: another session may open on the other backend, and keeps to its own
    homes = {home}
    for _ in range(6):
        other = open_session(port)
        there = call_tool(port, other, "whoami")
        assert [call_tool(port, other, "whoami") for _ in range(4)] == [there] * 4
        homes.add(there)
        if len(homes) == 2:
            break
    assert len(homes) == 2, "every session opened on the same backend"

    # DELETE reaches the session's backend: the session ends there
    ending = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        ending.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session,
                                                  "MCP-Protocol-Version": HANDSHAKE})
        assert ending.getresponse().status == 204
    finally:
        ending.close()
    assert post(port, rpc("ping"), session)[0] == 404


def test_without_the_stick_lines_a_session_is_lost(backends, haproxy):
    port = haproxy(haproxy_config(free_port(), backends, sticky=False))
    status, session, body = post(port, INITIALIZE)
    assert status == 200 and session, body
    answers = [post(port, rpc("ping"), session) for _ in range(6)]
    statuses = [status for status, _, _ in answers]
    # round robin: every other request reaches the backend that holds the session
    assert 200 in statuses and 404 in statuses, statuses
    lost = next(body for status, _, body in answers if status == 404)
    assert lost["error"]["message"] == "Session not found: initialize again", lost


@pytest.mark.sdk
def test_the_python_sdk_client_in_legacy_mode_keeps_to_one_backend(backends, haproxy):
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the official Python SDK (mcp) is not installed "
                    "(tests/requirements.txt)")
    port = haproxy(haproxy_config(free_port(), backends))
    labels = [f"whoami.{n}" for n in range(3)]
    steps = [{"op": "callTool", "label": label, "name": "whoami", "arguments": {}}
             for label in labels]
    # the client opens its GET stream on a task of its own: time for it before the end
    steps.append({"op": "sleep", "ms": 500})
    command = [sys.executable, str(CLIENTS / "http_py_client.py"), "--mode", "legacy",
               "--trace", json.dumps(steps), "--", f"http://127.0.0.1:{port}/mcp"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90,
                          cwd=CLIENTS)
    run = Run.of("py", "legacy", done)
    assert len({run.ok(label)["structuredContent"]["result"] for label in labels}) == 1
    exchanges = [r for r in run.records if r["event"] == "http"]
    (opened,) = [r for r in exchanges if r["rpc"] == "initialize"]
    session = opened["response"]["mcp-session-id"]
    later = [r for r in exchanges if r is not opened]
    # its POSTs, its GET stream and its DELETE all named the session and found it
    assert {r["method"] for r in later} == {"POST", "GET", "DELETE"}, later
    assert all(r["request"].get("mcp-session-id") == session and r["status"] < 300
               for r in later), later


# ======================================================================================
# Streams whose clients leave, on granian
# ======================================================================================
# granian runs each request on one of its --blocking-threads and cannot tell the
# application that a client has gone: a listen or GET stream whose client left would
# hold its thread until a keep-alive failed to go out (heartbeat, 15 s by default), and
# once every thread is held so, new requests and streams wait for one. A heartbeat
# longer than the tests' timeouts: only a stream that ends soon after its client leaves
# lets these pass.
STREAMS_APP = """
import sys
sys.path.insert(0, {root!r})
from mcp_min import Server

server = Server("streams", heartbeat=120)

@server.tool
def change() -> bool:
    server.notify_list_changed("tools")
    return True
"""


def open_stream(port, kind):
    """A stream as a client opens it, once its first bytes came: a 2026-07-28 listen for
    list changes (its acknowledgement), or a new handshake-era session's GET stream (its
    headers). Returns (connection, response)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        if kind == "listen":
            message = rpc("subscriptions/listen", {
                "notifications": {"toolsListChanged": True}, "_meta": {
                    "io.modelcontextprotocol/protocolVersion": mcp_min.V2026_07,
                    "io.modelcontextprotocol/clientCapabilities": {}}})
            connection.request("POST", "/mcp", json.dumps(message), {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": mcp_min.V2026_07,
                "Mcp-Method": "subscriptions/listen"})
            stream = connection.getresponse()
            assert next_message(stream)["method"] == (
                "notifications/subscriptions/acknowledged")
        else:
            connection.request("GET", "/mcp", headers={
                "Accept": "text/event-stream", "Mcp-Session-Id": open_session(port),
                "MCP-Protocol-Version": HANDSHAKE})
            stream = connection.getresponse()
            assert stream.status == 200
        return connection, stream
    except BaseException:
        connection.close()
        raise


@pytest.mark.parametrize("kind", ["listen", "GET"])
def test_on_granian_a_stream_whose_client_left_gives_its_thread_back(engine, kind):
    """Clients open a stream and leave, more of them than granian has threads: each
    next stream still opens, and the last one carries a list change."""
    served = engine("granian", source=STREAMS_APP.format(root=str(ROOT)), workers=1)
    for _ in range(10):                       # ENGINES gives granian 8 blocking threads
        open_stream(served.port, kind)[0].close()         # the client leaves
    connection, stream = open_stream(served.port, kind)
    try:
        assert call_tool(served.port, open_session(served.port), "change") is True
        assert next_message(stream)["method"] == "notifications/tools/list_changed"
    finally:
        connection.close()


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception),
                                         ("", pytest.skip.Exception)])
def test_a_missing_program_ci_installs_fails_in_ci_and_is_skipped_elsewhere(
        monkeypatch, ci, outcome):
    """require_tool: a newcomer without haproxy gets a skip saying how to get it; CI,
    whose .ci/run installs it, gets a failure, so that a missing install step cannot
    hide behind skipped tests."""
    import conftest
    monkeypatch.setattr(conftest.shutil, "which", lambda *args, **kwargs: None)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match=r"haproxy is not installed: .*apt install haproxy"):
        require_tool("haproxy", "the scale-out tests run it")
