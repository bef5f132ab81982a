"""mcp_min servers driven by the official TypeScript v2 client (``@modelcontextprotocol/client``,
pinned in tests/clients/package.json and its lock file; ``bash tests/run.sh`` installs it),
which speaks the stateless 2026-07-28 era. It picks the era in one of three ways, each a
module-level parameter here:

* ``auto``: ``versionNegotiation: {mode: 'auto'}``. With its own stdio transport the client
  sends the ``server/discover`` probe to a short-lived second copy of the server, kills it,
  and starts the real session already in the new era;
* ``pin``: ``versionNegotiation: {mode: {pin: '2026-07-28'}}``: the same probe, which must
  offer that version (no fallback);
* ``prior``: ``connect(transport, {prior: {kind: 'modern', discover}})`` with a discover
  result kept from an earlier connection: no probe at all.

The client runs in tests/clients/ts2_client.mjs (the step language of tests/clients/README.md,
``listen``/``stopListen`` included); it records the session's every JSON-RPC message, and the
probe's apart. The servers: tests/servers/sdk_features.py, tests/servers/modern.py (several
rounds of questions, cache hints) and three examples. Each test checks one feature in the
records of one scenario run (each runs once per mode); those marked ``compat`` add rows to
tests/compat_table.md (sdk_compat.py).
"""

import base64
import json
import shutil
import subprocess
import sys

import pytest

from sdk_compat import (CALCULATOR_STEPS, CLIENTS, CUSTOM_SAMPLE, EXAMPLES,  # noqa: E402
                        LISTING_STEPS, NEW_ROOTS, RESOURCE_PROMPT_COMPLETION_STEPS,
                        TOOL_RESULT_STEPS, WEATHER_STEPS, Driver, call, close, pinned_version,
                        text_of, typescript_missing)

if (reason := typescript_missing("ts2")) is not None:
    pytest.skip(reason, allow_module_level=True)

from sdk_suite import (check_calculator, check_completion,  # noqa: E402
                       check_cursor_walk_and_one_page, check_minimal_environment, check_prompts,
                       check_text_result, check_tool_errors, check_weather)

pytest_plugins = ["sdk_compat"]
pytestmark = pytest.mark.sdk
compat = pytest.mark.compat

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUB_ID = "io.modelcontextprotocol/subscriptionId"
#: What the driver declares (all of --capabilities) and how it names itself.
DECLARED = {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}}
DRIVER_INFO = {"name": "mcp-min-ts2-driver", "version": "1.0.0"}
MODES = ["auto", "pin", "prior"]
#: Results a client may cache: they carry ttlMs and cacheScope.
CACHEABLE = {"tools/list", "prompts/list", "resources/list", "resources/templates/list",
             "resources/read", "server/discover"}
MODERN = CLIENTS.parent / "servers" / "modern.py"
TOOLS = ["echo", "stats", "point", "moments", "naive_time", "pair", "mismatch", "forged",
         "fail_with_data", "picture", "sound", "link", "embed", "refuse", "slow", "stubborn",
         "cancellations", "progress", "chatty", "ask_model", "ask_user", "roots", "toggle_extra",
         "bump", "environment"]
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
DEFAULT_ROOTS = [{"uri": "file:///tmp/mcp-min-root", "name": "test root"}]


# ==========================================================================================
# The scenarios: what each mode runs against each server
# ==========================================================================================

FEATURE_STEPS = [
    call("tool.forged.unlisted", "forged"),           # before any tools/list
    *LISTING_STEPS,
    # tools
    call("tool.text", "echo", {"text": "héllo ✓ \"quoted\"\nnew line"}),
    call("structured.typeddict", "stats", {"numbers": [1, 2, 3.5]}),
    call("structured.dataclass", "point", {"x": 1.5, "y": -2}),
    call("structured.moments", "moments"),
    call("structured.pair", "pair"),
    call("structured.mismatch", "mismatch"),
    call("structured.error-data", "fail_with_data"),
    *TOOL_RESULT_STEPS,
    *RESOURCE_PROMPT_COMPLETION_STEPS,
    # logging: asked for per request, in the request's _meta
    {"op": "setLoggingLevel", "level": "debug", "label": "log.setLevel"},
    call("log.warning", "chatty", meta={LOG_LEVEL: "warning"}),
    call("log.debug", "chatty", meta={LOG_LEVEL: "debug"}),
    call("log.none", "chatty"),
    {"op": "waitFor", "method": "notifications/message", "count": 13, "timeoutMs": 5000,
     "label": "log.wait"},
    # progress (a pause after each report: see the burst case in sdk_suite.test_progress)
    call("progress.paced", "progress", {"steps": 3, "pause_ms": 100}, progress=True),
    # cancellation
    call("cancel.timer", "slow", {"ticks": 200, "tick_ms": 20}, cancelAfterMs=250),
    call("cancel.progress", "slow", {"ticks": 200, "tick_ms": 20}, cancelOnProgress=2),
    {"op": "sleep", "ms": 300},           # let the tool see the second cancellation
    call("cancel.seen", "cancellations"),
    # sampling, elicitation, roots: input_required results the client fulfils and retries
    call("sampling.default", "ask_model", {"question": "What is MCP?"}),
    {"op": "onSampling", "result": CUSTOM_SAMPLE},
    call("sampling.custom", "ask_model", {"question": "Again?"}),
    {"op": "onSampling", "error": {"code": -1, "message": "the user declined to sample"}},
    call("sampling.error", "ask_model", {"question": "And now?"}),
    {"op": "onSampling"},
    call("elicit.accept", "ask_user"),
    {"op": "onElicit", "result": {"action": "decline"}},
    call("elicit.decline", "ask_user"),
    call("roots.first", "roots"),
    {"op": "onRoots", "result": NEW_ROOTS},
    call("roots.second", "roots"),
    # subscriptions/listen
    call("sub.before", "bump"),                      # nobody listens yet
    {"op": "listen", "name": "sub", "toolsListChanged": True,
     "resourceSubscriptions": ["test://sdk/counter"], "label": "listen"},
    call("sub.bump", "bump"),
    {"op": "waitFor", "listen": "sub", "timeoutMs": 5000, "label": "sub.wait"},
    {"op": "readResource", "uri": "test://sdk/counter", "label": "sub.read"},
    call("lc.add", "toggle_extra", {"present": True}),
    {"op": "waitFor", "listen": "sub", "count": 2, "timeoutMs": 5000, "label": "lc.wait1"},
    {"op": "listTools", "label": "lc.list-with"},
    call("lc.call-extra", "extra", {"word": "hi"}),
    call("lc.remove", "toggle_extra", {"present": False}),
    {"op": "waitFor", "listen": "sub", "count": 3, "timeoutMs": 5000, "label": "lc.wait2"},
    {"op": "listTools", "label": "lc.list-without"},
    call("lc.call-removed", "extra"),
    {"op": "stopListen", "listen": "sub", "label": "listen.stop"},
    call("sub.after", "bump"),                       # the listen is over: nothing more
    call("lc.after", "toggle_extra", {"present": True}),
    # methods the era removed: the client refuses them itself
    {"op": "ping", "label": "removed.ping"},
    {"op": "subscribeResource", "uri": "test://sdk/counter", "label": "removed.subscribe"},
    call("env", "environment"),
    {"op": "sleep", "ms": 100},          # let late notifications arrive before the end
]

NO_CAPABILITY_STEPS = [
    call("nocap.sampling", "ask_model", {"question": "hi"}),
    call("nocap.elicitation", "ask_user"),
    call("nocap.roots", "roots"),
]

# tests/servers/modern.py with a cache lifetime: what the feature server lacks (several
# rounds of questions, prompts and resources that ask, URL elicitation, cacheable results).
MODERN_STEPS = [
    {"op": "listTools", "label": "cache.tools.first"},
    {"op": "listTools", "label": "cache.tools.again"},
    call("mrtr.interview", "interview", {"topic": "tea"}),
    {"op": "getPrompt", "name": "poem", "label": "mrtr.prompt"},
    {"op": "readResource", "uri": "test://modern/ask", "label": "mrtr.resource"},
    call("mrtr.url", "secret_link"),
    {"op": "readResource", "uri": "test://modern/text", "label": "cache.read.first"},
    {"op": "readResource", "uri": "test://modern/text", "label": "cache.read.again"},
    {"op": "listen", "name": "tools", "toolsListChanged": True, "label": "cache.listen"},
    call("cache.toggle", "toggle", {"present": True}),
    {"op": "waitFor", "listen": "tools", "timeoutMs": 5000, "label": "cache.changed"},
    {"op": "listTools", "label": "cache.tools.after-change"},
    {"op": "stopListen", "listen": "tools", "label": "cache.stop"},
]

MISSING_GIFT = "mcp://gift-server/resources/no_such_thing"
RECIPIENT = {"action": "accept", "content": {"recipient": "friend who loves board games"}}
# The steps the other clients run on the examples (sdk_compat), but ping: this era removed it.
GIFT_STEPS = [
    {"op": "listTools", "label": "tools"},
    {"op": "listResources", "label": "resources"},
    {"op": "listPrompts", "label": "prompts"},
    call("suggest", "suggest_gifts", {"occasion": "birthday", "budget": 50,
                                      "recipient": "friend who loves board games"}),
    call("suggest.zero", "suggest_gifts", {"occasion": "birthday", "budget": 0}),
    call("suggest.badargs", "suggest_gifts", {"occasion": "funeral", "budget": "a hundred bucks"}),
    call("suggest.none", "suggest_gifts", {"occasion": "wedding", "budget": 5}),
    {"op": "readResource", "uri": "mcp://gift-server/resources/gift_catalog", "label": "catalog"},
    {"op": "readResource", "uri": MISSING_GIFT, "label": "catalog.missing"},
    {"op": "getPrompt", "name": "gift_congrats_style",
     "arguments": {"recipient": "Sam", "occasion": "wedding"}, "label": "prompt"},
    {"op": "onElicit", "result": RECIPIENT},
    call("pick", "pick_gift", {"occasion": "birthday", "budget": 50}),    # asks the user
]
V2_SCENARIOS = {
    "features": {"steps": FEATURE_STEPS, "cwd": "/"},
    "no-capabilities": {"steps": NO_CAPABILITY_STEPS, "capabilities": "none"},
    "modern": {"steps": MODERN_STEPS, "server": MODERN, "env": {"MODERN_TTL_MS": "60000"}},
    "gift_server": {"steps": GIFT_STEPS, "server": EXAMPLES / "gift_server.py", "cwd": "/"},
    "calculator": {"steps": CALCULATOR_STEPS, "server": EXAMPLES / "calculator.py", "cwd": "/"},
    "weather": {"steps": WEATHER_STEPS, "server": EXAMPLES / "weather.py", "cwd": "/"},
}

@pytest.fixture(scope="module", params=MODES)
def sdk_client(request):
    """The v2 client in one mode: a ``sdk_compat.Driver`` running the scenarios above."""
    return Driver("ts2", request.param, V2_SCENARIOS)


# ==========================================================================================
# Reading the wire
# ==========================================================================================

def probe_wire(run, direction):
    return [r for r in run.records if r["event"] == "probeWire" and r["dir"] == direction]


def results_received(run):
    """(request, result) for every result response of the session."""
    requests = {m["id"]: m for m in run.wire("send") if "method" in m and "id" in m}
    return [(requests[m["id"]], m["result"]) for m in run.wire("recv")
            if "result" in m and m.get("id") in requests]


def rounds(run, method, **params):
    """Every request of one multi-round call, first to last, with what answered each: the
    requests of ``method`` whose params include ``params``."""
    return [(m, run.response_to(m["id"])) for m in run.sent_requests(method, **params)]


def assert_modern_session(run, mode, capabilities=DECLARED):
    """2026-07-28 agreed, and the session's first line already an enveloped request: the probe
    (auto, pin) ran on a separate process, and (prior) there was none."""
    connected = run.connected
    assert connected["sdkVersion"] == pinned_version("ts2")
    assert (connected["protocolVersion"], connected["era"]) == (V, "modern"), connected
    sent = run.wire("send")
    assert sent, run.describe()
    first = sent[0]
    assert "id" in first and first["method"] not in ("server/discover", "initialize"), first
    assert first["params"]["_meta"][PV] == V
    assert first["params"]["_meta"][CAPS] == capabilities
    handshake = {"server/discover", "initialize", "notifications/initialized"}
    assert not [m for m in sent if m.get("method") in handshake]
    probe_sent, probe_recv = probe_wire(run, "send"), probe_wire(run, "recv")
    if mode == "prior":
        assert connected["handshake"] == "prior"
        assert connected["probePids"] == [] and probe_sent == probe_recv == []
        return
    assert connected["handshake"] == "discover"
    [probe_pid] = connected["probePids"]
    assert probe_pid != connected["sessionPid"]
    [probe] = [r["message"] for r in probe_sent]
    [reply] = [r["message"] for r in probe_recv]
    assert {r["pid"] for r in probe_sent + probe_recv} == {probe_pid}
    assert probe["method"] == "server/discover" and isinstance(probe["id"], str)
    assert probe["params"]["_meta"] == {PV: V, INFO: DRIVER_INFO, CAPS: capabilities}
    assert reply["id"] == probe["id"]
    discovered = reply["result"]
    assert discovered["supportedVersions"] == [V] and discovered["resultType"] == "complete"
    assert type(discovered["ttlMs"]) is int and discovered["cacheScope"] in ("public", "private")
    assert "serverInfo" not in discovered and discovered["_meta"][SERVER_INFO]["name"]
    # What the client kept is what the probe process said.
    for key in ("supportedVersions", "capabilities", "instructions"):
        assert connected["discover"].get(key) == discovered.get(key)


# ==========================================================================================
# The tests
# ==========================================================================================

class TestTypeScriptV2Client:

    # ------------------------------------------------------------------------ connection

    @compat("handshake")
    @pytest.mark.parametrize("scenario", list(V2_SCENARIOS))
    def test_negotiates_2026_07_28(self, sdk_client, scenario):
        run = sdk_client.scenario(scenario)
        capabilities = {} if scenario == "no-capabilities" else DECLARED
        assert_modern_session(run, sdk_client.mode, capabilities)
        assert "Traceback" not in run.stderr

    @compat("handshake", "metadata")
    def test_server_identity_from_discover(self, sdk_client):
        run = sdk_client.scenario("features")
        connected = run.connected
        info = connected["serverInfo"]               # from the discover result's _meta
        assert (info["name"], info["version"], info["title"]) == ("sdk-features", "2.0.0",
                                                                 "SDK feature tour")
        icon = {"src": "https://example.com/sdk-features.png", "mimeType": "image/png",
                "sizes": ["48x48"]}
        assert info["websiteUrl"] == "https://example.com/sdk-features" and info["icons"] == [icon]
        echo = run.ok("tools.all")["tools"][0]
        assert echo["title"] == "Echo" and echo["icons"] == [icon]
        assert echo["_meta"] == {"example.com/kind": "demo"}
        assert echo["annotations"]["readOnlyHint"] is True
        text_resource = run.ok("resources.all")["resources"][0]
        assert text_resource["size"] == 23 and text_resource["annotations"]["priority"] == 0.5
        assert connected["instructions"].startswith("A test server")
        caps = connected["capabilities"]
        assert caps["tools"] == {"listChanged": True} and caps["prompts"] == {"listChanged": True}
        assert caps["resources"] == {"subscribe": True, "listChanged": True}
        assert "completions" in caps and "logging" in caps

    @compat("handshake")
    def test_every_request_carries_the_envelope(self, sdk_client):
        run = sdk_client.scenario("features")
        for message in run.wire("send"):
            meta = (message.get("params") or {}).get("_meta") or {}
            if "id" in message:
                assert meta[PV] == V and meta[CAPS] == DECLARED and meta[INFO] == DRIVER_INFO
        # The client stamps its notifications too (the spec asks it of requests only).
        cancels = [m for m in run.wire("send") if m.get("method") == "notifications/cancelled"]
        assert cancels and all(m["params"]["_meta"][PV] == V for m in cancels)
        # A _meta of the caller's own is merged into the envelope.
        chatty = run.sent_requests("tools/call", name="chatty")[0]
        assert chatty["params"]["_meta"][LOG_LEVEL] == "warning"
        assert chatty["params"]["_meta"][PV] == V

    @compat("result-type")
    def test_every_result_says_what_it_is(self, sdk_client):
        """resultType on every result; cache hints where a client may cache; the server's
        name in _meta."""
        for scenario in ("features", "modern", "gift_server"):
            run = sdk_client.scenario(scenario)
            received = results_received(run)
            assert received
            for request, result in received:
                assert result["resultType"] in ("complete", "input_required"), result
                assert result["_meta"][SERVER_INFO]["name"], result
                hinted = request["method"] in CACHEABLE and result["resultType"] == "complete"
                assert ("ttlMs" in result) is hinted and ("cacheScope" in result) is hinted
                if hinted:
                    assert type(result["ttlMs"]) is int and result["ttlMs"] >= 0

    @compat("ping")
    def test_methods_the_era_removed_never_reach_the_wire(self, sdk_client, compat_note):
        compat_note("TypeScript v2 in 2026-07-28: `ping`, `logging/setLevel` and "
                    "`resources/subscribe` fail in the client, which sends nothing")
        run = sdk_client.scenario("features")
        for label, method in (("removed.ping", "ping"), ("log.setLevel", "logging/setLevel"),
                              ("removed.subscribe", "resources/subscribe")):
            error = run.failed(label)
            assert error["code"] is None
            assert error["sdkCode"] == "METHOD_NOT_SUPPORTED_BY_PROTOCOL_VERSION", error
            assert not run.sent_requests(method)

    # ------------------------------------------------------------------------ lists

    @compat("pagination")
    def test_the_client_walks_every_page_itself(self, sdk_client):
        run = sdk_client.scenario("features")
        tools = run.ok("tools.all")
        assert [t["name"] for t in tools["tools"]] == TOOLS
        assert tools["pages"] == 13 and "nextCursor" not in tools      # 25 tools, 2 a page
        for label, key, pages, count in (("resources.all", "resources", 2, 3),
                                         ("templates.all", "resourceTemplates", 2, 3),
                                         ("prompts.all", "prompts", 2, 3)):
            listed = run.ok(label)
            assert (len(listed[key]), listed["pages"]) == (count, pages), label
        check_cursor_walk_and_one_page(run)

    # ------------------------------------------------------------------------ tools

    @compat("tool-text")
    def test_text_result(self, sdk_client):
        check_text_result(sdk_client.scenario("features"))

    @compat("tool-structured")
    def test_structured_output_checked_by_client(self, sdk_client):
        run = sdk_client.scenario("features")
        stats = run.ok("structured.typeddict")
        assert stats["structuredContent"]["count"] == 3
        assert close(stats["structuredContent"]["mean"], 6.5 / 3)
        assert json.loads(text_of(stats)) == stats["structuredContent"]
        assert run.ok("structured.dataclass")["structuredContent"] == {
            "x": 1.5, "y": -2, "label": "(1.5, -2)"}
        mismatch = run.ok("structured.mismatch")
        assert mismatch["isError"] is True and "structuredContent" not in mismatch
        # Forged past mcp_min's check, the output reaches the client, which refuses it.
        forged = run.sent_requests("tools/call", name="forged")[1]
        assert run.response_to(forged["id"])[0]["result"]["structuredContent"] == {
            "n": "not a number"}
        error = run.failed("tool.forged.paged")
        assert error["code"] == -32602 and "output schema" in error["message"]

    @compat("dates", "tuples")
    def test_dates_and_tuples(self, sdk_client):
        run = sdk_client.scenario("features")
        assert run.ok("structured.moments")["structuredContent"] == {
            "at": "2025-11-25T12:30:00+00:00", "day": "2025-11-25"}
        assert run.ok("structured.pair")["structuredContent"] == {"result": [7, "seven"]}

    @compat("validation-differences")
    def test_where_output_checks_differ(self, sdk_client, compat_note):
        """v2 checks every tool of the aggregated listing (v1 only the last page's), not a tool
        it has not listed, and not isError results."""
        compat_note("TypeScript v2 checks every listed tool (it caches the whole listing) but "
                    "neither an unlisted tool nor an `isError` result")
        run = sdk_client.scenario("features")
        assert run.ok("tool.forged.unlisted")["structuredContent"] == {"n": "not a number"}
        assert run.failed("tool.forged.paged")["code"] == -32602
        error_data = run.ok("structured.error-data")
        assert error_data["isError"] is True and error_data["structuredContent"] == {"detail": "x"}

    @compat("tool-media")
    def test_image_and_audio(self, sdk_client):
        run = sdk_client.scenario("features")
        [picture] = run.ok("tool.image")["content"]
        assert picture["mimeType"] == "image/png"
        assert base64.b64decode(picture["data"]).startswith(b"\x89PNG\r\n\x1a\n")
        [sound] = run.ok("tool.audio")["content"]
        assert sound["mimeType"] == "audio/wav" and base64.b64decode(sound["data"])[:4] == b"RIFF"

    @compat("tool-resources")
    def test_resource_link_and_embedded_resources(self, sdk_client):
        run = sdk_client.scenario("features")
        [link] = run.ok("tool.link")["content"]
        assert link["type"] == "resource_link" and link["uri"] == "test://sdk/text"
        assert run.ok("tool.link.follow")["contents"][0]["text"] == "hello from sdk_features"
        intro, text_resource, blob_resource = run.ok("tool.embed")["content"]
        assert text_resource["resource"]["text"] == "hello from sdk_features"
        assert base64.b64decode(blob_resource["resource"]["blob"]) == bytes(range(16))

    @compat("tool-errors")
    def test_tool_errors(self, sdk_client):
        unknown = check_tool_errors(sdk_client.scenario("features"))
        assert unknown["type"] == "ProtocolError"

    # ------------------------------------------------------------------------ resources

    @compat("resources")
    def test_resources_and_templates(self, sdk_client):
        run = sdk_client.scenario("features")
        listed = {r["uri"]: r for r in run.ok("resources.all")["resources"]}
        assert set(listed) == {"test://sdk/text", "test://sdk/blob", "test://sdk/counter"}
        templates = [t["uriTemplate"] for t in run.ok("templates.all")["resourceTemplates"]]
        assert "test://sdk/docs/{+path}" in templates
        assert run.ok("res.text")["contents"] == [
            {"uri": "test://sdk/text", "mimeType": "text/plain", "text": "hello from sdk_features"}]
        [blob] = run.ok("res.blob")["contents"]
        assert base64.b64decode(blob["blob"], validate=True) == bytes(range(16))
        [item] = run.ok("res.template")["contents"]
        assert json.loads(item["text"]) == {"category": "fruit", "id": "apple", "known": True}
        assert run.ok("res.template.plus")["contents"][0]["text"] == "doc at guide/intro.md"

    @compat("resources")
    def test_resource_not_found_is_32602(self, sdk_client):
        """The new era's code for a missing resource (-32002 is the handshake era's)."""
        missing = sdk_client.scenario("features").failed("res.missing")
        assert missing["code"] == -32602 and missing["data"] == {"uri": "test://sdk/nothing-here"}
        gift = sdk_client.scenario("gift_server").failed("catalog.missing")
        assert gift["code"] == -32602 and gift["data"] == {"uri": MISSING_GIFT}

    # ------------------------------------------------------------------------ prompts

    @compat("prompts")
    def test_prompts(self, sdk_client):
        run = sdk_client.scenario("features")
        check_prompts(run)
        assert [p["name"] for p in run.ok("prompts.all")["prompts"]] == ["greet", "debate", "cite"]

    @compat("completion")
    def test_completion(self, sdk_client):
        check_completion(sdk_client.scenario("features"))

    # ------------------------------------------------------------------------ notifications

    @compat("logging")
    def test_log_level_per_request(self, sdk_client, compat_note):
        compat_note("2026-07-28: no `logging/setLevel` (the client refuses it); each request "
                    "names its level in `_meta` `io.modelcontextprotocol/logLevel`")
        run = sdk_client.scenario("features")
        assert text_of(run.ok("log.warning")) == ",".join(LEVELS[3:])
        assert text_of(run.ok("log.debug")) == ",".join(LEVELS)
        assert text_of(run.ok("log.none")) == ""          # no level asked: no log lines
        messages = run.notifications("notifications/message")
        assert [m["level"] for m in messages] == LEVELS[3:] + LEVELS
        levels = [(m["params"]["_meta"].get(LOG_LEVEL)) for m in
                  run.sent_requests("tools/call", name="chatty")]
        assert levels == ["warning", "debug", None]

    @compat("progress")
    def test_progress(self, sdk_client):
        run = sdk_client.scenario("features")
        assert text_of(run.ok("progress.paced")) == "3 steps"
        request = run.sent_request("tools/call", name="progress")
        token = request["params"]["_meta"]["progressToken"]
        expected = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        sent = [p for p in run.wire_notifications("recv", "notifications/progress")
                if p["progressToken"] == token]
        assert [(p["progress"], p["total"], p["message"]) for p in sent] == expected
        assert [(p["progress"], p["total"], p["message"])
                for p in run.progress("progress.paced")] == expected
        recv = run.wire("recv")
        last = max(i for i, m in enumerate(recv) if m.get("method") == "notifications/progress"
                   and m["params"]["progressToken"] == token)
        assert last < next(i for i, m in enumerate(recv) if m.get("id") == request["id"])

    @compat("cancellation")
    def test_cancellation(self, sdk_client):
        run = sdk_client.scenario("features")
        timer_call, progress_call = run.sent_requests("tools/call", name="slow")
        cancels = run.wire_notifications("send", "notifications/cancelled")
        for label, request in (("cancel.timer", timer_call), ("cancel.progress", progress_call)):
            record = run.step(label)
            assert record["ok"] is False and record.get("cancelled") is True
            # v2 rejects a cancelled request with its timeout error: no JSON-RPC code.
            assert record["error"]["sdkCode"] == "REQUEST_TIMEOUT"
            assert request["id"] in [c["requestId"] for c in cancels]
            assert run.response_to(request["id"]) == [], "a cancelled request is never answered"
        seen = run.ok("cancel.seen")["structuredContent"]["cancelled"]
        assert seen == [timer_call["id"], progress_call["id"]]

    # ------------------------------------------------------------------------ MRTR

    @compat("sampling")
    def test_sampling_through_input_required(self, sdk_client):
        run = sdk_client.scenario("features")
        [(first, [asked]), (retry, [done])] = rounds(run, "tools/call", name="ask_model",
                                                     arguments={"question": "What is MCP?"})
        assert asked["result"]["resultType"] == "input_required"
        [(key, question)] = asked["result"]["inputRequests"].items()
        assert question == {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "What is MCP?"}}],
            "systemPrompt": "Answer briefly.", "maxTokens": 64}}
        # The retry: a new id, the same call, the answer under its key, the state echoed.
        assert retry["id"] != first["id"]
        assert retry["params"]["requestState"] == asked["result"]["requestState"]
        assert retry["params"]["inputResponses"] == {key: {
            "role": "assistant", "content": {"type": "text", "text": "mock reply"},
            "model": "mock-model", "stopReason": "endTurn"}}
        assert done["result"]["resultType"] == "complete"
        assert run.requests("sampling/createMessage")[0] == question["params"]
        assert run.ok("sampling.default")["structuredContent"] == {
            "text": "mock reply", "model": "mock-model", "role": "assistant"}
        assert run.ok("sampling.custom")["structuredContent"]["text"] == "custom reply"

    @compat("sampling")
    def test_a_failing_sampling_handler_fails_the_call(self, sdk_client, compat_note):
        """An input response is a result, never an error: the client gives up without a
        retry, and the handler's error is the call's (in the handshake era it went back to
        the server, whose tool then answered isError)."""
        compat_note("2026-07-28: a failing sampling/elicitation/roots handler fails the call "
                    "in the client; nothing goes back to the server")
        run = sdk_client.scenario("features")
        error = run.failed("sampling.error")
        assert (error["code"], error["message"]) == (-1, "the user declined to sample")
        [(_, [asked])] = rounds(run, "tools/call", name="ask_model",
                                arguments={"question": "And now?"})
        assert asked["result"]["resultType"] == "input_required"

    @compat("elicitation")
    def test_elicitation_through_input_required(self, sdk_client):
        run = sdk_client.scenario("features")
        calls = rounds(run, "tools/call", name="ask_user")
        assert len(calls) == 4                      # accept: two legs; decline: two legs
        question = calls[0][1][0]["result"]["inputRequests"]
        [(key, asked)] = question.items()
        assert asked["method"] == "elicitation/create" and asked["params"]["mode"] == "form"
        assert set(asked["params"]["requestedSchema"]["properties"]) == {
            "name", "age", "subscribe", "colour"}
        accepted = calls[1][0]["params"]["inputResponses"][key]
        assert accepted["action"] == "accept" and accepted["content"]["colour"] == "red"
        assert calls[3][0]["params"]["inputResponses"] == {key: {"action": "decline"}}
        assert run.ok("elicit.accept")["structuredContent"]["content"]["name"] == "test"
        assert run.ok("elicit.decline")["structuredContent"] == {"action": "decline"}

    @compat("roots")
    def test_roots_through_input_required(self, sdk_client):
        """Asked on every call: this era keeps nothing between requests."""
        run = sdk_client.scenario("features")
        assert run.ok("roots.first")["structuredContent"] == {"roots": DEFAULT_ROOTS}
        assert run.ok("roots.second")["structuredContent"] == NEW_ROOTS
        calls = rounds(run, "tools/call", name="roots")
        assert len(calls) == 4
        asked = [answer[0]["result"].get("inputRequests") for _, answer in calls[0::2]]
        assert all(list(a.values()) == [{"method": "roots/list"}] for a in asked), asked
        assert len(run.requests("roots/list")) == 2
        assert not run.sent_requests("notifications/roots/list_changed")

    @compat("sampling", "elicitation", "roots")
    def test_several_rounds_on_tools_prompts_and_resources(self, sdk_client):
        run = sdk_client.scenario("modern")
        legs = rounds(run, "tools/call", name="interview")
        kinds = [list(answer[0]["result"].get("inputRequests", {}).values())
                 for _, answer in legs]
        assert [[q["method"] for q in k] for k in kinds] == [
            ["elicitation/create"], ["sampling/createMessage"], ["roots/list"], []]
        # Each retry echoes the state of the round before it and answers only its question.
        for (_, [asked]), (retry, _) in zip(legs, legs[1:]):
            assert retry["params"]["requestState"] == asked["result"]["requestState"]
            assert retry["params"]["inputResponses"].keys() == asked["result"][
                "inputRequests"].keys()
        assert text_of(run.ok("mrtr.interview")) == "test / mock reply / 1 roots"
        assert run.ok("mrtr.prompt")["messages"][0]["content"]["text"] == (
            "Write a poem about test.")
        assert run.ok("mrtr.resource")["contents"][0]["text"] == "for test"
        for method in ("prompts/get", "resources/read"):
            first = run.sent_requests(method)[0]
            assert run.response_to(first["id"])[0]["result"]["resultType"] == "input_required"

    @compat("elicitation")
    def test_url_elicitation(self, sdk_client):
        run = sdk_client.scenario("modern")
        [(_, [asked]), _] = rounds(run, "tools/call", name="secret_link")
        [question] = asked["result"]["inputRequests"].values()
        assert question["params"] == {"mode": "url", "message": "Sign in",
                                      "url": "https://example.com/sign-in"}
        assert text_of(run.ok("mrtr.url")) == "accept"

    @compat("undeclared-capabilities")
    def test_client_without_capabilities(self, sdk_client, compat_note):
        compat_note("2026-07-28: -32021 with `requiredCapabilities` (the handshake era: "
                    "an `isError` result)")
        run = sdk_client.scenario("no-capabilities")
        for label, capability in (("nocap.sampling", "sampling"),
                                  ("nocap.elicitation", "elicitation"), ("nocap.roots", "roots")):
            error = run.failed(label)
            assert error["code"] == -32021
            assert error["data"] == {"requiredCapabilities": {capability: {}}}
        assert not [r for r in run.records if r["event"] == "request"]
        assert not [m for m in run.wire("recv") if m.get("result", {}).get("resultType") ==
                    "input_required"]

    # ------------------------------------------------------------------------ listen

    @compat("subscriptions")
    def test_listen_for_resource_updates(self, sdk_client):
        run = sdk_client.scenario("features")
        [listen] = run.sent_requests("subscriptions/listen")
        asked = {"toolsListChanged": True, "resourceSubscriptions": ["test://sdk/counter"]}
        assert listen["id"] == "listen:0" and listen["params"]["notifications"] == asked
        assert run.ok("listen") == {"subscriptionId": "listen:0", "honored": asked}
        updates = run.wire_notifications("recv", "notifications/resources/updated")
        # One update: none before the listen, none after it stopped.
        assert updates == [{"uri": "test://sdk/counter", "_meta": {SUB_ID: "listen:0"}}]
        assert run.ok("sub.wait")["events"] == [
            {"type": "ResourceUpdated", "uri": "test://sdk/counter"}]
        assert json.loads(run.ok("sub.read")["contents"][0]["text"]) == {"count": 2}
        assert run.ok("sub.after")["structuredContent"] == {"count": 3}
        stopped = run.ok("listen.stop")
        assert stopped["end"] == "stopped" and len(stopped["events"]) == 3
        # Stopping sends notifications/cancelled for the listen id; the server never answers it.
        cancels = run.wire_notifications("send", "notifications/cancelled")
        assert "listen:0" in [c["requestId"] for c in cancels]
        assert run.response_to("listen:0") == []

    @compat("list-changed")
    def test_listen_for_tool_list_changes(self, sdk_client):
        run = sdk_client.scenario("features")
        assert run.ok("lc.wait2")["count"] == 3         # the resource update, two changes
        assert [t["name"] for t in run.ok("lc.list-with")["tools"]] == TOOLS + ["extra"]
        assert text_of(run.ok("lc.call-extra")) == "hi!"
        assert [t["name"] for t in run.ok("lc.list-without")["tools"]] == TOOLS
        assert run.failed("lc.call-removed")["code"] == -32602
        changed = run.wire_notifications("recv", "notifications/tools/list_changed")
        assert changed == [{"_meta": {SUB_ID: "listen:0"}}] * 2     # not the one after stop
        assert text_of(run.ok("lc.after")) == "added"
        assert [e["type"] for e in run.ok("listen.stop")["events"]] == [
            "ResourceUpdated", "ToolsListChanged", "ToolsListChanged"]

    def test_cache_hints_spare_round_trips(self, sdk_client):
        """ttlMs 60000: the client serves the second list and read itself; a list_changed on
        the listen stream drops the cached list."""
        run = sdk_client.scenario("modern")
        assert run.ok("cache.tools.first")["tools"] == run.ok("cache.tools.again")["tools"]
        lists = run.sent_requests("tools/list")
        assert len(lists) == 2, "listed once, then again only after list_changed"
        assert run.response_to(lists[0]["id"])[0]["result"]["ttlMs"] == 60000
        assert "extra" in [t["name"] for t in run.ok("cache.tools.after-change")["tools"]]
        reads = run.sent_requests("resources/read", uri="test://modern/text")
        assert len(reads) == 1
        reply = run.response_to(reads[0]["id"])[0]["result"]
        assert (reply["ttlMs"], reply["cacheScope"]) == (60000, "private")
        assert run.ok("cache.read.again")["contents"] == run.ok("cache.read.first")["contents"]

    # ------------------------------------------------------------------------ environment

    @compat("environment")
    def test_minimal_environment(self, sdk_client):
        check_minimal_environment(sdk_client.scenario("features"))

    # ------------------------------------------------------------------------ the examples

    @compat("example-gift")
    def test_gift_server(self, sdk_client):
        run = sdk_client.scenario("gift_server")
        assert run.connected["serverInfo"]["name"] == "gift-server"
        assert "suggest_gifts" in run.connected["instructions"]
        tools = {t["name"]: t for t in run.ok("tools")["tools"]}
        assert set(tools) == {"suggest_gifts", "pick_gift"}
        assert tools["suggest_gifts"]["outputSchema"]["required"] == ["occasion", "budget", "gifts"]
        result = run.ok("suggest")
        gifts = result["structuredContent"]["gifts"]
        assert 1 <= len(gifts) <= 3 and all(g["price"] <= 50 for g in gifts)
        assert "board games" in gifts[0]["why"]
        zero = run.ok("suggest.zero")
        assert zero["isError"] is True and "more than $0" in text_of(zero)
        bad = text_of(run.ok("suggest.badargs"))
        assert "occasion" in bad and "funeral" in bad and "budget" in bad
        assert run.ok("suggest.none")["isError"] is True
        [catalog] = run.ok("catalog")["contents"]
        assert len(json.loads(catalog["text"])["gifts"]) == 20
        assert [p["name"] for p in run.ok("prompts")["prompts"]] == ["gift_congrats_style"]
        assert "Sam" in run.ok("prompt")["messages"][0]["content"]["text"]

    @compat("example-gift", "elicitation")
    def test_gift_server_asks_who_the_gift_is_for(self, sdk_client):
        run = sdk_client.scenario("gift_server")
        [(first, [asked]), (retry, [done])] = rounds(run, "tools/call", name="pick_gift")
        [(key, question)] = asked["result"]["inputRequests"].items()
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "Who is the gift for?"
        assert retry["params"]["inputResponses"] == {key: RECIPIENT}
        assert retry["params"]["requestState"] == asked["result"]["requestState"]
        picked = run.ok("pick")["structuredContent"]
        assert picked == done["result"]["structuredContent"]
        assert picked["price"] <= 50 and "board games" in picked["why"]

    @compat("example-calculator")
    def test_calculator(self, sdk_client):
        check_calculator(sdk_client.scenario("calculator"))

    @compat("example-weather")
    def test_weather(self, sdk_client):
        check_weather(sdk_client.scenario("weather"))


def test_a_pinned_version_the_server_does_not_serve_is_32022():
    """The probe names the pinned version; the server's -32022 lists what it serves, and the
    client gives up before it starts the session's process."""
    argv = [shutil.which("node"), str(CLIENTS / "ts2_client.mjs"), "--mode", "pin",
            "--pin", "2027-01-01", "--trace", "[]", "--", sys.executable,
            str(EXAMPLES / "calculator.py")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [failed] = [r for r in records if r["event"] == "connectFailed"]
    assert failed["error"]["code"] == -32022
    assert failed["error"]["data"] == {"supported": [V], "requested": "2027-01-01"}
    [probe] = [r["message"] for r in records if r["event"] == "probeWire" and r["dir"] == "send"]
    assert probe["method"] == "server/discover" and probe["params"]["_meta"][PV] == "2027-01-01"
    assert not [r for r in records if r["event"] in ("wire", "connected")]
