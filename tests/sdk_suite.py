"""The checks every official SDK client goes through, written once.

tests/test_sdk_python.py and tests/test_sdk_typescript.py subclass ``SdkClientTests`` and
give it an ``sdk_client`` fixture (a ``sdk_compat.Driver``). Each test reads the records of
one scenario run (``sdk_compat.SCENARIOS``; each runs once per client and mode) and checks
one feature; its ``compat`` marker names the row of the compatibility table it fills.

A client runs in one of two eras (``sdk_client.era``): the handshake era (``initialize``)
or stateless 2026-07-28, where the feature is done another way or refused; the test then
branches on ``sdk_client.modern`` and checks that era's way on the wire.

Where the two clients behave differently the test says so next to the branch, with its
number in README.md's list "Where the clients differ, and what mcp_min does"."""

from __future__ import annotations

import base64
import json
import re

import pytest

from sdk_compat import (CLIENT_ENV, CUSTOM_SAMPLE, LOG_LEVEL_KEY, MODERN, NEW_ROOTS, SENTINEL,
                        close, pinned_version, text_of)

compat = pytest.mark.compat

TOOLS = ["echo", "stats", "point", "moments", "naive_time", "pair", "mismatch", "forged",
         "fail_with_data", "picture", "sound", "link", "embed", "refuse", "slow", "stubborn",
         "cancellations", "progress", "chatty", "ask_model", "ask_user", "roots", "toggle_extra",
         "bump", "environment"]
RESOURCES = ["test://sdk/text", "test://sdk/blob", "test://sdk/counter"]
TEMPLATES = ["test://sdk/items/{category}/{item_id}", "test://sdk/docs/{+path}",
             "test://sdk/users/{user_id}"]
PROMPTS = ["greet", "debate", "cite"]
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
DEFAULT_ROOTS = [{"uri": "file:///tmp/mcp-min-root", "name": "test root"}]
RFC3339_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
RFC3339_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z")

# The _meta keys of 2026-07-28.
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
#: What the Python SDK declares when every callback is set.
ALL_CAPABILITIES = {"sampling": {}, "elicitation": {"form": {}, "url": {}},
                    "roots": {"listChanged": True}}
#: The methods whose results clients may cache (ttlMs, cacheScope) in 2026-07-28.
CACHEABLE = {"server/discover", "tools/list", "prompts/list", "resources/list",
             "resources/templates/list", "resources/read"}


def unknown_progress_tokens(run):
    """Tokens of the progress notifications the TypeScript SDK reported as unknown."""
    tokens = []
    for message in run.transport_errors():
        match = re.match(r"Received a progress notification for an unknown token: (.*)$", message, re.S)
        if match:
            tokens.append(json.loads(match.group(1))["params"]["progressToken"])
    return tokens


def wire_progress(run, token):
    return [p for p in run.wire_notifications("recv", "notifications/progress")
            if p["progressToken"] == token]


def recv_index(run, predicate):
    for i, message in enumerate(run.wire("recv")):
        if predicate(message):
            return i
    raise AssertionError("no such message received")


def wire_records(run):
    return [r for r in run.records if r["event"] == "wire"]


def sent_during(run, label):
    """What the client wrote for one step: the messages sent after the record of the step
    before it, and before its own (steps run one at a time)."""
    index = run.step(label)["index"]
    sent, inside = [], False
    for record in run.records:
        if record["event"] == "step":
            if record["index"] == index:
                return sent
            inside = record["index"] == index - 1
        elif record["event"] == "wire" and record["dir"] == "send" and (inside or index == 0):
            sent.append(record["message"])
    raise AssertionError(f"no record of step {label}")


def received_while(run, request):
    """The messages received after `request` was sent and before its response."""
    records = wire_records(run)
    start = records.index({"event": "wire", "dir": "send", "message": request})
    received = []
    for record in records[start + 1:]:
        message = record["message"]
        if record["dir"] != "recv":
            continue
        if "method" not in message and message.get("id") == request["id"]:
            return received
        received.append(message)
    raise AssertionError(f"no response to {request}")


def received_after(run, message):
    """The messages received after the client sent `message`."""
    records = wire_records(run)
    start = records.index({"event": "wire", "dir": "send", "message": message})
    return [r["message"] for r in records[start + 1:] if r["dir"] == "recv"]


def server_requests(run):
    """The JSON-RPC requests the server sent (a 2026-07-28 server sends none)."""
    return [m for m in run.wire("recv") if "method" in m and "id" in m]


def input_rounds(run, method, **params):
    """Every call of `method` whose params include `params`, as its rounds: a list of
    [(request, responses)], where a request carrying requestState continues the call before."""
    calls = []
    for request in run.sent_requests(method, **params):
        round_ = (request, run.response_to(request["id"]))
        if "requestState" in request["params"]:
            assert calls, f"a retry with no call before it: {request}"
            calls[-1].append(round_)
        else:
            calls.append([round_])
    return calls


def check_input_rounds(rounds, method):
    """One call's rounds as 2026-07-28 has them (MRTR): each answer but the last is an
    input_required result asking `method`; the client retries with a new id, the same request
    plus inputResponses for each question and the requestState echoed; the last answer is
    complete. Returns the final result."""
    assert len(rounds) >= 2, rounds
    for (request, answers), (retry, _) in zip(rounds, rounds[1:]):
        [answer] = answers
        asked = answer["result"]
        assert asked["resultType"] == "input_required" and "ttlMs" not in asked, asked
        assert {q["method"] for q in asked["inputRequests"].values()} == {method}
        assert isinstance(asked["requestState"], str) and asked["requestState"]
        assert retry["id"] != request["id"]
        assert retry["params"]["requestState"] == asked["requestState"]
        assert retry["params"]["inputResponses"].keys() == asked["inputRequests"].keys()
        for key in ("name", "arguments", "uri"):
            assert retry["params"].get(key) == request["params"].get(key)
    [last] = rounds[-1][1]
    assert last["result"]["resultType"] == "complete", last
    return last["result"]


def subscription_of(message):
    """The listen id a notification is tagged with, or None."""
    return ((message.get("params") or {}).get("_meta") or {}).get(SUBSCRIPTION_ID_KEY)


def check_listen_closed(run, label, listen_id):
    """A listen stream the client ended at step `label`: the server acknowledged it before
    anything else tagged with its id; the client cancelled it; after that the server sent
    nothing for it, and never a response."""
    assert run.ok(label)["end"] == "stopped"
    tagged = [m for m in run.wire("recv") if subscription_of(m) == listen_id]
    assert tagged[0]["method"] == "notifications/subscriptions/acknowledged"
    [cancel] = [m for m in run.wire("send") if m.get("method") == "notifications/cancelled"
                and m["params"]["requestId"] == listen_id]
    assert [m for m in received_after(run, cancel) if subscription_of(m) == listen_id] == []
    assert run.response_to(listen_id) == []


def server_info(run, sdk_client):
    """The serverInfo: from initialize; in 2026-07-28, from the _meta of the first result on
    the wire (every result carries it: test_result_fields; a client pinned to 2026-07-28
    does not learn it from a discover of its own)."""
    if sdk_client.modern:
        first = next(m["result"] for m in run.wire("recv") if "result" in m)
        return first["_meta"][SERVER_INFO_KEY]
    return run.connected["serverInfo"]


# The checks the TypeScript v2 client's tests (tests/test_sdk_typescript_v2.py, scenarios of
# their own with the same labels) share with SdkClientTests.

def check_cursor_walk_and_one_page(run):
    """The client followed each nextCursor of "tools.all": one tools/list per page, each
    cursor used once; "tools.page1" is the first page alone; a bad cursor is -32602."""
    cursors = [(m.get("params") or {}).get("cursor") for m in run.sent_requests("tools/list")]
    walk = cursors[:13]
    assert walk[0] is None and None not in walk[1:] and len(set(walk[1:])) == 12
    page = run.ok("tools.page1")
    assert [t["name"] for t in page["tools"]] == ["echo", "stats"] and page["nextCursor"]
    error = run.failed("tools.badcursor")
    assert error["code"] == -32602 and "cursor" in error["message"].lower()


def check_text_result(run):
    result = run.ok("tool.text")
    assert result["content"] == [{"type": "text", "text": "héllo ✓ \"quoted\"\nnew line"}]
    assert result.get("isError") is False and "structuredContent" not in result


def check_tool_errors(run):
    """An isError result from ToolError and from bad arguments; an unknown tool is -32602."""
    refused = run.ok("tool.isError")
    assert refused["isError"] is True and text_of(refused) == "refused: policy"
    bad = run.ok("tool.badargs")
    assert bad["isError"] is True
    assert "numbers" in text_of(bad) and "expected array" in text_of(bad)
    unknown = run.failed("tool.unknown")
    assert unknown["code"] == -32602 and "no_such_tool" in unknown["message"]
    return unknown


def check_prompts(run):
    listed = {p["name"]: p for p in run.ok("prompts.all")["prompts"]}
    assert listed["greet"]["arguments"] == [
        {"name": "name", "description": "who to greet", "required": True},
        {"name": "style", "description": "how to greet", "required": False}]
    greet = run.ok("prompt.greet")
    assert greet["messages"] == [{"role": "user", "content": {
        "type": "text", "text": "Write a formal greeting for Ada."}}]
    debate = run.ok("prompt.debate")["messages"]
    assert [m["role"] for m in debate] == ["user", "assistant", "user"]
    assert debate[0]["content"]["text"] == "Debate tabs in 3 rounds."   # "3" -> int 3
    cite = run.ok("prompt.cite")["messages"]
    assert cite[1] == {"role": "user", "content": {"type": "resource", "resource": {
        "uri": "test://sdk/text", "mimeType": "text/plain", "text": "hello from sdk_features"}}}
    missing = run.failed("prompt.missing-arg")
    assert missing["code"] == -32602 and "'name'" in missing["message"]


def check_completion(run):
    assert run.ok("complete.prompt")["completion"] == {"values": ["formal"], "total": 1,
                                                       "hasMore": False}
    assert run.ok("complete.template.fruit")["completion"]["values"] == ["apple", "apricot"]
    assert run.ok("complete.template.veg")["completion"]["values"] == ["asparagus"]


def check_minimal_environment(run):
    """Started from "/", the server saw only what the client passes on, never the sentinel
    set in the driver's own environment."""
    env = run.ok("env")["structuredContent"]
    names = set(env["names"])
    assert SENTINEL not in names
    # Python's locale coercion may add LC_CTYPE when the client passes no LANG.
    assert names <= CLIENT_ENV | {"LC_CTYPE"}, names - CLIENT_ENV
    assert {"PATH", "HOME"} <= names
    assert env["cwd"] == "/"


def check_calculator(run):
    """examples/calculator.py; returns the text of the bad-arguments result."""
    assert [t["name"] for t in run.ok("tools")["tools"]] == ["add"]
    result = run.ok("add")
    assert result["structuredContent"] == {"result": 5.5} and text_of(result) == "5.5"
    bad = run.ok("add.badargs")
    assert bad["isError"] is True and "'b'" in text_of(bad)
    return text_of(bad)


def check_weather(run):
    assert [t["name"] for t in run.ok("tools")["tools"]] == ["get_weather"]
    assert run.ok("lisbon")["content"] == [{"type": "text", "text": "Sunny, 22°C"}]
    unknown = run.ok("unknown")
    assert unknown["isError"] is True and "Known cities" in text_of(unknown)


class SdkClientTests:
    """Every capability of an mcp_min server, through one official SDK client."""

    # ------------------------------------------------------------------------ connection

    @compat("handshake")
    def test_handshake(self, sdk_client):
        run = sdk_client.scenario("features")
        connected = run.connected
        assert connected["sdkVersion"] == pinned_version(sdk_client.client)
        sent = [m.get("method") for m in run.wire("send")]
        if sdk_client.modern:
            # No handshake: every request says who the client is and what it can do.
            assert connected["protocolVersion"] == MODERN
            assert "initialize" not in sent and "notifications/initialized" not in sent
            for request in run.wire("send"):
                if "id" in request and "method" in request:
                    meta = request["params"]["_meta"]
                    assert meta[PROTOCOL_VERSION_KEY] == MODERN, request
                    assert meta[CLIENT_CAPABILITIES_KEY] == ALL_CAPABILITIES, request
            described = run.ok("discover")
            assert described["supportedVersions"] == [MODERN]
            caps, instructions = described["capabilities"], described["instructions"]
            if connected["handshake"] == "discover":     # learned from its own probe
                assert connected["serverInfo"] == server_info(run, sdk_client)
                assert (connected["capabilities"], connected["instructions"]) == (caps,
                                                                                  instructions)
        else:
            assert connected["protocolVersion"] == "2025-11-25"
            caps, instructions = connected["capabilities"], connected["instructions"]
            # The wire: the client offered 2025-11-25 and the server agreed; initialized
            # followed.
            initialize = run.sent_request("initialize")
            assert initialize["params"]["protocolVersion"] == "2025-11-25"
            reply = run.response_to(initialize["id"])
            assert len(reply) == 1 and reply[0]["result"]["protocolVersion"] == "2025-11-25"
            assert sent[sent.index("initialize") + 1] == "notifications/initialized"
        info = server_info(run, sdk_client)
        assert (info["name"], info["version"], info["title"]) == ("sdk-features", "2.0.0",
                                                                 "SDK feature tour")
        assert instructions.startswith("A test server")
        assert caps["tools"] == {"listChanged": True}
        assert caps["resources"] == {"subscribe": True, "listChanged": True}
        assert caps["prompts"] == {"listChanged": True}
        assert "logging" in caps and "completions" in caps
        # The session stayed clean: no tracebacks, and nothing the client could not use
        # except the progress notifications the TypeScript SDK drops (see test_progress).
        assert "Traceback" not in run.stderr
        assert len(run.transport_errors()) == len(unknown_progress_tokens(run)), run.transport_errors()

    @compat("ping")
    def test_ping(self, sdk_client, compat_note):
        run = sdk_client.scenario("features")
        ping = run.sent_request("ping")
        if sdk_client.modern:
            compat_note("2026-07-28 has no `ping`: the SDK's deprecated `send_ping` sends it "
                        "enveloped and gets -32601")
            assert ping["params"]["_meta"][PROTOCOL_VERSION_KEY] == MODERN
            error = run.failed("ping")
            assert error["code"] == -32601 and "ping" in error["message"]
            assert "2026-07-28" in error["message"]
        else:
            assert run.ok("ping") == {}
            assert run.response_to(ping["id"])[0]["result"] == {}

    @compat("metadata")
    def test_metadata(self, sdk_client):
        run = sdk_client.scenario("features")
        icon = {"src": "https://example.com/sdk-features.png", "mimeType": "image/png",
                "sizes": ["48x48"]}
        info = server_info(run, sdk_client)
        assert info["description"] == "Every MCP feature, for the SDK client tests."
        assert info["websiteUrl"] == "https://example.com/sdk-features" and info["icons"] == [icon]
        echo = run.ok("tools.all")["tools"][0]
        assert echo["title"] == "Echo" and echo["icons"] == [icon]
        assert echo["_meta"] == {"example.com/kind": "demo"}
        assert echo["annotations"] == {"readOnlyHint": True, "idempotentHint": True,
                                       "openWorldHint": False}
        text_resource = run.ok("resources.all")["resources"][0]
        assert text_resource["size"] == 23 and text_resource["icons"] == [icon]
        assert text_resource["annotations"] == {"audience": ["user", "assistant"], "priority": 0.5,
                                                "lastModified": "2025-11-25T00:00:00Z"}
        [picture] = run.ok("tool.image")["content"]
        assert picture["annotations"] == {"audience": ["user"], "priority": 0.8}

    @compat("result-type")
    def test_result_fields(self, sdk_client):
        """2026-07-28 results say what they are (resultType), who sent them, and for how long
        a client may keep them; handshake-era results carry none of this."""
        run = sdk_client.scenario("features")
        methods = {m["id"]: m["method"] for m in run.wire("send") if "id" in m and "method" in m}
        results = [(methods[m["id"]], m["result"]) for m in run.wire("recv") if "result" in m]
        assert len(results) > 50
        if sdk_client.modern:
            info = server_info(run, sdk_client)
            for method, result in results:
                assert result["_meta"][SERVER_INFO_KEY] == info, (method, result)
                kind = result["resultType"]
                assert kind in ("complete", "input_required"), (method, result)
                if method in CACHEABLE and kind == "complete":
                    assert type(result["ttlMs"]) is int and result["ttlMs"] == 0
                    assert result["cacheScope"] == "public"
                else:
                    assert "ttlMs" not in result and "cacheScope" not in result, (method, result)
            assert {r["resultType"] for _, r in results} == {"complete", "input_required"}
            assert {m for m, _ in results} >= CACHEABLE - {"server/discover"} | {"tools/call"}
        else:
            for method, result in results:
                assert not {"resultType", "ttlMs", "cacheScope"} & result.keys(), (method, result)
                assert SERVER_INFO_KEY not in result.get("_meta", {}), (method, result)
        # With ttlMs 0 a client keeps nothing: the first page, listed again, is asked again.
        assert [m.get("method") for m in sent_during(run, "tools.page1")] == ["tools/list"]

    # ------------------------------------------------------------------------ lists

    @compat("pagination")
    def test_every_list_is_paginated(self, sdk_client):
        run = sdk_client.scenario("features")
        tools = run.ok("tools.all")
        assert [t["name"] for t in tools["tools"]] == TOOLS
        assert tools["pages"] == 13                       # 25 tools, 2 a page
        resources = run.ok("resources.all")
        assert [r["uri"] for r in resources["resources"]] == RESOURCES and resources["pages"] == 2
        templates = run.ok("templates.all")
        assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == TEMPLATES
        assert templates["pages"] == 2
        prompts = run.ok("prompts.all")
        assert [p["name"] for p in prompts["prompts"]] == PROMPTS and prompts["pages"] == 2
        check_cursor_walk_and_one_page(run)

    # ------------------------------------------------------------------------ tools

    @compat("tool-text")
    def test_text_result(self, sdk_client):
        check_text_result(sdk_client.scenario("features"))

    @compat("tool-structured")
    def test_structured_output_checked_by_client(self, sdk_client):
        run = sdk_client.scenario("structured")
        listed = {t["name"]: t for t in run.ok("structured.list")["tools"]}
        assert listed["stats"]["outputSchema"]["required"] == ["count", "total", "mean"]
        assert listed["point"]["outputSchema"]["properties"]["label"] == {"type": "string"}
        import jsonschema
        for label, name, expected in (
                ("structured.typeddict", "stats", {"count": 3, "total": 6.5, "mean": 6.5 / 3}),
                ("structured.dataclass", "point", {"x": 1.5, "y": -2, "label": "(1.5, -2)"})):
            result = run.ok(label)
            structured = result["structuredContent"]
            assert structured.keys() == expected.keys()
            for key, value in expected.items():
                assert structured[key] == value or close(structured[key], value), (key, structured)
            jsonschema.validate(structured, listed[name]["outputSchema"])
            assert json.loads(text_of(result)) == structured    # the same data as text
            assert result["isError"] is False
        # Output that breaks the tool's own schema never leaves mcp_min as structured
        # content: the client gets an isError result saying so.
        mismatch = run.ok("structured.mismatch")
        assert mismatch["isError"] is True and "structuredContent" not in mismatch
        assert "does not match its output schema" in text_of(mismatch)
        # Forged past that check (tests/servers/sdk_features.py), such output reaches the
        # client (it is on the wire) and the client refuses it.
        call = run.sent_request("tools/call", name="forged")
        assert run.response_to(call["id"])[0]["result"]["structuredContent"] == {"n": "not a number"}
        error = run.failed("structured.forged")
        if sdk_client.client == "ts":
            assert error["code"] == -32602 and "output schema" in error["message"]
        else:       # Python raises a plain RuntimeError, no JSON-RPC code (difference 4)
            assert error["code"] is None and error["type"] == "RuntimeError"
            assert "Invalid structured content" in error["message"]

    @compat("dates")
    def test_dates(self, sdk_client):
        run = sdk_client.scenario("structured")
        schema = {t["name"]: t for t in run.ok("structured.list")["tools"]}["moments"]["outputSchema"]
        assert schema["properties"] == {"at": {"type": "string", "format": "date-time"},
                                        "day": {"type": "string", "format": "date"}}
        moments = run.ok("structured.moments")["structuredContent"]
        assert moments == {"at": "2025-11-25T12:30:00+00:00", "day": "2025-11-25"}
        assert RFC3339_DATE_TIME.match(moments["at"]) and RFC3339_DATE.match(moments["day"])

    @compat("dates")
    def test_naive_datetime_matches_its_schema(self, sdk_client):
        run = sdk_client.scenario("structured")
        call = run.sent_request("tools/call", name="naive_time")
        sent = run.response_to(call["id"])[0]["result"]["structuredContent"]["result"]
        assert sent.startswith("2025-11-25T12:30:00")
        # The schema says "format": "date-time": RFC 3339, which requires an offset.
        assert RFC3339_DATE_TIME.match(sent), f"{sent!r} is not an RFC 3339 date-time"
        assert run.ok("structured.naive-time")["structuredContent"] == {"result": sent}

    @compat("tuples")
    def test_tuple_result(self, sdk_client):
        run = sdk_client.scenario("structured")
        schema = {t["name"]: t for t in run.ok("structured.list")["tools"]}["pair"]["outputSchema"]
        assert schema["properties"]["result"]["prefixItems"] == [{"type": "integer"},
                                                                 {"type": "string"}]
        call = run.sent_request("tools/call", name="pair")
        assert run.response_to(call["id"])[0]["result"]["structuredContent"] == {"result": [7, "seven"]}
        assert run.ok("structured.pair")["structuredContent"] == {"result": [7, "seven"]}

    @compat("validation-differences")
    def test_where_output_checks_differ(self, sdk_client, compat_note):
        """Difference 3: Python lists tools it has not seen to check their results, and
        checks only non-error results; TypeScript checks only tools on the last page it
        listed, and isError results too."""
        structured = sdk_client.scenario("structured")
        paged = sdk_client.scenario("features")
        error_data = structured.sent_request("tools/call", name="fail_with_data")
        sent = structured.response_to(error_data["id"])[0]["result"]
        assert sent["isError"] is True and sent["structuredContent"] == {"detail": "x"}
        if sdk_client.client == "ts":
            compat_note("TypeScript does not check a tool it has not listed, nor one listed on "
                        "an earlier page than the last, but checks `isError` results")
            assert structured.ok("structured.unlisted")["structuredContent"] == {"n": "not a number"}
            assert paged.ok("tool.forged.paged")["structuredContent"] == {"n": "not a number"}
            assert len(structured.sent_requests("tools/list")) == 1      # the step's own
            error = structured.failed("structured.error-data")
            assert error["code"] == -32602 and "output schema" in error["message"]
        else:
            compat_note("Python sends `tools/list` by itself to check a tool it has not listed, "
                        "and does not check `isError` results")
            assert structured.failed("structured.unlisted")["type"] == "RuntimeError"
            assert paged.failed("tool.forged.paged")["type"] == "RuntimeError"
            # One tools/list of the client's own (to fetch the schema), one for the step.
            assert len(structured.sent_requests("tools/list")) == 2
            assert structured.ok("structured.error-data") == sent

    @compat("tool-media")
    def test_image_and_audio(self, sdk_client):
        run = sdk_client.scenario("features")
        [picture] = run.ok("tool.image")["content"]
        assert picture["type"] == "image" and picture["mimeType"] == "image/png"
        png = base64.b64decode(picture["data"], validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and b"IHDR" in png
        assert png.endswith(b"IEND\xaeB`\x82")
        [sound] = run.ok("tool.audio")["content"]
        assert sound["type"] == "audio" and sound["mimeType"] == "audio/wav"
        wav = base64.b64decode(sound["data"], validate=True)
        assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE" and len(wav) == 44 + 80

    @compat("tool-resources")
    def test_resource_link_and_embedded_resources(self, sdk_client):
        run = sdk_client.scenario("features")
        [link] = run.ok("tool.link")["content"]
        assert link == {"type": "resource_link", "uri": "test://sdk/text", "name": "sdk-text",
                        "title": "The text resource", "description": "Plain text",
                        "mimeType": "text/plain"}
        followed = run.ok("tool.link.follow")["contents"]
        assert followed == [{"uri": "test://sdk/text", "mimeType": "text/plain",
                             "text": "hello from sdk_features"}]
        intro, text_resource, blob_resource = run.ok("tool.embed")["content"]
        assert intro == {"type": "text", "text": "two resources follow"}
        assert text_resource == {"type": "resource", "resource": followed[0]}
        assert blob_resource["type"] == "resource"
        blob = blob_resource["resource"]
        assert blob["uri"] == "test://sdk/blob" and blob["mimeType"] == "application/octet-stream"
        assert base64.b64decode(blob["blob"]) == bytes(range(16))

    @compat("tool-errors")
    def test_tool_errors(self, sdk_client):
        check_tool_errors(sdk_client.scenario("features"))

    # ------------------------------------------------------------------------ resources

    @compat("resources")
    def test_resources_and_templates(self, sdk_client):
        run = sdk_client.scenario("features")
        listed = {r["uri"]: r for r in run.ok("resources.all")["resources"]}
        assert listed["test://sdk/text"]["mimeType"] == "text/plain"
        assert listed["test://sdk/text"]["title"] == "Text"
        assert run.ok("res.text")["contents"] == [
            {"uri": "test://sdk/text", "mimeType": "text/plain", "text": "hello from sdk_features"}]
        [blob] = run.ok("res.blob")["contents"]
        assert blob["mimeType"] == "application/octet-stream" and "text" not in blob
        assert base64.b64decode(blob["blob"], validate=True) == bytes(range(16))
        [item] = run.ok("res.template")["contents"]
        assert item["uri"] == "test://sdk/items/fruit/apple"
        assert json.loads(item["text"]) == {"category": "fruit", "id": "apple", "known": True}
        [doc] = run.ok("res.template.plus")["contents"]
        assert doc["text"] == "doc at guide/intro.md"
        missing = run.failed("res.missing")
        # 2026-07-28 retired -32002: a resource that does not exist is invalid params.
        assert missing["code"] == (-32602 if sdk_client.modern else -32002)
        assert missing["data"] == {"uri": "test://sdk/nothing-here"}

    @compat("subscriptions")
    def test_subscribe_and_unsubscribe(self, sdk_client, compat_note):
        run = sdk_client.scenario("features")
        update = {"uri": "test://sdk/counter"}
        if sdk_client.modern:
            compat_note("2026-07-28 has no `resources/subscribe` (the SDK's deprecated "
                        "`subscribe_resource` gets -32601): `Client.listen(resource_subscriptions"
                        "=...)` opens a `subscriptions/listen` stream instead")
            for label in ("sub.subscribe", "sub.unsubscribe"):
                assert run.failed(label)["code"] == -32601
            listen = run.ok("sub.listen")
            assert listen["honored"] == {"resourceSubscriptions": ["test://sdk/counter"]}
            update["_meta"] = {SUBSCRIPTION_ID_KEY: listen["subscriptionId"]}
            assert run.ok("sub.wait")["events"] == [{"type": "ResourceUpdated",
                                                     "uri": "test://sdk/counter"}]
            check_listen_closed(run, "sub.stop", listen["subscriptionId"])
        else:
            assert run.ok("sub.subscribe") == {} and run.ok("sub.unsubscribe") == {}
            assert run.ok("sub.wait")["params"] == [update]
        assert json.loads(run.ok("sub.read")["contents"][0]["text"]) == {"count": 1}
        assert run.ok("sub.bump2")["structuredContent"] == {"count": 2}
        # Exactly one update crossed the wire: none after unsubscribe (or the listen's end).
        updates = [m for m in run.wire("recv") if m.get("method") == "notifications/resources/updated"]
        assert updates == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                            "params": update}]
        assert run.notifications("notifications/resources/updated") == [update]

    # ------------------------------------------------------------------------ prompts

    @compat("prompts")
    def test_prompts(self, sdk_client):
        check_prompts(sdk_client.scenario("features"))

    @compat("completion")
    def test_completion(self, sdk_client):
        run = sdk_client.scenario("features")
        check_completion(run)
        sent = run.sent_request("completion/complete", context={"arguments": {"category": "veg"}})
        assert sent["params"]["ref"] == {"type": "ref/resource",
                                         "uri": "test://sdk/items/{category}/{item_id}"}

    # ------------------------------------------------------------------------ notifications

    @compat("logging")
    def test_logging_levels(self, sdk_client, compat_note):
        run = sdk_client.scenario("features")
        if sdk_client.modern:
            compat_note("2026-07-28 has no `logging/setLevel` (the SDK's deprecated "
                        "`set_logging_level` gets -32601): a request asks for log messages "
                        "with the level in its `_meta`, or the client for all its requests "
                        "(`Client(log_level=...)`)")
            for label in ("log.set.warning", "log.set.debug"):
                assert run.failed(label)["code"] == -32601
            # Each call's messages come between its request and its response; none unasked.
            assert text_of(run.ok("log.chatty.none")) == ""
            for label, level, sent in (("log.chatty.warning", "warning", LEVELS[3:]),
                                       ("log.chatty.debug", "debug", LEVELS),
                                       ("log.chatty.none", None, [])):
                [call] = [m for m in sent_during(run, label) if m.get("method") == "tools/call"]
                assert call["params"]["_meta"].get(LOG_LEVEL_KEY) == level
                assert [m["params"]["level"] for m in received_while(run, call)
                        if m.get("method") == "notifications/message"] == sent
            # The client's own level goes on every request (but the auto mode's probe, sent
            # before the session has a level), unless one says otherwise.
            own = sdk_client.scenario("log-level")
            assert text_of(own.ok("client-level")) == ",".join(LEVELS[3:])
            assert text_of(own.ok("overridden")) == ",".join(LEVELS)
            asked = [(m["method"], m["params"]["_meta"][LOG_LEVEL_KEY]) for m in own.wire("send")
                     if "id" in m and m.get("method") not in (None, "server/discover")]
            assert asked[0] == ("tools/call", "warning") and ("tools/call", "debug") in asked
            assert {level for method, level in asked if method != "tools/call"} <= {"warning"}
        else:
            assert run.ok("log.set.warning") == {} and run.ok("log.set.debug") == {}
            assert run.sent_request("logging/setLevel")["params"] == {"level": "warning"}
        assert text_of(run.ok("log.chatty.warning")) == ",".join(LEVELS[3:])
        assert text_of(run.ok("log.chatty.debug")) == ",".join(LEVELS)
        messages = run.notifications("notifications/message")
        assert [m["level"] for m in messages] == LEVELS[3:] + LEVELS
        assert all(m["logger"] == "chatty" and m["data"] == {"said": f"a {m['level']} message"}
                   for m in messages)

    @compat("progress")
    def test_progress(self, sdk_client, compat_note):
        run = sdk_client.scenario("features")
        expected = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        tokens = {}
        for label, pause in (("progress.paced", 100), ("progress.burst", 0)):
            assert text_of(run.ok(label)) == "3 steps"
            call = run.sent_request("tools/call", name="progress",
                                    arguments={"steps": 3, "pause_ms": pause})
            token = tokens[label] = call["params"]["_meta"]["progressToken"]
            # On the wire: three notifications with the request's token, in order, and all
            # of them before the response.
            sent = wire_progress(run, token)
            assert [(p["progress"], p["total"], p["message"]) for p in sent] == expected
            last = max(i for i, m in enumerate(run.wire("recv"))
                       if m.get("method") == "notifications/progress"
                       and m["params"]["progressToken"] == token)
            assert last < recv_index(run, lambda m: m.get("id") == call["id"] and "result" in m)
        # With a pause after each report (as a tool doing real work has), every client gets
        # all of them.
        paced = run.progress("progress.paced")
        assert [(p["progress"], p["total"], p["message"]) for p in paced] == expected
        burst = [p["progress"] for p in run.progress("progress.burst")]
        if sdk_client.client == "ts":
            # Difference 5: the TypeScript SDK drops progress notifications that arrive in the
            # same read as their response (it forgets the token before it handles them) and
            # reports each as an unknown token. So the wire order is checked above, and here
            # that every notification was either delivered, in order, or reported dropped.
            compat_note("TypeScript may drop progress notifications that arrive in the same "
                        "read as the response (a race in the SDK): the test checks the wire order, "
                        "and that each notification was delivered or reported dropped")
            dropped = unknown_progress_tokens(run).count(tokens["progress.burst"])
            assert burst == sorted(burst) and len(burst) + dropped == 3
        else:
            assert burst == [1, 2, 3]

    @compat("cancellation")
    def test_cancellation(self, sdk_client):
        run = sdk_client.scenario("features")
        timer_call, progress_call = run.sent_requests("tools/call", name="slow")
        for label, call in (("cancel.timer", timer_call), ("cancel.progress", progress_call)):
            record = run.step(label)
            assert record["ok"] is False and record.get("cancelled") is True
            # Difference 6: TypeScript rejects a cancelled request with -32001 (its timeout
            # code); Python raises a cancellation without a code.
            assert record["error"]["code"] == (-32001 if sdk_client.client == "ts" else None)
            cancels = run.wire_notifications("send", "notifications/cancelled")
            assert call["id"] in [c["requestId"] for c in cancels]
            assert run.response_to(call["id"]) == [], "a cancelled request must not be answered"
        assert [p["progress"] for p in run.progress("cancel.progress")][:2] == [1, 2]
        # The tool saw both cancellations: the ids the server reports are the ones on the wire.
        seen = run.ok("cancel.seen")["structuredContent"]["cancelled"]
        assert seen == [timer_call["id"], progress_call["id"]]
        # A tool that ignores cancellation runs to the end, but its result is not sent.
        stubborn = run.sent_request("tools/call", name="stubborn")
        assert run.step("cancel.stubborn").get("cancelled") is True
        assert run.response_to(stubborn["id"]) == []

    @compat("cancellation", "sampling")
    def test_cancelling_a_call_cancels_its_sampling_request(self, sdk_client, compat_note):
        run = sdk_client.scenario("features")
        call = run.sent_request("tools/call", name="ask_model", arguments={"question": "Slowly?"})
        assert run.step("cancel.nested").get("cancelled") is True
        if sdk_client.modern:
            compat_note("2026-07-28: the server holds nothing open while the client's sampling "
                        "callback runs; the call cancelled meanwhile is simply never retried")
            [[(_, [answer])]] = input_rounds(run, "tools/call", name="ask_model",
                                             arguments={"question": "Slowly?"})   # one round
            [question] = answer["result"]["inputRequests"].values()
            assert question["method"] == "sampling/createMessage"
            assert question["params"]["messages"][0]["content"]["text"] == "Slowly?"
            assert run.requests("sampling/createMessage")[-1] == question["params"]
            assert server_requests(run) == []
            assert run.wire_notifications("recv", "notifications/cancelled") == []
            return
        sampling = [m for m in run.wire("recv") if m.get("method") == "sampling/createMessage" and
                    m["params"]["messages"][0]["content"]["text"] == "Slowly?"]
        assert len(sampling) == 1
        cancelled = run.wire_notifications("recv", "notifications/cancelled")
        assert [c["requestId"] for c in cancelled] == [sampling[0]["id"]]
        assert run.response_to(call["id"]) == []

    # ------------------------------------------------------------------------ client features

    @compat("sampling")
    def test_sampling(self, sdk_client, compat_note):
        run = sdk_client.scenario("features")
        asked = run.requests("sampling/createMessage")
        question = {"role": "user", "content": {"type": "text", "text": "What is MCP?"}}
        assert asked[0] == {"messages": [question], "systemPrompt": "Answer briefly.",
                            "maxTokens": 64}
        assert [a["messages"][0]["content"]["text"] for a in asked] == [
            "What is MCP?", "Again?", "And now?", "Slowly?"]
        assert run.ok("sampling.default")["structuredContent"] == {
            "text": "mock reply", "model": "mock-model", "role": "assistant"}
        assert run.ok("sampling.custom")["structuredContent"] == {
            "text": CUSTOM_SAMPLE["content"]["text"], "model": "custom-model", "role": "assistant"}
        if not sdk_client.modern:
            failed = run.ok("sampling.error")
            assert failed["isError"] is True and "the user declined to sample" in text_of(failed)
            return
        # 2026-07-28: the questions came in input_required results, the answers in retries.
        assert server_requests(run) == []
        for question, label in (("What is MCP?", "sampling.default"),
                                ("Again?", "sampling.custom")):
            [rounds] = input_rounds(run, "tools/call", name="ask_model",
                                    arguments={"question": question})
            final = check_input_rounds(rounds, "sampling/createMessage")
            assert final["structuredContent"] == run.ok(label)["structuredContent"]
        compat_note("2026-07-28: a callback's error cannot go back to the server (an input "
                    "response is a result): the SDK raises it to the caller and does not retry")
        [[(_, [answer])]] = input_rounds(run, "tools/call", name="ask_model",
                                         arguments={"question": "And now?"})
        assert answer["result"]["resultType"] == "input_required"      # and no retry
        error = run.failed("sampling.error")
        assert (error["code"], error["message"]) == (-1, "the user declined to sample")

    @compat("elicitation")
    def test_elicitation(self, sdk_client):
        run = sdk_client.scenario("features")
        asked = run.requests("elicitation/create")
        assert len(asked) == 2
        assert asked[0]["mode"] == "form" and asked[0]["message"] == "Tell me about you"
        schema = asked[0]["requestedSchema"]
        assert schema["required"] == ["name"] and set(schema["properties"]) == {
            "name", "age", "subscribe", "colour"}
        accepted = run.ok("elicit.accept")["structuredContent"]
        assert accepted["action"] == "accept"
        assert accepted["content"]["name"] == "test" and accepted["content"]["colour"] == "red"
        assert accepted["content"]["subscribe"] is True
        assert run.ok("elicit.decline")["structuredContent"] == {"action": "decline"}
        if sdk_client.modern:
            assert server_requests(run) == []
            accept, decline = input_rounds(run, "tools/call", name="ask_user")
            assert check_input_rounds(accept, "elicitation/create")["structuredContent"] == \
                accepted
            [answer] = decline[1][0]["params"]["inputResponses"].values()
            assert answer == {"action": "decline"}
            assert check_input_rounds(decline, "elicitation/create")["structuredContent"] == {
                "action": "decline"}

    @compat("roots")
    def test_roots(self, sdk_client, compat_note):
        run = sdk_client.scenario("features")
        assert run.ok("roots.first")["structuredContent"] == {"roots": DEFAULT_ROOTS}
        assert run.ok("roots.cached")["structuredContent"] == {"roots": DEFAULT_ROOTS}
        assert run.ok("roots.after-change")["structuredContent"] == NEW_ROOTS
        sent = [m.get("method") for m in run.wire("send")]
        assert "notifications/roots/list_changed" in sent
        if sdk_client.modern:
            compat_note("2026-07-28 keeps nothing between requests: each call that needs the "
                        "roots asks for them (`notifications/roots/list_changed` is gone; the "
                        "SDK still sends it and mcp_min ignores it)")
            assert server_requests(run) == []
            calls = input_rounds(run, "tools/call", name="roots")
            finals = [check_input_rounds(rounds, "roots/list") for rounds in calls]
            assert [f["structuredContent"] for f in finals] == [
                {"roots": DEFAULT_ROOTS}, {"roots": DEFAULT_ROOTS}, NEW_ROOTS]
            assert len(run.requests("roots/list")) == 3
        else:
            # Asked once, cached, asked again only after notifications/roots/list_changed.
            assert len(run.requests("roots/list")) == 2

    @compat("undeclared-capabilities")
    def test_client_without_capabilities(self, sdk_client):
        run = sdk_client.scenario("no-capabilities")
        for label, capability in (("nocap.sampling", "sampling"), ("nocap.elicitation", "elicitation"),
                                  ("nocap.roots", "roots")):
            if sdk_client.modern:
                # A protocol error naming what the client would have to declare.
                error = run.failed(label)
                assert error["code"] == -32021 and f"'{capability}' capability" in error["message"]
                assert error["data"] == {"requiredCapabilities": {capability: {}}}
            else:
                result = run.ok(label)
                assert result["isError"] is True and f"'{capability}' capability" in text_of(result)
        if sdk_client.modern:
            requests = [m for m in run.wire("send") if "id" in m and "method" in m]
            assert len([m for m in requests if m["method"] == "tools/call"]) == 3
            assert all(m["params"]["_meta"][CLIENT_CAPABILITIES_KEY] == {} for m in requests)
            assert not [m for m in run.wire("recv") if "inputRequests" in m.get("result", {})]
        else:
            initialize = run.sent_request("initialize")
            assert initialize["params"]["capabilities"] == {}
        # The server sent no request at all.
        assert [m for m in run.wire("recv") if "method" in m and "id" in m] == []
        assert run.records and not [r for r in run.records if r["event"] == "request"]

    @compat("list-changed")
    def test_tool_list_changed(self, sdk_client, compat_note):
        run = sdk_client.scenario("features")
        assert text_of(run.ok("lc.add")) == "added" and text_of(run.ok("lc.remove")) == "removed"
        assert run.ok("lc.wait2")["count"] == 2
        assert [t["name"] for t in run.ok("lc.list-with")["tools"]] == TOOLS + ["extra"]
        assert text_of(run.ok("lc.call-extra")) == "hi!"
        assert [t["name"] for t in run.ok("lc.list-without")["tools"]] == TOOLS
        assert run.failed("lc.call-removed")["code"] == -32602
        changed = [m for m in run.wire("recv") if m.get("method", "").endswith("/list_changed")]
        assert [m["method"] for m in changed] == ["notifications/tools/list_changed"] * 2
        if sdk_client.modern:
            compat_note("2026-07-28: list changes reach a client only on a "
                        "`subscriptions/listen` stream it opened (`Client.listen`)")
            listen = run.ok("lc.listen")
            assert listen["honored"] == {"toolsListChanged": True}
            # Tagged with the listen's id (the SDK's ids are strings: "listen-N").
            assert [m["params"] for m in changed] == [
                {"_meta": {SUBSCRIPTION_ID_KEY: listen["subscriptionId"]}}] * 2
            assert run.ok("lc.stop")["events"] == [{"type": "ToolsListChanged"}] * 2
            check_listen_closed(run, "lc.stop", listen["subscriptionId"])
            assert text_of(run.ok("lc.add-after")) == "added"

    @compat("environment")
    def test_minimal_environment(self, sdk_client):
        check_minimal_environment(sdk_client.scenario("features"))

    # ------------------------------------------------------------------------ the examples

    @compat("example-gift")
    def test_gift_server(self, sdk_client):
        run = sdk_client.scenario("gift_server")
        assert server_info(run, sdk_client)["name"] == "gift-server"
        if run.connected["handshake"] != "none":    # a pinned client never asks for them
            assert "suggest_gifts" in run.connected["instructions"]
        tool, pick = run.ok("tools")["tools"]
        assert tool["name"] == "suggest_gifts" and tool["outputSchema"]["required"] == [
            "occasion", "budget", "gifts"]
        assert pick["name"] == "pick_gift"
        result = run.ok("suggest")
        gifts = result["structuredContent"]["gifts"]
        assert result["structuredContent"]["occasion"] == "birthday"
        assert 1 <= len(gifts) <= 3 and all(g["price"] <= 50 and g["why"] for g in gifts)
        assert "board games" in gifts[0]["why"]
        assert json.loads(text_of(result)) == result["structuredContent"]
        zero = run.ok("suggest.zero")
        assert zero["isError"] is True and "more than $0" in text_of(zero)
        bad = text_of(run.ok("suggest.badargs"))
        assert "occasion" in bad and "funeral" in bad and "budget" in bad    # every problem
        assert run.ok("suggest.none")["isError"] is True
        # pick_gift asks who the gift is for (the client answers with a made-up recipient)
        gift = run.ok("pick")["structuredContent"]
        assert gift["price"] <= 50 and gift["name"] in {g["name"] for g in json.loads(
            run.ok("catalog")["contents"][0]["text"])["gifts"]}
        [asked] = run.requests("elicitation/create")
        assert asked["message"] == "Who is the gift for?"
        if sdk_client.modern:
            [rounds] = input_rounds(run, "tools/call", name="pick_gift")
            assert check_input_rounds(rounds, "elicitation/create")["structuredContent"] == gift
        [catalog] = run.ok("catalog")["contents"]
        assert catalog["mimeType"] == "application/json"
        assert len(json.loads(catalog["text"])["gifts"]) == 20
        prompt = run.ok("prompt")["messages"][0]["content"]["text"]
        assert "wedding" in prompt and "Sam" in prompt
        if sdk_client.modern:
            assert run.failed("ping")["code"] == -32601
        else:
            assert run.ok("ping") == {}
        assert "Traceback" not in run.stderr

    @compat("example-calculator")
    def test_calculator(self, sdk_client):
        assert "a: expected number" in check_calculator(sdk_client.scenario("calculator"))

    @compat("example-weather")
    def test_weather(self, sdk_client):
        check_weather(sdk_client.scenario("weather"))
