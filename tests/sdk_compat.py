"""Running the official SDK clients against mcp_min servers, and the compatibility table.

Shared by tests/test_sdk_python.py and tests/test_sdk_typescript.py, which load it with
``pytest_plugins = ["sdk_compat"]``:

* ``Driver`` runs one of the client drivers in tests/clients/ (``py_client.py``,
  ``ts_client.mjs``; the step language is in tests/clients/README.md) on a list of steps and
  returns a ``Run``: its JSON records, looked up by step label.
* ``SCENARIOS``: the step lists both clients run. Each runs once per client and mode
  (``Driver.scenario`` caches it); the tests then check one feature each in its records.
* The plugin part: a test marked ``@pytest.mark.compat("feature")`` that uses the
  ``sdk_client`` fixture adds a row (client, version, mode, feature, result) to the
  table; at the end of the session ``tests/compat_table.md`` is rewritten from these rows
  (cells this test run did not check, e.g. another client's, are kept from the last file).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
CLIENTS = TESTS / "clients"
SDK_FEATURES = TESTS / "servers" / "sdk_features.py"
EXAMPLES = ROOT / "examples"
TABLE = TESTS / "compat_table.md"

#: What both SDKs pass on to a server they start (POSIX), whatever their own environment.
CLIENT_ENV = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
#: Set in the driver's own environment: a server started the way the clients start servers
#: must not see it.
SENTINEL = "MCP_MIN_SDK_TEST_SENTINEL"


# ==========================================================================================
# Running a driver
# ==========================================================================================

@dataclass
class Run:
    """The records one driver run printed."""

    client: str
    mode: str
    records: list
    returncode: int
    stderr: str

    def __post_init__(self):
        self.by_label = {r["label"]: r for r in self.records
                         if r.get("event") == "step" and "label" in r}

    def describe(self):
        return f"{self.client}/{self.mode} exit {self.returncode}; stderr tail:\n{self.stderr[-2000:]}"

    # -- connection
    @property
    def connected(self):
        found = [r for r in self.records if r["event"] == "connected"]
        assert found, f"the client did not connect: {self.describe()}"
        return found[0]

    # -- steps
    def step(self, label):
        assert label in self.by_label, f"no record for step {label!r}: {self.describe()}"
        return self.by_label[label]

    def ok(self, label):
        """The result of a step that must have succeeded."""
        record = self.step(label)
        assert record["ok"] is True, f"step {label}: {record}"
        return record["result"]

    def failed(self, label):
        """The error of a step that must have failed."""
        record = self.step(label)
        assert record["ok"] is False, f"step {label} did not fail: {record}"
        return record["error"]

    def progress(self, label):
        index = self.step(label)["index"]
        return [r for r in self.records if r["event"] == "progress" and r["index"] == index]

    # -- what the server sent outside of responses
    def notifications(self, method):
        return [r["params"] for r in self.records
                if r["event"] == "notification" and r["method"] == method]

    def requests(self, method):
        return [r["params"] for r in self.records if r["event"] == "request" and r["method"] == method]

    def transport_errors(self):
        return [r["message"] for r in self.records if r["event"] == "transportError"]

    # -- the wire (--trace)
    def wire(self, direction):
        return [r["message"] for r in self.records if r["event"] == "wire" and r["dir"] == direction]

    def wire_notifications(self, direction, method):
        """The params of every `method` notification that crossed the wire that way."""
        return [m.get("params") for m in self.wire(direction)
                if m.get("method") == method and "id" not in m]

    def sent_request(self, method, **params):
        """The first request of `method` the client wrote whose params include `params`."""
        found = self.sent_requests(method, **params)
        assert found, f"the client sent no {method} {params}"
        return found[0]

    def sent_requests(self, method, **params):
        """Every request of `method` the client wrote whose params include `params`."""
        return [m for m in self.wire("send") if m.get("method") == method and "id" in m and
                all((m.get("params") or {}).get(k) == v for k, v in params.items())]

    def response_to(self, request_id):
        return [m for m in self.wire("recv") if "method" not in m and m.get("id") == request_id]


class Driver:
    """One client in one mode: ``py`` (auto or legacy handshake) or ``ts``."""

    def __init__(self, client, mode):
        self.client, self.mode = client, mode
        self.runs = {}
        if client == "py":
            self.command = [sys.executable, str(CLIENTS / "py_client.py"), "--mode", mode]
        else:
            self.command = [shutil.which("node") or "node", str(CLIENTS / "ts_client.mjs")]

    @property
    def label(self):
        return {"py": "Python SDK `mcp`",
                "ts": "TypeScript SDK `@modelcontextprotocol/sdk`"}[self.client]

    @property
    def version(self):
        return installed_version(self.client)

    @property
    def mode_label(self):
        if self.client == "ts":
            return "initialize (its only handshake)"
        return {"auto": "auto (default): `server/discover` probe, then `initialize`",
                "legacy": "legacy: `initialize` only"}[self.mode]

    def run(self, steps, server=SDK_FEATURES, *, env=None, capabilities=None, trace=True,
            timeout_ms=15000, cwd=None):
        """Run the client on `steps` against ``python3 server`` (this interpreter), started
        by the client itself; it must connect, run every step and close cleanly."""
        argv = [*self.command, "--timeout", str(timeout_ms)]
        for name, value in (env or {}).items():
            argv += ["--env", f"{name}={value}"]
        if capabilities is not None:
            argv += ["--capabilities", capabilities]
        if cwd is not None:
            argv += ["--cwd", str(cwd)]
        if trace:
            argv.append("--trace")
        argv += [json.dumps(steps), "--", sys.executable, str(server)]
        parent_env = dict(os.environ, **{SENTINEL: "leaked"})
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=90, env=parent_env,
                              cwd=ROOT)
        records = []
        for line in proc.stdout.splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                raise AssertionError(f"the driver printed a non-JSON line {line[:200]!r}; "
                                     f"stderr:\n{proc.stderr[-2000:]}") from None
        run = Run(self.client, self.mode, records, proc.returncode, proc.stderr)
        assert proc.returncode == 0, f"driver failed: {run.describe()}\n{proc.stdout[-3000:]}"
        assert records and records[-1]["event"] == "closed", run.describe()
        return run

    def scenario(self, name):
        """Run one of SCENARIOS (once per driver; later calls reuse the records)."""
        if name not in self.runs:
            spec = dict(SCENARIOS[name])
            steps = spec.pop("steps")
            self.runs[name] = self.run(steps, **spec)
        return self.runs[name]


def installed_version(client):
    if client == "py":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("mcp")
        except PackageNotFoundError:
            return None
    manifest = CLIENTS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


def pinned_version(client):
    """The version tests/requirements.txt or tests/clients/package.json pins."""
    if client == "py":
        text = (TESTS / "requirements.txt").read_text()
        return re.search(r"^mcp==(\S+)$", text, re.M).group(1)
    manifest = json.loads((CLIENTS / "package.json").read_text())
    return manifest["dependencies"]["@modelcontextprotocol/sdk"]


def typescript_missing():
    """Why the TypeScript client cannot run here, or None."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed (bash tests/run.sh needs node 20 and npm)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    if not re.match(r"v(\d+)", version) or int(re.match(r"v(\d+)", version).group(1)) < 20:
        return f"node {version or '?'} is too old: the TypeScript SDK client needs node 20 or later"
    if installed_version("ts") is None:
        return ("tests/clients/node_modules is missing: bash tests/run.sh installs it "
                "(or: cd tests/clients && npm ci)")
    return None


# ==========================================================================================
# Scenarios: the same steps for every client
# ==========================================================================================

def call(label, name, arguments=None, **extra):
    return {"op": "callTool", "label": label, "name": name, "arguments": arguments or {}, **extra}


PROMPT_REF = {"type": "ref/prompt", "name": "greet"}
ITEM_REF = {"type": "ref/resource", "uri": "test://sdk/items/{category}/{item_id}"}
NEW_ROOTS = {"roots": [{"uri": "file:///tmp/mcp-min-new-root", "name": "new root"},
                       {"uri": "file:///tmp/mcp-min-other"}]}
CUSTOM_SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "custom reply"},
                 "model": "custom-model", "stopReason": "endTurn"}

FEATURE_STEPS = [
    {"op": "ping", "label": "ping"},
    # pagination: two items per page
    {"op": "listTools", "label": "tools.all"},
    call("tool.forged.paged", "forged"),            # on page 4 of the 13 just walked
    {"op": "listTools", "all": False, "label": "tools.page1"},
    {"op": "listTools", "cursor": "not-a-cursor", "label": "tools.badcursor"},
    {"op": "listResources", "label": "resources.all"},
    {"op": "listResourceTemplates", "label": "templates.all"},
    {"op": "listPrompts", "label": "prompts.all"},
    # tool results of every kind
    call("tool.text", "echo", {"text": "héllo ✓ \"quoted\"\nnew line"}),
    call("tool.image", "picture"),
    call("tool.audio", "sound"),
    call("tool.link", "link"),
    {"op": "readResource", "uri": "test://sdk/text", "label": "tool.link.follow"},
    call("tool.embed", "embed"),
    call("tool.isError", "refuse", {"reason": "policy"}),
    call("tool.badargs", "stats", {"numbers": "one two"}),
    call("tool.unknown", "no_such_tool"),
    # resources
    {"op": "readResource", "uri": "test://sdk/text", "label": "res.text"},
    {"op": "readResource", "uri": "test://sdk/blob", "label": "res.blob"},
    {"op": "readResource", "uri": "test://sdk/items/fruit/apple", "label": "res.template"},
    {"op": "readResource", "uri": "test://sdk/docs/guide/intro.md", "label": "res.template.plus"},
    {"op": "readResource", "uri": "test://sdk/nothing-here", "label": "res.missing"},
    # prompts
    {"op": "getPrompt", "name": "greet", "arguments": {"name": "Ada", "style": "formal"},
     "label": "prompt.greet"},
    {"op": "getPrompt", "name": "debate", "arguments": {"topic": "tabs", "rounds": "3"},
     "label": "prompt.debate"},
    {"op": "getPrompt", "name": "cite", "label": "prompt.cite"},
    {"op": "getPrompt", "name": "greet", "arguments": {"style": "formal"},
     "label": "prompt.missing-arg"},
    # completion
    {"op": "complete", "ref": PROMPT_REF, "argument": {"name": "style", "value": "f"},
     "label": "complete.prompt"},
    {"op": "complete", "ref": ITEM_REF, "argument": {"name": "item_id", "value": "a"},
     "context": {"arguments": {"category": "fruit"}}, "label": "complete.template.fruit"},
    {"op": "complete", "ref": ITEM_REF, "argument": {"name": "item_id", "value": "a"},
     "context": {"arguments": {"category": "veg"}}, "label": "complete.template.veg"},
    # logging
    {"op": "setLoggingLevel", "level": "warning", "label": "log.set.warning"},
    call("log.chatty.warning", "chatty"),
    {"op": "setLoggingLevel", "level": "debug", "label": "log.set.debug"},
    call("log.chatty.debug", "chatty"),
    {"op": "waitFor", "method": "notifications/message", "count": 13, "timeoutMs": 5000,
     "label": "log.wait"},
    # progress: paced (a pause after each notification), then in a burst
    call("progress.paced", "progress", {"steps": 3, "pause_ms": 100}, progress=True),
    call("progress.burst", "progress", {"steps": 3, "pause_ms": 0}, progress=True),
    # cancellation: by timer, and from the progress callback
    call("cancel.timer", "slow", {"ticks": 200, "tick_ms": 20}, cancelAfterMs=250),
    call("cancel.progress", "slow", {"ticks": 200, "tick_ms": 20}, cancelOnProgress=2),
    call("cancel.stubborn", "stubborn", {"ms": 400}, cancelAfterMs=50),
    {"op": "sleep", "ms": 450},        # stubborn finishes: its reply must be withheld
    call("cancel.seen", "cancellations"),
    # sampling
    call("sampling.default", "ask_model", {"question": "What is MCP?"}),
    {"op": "onSampling", "result": CUSTOM_SAMPLE},
    call("sampling.custom", "ask_model", {"question": "Again?"}),
    {"op": "onSampling", "error": {"code": -1, "message": "the user declined to sample"}},
    call("sampling.error", "ask_model", {"question": "And now?"}),
    # cancelling a tool call that waits for the client's model cancels the sampling request
    {"op": "onSampling", "result": CUSTOM_SAMPLE, "delayMs": 1000},
    call("cancel.nested", "ask_model", {"question": "Slowly?"}, cancelAfterMs=300),
    {"op": "onSampling"},
    # elicitation
    call("elicit.accept", "ask_user"),
    {"op": "onElicit", "result": {"action": "decline"}},
    call("elicit.decline", "ask_user"),
    # roots
    call("roots.first", "roots"),
    call("roots.cached", "roots"),
    {"op": "onRoots", "result": NEW_ROOTS},
    {"op": "sendRootsListChanged", "label": "roots.changed"},
    call("roots.after-change", "roots"),
    # subscriptions
    {"op": "subscribeResource", "uri": "test://sdk/counter", "label": "sub.subscribe"},
    call("sub.bump1", "bump"),
    {"op": "waitFor", "method": "notifications/resources/updated", "timeoutMs": 5000,
     "label": "sub.wait"},
    {"op": "readResource", "uri": "test://sdk/counter", "label": "sub.read"},
    {"op": "unsubscribeResource", "uri": "test://sdk/counter", "label": "sub.unsubscribe"},
    call("sub.bump2", "bump"),
    {"op": "ping"},
    # list_changed
    call("lc.add", "toggle_extra", {"present": True}),
    {"op": "waitFor", "method": "notifications/tools/list_changed", "timeoutMs": 5000,
     "label": "lc.wait1"},
    {"op": "listTools", "label": "lc.list-with"},
    call("lc.call-extra", "extra", {"word": "hi"}),
    call("lc.remove", "toggle_extra", {"present": False}),
    {"op": "waitFor", "method": "notifications/tools/list_changed", "count": 2, "timeoutMs": 5000,
     "label": "lc.wait2"},
    {"op": "listTools", "label": "lc.list-without"},
    call("lc.call-removed", "extra"),
    # how the server was started
    call("env", "environment"),
    {"op": "sleep", "ms": 50},          # let late notifications arrive before the end
]

STRUCTURED_STEPS = [
    call("structured.unlisted", "forged"),        # before any tools/list
    {"op": "listTools", "label": "structured.list"},
    call("structured.typeddict", "stats", {"numbers": [1, 2, 3.5]}),
    call("structured.dataclass", "point", {"x": 1.5, "y": -2}),
    call("structured.moments", "moments"),
    call("structured.naive-time", "naive_time"),
    call("structured.pair", "pair"),
    call("structured.forged", "forged"),
    call("structured.mismatch", "mismatch"),
    call("structured.error-data", "fail_with_data"),
]

NO_CAPABILITY_STEPS = [
    call("nocap.sampling", "ask_model", {"question": "hi"}),
    call("nocap.elicitation", "ask_user"),
    call("nocap.roots", "roots"),
]

GIFT_STEPS = [
    {"op": "ping", "label": "ping"},
    {"op": "listTools", "label": "tools"},
    {"op": "listResources", "label": "resources"},
    {"op": "listPrompts", "label": "prompts"},
    call("suggest", "suggest_gifts", {"occasion": "birthday", "budget": 50,
                                      "recipient": "friend who loves board games"}),
    call("suggest.zero", "suggest_gifts", {"occasion": "birthday", "budget": 0}),
    call("suggest.badargs", "suggest_gifts", {"occasion": "funeral", "budget": "a hundred bucks"}),
    call("suggest.none", "suggest_gifts", {"occasion": "wedding", "budget": 5}),
    {"op": "readResource", "uri": "mcp://gift-server/resources/gift_catalog", "label": "catalog"},
    {"op": "getPrompt", "name": "gift_congrats_style",
     "arguments": {"recipient": "Sam", "occasion": "wedding"}, "label": "prompt"},
]

CALCULATOR_STEPS = [
    {"op": "listTools", "label": "tools"},
    call("add", "add", {"a": 2, "b": 3.5}),
    call("add.badargs", "add", {"a": "two"}),
]

WEATHER_STEPS = [
    {"op": "listTools", "label": "tools"},
    call("lisbon", "get_weather", {"city": "Lisbon"}),
    call("unknown", "get_weather", {"city": "Atlantis"}),
]

SCENARIOS = {
    "features": {"steps": FEATURE_STEPS, "cwd": "/"},
    "structured": {"steps": STRUCTURED_STEPS, "env": {"SDK_PAGE_SIZE": "0"}},
    "no-capabilities": {"steps": NO_CAPABILITY_STEPS, "capabilities": "none"},
    # The examples run as a real client starts them: minimal environment, another cwd.
    "gift_server": {"steps": GIFT_STEPS, "server": EXAMPLES / "gift_server.py", "cwd": "/"},
    "calculator": {"steps": CALCULATOR_STEPS, "server": EXAMPLES / "calculator.py", "cwd": "/"},
    "weather": {"steps": WEATHER_STEPS, "server": EXAMPLES / "weather.py", "cwd": "/"},
}


def text_of(result):
    """The text of a result's single text block."""
    texts = [block["text"] for block in result["content"] if block["type"] == "text"]
    assert len(texts) == 1, result
    return texts[0]


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9)


# ==========================================================================================
# The compatibility table (a pytest plugin)
# ==========================================================================================

#: feature key -> (feature, what the tests check). The table lists them in this order.
FEATURES = {
    "handshake": ("Handshake, version negotiation",
                  "`initialize` at 2025-11-25 agreed; serverInfo, capabilities, instructions; "
                  "auto mode: the `server/discover` probe gets -32601 at once, then `initialize`"),
    "ping": ("Ping", "`ping` → `{}`"),
    "metadata": ("Metadata", "serverInfo title, description, websiteUrl, icons; tool icons, "
                             "annotations, `_meta`; resource size and annotations; content "
                             "annotations"),
    "pagination": ("Lists with pagination",
                   "tools, resources, templates, prompts walked over 2-item pages; one page; "
                   "a bad cursor → -32602"),
    "tool-text": ("Tool: text", "non-ASCII text content"),
    "tool-structured": ("Tool: structured output",
                        "TypedDict and dataclass results as `structuredContent`, checked by the "
                        "client against `outputSchema`; output breaking the schema: `isError` "
                        "from mcp_min, and rejected by the client when forged past that check"),
    "dates": ("Tool: dates and times", "`datetime` (with and without a timezone) and `date` "
                                       "results, `format` \"date-time\" and \"date\" in "
                                       "`outputSchema`"),
    "tuples": ("Tool: tuples", "a `tuple[int, str]` result (`prefixItems` in `outputSchema`)"),
    "validation-differences": ("Tool: where output checks differ",
                               "a forged result from a tool the client has not listed, or listed "
                               "on an earlier page; an `isError` result with `structuredContent`"),
    "tool-media": ("Tool: image, audio", "PNG image and WAV audio blocks (base64, MIME type)"),
    "tool-resources": ("Tool: resource links, embedded resources",
                       "`resource_link` (then read), embedded text and blob resources"),
    "tool-errors": ("Tool: errors",
                    "`isError` from `ToolError` and from bad arguments; unknown tool → -32602"),
    "resources": ("Resources and templates",
                  "text, blob, `{var}` and `{+var}` templates; unknown URI → -32002"),
    "subscriptions": ("Subscriptions",
                      "subscribe → `notifications/resources/updated`; none after unsubscribe"),
    "prompts": ("Prompts",
                "arguments (a string converted to int), user and assistant turns, an embedded "
                "resource; a missing required argument → -32602"),
    "completion": ("Completion", "a prompt argument; a template argument using context arguments"),
    "logging": ("Logging", "`logging/setLevel` warning, then debug: `notifications/message` filtered"),
    "progress": ("Progress",
                 "progress token from the client; notifications in order, with total and message, "
                 "all before the response"),
    "cancellation": ("Cancellation",
                     "cancelled by timer and from the progress callback: the tool stops, no "
                     "response; a tool ignoring it: result withheld; a call waiting for "
                     "sampling: the sampling request cancelled too"),
    "sampling": ("Sampling", "`sampling/createMessage` answered by the client callback: default, "
                             "custom result, error"),
    "elicitation": ("Elicitation",
                    "`elicitation/create` (form) answered: accept with content, decline"),
    "roots": ("Roots", "`roots/list` answered; cached; refreshed after "
                       "`notifications/roots/list_changed`"),
    "undeclared-capabilities": ("Undeclared client capabilities",
                                "sampling/elicitation/roots tools get `isError`, no request is sent"),
    "list-changed": ("List changed", "a tool added and removed while serving → "
                                     "`notifications/tools/list_changed`; lists follow"),
    "environment": ("Minimal environment", "started by the client from `/`: the server sees "
                                           "only the client's whitelisted variables"),
    "example-gift": ("examples/gift_server.py",
                     "tools, resource, prompt; structured gifts; `isError` for bad budget/arguments"),
    "example-calculator": ("examples/calculator.py", "`add` with structured result; bad arguments"),
    "example-weather": ("examples/weather.py", "`get_weather`: text result; unknown city `isError`"),
}

_ROWS = []          # (client label, version, mode label, feature key, result, note)


def pytest_configure(config):
    config.addinivalue_line("markers", "compat(feature): a row of tests/compat_table.md")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    marker = item.get_closest_marker("compat")
    driver = getattr(item, "funcargs", {}).get("sdk_client")
    if marker is None or not isinstance(driver, Driver):
        return report
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if hasattr(report, "wasxfail"):
            result = "xfail" if report.skipped else "FAIL (xpass)"
        elif report.passed:
            result = "pass"
        elif report.skipped:
            result = "skip"
        else:
            result = "FAIL"
        notes = [value for key, value in item.user_properties if key == "compat_note"]
        if hasattr(report, "wasxfail") and report.wasxfail:
            notes.append(report.wasxfail)
        for feature in marker.args:
            _ROWS.append((driver.label, driver.version, driver.mode_label, feature, result,
                          "; ".join(notes)))
    return report


@pytest.fixture
def compat_note(request):
    """compat_note("...") adds a note to this test's cell of the table."""
    return lambda note: request.node.user_properties.append(("compat_note", note))


def pytest_sessionfinish(session, exitstatus):
    if not _ROWS or hasattr(session.config, "workerinput"):
        return
    rows = {}
    # Keep what an earlier run found for the cells this run did not check (another client,
    # a -k selection); drop features that no longer exist.
    for row in read_rows():
        if row[3] in FEATURES:
            rows[(row[0], row[2], row[3])] = row
    fresh = {}
    for row in _ROWS:
        key = (row[0], row[2], row[3])
        # One feature may be checked by several tests: the worst result wins.
        if key not in fresh or fresh[key][4] == "pass":
            fresh[key] = row
    rows.update(fresh)
    TABLE.write_text(render_table(list(rows.values())))


def read_rows():
    if not TABLE.exists():
        return []
    match = re.search(r"<!-- rows\n(.*?)-->", TABLE.read_text(), re.S)
    if not match:
        return []
    return [tuple(json.loads(line)) for line in match.group(1).splitlines() if line.strip()]


def render_table(rows):
    clients = []                       # (label, version, mode) in a fixed order
    for row in rows:
        if row[0:3] not in clients:
            clients.append(row[0:3])
    clients.sort(key=lambda c: (not c[0].startswith("Python"), "legacy" in c[2]))
    short = {c: ("Python " + ("auto" if "auto" in c[2] else "legacy")) if c[0].startswith("Python")
             else "TypeScript" for c in clients}
    cells = {(row[0:3], row[3]): (row[4], row[5]) for row in rows}
    lines = ["<!-- Generated by tests/sdk_compat.py when tests/test_sdk_python.py and "
             "tests/test_sdk_typescript.py run; do not edit by hand. -->", "",
             "| client | version | mode | what was exercised | result |",
             "| --- | --- | --- | --- | --- |"]
    for c in clients:
        results = [cells[(c, f)][0] for f in FEATURES if (c, f) in cells]
        passed = results.count("pass")
        summary = f"{passed}/{len(results)} pass"
        others = {r: results.count(r) for r in sorted(set(results)) if r != "pass"}
        if others:
            summary += ", " + ", ".join(f"{n} {r}" for r, n in others.items())
        lines.append(f"| {c[0]} | {c[1]} | {c[2]} | {len(results)} features (below), against "
                     f"`tests/servers/sdk_features.py` and the three examples | {summary} |")
    lines += ["", "| feature | exercised | " + " | ".join(short[c] for c in clients) + " |",
              "| --- | --- | " + " | ".join("---" for _ in clients) + " |"]
    footnotes = []
    for key, (name, exercised) in FEATURES.items():
        row = []
        for c in clients:
            result, note = cells.get((c, key), ("–", ""))
            if note:
                if note not in footnotes:
                    footnotes.append(note)
                result += f" [{footnotes.index(note) + 1}]"
            row.append(result)
        if any(r != "–" for r in row):
            lines.append(f"| {name} | {exercised} | " + " | ".join(row) + " |")
    if footnotes:
        lines.append("")
        lines += [f"[{i}] {note}  " for i, note in enumerate(footnotes, 1)]
    lines += ["", "<!-- rows"]
    lines += [json.dumps(list(row), ensure_ascii=False) for row in sorted(rows)]
    lines += ["-->", ""]
    return "\n".join(lines)
