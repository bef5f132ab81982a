"""The scaled-out deployment docs/http.md ("Several processes and machines") shows, as
it runs: examples/scale_out_server.py on two single-process granian backends (the same
MCP_MIN_STATE_KEY, one SQLite database, one Redis channel) behind HAProxy running the
documented configuration (only its ports replaced), and a real redis-server, each
started on free ports of 127.0.0.1 in temporary folders.

- A handshake-era session on one backend hears (on its GET stream) of a change made
  through the other; so does a 2026-07-28 listen stream; a list change reaches the
  listeners of both eras on both backends; the official Python SDK client, in legacy
  mode and in 2026-07-28, hears through the proxy of changes made through either
  backend.
- A backend killed: its sessions get 404 through the proxy at once, a client that
  initializes again is served by the other, whose sessions and streams go on.
- Redis restarted while calls keep changing notes through the proxy: each relay says
  that it lost Redis and that it reconnected, and replays from the log the changes made
  meanwhile: every listener hears of every change.

Skipped without redis-server, haproxy (failed instead in CI, which installs them),
granian or redis-py (tests/requirements.txt)."""

import http.client
import importlib.util
import json
import queue
import re
import secrets
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import (ROOT, Granian, free_port, messages_of, modern, require_tool, send,
                      stop_process)
from test_engines import (HANDSHAKE, INITIALIZE, HAProxy, documented, haproxy_config,
                          post, rpc)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")

EXAMPLES = ROOT / "examples"
TARGET = "scale_out_server:server"
WAIT = 15           # seconds for what must come at once on an idle machine
UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"


# -- the programs ----------------------------------------------------------------------
class Redis:
    """redis-server on a free port of 127.0.0.1, nothing saved, its files in
    `folder`; stop() and start() again on the same port."""

    def __init__(self, folder):
        self.executable = require_tool("redis-server", "the scale-out tests run it")
        self.folder, self.port = folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self):
        with open(self.folder / "redis.log", "a") as out:
            self.proc = subprocess.Popen(
                [self.executable, "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
                stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not self.answers():
            assert self.proc.poll() is None and time.monotonic() < deadline, \
                (self.folder / "redis.log").read_text()
            time.sleep(0.05)

    def answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self):
        stop_process(self.proc)


def backend(redis, key):
    """One granian backend of one process running the example, on the database and the
    Redis of every backend (the log of changes is the database's: one deployment, one
    of each)."""
    return Granian(TARGET, cwd=EXAMPLES, workers=1, env={
        "MCP_MIN_STATE_KEY": key, "NOTES_DB": str(redis.folder / "notes.db"),
        "REDIS_URL": redis.url})


class Farm:
    """Two backends (`a`, `b`) and HAProxy in front (`proxy`: its port), its files in
    `folder`."""

    def __init__(self, redis, folder):
        key = secrets.token_hex(32)
        self.a = self.b = self.haproxy = None
        try:
            self.a = backend(redis, key)
            self.b = backend(redis, key)
            config = haproxy_config(free_port(), [self.a.port, self.b.port])
            self.haproxy = HAProxy(config, folder)
        except BaseException:
            self.close()
            raise
        self.proxy = self.haproxy.port

    def backend_of(self, pid):
        (found,) = [each for each in (self.a, self.b) if pid in each.worker_pids]
        return found

    def other(self, pid):
        (found,) = [each for each in (self.a, self.b) if pid not in each.worker_pids]
        return found

    def close(self):
        for each in (self.haproxy, self.a, self.b):
            if each is not None:
                each.close()


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    # the modules first: the other CPythons' runs in CI have neither, and may start
    # before .ci/run installs the programs
    for module in ("granian", "redis"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (tests/requirements.txt)")
    require_tool("haproxy", "the scale-out tests run it in front of the backends")
    started = Redis(tmp_path_factory.mktemp("redis"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def farm(redis, tmp_path_factory):
    started = Farm(redis, tmp_path_factory.mktemp("farm"))
    yield started
    started.close()


# -- talking to it ---------------------------------------------------------------------
def tool(port, tool_name, arguments):
    """A 2026-07-28 tools/call on a fresh connection to `port`: its
    structuredContent."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        response = send(connection, modern("tools/call", {"name": tool_name,
                                                          "arguments": arguments}))
        (message,) = messages_of(response)
    finally:
        connection.close()
    assert response.status == 200 and message["result"]["isError"] is False, message
    return message["result"]["structuredContent"]


def write(port, name, text):
    return tool(port, "write_note", {"name": name, "text": text})


def session_request(port, session, method, params=None):
    status, _, body = post(port, rpc(method, params), session)
    assert status == 200 and "result" in body, (status, body)
    return body["result"]


class Stream:
    """An open SSE response, read on a thread: its messages in `messages` (a queue)."""

    def __init__(self, connection, sock, response):
        self.connection, self.sock, self.response = connection, sock, response
        self.messages = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        try:
            while line := self.response.readline():
                if line.startswith(b"data: "):
                    self.messages.put(json.loads(line[6:]))
        except (OSError, ValueError, AttributeError):
            # closed by close(): http.client may then have no file left
            pass
        self.messages.put(None)

    def next(self, method, timeout=WAIT):
        """The next message of `method` (others are passed over: a session's GET
        stream also carries the list changes of the notes other tests create)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.messages.get(timeout=max(0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {method} within {timeout} s") from None
            assert message is not None, f"the stream ended before a {method}"
            if message.get("method") == method:
                return message

    def updated(self, until, timeout=WAIT):
        """The URIs of the resources/updated notifications until one for `until`."""
        uris, deadline = [], time.monotonic() + timeout
        while until not in uris:
            message = self.next(UPDATED, max(0.1, deadline - time.monotonic()))
            uris.append(message["params"]["uri"])
        return uris

    def close(self):
        """Shut the socket first: closing the response while the thread reads it would
        wait for the read to end (the next heartbeat)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()


def listen(port, **notifications):
    """A 2026-07-28 subscriptions/listen on `port`, once acknowledged."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.connect()
    sock = connection.sock
    response = send(connection, modern("subscriptions/listen",
                                       {"notifications": notifications}, "listen-1"))
    assert response.status == 200, response.read()
    stream = Stream(connection, sock, response)
    ack = stream.messages.get(timeout=WAIT)
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    assert ack["params"]["notifications"] == notifications, ack
    return stream


def new_session(port):
    """A handshake-era session opened through `port`: its id."""
    status, session, body = post(port, INITIALIZE)
    assert status == 200 and session, body
    assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                session)[0] == 202
    return session


def open_session(port):
    """A handshake-era session through `port` with its GET stream open: (id, stream)."""
    session = new_session(port)
    return session, get_stream(port, session)


def get_stream(port, session):
    """The GET stream of `session`, through `port`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.connect()
    sock = connection.sock
    connection.request("GET", "/mcp", headers={
        "Accept": "text/event-stream", "Mcp-Session-Id": session,
        "MCP-Protocol-Version": HANDSHAKE})
    response = connection.getresponse()
    assert response.status == 200, response.read()
    return Stream(connection, sock, response)


def session_process(port, session, note="whereabouts"):
    """The pid of the process holding `session` (a write through it says)."""
    result = session_request(port, session, "tools/call", {
        "name": "write_note", "arguments": {"name": note, "text": "here"}})
    return result["structuredContent"]["process"]


def read_note(port, session, name):
    result = session_request(port, session, "resources/read",
                             {"uri": f"notes://{name}"})
    return result["contents"][0]["text"]


# -- changes reach every process -------------------------------------------------------
def test_a_session_on_one_backend_hears_of_a_change_made_through_the_other(farm):
    session, stream = open_session(farm.proxy)
    try:
        home = session_process(farm.proxy, session)
        assert session_request(farm.proxy, session, "resources/subscribe",
                               {"uri": "notes://shared"}) == {}
        elsewhere = farm.other(home)
        assert write(elsewhere.port, "shared", "written elsewhere")["process"] != home
        assert stream.next(UPDATED) == {"jsonrpc": "2.0", "method": UPDATED,
                                        "params": {"uri": "notes://shared"}}
        # the data is shared: read through the session's own backend
        assert read_note(farm.proxy, session, "shared") == "written elsewhere"
    finally:
        stream.close()


def test_a_listen_stream_hears_of_changes_made_through_either_backend(farm):
    write(farm.a.port, "either", "first")
    stream = listen(farm.proxy, resourceSubscriptions=["notes://either"])
    try:
        for number, side in enumerate((farm.a, farm.b, farm.a)):
            write(side.port, "either", f"text {number}")
            message = stream.next(UPDATED)
            tag = {"io.modelcontextprotocol/subscriptionId": "listen-1"}
            assert message == {"jsonrpc": "2.0", "method": UPDATED,
                               "params": {"uri": "notes://either", "_meta": tag}}
    finally:
        stream.close()


def test_a_list_change_reaches_the_listeners_of_every_backend(farm):
    streams = {}
    try:
        for side in ("a", "b"):
            port = getattr(farm, side).port
            streams[f"listen on {side}"] = listen(port, resourcesListChanged=True)
            streams[f"session on {side}"] = open_session(port)[1]
        name = f"new-{secrets.token_hex(4)}"
        assert write(farm.a.port, name, "born on a")["created"] is True
        for label, stream in streams.items():
            assert stream.next(LIST_CHANGED).get("params", {}) in ({}, {"_meta": {
                "io.modelcontextprotocol/subscriptionId": "listen-1"}}), label
        # what the list says is the database's, whichever process answers
        listed = [item["uri"] for item in tool_list(farm.b.port)]
        assert f"notes://{name}" in listed
        deleted = tool(farm.b.port, "delete_note", {"name": name})
        assert deleted["process"] in farm.b.worker_pids
        for stream in streams.values():
            stream.next(LIST_CHANGED)
        assert f"notes://{name}" not in [item["uri"] for item in tool_list(farm.a.port)]
    finally:
        for stream in streams.values():
            stream.close()


def tool_list(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        (message,) = messages_of(send(connection, modern("resources/list")))
    finally:
        connection.close()
    return message["result"]["resources"]


# -- the official Python SDK client through the proxy ----------------------------------
@pytest.mark.sdk
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_python_sdk_client_hears_through_the_proxy_of_changes_on_either_backend(
        farm, mode):
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the official Python SDK (mcp) is not installed "
                    "(tests/requirements.txt)")
    from sdk_compat import CLIENTS, Run
    names = [f"sdk-{mode}-a", f"sdk-{mode}-b"]
    uris = [f"notes://{name}" for name in names]
    for name in names:
        write(farm.a.port, name, "before")
    if mode == "legacy":
        steps = [{"op": "subscribeResource", "uri": uri, "label": f"subscribe.{n}"}
                 for n, uri in enumerate(uris)]
        steps.append({"op": "waitFor", "method": "notifications/resources/updated",
                      "count": 2, "timeoutMs": WAIT * 1000, "label": "wait"})
    else:
        steps = [{"op": "listen", "name": "notes", "resourceSubscriptions": uris,
                  "label": "listen"},
                 {"op": "waitFor", "listen": "notes", "count": 2,
                  "timeoutMs": WAIT * 1000, "label": "wait"},
                 {"op": "stopListen", "listen": "notes", "label": "stop"}]
    steps.append({"op": "readResource", "uri": uris[1], "label": "read"})
    command = [sys.executable, str(CLIENTS / "http_py_client.py"), "--mode", mode,
               "--trace", json.dumps(steps), "--", f"http://127.0.0.1:{farm.proxy}/mcp"]
    proc = subprocess.Popen(command, cwd=CLIENTS, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines, stderr = [], []
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
    try:
        # once the client listens (legacy: subscribed, its GET stream open), a change
        # through each backend
        deadline = time.monotonic() + 60
        while not ready(lines, mode):
            line = proc.stdout.readline()
            assert line and time.monotonic() < deadline, "".join(lines + stderr)[-3000:]
            lines.append(line)
        write(farm.a.port, names[0], "through a")
        write(farm.b.port, names[1], "through b")
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = subprocess.CompletedProcess(command, proc.returncode, "".join(lines) + out,
                                       "".join(stderr))
    run = Run.of("py", mode, done)
    if mode == "legacy":
        heard = [params["uri"] for params in run.ok("wait")["params"]]
    else:
        heard = [event["uri"] for event in run.ok("wait")["events"]]
    assert sorted(heard) == uris
    assert run.ok("read")["contents"][0]["text"] == "through b"


def ready(lines, mode):
    """Whether the client's records so far say that it listens."""
    records = [json.loads(line) for line in lines]
    steps = {r.get("label"): r.get("ok") for r in records if r["event"] == "step"}
    if mode != "legacy":
        return steps.get("listen") is True
    get_stream = any(r["event"] == "http" and r["method"] == "GET"
                     and r["status"] == 200 for r in records)
    return steps.get("subscribe.0") is steps.get("subscribe.1") is True and get_stream


# -- failures --------------------------------------------------------------------------
def test_a_backend_killed_loses_its_sessions_alone(redis, tmp_path):
    farm = Farm(redis, tmp_path)
    streams = []
    try:
        # backend port -> a session there, opened through the proxy
        sessions = {}
        for _ in range(8):
            session = new_session(farm.proxy)
            pid = session_process(farm.proxy, session)
            sessions.setdefault(farm.backend_of(pid).port, session)
            if len(sessions) == 2:
                break
        assert len(sessions) == 2, "every session opened on the same backend"
        doomed, kept = sessions[farm.a.port], sessions[farm.b.port]
        # the survivor's streams: the kept session's GET (through the proxy), a listen
        streams.append(get_stream(farm.proxy, kept))
        assert session_request(farm.proxy, kept, "resources/subscribe",
                               {"uri": "notes://after"}) == {}
        streams.append(listen(farm.b.port, resourceSubscriptions=["notes://after"]))

        farm.a.close()                # SIGKILL to its process group
        # its worker, not waited for as the master is, may hold the port a moment more
        deadline = time.monotonic() + WAIT
        while refuses(farm.a.port) is False:
            assert time.monotonic() < deadline, "the killed backend still accepts"
            time.sleep(0.05)

        # through the proxy at once: not found where the request now goes
        status, _, body = post(farm.proxy, rpc("ping"), doomed)
        assert status == 404, body
        assert body["error"]["message"] == "Session not found: initialize again"
        # a client that initializes again is served by the backend still running
        for _ in range(4):
            session = new_session(farm.proxy)
            assert session_process(farm.proxy, session) in farm.b.worker_pids
        # the other backend's sessions and streams go on
        assert session_request(farm.proxy, kept, "ping") == {}
        written = write(farm.proxy, "after", "the survivor")
        assert written["process"] in farm.b.worker_pids
        for stream in streams:
            assert stream.next(UPDATED)["params"]["uri"] == "notes://after"
    finally:
        for stream in streams:
            stream.close()
        farm.close()


def refuses(port):
    """Whether nothing listens on `port` any more."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except ConnectionRefusedError:
        return True


def test_redis_restarted_under_load_the_relays_reconnect_and_replay_the_changes(redis,
                                                                                 farm):
    listeners = [listen(side.port, resourceSubscriptions=["notes://"])
                 for side in (farm.a, farm.b)]
    written, failures, stop = [], [], threading.Event()

    def load():
        """Notes written one after the other through the proxy, to both backends."""
        number = 0
        while not stop.is_set():
            name = f"load-{number}"
            try:
                write(farm.proxy, name, "under load")
                written.append(f"notes://{name}")
            except Exception as error:           # reported below
                failures.append(repr(error))
                return
            number += 1
            time.sleep(0.02)

    since = [len(side.log) for side in (farm.a, farm.b)]

    def logged(pattern):
        """Whether both backends logged `pattern` since the test began."""
        return all(re.search(pattern, side.text(start))
                   for side, start in zip((farm.a, farm.b), since))

    def wait_for(condition, what):
        deadline = time.monotonic() + 20
        while not condition():
            assert not failures, failures
            assert time.monotonic() < deadline, (what, farm.a.text(since[0]),
                                                 farm.b.text(since[1]))
            time.sleep(0.05)

    writer = threading.Thread(target=load, daemon=True)
    writer.start()
    try:
        wait_for(lambda: len(written) >= 5, "writes before the restart")
        redis.stop()
        wait_for(lambda: logged(r"relay: lost Redis"), "both relays losing Redis")
        down = len(written)
        wait_for(lambda: len(written) >= down + 10, "writes while Redis is down")
        redis.start()
        wait_for(lambda: logged(r"relay: reconnected to Redis after [\d.]+ s; replayed "
                                r"[1-9]\d* changes made meanwhile"),
                 "both relays reconnecting")
        wait_for(lambda: len(written) >= down + 20, "writes after the restart")
    finally:
        stop.set()
        writer.join(WAIT)
    try:
        assert not failures, failures
        # every change made, before, during and after, is heard on both backends
        write(farm.a.port, "marker", "last")
        for listener in listeners:
            heard = listener.updated("notes://marker")
            missing = [uri for uri in written if uri not in heard]
            assert missing == [], (len(written), missing)
        # the tools went on while Redis was away, and said they could not publish
        assert re.search("cannot publish on Redis", farm.a.text(since[0]) +
                         farm.b.text(since[1]))
    finally:
        for listener in listeners:
            listener.close()


def test_the_documented_commands_and_proxy_are_those_tested():
    """docs/http.md starts the backends as these tests do (one process each, with the
    three settings), and its proxy passes each stream message on at once: without
    `option http-no-delay` HAProxy held small writes back, and every notification came
    200 ms late (a delay that no test here times)."""
    commands = documented("sh", TARGET)
    assert commands.count("--workers 1 --port 800") == 2
    for name in ("MCP_MIN_STATE_KEY", "NOTES_DB", "REDIS_URL"):
        assert f"{name}=" in commands
    assert re.search(r"^ *option http-no-delay$", documented("haproxy"), re.M)
