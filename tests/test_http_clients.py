"""The official SDK clients over Streamable HTTP: one embedded mcp_min server
(``mcp_min.py serve --http 127.0.0.1:0 tests/servers/sdk_features.py``) driven by

* the Python SDK (``mcp``) in its three modes: ``auto`` (a ``server/discover`` probe; it must
  settle on 2026-07-28), ``2026-07-28`` (no probe, every request enveloped) and ``legacy``
  (``initialize``, then a session: Mcp-Session-Id, the server's questions on the POST's SSE
  stream, a GET stream, DELETE at the end);
* the TypeScript SDK 1.x ``StreamableHTTPClientTransport`` (the handshake era only, with a
  session and the GET stream it opens after ``notifications/initialized``);
* the TypeScript v2 client in ``auto`` mode over its own ``StreamableHTTPClientTransport``: the
  probe goes to the same endpoint, and it must settle on 2026-07-28.

The Python SDK's modes run again against the same script served by granian (one
worker: the handshake era's sessions live in one process), so that every test below
holds on an engine too (skipped without granian).

The drivers are tests/clients/http_py_client.py and tests/clients/http_ts_client.mjs: the step
language and records of tests/clients/README.md, plus an "http" record per HTTP exchange. Each
client and mode runs SCENARIO once (module fixtures); each test checks one feature in every
run: with the stdio suite's own checks and tests (tests/sdk_suite.py, on steps of the same
labels) where they hold over HTTP as they are, then with what HTTP adds (which response or
stream carried what, status codes, headers). One server process per engine serves every
run: the runs are sequential, and a handshake-era client ends its session before the
next one starts.
"""

import http.client
import importlib.util
import json
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from sdk_compat import (CLIENTS, FEATURE_STEPS, LEGACY, LISTING_STEPS,  # noqa: E402
                        LOG_LEVEL_KEY, MODERN, RESOURCE_PROMPT_COMPLETION_STEPS, SDK_FEATURES,
                        TOOL_RESULT_STEPS, Run, call, legacy, modern, text_of,
                        typescript_missing)
from sdk_suite import (DEFAULT_ROOTS, LEVELS, TOOLS, SdkClientTests,  # noqa: E402
                       check_completion, check_input_rounds, check_listen_closed, check_prompts,
                       check_text_result, check_tool_errors, input_rounds, server_requests)
from conftest import NAMED, Granian  # noqa: E402
from test_http import HttpServerProcess  # noqa: E402

pytestmark = pytest.mark.sdk

V = "2026-07-28"
HANDSHAKE_VERSION = "2025-11-25"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"

#: (client, mode) -> the era its run must end up in.
CLIENT_MODES = {("py", "auto"): MODERN, ("py", V): MODERN, ("py", "legacy"): LEGACY,
                ("ts", "legacy"): LEGACY, ("ts2", "auto"): MODERN}
#: engine -> the clients and modes run against it: every one on the embedded server; the
#: Python SDK's on granian, which serves the server as a production deployment does.
ENGINES = {"embedded": list(CLIENT_MODES),
           "granian": [(client, mode) for client, mode in CLIENT_MODES
                       if client == "py"]}


# ==========================================================================================
# The scenario every client and mode runs
# ==========================================================================================

def block(prefix):
    """The steps of the stdio suite's scenario whose labels start with `prefix`."""
    return [step for step in FEATURE_STEPS if step.get("label", "").startswith(prefix)]


SCENARIO = [
    *LISTING_STEPS,                                # pagination: two items a page
    call("tool.text", "echo", {"text": "héllo ✓ \"quoted\"\nnew line"}),
    *TOOL_RESULT_STEPS,                            # media, links, isError, unknown tool
    *RESOURCE_PROMPT_COMPLETION_STEPS,
    # logging: the level of a handshake session, or the level in the request's _meta
    legacy({"op": "setLoggingLevel", "level": "warning", "label": "log.set"}),
    legacy(call("log.chatty", "chatty")),
    modern(call("log.chatty", "chatty", meta={LOG_LEVEL_KEY: "warning"})),
    {"op": "waitFor", "method": "notifications/message", "count": 5, "timeoutMs": 5000,
     "label": "log.wait"},
    call("progress", "progress", {"steps": 3, "pause_ms": 50}, progress=True),
    # the server's questions: server requests on the POST's stream, or input_required results
    call("sampling", "ask_model", {"question": "What is MCP?"}),
    call("elicit.accept", "ask_user"),
    {"op": "onElicit", "result": {"action": "decline"}},
    call("elicit.decline", "ask_user"),
    call("roots", "roots"),
    # cancellation: the client gives up on a slow call; the tool must stop
    call("cancel.before", "cancellations"),
    call("cancel.timer", "slow", {"ticks": 100, "tick_ms": 20}, cancelAfterMs=200),
    {"op": "sleep", "ms": 300},
    call("cancel.seen", "cancellations"),
    # resource updates and list changes: to a session (on its GET stream), or on a listen
    *block("sub."),
    *block("lc."),
    {"op": "sleep", "ms": 50},                     # late notifications arrive before the end
]


def steps_of(era):
    return [{k: v for k, v in step.items() if k != "era"} for step in SCENARIO
            if step.get("era", era) == era]


# ==========================================================================================
# The server and the drivers
# ==========================================================================================

class Served:
    """sdk_features.py served by one engine as a subprocess, its output kept (a full
    pipe would stop it): the embedded server (``serve --http``), or granian with one
    worker."""

    def __init__(self, engine):
        self.engine = engine
        # Once serving, what it says (its output from line `started` on) is no error
        if engine == "granian":
            # granian tells that a client left only when a write to it fails: the
            # keep-alive lines of a quick heartbeat let a call the client gave up on
            # stop at once
            self.process = Granian("sdk_features:server", env={"SDK_HEARTBEAT": "0.1"})
            self.output = self.process.log    # granian's log, the workers' output in it
            self.started = len(self.output)
        else:
            self.process = HttpServerProcess(SDK_FEATURES)        # (it read the banner)
            self.output, self.started = [], 0
            self.drain = threading.Thread(target=self.keep_stderr, daemon=True)
            self.drain.start()
        self.port = self.process.port
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def keep_stderr(self):
        for line in self.process.proc.stderr:
            self.output.append(line.decode("utf-8", "replace"))

    def close(self):
        if self.engine == "granian":
            self.process.close()
            return
        proc = self.process.proc
        proc.terminate()
        proc.wait(10)
        self.drain.join(5)
        proc.stderr.close()


class Engines:
    """engine -> its Served: started when a test first needs it, then serving every
    run."""

    def __init__(self):
        self.started = {}

    def __getitem__(self, engine):
        if engine not in self.started:
            self.started[engine] = Served(engine)
        return self.started[engine]

    def close(self):
        for served in self.started.values():
            served.close()


@pytest.fixture(scope="module")
def engines():
    started = Engines()
    yield started
    started.close()


@pytest.fixture(params=list(ENGINES))
def served(request, engines):
    return engines[request.param]


def missing(client):
    """Why `client` cannot run here, or None."""
    if client == "py":
        if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("mcp_types") is None:
            return ("the official Python SDK (mcp) is not installed: bash tests/run.sh installs "
                    "tests/requirements.txt into .venv")
        return None
    return typescript_missing(client)


class HttpClient:
    """One official client in one mode, started by its driver against a URL."""

    def __init__(self, client, mode, url):
        self.client, self.mode, self.url = client, mode, url
        if client == "py":
            self.command = [sys.executable, str(CLIENTS / "http_py_client.py"), "--mode", mode]
        else:
            self.command = [shutil.which("node") or "node", str(CLIENTS / "http_ts_client.mjs"),
                            "--sdk", client, "--mode", mode]

    @property
    def era(self):
        return CLIENT_MODES[self.client, self.mode]

    @property
    def modern(self):
        return self.era == MODERN

    def run(self, steps, trace=True, timeout_ms=15000):
        argv = [*self.command, "--timeout", str(timeout_ms)]
        if trace:
            argv.append("--trace")
        argv += [json.dumps(steps), "--", self.url]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=90, cwd=CLIENTS)
        return Run.of(self.client, self.mode, proc)


#: (engine, client, mode): each client and mode against each engine that runs it.
RUNS = [(engine, *client_mode) for engine, client_modes in ENGINES.items()
        for client_mode in client_modes]


def run_id(run):
    engine, client, mode = run
    return f"{client}-{mode}" if engine == "embedded" else f"{engine}-{client}-{mode}"


@pytest.fixture(scope="module", params=RUNS, ids=run_id)
def http_client(request, engines):
    engine, client, mode = request.param
    if (reason := missing(client)) is not None:
        pytest.skip(reason)
    return HttpClient(client, mode, engines[engine].url)


@pytest.fixture(scope="module")
def run(http_client):
    """The scenario's run for this client and mode (once)."""
    return http_client.run(steps_of(http_client.era))


class AsSuiteClient:
    """A run as the stdio suite's tests (sdk_suite.SdkClientTests) see a client: the records
    of its "features" scenario, whose steps SCENARIO has under the same labels."""

    def __init__(self, http_client, run):
        self.client, self.modern, self.run = http_client.client, http_client.modern, run

    def scenario(self, name):
        return self.run


SUITE = SdkClientTests()


def no_note(note):
    """What the suite's tests say for the compatibility table: not kept here."""


def exchanges(run, method=None, rpc=None):
    """The HTTP exchanges of a run ("http" records), of one HTTP method / JSON-RPC method."""
    return [r for r in run.records if r["event"] == "http"
            and (method is None or r["method"] == method) and (rpc is None or r["rpc"] == rpc)]


def request_posts(run):
    """The exchanges that POSTed a JSON-RPC request (not a notification or an answer)."""
    return [r for r in exchanges(run, "POST")
            if r["rpc"] not in ("response", None) and not r["rpc"].startswith("notifications/")]


# ==========================================================================================
# Connection: the era, and the HTTP of each era
# ==========================================================================================

def test_era_negotiated(http_client, run):
    connected = run.connected
    sent = run.wire("send")
    if http_client.modern:
        assert connected["protocolVersion"] == V
        assert "initialize" not in [m.get("method") for m in sent]
        if http_client.mode == "auto":
            # The probe went to the same endpoint, as a 2026-07-28 request, and was answered.
            probe = sent[0]
            assert probe["method"] == "server/discover"
            assert probe["params"]["_meta"][PROTOCOL_VERSION_KEY] == V
            assert connected["handshake"] == "discover"
            [answer] = run.response_to(probe["id"])
            assert V in answer["result"]["supportedVersions"]
            first = exchanges(run)[0]
            assert (first["method"], first["rpc"], first["status"]) == ("POST",
                                                                       "server/discover", 200)
        else:
            assert connected["handshake"] == "none" and sent[0]["method"] != "server/discover"
    else:
        assert connected["protocolVersion"] == HANDSHAKE_VERSION
        assert sent[0]["method"] == "initialize" and "server/discover" not in [
            m.get("method") for m in sent]
        assert connected["serverInfo"]["name"] == "sdk-features"
        assert connected["capabilities"]["tools"] == {"listChanged": True}


def test_client_saw_nothing_it_could_not_use(run):
    """No transport error: every response, SSE event and stream was one the client could
    read (the 1.x TypeScript client's own complaint when its GET stream is closed at the end
    is left out by the driver)."""
    assert run.transport_errors() == []


def test_python_client_built_from_the_url_alone(served):
    """``Client("http://.../mcp")`` with nothing else, as the SDK's own docstring shows it
    (the default mode, auto): it settles on 2026-07-28 and works."""
    if (reason := missing("py")) is not None:
        pytest.skip(reason)
    run = HttpClient("py", "auto", served.url).run(
        [{"op": "listTools", "label": "tools"}, call("echo", "echo", {"text": "plain"})],
        trace=False)
    assert (run.connected["protocolVersion"], run.connected["handshake"]) == (V, "discover")
    assert [t["name"] for t in run.ok("tools")["tools"]] == TOOLS
    assert text_of(run.ok("echo")) == "plain"


def test_http_of_the_era(http_client, run):
    """Notifications and answers to the server are 202; a request's POST 200, but in
    2026-07-28 a protocol error that is the client's fault is a 4xx. 2026-07-28: no session;
    every request says its version, method and name in headers that match its body. Handshake
    era: the session id from initialize on every later message, the negotiated version too;
    a GET stream; the session ends with DELETE (the Python SDK on its own, a TypeScript host
    by terminateSession())."""
    for exchange in exchanges(run, "POST"):
        if exchange["rpc"] == "response" or exchange["rpc"].startswith("notifications/"):
            assert exchange["status"] == 202, exchange
    cancelled = run.sent_request("tools/call", name="slow")["id"]
    for exchange in request_posts(run):
        if exchange["id"] == cancelled:
            continue                          # see test_no_request_is_answered_202
        assert exchange["status"] == answer_status(http_client, run, exchange), exchange
    if http_client.modern:
        assert not any("mcp-session-id" in r["request"] or "mcp-session-id" in r["response"]
                       for r in exchanges(run))
        sent = {m["id"]: m for m in run.wire("send") if "method" in m and "id" in m}
        for exchange in request_posts(run):
            headers, params = exchange["request"], sent[exchange["id"]]["params"]
            assert headers["mcp-protocol-version"] == V
            assert params["_meta"][PROTOCOL_VERSION_KEY] == V
            assert headers["mcp-method"] == exchange["rpc"]
            assert headers.get("mcp-name") == params.get(NAMED.get(exchange["rpc"], ""))
        named = {r["request"].get("mcp-name") for r in request_posts(run)}
        assert {"echo", "ask_user", "greet", "test://sdk/text"} <= named
        # No GET stream, no DELETE: nothing to hold open or end.
        assert [r["method"] for r in exchanges(run) if r["method"] != "POST"] == []
        return
    [initialize] = exchanges(run, "POST", "initialize")
    session = initialize["response"]["mcp-session-id"]
    later = exchanges(run)[1:]
    assert later and all(r["request"].get("mcp-session-id") == session for r in later)
    assert all(r["request"].get("mcp-protocol-version") == HANDSHAKE_VERSION for r in later)
    [get] = exchanges(run, "GET")
    assert (get["status"], get["response"]["content-type"]) == (200, "text/event-stream")
    [delete] = exchanges(run, "DELETE")
    assert delete["status"] == 204 and exchanges(run)[-1] is delete


def answer_status(http_client, run, exchange):
    """The HTTP status the JSON-RPC answer to a POSTed request calls for: 200 with a result; an
    error is 200 too in the handshake era, but in 2026-07-28 one that is the client's fault is
    a 4xx (unknown method 404, the others 400). A listen has no answer: its stream stays."""
    if exchange["rpc"] == "subscriptions/listen":
        assert exchange["response"]["content-type"] == "text/event-stream"
        return 200
    [answer] = run.response_to(exchange["id"])
    if "error" not in answer or not http_client.modern:
        return 200
    return 404 if answer["error"]["code"] == -32601 else 400


def test_no_request_is_answered_202(http_client, run, request):
    """A POSTed request is answered with JSON or an SSE stream, never 202 Accepted (which is
    for notifications and answers): the Python SDK turns such a 202 into an error,
    "server answered a request with 202 Accepted"."""
    assert request_posts(run)
    accepted = [(r["rpc"], r["id"]) for r in request_posts(run) if r["status"] == 202]
    assert accepted == []


# ==========================================================================================
# Tools, resources, prompts
# ==========================================================================================

def test_lists_are_paginated(http_client, run):
    SUITE.test_every_list_is_paginated(AsSuiteClient(http_client, run))


def test_tool_results_and_errors(http_client, run):
    check_text_result(run)
    [image] = run.ok("tool.image")["content"]
    assert image["type"] == "image" and image["mimeType"] == "image/png"
    [audio] = run.ok("tool.audio")["content"]
    assert audio["type"] == "audio" and audio["mimeType"] == "audio/wav"
    unknown = check_tool_errors(run)               # isError results; unknown tool: -32602
    call = run.sent_request("tools/call", name="no_such_tool")
    answer = exchange_of(run, call)
    # 2026-07-28 answers a protocol error with a 4xx: the clients still read its body
    assert answer["status"] == (400 if http_client.modern else 200), answer
    assert unknown["data"] == {"name": "no_such_tool"}


def exchange_of(run, message):
    """The HTTP exchange that POSTed `message`."""
    [found] = [r for r in exchanges(run, "POST", message["method"]) if r["id"] == message["id"]]
    return found


def test_resources(http_client, run):
    SUITE.test_resources_and_templates(AsSuiteClient(http_client, run))


def test_prompts_and_completion(run):
    check_prompts(run)
    check_completion(run)


# ==========================================================================================
# What travels beside a response: logs, progress
# ==========================================================================================

def test_logging(http_client, run):
    """warning and above, in order; in 2026-07-28 only because the request asked (its
    _meta logLevel), in the handshake era because the session set the level."""
    messages = run.ok("log.wait")["params"]
    assert [m["level"] for m in messages] == LEVELS[3:]
    assert all(m["logger"] == "chatty" for m in messages)
    call = run.sent_request("tools/call", name="chatty")
    exchange = exchange_of(run, call)
    assert exchange["response"]["content-type"] == "text/event-stream"
    if http_client.modern:
        assert call["params"]["_meta"][LOG_LEVEL_KEY] == "warning"


def test_progress(run):
    expected = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert text_of(run.ok("progress")) == "3 steps"
    assert [(p["progress"], p["total"], p["message"]) for p in run.progress("progress")] == \
        expected
    call = run.sent_request("tools/call", name="progress")
    token = call["params"]["_meta"]["progressToken"]
    received = run.wire("recv")
    notified = [i for i, m in enumerate(received) if m.get("method") == "notifications/progress"
                and m["params"]["progressToken"] == token]
    answered = [i for i, m in enumerate(received) if m.get("id") == call["id"] and "result" in m]
    assert len(notified) == 3 and max(notified) < answered[0]
    # They came in the POST's own response, an SSE stream.
    exchange = exchange_of(run, call)
    assert exchange["response"]["content-type"] == "text/event-stream"


# ==========================================================================================
# The server's questions: sampling, elicitation, roots
# ==========================================================================================

def check_server_request(run, call, method):
    """Handshake era: the question came as a server request in the call's own POST response
    (an SSE stream), and its answer was POSTed back: 202."""
    asked = [m for m in run.wire("recv") if m.get("method") == method and "id" in m]
    assert asked, f"no {method} request"
    assert exchange_of(run, call)["response"]["content-type"] == "text/event-stream"
    answers = {m["id"]: m for m in run.wire("send") if "method" not in m}
    for question in asked:
        assert "result" in answers[question["id"]]
        [posted] = [r for r in exchanges(run, "POST", "response") if r["id"] == question["id"]]
        assert posted["status"] == 202
    return asked


def test_sampling(http_client, run):
    expected = {"text": "mock reply", "model": "mock-model", "role": "assistant"}
    assert run.ok("sampling")["structuredContent"] == expected
    [asked] = run.requests("sampling/createMessage")
    assert asked["messages"] == [{"role": "user", "content": {"type": "text",
                                                              "text": "What is MCP?"}}]
    assert asked["maxTokens"] == 64 and asked["systemPrompt"] == "Answer briefly."
    call = run.sent_request("tools/call", name="ask_model")
    if http_client.modern:
        assert server_requests(run) == []
        [rounds] = input_rounds(run, "tools/call", name="ask_model")
        assert check_input_rounds(rounds, "sampling/createMessage")["structuredContent"] == \
            expected
    else:
        check_server_request(run, call, "sampling/createMessage")


def test_elicitation(http_client, run):
    SUITE.test_elicitation(AsSuiteClient(http_client, run))
    if not http_client.modern:
        for call in run.sent_requests("tools/call", name="ask_user"):
            check_server_request(run, call, "elicitation/create")


def test_roots(http_client, run):
    assert run.ok("roots")["structuredContent"] == {"roots": DEFAULT_ROOTS}
    assert len(run.requests("roots/list")) == 1
    if http_client.modern:
        [rounds] = input_rounds(run, "tools/call", name="roots")
        assert check_input_rounds(rounds, "roots/list")["structuredContent"] == {
            "roots": DEFAULT_ROOTS}
    else:
        check_server_request(run, run.sent_request("tools/call", name="roots"), "roots/list")


# ==========================================================================================
# Cancellation
# ==========================================================================================

def test_cancellation(http_client, run, request):
    """The client gives up on a slow call: the handshake-era clients send
    notifications/cancelled (a POST of its own); 2026-07-28 clients close the call's
    response instead (that era has no notifications from client to server over HTTP). Either
    way the tool must stop: cancellations() lists the ids of the slow() calls it saw
    cancelled."""
    record = run.step("cancel.timer")
    assert record["ok"] is False and record.get("cancelled") is True
    call = run.sent_request("tools/call", name="slow")
    # The server sent no result.
    assert [m for m in run.response_to(call["id"]) if "error" not in m] == []
    if not http_client.modern:
        [cancel] = [m for m in run.wire("send") if m.get("method") == "notifications/cancelled"]
        assert cancel["params"]["requestId"] == call["id"]
        [posted] = exchanges(run, "POST", "notifications/cancelled")
        assert posted["status"] == 202
    before = run.ok("cancel.before")["structuredContent"]["cancelled"]
    after = run.ok("cancel.seen")["structuredContent"]["cancelled"]
    assert after[len(before):] == [call["id"]]


# ==========================================================================================
# What the server says of its own accord: resource updates, list changes
# ==========================================================================================

def test_resource_updates(http_client, run):
    """Subscribed, the client hears of a change to the resource once (none after it
    unsubscribed, or ended its listen)."""
    update = {"uri": "test://sdk/counter"}
    updates = [m["params"] for m in run.wire("recv")
               if m.get("method") == "notifications/resources/updated"]
    if http_client.modern:
        listen = run.ok("sub.listen")
        assert listen["honored"] == {"resourceSubscriptions": ["test://sdk/counter"]}
        assert run.ok("sub.wait")["events"] == [{"type": "ResourceUpdated", **update}]
        check_listen_closed(run, "sub.stop", listen["subscriptionId"])
        assert updates == [{**update, "_meta": {
            "io.modelcontextprotocol/subscriptionId": listen["subscriptionId"]}}]
        listened = run.sent_request("subscriptions/listen", notifications={
            "resourceSubscriptions": ["test://sdk/counter"]})
        assert exchange_of(run, listened)["response"]["content-type"] == "text/event-stream"
        return
    assert run.ok("sub.subscribe") == {} and run.ok("sub.unsubscribe") == {}
    assert run.ok("sub.wait")["params"] == [update] and updates == [update]
    # It is about no request: not in the bump's response (JSON), so on the GET stream.
    bump = run.sent_request("tools/call", name="bump")
    assert exchange_of(run, bump)["response"]["content-type"] == "application/json"


def test_list_changed(http_client, run):
    SUITE.test_tool_list_changed(AsSuiteClient(http_client, run), no_note)
    toggles = run.sent_requests("tools/call", name="toggle_extra")
    if http_client.modern:
        listened = run.sent_request("subscriptions/listen",
                                    notifications={"toolsListChanged": True})
        assert exchange_of(run, listened)["response"]["content-type"] == "text/event-stream"
    else:
        # Not in the responses of the calls that made the changes (JSON): on the GET stream.
        assert len(toggles) == 2
    for toggle in toggles:
        assert exchange_of(run, toggle)["response"]["content-type"] == "application/json"


# ==========================================================================================
# The server's own output
# ==========================================================================================

def tracebacks(served, since=None):
    """The tracebacks in the server's output (from line `since` on, else since it
    started), each as one text: Python's socketserver prints each between lines of
    dashes."""
    text = "".join(served.output[served.started if since is None else since:])
    return [block for block in text.split("-" * 40 + "\n") if "Traceback" in block]


def test_server_kept_quiet(served):
    """Nothing in the server's output since it started serving: no tracebacks, whatever
    the clients did (the Node clients, leaving, sometimes reset a kept-alive
    connection)."""
    time.sleep(0.1)
    assert tracebacks(served) == []
    assert not [line for line in served.output[served.started:]
                if "WARNING" in line or "ERROR" in line]


def test_a_client_resetting_its_idle_connection_is_no_error(served):
    """A client that ends its kept-alive connection with a reset (RST) between two requests,
    as Node's fetch sometimes does when its process exits, is no error: nothing in its
    output."""
    since = len(served.output)
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        PROTOCOL_VERSION_KEY: V, "io.modelcontextprotocol/clientCapabilities": {}}}}
    connection.request("POST", "/mcp", json.dumps(message), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": V, "Mcp-Method": "tools/list"})
    response = connection.getresponse()
    assert response.status == 200 and json.loads(response.read())["result"]["tools"]
    # The server now waits for the next request on this connection: reset it.
    connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()
    deadline = time.monotonic() + 1
    while not tracebacks(served, since) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert tracebacks(served, since) == []


MIRRORING_SERVER = '''
from mcp_min import Server

server = Server("mirrors")


@server.tool(input_schema={"type": "object", "required": ["region", "query"], "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "shard": {"type": "integer", "x-mcp-header": "Shard"},
    "query": {"type": "string"}}})
def execute(region, query, shard=None):
    return f"{query} in {region}, shard {shard}"
'''

MIRRORING_CLIENT = '''
import sys, anyio
from mcp import Client

async def main():
    async with Client(sys.argv[1], mode="2026-07-28") as client:
        await client.list_tools()            # the SDK learns which arguments to mirror
        for arguments in ({"region": "Zürich", "query": "q", "shard": 7},
                          {"region": "us-west1", "query": "r"}):
            result = await client.call_tool("execute", arguments)
            print(result.content[0].text)
anyio.run(main)
'''


def test_python_client_mirrors_x_mcp_header_arguments_the_server_checks(tmp_path):
    """The official client repeats the arguments a tool marks with x-mcp-header as
    Mcp-Param-{Name} headers (base64 for "Zürich"), and the server takes them as matching."""
    if (reason := missing("py")) is not None:
        pytest.skip(reason)
    (tmp_path / "mirrors.py").write_text(MIRRORING_SERVER)
    server = HttpServerProcess(tmp_path / "mirrors.py")
    try:
        proc = subprocess.run([sys.executable, "-c", MIRRORING_CLIENT,
                               f"http://127.0.0.1:{server.port}/mcp"],
                              capture_output=True, text=True, timeout=60)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["q in Zürich, shard 7", "r in us-west1, shard None"]
