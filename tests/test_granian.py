"""mcp_min on granian, as a production deployment serves it (``granian --interface
wsgi --workers N module:server``), over real HTTP. granian is pinned in
tests/requirements.txt; the tests are skipped without it. Each granian process serves
the tests of a module fixture, on a free port of 127.0.0.1:

* the examples (each its own `server`) and tests/conformance_server.py list and call
  their tools in 2026-07-28 (tests/servers/mounted.py mounts them all in one process);
* streams (tests/servers/streams.py, one worker): a subscriptions/listen hears of a
  resource update and of list changes made by calls, and its client leaving frees it;
  the handshake era's GET stream hears of list changes and ends with its session; a
  call with a progress token streams its progress, then its result; a slow call's
  stream carries keep-alive lines;
* a 2026-07-28 call whose client closes the connection is cancelled;
* input_required retries answered by the other of two workers sharing
  MCP_MIN_STATE_KEY;
* SIGTERM to granian's master while a listen stream is open.

The official Python SDK client on granian, in each of its modes:
tests/test_http_clients.py.
"""

import importlib.util
import json
import signal
import time

import pytest

from conftest import (Granian, call, exchange, messages_of, modern,
                      retry_on_the_other_worker, send, value)

import mcp_min

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("granian") is None,
    reason="granian is not installed (tests/requirements.txt)")

HANDSHAKE_VERSION = mcp_min.V2025_11
SUBSCRIPTION_ID_KEY = mcp_min.SUBSCRIPTION_ID_KEY
COUNTER = "test://streams/counter"            # tests/servers/streams.py's resource
STATE_KEY = "test-granian-shared-state-key"
PROMPTLY = 15       # seconds granian may take to exit at SIGTERM


def text_of(result):
    [block] = result["content"]
    return block["text"]


def tool(served, name, arguments=None, rid=1):
    """A 2026-07-28 call on a fresh connection: its result, which must be no error."""
    status, messages = exchange(served, call(name, arguments, rid))
    assert status == 200, messages
    result = messages[-1]["result"]
    assert result["resultType"] == "complete" and not result.get("isError"), result
    return result


class Events:
    """An SSE response read one message at a time, its keep-alive lines counted."""

    def __init__(self, response):
        assert response.status == 200
        assert response.getheader("Content-Type") == "text/event-stream"
        self.response, self.keep_alives = response, 0

    def next(self, deadline=None):
        """The next message; None once the stream has ended. AssertionError if it is
        still open at ``deadline`` (a time.monotonic()): the keep-alive lines keep it
        from going quiet, so a read timeout could not tell."""
        data = None
        while deadline is None or time.monotonic() < deadline:
            line = self.response.readline()
            if not line:
                return None
            line = line.rstrip(b"\r\n")
            if line == b": keep-alive":
                self.keep_alives += 1
            elif line.startswith(b"data: "):
                data = json.loads(line[6:])
            elif not line and data is not None:
                return data
        raise AssertionError("the stream was still open at its deadline")


def leave(connection, response):
    """Close the response (which holds the socket too) and the connection."""
    response.close()
    connection.close()


def wait_for(condition, seconds=10):
    """Ask `condition()` until it holds: granian tells mcp_min that a client left only
    when a write fails, the next empty chunk or keep-alive line after it left."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"still not so after {seconds} s"
        time.sleep(0.05)


# ======================================================================================
# The examples and the conformance server
# ======================================================================================

#: example (or "conformance") -> a call of one of its tools, and text its result holds
CALLS = {
    "calculator": ("add", {"a": 2, "b": 3}, "5.0"),
    "file_server": ("list_files", {}, '["file:///hello.txt"]'),
    "gift_server": ("suggest_gifts", {"occasion": "birthday", "budget": 50,
                                      "recipient": "friend who loves board games"},
                    "Dice set with velvet bag"),
    "print_server": ("get_weather", {"city": "Lisbon"}, "Sunny, 22°C"),
    "slow_server": ("wait", {"seconds": 0.1, "label": "tea"}, "tea: done after 0.1 s"),
    "weather": ("get_weather", {"city": "Tokyo"}, "Clear, 19°C"),
    "conformance": ("test_simple_text", {},
                    "This is a simple text response for testing."),
}


@pytest.fixture(scope="module")
def mounted(tmp_path_factory):
    """Every example and the conformance server, from one granian worker; the file
    server's root (FILE_SERVER_ROOT) holds one file."""
    root = tmp_path_factory.mktemp("files")
    (root / "hello.txt").write_text("hello from granian")
    served = Granian("mounted:application", env={"FILE_SERVER_ROOT": str(root)})
    yield served
    served.close()
    assert "Traceback" not in served.text(), served.text()[-3000:]


def test_every_example_with_a_server_is_mounted(mounted):
    """CALLS has a call for each: an example added later is not left out unseen."""
    connection = mounted.connection()
    try:
        connection.request("GET", "/")
        response = connection.getresponse()
        assert response.status == 404
        assert json.loads(response.read()) == {"mounted": sorted(CALLS)}
    finally:
        connection.close()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_an_example_lists_and_calls_its_tools(mounted, name):
    tool_name, arguments, expected = CALLS[name]
    path = f"/{name}/mcp"
    connection = mounted.connection()
    try:
        response = send(connection, modern("tools/list", rid=1), path=path)
        [reply] = messages_of(response)
        assert response.status == 200 and reply["id"] == 1
        assert tool_name in [listed["name"] for listed in reply["result"]["tools"]]
        response = send(connection, call(tool_name, arguments, rid=2), path=path)
        [reply] = messages_of(response)
    finally:
        connection.close()
    assert response.status == 200 and reply["id"] == 2
    result = reply["result"]
    assert result["resultType"] == "complete" and result["isError"] is False, result
    assert expected in text_of(result)


# ======================================================================================
# Streams, on one worker
# ======================================================================================

@pytest.fixture(scope="module")
def streams():
    served = Granian("streams:server")
    yield served
    served.close()
    assert "Traceback" not in served.text(), served.text()[-3000:]


def test_a_listen_hears_of_changes_and_its_client_leaving_frees_it(streams):
    wanted = {"toolsListChanged": True, "resourceSubscriptions": [COUNTER]}
    tagged = {"_meta": {SUBSCRIPTION_ID_KEY: 41}}
    connection = streams.connection()
    listen = modern("subscriptions/listen", {"notifications": wanted}, rid=41)
    response = send(connection, listen)
    try:
        events = Events(response)
        acknowledged = events.next()
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert acknowledged["params"] == {**tagged, "notifications": wanted}
        assert value(tool(streams, "listeners")) == 1
        assert text_of(tool(streams, "touch")) == "touched"
        assert events.next() == {"jsonrpc": "2.0",
                                 "method": "notifications/resources/updated",
                                 "params": {"uri": COUNTER, **tagged}}
        for present in (True, False):
            tool(streams, "toggle", {"present": present})
            assert events.next() == {"jsonrpc": "2.0",
                                     "method": "notifications/tools/list_changed",
                                     "params": tagged}
    finally:
        leave(connection, response)
    wait_for(lambda: value(tool(streams, "listeners")) == 0)


def test_the_handshake_era_get_stream_hears_of_changes_and_ends_with_its_session(
        streams):
    connection = streams.connection()
    try:
        response = send(connection, {
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": HANDSHAKE_VERSION, "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
        [reply] = messages_of(response)
    finally:
        connection.close()
    assert response.status == 200
    assert reply["result"]["protocolVersion"] == HANDSHAKE_VERSION
    session = {"Mcp-Session-Id": response.getheader("Mcp-Session-Id"),
               "MCP-Protocol-Version": HANDSHAKE_VERSION}
    assert session["Mcp-Session-Id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert exchange(streams, initialized, session) == (202, [])
    stream_connection = streams.connection()
    stream_connection.request("GET", "/mcp",
                              headers={"Accept": "text/event-stream", **session})
    stream = stream_connection.getresponse()
    try:
        events = Events(stream)
        for rid, present in enumerate((True, False), 1):
            status, [reply] = exchange(streams, {
                "jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
                    "name": "toggle", "arguments": {"present": present}}}, session)
            assert status == 200
            assert text_of(reply["result"]) == ("added" if present else "removed")
            assert events.next() == {"jsonrpc": "2.0",
                                     "method": "notifications/tools/list_changed"}
        connection = streams.connection()
        try:
            connection.request("DELETE", "/mcp", headers=session)
            response = connection.getresponse()
            response.read()
        finally:
            connection.close()
        assert response.status == 204
        assert events.next(deadline=time.monotonic() + 10) is None
    finally:
        leave(stream_connection, stream)


def test_a_call_with_a_progress_token_streams_its_progress_then_its_result(streams):
    connection = streams.connection()
    try:
        response = send(connection, call("report", {"steps": 3}, rid=7,
                                         progressToken="p-7"))
        assert response.getheader("Content-Type") == "text/event-stream"
        messages = messages_of(response)
    finally:
        connection.close()
    assert response.status == 200
    *progress, answer = messages
    assert progress == [
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {
            "progressToken": "p-7", "progress": step, "total": 3,
            "message": f"step {step}"}}
        for step in (1, 2, 3)]
    assert answer["id"] == 7 and text_of(answer["result"]) == "3 steps"


def test_a_slow_calls_stream_carries_keep_alive_lines_until_its_result(streams):
    """heartbeat=0.2: a call that takes longer is answered with a stream whose comment
    lines show the client that it is alive (and, written to a client that left, that it
    left)."""
    connection = streams.connection()
    try:
        events = Events(send(connection, call("slow", {"ms": 1000}, rid=8)))
        answer = events.next()
        assert events.next() is None                  # the result ends the stream
    finally:
        connection.close()
    assert answer["id"] == 8 and text_of(answer["result"]) == "worked 1000 ms"
    assert events.keep_alives >= 2


def test_a_call_whose_client_closes_the_connection_is_cancelled(streams):
    """In 2026-07-28 leaving is how a client cancels: the tool stops, cancelled."""
    connection = streams.connection()
    response = send(connection, call("slow", {"ms": 30000}, rid=9))
    try:
        assert response.getheader("Content-Type") == "text/event-stream"
        assert response.readline() == b": keep-alive\n"    # the call is under way
    finally:
        leave(connection, response)
    wait_for(lambda: 9 in tool(streams, "outcomes")["structuredContent"]["cancelled"])
    assert 9 not in tool(streams, "outcomes")["structuredContent"]["finished"]


def test_a_granian_worker_is_a_process_of_the_servers_own(streams):
    """So mcp_min pins glibc's mmap threshold at its first large message, as in
    gunicorn's workers (granian names itself "Granian" in SERVER_SOFTWARE)."""
    assert value(tool(streams, "allocator_tuned")) is True


# ======================================================================================
# Two workers
# ======================================================================================

def test_an_mrtr_retry_is_answered_by_the_other_worker():
    """input_required, then the retry carrying requestState, each on a fresh connection,
    until the retry reaches the worker that did not ask: it takes the state, signed with
    the key both workers share."""
    farm = Granian("workers:server", workers=2, threads=4,
                   env={"MCP_MIN_STATE_KEY": STATE_KEY})
    try:
        assert len(farm.worker_pids) == 2
        answered_by = retry_on_the_other_worker(farm)
    finally:
        farm.close()
    assert set(answered_by) == farm.worker_pids          # two pids: both took part
    log = farm.text()
    assert "Traceback" not in log, log
    assert "requestState is signed with a key" not in log, log


# ======================================================================================
# Shutdown
# ======================================================================================

def test_with_a_kill_timeout_sigterm_ends_an_open_listen_and_granian_exits_0():
    """granian 2.8.7 stops a worker once every response in progress has ended, and a
    listen ends only when its client leaves: --workers-kill-timeout bounds that wait, as
    docs/http.md says to set it (the stream is cut; the client reconnects elsewhere)."""
    served = Granian("streams:server", options=("--workers-kill-timeout", "3"))
    connection = served.connection()
    response = None
    try:
        response = send(connection, modern("subscriptions/listen", {"notifications": {
            "toolsListChanged": True}}, rid=51))
        events = Events(response)
        assert events.next()["method"] == "notifications/subscriptions/acknowledged"
        served.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + PROMPTLY
        # The stream ends: perhaps with the listen's response, which ends it gracefully
        while (message := events.next(deadline)) is not None:
            assert message["id"] == 51 and message["result"]["resultType"] == "complete"
        assert served.proc.wait(max(0.1, deadline - time.monotonic())) == 0
        assert "Traceback" not in served.text(), served.text()[-3000:]
    finally:
        if response is not None:
            response.close()
        connection.close()
        served.close()
