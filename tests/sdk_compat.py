"""Running the official SDK clients against mcp_min servers, and the compatibility table.

Shared by tests/test_sdk_python.py, tests/test_sdk_typescript.py and
tests/test_sdk_typescript_v2.py, which load it with ``pytest_plugins = ["sdk_compat"]``:

* ``Driver`` runs one of the client drivers in tests/clients/ (``py_client.py``,
  ``ts_client.mjs``, ``ts2_client.mjs``; the step language is in tests/clients/README.md) on a
  list of steps and returns a ``Run``: its JSON records, looked up by step label.
* ``MODES``: every client and mode the tests drive, how the table names it, and the
  protocol era its runs must end up in: the handshake era (``initialize``) or 2026-07-28.
* ``SCENARIOS``: the step lists every client runs. Each runs once per client and mode
  (``Driver.scenario`` caches it); a step marked ``"era"`` runs only in that era (where
  the eras do a feature differently). The tests then check one feature each in its records.
* The plugin part: a test marked ``@pytest.mark.compat("feature")`` that uses the
  ``sdk_client`` fixture adds a row (client, version, mode, what it negotiated, feature,
  result) to the table; at the end of the session ``tests/compat_table.md`` is rewritten
  from these rows (cells this test run did not check, e.g. another client's, are kept
  from the last file).
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

#: The two eras a run can end up in: the initialize handshake, or stateless 2026-07-28.
LEGACY, MODERN = "legacy", "2026-07-28"


@dataclass(frozen=True)
class Mode:
    """How the table names one client in one mode, and the era the suite expects of it."""

    label: str          # the mode, in the summary table
    short_label: str    # its column in the feature table
    era: str            # LEGACY or MODERN: which expectations (and era-marked steps) apply


#: The npm package of each TypeScript client, installed in tests/clients/node_modules.
NODE_PACKAGES = {"ts": "@modelcontextprotocol/sdk", "ts2": "@modelcontextprotocol/client"}
#: client -> its name in the table.
CLIENT_LABELS = {"py": "Python SDK `mcp`", "ts": "TypeScript SDK `@modelcontextprotocol/sdk`",
                 "ts2": "TypeScript v2 client `@modelcontextprotocol/client`"}
#: (client, mode) -> Mode.
MODES = {
    ("py", "auto"): Mode("auto (default): `server/discover` probe, `initialize` if refused",
                         "Python auto", MODERN),
    ("py", MODERN): Mode("2026-07-28: no probe, every request enveloped", "Python 2026-07-28",
                         MODERN),
    ("py", "legacy"): Mode("legacy: `initialize` only", "Python legacy", LEGACY),
    ("ts", "legacy"): Mode("initialize (its only handshake)", "TypeScript", LEGACY),
    ("ts2", "auto"): Mode("auto: `server/discover` probe on a second server process, then "
                          "2026-07-28", "TS v2 auto", MODERN),
    ("ts2", "pin"): Mode("pin 2026-07-28: the probe (second process) must offer it",
                         "TS v2 pin", MODERN),
    ("ts2", "prior"): Mode("prior discover result: 2026-07-28 with no probe", "TS v2 prior",
                           MODERN),
}
#: How a "connected" record's handshake reads in the table, where a client says it its own
#: way (the TypeScript v2 client probes a second server process).
HANDSHAKES = {"initialize": "through `initialize`", "discover": "through `server/discover`",
              "none": "pinned, no probe", "prior": "from a kept discover result, no probe"}
CLIENT_HANDSHAKES = {
    "ts2": {"discover": "through a `server/discover` probe on a second process"},
}


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

    @classmethod
    def of(cls, client, mode, proc):
        """The run of a finished driver process, which must have printed only JSON records,
        ended with "closed" and exited 0."""
        records = []
        for line in proc.stdout.splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                raise AssertionError(f"the driver printed a non-JSON line {line[:200]!r}; "
                                     f"stderr:\n{proc.stderr[-2000:]}") from None
        run = cls(client, mode, records, proc.returncode, proc.stderr)
        assert proc.returncode == 0, f"driver failed: {run.describe()}\n{proc.stdout[-3000:]}"
        assert records and records[-1]["event"] == "closed", run.describe()
        return run

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
    """One client (``CLIENT_LABELS``) in one of its modes (``MODES``), running the scenarios
    of ``scenarios`` (by default ``SCENARIOS``)."""

    def __init__(self, client, mode, scenarios=None):
        self.client, self.mode = client, mode
        self.scenarios = SCENARIOS if scenarios is None else scenarios
        self.runs = {}
        node = shutil.which("node") or "node"
        if client == "py":
            self.command = [sys.executable, str(CLIENTS / "py_client.py"), "--mode", mode]
        elif client == "ts2":
            self.command = [node, str(CLIENTS / "ts2_client.mjs"), "--mode", mode]
        else:
            self.command = [node, str(CLIENTS / "ts_client.mjs")]

    @property
    def label(self):
        return CLIENT_LABELS[self.client]

    @property
    def version(self):
        return installed_version(self.client)

    @property
    def mode_label(self):
        return MODES[self.client, self.mode].label

    @property
    def short_label(self):
        return MODES[self.client, self.mode].short_label

    @property
    def era(self):
        return MODES[self.client, self.mode].era

    @property
    def modern(self):
        return self.era == MODERN

    def negotiated(self):
        """What the runs so far negotiated, e.g. "2026-07-28 through `server/discover`"."""
        found = []
        for run in self.runs.values():
            connected = [r for r in run.records if r.get("event") == "connected"]
            if not connected:
                continue
            if (text := describe_negotiation(connected[0], self.client)) not in found:
                found.append(text)
        return "; ".join(found)

    def run(self, steps, server=SDK_FEATURES, *, env=None, capabilities=None, trace=True,
            timeout_ms=15000, cwd=None, log_level=None):
        """Run the client on `steps` against ``python3 server`` (this interpreter), started
        by the client itself; it must connect, run every step and close cleanly."""
        argv = [*self.command, "--timeout", str(timeout_ms)]
        for name, value in (env or {}).items():
            argv += ["--env", f"{name}={value}"]
        if capabilities is not None:
            argv += ["--capabilities", capabilities]
        if cwd is not None:
            argv += ["--cwd", str(cwd)]
        if log_level is not None:
            argv += ["--log-level", log_level]
        if trace:
            argv.append("--trace")
        kept = (str(server), json.dumps(env or {}, sort_keys=True))
        if self.client == "ts2" and self.mode == "prior":
            argv += ["--discover", json.dumps(self.kept_discover_result(kept, server, env, cwd))]
        argv += [json.dumps(steps), "--", sys.executable, str(server)]
        parent_env = dict(os.environ, **{SENTINEL: "leaked"})
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=90, env=parent_env,
                              cwd=ROOT)
        run = Run.of(self.client, self.mode, proc)
        if self.client == "ts2" and self.mode != "prior":
            DISCOVERED.setdefault(kept, run.connected["discover"])
        return run

    @staticmethod
    def kept_discover_result(key, server, env, cwd):
        """The discover result of an earlier auto connection of the v2 client to this server
        (made now when no test has made one yet): what a host keeps to connect with
        ``prior`` next time."""
        if key not in DISCOVERED:
            Driver("ts2", "auto").run([], server, env=env, cwd=cwd, trace=False)
        return DISCOVERED[key]

    def scenario(self, name):
        """Run one of SCENARIOS (once per driver; later calls reuse the records), with the
        steps of this driver's era."""
        if name not in self.runs:
            spec = dict(self.scenarios[name])
            steps = [{k: v for k, v in step.items() if k != "era"} for step in spec.pop("steps")
                     if step.get("era", self.era) == self.era]
            self.runs[name] = self.run(steps, **spec)
        return self.runs[name]


#: (server, environment) -> the discover result a v2 client's auto or pin run got.
DISCOVERED = {}


def describe_negotiation(connected, client=None):
    """A "connected" record -> e.g. "2026-07-28 through `server/discover`"."""
    version, handshake = connected.get("protocolVersion"), connected.get("handshake")
    if not version:
        return ""
    hows = {**HANDSHAKES, **CLIENT_HANDSHAKES.get(client, {})}
    how = hows.get(handshake, handshake)
    return f"{version} {how}" if how else version


def installed_version(client):
    if client == "py":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("mcp")
        except PackageNotFoundError:
            return None
    manifest = CLIENTS / "node_modules" / NODE_PACKAGES[client] / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


def pinned_version(client):
    """The version tests/requirements.txt or tests/clients/package.json pins."""
    if client == "py":
        text = (TESTS / "requirements.txt").read_text()
        return re.search(r"^mcp==(\S+)$", text, re.M).group(1)
    manifest = json.loads((CLIENTS / "package.json").read_text())
    return manifest["dependencies"][NODE_PACKAGES[client]]


def typescript_missing(client="ts"):
    """Why the TypeScript client ("ts", or the v2 client "ts2") cannot run here, or None."""
    package = NODE_PACKAGES[client]
    node = shutil.which("node")
    if node is None:
        return "node is not installed (bash tests/run.sh needs node 20 and npm)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    major = re.match(r"v(\d+)", version)
    if not major or int(major.group(1)) < 20:
        return f"node {version or '?'} is too old: {package} needs node 20 or later"
    if installed_version(client) is None:
        return (f"{package} is not in tests/clients/node_modules: bash tests/run.sh installs "
                "it (or: cd tests/clients && npm ci)")
    return None


# ==========================================================================================
# Scenarios: the same steps for every client
# ==========================================================================================

def call(label, name, arguments=None, **extra):
    return {"op": "callTool", "label": label, "name": name, "arguments": arguments or {}, **extra}


def legacy(step):
    """A step only the handshake era runs (its 2026-07-28 counterpart follows it)."""
    return dict(step, era=LEGACY)


def modern(step):
    """A step only the 2026-07-28 era runs."""
    return dict(step, era=MODERN)


LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"


PROMPT_REF = {"type": "ref/prompt", "name": "greet"}
ITEM_REF = {"type": "ref/resource", "uri": "test://sdk/items/{category}/{item_id}"}
NEW_ROOTS = {"roots": [{"uri": "file:///tmp/mcp-min-new-root", "name": "new root"},
                       {"uri": "file:///tmp/mcp-min-other"}]}
CUSTOM_SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "custom reply"},
                 "model": "custom-model", "stopReason": "endTurn"}

#: The steps of FEATURE_STEPS the TypeScript v2 client's scenario runs too.
#: Pagination: two items per page.
LISTING_STEPS = [
    {"op": "listTools", "label": "tools.all"},
    call("tool.forged.paged", "forged"),            # on page 4 of the 13 just walked
    {"op": "listTools", "all": False, "label": "tools.page1"},
    {"op": "listTools", "cursor": "not-a-cursor", "label": "tools.badcursor"},
    {"op": "listResources", "label": "resources.all"},
    {"op": "listResourceTemplates", "label": "templates.all"},
    {"op": "listPrompts", "label": "prompts.all"},
]
#: Tool results beyond text and structured output.
TOOL_RESULT_STEPS = [
    call("tool.image", "picture"),
    call("tool.audio", "sound"),
    call("tool.link", "link"),
    {"op": "readResource", "uri": "test://sdk/text", "label": "tool.link.follow"},
    call("tool.embed", "embed"),
    call("tool.isError", "refuse", {"reason": "policy"}),
    call("tool.badargs", "stats", {"numbers": "one two"}),
    call("tool.unknown", "no_such_tool"),
]
#: Resources, prompts and completion.
RESOURCE_PROMPT_COMPLETION_STEPS = [
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
]

# Where the eras do a feature differently, a step is marked legacy() or modern(); a modern
# step often keeps the label of the legacy one it replaces, so that a test reads one label.
FEATURE_STEPS = [
    {"op": "ping", "label": "ping"},                # 2026-07-28 removed ping: -32601
    # the server's own description (a client pinned to 2026-07-28 never asks for it)
    modern({"op": "request", "method": "server/discover", "label": "discover"}),
    *LISTING_STEPS,                                 # pagination
    # tool results of every kind
    call("tool.text", "echo", {"text": "héllo ✓ \"quoted\"\nnew line"}),
    *TOOL_RESULT_STEPS,
    *RESOURCE_PROMPT_COMPLETION_STEPS,
    # logging: the level a handshake session sets; in 2026-07-28, the level in each request
    {"op": "setLoggingLevel", "level": "warning", "label": "log.set.warning"},
    legacy(call("log.chatty.warning", "chatty")),
    modern(call("log.chatty.warning", "chatty", meta={LOG_LEVEL_KEY: "warning"})),
    {"op": "setLoggingLevel", "level": "debug", "label": "log.set.debug"},
    legacy(call("log.chatty.debug", "chatty")),
    modern(call("log.chatty.debug", "chatty", meta={LOG_LEVEL_KEY: "debug"})),
    modern(call("log.chatty.none", "chatty")),
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
    # subscriptions: resources/subscribe (2026-07-28: -32601), or a subscriptions/listen stream
    {"op": "subscribeResource", "uri": "test://sdk/counter", "label": "sub.subscribe"},
    modern({"op": "listen", "name": "sub", "resourceSubscriptions": ["test://sdk/counter"],
            "label": "sub.listen"}),
    call("sub.bump1", "bump"),
    legacy({"op": "waitFor", "method": "notifications/resources/updated", "timeoutMs": 5000,
            "label": "sub.wait"}),
    modern({"op": "waitFor", "listen": "sub", "timeoutMs": 5000, "label": "sub.wait"}),
    {"op": "readResource", "uri": "test://sdk/counter", "label": "sub.read"},
    {"op": "unsubscribeResource", "uri": "test://sdk/counter", "label": "sub.unsubscribe"},
    modern({"op": "stopListen", "listen": "sub", "label": "sub.stop"}),
    call("sub.bump2", "bump"),
    legacy({"op": "ping"}),
    # list_changed: to a handshake session that was offered it; in 2026-07-28, on a listen
    modern({"op": "listen", "name": "lc", "toolsListChanged": True, "label": "lc.listen"}),
    call("lc.add", "toggle_extra", {"present": True}),
    legacy({"op": "waitFor", "method": "notifications/tools/list_changed", "timeoutMs": 5000,
            "label": "lc.wait1"}),
    modern({"op": "waitFor", "listen": "lc", "timeoutMs": 5000, "label": "lc.wait1"}),
    {"op": "listTools", "label": "lc.list-with"},
    call("lc.call-extra", "extra", {"word": "hi"}),
    call("lc.remove", "toggle_extra", {"present": False}),
    legacy({"op": "waitFor", "method": "notifications/tools/list_changed", "count": 2,
            "timeoutMs": 5000, "label": "lc.wait2"}),
    modern({"op": "waitFor", "listen": "lc", "count": 2, "timeoutMs": 5000, "label": "lc.wait2"}),
    {"op": "listTools", "label": "lc.list-without"},
    call("lc.call-removed", "extra"),
    # once the listen is cancelled, changes reach the client no more
    modern({"op": "stopListen", "listen": "lc", "label": "lc.stop"}),
    modern(call("lc.add-after", "toggle_extra", {"present": True})),
    modern(call("lc.remove-after", "toggle_extra", {"present": False})),
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

#: Run with the client's own log level (Client(log_level="warning")): 2026-07-28 only.
LOG_LEVEL_STEPS = [
    call("client-level", "chatty"),
    call("overridden", "chatty", meta={LOG_LEVEL_KEY: "debug"}),
    {"op": "waitFor", "method": "notifications/message", "count": 13, "timeoutMs": 5000},
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
    call("pick", "pick_gift", {"occasion": "birthday", "budget": 50}),    # asks the user
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
    "log-level": {"steps": LOG_LEVEL_STEPS, "log_level": "warning"},
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
#: "2026-07-28:" says how a feature is done, or refused, in that era.
FEATURES = {
    "handshake": ("Handshake, version negotiation",
                  "`initialize` at 2025-11-25 agreed, then `notifications/initialized`; "
                  "serverInfo, capabilities, instructions. 2026-07-28: auto mode's "
                  "`server/discover` probe answered with `supportedVersions` [2026-07-28], "
                  "no `initialize`; the pinned mode sends no probe, its first request is "
                  "enveloped"),
    "ping": ("Ping", "`ping` → `{}`. 2026-07-28: removed, -32601"),
    "metadata": ("Metadata", "serverInfo title, description, websiteUrl, icons; tool icons, "
                             "annotations, `_meta`; resource size and annotations; content "
                             "annotations. 2026-07-28: serverInfo in `_meta`"),
    "result-type": ("Result fields of 2026-07-28",
                    "every result has `resultType` and the serverInfo in `_meta`; list results "
                    "`ttlMs` 0 and `cacheScope` (so the client caches nothing), other results "
                    "neither. Handshake era: none of these fields"),
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
                  "text, blob, `{var}` and `{+var}` templates; unknown URI → -32002 "
                  "(2026-07-28: -32602)"),
    "subscriptions": ("Subscriptions",
                      "subscribe → `notifications/resources/updated`; none after unsubscribe. "
                      "2026-07-28: `resources/subscribe` → -32601; `subscriptions/listen` with "
                      "`resourceSubscriptions`: acknowledged, the update tagged with the listen "
                      "id, none after the listen is cancelled"),
    "prompts": ("Prompts",
                "arguments (a string converted to int), user and assistant turns, an embedded "
                "resource; a missing required argument → -32602"),
    "completion": ("Completion", "a prompt argument; a template argument using context arguments"),
    "logging": ("Logging", "`logging/setLevel` warning, then debug: `notifications/message` "
                           "filtered. 2026-07-28: `logging/setLevel` → -32601; the level a "
                           "request (or the client, for all) puts in `_meta`; none without"),
    "progress": ("Progress",
                 "progress token from the client; notifications in order, with total and message, "
                 "all before the response"),
    "cancellation": ("Cancellation",
                     "cancelled by timer and from the progress callback: the tool stops, no "
                     "response; a tool ignoring it: result withheld; a call waiting for "
                     "sampling: the sampling request cancelled too (2026-07-28: the call is "
                     "abandoned while the client's callback runs, and never retried)"),
    "sampling": ("Sampling", "`sampling/createMessage` answered by the client callback: default, "
                             "custom result, error. 2026-07-28: asked in an `input_required` "
                             "result, retried with `inputResponses` and `requestState`"),
    "elicitation": ("Elicitation",
                    "`elicitation/create` (form) answered: accept with content, decline. "
                    "2026-07-28: through `input_required`, as sampling"),
    "roots": ("Roots", "`roots/list` answered; cached; refreshed after "
                       "`notifications/roots/list_changed`. 2026-07-28: through "
                       "`input_required`, asked by every call"),
    "undeclared-capabilities": ("Undeclared client capabilities",
                                "sampling/elicitation/roots tools get `isError` (2026-07-28: "
                                "-32021 with `requiredCapabilities`); no request is sent"),
    "list-changed": ("List changed", "a tool added and removed while serving → "
                                     "`notifications/tools/list_changed`; lists follow. "
                                     "2026-07-28: only on a `subscriptions/listen` stream, "
                                     "tagged with its id; none after it is cancelled"),
    "environment": ("Minimal environment", "started by the client from `/`: the server sees "
                                           "only the client's whitelisted variables"),
    "example-gift": ("examples/gift_server.py",
                     "tools, resource, prompt; structured gifts; `isError` for bad "
                     "budget/arguments; a tool asking the user (elicitation)"),
    "example-calculator": ("examples/calculator.py", "`add` with structured result; bad arguments"),
    "example-weather": ("examples/weather.py", "`get_weather`: text result; unknown city `isError`"),
}

#: The rows of this session: dicts with the keys of ROW_KEYS.
_ROWS = []
ROW_KEYS = ("client", "version", "mode", "short", "negotiated", "feature", "result", "note")


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
            _ROWS.append({"client": driver.label, "version": driver.version,
                          "mode": driver.mode_label, "short": driver.short_label,
                          "negotiated": driver.negotiated(), "feature": feature,
                          "result": result, "note": "; ".join(notes)})
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
        if row["feature"] in FEATURES:
            rows[row_key(row)] = row
    fresh = {}
    for row in _ROWS:
        key = row_key(row)
        # One feature may be checked by several tests: the worst result wins; and what a
        # client negotiated is known once one of its tests has run it.
        if key not in fresh or fresh[key]["result"] == "pass":
            fresh[key] = dict(row, negotiated=row["negotiated"] or
                              (fresh[key]["negotiated"] if key in fresh else ""))
    rows.update(fresh)
    TABLE.write_text(render_table(list(rows.values())))


def row_key(row):
    return row["client"], row["mode"], row["feature"]


def read_rows():
    """The rows of the last table (rows of another shape, from an older table, are dropped:
    the next run of their tests writes them again)."""
    if not TABLE.exists():
        return []
    match = re.search(r"<!-- rows\n(.*?)-->", TABLE.read_text(), re.S)
    if not match:
        return []
    rows = [json.loads(line) for line in match.group(1).splitlines() if line.strip()]
    return [row for row in rows if isinstance(row, dict) and set(row) == set(ROW_KEYS)]


def render_table(rows):
    """The table for `rows` (dicts of ROW_KEYS): one summary line per client and mode, then
    one line per feature with a column per client and mode, headed by its short label."""
    columns = sorted({(row["client"], row["mode"]) for row in rows},
                     key=lambda c: (c[0], short_label(rows, c)))
    cells = {(row["client"], row["mode"], row["feature"]): row for row in rows}
    lines = ["<!-- Generated by tests/sdk_compat.py when the tests/test_sdk_*.py files run; "
             "do not edit by hand. -->", "",
             "| client | version | mode | negotiated | what was exercised | result |",
             "| --- | --- | --- | --- | --- | --- |"]
    for column in columns:
        mine = [cells[(*column, f)] for f in FEATURES if (*column, f) in cells]
        results = [row["result"] for row in mine]
        summary = f"{results.count('pass')}/{len(results)} pass"
        others = {r: results.count(r) for r in sorted(set(results)) if r != "pass"}
        if others:
            summary += ", " + ", ".join(f"{n} {r}" for r, n in others.items())
        negotiated = "; ".join(dict.fromkeys(row["negotiated"] for row in mine
                                             if row["negotiated"])) or "–"
        lines.append(f"| {column[0]} | {mine[0]['version']} | {column[1]} | {negotiated} | "
                     f"{len(results)} features (below), against "
                     f"`tests/servers/sdk_features.py` and the three examples | {summary} |")
    lines += ["", "| feature | exercised | " +
              " | ".join(short_label(rows, c) for c in columns) + " |",
              "| --- | --- | " + " | ".join("---" for _ in columns) + " |"]
    footnotes = []
    for key, (name, exercised) in FEATURES.items():
        line = []
        for column in columns:
            row = cells.get((*column, key))
            if row is None:
                line.append("–")
                continue
            result = row["result"]
            if row["note"]:
                if row["note"] not in footnotes:
                    footnotes.append(row["note"])
                result += f" [{footnotes.index(row['note']) + 1}]"
            line.append(result)
        if any(cell != "–" for cell in line):
            lines.append(f"| {name} | {exercised} | " + " | ".join(line) + " |")
    if footnotes:
        lines.append("")
        lines += [f"[{i}] {note}  " for i, note in enumerate(footnotes, 1)]
    lines += ["", "<!-- rows"]
    lines += [json.dumps({k: row[k] for k in ROW_KEYS}, ensure_ascii=False)
              for row in sorted(rows, key=row_key)]
    lines += ["-->", ""]
    return "\n".join(lines)


def short_label(rows, column):
    """The column header of a client and mode: its short label (the latest row's)."""
    labels = [row["short"] for row in rows if (row["client"], row["mode"]) == column]
    return labels[-1] if labels else column[1]
