"""MCP 2026-07-28, the stateless era, on the wire: the raw stdio subprocess, one JSON line at a
time. Each test cites the rule it checks in words; the spec's pages are
https://modelcontextprotocol.io/specification/2026-07-28/ (basic/index: the envelope and the
errors; server/discover; basic/patterns/mrtr; basic/patterns/subscriptions; server/utilities:
caching, logging, progress, cancellation)."""

import json
import time

import pytest

from conftest import INIT_PARAMS, ROOT, SERVERS

V = "2026-07-28"
PV, CAPS = "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO, SUB_ID = "io.modelcontextprotocol/serverInfo", "io.modelcontextprotocol/subscriptionId"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
ALL_CAPS = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
CACHEABLE = ["server/discover", "tools/list", "prompts/list", "resources/list",
             "resources/templates/list"]


def envelope(capabilities=None, **extra):
    return {PV: V, CAPS: {} if capabilities is None else capabilities, **extra}


def modern(wire, method, params=None, capabilities=None, meta=None, request_id=None):
    """Send a request carrying the 2026-07-28 envelope; return the whole response."""
    params = dict(params or {})
    params["_meta"] = {**envelope(capabilities), **(meta or {})}
    return wire.request(method, params, request_id=request_id)


def result_of(wire, method, params=None, **kw):
    response = modern(wire, method, params, **kw)
    assert "result" in response, response
    return response["result"]


def error_of(wire, method, params=None, **kw):
    response = modern(wire, method, params, **kw)
    assert "error" in response and "result" not in response, response
    return response["error"]


def write_script(tmp_path, name, body):
    """A server script in tmp_path that imports mcp_min from this checkout."""
    script = tmp_path / name
    script.write_text(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + body)
    return script


@pytest.fixture
def server(spawn):
    """The modern test server, with no handshake on its pipe."""
    return spawn("modern.py")


# ============================================================================================
# server/discover, and the era chosen per message
# ============================================================================================

def test_discover_as_the_first_line_describes_the_server(server):
    result = result_of(server, "server/discover")
    assert result["supportedVersions"] == [V]
    assert result["capabilities"] == {"logging": {}, "tools": {"listChanged": True},
                                      "resources": {"subscribe": True, "listChanged": True},
                                      "prompts": {"listChanged": True}, "completions": {}}
    assert result["instructions"] == "Serves both eras."
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 0 and result["cacheScope"] == "public"
    # the server's name travels in _meta, not as a field of the result
    assert result["_meta"][SERVER_INFO] == {"name": "modern", "version": "3.0.0"}
    assert "serverInfo" not in result


def test_a_modern_request_needs_no_discover_before_it(server):
    """Clients that know the era (or probed another process) start with the real request."""
    result = result_of(server, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert result["structuredContent"] == {"result": 5} and result["resultType"] == "complete"


def test_client_info_is_optional(server):
    assert result_of(server, "tools/list")["tools"]
    named = result_of(server, "tools/list",
                      meta={"io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}})
    assert named["tools"] == result_of(server, "tools/list")["tools"]


def test_initialize_still_starts_a_handshake_session_beside_modern_requests(server):
    assert result_of(server, "tools/list")["resultType"] == "complete"
    initialized = server.initialize()
    assert initialized["protocolVersion"] == "2025-11-25" and "resultType" not in initialized
    legacy = server.result("tools/list")
    assert "resultType" not in legacy and "ttlMs" not in legacy and "cacheScope" not in legacy
    call = server.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    assert "resultType" not in call and "_meta" not in call
    # and the pipe keeps serving modern requests, each on its own terms
    assert result_of(server, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})[
        "structuredContent"] == {"result": 3}


def test_initialize_carrying_an_envelope_is_still_the_handshake(server):
    params = dict(INIT_PARAMS, _meta=envelope())
    result = server.result("initialize", params)
    assert result["protocolVersion"] == "2025-11-25" and "resultType" not in result


def test_a_bare_request_before_initialize_is_still_told_to_initialize(server):
    error = server.request("tools/list")["error"]
    assert error["code"] == -32600 and "initialize" in error["message"]


# ============================================================================================
# The envelope: checked on every request, in the order the errors imply
# ============================================================================================

@pytest.mark.parametrize("meta, words", [
    (None, "params._meta"),
    ({CAPS: {}}, "protocolVersion"),
    ({PV: 20260728, CAPS: {}}, "protocolVersion"),
    ({PV: V}, "clientCapabilities"),
    ({PV: V, CAPS: ["elicitation"]}, "clientCapabilities"),
    ({PV: V, CAPS: {}, LOG_LEVEL: "loud"}, "log level"),
])
def test_a_malformed_envelope_is_32602(server, meta, words):
    params = {"name": "add", "arguments": {"a": 1, "b": 1}}
    if meta is not None:
        params["_meta"] = meta
    for method in ("server/discover", "tools/call"):
        if meta is None and method == "tools/call":
            continue           # without any envelope key, tools/call is a handshake-era request
        error = server.request(method, params)["error"]
        assert error["code"] == -32602 and words in error["message"], error


@pytest.mark.parametrize("version", ["2025-11-25", "1900-01-01", "2027-01-01"])
def test_an_unsupported_version_is_32022_naming_both(server, version):
    for method in ("server/discover", "tools/list", "ping"):     # version before method
        error = server.request(method, {"_meta": {PV: version, CAPS: {}}})["error"]
        assert error["code"] == -32022, error
        assert error["data"] == {"supported": [V], "requested": version}


@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "resources/subscribe",
                                    "resources/unsubscribe", "tools/lisst"])
def test_handshake_only_and_unknown_methods_are_32601(server, method):
    error = error_of(server, method, {"level": "info", "uri": "test://modern/text"})
    assert error["code"] == -32601 and method in error["message"]


def test_a_modern_request_inside_a_batch_is_refused(spawn):
    wire = spawn("modern.py")
    wire.initialize("2025-03-26")
    wire.send([{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": envelope()}},
               {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])
    [first, second] = sorted(wire.recv(), key=lambda m: m["id"])
    assert first["error"]["code"] == -32600 and "batch" in first["error"]["message"]
    assert "resultType" not in second["result"]


def test_codes_of_the_reserved_range_are_only_the_defined_ones(server):
    """Every error this test provokes is a JSON-RPC code or -32021/-32022, never -32002."""
    codes = {error_of(server, "resources/read", {"uri": "test://none"})["code"],
             error_of(server, "tools/call", {"name": "nope"})["code"],
             error_of(server, "prompts/get", {"name": "nope"})["code"],
             error_of(server, "tools/call", {"name": "greet"})["code"],
             error_of(server, "tools/call", {"name": "greet", "requestState": "x"})["code"]}
    assert codes == {-32602, -32021}


# ============================================================================================
# Results: resultType everywhere, cache hints where clients may cache
# ============================================================================================

def test_every_cacheable_result_carries_ttl_and_scope(server):
    for method in CACHEABLE:
        result = result_of(server, method)
        assert result["resultType"] == "complete"
        assert type(result["ttlMs"]) is int and result["ttlMs"] == 0
        assert result["cacheScope"] == "public"
        assert result["_meta"][SERVER_INFO]["name"] == "modern"


def test_results_that_are_not_cacheable_carry_no_hints(server):
    for method, params in (("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}),
                           ("prompts/get", {"name": "poem", "inputResponses": {}}),
                           ("completion/complete", {"ref": {"type": "ref/prompt", "name": "poem"},
                                                    "argument": {"name": "subject", "value": ""}})):
        result = result_of(server, method, params, capabilities=ALL_CAPS)
        assert result["resultType"] in ("complete", "input_required")
        assert "ttlMs" not in result and "cacheScope" not in result


def test_cache_hints_come_from_the_server_and_from_each_resource(spawn):
    wire = spawn("modern.py", env={"MODERN_TTL_MS": "5000", "MODERN_SCOPE": "private"})
    listed = result_of(wire, "tools/list")
    assert (listed["ttlMs"], listed["cacheScope"]) == (5000, "private")
    plain = result_of(wire, "resources/read", {"uri": "test://modern/plain"})
    assert (plain["ttlMs"], plain["cacheScope"]) == (5000, "private")
    own = result_of(wire, "resources/read", {"uri": "test://modern/text"})
    assert (own["ttlMs"], own["cacheScope"]) == (60000, "private")


def test_every_page_of_a_list_shares_its_scope(spawn, tmp_path):
    script = write_script(
        tmp_path, "paged.py",
        "from mcp_min import Server\n"
        "server = Server('paged', page_size=2, cache_scope='private', cache_ttl_ms=10)\n"
        "for i in range(5):\n"
        "    server.tool(lambda: 'x', name=f't{i}')\n"
        "server.run()\n")
    wire = spawn(str(script))
    cursor, scopes, names = None, set(), []
    while True:
        result = result_of(wire, "tools/list", {"cursor": cursor} if cursor else {})
        scopes.add((result["cacheScope"], result["ttlMs"]))
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    assert names == [f"t{i}" for i in range(5)] and scopes == {("private", 10)}


def test_not_found_is_32602_in_this_era(server):
    error = error_of(server, "resources/read", {"uri": "test://modern/none"})
    assert error["code"] == -32602 and error["data"] == {"uri": "test://modern/none"}
    tool = error_of(server, "tools/call", {"name": "ad"})
    assert tool["code"] == -32602 and "'add'" in tool["message"]       # did you mean
    assert error_of(server, "prompts/get", {"name": "nope"})["code"] == -32602
    # and the handshake era keeps -32002 for a resource
    server.initialize()
    assert server.request("resources/read", {"uri": "test://modern/none"})["error"]["code"] == -32002


# ============================================================================================
# Statelessness: nothing carries over from one request to the next
# ============================================================================================

def test_capabilities_are_those_of_this_request_only(server):
    asked = result_of(server, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    assert asked["resultType"] == "input_required"
    error = error_of(server, "tools/call", {"name": "greet"})
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_tools_list_does_not_depend_on_the_connection(spawn):
    fresh = spawn("modern.py")
    used = spawn("modern.py")
    used.initialize("2024-11-05")            # an old handshake on the same pipe
    result_of(used, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    lists = [result_of(w, "tools/list") for w in (fresh, used)]
    assert lists[0] == lists[1]
    assert any("outputSchema" in t for t in lists[0]["tools"])   # not shaped for 2024-11-05


# ============================================================================================
# MRTR: questions for the client as input_required results
# ============================================================================================

def test_an_elicitation_round_trip(server):
    first = result_of(server, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    assert first["resultType"] == "input_required"
    assert "ttlMs" not in first and "content" not in first
    assert first["inputRequests"] == {"user_name": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Your name?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string"}},
            "required": ["name"]}}}}
    retry = {"name": "greet", "requestState": first["requestState"],
             "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}},
                                "unasked": {"action": "accept"}}}       # extra keys are ignored
    done = result_of(server, "tools/call", retry, capabilities=ALL_CAPS)
    assert done["resultType"] == "complete" and done["content"][0]["text"] == "Hello, Ada!"


def test_three_rounds_three_kinds_each_answer_kept(server):
    params = {"name": "interview", "arguments": {"topic": "tea"}}
    answers = {"elicitation/create": {"action": "accept", "content": {"name": "Bo"}},
               "sampling/createMessage": {"role": "assistant", "model": "m",
                                          "content": {"type": "text", "text": "likes it"}},
               "roots/list": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}}
    result, asked = result_of(server, "tools/call", params, capabilities=ALL_CAPS), []
    while result["resultType"] == "input_required":
        [(key, question)] = result["inputRequests"].items()
        asked.append((key, question["method"]))
        retry = dict(params, requestState=result["requestState"],
                     inputResponses={key: answers[question["method"]]})
        result = result_of(server, "tools/call", retry, capabilities=ALL_CAPS)
    assert asked == [("elicitation-1", "elicitation/create"),
                     ("sampling-2", "sampling/createMessage"), ("roots-3", "roots/list")]
    assert result["content"][0]["text"] == "Bo / likes it / 2 roots"


def test_questions_asked_together_travel_in_one_round(server):
    params = {"name": "survey", "arguments": {"topic": "tea"}}
    first = result_of(server, "tools/call", params, capabilities=ALL_CAPS)
    assert {key: q["method"] for key, q in first["inputRequests"].items()} == {
        "elicitation-1": "elicitation/create", "sampling-2": "sampling/createMessage",
        "roots-3": "roots/list"}
    answers = {"elicitation-1": {"action": "accept", "content": {"name": "Jo"}},
               "sampling-2": {"role": "assistant", "model": "m",
                              "content": {"type": "text", "text": "fine"}}}
    # one answer short: only the missing question is asked again, the others are kept
    second = result_of(server, "tools/call", dict(params, requestState=first["requestState"],
                                                  inputResponses=answers),
                       capabilities=ALL_CAPS)
    assert list(second["inputRequests"]) == ["roots-3"]
    done = result_of(server, "tools/call", dict(
        params, requestState=second["requestState"],
        inputResponses={"roots-3": {"roots": [{"uri": "file:///a"}]}}), capabilities=ALL_CAPS)
    assert done["content"][0]["text"] == "Jo / fine / 1 roots"


def test_a_retry_without_the_answer_is_asked_again(server):
    first = result_of(server, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    again = result_of(server, "tools/call", {"name": "greet", "requestState": first["requestState"]},
                      capabilities=ALL_CAPS)
    assert again["resultType"] == "input_required"
    assert again["inputRequests"] == first["inputRequests"]


def test_the_handler_runs_again_from_the_top(server):
    """What "runs again with the answers" means for side effects before a question."""
    first = result_of(server, "tools/call", {"name": "count_runs"}, capabilities=ALL_CAPS)
    done = result_of(server, "tools/call", {
        "name": "count_runs", "requestState": first["requestState"],
        "inputResponses": {"elicitation-1": {"action": "accept", "content": {}}}},
        capabilities=ALL_CAPS)
    assert done["structuredContent"] == {"runs": 2}


def test_prompts_and_resources_ask_too(server):
    for method, params, key in (("prompts/get", {"name": "poem"}, "elicitation-1"),
                                ("resources/read", {"uri": "test://modern/ask"}, "elicitation-1")):
        first = result_of(server, method, params, capabilities=ALL_CAPS)
        assert first["resultType"] == "input_required" and "ttlMs" not in first
        answer = {"action": "accept", "content": {"subject": "rain", "name": "Cy"}}
        done = result_of(server, method, dict(params, requestState=first["requestState"],
                                              inputResponses={key: answer}),
                         capabilities=ALL_CAPS)
        assert done["resultType"] == "complete"
    assert done["contents"][0]["text"] == "for Cy" and done["ttlMs"] == 0


def test_only_three_methods_may_ask(server):
    error = error_of(server, "example/ask", capabilities=ALL_CAPS)
    assert error["code"] == -32603 and "cannot ask" in error["message"]


def test_missing_capability_is_32021_with_the_capability_object(server):
    answered = {"elicitation-1": {"action": "accept", "content": {"name": "Di"}}}
    first = result_of(server, "tools/call", {"name": "interview", "arguments": {"topic": "x"}},
                      capabilities={"elicitation": {}})
    error = error_of(server, "tools/call", {"name": "interview", "arguments": {"topic": "x"},
                                            "requestState": first["requestState"],
                                            "inputResponses": answered},
                     capabilities={"elicitation": {}})
    assert error["code"] == -32021 and error["data"] == {"requiredCapabilities": {"sampling": {}}}
    url = error_of(server, "tools/call", {"name": "secret_link"}, capabilities={"elicitation": {}})
    assert url["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}


def test_a_tool_may_handle_the_missing_capability_itself(server):
    result = result_of(server, "tools/call", {"name": "optional_model"})
    assert result["content"][0]["text"] == "without a model: {'sampling': {}}"


def test_url_elicitation_has_no_elicitation_id_in_this_era(server):
    first = result_of(server, "tools/call", {"name": "secret_link"}, capabilities=ALL_CAPS)
    [question] = first["inputRequests"].values()
    assert question["params"] == {"mode": "url", "message": "Sign in",
                                  "url": "https://example.com/sign-in"}


def _tamper(state):
    version, body, mac = state.split(".")
    payload = json.loads(__import__("base64").urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["answers"] = {"user_name": ["0" * 32, {"action": "accept", "content": {"name": "x"}}]}
    forged = __import__("base64").urlsafe_b64encode(json.dumps(payload).encode()).decode()
    return f"{version}.{forged.rstrip('=')}.{mac}"


@pytest.mark.parametrize("how", ["garbage", "flipped", "forged answers", "other arguments",
                                 "other tool", "not a string", "other method"])
def test_a_tampered_or_replayed_request_state_is_32602(server, how):
    first = result_of(server, "tools/call", {"name": "interview", "arguments": {"topic": "a"}},
                      capabilities=ALL_CAPS)
    state = first["requestState"]
    method, params = "tools/call", {"name": "interview", "arguments": {"topic": "a"}}
    if how == "garbage":
        state = "v1.not.base64!"
    elif how == "flipped":
        state = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
    elif how == "forged answers":
        state = _tamper(state)
    elif how == "other arguments":
        params = {"name": "interview", "arguments": {"topic": "b"}}
    elif how == "other tool":
        params = {"name": "greet"}
    elif how == "not a string":
        state = {"state": state}
    else:
        method, params = "prompts/get", {"name": "poem"}
    error = error_of(server, method, dict(params, requestState=state,
                                          inputResponses={"elicitation-1": {"action": "decline"}}),
                     capabilities=ALL_CAPS)
    assert error["code"] == -32602 and "requestState" in error["message"], error


def test_a_malformed_answer_is_32602(server):
    first = result_of(server, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    for answer in ({"action": "maybe"}, "yes", {"content": {"name": "x"}}):
        error = error_of(server, "tools/call", {
            "name": "greet", "requestState": first["requestState"],
            "inputResponses": {"user_name": answer}}, capabilities=ALL_CAPS)
        assert error["code"] == -32602 and "user_name" in error["message"]


def test_input_responses_that_are_not_an_object_are_32602_with_or_without_a_state(server):
    """The spec: servers SHOULD check that the client sent a valid InputResponses object. With
    no requestState (answers sent before their question) a list or a string was ignored."""
    first = result_of(server, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    for state in ({}, {"requestState": first["requestState"]}):
        for responses in ([{"action": "accept"}], "accept"):
            error = error_of(server, "tools/call", dict(state, name="greet",
                                                        inputResponses=responses),
                             capabilities=ALL_CAPS)
            assert error["code"] == -32602 and "inputResponses" in error["message"], error


def test_a_forged_state_is_the_error_reported_before_malformed_input_responses(server):
    """Both wrong: the state is checked first, so the client learns to drop it."""
    first = result_of(server, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    forged = first["requestState"][:-2] + "AA"
    error = error_of(server, "tools/call", {"name": "greet", "requestState": forged,
                                            "inputResponses": 7}, capabilities=ALL_CAPS)
    assert error["code"] == -32602 and "requestState rejected" in error["message"], error


def test_request_state_expires(spawn):
    wire = spawn("modern.py", env={"MODERN_STATE_TTL": "0"})
    first = result_of(wire, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    time.sleep(1.1)
    error = error_of(wire, "tools/call", {
        "name": "greet", "requestState": first["requestState"],
        "inputResponses": {"user_name": {"action": "decline"}}}, capabilities=ALL_CAPS)
    assert error["code"] == -32602 and "expired" in error["message"]


def test_a_shared_key_lets_another_process_finish_the_call(spawn):
    """Behind a load balancer the retry may reach another process: with one key it works;
    with the default (a random key per process) it is refused."""
    shared = {"MCP_MIN_STATE_KEY": "a key both processes know"}
    one, two = spawn("modern.py", env=shared), spawn("modern.py", env=shared)
    stranger = spawn("modern.py")
    first = result_of(one, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    retry = {"name": "greet", "requestState": first["requestState"],
             "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Eve"}}}}
    assert result_of(two, "tools/call", retry, capabilities=ALL_CAPS)["content"][0][
        "text"] == "Hello, Eve!"
    assert error_of(stranger, "tools/call", retry, capabilities=ALL_CAPS)["code"] == -32602


# ============================================================================================
# Progress, logging, cancellation: per request
# ============================================================================================

def test_progress_and_logs_only_as_this_request_asks(server):
    response = modern(server, "tools/call", {"name": "report", "arguments": {"steps": 2}},
                      meta={"progressToken": "p1", LOG_LEVEL: "warning"})
    assert response["result"]["content"][0]["text"] == "reported"
    sent = [(n["method"], n["params"].get("progress", n["params"].get("level")))
            for n in server.notifications]
    assert sent == [("notifications/progress", 1), ("notifications/progress", 2),
                    ("notifications/message", "warning"), ("notifications/message", "error")]
    server.notifications.clear()
    # without logLevel: no log lines at all, though nothing else changed on the pipe
    assert result_of(server, "tools/call", {"name": "report", "arguments": {"steps": 1}})
    server.expect_silence()
    assert server.notifications == []


def test_a_cancelled_request_is_never_answered(server):
    server.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": {
        "name": "slow", "arguments": {"ms": 3000}, "_meta": envelope()}})
    time.sleep(0.2)
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": "slow", "reason": "changed my mind"}})
    assert result_of(server, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    server.expect_silence(0.5)


# ============================================================================================
# subscriptions/listen
# ============================================================================================

def listen(wire, request_id, notifications):
    wire.send({"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
               "params": {"_meta": envelope(), "notifications": notifications}})
    ack = wire.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    assert ack["params"]["_meta"] == {SUB_ID: request_id}       # the same JSON type
    return ack["params"]["notifications"]


def test_listen_acknowledges_what_it_will_send_and_tags_it(server):
    honoured = listen(server, 7, {"toolsListChanged": True, "promptsListChanged": False,
                                  "resourceSubscriptions": ["test://modern/text"],
                                  "somethingElse": True})
    assert honoured == {"toolsListChanged": True, "resourceSubscriptions": ["test://modern/text"]}
    result_of(server, "tools/call", {"name": "toggle", "arguments": {"present": True}})
    result_of(server, "tools/call", {"name": "touch", "arguments": {"uri": "test://modern/text"}})
    result_of(server, "tools/call", {"name": "touch", "arguments": {"uri": "test://modern/plain"}})
    assert [(n["method"], n["params"]) for n in server.notifications] == [
        ("notifications/tools/list_changed", {"_meta": {SUB_ID: 7}}),
        ("notifications/resources/updated", {"uri": "test://modern/text", "_meta": {SUB_ID: 7}})]


def test_a_resource_subscription_covers_the_resources_under_it(server):
    """An update may be of a sub-resource of the URI subscribed to (the schema's words), but
    not of a URI that merely starts with the same letters."""
    listen(server, "r", {"resourceSubscriptions": ["test://modern/"]})
    for uri in ("test://modern/text", "test://modernist"):
        result_of(server, "tools/call", {"name": "touch", "arguments": {"uri": uri}})
    assert [n["params"] for n in server.notifications] == [
        {"uri": "test://modern/text", "_meta": {SUB_ID: "r"}}]


def test_a_stop_signal_ends_each_open_listen_with_its_response(server):
    """Shutting down is a graceful end: the response to subscriptions/listen says so, and
    tells the client to listen again, not that it lost the stream."""
    import signal
    listen(server, 7, {"toolsListChanged": True})
    listen(server, "b", {"toolsListChanged": True})
    server.proc.send_signal(signal.SIGTERM)
    ended = server.rest_of_stdout()
    assert server.wait(10) == 0
    assert sorted(map(str, (m["id"] for m in ended))) == ["7", "b"], ended
    for message in ended:
        assert message["result"]["resultType"] == "complete"
        assert message["result"]["_meta"][SUB_ID] == message["id"]     # the same JSON type


def test_two_listens_and_a_cancelled_one(server):
    listen(server, "a", {"toolsListChanged": True})
    listen(server, "b", {"toolsListChanged": True})
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}})
    result_of(server, "tools/call", {"name": "toggle", "arguments": {"present": True}})
    assert [n["params"]["_meta"][SUB_ID] for n in server.notifications] == ["b"]
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "b"}})
    result_of(server, "tools/call", {"name": "toggle", "arguments": {"present": False}})
    server.expect_silence()
    assert len(server.notifications) == 1


def test_listen_needs_its_filter(server):
    assert error_of(server, "subscriptions/listen")["code"] == -32602
    bad = error_of(server, "subscriptions/listen",
                   {"notifications": {"resourceSubscriptions": "test://modern/text"}})
    assert bad["code"] == -32602


def test_open_listens_hold_no_worker_thread(spawn):
    wire = spawn("modern.py", env={"MODERN_WORKERS": "1"})
    for i in range(50):
        listen(wire, f"l{i}", {"toolsListChanged": True})
    assert result_of(wire, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})[
        "structuredContent"] == {"result": 4}


def test_no_list_changed_outside_a_listen(server):
    result_of(server, "tools/call", {"name": "toggle", "arguments": {"present": True}})
    result_of(server, "tools/call", {"name": "toggle", "arguments": {"present": False}})
    server.expect_silence()
    assert server.notifications == []


# ============================================================================================
# Found in review: each failed before its fix
# ============================================================================================

def test_arguments_too_deep_to_digest_get_an_error_and_the_server_lives(server):
    first = result_of(server, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    params = json.dumps({"name": "greet", "arguments": {"a": "DEEP"},
                         "requestState": first["requestState"], "_meta": envelope(ALL_CAPS)})
    deep = "[" * 985 + "]" * 985           # the server decodes it, but cannot encode it again
    server.send('{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":%s}\n'
                % params.replace('"DEEP"', deep))
    error = server.response("deep")["error"]
    assert error["code"] == -32602
    assert result_of(server, "tools/list")["tools"]


def test_a_request_may_not_reuse_the_id_of_an_open_listen(server):
    listen(server, "L", {"toolsListChanged": True})
    error = error_of(server, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}},
                     request_id="L")
    assert error["code"] == -32600 and "in use" in error["message"]
    result_of(server, "tools/call", {"name": "toggle", "arguments": {"present": True}})
    assert [n["params"]["_meta"][SUB_ID] for n in server.notifications] == ["L"]


def test_server_busy_is_not_a_reserved_legacy_code_in_this_era(spawn):
    wire = spawn("modern.py", env={"MODERN_WORKERS": "1", "MODERN_QUEUE": "0"})
    wire.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "slow", "arguments": {"ms": 500}, "_meta": envelope()}})
    busy = error_of(wire, "tools/call", {"name": "slow", "arguments": {"ms": 1}})
    assert busy["code"] == -32603 and "busy" in busy["message"]


def test_a_handler_answering_input_required_on_another_method_is_refused(spawn, tmp_path):
    script = write_script(
        tmp_path, "own.py",
        "from mcp_min import Server\n"
        "server = Server('own')\n"
        "server.tool(lambda: 'x', name='t')\n"
        "server.handlers['tools/list'] = lambda ctx, params: {'resultType': 'input_required',\n"
        "                                                     'requestState': 'x'}\n"
        "server.run()\n")
    error = error_of(spawn(str(script)), "tools/list")
    assert error["code"] == -32603 and "input_required" in error["message"]


def test_request_state_is_bound_to_the_server_that_issued_it(spawn, tmp_path):
    """Two different servers sharing one key: a state of one is refused by the other."""
    script = write_script(
        tmp_path, "other.py",
        "import runpy\n"
        f"namespace = runpy.run_path({str(SERVERS / 'modern.py')!r})\n"
        "namespace['server'].name = 'another'\n"
        "namespace['server'].run()\n")
    key = {"MCP_MIN_STATE_KEY": "shared"}
    one, other = spawn("modern.py", env=key), spawn(str(script), env=key)
    first = result_of(one, "tools/call", {"name": "greet"}, capabilities=ALL_CAPS)
    retry = {"name": "greet", "requestState": first["requestState"],
             "inputResponses": {"user_name": {"action": "decline"}}}
    assert error_of(other, "tools/call", retry, capabilities=ALL_CAPS)["code"] == -32602
    assert result_of(one, "tools/call", retry, capabilities=ALL_CAPS)["resultType"] == "complete"


@pytest.mark.parametrize("hints", [{"cache_ttl_ms": None}, {"cache_scope": None},
                                   {"cache_ttl_ms": -1}, {"cache_scope": "shared"}])
def test_the_server_cache_hints_must_be_set(hints):
    """Every cacheable result carries ttlMs (an integer >= 0) and cacheScope: a server given
    None for either used to send "ttlMs": null or "cacheScope": null. A resource's None still
    means the server's."""
    from mcp_min import Server
    with pytest.raises(ValueError, match="cache_"):
        Server("unset", **hints)
    Server("set").resource("test://r", ttl_ms=None, cache_scope=None)(lambda: "r")


def test_no_log_or_progress_for_a_request_once_answered_or_cancelled(spawn, tmp_path):
    """Logs and progress are request-scoped: sent before that request's response only, and
    after a cancellation nothing more is sent for it (stdio: MUST NOT send any further
    messages). The tool's thread goes on logging and reporting all the same."""
    script = write_script(
        tmp_path, "chatty.py",
        "import threading, time\n"
        "from mcp_min import Context, Server\n"
        "server = Server('chatty')\n"
        "@server.tool\n"
        "def chatter(ms: int, ctx: Context) -> str:\n"
        "    def go():\n"
        "        for i in range(1, ms // 10):\n"
        "            ctx.info(f'line {i}')\n"
        "            ctx.report_progress(i)\n"
        "            time.sleep(0.01)\n"
        "    thread = threading.Thread(target=go)\n"
        "    thread.start()\n"
        "    if ms > 500:\n"
        "        thread.join()\n"
        "    return 'said'\n"
        "server.run()\n")
    wire = spawn(str(script))
    meta = {"progressToken": "t", LOG_LEVEL: "debug"}
    # answered at once, while its thread chatters on for 300 ms
    assert modern(wire, "tools/call", {"name": "chatter", "arguments": {"ms": 300}},
                  meta=meta)["result"]["content"][0]["text"] == "said"
    wire.expect_silence(0.5)
    # cancelled while it chatters: nothing after the cancellation has been read
    wire.send({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {
        "name": "chatter", "arguments": {"ms": 1000}, "_meta": envelope(**meta)}})
    assert wire.recv()["method"] in ("notifications/message", "notifications/progress")
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}})
    wire.notifications.clear()
    assert "error" in modern(wire, "tools/call", {"name": "nope"})      # read after the cancel
    wire.expect_silence(1.2)


def test_a_handlers_code_of_the_reserved_range_goes_out_as_32603_in_2026_07_28():
    """2026-07-28 reserves -32020...-32099: a server sends only -32020, -32021 and -32022
    of it. The handshake era has no such rule: there the code goes out as raised."""
    from mcp_min import Client, JSONRPCError, Server
    server = Server("reserved")

    @server.resource("test://r")
    def r() -> str:
        raise JSONRPCError(-32050, "a code of the reserved range")

    @server.resource("test://s")
    def s() -> str:
        raise JSONRPCError(-32001, "a code of the server's own range")
    for era, expected in (("2026-07-28", -32603), ("legacy", -32050)):
        with Client(server, era=era) as client:
            with pytest.raises(JSONRPCError) as raised:
                client.read_resource("test://r")
            assert raised.value.code == expected and "reserved range" in raised.value.message
            with pytest.raises(JSONRPCError) as raised:
                client.read_resource("test://s")
            assert raised.value.code == -32001
