"""The command line and the Client over Streamable HTTP: `inspect URL`, `call URL TOOL
[JSON]` and `repl URL` in both eras (2026-07-28 by default, the handshake era with a
session on request), `--header` and `--token`, against the embedded server (`serve
--http`) and granian; and the server's side of the projector: `serve --http --trace` and
MCP_MIN_TRACE=1 show each request's frames on stderr as stdio tracing does."""

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import mcp_min
from conftest import ROOT, Granian
from mcp_min import Client, JSONRPCError, Server

MCP_MIN = str(ROOT / "mcp_min.py")
EVERYTHING = str(ROOT / "tests" / "servers" / "everything.py")
FRAME = re.compile(r"^(C->S|S->C) (\S+(?: \S+)*?): (\{.*\}|\[.*\])$")


def clean_env(**extra):
    env = {name: value for name, value in os.environ.items()
           if name not in ("MCP_MIN_TRACE", "NO_COLOR")}
    return {**env, **extra}


def cli(*args, input=None, timeout=30):
    return subprocess.run([sys.executable, MCP_MIN, *map(str, args)], input=input,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=clean_env())


class Served:
    """`mcp_min.py serve --http 127.0.0.1:0 ARGS...`: its URL, once it serves, and its
    stderr (the trace) as it comes."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen(
            [sys.executable, MCP_MIN, "serve", "--http", "127.0.0.1:0", *map(str, args)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, cwd=ROOT, env=clean_env(**(env or {})))
        self.lines = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr),
                                       daemon=True)
        self.reader.start()
        deadline = time.monotonic() + 20
        while not (found := re.search(r"on (http://\S+/mcp)", self.text())):
            assert time.monotonic() < deadline and self.proc.poll() is None, self.text()
            time.sleep(0.02)
        self.url = found[1]

    def text(self):
        return "".join(self.lines)

    def trace(self, settle=0.3):
        """The frame lines of its stderr: (direction, label, message)."""
        time.sleep(settle)
        found = []
        for line in self.text().splitlines():
            match = FRAME.match(line)
            if match:
                found.append((match[1], match[2], json.loads(match[3])))
        return found

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.reader.join(5)
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def gift():
    """The built-in gift server over HTTP, traced (serve --http --trace)."""
    served = Served("--trace")
    yield served
    served.close()


def labels(found):
    return [f"{way} {label}" for way, label, _ in found]


# ============================================================================================
# The command line, against the embedded server
# ============================================================================================

def test_inspect_url_speaks_2026_07_28_by_default_and_the_handshake_on_request(gift):
    modern = cli("inspect", gift.url)
    assert modern.returncode == 0, modern.stderr
    report = json.loads(modern.stdout)
    assert report["protocolVersion"] == "2026-07-28"
    assert [t["name"] for t in report["tools"]] == ["suggest_gifts", "pick_gift"]
    assert report["resources"][0]["uri"] == "mcp://gift-server/resources/gift_catalog"
    handshake = cli("inspect", "--era", "handshake", gift.url)
    assert handshake.returncode == 0, handshake.stderr
    assert json.loads(handshake.stdout)["protocolVersion"] == mcp_min.LATEST_PROTOCOL_VERSION
    assert json.loads(handshake.stdout)["prompts"] == report["prompts"]


@pytest.mark.parametrize("era", ["auto", "handshake"])
def test_call_url_tool_json_and_its_exit_codes(gift, era):
    done = cli("call", "--era", era, gift.url, "suggest_gifts",
               '{"occasion": "birthday", "budget": 30}')
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structuredContent"]["gifts"][0]["name"] == "Dice set with velvet bag"
    assert ("resultType" in result) == (era == "auto")
    business = cli("call", "--era", era, gift.url, "suggest_gifts",
                   '{"occasion": "wedding", "budget": 5}')
    assert business.returncode == 0 and json.loads(business.stdout)["isError"] is True
    unknown = cli("call", "--era", era, gift.url, "suggest_gift", "{}")
    assert unknown.returncode == 1 and "error -32602" in unknown.stderr
    assert "did you mean 'suggest_gifts'?" in unknown.stderr
    missing = cli("call", "--era", era, gift.url, "tools/col")
    assert missing.returncode == 1 and "error -32601" in missing.stderr


def test_serve_http_trace_shows_each_requests_frames(gift):
    before = len(gift.trace(settle=0))
    done = cli("call", gift.url, "suggest_gifts", '{"occasion": "birthday", "budget": 30}')
    assert done.returncode == 0
    found = gift.trace()[before:]
    assert labels(found) == ["C->S request 1 server/discover",
                             "S->C response 1 server/discover",
                             "C->S request 2 tools/call", "S->C response 2 tools/call"]
    # the bytes the client sent, and those the server responded with
    assert found[2][2]["params"]["arguments"] == {"occasion": "birthday", "budget": 30}
    assert found[3][2]["result"] == json.loads(done.stdout)


def test_handshake_session_over_http_opens_and_ends(gift):
    """initialize opens a session (Mcp-Session-Id), kept for every later request; the
    client's close ends it with a DELETE."""
    with Client(gift.url) as client:
        session = client.stream.session_id
        assert session and client.protocol_version == mcp_min.LATEST_PROTOCOL_VERSION
        assert client.ping() == {}
        assert client.stream.session_id == session
    # deleted: the id is unknown now
    import http.client
    connection = http.client.HTTPConnection(gift.url.split("/")[2], timeout=10)
    connection.request("POST", "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                       {"Content-Type": "application/json", "Accept": "application/json",
                        "Mcp-Session-Id": session,
                        "MCP-Protocol-Version": mcp_min.LATEST_PROTOCOL_VERSION})
    assert connection.getresponse().status == 404
    connection.close()


def test_mcp_min_trace_traces_serve_http_too():
    served = Served(EVERYTHING, env={"MCP_MIN_TRACE": "1"})
    try:
        assert cli("call", served.url, "echo", '{"text": "hi"}').returncode == 0
        assert "C->S request 2 tools/call" in labels(served.trace())
    finally:
        served.close()
    untraced = Served(EVERYTHING)
    try:
        assert cli("call", untraced.url, "echo", '{"text": "hi"}').returncode == 0
        assert untraced.trace() == []
    finally:
        untraced.close()


def test_repl_url_answers_questions_by_hand_in_both_eras(gift):
    typed = "\n".join([
        "discover", "ping", '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        'call pick_gift {"occasion": "housewarming", "budget": 60}',
        'accept {"recipient": "a friend who loves cooking"}', "quit"]) + "\n"
    result = cli("repl", gift.url, input=typed)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    out = result.stdout
    # 2026-07-28 has no ping: the repl says so rather than send it
    assert "! ping: not part of protocol 2026-07-28" in out and "C->S request 2 ping" not in out
    # a notification typed by hand is POSTed (202, nothing to show)
    assert "C->S notification notifications/initialized" in out and "! not sent" not in out
    assert "? Who is the gift for?" in out
    assert ('"inputResponses":{"elicitation-1":{"action":"accept","content":{"recipient":'
            '"a friend who loves cooking"}}}') in out
    assert "Cast-iron skillet" in out
    # the handshake era: the question is a request of the server's, in the call's stream
    typed = "\n".join(["init", "listen", 'call pick_gift {"occasion": "housewarming", '
                       '"budget": 60}', "cancel", "quit"]) + "\n"
    result = cli("repl", gift.url, input=typed)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "! listen: not part of protocol 2025-11-25" in result.stdout
    assert re.search(r'^S->C request 1 elicitation/create: ', result.stdout, re.M)
    assert re.search(r'^C->S response 1 elicitation/create: .*"result":\{"action":"cancel"\}',
                     result.stdout, re.M)
    assert '"why":"a safe housewarming pick"' in result.stdout


# ============================================================================================
# Authorization, and what goes wrong
# ============================================================================================

@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    script = tmp_path_factory.mktemp("auth") / "guarded.py"
    script.write_text(textwrap.dedent('''\
        from mcp_min import Server

        def check(token):
            return token == "s3cret" and "ada"

        server = Server("guarded", auth=check, authorization_servers=["https://id.example"])

        @server.tool
        def whoami() -> str:
            """Who asks."""
            return "someone with the token"
        '''))
    served = Served(script)
    yield served
    served.close()


@pytest.mark.parametrize("era", ["auto", "handshake"])
def test_token_and_header_reach_a_server_that_wants_a_token(guarded, era):
    refused = cli("call", "--era", era, guarded.url, "whoami")
    assert refused.returncode == 1 and "HTTP 401 Unauthorized" in refused.stderr
    assert "send Authorization: Bearer TOKEN" in refused.stderr
    for words in (["--token", "s3cret"], ["--header", "Authorization: Bearer s3cret"]):
        done = cli("call", "--era", era, *words, guarded.url, "whoami")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["content"][0]["text"] == "someone with the token"


@pytest.mark.parametrize("words, message", [
    (["call", "--header", "no colon", "http://127.0.0.1:9/mcp", "ping"],
     "--header takes 'NAME: VALUE'"),
    (["call", "http://127.0.0.1:9/mcp"], "name a method or a tool after the server command"),
    (["inspect"], "inspect needs a server command or URL"),
])
def test_usage_errors_exit_2(words, message):
    result = cli(*words)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_url_nothing_listens_on_is_one_line_exit_1():
    from conftest import free_port
    url = f"http://127.0.0.1:{free_port()}/mcp"
    for words in (["inspect", url], ["call", url, "tools/list"]):
        result = cli(*words)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith(f"mcp_min: POST {url}: ") and \
            len(result.stderr.splitlines()) == 1, result.stderr


def test_a_path_that_is_not_the_endpoint_says_what_the_server_said(gift):
    url = gift.url.replace("/mcp", "/nope")
    result = cli("call", url, "tools/list")
    assert result.returncode == 1
    assert "HTTP 404 Not Found" in result.stderr and "the MCP endpoint is /mcp" in result.stderr


# ============================================================================================
# Client(url), against the embedded server in this process and granian
# ============================================================================================

def test_client_url_in_process_both_eras_with_progress_and_questions():
    server = Server("here")

    @server.tool
    def count(n: int, ctx: mcp_min.Context) -> str:
        """Count, then ask."""
        for i in range(n):
            ctx.report_progress(i + 1, n)
        answer = ctx.elicit("Go on?", {"type": "object", "properties": {}})
        return answer["action"]

    httpd = mcp_min.make_http_server(server.wsgi, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_port}/mcp"
    try:
        for era in ("2026-07-28", "handshake"):
            seen = []
            with Client(url, era=era, elicitation=lambda p: {"action": "accept"}) as client:
                assert client.stateless == (era == "2026-07-28")
                assert client.call_tool("count", {"n": 3}, progress=seen.append)[
                    "content"][0]["text"] == "accept"
                with pytest.raises(JSONRPCError) as refused:
                    client.call_tool("nope")
                assert refused.value.code == -32602
            assert [p["progress"] for p in seen][-3:] == [1, 2, 3]
    finally:
        httpd.shutdown()
        httpd.server_close()
        server.stop_http()


def test_granian_url_targets_and_its_trace():
    served = Granian("everything:server", env={"MCP_MIN_TRACE": "1"})
    try:
        for era in ("auto", "handshake"):
            result = cli("call", "--era", era, served.url, "echo", '{"text": "hi"}')
            assert result.returncode == 0, result.stderr
            assert json.loads(result.stdout)["content"][0]["text"] == "hi"
        report = json.loads(cli("inspect", served.url).stdout)
        assert report["protocolVersion"] == "2026-07-28" and report["tools"]
        deadline = time.monotonic() + 5
        while "C->S request 2 tools/call" not in served.text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert re.search(r"^C->S request 2 tools/call: \{", served.text(), re.M)
        assert re.search(r"^S->C response 2 tools/call: \{", served.text(), re.M)
    finally:
        served.close()
