"""The gift picker's widget in a real browser, shown by a real MCP Apps host.

tests/clients/apps/viewer.py serves examples/gift_server.py over HTTP (mcp_min's embedded
server) and, on the same origin, a host page: the official AppBridge of
@modelcontextprotocol/ext-apps beside the official MCP client, bundled with esbuild
(pinned in tests/clients/apps/package-lock.json). Debian's headless Chromium, driven by
playwright-core (tests/clients/apps/drive.mjs), loads the page in each era: the host lists
the tools, reads the widget, renders it in a sandboxed iframe and sends it the tool's
arguments and result; the widget shows the gifts, and its button calls suggest_gifts
again through the host. A screenshot of each run is kept in the test's tmp_path.

Needs chromium (.ci/run installs it; `apt install chromium`), node, and the packages
`npm ci` puts in tests/clients/apps/node_modules (bash tests/run.sh does it).
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from urllib.parse import quote

import pytest

from conftest import ROOT, require_tool, stop_process

import mcp_min

# The host is the official MCP Apps SDK's: like the other SDK clients, its packages come from
# npm, so the runs without them (CI's other CPythons, `-m "not sdk"`) leave this module out.
pytestmark = pytest.mark.sdk

APPS = ROOT / "tests" / "clients" / "apps"
GIFT_SERVER = ROOT / "examples" / "gift_server.py"
ARGUMENTS = {"occasion": "birthday", "budget": 25, "recipient": "friend who loves board games"}


def require_packages():
    """node and the pinned packages; missing, a skip saying how to get them (in CI, which
    installs them, a failure)."""
    missing = [name for name in ("playwright-core", "esbuild", "@modelcontextprotocol/ext-apps")
               if not (APPS / "node_modules" / name / "package.json").exists()]
    if shutil.which("node") is None or missing:
        message = (f"node or {', '.join(missing) or 'its packages'} missing: the browser test "
                   "needs them (bash tests/run.sh runs npm ci in tests/clients/apps)")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def chromium():
    path = require_tool("chromium", "the widget is shown in a real browser")
    require_packages()
    return path


@pytest.fixture(scope="module")
def viewer(chromium):
    """viewer.py serving the gift server on a free port: its URL, and its stderr's lines
    (each tools/call the server takes is one) as they come."""
    proc = subprocess.Popen([sys.executable, str(APPS / "viewer.py"), str(GIFT_SERVER),
                             "--port", "0"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr],
                              daemon=True)
    reader.start()
    seen = []
    deadline = time.monotonic() + 60
    while not any(line.startswith("viewer: open ") for line in seen):
        try:
            seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
        except queue.Empty:
            break
    if not seen or not seen[-1].startswith("viewer: open "):
        stop_process(proc)
        raise AssertionError("viewer.py did not start:\n" + "".join(seen))
    yield seen[-1].split()[-1], lines
    stop_process(proc)
    reader.join(5)
    proc.stderr.close()


def served_calls(lines, timeout=5):
    """The tools/call the server printed (viewer.py logs each it takes) until now."""
    calls, deadline = [], time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            return calls
        if line.startswith("viewer: tools/call "):
            calls.append(json.loads(line[len("viewer: tools/call "):]))
        deadline = min(deadline, time.monotonic() + 0.5)


def gift_names(**arguments):
    """The gifts suggest_gifts names for these arguments, asked without a browser."""
    with mcp_min.Client(mcp_min.load_server(str(GIFT_SERVER))) as client:
        result = client.call_tool("suggest_gifts", arguments)
    return [gift["name"] for gift in result["structuredContent"]["gifts"]]


@pytest.mark.parametrize("era, version", [("handshake", mcp_min.LATEST_PROTOCOL_VERSION),
                                          ("stateless", mcp_min.V2026_07)])
def test_the_widget_shows_the_gifts_and_its_button_calls_the_server(viewer, chromium, era,
                                                                     version, tmp_path):
    url, lines = viewer
    served_calls(lines, timeout=0.1)
    page = f"{url}?era={era}&args={quote(json.dumps(ARGUMENTS))}"
    screenshot = tmp_path / f"gift-picker-{era}.png"
    run = subprocess.run(["node", str(APPS / "drive.mjs"), chromium, page, str(screenshot)],
                         capture_output=True, text=True, timeout=120, cwd=APPS)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    report = json.loads(run.stdout)
    host = report["host"]
    # The host spoke the era asked for, and the server declared MCP Apps in it
    assert host["protocolVersion"] == version
    assert host["serverCapabilities"]["extensions"] == {"io.modelcontextprotocol/ui": {}}
    assert host["resourceMeta"]["ui"] == {"prefersBorder": True}
    # The widget's DOM shows what the server suggested, then what the button asked for
    doubled = dict(ARGUMENTS, budget=50)
    assert report["before"] == gift_names(**ARGUMENTS)
    assert report["after"] == gift_names(**doubled) != report["before"]
    assert report["titleAfter"] == "Gift ideas for a birthday, up to $50"
    # Both calls reached the server: the host's, then the one the widget's button made
    assert served_calls(lines) == [{"name": "suggest_gifts", "arguments": ARGUMENTS},
                                   {"name": "suggest_gifts", "arguments": doubled}]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 5000
