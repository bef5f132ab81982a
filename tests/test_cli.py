"""The command line as a workshop participant runs it: `python3 mcp_min.py demo | inspect |
call | repl | explain | serve --trace` in a subprocess, with stdout, stderr and the exit code
checked; colour through a pseudo-terminal; `repl` driven through its stdin. Then the
in-process ``Client(server)``: the test client users get for their own servers.

Frame lines are checked against an oracle written here (not mcp_min's own describe_frame):
``C->S request 2 tools/list: {...}`` must say who wrote the bytes, what kind of message they
are, its id and its method, and the bytes must be the message verbatim."""

import datetime
import enum
import gc
import io
import json
import os
import pty
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from typing import Annotated, Optional

import pytest

import mcp_min
from conftest import ROOT
from mcp_min import Client, Context, JSONRPCError, Server, ToolError

MCP_MIN = str(ROOT / "mcp_min.py")
EXAMPLES = ROOT / "examples"
GIFT = [sys.executable, str(EXAMPLES / "gift_server.py")]
SLOW = [sys.executable, str(EXAMPLES / "slow_server.py")]
EVERYTHING = [sys.executable, str(ROOT / "tests" / "servers" / "everything.py")]
CATALOG = "mcp://gift-server/resources/gift_catalog"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def clean_env(**extra):
    env = dict(os.environ)
    for name in ("MCP_MIN_TRACE", "NO_COLOR"):
        env.pop(name, None)
    env.update(extra)
    return env


def cli(*args, input=None, timeout=30, env=None):
    """`python3 mcp_min.py ARGS...` with stdout and stderr piped, as in `... | less`."""
    return subprocess.run([sys.executable, MCP_MIN, *map(str, args)], input=input,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=env or clean_env())


def on_pty(args, *, stream="stdout", input=None, env=None, timeout=30):
    """Run with ``stream`` (stdout or stderr) on a pseudo-terminal; returns (code, tty text,
    other stream's text). The terminal's CR LF line ends are turned back into LF."""
    master, slave = pty.openpty()
    with tempfile.TemporaryFile() as other:
        streams = {"stdout": other, "stderr": other, stream: slave}
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, cwd=ROOT, env=env or clean_env(),
                                **streams)
        os.close(slave)
        if input:
            proc.stdin.write(input.encode())
        proc.stdin.close()
        chunks, deadline = [], time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                proc.kill()
                raise AssertionError(f"no end of output within {timeout} s")
            try:
                data = os.read(master, 65536)
            except OSError:                      # EIO: every writer of the terminal is gone
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        code = proc.wait(timeout)
        other.seek(0)
        rest = other.read().decode("utf-8", "replace")
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n"), rest


# ============================================================================================
# Reading frame lines
# ============================================================================================

FRAME = re.compile(r"^(?P<dir>C->S|S->C|->|<-) (?P<label>.*?): (?P<body>.*)$")


def expected_label(message):
    """What a frame line must call a message: kind, id (as JSON), method or error code."""
    if isinstance(message, list):
        return f"batch of {len(message)}"
    rid = json.dumps(message["id"]) if "id" in message else None
    if "method" in message:
        return f"request {rid} {message['method']}" if rid else f"notification {message['method']}"
    if "error" in message:
        return f"error {rid or '(no id)'} {message['error']['code']}"
    return f"response {rid}"


class Frame:
    def __init__(self, direction, label, body):
        self.direction, self.label, self.body = direction, label, body
        try:
            self.message = json.loads(body)
        except ValueError:
            self.message = None

    @property
    def kind(self):
        return self.label.split(" ")[0]

    @property
    def id(self):
        return self.message.get("id") if isinstance(self.message, dict) else None

    @property
    def method(self):
        return self.message.get("method") if isinstance(self.message, dict) else None

    def __repr__(self):
        return f"{self.direction} {self.label}: {self.body[:120]}"


def frames(text, directions=("C->S", "S->C")):
    """Every frame line of an output, each checked: its label is the oracle's label (a longer
    label may add to it), and its body is one JSON message or is labelled unparsable."""
    found = []
    for line in text.splitlines():
        match = FRAME.match(line)
        if not match or match["dir"] not in directions:
            continue
        frame = Frame(match["dir"], match["label"], match["body"])
        if frame.message is None:
            assert frame.label == "unparsable", line
        else:
            want = expected_label(frame.message)
            assert frame.label == want or frame.label.startswith(want + " "), \
                f"label {frame.label!r} should be {want!r}: {line[:200]}"
        found.append(frame)
    return found


def find(found, start=0, where=None, **want):
    """Index of the first frame at or after ``start`` with the wanted attributes (and for
    which ``where(frame)`` holds)."""
    for i in range(start, len(found)):
        if all(getattr(found[i], key) == value for key, value in want.items()) and (
                where is None or where(found[i])):
            return i
    raise AssertionError(f"no frame with {want} after #{start} in:\n" +
                         "\n".join(map(repr, found)))


def calling(tool):
    return lambda frame: frame.message["params"].get("name") == tool


def check_correlation(found):
    """Every response answers exactly one earlier request sent the other way, and every
    request with an id (but ones the other side cancelled) got exactly one response."""
    other = {"C->S": "S->C", "S->C": "C->S"}
    open_requests = {}
    for frame in found:
        if frame.kind == "request":
            key = (frame.direction, json.dumps(frame.id))
            assert key not in open_requests, f"id reused while outstanding: {frame}"
            open_requests[key] = frame
        elif frame.kind in ("response", "error") and frame.id is not None:
            key = (other[frame.direction], json.dumps(frame.id))
            assert key in open_requests, f"response to no outstanding request: {frame}"
            del open_requests[key]
    return open_requests


# ============================================================================================
# demo
# ============================================================================================

@pytest.fixture(scope="module")
def demo():
    result = cli("demo")
    assert result.returncode == 0, result.stderr
    return result


STATELESS_NOTE = "# Protocol 2026-07-28 has no handshake"


def sessions(text):
    """The demo's two sessions: the handshake era's output, then 2026-07-28's."""
    handshake, _, stateless = text.partition(STATELESS_NOTE)
    assert stateless, "the demo has no 2026-07-28 session"
    return handshake, STATELESS_NOTE + stateless


def without_state(text):
    """A demo's output with each requestState blanked: it is signed with a key of each
    server process's own and carries its expiry time, so it differs from run to run."""
    return re.sub(r'"requestState":"[^"]*"', '"requestState":"..."', text)


def test_demo_exits_cleanly_and_writes_nothing_to_stderr(demo):
    assert demo.stderr == ""
    assert "\x1b[" not in demo.stdout                  # piped: plain text, no ANSI escapes
    assert demo.stdout.strip()


def test_demo_every_line_is_a_note_or_a_classified_frame(demo):
    for line in demo.stdout.splitlines():
        if line and not line.startswith("# "):
            assert FRAME.match(line) and line[:4] in ("C->S", "S->C"), line
    found = frames(demo.stdout)
    assert len(found) >= 19
    assert {f.kind for f in found} == {"request", "response", "notification", "error"}
    for frame in found:                                 # bodies are compact one-line JSON
        assert frame.message is not None and frame.body == json.dumps(
            frame.message, separators=(",", ":"), ensure_ascii=False)


def test_demo_handshake(demo):
    found = frames(sessions(demo.stdout)[0])
    init = found[0]
    assert (init.direction, init.kind, init.id, init.method) == ("C->S", "request", 1, "initialize")
    assert init.message["params"]["protocolVersion"] == mcp_min.LATEST_PROTOCOL_VERSION
    reply = found[1]
    assert (reply.direction, reply.kind, reply.id) == ("S->C", "response", 1)
    assert reply.message["result"]["serverInfo"]["name"] == "gift-server"
    assert set(reply.message["result"]["capabilities"]) >= {"tools", "resources", "prompts"}
    note = found[2]
    assert (note.direction, note.kind, note.method) == ("C->S", "notification",
                                                        "notifications/initialized")
    assert "id" not in note.message
    # nothing answers the notification: the next server frame answers request 2
    after = [f for f in found[3:] if f.direction == "S->C"][0]
    assert after.id == 2


def test_demo_shows_every_step_in_order(demo):
    found = frames(sessions(demo.stdout)[0])
    i = find(found, direction="C->S", kind="request", method="tools/list")
    j = find(found, i, direction="S->C", kind="response", id=found[i].id)
    assert [t["name"] for t in found[j].message["result"]["tools"]] == ["suggest_gifts",
                                                                        "pick_gift"]
    assert found[j].message["result"]["tools"][0]["inputSchema"]["required"] == ["occasion", "budget"]

    i = find(found, j, direction="C->S", method="tools/call")
    assert found[i].message["params"]["name"] == "suggest_gifts"
    j = find(found, i, direction="S->C", id=found[i].id)
    result = found[j].message["result"]
    assert result["isError"] is False and len(result["structuredContent"]["gifts"]) == 3
    assert all(g["price"] <= 100 for g in result["structuredContent"]["gifts"])

    i = find(found, j, direction="C->S", method="resources/read")
    assert found[i].message["params"] == {"uri": CATALOG}
    j = find(found, i, direction="S->C", kind="response", id=found[i].id)
    assert found[j].message["result"]["contents"][0]["uri"] == CATALOG

    i = find(found, j, direction="C->S", method="prompts/get")
    j = find(found, i, direction="S->C", kind="response", id=found[i].id)
    assert "congratulations" in found[j].message["result"]["messages"][0]["content"]["text"]


def test_demo_shows_a_protocol_error_and_a_business_error(demo):
    found = frames(demo.stdout)
    i = find(found, direction="C->S", method="tools/col")
    protocol = found[find(found, i, direction="S->C", id=found[i].id)]
    assert protocol.kind == "error" and protocol.message["error"]["code"] == -32601
    assert protocol.label == f"error {found[i].id} -32601" or protocol.label.startswith(
        f"error {found[i].id} -32601 ")
    business = [f for f in found if f.kind == "response"
                and f.message["result"].get("isError") is True]
    assert business, "no isError result in the demo"
    assert "No gifts in the catalogue" in business[0].message["result"]["content"][0]["text"]
    text = demo.stdout
    assert text.index("# A protocol error") < text.index(protocol.body)
    assert text.index("# Business errors") < text.index(business[0].body)


def test_demo_correlates_every_request_with_one_response(demo):
    for session in sessions(demo.stdout):
        found = frames(session)
        assert check_correlation(found) == {}
        ids = [f.id for f in found if f.kind == "request"]
        assert ids == list(range(1, len(ids) + 1))      # the client counts 1, 2, 3, ...


def test_demo_response_lines_name_the_method_they_answer(demo):
    for session in sessions(demo.stdout):
        found = frames(session)
        asked = {(f.direction, f.id): f.method for f in found if f.kind == "request"}
        for frame in found:
            if frame.kind in ("response", "error"):
                method = asked[("C->S" if frame.direction == "S->C" else "S->C", frame.id)]
                assert method in frame.label.split(" "), frame


def test_demo_stateless_session_discovers_then_answers_a_question(demo):
    found = frames(sessions(demo.stdout)[1])
    assert [(f.direction, f.kind, f.method) for f in found if f.kind == "request"] == [
        ("C->S", "request", "server/discover"), ("C->S", "request", "tools/call"),
        ("C->S", "request", "tools/call"), ("C->S", "request", "tools/call")]
    assert all(f.message["params"]["_meta"][
        "io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        for f in found if f.kind == "request")
    results = [f.message["result"] for f in found if f.kind == "response"]
    assert results[0]["supportedVersions"] == ["2026-07-28"]
    assert [r["resultType"] for r in results] == ["complete", "complete", "input_required",
                                                  "complete"]
    [(key, question)] = results[2]["inputRequests"].items()
    assert question["method"] == "elicitation/create"
    retry = [f for f in found if f.kind == "request"][3].message["params"]
    assert retry["requestState"] == results[2]["requestState"]
    assert retry["inputResponses"][key]["action"] == "accept"
    assert results[3]["structuredContent"]["why"] == "matches cooking"
    assert not [f for f in found if f.direction == "S->C" and f.kind == "request"]


def test_demo_in_colour_on_a_terminal(demo):
    code, text, err = on_pty([sys.executable, MCP_MIN, "demo"])
    assert code == 0 and err == ""
    for kind, colour in (("request 1 initialize", "36"), ("response 1", "32"),
                         ("notification notifications/initialized", "33"), ("error 6 -32601", "31")):
        assert re.search(rf"\x1b\[{colour}m{kind}( [^\x1b]*)?\x1b\[0m: ", text), kind
    assert "\x1b[1m# The client starts" in text          # the notes are bold
    assert without_state(ANSI.sub("", text)) == without_state(demo.stdout)   # the same bytes


def test_demo_on_a_terminal_respects_no_color(demo):
    code, text, _ = on_pty([sys.executable, MCP_MIN, "demo"], env=clean_env(NO_COLOR="1"))
    assert code == 0
    assert "\x1b[" not in text and without_state(text) == without_state(demo.stdout)


# ============================================================================================
# A lone copy: mcp_min.py copied into an empty folder, the way the README installs it
# ============================================================================================

def test_every_command_works_from_a_lone_copy(tmp_path):
    """demo, inspect, call, explain and serve with nothing but mcp_min.py in the folder: the
    demo's gift server is built in (`serve` with no file serves it, so inspect and call can
    reach it too), and serve runs a server file put next to the copy."""
    shutil.copy(MCP_MIN, tmp_path)

    def run(*args, input=None):
        return subprocess.run([sys.executable, "mcp_min.py", *args], input=input, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60, env=clean_env())
    demo = run("demo")
    assert demo.returncode == 0 and demo.stderr == "", demo.stderr
    assert "S->C response 9 tools/call (isError): " in demo.stdout
    assert '"structuredContent":{"name":"Cast-iron skillet","price":35,' in demo.stdout

    gift_server = [sys.executable, "mcp_min.py", "serve"]
    inspected = run("inspect", "--", *gift_server)
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    assert report["serverInfo"] == {"name": "gift-server", "version": "1.0.0",
                                    "title": "Gift picker"}
    assert [t["name"] for t in report["tools"]] == ["suggest_gifts", "pick_gift"]
    assert [r["uri"] for r in report["resources"]] == [CATALOG]

    called = run("call", "--", *gift_server, "suggest_gifts",
                 '{"occasion": "wedding", "budget": 50}')
    assert called.returncode == 0, called.stderr
    gifts = json.loads(called.stdout)["structuredContent"]["gifts"]
    assert gifts[0]["name"] == "Cast-iron skillet"

    explained = run("explain", '{"jsonrpc":"2.0","id":1,"method":"tools/lsit"}')
    assert explained.returncode == 1 and "did you mean 'tools/list'?" in explained.stdout

    shutil.copy(EXAMPLES / "calculator.py", tmp_path / "server.py")
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "lone", "version": "1"}}}
    add = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}
    for target, name, answer in (("server.py", "calculator", '"text": "5.0"'),
                                 (None, "gift-server", '"message": "Unknown tool: \'add\'"')):
        served = run("serve", *[target] * bool(target),
                     input=json.dumps(initialize) + "\n" + json.dumps(add) + "\n")
        assert served.returncode == 0, served.stderr
        first, second = map(json.loads, served.stdout.splitlines())
        assert first["result"]["serverInfo"]["name"] == name
        assert answer in json.dumps(second), second


# ============================================================================================
# inspect
# ============================================================================================

def inspect(*command, era=None):
    result = cli("inspect", *(["--era", era] if era else []), "--", *command)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr        # stdout is one JSON document


@pytest.mark.parametrize("era, version", [(None, "2026-07-28"), ("auto", "2026-07-28"),
                                          ("2026-07-28", "2026-07-28"),
                                          ("legacy", mcp_min.LATEST_PROTOCOL_VERSION)])
def test_inspect_gift_server_lists_tools_with_schemas_resources_and_prompts(era, version):
    report, stderr = inspect(*GIFT, era=era)
    assert stderr == ""
    assert report["serverInfo"] == {"name": "gift-server", "version": "1.0.0",
                                    "title": "Gift picker"}
    assert report["protocolVersion"] == version
    assert report["instructions"].startswith("Suggests gifts")
    tool, pick = report["tools"]
    assert pick["name"] == "pick_gift" and pick["inputSchema"]["required"] == ["occasion", "budget"]
    assert tool["name"] == "suggest_gifts" and tool["title"] == "Gift ideas generator"
    schema = tool["inputSchema"]
    assert schema["type"] == "object" and schema["required"] == ["occasion", "budget"]
    assert schema["properties"]["budget"] == {"type": "number",
                                              "description": "the most to spend, in dollars"}
    assert "birthday" in schema["properties"]["occasion"]["enum"]
    assert tool["outputSchema"]["required"] == ["occasion", "budget", "gifts"]
    assert tool["annotations"]["readOnlyHint"] is True
    widget, resource = report["resources"]
    assert resource["uri"] == CATALOG and resource["mimeType"] == "application/json"
    assert widget["uri"] == "ui://gift-server/picker.html"
    assert widget["mimeType"] == "text/html;profile=mcp-app"
    assert report["resourceTemplates"] == []
    (prompt,) = report["prompts"]
    assert prompt["name"] == "gift_congrats_style"
    assert [(a["name"], a["required"]) for a in prompt["arguments"]] == \
        [("recipient", False), ("occasion", False)]


def test_inspect_server_with_templates():
    report, stderr = inspect(*EVERYTHING)
    assert report["resourceTemplates"] == [{"uriTemplate": "test://items/{item_id}", "name": "item",
                                            "description": "One item by id."}]
    assert {r["uri"] for r in report["resources"]} == {"test://static/text", "test://static/blob"}
    greet = {p["name"]: p for p in report["prompts"]}["greet"]
    assert greet["arguments"][0] == {"name": "name", "description": "who to greet", "required": True}
    tools = {t["name"]: t for t in report["tools"]}
    assert tools["sleep"]["inputSchema"]["required"] == ["ms"]
    assert "ctx" not in tools["sleep"]["inputSchema"]["properties"]
    assert "lifespan: start" in stderr                  # the server's stderr passes through


def test_inspect_lists_only_what_the_server_declares():
    report, _ = inspect(sys.executable, str(EXAMPLES / "calculator.py"))
    assert "resources" not in report and "prompts" not in report
    assert "resources" not in report["capabilities"]
    assert report["tools"][0]["inputSchema"]["properties"] == {"a": {"type": "number"},
                                                               "b": {"type": "number"}}


# ============================================================================================
# call
# ============================================================================================

BIRTHDAY = {"occasion": "birthday", "budget": 50, "recipient": "loves board games"}


def call(*words, code=0, era=None):
    result = cli("call", *(["--era", era] if era else []), "--", *words)
    assert result.returncode == code, (result.stdout, result.stderr)
    return result


def test_call_long_form():
    result = call(*GIFT, "tools/call", json.dumps({"name": "suggest_gifts", "arguments": BIRTHDAY}))
    assert result.stderr == ""
    out = json.loads(result.stdout)
    assert out["isError"] is False
    gifts = out["structuredContent"]["gifts"]
    assert [g["name"] for g in gifts] == ["Dice set with velvet bag", "Cooperative game: Pandemic",
                                          "Board game: Catan"]
    assert json.loads(out["content"][0]["text"]) == out["structuredContent"]


def test_call_short_form_is_the_same_call():
    long = call(*GIFT, "tools/call", json.dumps({"name": "suggest_gifts", "arguments": BIRTHDAY}))
    short = call(*GIFT, "suggest_gifts", json.dumps(BIRTHDAY))
    assert json.loads(short.stdout) == json.loads(long.stdout)


def test_call_ping_and_lists():
    assert json.loads(call(*GIFT, "ping").stdout) == {}
    tools = json.loads(call(*GIFT, "tools/list").stdout)["tools"]
    assert [t["name"] for t in tools] == ["suggest_gifts", "pick_gift"]


def test_call_resources_read_and_prompts_get():
    out = json.loads(call(*GIFT, "resources/read", json.dumps({"uri": CATALOG})).stdout)
    (content,) = out["contents"]
    assert content["uri"] == CATALOG and content["mimeType"] == "application/json"
    assert len(json.loads(content["text"])["gifts"]) == 20
    out = json.loads(call(*GIFT, "prompts/get", '{"name": "gift_congrats_style", '
                                                '"arguments": {"recipient": "Sam"}}').stdout)
    assert "for Sam." in out["messages"][0]["content"]["text"]


@pytest.mark.parametrize("words, code, message", [
    (["tools/col"], -32601, "Method not found: tools/col"),
    (["suggest_gift", "{}"], -32602, "Unknown tool: 'suggest_gift' (did you mean 'suggest_gifts'?)"),
    (["resources/read", '{"resourceId": "x"}'], -32602, 'found "resourceId": did you mean "uri"?'),
    (["resources/read", '{"uri": "mcp://nope"}'], -32602, "Resource not found: mcp://nope"),
    (["tools/call", '{"tool": "suggest_gifts", "args": {}}'], -32602, 'did you mean "name"?'),
])
@pytest.mark.parametrize("era", [None, "legacy"])
def test_call_protocol_error_exits_1_with_the_code_on_stderr(words, code, message, era):
    if era == "legacy" and "mcp://nope" in words[-1]:
        code = -32002                 # the handshake era's own code for a missing resource
    result = call(*GIFT, *words, code=1, era=era)
    assert result.stdout == ""
    assert result.stderr.startswith(f"error {code}: ") and message in result.stderr
    assert "Traceback" not in result.stderr


def test_call_business_error_is_a_result_and_exits_0():
    result = call(*GIFT, "suggest_gifts", '{"occasion": "wedding", "budget": 5}')
    out = json.loads(result.stdout)
    assert out["isError"] is True and "structuredContent" not in out
    assert out["content"][0]["text"].startswith("No gifts in the catalogue for a wedding within $5")
    bad = json.loads(call(*GIFT, "suggest_gifts", '{"occasion": "birthday", '
                                                  '"budget": "a hundred bucks"}').stdout)
    assert bad["isError"] is True
    assert 'budget: expected number, got string "a hundred bucks"' in bad["content"][0]["text"]


def test_call_help_explains_its_arguments():
    result = cli("call", "--help")
    assert result.returncode == 0
    usage = "usage: mcp_min.py call [options] {-- SERVER_CMD... | URL} METHOD|TOOL [JSON]"
    assert result.stdout.startswith(usage)
    for words in ("SERVER_CMD...  the command that starts the server",
                  "METHOD|TOOL    an MCP method", "the name of a tool to call",
                  "JSON           the method's params, or the tool's arguments",
                  "-v, --verbose", "--era", "mcp_min.py call -- python3 server.py add '{\"a\": 2"):
        assert words in result.stdout, words


def test_call_prints_a_tools_error_text_with_its_newlines_on_stderr():
    """The isError result stays JSON on stdout (its text escaped); its text goes to stderr as
    written, one problem a line."""
    result = call(*GIFT, "suggest_gifts", '{"occasion": "funeral", "budget": "x"}')
    assert json.loads(result.stdout)["isError"] is True
    assert result.stderr.startswith("mcp_min: the tool reported an error:\n"
                                    "Invalid arguments for tool 'suggest_gifts':\n- occasion: ")
    assert '\n- budget: expected number, got string "x"\n' in result.stderr
    assert "\\n" not in result.stderr


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_call_verbose_shows_logs_and_progress_as_they_arrive(era):
    """`call -v`: the server's log messages and progress, on stderr while the tool runs (the
    first long before the result), in both eras; stdout is the result alone."""
    process = subprocess.Popen(
        [sys.executable, MCP_MIN, "call", "-v", "--era", era, "--", *SLOW, "countdown",
         '{"steps": 3, "delay": 0.4}'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=ROOT, env=clean_env())
    start, lines = time.monotonic(), []
    for line in process.stderr:               # (the result is printed after the last one)
        lines.append((time.monotonic() - start, line.rstrip("\n")))
    out = process.stdout.read()
    assert process.wait(30) == 0, lines
    assert [line for _, line in lines] == [
        "progress 1/3: 2 to go", "[info] countdown: step 1 of 3", "progress 2/3: 1 to go",
        "[info] countdown: step 2 of 3", "progress 3/3: 0 to go", "[info] countdown: step 3 of 3"]
    assert lines[-1][0] - lines[0][0] > 0.6, lines    # shown as they came, not at the end
    assert json.loads(out)["content"][0]["text"] == "lift-off after 3 steps"
    process.stdout.close()
    process.stderr.close()


def test_call_print_in_an_mcp_min_tool_goes_to_stderr():
    result = call(sys.executable, str(EXAMPLES / "print_server.py"), "get_weather", '{"city": "Lisbon"}')
    assert json.loads(result.stdout)["content"][0]["text"] == "Sunny, 22°C"
    assert "DEBUG looking up Lisbon" in result.stderr


def test_call_reports_a_server_that_prints_to_stdout():
    result = cli("call", "--", sys.executable, str(EXAMPLES / "naive_server.py"), "get_weather",
                 '{"city": "Lisbon"}')
    assert result.returncode == 1
    assert "DEBUG looking up Lisbon" in result.stderr and "not JSON" in result.stderr


#: A hand-rolled server whose every word is hostile: a line break that would forge a line,
#: a screen-clear, a C1 control sequence introducer; in a log message, a progress message, a
#: line that is not JSON-RPC, a tool's error text and a JSON-RPC error.
HOSTILE = "Paris\nmcp_min ERROR: forged line\n\x1b[2J\x9b31m"
HOSTILE_SERVER = """
import json, sys
HOSTILE = %r

def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    rid, params = message.get("id"), message.get("params") or {}
    if rid is None:
        continue
    if message["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": params["protocolVersion"], "serverInfo": {"name": "h", "version": "1"},
            "capabilities": {"tools": {}, "logging": {}}}})
    elif message["method"] == "tools/call" and params["name"] == "weather":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "warning", "data": HOSTILE}})
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
            "progressToken": params["_meta"]["progressToken"], "progress": 1, "message": HOSTILE}})
        sys.stdout.write("junk " + HOSTILE.replace("\\n", " ") + "\\n")
        send({"jsonrpc": "2.0", "id": rid,
              "result": {"content": [{"type": "text", "text": HOSTILE}], "isError": True}})
    elif message["method"] == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": HOSTILE}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
""" % HOSTILE
ESCAPED = r"Paris\nmcp_min ERROR: forged line\n\x1b[2J\x9b31m"


def test_call_shows_a_servers_text_escaped(tmp_path):
    """What a server sends reaches the terminal with its control characters escaped: all of
    them in a one-line context, all but newline and tab in a tool's error text."""
    server = tmp_path / "hostile.py"
    server.write_text(HOSTILE_SERVER)
    result = cli("call", "-v", "--era", "legacy", "--", sys.executable, server, "weather", "{}")
    assert result.returncode == 1, result.stderr      # 1: the server wrote a line not JSON-RPC
    assert "\x1b" not in result.stderr and "\x9b" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert f"[warning] {ESCAPED}" in lines and f"progress 1: {ESCAPED}" in lines, lines
    junk = ESCAPED.replace(r"\n", " ")
    assert f"mcp_min: the server wrote a line that is not JSON-RPC: junk {junk}" in lines
    assert "mcp_min: the tool reported an error:\nParis\nmcp_min ERROR: forged line\n" \
           r"\x1b[2J\x9b31m" in result.stderr
    error = cli("call", "--era", "legacy", "--", sys.executable, server, "storm", "{}")
    assert error.returncode == 1 and error.stderr == \
        "error -32602: Paris\nmcp_min ERROR: forged line\n" r"\x1b[2J\x9b31m" "\n"


def test_a_trace_shows_a_line_escaped():
    shown = io.StringIO()
    mcp_min.FramePrinter({"in": "S->C"}, shown, colour=False)("in", b"junk \x1b[2J\xc2\x9b\r\n")
    assert shown.getvalue() == "S->C unparsable: junk \\x1b[2J\\x9b\n"


def test_a_trace_escapes_the_method_it_names():
    shown = io.StringIO()
    frame = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x\x1b[2J"}).encode()
    mcp_min.FramePrinter({"in": "C->S"}, shown, colour=False)("in", frame)
    assert "\x1b" not in shown.getvalue()
    assert shown.getvalue().startswith("C->S request 1 x\\x1b[2J: {")


NOT_JSON = ["{bad json", '{"occasion": "birthday", "budget": NaN}', '{"cursor": 1e999}',
            '{"cursor": Infinity}']


@pytest.mark.parametrize("args", [
    ["call", "--", *GIFT, "suggest_gifts", NOT_JSON[0]],
    ["call", "--", *GIFT, "suggest_gifts", NOT_JSON[1]],
    ["call", "--", *GIFT, "tools/list", NOT_JSON[2]],
    ["call", "--", *GIFT, "tools/list", NOT_JSON[3]],
    ["call", "-v", "--", *GIFT, "tools/list", '{"_meta": 5}'],
    ["call", "--", "no-such-command-mcp-min", "ping"],
    ["call", "--", sys.executable, "-c", "import sys; sys.exit(3)", "ping"],
    ["inspect"],
    ["inspect", "--", "no-such-command-mcp-min"],
    ["serve", "no-such-file.py"],
    ["serve", "examples/gift_server.py:no_such_name"],
    ["serve", "--http", "notaport"],
    ["serve", "--http", "99999"],
], ids=["bad-json", "nan", "1e999", "infinity", "meta-not-an-object", "not-found",
        "server-exits", "inspect-no-server", "inspect-not-found", "serve-no-file",
        "serve-no-name", "http-not-an-address", "http-not-a-port"])
def test_cli_failures_are_one_line_not_a_traceback(args):
    result = cli(*args)
    assert result.returncode in (1, 2)
    assert "Traceback" not in result.stderr and result.stderr.strip()
    assert ("not valid JSON" in result.stderr) == (args[-1] in NOT_JSON)


@pytest.mark.parametrize("kind", ["not-executable", "directory"])
def test_a_server_command_that_cannot_start_is_one_line_saying_why(tmp_path, kind):
    target = tmp_path
    if kind == "not-executable":
        target = tmp_path / "server.py"
        target.write_text("print('never run')\n")
        target.chmod(0o644)
    for command in ("call", "inspect"):
        result = cli(command, "--", target, *(["ping"] if command == "call" else []))
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith(f"mcp_min: cannot start {str(target)!r}: ")
        hint = "it is not executable" if kind == "not-executable" else "it is a directory"
        assert hint in result.stderr and len(result.stderr.splitlines()) == 1


def test_serve_http_on_a_port_in_use_is_one_line():
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("serve", "--http", f"127.0.0.1:{port}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == (f"mcp_min: cannot serve on 127.0.0.1:{port}: "
                                              "Address already in use")


@pytest.mark.parametrize("args, said", [
    (["call", "--", sys.executable, "todo.py"], "looks like the server's command"),
    (["call", "--", sys.executable], "name a method or a tool after the server command"),
    (["call", "--", *GIFT, "suggest_gifts", "[1, 2]"], "must be a JSON object"),
    (["call", "--", *GIFT, "tools/list", '{"_meta": 5}'], "params._meta must be an object"),
    (["call", "--", *GIFT, "tools/list", "{bad"], "not valid JSON"),
    (["demo", "--era", "auto"], "--era auto is for your own server"),
    (["repl"], "repl needs a server command or URL"),
    (["call", "--header", "X-Token", "--", *GIFT, "ping"], "--header takes 'NAME: VALUE'"),
], ids=["a-script-for-a-tool", "no-tool", "json-not-an-object", "meta-not-an-object",
        "bad-json", "demo-era-auto", "repl-no-server", "header-without-colon"])
def test_usage_errors_exit_2_saying_what_is_wrong(args, said):
    result = cli(*args)
    assert result.returncode == 2 and said in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


# ============================================================================================
# repl
# ============================================================================================

REPL_SESSION = [
    "init",
    "tools",
    '{"jsonrpc":"2.0","id":"raw-1","method":"ping"}',
    '{"jsonrpc":"2.0","id":"bad","method":"tools/call","params":{"tool":"wait","args":{}}}',
    'call countdown {"steps": 3, "delay": 0.05}',
    'call plan_party {"guest": "Sam"}',
    "decline",                                # the answer to its question to the user
    "ping",
    "hello there",
    "quit",
    "ping",                                   # after quit: never sent
]


@pytest.fixture(scope="module")
def repl_session():
    """The session typed into the repl: `init`, then (once the handshake is done) the rest
    as fast as it can read it."""
    repl = Repl(*SLOW)
    try:
        repl.type(REPL_SESSION[0])
        repl.expect(r"^C->S notification notifications/initialized: ")
        for line in REPL_SESSION[1:]:
            repl.type(line)
        code, out, err = repl.finish()
    finally:
        repl.close()
    assert code == 0, err
    return subprocess.CompletedProcess(repl.proc.args, code, out + "\n", err)


def test_repl_greets_and_shows_frames_in_both_directions(repl_session):
    out = repl_session.stdout
    assert out.startswith("mcp_min repl: type a JSON line, or: init (the handshake) or "
                          "discover (2026-07-28), tools")
    found = frames(out)
    assert {f.direction for f in found} == {"C->S", "S->C"}
    assert (found[0].direction, found[0].method, found[0].id) == ("C->S", "initialize", 1)
    caps = found[0].message["params"]["capabilities"]
    assert set(caps) == {"roots", "sampling", "elicitation"}     # the repl answers all three
    assert found[2].method == "notifications/initialized"
    assert "\x1b[" not in out and repl_session.stderr == ""


def test_repl_sends_raw_json_lines_verbatim(repl_session):
    out = repl_session.stdout
    assert f"C->S request \"raw-1\" ping: {REPL_SESSION[2]}\n" in out
    assert re.search(r'^S->C response "raw-1"( ping)?: \{"jsonrpc":"2.0","id":"raw-1","result":\{\}\}$',
                     out, re.M)
    found = frames(out)
    bad = found[find(found, direction="S->C", id="bad")]
    assert bad.kind == "error" and bad.message["error"]["code"] == -32602
    assert 'did you mean "name"?' in bad.message["error"]["message"]


def test_repl_short_commands(repl_session):
    found = frames(repl_session.stdout)
    i = find(found, direction="C->S", method="tools/list")
    tools = found[find(found, i, direction="S->C", id=found[i].id)].message["result"]["tools"]
    assert [t["name"] for t in tools] == ["wait", "countdown", "plan_party"]
    i = find(found, i, direction="C->S", method="ping", where=lambda f: isinstance(f.id, int))
    assert found[find(found, i, direction="S->C", id=found[i].id)].message["result"] == {}
    assert check_correlation(found) == {}
    # `quit` ends the session: the ping typed after it is never sent
    assert [f.id for f in found if f.method == "ping"] == ["raw-1", found[i].id]


def test_repl_shows_progress_and_log_notifications(repl_session):
    found = frames(repl_session.stdout)
    i = find(found, direction="C->S", method="tools/call", where=calling("countdown"))
    token = found[i].message["params"]["_meta"]["progressToken"]
    end = find(found, i, direction="S->C", id=found[i].id)
    between = found[i + 1:end]
    progress = [f.message["params"] for f in between if f.method == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == \
        [(token, 1, 3), (token, 2, 3), (token, 3, 3)]
    logs = [f.message["params"] for f in between if f.method == "notifications/message"]
    assert [(p["level"], p["data"]) for p in logs] == \
        [("info", f"countdown: step {n} of 3") for n in (1, 2, 3)]
    assert all(f.direction == "S->C" and f.kind == "notification" for f in between)
    assert found[end].message["result"]["content"][0]["text"] == "lift-off after 3 steps"


def test_repl_answers_server_to_client_requests(repl_session):
    found = frames(repl_session.stdout)
    i = find(found, direction="C->S", method="tools/call", where=calling("plan_party"))
    answers = {}
    for method in ("roots/list", "elicitation/create", "sampling/createMessage"):
        j = find(found, i, direction="S->C", kind="request", method=method)
        k = find(found, j, direction="C->S", kind="response", id=found[j].id)
        answers[method] = found[k].message["result"]
    assert answers["roots/list"] == {"roots": [{"uri": "file://" + str(ROOT), "name": "cwd"}]}
    assert answers["elicitation/create"] == {"action": "decline"}
    assert answers["sampling/createMessage"]["content"] == {"type": "text", "text": "(a sampled reply)"}
    final = found[find(found, i, direction="S->C", kind="response", id=found[i].id)]
    assert "theme '(a sampled reply)'" in final.message["result"]["content"][0]["text"]
    # the server numbers its own requests: its ids 1, 2, 3 are not the client's 1, 2, 3
    server_ids = [f.id for f in found if f.direction == "S->C" and f.kind == "request"]
    assert server_ids == [1, 2, 3]


def test_repl_sends_garbage_verbatim_and_shows_the_parse_error(repl_session):
    out = repl_session.stdout
    assert "C->S unparsable: hello there\n" in out
    found = frames(out)
    error = found[find(found, direction="S->C", kind="error", id=None)]
    assert error.message["error"]["code"] == -32700 and "id" not in error.message


class Repl:
    """An interactive repl session: type a line, wait for a line of output."""

    def __init__(self, *command):
        self.proc = subprocess.Popen([sys.executable, MCP_MIN, "repl", "--", *command],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1, cwd=ROOT,
                                     env=clean_env())
        self.seen, self.lines = [], queue.Queue()
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def type(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, pattern, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{pattern!r} not seen; output so far:\n" +
                                     "\n".join(self.seen)) from None
            if line is None:
                raise AssertionError(f"repl ended before {pattern!r}:\n" + "\n".join(self.seen))
            self.seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def finish(self, timeout=15):
        self.proc.stdin.close()
        code = self.proc.wait(timeout)
        while (line := self.lines.get(timeout=timeout)) is not None:
            self.seen.append(line)
        return code, "\n".join(self.seen), self.proc.stderr.read()

    def close(self):
        """Kill the repl if it still runs, and close our ends of its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.pump.join(5)                     # reads stdout to the end first
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


def test_repl_init_completes_the_handshake_before_the_next_line():
    slow_start = [sys.executable, "-c", "import runpy, time; time.sleep(0.6); "
                  "runpy.run_path('examples/slow_server.py', run_name='__main__')"]
    result = cli("repl", "--", *slow_start, input='init\ncall wait {"seconds": 0, "label": "x"}\n')
    assert result.returncode == 0
    kinds = [(f.direction, f.kind, f.method) for f in frames(result.stdout) if f.direction == "C->S"]
    assert kinds == [("C->S", "request", "initialize"),
                     ("C->S", "notification", "notifications/initialized"),
                     ("C->S", "request", "tools/call")]


def test_repl_cancel_stops_a_slow_tool():
    repl = Repl(*SLOW)
    try:
        repl.type("init")
        repl.expect(r"^C->S notification notifications/initialized: ")
        repl.type('call countdown {"steps": 100, "delay": 0.05}')
        rid = repl.expect(r"^C->S request (\d+) tools/call: ")[1]
        repl.expect(r"^S->C notification notifications/progress: .*\"progress\":2,")
        repl.type(f"cancel {rid}")
        line = repl.expect(r"^C->S notification notifications/cancelled: ")
        assert json.loads(line.string.split(": ", 1)[1])["params"] == {"requestId": int(rid)}
        time.sleep(0.5)                                  # let frames already in flight land
        repl.type("ping")
        ping = repl.expect(r"^C->S request (\d+) ping: ")[1]
        repl.expect(rf"^S->C response {ping}[ :]")
        time.sleep(0.3)
        code, out, err = repl.finish()
    finally:
        repl.close()
    assert code == 0
    tail = out[out.index(f"C->S request {ping} ping"):]
    assert "notifications/progress" not in tail         # the tool stopped
    assert not re.search(rf"^S->C (response|error) {rid}[ :]", out, re.M)   # and no reply
    progress = [json.loads(f.body)["params"]["progress"] for f in frames(out)
                if f.method == "notifications/progress"]
    assert 2 <= len(progress) < 50


def test_repl_cancel_forgets_the_pending_request(monkeypatch, capsys):
    clients = []

    class Recording(Client):
        def __init__(self, *args, **kwargs):
            clients.append(self)
            super().__init__(*args, **kwargs)

    def wait_for(condition, timeout=10):
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.02)

    still_pending = []

    def typed():
        yield "init\n"
        wait_for(lambda: clients and clients[0].server_info)
        yield 'call countdown {"steps": 200, "delay": 0.05}\n'
        wait_for(lambda: clients[0].pending)
        (rid,) = clients[0].pending
        yield f"cancel {rid}\n"
        time.sleep(0.5)
        still_pending.append(rid in clients[0].pending)
        yield "quit\n"

    monkeypatch.setattr(mcp_min, "Client", Recording)
    assert mcp_min.repl(SLOW, stdin=typed()) == 0
    assert "notifications/cancelled" in capsys.readouterr().out
    assert still_pending == [False]


# ============================================================================================
# explain
# ============================================================================================

EXPLAIN = [
    # (message, exit code, summary line, text every problem line together must contain)
    ('{"jsonrpc":"2.0","id":5,"method":"notifications/initialized"}', 1,
     "request 5 notifications/initialized", "is a notification: it must not carry an id"),
    ('{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32603,"message":"x"}}', 1,
     "invalid message", "a response carries result or error, never both"),
    ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"tool":"suggest_gifts",'
     '"args":{"occasion":"birthday","budget":100}}}', 1,
     "request 3 tools/call", 'params.name is missing (found "tool": did you mean "name"?)'),
    ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"tool":"suggest_gifts",'
     '"args":{"occasion":"birthday","budget":100}}}', 1,
     "request 3 tools/call", 'params.arguments is missing (found "args": did you mean "arguments"?)'),
    ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"toolName":"x","arguments":{}}}', 1,
     "request 2 tools/call", 'found "toolName": did you mean "name"?'),
    ('{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"resourceId":"' + CATALOG + '"}}', 1,
     "request 4 resources/read", 'params.uri is missing (found "resourceId": did you mean "uri"?)'),
    ('{"jsonrpc":"2.0","id":null,"method":"tools/list"}', 1,
     "invalid message", "a null id is not allowed in MCP"),
    ('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]', 1,
     "a batch of 2", "a JSON array is a batch: only protocol 2025-03-26 has batches"),
    ('{"jsonrpc":"2.0","method":"tools/list_changed","params":{"reason":"added"}}', 1,
     "notification tools/list_changed", "did you mean 'notifications/tools/list_changed'?"),
    ('{"jsonrpc":"2.0","method":"notifications/logging/message","params":{}}', 1,
     "notification notifications/logging/message", "did you mean 'notifications/message'?"),
    ('{"jsonrpc":"2.0","method":"tools/list"}', 1,
     "notification tools/list", "tools/list is a request: without an id it is a notification"),
    ('{"id":1,"method":"ping"}', 1, "invalid message", '"jsonrpc" must be "2.0"'),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list"', 1, "not JSON", "-32700 Parse error"),
    ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"suggest_gifts",'
     '"arguments":{"occasion":"birthday","budget":100}}}', 0, "request 7 tools/call", None),
    ('{"jsonrpc":"2.0","method":"notifications/initialized"}', 0,
     "notification notifications/initialized", None),
    ('{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"Sunny, 22°C"}]}}', 0,
     'response "abc"', None),
    ('{"jsonrpc":"2.0","id":99,"error":{"code":-32601,"message":"Method not found: tools/col"}}', 0,
     "error 99 -32601 (a protocol error)", None),
    ('{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"none"}],"isError":true}}', 0,
     "response 2 (a tool result with isError: a business error, not a protocol error)", None),
    ('{"jsonrpc":"2.0","id":"x (isError)","result":{}}', 0, 'response "x (isError)"', None),
    # params of the wrong shape: what a server answers -32602 for
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":"{}"}}', 1,
     "request 1 tools/call",
     'params.arguments must be an object, not string "{}": a server answers -32602'),
    ('{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":["a"]}}', 1,
     "request 1 resources/read", 'params.uri must be a string, not array ["a"]'),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}', 1,
     "request 1 tools/list", "params.cursor must be a string or null, not integer 5"),
    ('{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}', 1,
     "request 1 logging/setLevel", 'params.level must be one of debug, info'),
    ('{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"n":2}}}',
     1, "request 1 prompts/get", "params.arguments.n must be a string"),
    ('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}', 1,
     "notification notifications/cancelled",
     "params.requestId must be a string or an integer, not number 1.5: a receiver ignores it"),
    ('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1.5,'
     '"progress":2}}', 0, "notification notifications/progress", None),
    # the shapes of MCP: a method with a result or error; results that are not objects;
    # content that is not a list of blocks; blocks of no known type
    ('{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_weather"},'
     '"result":{"content":[]}}', 1, "request 10 tools/call",
     "a message has a method (a request or notification) or a result or error (a response), "
     "never both: a response does not repeat the method"),
    ('{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"w"},'
     '"error":{"code":-32601,"message":"x"}}', 1, "request 10 tools/call", "never both"),
    ('{"jsonrpc":"2.0","id":10,"result":"Sunny, 22°C"}', 1, "response 10",
     'result must be an object, not string "Sunny, 22°C": every MCP result is one, as a '
     'tool\'s: {"content": [{"type": "text", "text": "Sunny, 22°C"}]}'),
    ('{"jsonrpc":"2.0","id":10,"result":[]}', 1, "response 10",
     "result must be an object, not array []"),
    ('{"jsonrpc":"2.0","id":10,"result":{"content":"Sunny"}}', 1, "response 10",
     'result.content must be a list of content blocks, as in {"content": [{"type": "text", '
     '"text": "Sunny, 22°C"}]}, not string "Sunny"'),
    ('{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"txt","text":"Sunny"}]}}', 1,
     "response 10", 'result.content[0] must be a content block, an object whose type is text, '
     'image, audio, resource_link, resource; not object {"type": "txt", "text": "Sunny"} '
     "(did you mean 'text'?)"),
    ('{"jsonrpc":"2.0","id":10,"result":{"content":["Sunny"]}}', 1, "response 10",
     'result.content[0] must be a content block'),
    # an elicitation's answer holds its content as an object
    ('{"jsonrpc":"2.0","id":2,"result":{"action":"accept","content":{"people":3}}}', 0,
     "response 2", None),
    ('{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"image","data":"","mimeType":'
     '"image/png"},{"type":"resource_link","uri":"a:b","name":"b"}]}}', 0, "response 2", None),
    ('{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{"messages":[],'
     '"maxTokens":"100"}}', 1, "request 2 sampling/createMessage",
     'params.maxTokens must be an integer, not string "100": a client answers -32602'),
]


@pytest.mark.parametrize("message, code, summary, problem", EXPLAIN,
                         ids=[f"{i}-{s.split(' (')[0]}" for i, (_, _, s, _) in enumerate(EXPLAIN)])
def test_explain(message, code, summary, problem):
    result = cli("explain", message)
    assert result.returncode == code and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == summary
    if problem is None:
        assert lines[1:] == ["  no problems found"]
    else:
        assert lines[1:] and all(line.startswith("  problem: ") for line in lines[1:])
        assert problem in result.stdout
    assert "\x1b[" not in result.stdout


def test_explain_reads_the_tutorials_pretty_printed_json():
    message = """{
  "jsonrpc": "2.0",
  "id": 3,
  "method": "tools/call",
  "params": {
    "tool": "suggest_gifts",
    "args": {
      "occasion": "birthday",
      "budget": 100
    }
  }
}"""
    result = cli("explain", message)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == "request 3 tools/call"
    assert 'did you mean "name"?' in result.stdout


def test_explain_dash_reads_the_message_from_standard_input():
    message = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":"{}"}}'
    result = cli("explain", "-", input=message)
    assert result.returncode == 1 and result.stdout.splitlines()[0] == "request 1 tools/call"
    assert "params.arguments must be an object" in result.stdout


def test_explain_needs_a_message():
    result = cli("explain")
    assert result.returncode == 2 and "required: message" in result.stderr


def test_no_command_prints_help_and_exits_2():
    result = cli()
    assert result.returncode == 2 and result.stdout == ""
    for command in ("serve", "demo", "inspect", "call", "repl", "explain"):
        assert re.search(rf"^\s+{command}\s", result.stderr, re.M), command


# ============================================================================================
# serve --trace: the server's own trace uses the same frame formatting, on stderr
# ============================================================================================

TRACED_SESSION = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "pytest", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
     "params": {"name": "suggest_gifts", "arguments": {"occasion": "wedding", "budget": 5}}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/col"},
]
TRACED_INPUT = "".join(json.dumps(m, separators=(",", ":")) + "\n" for m in TRACED_SESSION) + "garbage\n"


def check_trace(stdout, stderr):
    sent = [line for line in TRACED_INPUT.splitlines()]
    written = stdout.splitlines()
    trace = frames(stderr, directions=("->", "<-", "C->S", "S->C"))
    incoming = [f.body for f in trace if f.direction in ("<-", "C->S")]
    outgoing = [f.body for f in trace if f.direction in ("->", "S->C")]
    assert incoming == sent                       # every frame read, verbatim, in order
    assert outgoing == written                    # every frame written, byte for byte
    def kinds(direction):                        # what frames() checked each label against
        return [expected_label(f.message) if f.message is not None else f.label
                for f in trace if f.direction in direction]
    assert kinds(("<-", "C->S")) == ["request 1 initialize", "notification notifications/initialized",
                                     "request 2 tools/call", "request 3 tools/col", "unparsable"]
    # tools/call runs on a worker thread, so its reply may come after later ones
    assert sorted(kinds(("->", "S->C"))) == ["error (no id) -32700", "error 3 -32601",
                                             "response 1", "response 2"]
    return trace


def test_serve_trace_formats_frames_like_the_cli_on_stderr():
    result = cli("serve", "--trace", EXAMPLES / "gift_server.py", input=TRACED_INPUT)
    assert result.returncode == 0
    check_trace(result.stdout, result.stderr)
    assert "\x1b[" not in result.stderr
    replies = {m.get("id"): m for m in map(json.loads, result.stdout.splitlines())}
    assert replies[2]["result"]["isError"] is True


def test_trace_environment_switch_is_the_same_trace():
    result = subprocess.run([sys.executable, str(EXAMPLES / "gift_server.py")], input=TRACED_INPUT,
                            capture_output=True, text=True, timeout=30, cwd=ROOT,
                            env=clean_env(MCP_MIN_TRACE="1"))
    assert result.returncode == 0
    check_trace(result.stdout, result.stderr)


def test_serve_trace_in_colour_when_stderr_is_a_terminal():
    code, err, out = on_pty([sys.executable, MCP_MIN, "serve", "--trace",
                             str(EXAMPLES / "gift_server.py")], stream="stderr", input=TRACED_INPUT)
    assert code == 0
    assert "\x1b[36mrequest 1 initialize\x1b[0m" in err
    assert re.search(r"\x1b\[31merror 3 -32601( [^\x1b]*)?\x1b\[0m", err)
    assert "\x1b[" not in out and len(out.splitlines()) == 4     # the wire stays plain


def test_serve_trace_uses_the_clis_direction_labels():
    result = cli("serve", "--trace", EXAMPLES / "gift_server.py", input=TRACED_INPUT)
    trace = frames(result.stderr, directions=("->", "<-", "C->S", "S->C"))
    assert [f.direction for f in trace][:2] == ["C->S", "S->C"]


# ============================================================================================
# Client(server): the same JSON-RPC core, in memory, as the test client for your servers
# ============================================================================================

def make_server():
    server = Server("client-test", "2.0.0", instructions="For the Client tests.")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    def steps(n: int, ctx: Context) -> str:
        """Report progress and log at every step."""
        for i in range(1, n + 1):
            ctx.report_progress(i, total=n)
            ctx.info(f"step {i}")
            ctx.debug(f"debug {i}")
        return "done"

    @server.tool
    def refuse() -> str:
        """Always a business error."""
        raise ToolError("no, thank you")

    @server.tool
    def ask(ctx: Context) -> dict:
        """Ask the client for roots, a user answer and a model completion."""
        return {"roots": ctx.list_roots(),
                "user": ctx.elicit("Name?", {"type": "object",
                                             "properties": {"name": {"type": "string"}}}),
                "model": ctx.sample("Say hi", max_tokens=5, system_prompt="Be brief")}

    @server.resource("test://notes/{name}", mime_type="text/plain")
    def note(name: str) -> str:
        return f"note {name}"

    @server.prompt
    def greet(name: str, style: str = "warm") -> str:
        """A greeting."""
        return f"Write a {style} greeting for {name}."

    @server.completion("style", prompt="greet")
    def styles(value, arguments):
        return [s for s in ("warm", "wacky", "formal") if s.startswith(value)]

    return server


def test_client_handshake_and_discovery():
    with Client(make_server(), timeout=5) as client:
        assert client.server_info == {"name": "client-test", "version": "2.0.0"}
        assert client.protocol_version == mcp_min.LATEST_PROTOCOL_VERSION
        assert client.instructions == "For the Client tests."
        assert set(client.server_capabilities) >= {"tools", "resources", "prompts", "completions"}
        tools = {t["name"]: t for t in client.list_tools()}
        assert set(tools) == {"add", "steps", "refuse", "ask"}
        assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
        assert client.list_resources() == []
        assert [t["uriTemplate"] for t in client.list_resource_templates()] == ["test://notes/{name}"]
        assert [p["name"] for p in client.list_prompts()] == ["greet"]
        assert client.ping() == {}


def test_client_calls_reads_gets_and_completes():
    with Client(make_server(), timeout=5) as client:
        result = client.call_tool("add", {"a": 2, "b": 3})
        assert result["content"][0]["text"] == "5" and result["isError"] is False
        refused = client.call_tool("refuse")
        assert refused["isError"] is True and refused["content"][0]["text"] == "no, thank you"
        assert client.read_resource("test://notes/todo")["contents"] == [
            {"uri": "test://notes/todo", "mimeType": "text/plain", "text": "note todo"}]
        prompt = client.get_prompt("greet", {"name": "Sam"})
        assert prompt["messages"][0]["content"]["text"] == "Write a warm greeting for Sam."
        assert client.complete({"type": "ref/prompt", "name": "greet"}, "style", "w")["values"] == \
            ["warm", "wacky"]
        with pytest.raises(JSONRPCError) as error:
            client.call_tool("nope")
        assert error.value.code == -32602
        with pytest.raises(JSONRPCError) as error:
            client.read_resource("test://other")
        assert error.value.code == -32002


def test_client_receives_progress_and_log_notifications():
    seen = []
    with Client(make_server(), timeout=5, on_notification=seen.append) as client:
        progress = []
        assert client.call_tool("steps", {"n": 3}, progress=progress.append)["content"][0]["text"] == "done"
        assert [(p["progress"], p["total"]) for p in progress] == [(1, 3), (2, 3), (3, 3)]
        logs = [n["params"]["data"] for n in client.notifications if n["method"] == "notifications/message"]
        assert logs == ["step 1", "step 2", "step 3"]     # debug is below the default level
        client.set_logging_level("debug")
        client.call_tool("steps", {"n": 1})
        logs = [n["params"]["data"] for n in client.notifications if n["method"] == "notifications/message"]
        assert logs[3:] == ["step 1", "debug 1"]
    assert seen == client.notifications and len(seen) == 3 + 3 + 2


def open_fds():
    """This process's open file descriptors (where /proc lists them)."""
    return set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()


def test_a_line_over_the_clients_limit_is_an_error_not_a_wait():
    """The client never holds a line over ``max_line_bytes`` (64 MiB by default): the call it
    answers fails, saying so."""
    server = Server("big")

    @server.tool
    def big(size: int) -> str:
        return "x" * size

    with Client(server, max_line_bytes=1 << 16, timeout=10) as client:
        assert client.max_line_bytes == 1 << 16
        with pytest.raises(JSONRPCError) as e:
            client.call_tool("big", {"size": 1 << 17})
        assert e.value.code == -32600 and "over the limit of 65536 bytes" in e.value.message
        assert client.call_tool("big", {"size": 10})["content"][0]["text"] == "x" * 10
    with Client(server, initialize=False) as idle:
        assert idle.max_line_bytes == 64 << 20


def test_in_memory_client_closes_its_end_of_the_pipe():
    """Client(server) reads the server's replies from an OS pipe; closing the client closes
    it, instead of leaving it to the garbage collector (ResourceWarning: unclosed file)."""
    before = open_fds()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Client(make_server(), timeout=5) as client:
            assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
    assert open_fds() <= before


def test_client_close_racing_a_send_never_breaks_the_send():
    """close() may come while a frame is being written and another waits its turn: the waiting
    send then either goes out before the close or reports False; it never writes to a wire
    that close() already gave up."""
    client = Client(make_server(), timeout=5)
    outcome = []

    def send():
        try:
            outcome.append(client.notify("notifications/roots/list_changed"))
        except Exception as e:            # a TypeError when the descriptor went while it waited
            outcome.append(e)

    client.stream.lock.acquire()           # a frame is being written...
    sender = threading.Thread(target=send)
    sender.start()                        # ...so this send has checked the wire and waits
    time.sleep(0.1)
    closer = threading.Thread(target=client.close)
    closer.start()
    time.sleep(0.1)
    client.stream.lock.release()
    sender.join(5)
    closer.join(10)
    assert outcome in ([True], [False]) and not closer.is_alive()
    assert client.notify("notifications/roots/list_changed") is False


STOPS_READING = """
import json, sys, time
for expected in ("initialize", "notifications/initialized"):
    message = json.loads(sys.stdin.readline())
    if expected == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": message["params"]["protocolVersion"], "capabilities": {},
            "serverInfo": {"name": "deaf", "version": "1"}}}), flush=True)
time.sleep(60)                            # and never reads again
"""


def test_client_close_keeps_its_timeout_when_a_send_is_stuck(tmp_path):
    """A send stuck on a server that stopped reading holds the write lock; close(timeout)
    gives up waiting for it after the timeout and stops the server, instead of hanging."""
    script = tmp_path / "deaf.py"
    script.write_text(STOPS_READING)
    client = Client([sys.executable, str(script)], timeout=5)
    big = {"blob": "x" * (1 << 20)}
    stuck = threading.Thread(target=lambda: [client.notify("notifications/big", big) for _ in range(8)],
                             daemon=True)
    stuck.start()
    deadline = time.monotonic() + 5
    while not client.stream.lock.locked() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert client.stream.lock.locked()      # the pipe is full: the send waits inside the lock
    closer = threading.Thread(target=client.close, kwargs={"timeout": 0.5}, daemon=True)
    started = time.monotonic()
    closer.start()
    closer.join(10)
    assert not closer.is_alive(), "close() hung behind the stuck send"
    assert client.process.poll() is not None and time.monotonic() - started < 5
    stuck.join(5)
    assert not stuck.is_alive()            # the stuck send ended when the server went away


def test_client_receives_list_changed():
    server = make_server()
    with Client(server, timeout=5) as client:
        server.tool(lambda: "new", name="late")
        deadline = time.monotonic() + 5
        while not client.notifications and time.monotonic() < deadline:
            time.sleep(0.01)
        assert client.notifications == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
        assert "late" in {t["name"] for t in client.list_tools()}


def test_client_answers_sampling_elicitation_and_roots_through_callbacks():
    asked = {}

    def sampling(params):
        asked["sampling"] = params
        return {"role": "assistant", "model": "test", "content": {"type": "text", "text": "hi"}}

    def elicitation(params):
        asked["elicitation"] = params
        return {"action": "accept", "content": {"name": "Sam"}}

    with Client(make_server(), timeout=5, sampling=sampling, elicitation=elicitation,
                roots=lambda: [{"uri": "file:///work", "name": "work"}]) as client:
        assert client.capabilities == {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}
        result = client.call_tool("ask")
    assert result["isError"] is False, result
    out = result["structuredContent"]
    assert out["roots"] == [{"uri": "file:///work", "name": "work"}]
    assert out["user"] == {"action": "accept", "content": {"name": "Sam"}}
    assert out["model"]["content"]["text"] == "hi"
    assert asked["sampling"]["messages"] == [{"role": "user", "content": {"type": "text", "text": "Say hi"}}]
    assert asked["sampling"]["maxTokens"] == 5 and asked["sampling"]["systemPrompt"] == "Be brief"
    assert asked["elicitation"]["message"] == "Name?"
    assert asked["elicitation"]["requestedSchema"]["properties"] == {"name": {"type": "string"}}


def test_client_without_callbacks_declares_nothing_and_the_tool_says_so():
    with Client(make_server(), timeout=5) as client:
        assert client.capabilities == {}
        result = client.call_tool("ask")
    assert result["isError"] is True
    assert "did not declare the 'roots' capability" in result["content"][0]["text"]


def test_client_callback_errors_reach_the_server_as_errors():
    def sampling(params):
        raise JSONRPCError(-1, "User rejected sampling request")

    with Client(make_server(), timeout=5, sampling=sampling, elicitation=lambda p: {"action": "cancel"},
                roots=lambda: []) as client:
        result = client.call_tool("ask")
    assert result["isError"] is True and "User rejected sampling request" in result["content"][0]["text"]


def test_client_callback_answers_that_are_not_json_still_reach_the_server():
    """An error whose data is not JSON goes out without its data, and a result that is not
    JSON as an internal error, rather than nothing (the tool would wait for its answer)."""
    def sampling(params):
        raise JSONRPCError(-1, "User rejected sampling request", data={"when": object()})

    accept = {"action": "accept", "content": {"name": "Sam"}}
    with Client(make_server(), timeout=5, sampling=sampling, elicitation=lambda p: accept,
                roots=lambda: []) as client:
        result = client.call_tool("ask")
    assert result["isError"] is True and "User rejected sampling request" in result["content"][0]["text"]
    strange = {"action": "accept", "content": {"name": object()}}
    with Client(make_server(), timeout=5, elicitation=lambda p: strange,
                roots=lambda: []) as client:
        result = client.call_tool("ask")
    assert result["isError"] is True and "is not JSON serializable" in result["content"][0]["text"]


def test_client_trace_sees_every_frame_both_ways():
    out = io.StringIO()
    printer = mcp_min.FramePrinter({"out": "C->S", "in": "S->C"}, out, colour=False)
    with Client(make_server(), timeout=5, trace=printer) as client:
        client.call_tool("add", {"a": 1, "b": 1})
    found = frames(out.getvalue())
    assert [(f.direction, f.kind, f.method) for f in found] == [
        ("C->S", "request", "initialize"), ("S->C", "response", None),
        ("C->S", "notification", "notifications/initialized"),
        ("C->S", "request", "tools/call"), ("S->C", "response", None)]


def test_client_over_a_subprocess():
    with Client(GIFT, timeout=10, stderr=subprocess.DEVNULL) as client:
        assert client.server_info["name"] == "gift-server"
        out = client.call_tool("suggest_gifts", {"occasion": "housewarming", "budget": 30})
        assert [g["name"] for g in out["structuredContent"]["gifts"]] == [
            "Houseplant in a ceramic pot", "Specialty coffee sampler"]
    assert client.process.returncode == 0                  # closing stdin ended the server


# ============================================================================================
# Both eras from the command line
# ============================================================================================

def test_call_speaks_2026_07_28_by_default_and_the_handshake_when_asked():
    modern = json.loads(call(*GIFT, "suggest_gifts", json.dumps(BIRTHDAY)).stdout)
    assert modern["resultType"] == "complete"
    assert modern["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "gift-server"
    legacy = json.loads(call(*GIFT, "suggest_gifts", json.dumps(BIRTHDAY), era="legacy").stdout)
    assert "resultType" not in legacy and "_meta" not in legacy
    assert legacy["structuredContent"] == modern["structuredContent"]


def test_call_ping_uses_the_handshake_ping_exists_only_there():
    assert json.loads(call(*GIFT, "ping").stdout) == {}
    refused = call(*GIFT, "ping", era="2026-07-28", code=1)
    assert refused.stderr.startswith("error -32601: Method not found: ping")


def test_call_a_tool_that_asks_without_callbacks_gets_32021():
    everything = [sys.executable, str(ROOT / "tests" / "servers" / "everything.py")]
    result = call(*everything, "ask_user", code=1)
    assert "error -32021: Missing client capability" in result.stderr
    legacy = json.loads(call(*everything, "ask_user", era="legacy").stdout)
    assert legacy["isError"] is True and "'elicitation' capability" in legacy["content"][0]["text"]


@pytest.mark.parametrize("answer, sent", [
    ('accept {"people": 12}', '{"action":"accept","content":{"people":12}}'),
    ("decline", '{"action":"decline"}'),
    ("cancel", '{"action":"cancel"}'),
    (None, '{"action":"decline"}'),                      # no answer before quit: decline
])
def test_repl_lets_the_user_answer_a_question(answer, sent):
    typed = ["init", 'call plan_party {"guest": "Sam"}', *([answer] if answer else [])]
    result = subprocess.run([sys.executable, MCP_MIN, "repl", "--", *SLOW],
                            input="\n".join(typed) + "\n", capture_output=True, text=True,
                            timeout=30, cwd=ROOT, env=clean_env())
    assert result.returncode == 0 and result.stderr == "", result.stderr
    out = result.stdout
    assert "? How many people are coming to Sam's party? (accept {...}, decline or cancel)" \
        in out
    assert re.search(r"^C->S response 2 elicitation/create: .*\"result\":" + re.escape(sent),
                     out, re.M), out
    if answer and answer.startswith("accept"):
        assert "Party for Sam: 12 people" in out and "the user chose to accept" in out


def test_repl_offers_no_method_the_era_lacks():
    result = subprocess.run([sys.executable, MCP_MIN, "repl", "--", *GIFT],
                            input="ping\ndiscover\nping\nhelp\nlisten\n", capture_output=True,
                            text=True, timeout=30, cwd=ROOT, env=clean_env())
    assert result.returncode == 0 and result.stderr == "", result.stderr
    sent = [line.split(":")[0] for line in result.stdout.splitlines()
            if line.startswith("C->S")]
    # before an era is chosen, ping goes out (and is answered: "send initialize first")
    assert sent[:2] == ["C->S request 1 ping", "C->S request 2 server/discover"]
    assert sent.count("C->S request 1 ping") == 1 and not any(" ping" in s for s in sent[2:])
    assert "! ping: not part of protocol 2026-07-28, which this session speaks" in result.stdout
    assert 'C->S request "listen-3" subscriptions/listen' in sent
    handshake = subprocess.run([sys.executable, MCP_MIN, "repl", "--", *GIFT],
                               input="init\nlisten\nping\n", capture_output=True, text=True,
                               timeout=30, cwd=ROOT, env=clean_env())
    assert "! listen: not part of protocol 2025-11-25" in handshake.stdout
    assert "subscriptions/listen" not in handshake.stdout
    assert "C->S request 2 ping" in handshake.stdout


def test_repl_discover_then_a_call_that_asks_shows_the_round_trip():
    everything = [sys.executable, str(ROOT / "tests" / "servers" / "everything.py")]
    result = subprocess.run([sys.executable, MCP_MIN, "repl", "--", *everything],
                            input="discover\ncall ask_user {}\ndecline\nquit\n", capture_output=True,
                            text=True, timeout=30, cwd=ROOT, env=clean_env())
    lines = [line for line in result.stdout.splitlines() if line.startswith(("C->S", "S->C"))]
    labels = [line.split(":")[0] for line in lines]
    assert labels == ["C->S request 1 server/discover", "S->C response 1 server/discover",
                      "C->S request 2 tools/call", "S->C response 2 tools/call",
                      "C->S request 3 tools/call", "S->C response 3 tools/call"]
    assert '"resultType":"input_required"' in lines[3]
    assert '"inputResponses":{"elicitation-1":{"action":"decline"}}' in lines[4]
    assert '"requestState":"v1.' in lines[4] and '"structuredContent":{"action":"decline"}' in lines[5]


EXPLAIN_MODERN = [
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{'
     '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
     '"io.modelcontextprotocol/clientCapabilities":{}}}}', 0, "stateless", None),
    ('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{'
     '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
     '"io.modelcontextprotocol/clientCapabilities":{}}}}', 1, "stateless",
     "ping is not part of 2026-07-28: a server answers -32601"),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{'
     '"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}', 1, "stateless",
     "clientCapabilities\" (an object; {} for none): a server answers -32602"),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{'
     '"io.modelcontextprotocol/protocolVersion":"1999-01-01",'
     '"io.modelcontextprotocol/clientCapabilities":{}}}}', 1, "stateless", "answers -32022"),
    ('{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","inputRequests":{'
     '"user_name":{"method":"elicitation/create","params":{}}},"requestState":"v1.x.y"}}', 0,
     "input_required: the server asks the client 1 question(s) (user_name: elicitation/create)",
     None),
    ('{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","inputRequests":[1]}}', 1,
     "input_required: the server asks the client 0 question(s)",
     "inputRequests must be an object (a key for each question), not [1]"),
    ('{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","inputRequests":{'
     '"q":"elicitation/create"}}}', 1, "input_required: the server asks the client 1 question(s)",
     'inputRequests["q"] must be an object (a request: method and params), not '
     '"elicitation/create"'),
    ('{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{'
     '"io.modelcontextprotocol/subscriptionId":"listen-1"},"notifications":{}}}', 0,
     'acknowledges subscriptions/listen "listen-1"', None),
]


@pytest.mark.parametrize("message, code, summary, problem", EXPLAIN_MODERN)
def test_explain_names_the_2026_07_28_shapes(message, code, summary, problem):
    result = cli("explain", message)
    assert result.returncode == code and result.stderr == ""
    lines = result.stdout.splitlines()
    assert summary in lines[0]
    if problem is None:
        assert lines[1:] == ["  no problems found"]
    else:
        assert problem in result.stdout, result.stdout


def test_client_initialize_after_discover_speaks_the_handshake_from_then_on():
    everything = [sys.executable, str(ROOT / "tests" / "servers" / "everything.py")]
    with mcp_min.Client(everything, era="2026-07-28") as client:
        assert client.modern and client.protocol_version == "2026-07-28"
        assert client.initialize()["protocolVersion"] == mcp_min.LATEST_PROTOCOL_VERSION
        assert not client.modern
        assert "resultType" not in client.request("tools/list")


def test_inspect_pinned_to_2026_07_28_on_a_handshake_only_server_says_so():
    naive = [sys.executable, str(ROOT / "examples" / "naive_server.py")]
    result = cli("inspect", "--era", "2026-07-28", "--", *naive)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "mcp_min: the server answered error -32601" in result.stderr


def test_call_a_script_that_never_runs_its_server_says_so(tmp_path):
    script = tmp_path / "forgot.py"
    script.write_text(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                      "from mcp_min import Server\nserver = Server('forgot')\n"
                      "server.tool(lambda: 1, name='one')\n")
    result = cli("call", "--", sys.executable, script, "one")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "exited before answering; does the script call server.run()?" in result.stderr


def test_repl_help_is_answered_by_the_repl_not_sent():
    weather = [sys.executable, str(ROOT / "examples" / "weather.py")]
    result = subprocess.run([sys.executable, MCP_MIN, "repl", "--", *weather],
                            input="help\nquit\n", capture_output=True, text=True, timeout=30,
                            cwd=ROOT, env=clean_env())
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1] and "help, quit" in lines[1]
    assert "C->S" not in result.stdout


# ============================================================================================
# Servers that break the protocol, and a wire that closes
# ============================================================================================

MISBEHAVING = [sys.executable, str(ROOT / "tests" / "servers" / "misbehaving.py")]


@pytest.mark.parametrize("mode, said", [
    ("init_list", "the result of initialize must be an object; the server sent [1]"),
    ("caps_null", "capabilities in the result of initialize must be an object; the server "
                  "sent null"),
    ("discover_list", "the result of server/discover must be an object; the server sent []"),
    ("discover_null_caps", "capabilities in the result of server/discover must be an object; "
                           "the server sent null"),
    ("tools_str", 'tools in the result of tools/list must be a list; the server sent "abc"'),
    ("tools_null", "tools in the result of tools/list must be a list; the server sent null"),
    ("same_cursor", 'tools/list: the server sent nextCursor "again", which is not a new cursor'),
])
def test_inspect_names_what_a_server_sent_wrong(mode, said):
    result = cli("inspect", "--", *MISBEHAVING, mode, timeout=15)
    assert result.returncode == 1 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"mcp_min: {said}"), result.stderr


@pytest.mark.parametrize("mode, said", [
    ("ir_list", 'inputRequests in the result of tools/call must be an object; the server sent '
                '["roots/list"]'),
    ("ir_bad_q", 'inputRequests["q"] in the result of tools/call must be an object; the server '
                 'sent "roots/list"'),
])
def test_call_names_a_malformed_input_required_result(mode, said):
    result = cli("call", "--", *MISBEHAVING, mode, "t", timeout=15)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr == f"mcp_min: {said}\n"
    with Client([*MISBEHAVING, mode], timeout=5, roots=lambda: []) as client:
        with pytest.raises(mcp_min.ProtocolError, match=re.escape(said)):
            client.call_tool("t")


@pytest.mark.parametrize("mode", ["unsupported", "later_version"])
def test_auto_does_not_fall_back_to_the_handshake_with_a_stateless_era_server(mode, tmp_path):
    """A server that answers server/discover with -32022, or with a list of versions without
    2026-07-28, has no initialize: the client says which versions it has, and sends nothing
    more."""
    log = tmp_path / "stdin.log"
    script = (f"import sys, runpy; log = open({str(log)!r}, 'w'); sys.argv[1:] = [{mode!r}]\n"
              "class Tee:\n    def __iter__(self):\n        for line in sys.__stdin__:\n"
              "            log.write(line); log.flush(); yield line\n"
              f"sys.stdin = Tee(); runpy.run_path({MISBEHAVING[1]!r}, run_name='__main__')\n")
    with pytest.raises(ConnectionError, match=re.escape(
            'the server supports protocol versions ["2027-01-01"]: not 2026-07-28, and as a '
            "server of the stateless era it has no handshake to fall back to")):
        Client([sys.executable, "-c", script], era="auto", timeout=5)
    sent = [json.loads(line)["method"] for line in log.read_text().splitlines()]
    assert sent == ["server/discover"]


def test_client_writes_no_response_in_2026_07_28_whatever_the_server_sends(tmp_path):
    """On stdio in 2026-07-28 the server sends no requests, and the client MUST NOT write
    responses: not to a request, an invalid one, a batch, or a line that is no message."""
    log = tmp_path / "stdin.log"
    script = (f"import sys, runpy; log = open({str(log)!r}, 'w'); sys.argv[1:] = ['asks_2026']\n"
              "class Tee:\n    def __iter__(self):\n        for line in sys.__stdin__:\n"
              "            log.write(line); log.flush(); yield line\n"
              f"sys.stdin = Tee(); runpy.run_path({MISBEHAVING[1]!r}, run_name='__main__')\n")
    with Client([sys.executable, "-c", script], era="2026-07-28", timeout=5,
                roots=lambda: []) as client:
        assert [t["name"] for t in client.list_tools()] == ["t"]
        time.sleep(0.3)                          # an answer to the request would come by now
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    assert [m.get("method") for m in sent] == ["server/discover", "tools/list"], sent


def test_client_disconnects_from_a_server_that_offers_a_version_it_does_not_speak():
    """The handshake: a client that does not support the version in the server's response
    disconnects, rather than go on in a protocol it does not know."""
    said = 'the server offers protocol version "2024-10-07", which this client does not speak'
    with pytest.raises(ConnectionError, match=re.escape(said)):
        Client([*MISBEHAVING, "old_version"], timeout=5)
    result = cli("inspect", "--", *MISBEHAVING, "old_version", timeout=15)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"mcp_min: {said}"), result.stderr


def test_client_that_times_out_on_initialize_does_not_cancel_it(tmp_path):
    """initialize MUST NOT be cancelled by clients: a client that gives up waiting for its
    answer just stops waiting (and closes), with no notifications/cancelled for it."""
    log, script = tmp_path / "stdin.log", tmp_path / "mute.py"
    script.write_text(f"import sys\nlog = open({str(log)!r}, 'w')\n"
                      "for line in sys.stdin:\n    log.write(line); log.flush()\n")
    with pytest.raises(TimeoutError, match="initialize"):
        Client([sys.executable, str(script)], timeout=0.5)
    sent = [json.loads(line)["method"] for line in log.read_text().splitlines()]
    assert sent == ["initialize"]


def test_auto_still_falls_back_when_discover_is_unknown():
    with Client([*MISBEHAVING, "plain"], era="auto", timeout=5) as client:
        assert not client.modern and client.protocol_version == "2025-11-25"
        assert [t["name"] for t in client.list_tools()] == ["t"]


def test_call_reports_a_line_a_server_writes_as_it_exits():
    result = cli("call", "--", *MISBEHAVING, "bye", "ping")
    assert json.loads(result.stdout) == {}
    assert result.returncode == 1
    assert result.stderr == "mcp_min: the server wrote a line that is not JSON-RPC: bye\n"


def test_client_takes_a_batch_from_a_2025_03_26_server_and_answers_it_with_a_batch():
    with Client([*MISBEHAVING, "batch"], protocol_version="2025-03-26", timeout=5) as client:
        assert client.protocol_version == "2025-03-26"
        text = client.call_tool("t")["content"][0]["text"]
        assert json.loads(text.removeprefix("the batch was answered: ")) == [
            {"jsonrpc": "2.0", "id": "s1", "result": {}}]
        assert [(n["method"], n["params"]["data"]) for n in client.notifications] == [
            ("notifications/message", "hello")]


def test_call_subscriptions_listen_prints_the_acknowledgement():
    modern = [sys.executable, str(ROOT / "tests" / "servers" / "modern.py")]
    start = time.monotonic()
    result = cli("call", "--", *modern, "subscriptions/listen",
                 '{"notifications": {"toolsListChanged": true}}', timeout=20)
    assert time.monotonic() - start < 10
    assert result.returncode == 0, result.stderr
    ack = json.loads(result.stdout)
    assert ack["notifications"] == {"toolsListChanged": True}
    assert "io.modelcontextprotocol/subscriptionId" in ack["_meta"]
    assert "repl's listen" in result.stderr


def test_call_and_explain_show_a_lone_surrogate_escaped_on_a_strict_utf8_stdout(tmp_path):
    script = tmp_path / "surrogates.py"
    script.write_text(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                      "from mcp_min import Server\nserver = Server('surrogates')\n"
                      "server.tool(lambda: b'caf\\xff.txt'.decode('utf-8', 'surrogateescape'),"
                      " name='name_of_file')\nserver.run()\n")
    strict = clean_env(PYTHONIOENCODING="utf-8")
    result = cli("call", "--", sys.executable, script, "name_of_file", env=strict)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["content"][0]["text"] == "caf\udcff.txt"
    explained = cli("explain", '{"jsonrpc":"2.0","id":1,"method":"tools/\\udcff"}', env=strict)
    assert explained.returncode == 1 and explained.stderr == ""
    assert "'tools/\\udcff' is not an MCP method" in explained.stdout


def test_demo_shows_every_frame_on_a_stdout_that_cannot_encode_them_all(demo):
    # A Windows console or pipe in a Cyrillic code page has no "é" (the prompt's "clichés"):
    # that frame is shown escaped, and every frame after it is still shown.
    result = cli("demo", env=clean_env(PYTHONIOENCODING="cp1251"))
    assert result.returncode == 0 and result.stderr == ""
    assert "clich\\xe9s" in result.stdout
    assert without_state(result.stdout) == without_state(demo.stdout).replace("é", "\\xe9")


def test_repl_says_a_typed_frame_was_not_sent_once_the_server_is_gone():
    gone = [sys.executable, "-c", "import sys; sys.stdin.readline()"]
    result = subprocess.run([sys.executable, MCP_MIN, "repl", "--", *gone],
                            input='init\n{"jsonrpc":"2.0","id":"x","method":"ping"}\nquit\n',
                            capture_output=True, text=True, timeout=30, cwd=ROOT,
                            env=clean_env())
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "! not sent: the connection to the server is closed"


def test_demo_into_a_pipe_closed_early_ends_quietly():
    """`mcp_min.py demo | head -1`: once the reader is gone, the demo stops, saying nothing."""
    process = subprocess.Popen([sys.executable, MCP_MIN, "demo"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=ROOT, env=clean_env())
    assert process.stdout.readline() == b"\n"
    assert process.stdout.readline().startswith(b"# The client starts the server")
    process.stdout.close()
    err = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(30) == 1
    assert err == ""


def test_client_trace_that_raises_stops_tracing_not_reading():
    traced = []

    def trace(direction, raw):
        traced.append(direction)
        if len(traced) == 3:                     # the response to initialize
            raise OSError("the trace's file is gone")
    with Client(make_server(), timeout=5, trace=trace) as client:
        for _ in range(3):
            assert client.ping() == {}
        assert client.reader.is_alive()
    assert len(traced) == 3


def test_client_request_from_a_notification_callback_fails_at_once_saying_why():
    server = make_server()
    seen = queue.Queue()

    def on_notification(message):
        if message["method"] == "notifications/tools/list_changed":
            start = time.monotonic()
            try:
                client.list_tools()
            except RuntimeError as e:
                seen.put((str(e), time.monotonic() - start))
    client = Client(server, timeout=5, on_notification=on_notification)
    with client:
        server.tool(lambda: "b", name="second")
        error, waited = seen.get(timeout=5)
        assert waited < 1
        assert error.startswith("tools/list: a request from a notification or progress callback "
                                "could never be answered")
        assert client.ping() == {}              # the client still works


@pytest.mark.parametrize("era", ["legacy", "auto", "2026-07-28"])
def test_client_timeout_none_waits_as_long_as_it_takes_in_every_era(era):
    with Client(make_server(), timeout=None, era=era) as client:
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"


def test_subscription_next_raises_connection_error_as_soon_as_the_wire_closes():
    with Client([sys.executable, MCP_MIN, "serve"], era="2026-07-28", timeout=10,
                env=clean_env()) as client:
        subscription = client.listen(tools=True)
        client.process.kill()
        start = time.monotonic()
        for _ in range(2):                       # and again: it stays closed
            with pytest.raises(ConnectionError, match="the server closed the connection"):
                subscription.next()
        assert time.monotonic() - start < 5


def test_subscription_next_ends_at_once_when_the_server_ends_the_stream_on_shutdown():
    """A server shutting down answers an open listen (the graceful end): next() says so at
    once, while the server still finishes a call in flight."""
    modern = [sys.executable, str(ROOT / "tests" / "servers" / "modern.py")]
    with Client(modern, era="2026-07-28", timeout=10, env=clean_env()) as client:
        subscription = client.listen(tools=True)
        threading.Thread(target=client.call_tool, args=("slow", {"ms": 3000}),
                         daemon=True).start()
        time.sleep(0.3)
        client.process.send_signal(signal.SIGTERM)
        start = time.monotonic()
        with pytest.raises(ConnectionError, match="the server ended the subscription"):
            subscription.next(timeout=2.5)
        assert time.monotonic() - start < 2


@pytest.mark.parametrize("mode, said", [
    ("listen_ended", "the server ended the subscription 'listen-2'; listen again to go on"),
    ("listen_cancelled", "the server cancelled the subscription 'listen-2'"),
])
def test_subscription_next_ends_at_once_when_the_server_ends_the_stream(mode, said):
    with Client([*MISBEHAVING, mode], era="2026-07-28", timeout=10) as client:
        subscription = client.listen(tools=True)
        assert client.ping() == {}               # and with it, the end of the stream
        start = time.monotonic()
        for _ in range(2):                       # and again: it stays ended
            with pytest.raises(ConnectionError, match=re.escape(said)):
                subscription.next(timeout=3)
        assert time.monotonic() - start < 2
        assert client.ping() == {}              # the connection goes on


@pytest.mark.parametrize("mode, era, said", [
    ("init_list", "legacy", "the result of initialize must be an object; the server sent [1]"),
    ("discover_null_caps", "auto", "capabilities in the result of server/discover must be an "
                                   "object; the server sent null"),
    ("tools_str", "legacy", 'tools in the result of tools/list must be a list; the server sent '
                            '"abc"'),
    ("same_cursor", "legacy", 'tools/list: the server sent nextCursor "again", which is not a '
                              "new cursor"),
    # 2026-07-28: a resultType the client does not know MUST be taken as invalid
    ("result_task", "2026-07-28", 'tools/list: the server sent resultType "task", which this '
                                  "client does not know"),
])
def test_client_raises_protocol_error_naming_what_the_server_sent_wrong(mode, era, said):
    with pytest.raises(mcp_min.ProtocolError, match=re.escape(said)):
        with Client([*MISBEHAVING, mode], era=era, timeout=5) as client:
            client.list_tools()


def test_client_input_rounds_echo_each_state_as_sent_on_a_new_id(tmp_path):
    """Each retry is a new request (a new id) with the original params, an answer under
    each key asked, and the requestState of the last result exactly, or none if it sent
    none (MUST NOT include one then)."""
    log, script = tmp_path / "calls.log", tmp_path / "rounds.py"
    script.write_text(f"import json, sys\nlog = open({str(log)!r}, 'w')\n" + '''
rounds = [{"inputRequests": {"a b": {"method": "elicitation/create", "params": {
              "message": "?", "requestedSchema": {"type": "object", "properties": {}}}},
           "r": {"method": "roots/list", "params": {}}}, "requestState": " S1 \\u00e9+/= "},
          {"inputRequests": {"s": {"method": "sampling/createMessage", "params": {
              "messages": [], "maxTokens": 1}}}}]
for line in sys.stdin:
    m = json.loads(line)
    if m["method"] == "server/discover":
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
    elif m["method"] == "tools/call":
        log.write(line); log.flush()
        result = dict(rounds.pop(0), resultType="input_required") if rounds else {
            "resultType": "complete", "content": []}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
''')
    sampled = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}}
    with Client([sys.executable, str(script)], era="2026-07-28", timeout=5, roots=lambda: [],
                elicitation=lambda p: {"action": "decline"}, sampling=lambda p: sampled) as client:
        assert client.call_tool("t", {"x": 1}) == {"resultType": "complete", "content": []}
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len({c["id"] for c in calls}) == 3
    params = [c["params"] for c in calls]
    assert all((p["name"], p["arguments"]) == ("t", {"x": 1}) for p in params)
    assert "requestState" not in params[0] and "inputResponses" not in params[0]
    assert params[1]["requestState"] == " S1 \u00e9+/= "
    assert params[1]["inputResponses"] == {"a b": {"action": "decline"}, "r": {"roots": []}}
    assert "requestState" not in params[2]
    assert params[2]["inputResponses"] == {"s": sampled}


# ============================================================================================
# The command line, from a user's side: Ctrl+C, --timeout, the words of call
# ============================================================================================

CRAWLER = """
import sys, time
sys.path.insert(0, {root!r})
from mcp_min import Context, Server
server = Server("crawler")

@server.tool
def crawl(ctx: Context) -> str:
    print("crawl started", file=sys.stderr, flush=True)
    try:
        for step in range(1, 3001):
            ctx.report_progress(step, total=3000)
            ctx.check_cancelled()
            time.sleep(0.01)
    except BaseException as e:
        with open({mark!r}, "w") as f:
            f.write(type(e).__name__)
        raise
    return "done"

server.run()
"""


def crawler(tmp_path):
    mark = tmp_path / "mark"
    script = tmp_path / "crawler.py"
    script.write_text(CRAWLER.format(root=str(ROOT), mark=str(mark)))
    return [sys.executable, str(script)], mark


def ctrl_c_while_crawling(args, tmp_path, started="crawl started", typed=None):
    """Start the CLI in a process group of its own, as a terminal starts a command; once the
    crawl has begun, Ctrl+C as a terminal sends it (SIGINT to the whole group). Returns the
    exit code, the seconds from Ctrl+C to exit, stderr, and the server's mark."""
    _, mark = crawler(tmp_path)
    process = subprocess.Popen([sys.executable, MCP_MIN, *args], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env=clean_env(), start_new_session=True)
    if typed:
        process.stdin.write(typed)
        process.stdin.flush()
    lines = []
    try:
        for line in process.stderr:
            lines.append(line)
            if started in line:
                break
        os.killpg(process.pid, signal.SIGINT)
        interrupted = time.monotonic()
        code = process.wait(10)
        took = time.monotonic() - interrupted
        lines.append(process.stderr.read())
    finally:
        if process.poll() is None:
            process.kill()
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()
    deadline = time.monotonic() + 5
    while not mark.exists() and time.monotonic() < deadline:    # the server's own exit
        time.sleep(0.02)
    return code, took, "".join(lines), mark.read_text() if mark.exists() else None


def test_ctrl_c_during_call_cancels_the_call_and_exits_130_at_once(tmp_path):
    command, _ = crawler(tmp_path)
    code, took, stderr, mark = ctrl_c_while_crawling(
        ["call", "--timeout", "0", "--", *command, "crawl"], tmp_path)
    assert code == 130 and took < 1.5, (code, took, stderr)
    assert "mcp_min: interrupted" in stderr and "Traceback" not in stderr, stderr
    assert mark == "Cancelled"          # the server was told, and its tool stopped


def test_ctrl_c_during_repl_cancels_its_calls_and_exits_130(tmp_path):
    command, _ = crawler(tmp_path)
    code, took, stderr, mark = ctrl_c_while_crawling(["repl", "--", *command], tmp_path,
                                                     typed="init\ncall crawl {}\n")
    assert code == 130 and took < 1.5, (code, took, stderr)
    assert "Traceback" not in stderr and mark == "Cancelled"


def test_ctrl_c_during_the_demo_exits_130_without_a_traceback():
    process = subprocess.Popen([sys.executable, MCP_MIN, "demo"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT, env=clean_env(),
                               start_new_session=True)
    process.stdout.readline()                 # the demo has begun
    os.killpg(process.pid, signal.SIGINT)
    interrupted = time.monotonic()
    code = process.wait(10)
    took = time.monotonic() - interrupted
    stderr = process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    assert code == 130 and took < 1.5 and "Traceback" not in stderr, (code, took, stderr)


def test_call_timeout_is_an_option_its_expiry_names_it_and_0_waits_showing_progress():
    slow = ["--", *SLOW, "wait", '{"seconds": 1.5, "label": "late"}']
    expired = cli("call", "--timeout", "0.3", *slow)
    assert expired.returncode == 1 and expired.stdout == ""
    assert "no response within 0.3 s" in expired.stderr and "--timeout" in expired.stderr
    waited = cli("call", "--timeout", "0", "--", *SLOW, "countdown",
                 '{"steps": 3, "delay": 0.2}')
    assert waited.returncode == 0 and json.loads(waited.stdout)["isError"] is False
    assert [line.split(":")[0] for line in waited.stderr.splitlines()] == [
        "progress 1/3", "progress 2/3", "progress 3/3"]
    for bad in ("-1", "soon", "inf"):
        refused = cli("call", "--timeout", bad, *slow)
        assert refused.returncode == 2 and "not a number of seconds" in refused.stderr


def test_call_reads_its_words_without_looking_at_files(tmp_path):
    """A file named like the tool in the working directory changes nothing; the JSON must be
    an object; a script or a path where the method should be is a usage error."""
    (tmp_path / "add").write_text("")
    shutil.copy(EXAMPLES / "calculator.py", tmp_path / "calculator.py")
    shutil.copy(ROOT / "mcp_min.py", tmp_path / "mcp_min.py")

    def run(*words):
        return subprocess.run([sys.executable, MCP_MIN, "call", *words], capture_output=True,
                              text=True, timeout=30, cwd=tmp_path, env=clean_env())
    added = run("--", sys.executable, "calculator.py", "add", '{"a": 2, "b": 3}')
    assert added.returncode == 0 and json.loads(added.stdout)["structuredContent"] == {
        "result": 5.0}
    named = run("--tool", "add", "--json", '{"a": 2, "b": 3}', "--", sys.executable,
                "calculator.py")
    assert named.returncode == 0 and json.loads(named.stdout) == json.loads(added.stdout)
    listed = run("--method", "tools/list", "--", sys.executable, "calculator.py")
    assert [t["name"] for t in json.loads(listed.stdout)["tools"]] == ["add"]
    for words, said in (
            (["add", "[1, 2]"], "must be a JSON object, as in '{\"a\": 1}', not array [1, 2]"),
            (["add", '"x"'], 'not string "x"'),
            ([], "looks like the server's command"),
            ([f"{tmp_path}/calculator"], "looks like the server's command"),
    ):
        refused = run("--", sys.executable, "calculator.py", *words)
        assert refused.returncode != 0 and refused.stdout == "", refused
        assert said in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    lonely = run("--json", "{}", "--", sys.executable, "calculator.py")
    assert lonely.returncode == 2 and "--json goes with --tool" in lonely.stderr


@pytest.mark.parametrize("era", [None, "legacy"])
def test_demo_narrates_a_session_with_your_own_server(era):
    result = cli("demo", *(["--era", era] if era else []), "--", *GIFT)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    notes = [line for line in lines if line.startswith("# ")]
    assert notes[0].startswith("# The client starts your server")
    assert any("A call of suggest_gifts, with arguments made from its inputSchema" in note
               for note in notes)
    sent = [json.loads(line.split(": ", 1)[1]) for line in lines if line.startswith("C->S ")]
    methods = [message.get("method") for message in sent]
    opening = "initialize" if era == "legacy" else "server/discover"
    assert methods[0] == opening
    for method in ("tools/list", "resources/list", "prompts/list", "tools/call",
                   "resources/read", "prompts/get"):
        assert method in methods, methods
    (call,) = [message for message in sent if message.get("method") == "tools/call"]
    assert call["params"]["name"] == "suggest_gifts"
    arguments = call["params"]["arguments"]
    assert arguments["occasion"] == "birthday" and arguments["budget"] == 42   # from the schema
    answers = [line for line in lines if line.startswith("S->C response")]
    assert any(" tools/call" in line and '"isError":false' in line for line in answers)


ASKING = """\
import time
from mcp_min import Context, Server

server = Server("asking")


@server.tool
def slow_question(ctx: Context) -> str:
    \"\"\"Takes its time, then asks.\"\"\"
    for step in range(3):
        ctx.report_progress(step + 1, 3)
        time.sleep(0.05)
    return ctx.elicit("Go on?", {"type": "object", "properties": {}})["action"]
"""


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_demo_of_your_server_asks_for_progress_and_narrates_each_question(tmp_path, era):
    (tmp_path / "asking.py").write_text(ASKING)
    result = cli("demo", "--era", era, "--", sys.executable, MCP_MIN, "serve",
                 tmp_path / "asking.py")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    (call,) = [line for line in lines if line.startswith("C->S request 3 tools/call")]
    assert '"progressToken":' in call
    assert sum("notifications/progress" in line for line in lines) >= 3
    notes = [line for line in lines if line.startswith("# ")]
    assert any("a progressToken" in note for note in notes)
    lines = [line for line in lines if line]
    asked = [i for i, line in enumerate(lines)
             if line.startswith("# The server") and "(elicitation/create)" in line]
    assert len(asked) == 1, notes
    if era == "legacy":
        assert lines[asked[0] - 1].startswith("S->C request 1 elicitation/create")
        assert lines[asked[0] + 1].startswith("C->S response 1 elicitation/create")
    else:
        # the note comes between the input_required response and the retry
        assert '"resultType":"input_required"' in lines[asked[0] - 1]
        assert "sends the request again" in lines[asked[0]]
        assert lines[asked[0] + 1].startswith("C->S request 4 tools/call")
        assert '"inputResponses":' in lines[asked[0] + 1]


def test_demo_of_a_server_with_tools_alone_calls_its_tool():
    result = cli("demo", "--", sys.executable, str(EXAMPLES / "calculator.py"))
    assert result.returncode == 0, result.stderr
    assert '"arguments":{"a":42,"b":42}' in result.stdout
    assert '"structuredContent":{"result":84.0}' in result.stdout
    assert "resources/read" not in result.stdout and "prompts/get" not in result.stdout


def test_example_arguments_fit_the_schema():
    jsonschema = pytest.importorskip("jsonschema")

    class Colour(str, enum.Enum):
        RED = "red"

    def f(name: str, when: datetime.date, count: Annotated[int, {"minimum": 50}],
          ratio: Annotated[float, {"maximum": 0.5}], tags: list[str], pair: tuple[int, str],
          colour: Colour, nested: dict[str, int], maybe: Optional[int], flag: bool = False): ...
    schema = mcp_min.Signature(f).input_schema
    arguments = mcp_min._example_arguments(schema)
    jsonschema.validate(arguments, schema)
    assert arguments["count"] == 50 and arguments["ratio"] == 0.5 and "flag" not in arguments


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_serve_exits_alike_on_both_transports_130_after_ctrl_c_0_after_sigterm(
        transport, signum, code):
    """A stop asked for (SIGTERM) is a success; Ctrl+C exits as an interrupted program does."""
    http = ["--http", "127.0.0.1:0"] if transport == "http" else []
    process = subprocess.Popen([sys.executable, MCP_MIN, "serve", *http,
                                str(EXAMPLES / "calculator.py")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                               env=clean_env(), start_new_session=True)
    try:
        if transport == "http":
            assert b"serving calculator on http://" in process.stderr.readline()
        else:                                 # serving: it answers a ping
            process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            process.stdin.flush()
            assert b'"id":1' in process.stdout.readline()
        os.killpg(process.pid, signum)
        assert process.wait(10) == code
        assert b"Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()


SLOW_LISTER = """
import sys, time
sys.path.insert(0, {root!r})
from mcp_min import Server
server = Server("slow-lister")

@server.tool
def nothing() -> str:
    return ""

def slow_list(ctx, params):
    print("listing", file=sys.stderr, flush=True)
    for _ in range(3000):
        ctx.check_cancelled()
        time.sleep(0.01)
    return {{"tools": []}}
server.handlers["tools/list"] = slow_list
server.inline_methods = server.inline_methods - {{"tools/list"}}
server.run()
"""


def test_ctrl_c_during_inspect_exits_130_without_a_traceback(tmp_path):
    script = tmp_path / "slow_lister.py"
    script.write_text(SLOW_LISTER.format(root=str(ROOT)))
    code, took, stderr, _ = ctrl_c_while_crawling(
        ["inspect", "--", sys.executable, str(script)], tmp_path, started="listing")
    assert code == 130 and took < 1.5 and "Traceback" not in stderr, (code, took, stderr)
