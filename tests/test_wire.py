"""Framing and JSON-RPC rules on the real stdio wire (spec checklist §2 B*, §3 T*, §13, G7,
G10; pain points 2, 13, 14, 17).

Every test drives ``tests/servers/everything.py`` as a subprocess through ``conftest.Wire``,
whose ``recv`` already checks that each stdout line is one JSON-RPC message ending in
``\\n`` (T2, T4)."""

import json
import os
import sys
import time

import pytest

import mcp_min
from conftest import INIT_PARAMS, SERVERS, Wire

ABSENT = object()          # "this key must not be in the message"


def compact(message):
    """One compact JSON line, as a careful client writes it."""
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def ping(request_id):
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def call(request_id, name, arguments):
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def assert_error(message, code, request_id=ABSENT):
    """An error response with ``code``; its id equal to ``request_id`` (or omitted, G7)."""
    assert isinstance(message, dict), message
    assert "error" in message and "result" not in message, message
    assert message["error"]["code"] == code, message
    assert isinstance(message["error"]["message"], str) and message["error"]["message"], message
    if request_id is ABSENT:
        assert "id" not in message, f"the id of an unreadable request must be omitted (G7): {message}"
    else:
        assert "id" in message and message["id"] == request_id, message
        assert type(message["id"]) is type(request_id), message
    return message


def assert_still_serving(wire, request_id="alive"):
    """The next thing on the wire is the answer to a fresh ping: nothing stray before it.
    The reader handles lines in order and answers ping (and errors about a line) at once, so
    this also proves the line sent before produced no reply (without waiting for silence)."""
    wire.send(ping(request_id))
    reply = wire.recv()
    assert reply == {"jsonrpc": "2.0", "id": request_id, "result": {}}, reply



@pytest.fixture(scope="module")
def shared():
    """One initialized everything server for the many small malformed-input cases."""
    wire = Wire([sys.executable, str(SERVERS / "everything.py")])
    wire.initialize()
    yield wire
    wire.close()


# ============================================================================================
# Output framing (T2, T3, T4, B1)
# ============================================================================================

def test_T2_reply_is_one_compact_json_line(wire):
    wire.send(compact(ping(1)))
    assert wire.recv_raw() == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


def test_T2_every_output_line_is_compact_utf8_json(wire):
    wire.send(compact(call(2, "echo", {"text": "h\u00e9llo, \u4e16\u754c \U0001F600 \"q\" \\ \n\t end"})))
    raw = wire.recv_raw()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    text = raw[:-1].decode("utf-8")                       # strict: valid UTF-8 (T3)
    message = json.loads(text)
    assert message["id"] == 2
    assert message["result"]["content"][0]["text"] == "h\u00e9llo, \u4e16\u754c \U0001F600 \"q\" \\ \n\t end"
    assert text in (json.dumps(message, separators=(",", ":"), ensure_ascii=False),
                    json.dumps(message, separators=(",", ":"))), "not compact JSON"


def test_T3_lone_surrogate_in_output_is_still_valid_utf8(wire):
    """A tool may return a string holding a lone surrogate (from a JSON \\ud800 escape):
    the line must still be strict UTF-8, with the surrogate escaped."""
    wire.send(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",'
              b'"arguments":{"text":"a\\ud800b"}}}\n')
    raw = wire.recv_raw()
    message = json.loads(raw.decode("utf-8"))
    assert message["id"] == 3
    assert message["result"]["content"][0]["text"] == "a\ud800b"


# ============================================================================================
# Input framing: split on \n only, CRLF, blank lines, EOF (T2, T6, pain points 2, 17)
# ============================================================================================

@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085"], ids=["U+2028", "U+2029", "U+0085"])
def test_T2_unicode_line_separators_inside_strings_do_not_split(wire, char):
    text = f"before{char}after{char}"
    line = (json.dumps(call(4, "echo", {"text": text}), ensure_ascii=False,
                       separators=(",", ":")) + "\n").encode("utf-8")
    assert char.encode("utf-8") in line                      # sent raw, not escaped
    wire.send(line)
    reply = wire.recv()
    assert reply["id"] == 4 and reply["result"]["content"][0]["text"] == text
    assert_still_serving(wire)                               # no -32700 for a "second half"


def test_T2_crlf_line_endings_are_accepted(wire):
    wire.send(compact(ping(5))[:-1] + b"\r\n")
    assert wire.recv() == {"jsonrpc": "2.0", "id": 5, "result": {}}
    wire.send(compact(call(6, "echo", {"text": "no cr"}))[:-1] + b"\r\n")
    assert wire.recv()["result"]["content"][0]["text"] == "no cr"


def test_T2_only_one_trailing_cr_is_dropped_and_the_rest_is_json_whitespace(wire):
    wire.send(compact(ping(7))[:-1] + b"\r\r\n")
    assert wire.recv() == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_blank_lines_are_ignored(wire):
    wire.send(b"\n\r\n   \n\t\n \r\n")
    assert_still_serving(wire)


def test_final_line_without_newline_is_handled_at_eof(spawn):
    wire = spawn("everything.py")
    wire.initialize()
    wire.send(compact(call(8, "echo", {"text": "last"}))[:-1])     # no newline, then EOF
    wire.close_stdin()
    reply = wire.recv()
    assert reply["id"] == 8 and reply["result"]["content"][0]["text"] == "last"
    assert wire.wait(10) == 0


def test_final_inline_request_without_newline_is_handled_at_eof(spawn):
    wire = spawn("everything.py")
    wire.send(compact(ping("eof"))[:-1])
    wire.close_stdin()
    assert wire.recv() == {"jsonrpc": "2.0", "id": "eof", "result": {}}
    assert wire.wait(10) == 0


# ============================================================================================
# Parse errors (T3, T7, -32700; pain point 13)
# ============================================================================================

@pytest.mark.parametrize("line", [
    b"hello\n",
    b"{\n",
    b'{"jsonrpc":"2.0","id":1,"method":"ping"\n',
    b"[1,2\n",
    b"NaN\n",
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}\n',
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}\n',
    b"\xef\xbb\xbf" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',        # a UTF-8 BOM
], ids=["word", "open-brace", "truncated", "truncated-array", "NaN", "NaN-inside", "Infinity",
        "BOM"])
def test_T7_not_json_gets_parse_error_without_id_and_serving_continues(shared, line):
    shared.send(line)
    assert_error(shared.recv(), -32700)
    assert_still_serving(shared)


def test_a_byte_order_mark_is_named_in_the_parse_error(shared):
    shared.send(b"\xef\xbb\xbf" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    error = shared.recv()["error"]
    assert error["code"] == -32700 and "byte-order mark" in error["message"], error
    assert_still_serving(shared)


@pytest.mark.parametrize("bad", [b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\x80"],
                         ids=["ff-fe", "overlong", "utf8-surrogate", "truncated-seq", "lone-continuation"])
def test_T3_invalid_utf8_is_a_parse_error(shared, bad):
    shared.send(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + bad + b'"}}\n')
    assert_error(shared.recv(), -32700)
    assert_still_serving(shared)


def test_T7_deeply_nested_json_is_a_parse_error_not_a_crash(wire):
    wire.send(b"[" * 200_000 + b"]" * 200_000 + b"\n")
    reply = wire.recv()
    assert reply.get("error", {}).get("code") in (-32700, -32600), reply
    assert "id" not in reply
    assert_still_serving(wire)


# ============================================================================================
# Invalid requests (-32600), and the id of the error (B1-B3, B5, G7)
# ============================================================================================

INVALID = [
    # (message, the id the error must carry, or ABSENT when the id is unreadable)
    ({"id": 1, "method": "ping"}, 1),                                          # no jsonrpc
    ({"jsonrpc": "1.0", "id": "a", "method": "ping"}, "a"),                    # wrong jsonrpc
    ({"jsonrpc": 2.0, "id": 2, "method": "ping"}, 2),                          # jsonrpc a number
    ({"jsonrpc": "2.0", "id": 3, "method": 7}, 3),                             # method not a string
    ({"jsonrpc": "2.0", "id": 4, "method": None}, 4),
    ({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": []}, 5),          # params an array
    ({"jsonrpc": "2.0", "id": "p", "method": "ping", "params": "x"}, "p"),     # params a string
    ({"jsonrpc": "2.0", "id": 6}, 6),                                          # no method, no result
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, ABSENT),                # null id (B3)
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, ABSENT),                # boolean id
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, ABSENT),                 # float id
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, ABSENT),            # object id
    ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, ABSENT),                 # array id
    ({"jsonrpc": "1.0", "id": None, "method": "ping"}, ABSENT),
    ({}, ABSENT),
    (42, ABSENT),
    ("a string", ABSENT),
    (None, ABSENT),
    ([1], ABSENT),                           # a batch in 2025-11-25 (B11)
    ([ping(9)], ABSENT),                     # a batch in 2025-11-25 (B11)
]


@pytest.mark.parametrize("message,request_id", INVALID, ids=[json.dumps(m) for m, _ in INVALID])
def test_B1_B2_G7_invalid_request_is_32600_and_serving_continues(shared, message, request_id):
    shared.send(compact(message))
    assert_error(shared.recv(), -32600, request_id)
    assert_still_serving(shared)


@pytest.mark.parametrize("request_id", [1, "1", 0, -7, "", "\u00fc-id", 2 ** 53 + 1, 10 ** 30, "9" * 300],
                         ids=["int", "str-1", "zero", "negative", "empty-str", "unicode", "2^53+1",
                              "10^30", "long-str"])
def test_B5_id_is_echoed_with_its_exact_type(shared, request_id):
    shared.send(compact(ping(request_id)))
    raw = shared.recv_raw()
    reply = json.loads(raw)
    assert reply == {"jsonrpc": "2.0", "id": request_id, "result": {}}
    assert type(reply["id"]) is type(request_id)
    assert (b'"id":' + json.dumps(request_id, ensure_ascii=False).encode()) in raw or \
        (b'"id":' + json.dumps(request_id).encode()) in raw


def test_B5_int_and_string_ids_are_different_requests(wire):
    """1 and "1" are two ids: a slow call with id 1 does not make ping "1" a duplicate."""
    wire.send(compact(call(1, "block", {"ms": 300})))
    wire.send(compact(ping("1")))
    first = wire.recv()
    assert first == {"jsonrpc": "2.0", "id": "1", "result": {}}, first
    second = wire.recv()
    assert second["id"] == 1 and type(second["id"]) is int and "result" in second, second


def test_B5_error_replies_echo_the_id_type(wire):
    wire.send(compact({"jsonrpc": "2.0", "id": "42", "method": "no/such/method"}))
    assert_error(wire.recv(), -32601, "42")
    wire.send(compact({"jsonrpc": "2.0", "id": 42, "method": "no/such/method"}))
    assert_error(wire.recv(), -32601, 42)


# ============================================================================================
# Notifications (B9)
# ============================================================================================

@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "method": "notifications/nobody/knows"},
    {"jsonrpc": "2.0", "method": "notifications/nobody/knows", "params": {"x": 1}},
    {"jsonrpc": "2.0", "method": "some/unknown/method"},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},                 # again
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 123456}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": None}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled"},
    {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}},
    # invalid notifications (no id): never answered either
    {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1, 2]},
    {"jsonrpc": "2.0", "method": "notifications/x", "params": "text"},
    {"jsonrpc": "1.0", "method": "notifications/x"},
    {"method": "notifications/x"},
    {"jsonrpc": "2.0", "method": 12},
], ids=lambda m: json.dumps(m))
def test_B9_notifications_never_get_a_reply(shared, message):
    shared.send(compact(message))
    assert_still_serving(shared)


def test_B9_request_method_sent_as_notification_does_not_block_the_reader(wire):
    """Not an MCP notification, so it should be ignored (B9); at the very least it must not
    run a tool on the reader thread, where it blocks every other message."""
    wire.send(compact({"jsonrpc": "2.0", "method": "tools/call",
                       "params": {"name": "block", "arguments": {"ms": 2000}}}))
    wire.send(compact(ping("after")))
    assert wire.recv(timeout=1.0) == {"jsonrpc": "2.0", "id": "after", "result": {}}


def test_B9_L1_initialize_as_a_notification_does_not_initialize(spawn):
    wire = spawn("everything.py")
    wire.send(compact({"jsonrpc": "2.0", "method": "initialize", "params": INIT_PARAMS}))
    wire.send(compact({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    reply = wire.recv()
    assert "error" in reply and "initialize" in reply["error"]["message"], reply


@pytest.mark.parametrize("method", ["notifications/initialized", "notifications/cancelled",
                                    "notifications/roots/list_changed"])
def test_B6_request_to_a_notification_method_gets_an_object_result_or_an_error(wire, method):
    wire.send(compact({"jsonrpc": "2.0", "id": 77, "method": method, "params": {"requestId": 1}}))
    reply = wire.recv()
    assert reply["id"] == 77
    assert "error" in reply or isinstance(reply.get("result"), dict), reply


# ============================================================================================
# Responses from the client (B4, B6): to unknown ids they are ignored
# ============================================================================================

@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "id": 123456, "result": {}},
    {"jsonrpc": "2.0", "id": "nope", "result": {"x": 1}},
    {"jsonrpc": "2.0", "id": 99, "error": {"code": -32601, "message": "Method not found"}},
    {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
], ids=lambda m: json.dumps(m))
def test_B6_responses_to_unknown_ids_are_ignored(shared, message):
    shared.send(compact(message))
    assert_still_serving(shared)


def test_B8_G7_id_less_error_response_from_the_client_is_not_answered(wire):
    wire.send(compact({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}))
    assert_still_serving(wire)


def test_B8_G7_no_error_ping_pong_between_two_mcp_min_peers():
    server = mcp_min.Server("pingpong")
    frames = []
    with mcp_min.Client(server, trace=lambda direction, raw: frames.append(raw)) as client:
        client.send_frame(b"not json\n")                    # one mistake by the client
        time.sleep(0.3)
        seen = len(frames)
    assert seen < 10, f"{seen} frames in 0.3 s after one bad line"


# ============================================================================================
# Duplicate ids (B4)
# ============================================================================================

def test_B4_duplicate_id_while_running_is_rejected_and_first_answered_once(wire):
    wire.send(compact(call(7, "block", {"ms": 300})))
    wire.send(compact(ping(7)))                               # same id, first still running
    second = wire.recv()
    assert_error(second, -32600, 7)
    first = wire.recv()
    assert first["id"] == 7 and "result" in first, first
    assert first["result"]["content"][0]["text"] == "woke"
    wire.expect_silence(0.2)                                  # answered exactly once


def test_B4_duplicate_id_of_two_slow_calls(wire):
    wire.send(compact(call("dup", "echo", {"text": "x"})))
    wire.send(compact(call("dup2", "block", {"ms": 200})))
    wire.send(compact(call("dup2", "echo", {"text": "second"})))
    replies = [wire.recv() for _ in range(3)]
    dup2 = [r for r in replies if r["id"] == "dup2"]
    assert len(dup2) == 2
    assert sum("error" in r and r["error"]["code"] == -32600 for r in dup2) == 1, dup2
    assert any(r.get("result", {}).get("content", [{}])[0].get("text") == "woke" for r in dup2), dup2
    wire.expect_silence(0.2)


# ============================================================================================
# Batches (B10, B11, L8, G10)
# ============================================================================================

@pytest.fixture
def wire_2025_03(spawn):
    wire = spawn("everything.py")
    result = wire.initialize("2025-03-26")
    assert result["protocolVersion"] == "2025-03-26"
    return wire


def test_B10_batch_of_requests_and_notifications_gets_one_array(wire_2025_03):
    wire = wire_2025_03
    wire.send(compact([ping(1), {"jsonrpc": "2.0", "method": "notifications/whatever"},
                       call("b", "add", {"a": 2, "b": 3}), ping("c"),
                       {"jsonrpc": "2.0", "method": "notifications/initialized"}]))
    reply = wire.recv()
    assert isinstance(reply, list), reply
    by_id = {r["id"]: r for r in reply}
    assert len(reply) == 3 and set(by_id) == {1, "b", "c"}, reply
    assert by_id[1]["result"] == {} and by_id["c"]["result"] == {}
    assert by_id["b"]["result"]["content"][0]["text"] == "5"
    assert_still_serving(wire)


def test_B10_batch_waits_for_slow_members(wire_2025_03):
    wire = wire_2025_03
    wire.send(compact([call(1, "block", {"ms": 200}), ping(2)]))
    reply = wire.recv()
    assert isinstance(reply, list) and sorted(r["id"] for r in reply) == [1, 2], reply
    assert_still_serving(wire)


def test_B10_batch_members_run_side_by_side(wire_2025_03):
    """None runs on the reader while the others wait: four 600 ms calls take about 600 ms,
    not 1.2 s (the first, then the rest) or 2.4 s."""
    wire = wire_2025_03
    start = time.monotonic()
    wire.send(compact([call(i, "block", {"ms": 600}) for i in range(4)] + [ping("p")]))
    reply = wire.recv()
    assert sorted(map(str, (r["id"] for r in reply))) == ["0", "1", "2", "3", "p"], reply
    assert time.monotonic() - start < 1.0


def test_B10_a_batch_read_just_before_the_end_of_input_is_answered(wire_2025_03):
    """Its calls are in flight when the input ends: the grace period waits for them, and the
    batch's reply is written before the server exits."""
    wire = wire_2025_03
    noise = [{"jsonrpc": "2.0", "method": "notifications/whatever"}] * 20000
    wire.send(compact([call(1, "block", {"ms": 300})] + noise + [call(2, "add", {"a": 1, "b": 2})]))
    wire.close_stdin()
    reply = wire.recv()
    assert sorted(r["id"] for r in reply) == [1, 2], reply
    assert wire.wait() == 0


def test_B10_empty_batch_is_a_single_32600(wire_2025_03):
    wire_2025_03.send(b"[]\n")
    reply = wire_2025_03.recv()
    assert isinstance(reply, dict), "an empty batch gets one error object, not an array"
    assert_error(reply, -32600)
    assert_still_serving(wire_2025_03)


def test_B10_batch_of_notifications_gets_no_reply(wire_2025_03):
    wire_2025_03.send(compact([{"jsonrpc": "2.0", "method": "notifications/a"},
                               {"jsonrpc": "2.0", "method": "notifications/b", "params": {}},
                               {"jsonrpc": "2.0", "method": "notifications/c", "params": [1]}]))
    assert_still_serving(wire_2025_03)


def test_B10_batch_of_responses_gets_no_reply(wire_2025_03):
    wire_2025_03.send(compact([{"jsonrpc": "2.0", "id": 555, "result": {}}]))
    assert_still_serving(wire_2025_03)


def test_B10_L8_initialize_inside_a_batch_is_an_error_element(wire_2025_03):
    wire_2025_03.send(compact([ping(1), {"jsonrpc": "2.0", "id": 2, "method": "initialize",
                                         "params": INIT_PARAMS}]))
    reply = wire_2025_03.recv()
    assert isinstance(reply, list) and len(reply) == 2, reply
    by_id = {r["id"]: r for r in reply}
    assert by_id[1]["result"] == {}
    assert "error" in by_id[2], by_id[2]


def test_B10_invalid_members_get_error_elements(wire_2025_03):
    wire_2025_03.send(compact([1, ping(2), {"jsonrpc": "2.0", "id": 3, "method": 4}]))
    reply = wire_2025_03.recv()
    assert isinstance(reply, list) and len(reply) == 3, reply
    assert reply.count({"jsonrpc": "2.0", "id": 2, "result": {}}) == 1
    errors = [r for r in reply if "error" in r]
    assert len(errors) == 2 and all(e["error"]["code"] == -32600 for e in errors)
    assert sorted(json.dumps(e.get("id")) for e in errors) == ["3", "null"]   # null: omitted


def test_B10_batch_reply_is_one_line(wire_2025_03):
    wire_2025_03.send(compact([call(i, "echo", {"text": "line\nbreak"}) for i in range(20)]))
    raw = wire_2025_03.recv_raw()
    reply = json.loads(raw)
    assert isinstance(reply, list) and sorted(r["id"] for r in reply) == list(range(20))


@pytest.mark.parametrize("version", [None, "2024-11-05", "2025-06-18", "2025-11-25"])
def test_B11_batch_outside_2025_03_26_is_a_single_32600(spawn, version):
    wire = spawn("everything.py")
    if version:
        assert wire.initialize(version)["protocolVersion"] == version
    wire.send(compact([ping(1), ping(2)]))
    reply = wire.recv()
    assert isinstance(reply, dict), reply
    assert_error(reply, -32600)
    assert_still_serving(wire)                        # the members were not answered either


# ============================================================================================
# Line size cap (pain point 14): EVERYTHING_MAX_LINE=1000
# ============================================================================================

@pytest.fixture
def capped(spawn):
    wire = spawn("everything.py", env={"EVERYTHING_MAX_LINE": "1000"})
    wire.initialize()
    return wire


def padded_ping(request_id, size, suffix=b"\n"):
    """A ping exactly ``size`` bytes long (before ``suffix``), padded with JSON whitespace."""
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"method":"ping"'
    line = head + b" " * (size - len(head) - 1) + b"}"
    assert len(line) == size
    return line + suffix


def test_too_long_line_with_leading_id_gets_error_with_that_id(capped):
    capped.send(compact({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                         "params": {"name": "echo", "arguments": {"text": "x" * 5000}}}))
    reply = assert_error(capped.recv(), -32600, 42)
    assert "1000" in reply["error"]["message"]         # says what the limit is
    assert_still_serving(capped)


def test_too_long_line_with_leading_id_python_default_spacing(capped):
    message = {"jsonrpc": "2.0", "id": "lead", "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": "x" * 5000}}}
    capped.send((json.dumps(message) + "\n").encode())
    assert_error(capped.recv(), -32600, "lead")
    assert_still_serving(capped)


def test_too_long_line_with_trailing_id_gets_error_with_that_id(capped):
    capped.send(b'{"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
                + b"y" * 5000 + b'"}},"jsonrpc":"2.0","id":"tail-7"}\n')
    assert_error(capped.recv(), -32600, "tail-7")
    assert_still_serving(capped)


def test_too_long_line_with_trailing_id_and_crlf(capped):
    capped.send(b'{"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
                + b"y" * 5000 + b'"}},"jsonrpc":"2.0","id":8}\r\n')
    assert_error(capped.recv(), -32600, 8)
    assert_still_serving(capped)


def test_too_long_line_without_recoverable_id_gets_error_without_id(capped):
    capped.send(b'{"method":"tools/call","id":9,"params":{"name":"echo","arguments":{"text":"'
                + b"z" * 5000 + b'"}},"jsonrpc":"2.0"}\n')
    assert_error(capped.recv(), -32600)
    assert_still_serving(capped)


def test_too_long_garbage_line_gets_error_and_next_line_is_served(capped):
    capped.send(b"\x00\xff" * 3000 + b"\n" + compact(ping("next")))
    assert_error(capped.recv(), -32600)
    assert capped.recv() == {"jsonrpc": "2.0", "id": "next", "result": {}}


def test_too_long_final_line_without_newline_at_eof(capped):
    capped.send(b'{"jsonrpc":"2.0","id":10,"method":"ping","params":{"p":"' + b"q" * 3000 + b'"}}')
    capped.close_stdin()
    assert_error(capped.recv(), -32600, 10)
    assert capped.wait(10) == 0


def test_line_of_exactly_the_limit_is_accepted_and_one_more_byte_is_not(capped):
    capped.send(padded_ping("exact", 1000))
    assert capped.recv() == {"jsonrpc": "2.0", "id": "exact", "result": {}}
    capped.send(padded_ping("over", 1001))
    assert_error(capped.recv(), -32600, "over")
    assert_still_serving(capped)


def test_line_of_exactly_the_limit_is_accepted_with_crlf(capped):
    capped.send(padded_ping("crlf", 1000, b"\r\n"))
    assert capped.recv() == {"jsonrpc": "2.0", "id": "crlf", "result": {}}


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc (Linux)")
def test_too_long_line_is_not_held_in_memory(spawn):
    """50 MiB over a 1 MiB cap: the server reads past it in pieces; its peak resident
    memory (VmHWM) stays far below the line's size."""
    wire = spawn("everything.py", env={"EVERYTHING_MAX_LINE": str(1 << 20)})
    wire.initialize()
    chunk = b"x" * (1 << 20)
    wire.send(b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"echo",'
              b'"arguments":{"text":"')
    for _ in range(50):
        wire.send(chunk)
    wire.send(b'"}}}\n')
    assert_error(wire.recv(timeout=30), -32600, "huge")
    assert_still_serving(wire)
    with open(f"/proc/{wire.proc.pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    peak_kib = int(status["VmHWM"].split()[0])
    assert peak_kib < 40 * 1024, f"peak RSS {peak_kib} KiB for a 50 MiB line over a 1 MiB cap"


def test_big_line_under_the_default_cap_is_served(wire):
    """Far above asyncio's 64 KiB default (pain point 14)."""
    text = "w" * (3 << 20)
    wire.send(compact(call("big-in", "echo", {"text": text})))
    reply = wire.recv(timeout=30)
    assert reply["id"] == "big-in" and reply["result"]["content"][0]["text"] == text
