"""What a client sees of tool results and of tool/resource/prompt metadata, over a real stdio
subprocess (tests/servers/results.py).

Spec: §11 (content blocks, annotations, Tool/Resource/Prompt fields and the revision each
appeared in), §12 R1-R10 (bad arguments and tool failures are isError results, outputSchema and
structuredContent, the JSON text block, nothing a version lacks), §14 J1/J3 (outputSchemas are
2020-12 documents).  Schema inference and the validator's messages in isolation are covered in
test_schema.py / test_validation.py; here we check what reaches the wire."""

import base64
import importlib.util
import json
import sys
import time
import typing

import jsonschema
import pytest

import mcp_min
from conftest import ROOT, SERVERS, Wire
from mcp_min import Client, JSONRPCError, ResourceNotFound, Server

LATEST = mcp_min.LATEST_PROTOCOL_VERSION
VERSIONS = mcp_min.PROTOCOL_VERSIONS

# The server module itself, for its sample bytes and metadata constants (it does not run here).
_spec = importlib.util.spec_from_file_location("results_server", SERVERS / "results.py")
S = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(S)
MEDIA = S.MEDIA


def b64(data):
    return base64.b64encode(data).decode()


# ============================================================================================
# Fixtures and helpers
# ============================================================================================

@pytest.fixture(scope="module")
def servers():
    """servers(version) -> one results.py server per protocol version, initialized at it."""
    started = {}

    def get(version=LATEST):
        if version not in started:
            wire = Wire([sys.executable, str(SERVERS / "results.py")])
            assert wire.initialize(version)["protocolVersion"] == version
            started[version] = wire
        return started[version]
    yield get
    for wire in started.values():
        wire.close()


@pytest.fixture
def srv(servers):
    return servers(LATEST)


def call(wire, name, arguments=None):
    result = wire.result("tools/call", {"name": name, "arguments": arguments or {}})
    assert isinstance(result.get("content"), list), result          # R1
    return result


def error_text(result):
    """The one text block of an isError result."""
    assert result["isError"] is True, result
    assert "structuredContent" not in result, result
    [block] = result["content"]
    assert block["type"] == "text" and set(block) == {"type", "text"}, block
    return block["text"]


def ok_text(result):
    assert result["isError"] is False, result
    [block] = result["content"]
    assert block["type"] == "text", block
    return block["text"]


def listing(wire, method, key):
    return wire.result(method, {})[key]


def tool_entry(wire, name):
    return next(t for t in listing(wire, "tools/list", "tools") if t["name"] == name)


def stderr_after(wire, start, needle, timeout=3.0):
    """stderr written since offset `start`, once it contains `needle` (stderr is pumped by a thread)."""
    deadline = time.monotonic() + timeout
    while True:
        tail = wire.stderr[start:]
        if needle in tail or time.monotonic() > deadline:
            return tail
        time.sleep(0.01)


GOOD_PARTY = {"budget": 100, "occasion": "birthday", "guests": [{"name": "Ada", "age": 36}],
              "venue": {"city": "Oslo", "capacity": 10}}


# ============================================================================================
# Bad arguments -> an isError result listing every problem with its path (R2, R4, R9, SEP-1303)
# ============================================================================================

def test_every_problem_is_listed_at_once_with_its_path(srv):
    arguments = {"budget": "a hundred bucks", "occasion": "funeral",
                 "guests": [{"name": "Ada", "age": 36}, {"name": 5, "age": "x"}, {"nme": "Bob"}],
                 "venue": {"city": "Oslo"}, "colour": "red"}
    assert error_text(call(srv, "plan_party", arguments)) == "\n".join([
        "Invalid arguments for tool 'plan_party':",
        '- budget: expected number, got string "a hundred bucks"',
        '- occasion: must be one of "birthday", "wedding", got "funeral"',
        "- guests[1].name: expected string, got integer 5",
        '- guests[1].age: expected integer, got string "x"',
        "- guests[2]: missing required property 'name'",
        "- guests[2]: missing required property 'age'",
        "- guests[2]: unexpected property 'nme'",
        "- venue: missing required property 'capacity'",
        "- Unexpected property 'colour'",
    ])


@pytest.mark.parametrize("arguments, problems", [
    pytest.param({}, ["Missing required property 'budget'", "Missing required property 'occasion'",
                      "Missing required property 'guests'", "Missing required property 'venue'"],
                 id="missing-all"),
    pytest.param(dict(GOOD_PARTY, budget="a hundred bucks"),
                 ['budget: expected number, got string "a hundred bucks"'], id="wrong-type"),
    pytest.param(dict(GOOD_PARTY, budget=True), ["budget: expected number, got boolean true"],
                 id="bool-is-not-a-number"),
    pytest.param(dict(GOOD_PARTY, guests=[{"name": "Ada", "age": 36}, {"name": "Bob", "age": 1.5}]),
                 ["guests[1].age: expected integer, got number 1.5"], id="nested-path"),
    pytest.param(dict(GOOD_PARTY, colour="red"), ["Unexpected property 'colour'"], id="unknown-property"),
    pytest.param(dict(GOOD_PARTY, occasion="funeral"),
                 ['occasion: must be one of "birthday", "wedding", got "funeral"'], id="enum-miss"),
    pytest.param(dict(GOOD_PARTY, venue={"city": "Oslo", "capacity": 0}),
                 ["venue: capacity must be positive"], id="conversion-refused-by-post-init"),
    pytest.param(dict(GOOD_PARTY, guests='{"name": "Ada"}'),
                 ['guests: expected array, got string "{\\"name\\": \\"Ada\\"}"'],
                 id="json-text-of-the-wrong-type-stays-a-string"),
])
def test_invalid_arguments_message(srv, arguments, problems):
    expected = "Invalid arguments for tool 'plan_party':\n" + "\n".join(f"- {p}" for p in problems)
    assert error_text(call(srv, "plan_party", arguments)) == expected


@pytest.mark.parametrize("value, expected", [
    (True, "- n: expected integer, got boolean true"),          # true is never an integer
    (1.5, "- n: expected integer, got number 1.5"),
    ("1", '- n: expected integer, got string "1"'),               # scalars are not parsed from text
    (None, "- n: expected integer, got null"),
])
def test_integer_rejections(srv, value, expected):
    assert error_text(call(srv, "count_to", {"n": value})) == \
        f"Invalid arguments for tool 'count_to':\n{expected}"


def test_integral_float_is_an_integer_and_the_tool_receives_an_int(srv):
    assert ok_text(call(srv, "count_to", {"n": 1.0})) == "int 1"
    assert ok_text(call(srv, "count_to", {"n": 7})) == "int 7"


def test_an_integer_is_accepted_for_a_number(srv):
    assert ok_text(call(srv, "scale", {"x": 3})) in ("int 3", "float 3.0")
    assert ok_text(call(srv, "scale", {"x": 2.5})) == "float 2.5"


def test_object_and_array_arguments_sent_as_json_text_are_parsed(srv):
    """Claude Desktop sends objects and arrays as strings holding their JSON."""
    result = call(srv, "take_json", {"items": "[1, 2]", "options": '{"verbose": true}', "maybe": '["a"]'})
    assert ok_text(result) == "items=list[1, 2] options=dict{'verbose': True} maybe=['a']"
    party = dict(GOOD_PARTY, guests=json.dumps(GOOD_PARTY["guests"]), venue=json.dumps(GOOD_PARTY["venue"]))
    assert ok_text(call(srv, "plan_party", party)) == "birthday for 1 in Oslo at 100.0"


def test_parsed_json_text_is_then_validated_like_any_value(srv):
    result = call(srv, "take_json", {"items": '{"a": 1}', "options": '{"verbose": 1}'})
    assert error_text(result) == "\n".join([
        "Invalid arguments for tool 'take_json':",
        '- items: expected array, got string "{\\"a\\": 1}"',
        "- options.verbose: expected boolean, got integer 1"])
    result = call(srv, "take_json", {"items": "not json", "options": "[1]"})
    assert error_text(result) == "\n".join([
        "Invalid arguments for tool 'take_json':",
        '- items: expected array, got string "not json"',
        '- options: expected object, got string "[1]"'])


def test_a_str_parameter_keeps_json_looking_text(srv):
    assert ok_text(call(srv, "keep_text", {"raw": '{"a": 1}'})) == 'str {"a": 1}'


def test_dates_are_parsed_and_bad_ones_explained(srv):
    assert ok_text(call(srv, "on_day", {"day": "2025-02-03"})) == "date 2025-02-03"
    assert error_text(call(srv, "on_day", {"day": "2025-02-30"})) == \
        "Invalid arguments for tool 'on_day':\n- day: expected an ISO 8601 date string, got \"2025-02-30\""


@pytest.mark.parametrize("version", VERSIONS)
def test_invalid_arguments_are_an_iserror_result_in_every_version(servers, version):
    """R2/R4: a result the model can read and correct, never a JSON-RPC error."""
    response = servers(version).request("tools/call", {"name": "count_to", "arguments": {"n": "x"}})
    assert "error" not in response, response
    assert error_text(response["result"]) == \
        "Invalid arguments for tool 'count_to':\n- n: expected integer, got string \"x\""


LEAK_MARKERS = ("Traceback", 'File "', ".py", "mcp_min", "Signature", "<locals>", "__", "line ")


def test_no_traceback_file_path_or_internal_name_reaches_the_client(srv):
    """Whatever fails, the client sees a message, never our insides (the traceback goes to stderr)."""
    start = len(srv.stderr)
    results = [
        call(srv, "plan_party", {"budget": "x", "occasion": 1, "guests": [{"age": True}], "venue": "{",
                                 "extra": None}),
        call(srv, "plan_party", dict(GOOD_PARTY, venue={"city": "Oslo", "capacity": -1})),
        call(srv, "count_to", {"n": True}),
        call(srv, "take_json", {"items": "[1, ", "options": "{}"}),
        call(srv, "on_day", {"day": "yesterday"}),
        call(srv, "bad_int"), call(srv, "bad_typeddict"), call(srv, "declared_bad"),
        *(call(srv, "explode", {"kind": kind}) for kind in
          ("tool", "value", "key", "custom", "zero", "unserializable", "no-mime")),
    ]
    for result in results:
        text = error_text(result)
        for marker in LEAK_MARKERS:
            assert marker not in text, (marker, text)
    # ... while the operator still gets the traceback of the unexpected ones
    logged = stderr_after(srv, start, "ZeroDivisionError")
    assert "Traceback" in logged and "ZeroDivisionError: division by zero" in logged, logged


# ============================================================================================
# Tool exceptions (R2)
# ============================================================================================

@pytest.mark.parametrize("kind, message", [
    ("tool", "The budget must be more than $0."),               # ToolError: verbatim
    ("tool-multiline", "Two problems:\n- one\n- two"),
    ("value", "ValueError: bad value 42"),                      # others: "TypeName: message"
    ("key", "KeyError: 'missing'"),
    ("custom", "QuotaExceeded: daily quota of 100 calls used up"),
    ("zero", "ZeroDivisionError: division by zero"),
    ("unserializable", "TypeError: result.when: a value of type object has no JSON form; "
                       "convert it to a str, number, bool, list, dict or dataclass"),
])
def test_exceptions_become_iserror_results(srv, kind, message):
    assert error_text(call(srv, "explode", {"kind": kind})) == message


def test_unexpected_exception_is_logged_with_its_traceback(srv):
    start = len(srv.stderr)
    call(srv, "explode", {"kind": "custom"})
    logged = stderr_after(srv, start, "QuotaExceeded: daily quota")
    assert "tool 'explode' failed" in logged and "Traceback" in logged, logged


# ============================================================================================
# outputSchema per return annotation (R5, R7, J1, J3)
# ============================================================================================

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
POINT = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
         "required": ["x"], "additionalProperties": False}


def wrapped(schema, defs=None):
    out = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    return {**out, "$defs": defs} if defs else out


OUTPUT_SCHEMAS = [
    ("out_typeddict", PERSON),                                  # objects as they are
    ("out_dataclass", POINT),
    ("out_mapping", {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("out_list", wrapped({"type": "array", "items": {"$ref": "#/$defs/Person"}}, {"Person": PERSON})),
    ("out_int", wrapped({"type": "integer"})),                  # the rest wrapped as {"result": ...}
    ("out_optional", wrapped({"anyOf": [{"type": "integer"}, {"type": "null"}]})),
    ("declared_ok", S.DECLARED),                                # hand-written: as given
    ("out_str", None),                                          # str is a text block
    ("out_content", None),                                      # content annotations
    ("out_content_list", None),
    ("out_tool_result", None),
    ("out_unstructured", None),                                 # structured=False
    ("out_unannotated_dict", None),                             # no annotation
    ("out_none", None),                                         # -> None
]


@pytest.mark.parametrize("name, schema", OUTPUT_SCHEMAS, ids=[c[0] for c in OUTPUT_SCHEMAS])
def test_output_schema_on_tools_list(srv, name, schema):
    entry = tool_entry(srv, name)
    if schema is None:
        assert "outputSchema" not in entry, entry
    else:
        assert entry["outputSchema"] == schema
        jsonschema.Draft202012Validator.check_schema(entry["outputSchema"])
        assert entry["outputSchema"]["type"] == "object"        # R7 (2025-06-18 / 2025-11-25)


# ============================================================================================
# structuredContent and its text block (R5, R6, R7)
# ============================================================================================

STRUCTURED = [  # tool, arguments, structuredContent
    ("out_typeddict", {}, {"name": "Ada", "age": 36}),
    ("out_dataclass", {}, {"x": 3, "y": 4}),
    ("out_mapping", {}, {"a": 1, "b": 2}),
    ("out_list", {}, {"result": [{"name": "Ada", "age": 36}, {"name": "Bob", "age": 7}]}),
    ("out_int", {}, {"result": 42}),
    ("out_optional", {}, {"result": 7}),
    ("out_optional", {"empty": True}, {"result": None}),
    ("out_unicode", {}, {"greeting": "héllo wörld ✓"}),
    ("declared_ok", {}, {"n": 5}),
    ("out_unannotated_dict", {}, {"k": [1, 2]}),                # no schema, still an object
]


@pytest.mark.parametrize("name, arguments, structured", STRUCTURED,
                         ids=[f"{c[0]}{'-' if c[1] else ''}{''.join(c[1])}" for c in STRUCTURED])
def test_structured_content_and_its_json_text_block(srv, name, arguments, structured):
    result = call(srv, name, arguments)
    assert result["isError"] is False
    assert result["structuredContent"] == structured
    schema = tool_entry(srv, name).get("outputSchema")
    is_wrapped = schema is not None and schema.get("required") == ["result"]
    [block] = result["content"]                                 # R6: the JSON as a text block
    assert block["type"] == "text"
    assert json.loads(block["text"]) == (structured["result"] if is_wrapped else structured)
    if schema is not None:                                      # R5, checked independently
        jsonschema.validate(result["structuredContent"], schema, cls=jsonschema.Draft202012Validator)


def test_text_block_keeps_non_ascii_as_is(srv):
    assert ok_text(call(srv, "out_unicode")) == '{"greeting": "héllo wörld ✓"}'


@pytest.mark.parametrize("name, content", [
    ("out_str", [{"type": "text", "text": "just text"}]),
    ("out_str_json_looking", [{"type": "text", "text": '{"a": 1}'}]),
    ("out_none", []),
    ("out_unannotated_list", [{"type": "text", "text": '[1, "two"]'}]),   # R7: only objects
])
def test_results_without_structured_content(srv, name, content):
    result = call(srv, name)
    assert result == {"content": content, "isError": False}


def test_structured_false_still_answers_with_the_json_text(srv):
    result = call(srv, "out_unstructured")
    assert result["isError"] is False
    assert json.loads(ok_text(result)) == {"name": "Ada", "age": 36}


# ============================================================================================
# Output that does not match the outputSchema: a server-side bug (R5)
# ============================================================================================

@pytest.mark.parametrize("name, problem", [
    ("bad_int", 'result: expected integer, got string "x"'),
    ("bad_bool_for_int", "result: expected integer, got boolean true"),
    ("bad_typeddict", "Missing required property 'age'"),
    ("bad_list", 'result[1]: expected integer, got string "two"'),
    ("declared_bad", 'n: expected integer, got string "five"'),
])
def test_output_not_matching_the_schema_is_an_error_and_a_log_line(srv, name, problem):
    start = len(srv.stderr)
    assert error_text(call(srv, name)) == \
        f"Tool '{name}' produced output that does not match its output schema:\n- {problem}"
    logged = stderr_after(srv, start, problem)
    assert f"tool '{name}'" in logged and problem in logged, logged
    assert "Traceback" not in logged                            # a known condition, not a crash


def test_tool_result_structured_is_checked_against_the_declared_output_schema(srv):
    text = error_text(call(srv, "declared_tool_result_bad"))
    assert 'n: expected integer, got string "five"' in text


@pytest.mark.parametrize("name", ["declared_tool_result_unstructured", "declared_content_only"])
def test_a_tool_with_an_output_schema_must_return_structured_content(srv, name):
    """R5: with an outputSchema, structured results are a MUST; content alone is the mismatch."""
    assert "no structured content" in error_text(call(srv, name))


def test_tool_result_structured_dataclass_is_converted(srv):
    response = srv.request("tools/call", {"name": "tool_result_dataclass", "arguments": {}})
    assert "result" in response, response
    assert response["result"]["structuredContent"] == {"x": 1, "y": 2}


# ============================================================================================
# Content helpers, exactly as they appear on the wire (§11.1)
# ============================================================================================

@pytest.mark.parametrize("kind, mime", [
    ("png", "image/png"), ("jpeg", "image/jpeg"), ("gif87", "image/gif"), ("gif89", "image/gif"),
    ("webp", "image/webp"),
])
def test_image_from_bytes_detects_the_type(srv, kind, mime):
    assert call(srv, "img", {"kind": kind}) == {
        "content": [{"type": "image", "data": b64(MEDIA[kind]), "mimeType": mime}], "isError": False}


@pytest.mark.parametrize("kind, mime", [
    ("wav", "audio/wav"), ("mp3-id3", "audio/mpeg"), ("mp3-frame", "audio/mpeg"), ("ogg", "audio/ogg"),
    ("flac", "audio/flac"),
])
def test_audio_from_bytes_detects_the_type(srv, kind, mime):
    assert call(srv, "snd", {"kind": kind}) == {
        "content": [{"type": "audio", "data": b64(MEDIA[kind]), "mimeType": mime}], "isError": False}


@pytest.mark.parametrize("filename, kind, mime", [
    ("photo.bin", "png", "image/png"),          # the bytes decide, whatever the name says
    ("photo.png", "jpeg", "image/jpeg"),
    ("anim", "gif89", "image/gif"),
    ("pic.dat", "webp", "image/webp"),
])
def test_image_from_a_file_detects_the_type_from_its_bytes(srv, tmp_path, filename, kind, mime):
    path = tmp_path / filename
    path.write_bytes(MEDIA[kind])
    assert call(srv, "img_file", {"path": str(path)})["content"] == [
        {"type": "image", "data": b64(MEDIA[kind]), "mimeType": mime}]


@pytest.mark.parametrize("tool, filename, mime", [
    ("img_file", "drawing.svg", "image/svg+xml"),  # no magic bytes: the extension decides
    ("img_file", "photo.png", "image/png"),
    ("snd_file", "song.mp3", "audio/mpeg"),
])
def test_media_from_a_file_without_magic_uses_the_extension(srv, tmp_path, tool, filename, mime):
    path = tmp_path / filename
    path.write_bytes(b"<svg/>")
    [block] = call(srv, tool, {"path": str(path)})["content"]
    assert block == {"type": "image" if tool == "img_file" else "audio", "data": b64(b"<svg/>"),
                     "mimeType": mime}


@pytest.mark.parametrize("filename, kind, mime", [
    ("a.bin", "ogg", "audio/ogg"), ("b.bin", "wav", "audio/wav"), ("c.bin", "mp3-id3", "audio/mpeg")])
def test_audio_from_a_file_detects_the_type_from_its_bytes(srv, tmp_path, filename, kind, mime):
    path = tmp_path / filename
    path.write_bytes(MEDIA[kind])
    assert call(srv, "snd_file", {"path": str(path)})["content"] == [
        {"type": "audio", "data": b64(MEDIA[kind]), "mimeType": mime}]


def test_image_from_a_file_with_a_non_image_extension_is_refused(srv, tmp_path):
    path = tmp_path / "scan.xyz"
    path.write_bytes(b"nothing recognisable")
    assert error_text(call(srv, "img_file", {"path": str(path)})) == \
        "ValueError: image(): cannot tell the MIME type; pass mime_type="


def test_image_from_base64_text_is_kept_and_sniffed(srv):
    data = b64(MEDIA["png"] + bytes(60))
    assert call(srv, "img_b64", {"data": data})["content"] == [
        {"type": "image", "data": data, "mimeType": "image/png"}]


def test_explicit_mime_type_wins_and_unknown_bytes_without_one_are_an_error(srv):
    assert call(srv, "img_explicit")["content"] == [
        {"type": "image", "data": b64(MEDIA["unknown"]), "mimeType": "image/x-custom"}]
    assert error_text(call(srv, "img", {"kind": "unknown"})) == \
        "ValueError: image(): cannot tell the MIME type; pass mime_type="


def test_text_with_annotations_and_meta(srv):
    assert call(srv, "annotated_text")["content"] == [
        {"type": "text", "text": "hello", "annotations": S.ANNOTATIONS, "_meta": {"example.com/trace": "t-1"}}]


def test_resource_link_with_every_field(srv):
    assert call(srv, "link")["content"] == [{
        "type": "resource_link", "uri": "test://data/config.json", "name": "config", "title": "Config file",
        "description": "The configuration", "mimeType": "application/json", "size": 123,
        "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png"}],
        "annotations": {"audience": ["assistant"]}, "_meta": {"example.com/k": 1}}]


def test_resource_link_name_defaults_to_the_uri(srv):
    assert call(srv, "link_minimal")["content"] == [
        {"type": "resource_link", "uri": "test://data/notes.txt", "name": "test://data/notes.txt"}]


@pytest.mark.parametrize("tool, block", [
    ("embedded_text", {"type": "resource", "resource": {
        "uri": "test://data/notes.txt", "mimeType": "text/plain", "text": "remember the milk"}}),
    ("embedded_typed", {"type": "resource", "resource": {
        "uri": "test://x/page", "mimeType": "text/markdown", "text": "# Title"},
        "annotations": {"priority": 1}, "_meta": {"example.com/k": "v"}}),
    ("embedded_blob", {"type": "resource", "resource": {
        "uri": "test://img/logo.png", "mimeType": "image/png", "blob": b64(MEDIA["png"])}}),
    ("embedded_blob_default", {"type": "resource", "resource": {
        "uri": "test://bin/data", "mimeType": "application/octet-stream", "blob": "AAEC"}}),
])
def test_embedded_resources(srv, tool, block):
    assert call(srv, tool)["content"] == [block]


def test_a_list_of_blocks_passes_through_in_order(srv):
    assert call(srv, "blocks") == {"content": [
        {"type": "text", "text": "first"},
        {"type": "image", "data": b64(MEDIA["png"]), "mimeType": "image/png"},
        {"type": "audio", "data": b64(MEDIA["wav"]), "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "test://data/notes.txt", "name": "notes"},
        {"type": "resource", "resource": {"uri": "test://data/notes.txt", "mimeType": "text/plain",
                                          "text": "milk"}},
    ], "isError": False}


def test_tool_result_mixes_strings_blocks_structured_data_and_meta(srv):
    assert call(srv, "mixed") == {
        "content": [{"type": "text", "text": "plain string"}, {"type": "text", "text": "a block"},
                    {"type": "image", "data": b64(MEDIA["gif89"]), "mimeType": "image/gif"}],
        "structuredContent": {"total": 3}, "_meta": {"example.com/took_ms": 5}, "isError": False}


def test_tool_result_is_error(srv):
    assert call(srv, "mixed_error") == {
        "content": [{"type": "text", "text": "it went wrong, gently"}], "isError": True}


def test_content_returning_tools(srv):
    assert call(srv, "out_content") == {"content": [{"type": "text", "text": "a block"}], "isError": False}
    assert call(srv, "out_content_list") == {
        "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}], "isError": False}
    assert call(srv, "out_tool_result") == {
        "content": [{"type": "text", "text": "via ToolResult"}], "isError": False}


# ============================================================================================
# Tool metadata on tools/list (§11.2)
# ============================================================================================

def test_tool_metadata(srv):
    entry = tool_entry(srv, "files.delete-v2_final")
    assert {k: v for k, v in entry.items() if k != "inputSchema"} == {
        "name": "files.delete-v2_final", "title": "Delete file",
        "description": "Delete one file.",                      # description= beats the docstring
        "annotations": S.TOOL_ANNOTATIONS, "icons": S.ICONS, "_meta": {"example.com/owner": "fs-team"}}
    assert entry["inputSchema"]["required"] == ["path"]


def test_tool_without_metadata_has_only_what_it_has(srv):
    entry = tool_entry(srv, "plain")
    assert entry == {"name": "plain", "description": "A tool with no metadata at all.", "inputSchema": {
        "type": "object", "properties": {"a": {"type": "integer", "description": "a number"}},
        "required": ["a"], "additionalProperties": False}}


def noop() -> str:
    return ""


@pytest.mark.parametrize("name", [
    "has space", "a,b", "x" * 129, "héllo", "名前", "a/b", "a:b", "tab\tname", "new\nline", "emoji🙂"])
def test_invalid_tool_names_are_refused_at_registration(name):
    server = mcp_min.Server("names")
    with pytest.raises(ValueError) as caught:
        server.tool(noop, name=name)
    message = str(caught.value)
    assert repr(name) in message                                # names the tool
    assert "128" in message and "A-Z a-z 0-9 _ - ." in message   # and the rule
    assert name not in server.tools


@pytest.mark.parametrize("schema", [{"properties": {"a": {"type": "string"}}}, {"type": "array"},
                                    {"type": ["object", "null"]}])
def test_an_input_schema_whose_root_is_not_an_object_is_refused_at_registration(schema):
    """Every revision's Tool.inputSchema has "type": "object" at its root; an entry without
    it made the TypeScript SDK refuse the whole tools/list."""
    server = mcp_min.Server("schemas")
    with pytest.raises(ValueError, match="'noop': the input schema's root must have"):
        server.tool(noop, input_schema=schema)
    assert not server.tools


def test_a_function_named_lambda_is_refused():
    server = mcp_min.Server("names")
    with pytest.raises(ValueError, match="'<lambda>'"):
        server.tool(lambda: "x")


def test_a_function_with_an_empty_name_is_refused():
    def unnamed():
        return ""
    unnamed.__name__ = ""
    with pytest.raises(ValueError, match="tool name ''"):
        mcp_min.Server("names").tool(unnamed)


def test_an_explicit_empty_name_is_refused():
    server = mcp_min.Server("names")
    with pytest.raises(ValueError, match="tool name ''"):
        server.tool(noop, name="")


def test_a_resource_decorator_without_its_uri_is_refused_with_the_fix():
    server = mcp_min.Server("names")
    with pytest.raises(TypeError, match="needs the URI first"):
        @server.resource
        def notes():
            return "x"


def first() -> str:
    return "first"


def second() -> str:
    return "second"


REGISTER = {"tool": lambda server, **kw: server.tool(name="same", **kw),
            "resource": lambda server, **kw: server.resource("test://same", **kw),
            "prompt": lambda server, **kw: server.prompt(name="same", **kw)}
SERVED = {"tool": lambda client: client.call_tool("same")["content"][0]["text"],
          "resource": lambda client: client.read_resource("test://same")["contents"][0]["text"],
          "prompt": lambda client: client.get_prompt("same")["messages"][0]["content"]["text"]}


@pytest.mark.parametrize("kind", ["tool", "resource", "prompt"])
def test_a_name_or_uri_registered_twice_is_refused_unless_replace_is_asked(kind):
    server = mcp_min.Server("twice")
    REGISTER[kind](server)(first)
    with pytest.raises(ValueError) as caught:
        REGISTER[kind](server)(second)
    taken = "test://same" if kind == "resource" else "same"
    assert f"{kind} {taken!r} is already registered: pass replace=True" in str(caught.value)
    with mcp_min.Client(server, timeout=5) as client:
        assert SERVED[kind](client) == "first"              # not silently overwritten
    REGISTER[kind](server, replace=True)(second)
    with mcp_min.Client(server, timeout=5) as client:
        assert SERVED[kind](client) == "second"


VARIABLES = "; variables are {name} (one path segment) or {+name}"     # the fix for a brace


@pytest.mark.parametrize("uri, problem", [
    ("file:///a/{x}/{x}", "variable 'x' appears twice"),
    ("test://{a}{b}", "'a' and 'b' are next to each other"),     # "hello" as hell/o? or h/ello?
    ("test://files/{+path}{ext}", "'path' and 'ext' are next to each other"),
    ("notes/{name}", "has no scheme: start it with one, as in 'file:///notes/{name}'"),
    ("file:///a/{x", "'{x' is not closed" + VARIABLES),
    ("file:///a/x}", "a '}' that closes no '{'" + VARIABLES),
    ("file:///a/{?q}", "'{?q}' is not a variable" + VARIABLES),
    ("file:///a/{1}", "'{1}' is not a variable" + VARIABLES),
])
def test_a_malformed_resource_uri_is_refused_naming_it_and_the_fix(uri, problem):
    server = mcp_min.Server("uris")
    with pytest.raises(ValueError) as caught:
        server.resource(uri)(noop)
    message = str(caught.value)
    assert message.startswith(f"resource {uri!r}") and problem in message
    assert server.resources == {}


def test_a_callable_without_a_name_needs_one():
    import functools
    server = mcp_min.Server("names")
    adder = functools.partial(lambda a, b: a + b, 1)
    with pytest.raises(TypeError, match="pass name="):
        server.tool(adder)
    server.tool(adder, name="add_one")
    assert list(server.tools) == ["add_one"]


@pytest.mark.parametrize("name", ["files.delete-v2_final", "a", "x" * 128, "Get_User.v1", "a-b.c_d", "0",
                                  "...", "UPPER"])
def test_valid_tool_names_pass(name):
    server = mcp_min.Server("names")
    server.tool(noop, name=name)
    assert list(server.tools) == [name]


# ============================================================================================
# Resources and templates (§11.3)
# ============================================================================================

def test_resource_entries(srv):
    resources = {r["uri"]: r for r in listing(srv, "resources/list", "resources")}
    assert resources["test://docs/readme"] == {
        "uri": "test://docs/readme", "name": "readme", "title": "Read me",
        "description": "The project's read-me.",                 # first paragraph of the docstring
        "size": 42, "annotations": {"audience": ["user"], "priority": 0.9}}
    assert resources["test://data/config.json"] == {
        "uri": "test://data/config.json", "name": "config", "mimeType": "application/json",
        "description": "Configuration as JSON."}
    assert resources["test://data/notes.txt"] == {
        "uri": "test://data/notes.txt", "name": "notes", "mimeType": "text/plain"}
    assert resources["test://img/logo.png"]["mimeType"] == "image/png"
    assert "mimeType" not in resources["test://data/blob"]     # nothing to go on before a read
    assert resources["test://data/page"] == {
        "uri": "test://data/page", "name": "page", "mimeType": "text/markdown",
        "description": "Explicit description"}
    assert resources["test://meta/full"] == {
        "uri": "test://meta/full", "name": "full", "title": "Full", "icons": S.ICONS,
        "_meta": {"example.com/k": "v"},
        "annotations": {"audience": ["assistant"], "lastModified": "2025-01-12T15:00:58Z"}}
    assert not any(r.get("uriTemplate") for r in resources.values())


@pytest.mark.parametrize("uri, contents", [
    ("test://docs/readme", {"mimeType": "text/plain", "text": "Read me first."}),        # str
    ("test://data/config.json", {"mimeType": "application/json",                         # extension
                                 "text": '{"debug": true, "level": 3}'}),
    ("test://data/notes.txt", {"mimeType": "text/plain", "text": "remember the milk"}),
    ("test://img/logo.png", {"mimeType": "image/png", "blob": b64(MEDIA["png"])}),
    ("test://data/blob", {"mimeType": "application/octet-stream", "blob": "AP8="}),        # bytes
    ("test://data/state", {"mimeType": "application/json", "text": '{"ok": true}'}),     # dict
    ("test://data/list", {"mimeType": "application/json", "text": "[1, 2]"}),            # list
    ("test://data/page", {"mimeType": "text/markdown", "text": "# Page"}),               # explicit
])
def test_resource_read_mime_type_from_extension_or_value(srv, uri, contents):
    assert srv.result("resources/read", {"uri": uri}) == {"contents": [{"uri": uri, **contents}]}


def test_a_resource_returning_a_non_resource_block_is_a_clear_error(srv):
    response = srv.request("resources/read", {"uri": "test://data/text-block"})
    assert response["error"]["code"] == -32603
    assert "'text' content block" in response["error"]["message"]
    assert "embedded_resource" in response["error"]["message"]


def test_resource_template_entries(srv):
    templates = {t["uriTemplate"]: t for t in listing(srv, "resources/templates/list", "resourceTemplates")}
    assert templates["test://users/{user_id}/profile"] == {
        "uriTemplate": "test://users/{user_id}/profile", "name": "profile", "title": "User profile",
        "description": "A user's profile."}
    assert templates["test://files/{+path}"] == {
        "uriTemplate": "test://files/{+path}", "name": "file_at", "mimeType": "text/plain",
        "description": "Any file under the root."}
    assert all("size" not in t and "uri" not in t for t in templates.values())


@pytest.mark.parametrize("uri, text", [
    ("test://users/ada/profile", '{"user_id": "ada"}'),
    ("test://users/a%20b%2Cc/profile", '{"user_id": "a b,c"}'),       # {var} is percent-decoded
    ("test://users/%C3%A9/profile", '{"user_id": "é"}'),
    ("test://files/readme", "path=readme"),
    ("test://files/dir/sub/x%20y.txt", "path=dir/sub/x%20y.txt"),     # {+path} spans slashes, raw
    ("test://items/5", "int 5"),                                      # converted to the annotation
])
def test_resource_template_reads(srv, uri, text):
    [contents] = srv.result("resources/read", {"uri": uri})["contents"]
    assert contents["uri"] == uri and contents["text"] == text


def test_a_simple_template_variable_does_not_span_slashes(srv):
    for uri in ("test://users/a/b/profile", "test://users/a%2Fb/profile"):   # nor once decoded
        response = srv.request("resources/read", {"uri": uri})
        assert response["error"]["code"] == -32002, response


def test_template_mime_type_from_its_extension(srv):
    templates = {t["uriTemplate"]: t for t in listing(srv, "resources/templates/list", "resourceTemplates")}
    assert templates["test://exports/{name}.csv"].get("mimeType") == "text/csv"
    [contents] = srv.result("resources/read", {"uri": "test://exports/q1.csv"})["contents"]
    assert contents["mimeType"] == "text/csv"


# ============================================================================================
# Prompts (§11.3)
# ============================================================================================

def test_prompt_entries(srv):
    prompts = {p["name"]: p for p in listing(srv, "prompts/list", "prompts")}
    assert prompts["congrats"] == {
        "name": "congrats", "title": "Card writer", "description": "Write a congratulations card.",
        "arguments": [
            {"name": "recipient", "description": "who the card is for", "required": True},
            {"name": "tone", "description": "how it should sound, for example warm or formal",  # Args:
             "required": False}]}
    assert prompts["review"] == {
        "name": "review", "description": "Review some code.", "arguments": [
            {"name": "code", "description": "the code to review", "required": True},           # :param:
            {"name": "language", "description": "its language", "required": False},
            {"name": "strict", "required": False}]}
    assert prompts["undocumented"] == {"name": "undocumented",
                                       "arguments": [{"name": "x", "required": True}]}
    assert prompts["rich"] == {"name": "rich", "title": "Rich", "description": "Every block kind",
                               "arguments": [], "icons": S.ICONS, "_meta": {"example.com/k": "v"}}


def test_prompt_get(srv):
    assert srv.result("prompts/get", {"name": "congrats", "arguments": {"recipient": "Ada"}}) == {
        "description": "Write a congratulations card.",
        "messages": [{"role": "user", "content": {"type": "text", "text": "Write a warm note for Ada."}}]}
    assert srv.result("prompts/get", {"name": "review", "arguments": {"code": "x=1", "strict": "true"}}) == {
        "description": "Review some code.", "messages": [
            {"role": "user", "content": {"type": "text", "text": "Review this python code (strict=True):\nx=1"}},
            {"role": "assistant", "content": {"type": "text", "text": "Sure, let me look."}}]}


def test_prompt_arguments_are_strings_converted_to_the_annotation(srv):
    result = srv.result("prompts/get", {"name": "repeat", "arguments": {"times": "3"}})
    assert result["messages"][0]["content"]["text"] == "int 3"


def test_prompt_missing_required_argument(srv):
    response = srv.request("prompts/get", {"name": "congrats", "arguments": {"tone": "dry"}})
    assert response["error"]["code"] == -32602
    assert response["error"]["message"] == \
        "Invalid arguments for prompt 'congrats':\n- Missing required property 'recipient'"


# ============================================================================================
# Version shaping: every field and block respects the negotiated version (R10, §11)
# ============================================================================================

# The fields each type has in each revision, from the official schema.json of that revision.
V24, V25_03, V25_06, V25_11 = VERSIONS
FIELDS = {  # type -> [(since, fields added)]
    "Tool": [(V24, {"name", "description", "inputSchema"}), (V25_03, {"annotations"}),
             (V25_06, {"title", "outputSchema", "_meta"}), (V25_11, {"icons", "execution"})],
    "Resource": [(V24, {"uri", "name", "description", "mimeType", "size", "annotations"}),
                 (V25_06, {"title", "_meta"}), (V25_11, {"icons"})],
    "ResourceTemplate": [(V24, {"uriTemplate", "name", "description", "mimeType", "annotations"}),
                         (V25_06, {"title", "_meta"}), (V25_11, {"icons"})],
    "Prompt": [(V24, {"name", "description", "arguments"}), (V25_06, {"title", "_meta"}),
               (V25_11, {"icons"})],
    "PromptArgument": [(V24, {"name", "description", "required"}), (V25_06, {"title"})],
    "Annotations": [(V24, {"audience", "priority"}), (V25_06, {"lastModified"})],
    "CallToolResult": [(V24, {"content", "isError", "_meta"}), (V25_06, {"structuredContent"})],
    "text": [(V24, {"type", "text", "annotations"}), (V25_06, {"_meta"})],
    "image": [(V24, {"type", "data", "mimeType", "annotations"}), (V25_06, {"_meta"})],
    "audio": [(V25_03, {"type", "data", "mimeType", "annotations"}), (V25_06, {"_meta"})],
    "resource": [(V24, {"type", "resource", "annotations"}), (V25_06, {"_meta"})],
    "resource_link": [(V25_06, {"type", "uri", "name", "title", "description", "mimeType", "size",
                                "annotations", "_meta"}), (V25_11, {"icons"})],
}


def allowed(kind, version):
    return set().union(*(fields for since, fields in FIELDS[kind] if since <= version))


def extra_fields(kind, obj, version):
    """Fields of `obj` that `version` does not define for `kind`, as readable strings."""
    if kind in ("text", "image", "audio", "resource", "resource_link") and not allowed(kind, version):
        return [f"{kind} block does not exist in {version}"]
    out = [f"{kind}.{k}" for k in sorted(set(obj) - allowed(kind, version))]
    if kind in ("text", "image", "audio", "resource", "resource_link") and "annotations" in obj:
        out += extra_fields("Annotations", obj["annotations"], version)
    return out


def collect(wire):
    """Everything the server says about itself and a few results, as (kind, object) pairs."""
    tools = listing(wire, "tools/list", "tools")
    pairs = [("Tool", t) for t in tools]
    pairs += [("Resource", r) for r in listing(wire, "resources/list", "resources")]
    pairs += [("ResourceTemplate", t)
              for t in listing(wire, "resources/templates/list", "resourceTemplates")]
    prompts = listing(wire, "prompts/list", "prompts")
    pairs += [("Prompt", p) for p in prompts]
    pairs += [("PromptArgument", a) for p in prompts for a in p["arguments"]]
    for name in ("zoo", "blocks", "mixed", "link", "annotated_text", "embedded_typed", "out_typeddict"):
        result = call(wire, name)
        pairs.append(("CallToolResult", result))
        pairs += [(block["type"], block) for block in result["content"]]
    for message in wire.result("prompts/get", {"name": "rich", "arguments": {}})["messages"]:
        pairs.append((message["content"]["type"], message["content"]))
    return pairs


@pytest.mark.parametrize("version", VERSIONS)
def test_no_field_or_block_the_version_does_not_define(servers, version):
    problems = [p for kind, obj in collect(servers(version)) for p in extra_fields(kind, obj, version)]
    assert problems == []


# What each version *does* get: (field path, since).  A field newer than the version is absent.
PRESENT = [
    ("tool.annotations", V25_03), ("tool.title", V25_06), ("tool._meta", V25_06), ("tool.icons", V25_11),
    ("tool.outputSchema", V25_06), ("resource.title", V25_06), ("resource._meta", V25_06),
    ("resource.icons", V25_11), ("template.title", V25_06), ("prompt.title", V25_06),
    ("prompt._meta", V25_06), ("prompt.icons", V25_11),
    ("result.structuredContent", V25_06), ("result._meta", V24),
    ("block.audio", V25_03), ("block.resource_link", V25_06), ("link.icons", V25_11),
    ("text._meta", V25_06), ("text.lastModified", V25_06), ("audio._meta", V25_06),
    ("embedded.lastModified", V25_06), ("embedded.priority", V24), ("image.annotations", V24),
    ("prompt-block.audio", V25_03), ("prompt-block.resource_link", V25_06), ("prompt-text._meta", V25_06),
]


def observe(wire):
    """field path -> present?, for the PRESENT table."""
    tools = {t["name"]: t for t in listing(wire, "tools/list", "tools")}
    meta_tool, typed = tools["files.delete-v2_final"], tools["out_typeddict"]
    resource = next(r for r in listing(wire, "resources/list", "resources") if r["uri"] == "test://meta/full")
    template = next(t for t in listing(wire, "resources/templates/list", "resourceTemplates")
                    if t["name"] == "profile")
    prompt = next(p for p in listing(wire, "prompts/list", "prompts") if p["name"] == "rich")
    zoo, mixed = call(wire, "zoo"), call(wire, "mixed")
    text_block, image_block, audio_slot, link_slot, embedded = zoo["content"]
    messages = [m["content"] for m in wire.result("prompts/get", {"name": "rich"})["messages"]]
    return {
        "tool.annotations": "annotations" in meta_tool, "tool.title": "title" in meta_tool,
        "tool._meta": "_meta" in meta_tool, "tool.icons": "icons" in meta_tool,
        "tool.outputSchema": "outputSchema" in typed,
        "resource.title": "title" in resource, "resource._meta": "_meta" in resource,
        "resource.icons": "icons" in resource, "template.title": "title" in template,
        "prompt.title": "title" in prompt, "prompt._meta": "_meta" in prompt, "prompt.icons": "icons" in prompt,
        "result.structuredContent": "structuredContent" in zoo, "result._meta": "_meta" in mixed,
        "block.audio": audio_slot["type"] == "audio", "block.resource_link": link_slot["type"] == "resource_link",
        "link.icons": "icons" in link_slot,
        "text._meta": "_meta" in text_block, "text.lastModified": "lastModified" in text_block["annotations"],
        "audio._meta": "_meta" in audio_slot,
        "embedded.lastModified": "lastModified" in embedded["annotations"],
        "embedded.priority": "priority" in embedded["annotations"],
        "image.annotations": image_block.get("annotations") == {"priority": 0.2},
        "prompt-block.audio": messages[2]["type"] == "audio",
        "prompt-block.resource_link": messages[3]["type"] == "resource_link",
        "prompt-text._meta": "_meta" in messages[0],
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_which_fields_and_blocks_each_version_gets(servers, version):
    seen = observe(servers(version))
    expected = {path: since <= version for path, since in PRESENT}
    assert seen == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_older_versions_get_a_text_stand_in_and_keep_the_rest(servers, version):
    wire = servers(version)
    zoo = call(wire, "zoo")
    text_block, image_block, audio_slot, link_slot, embedded = zoo["content"]
    assert text_block["text"] == "t" and text_block["annotations"]["audience"] == ["user", "assistant"]
    assert image_block["data"] == b64(MEDIA["png"]) and image_block["mimeType"] == "image/png"
    assert embedded["resource"] == {"uri": "test://data/notes.txt", "mimeType": "text/plain", "text": "milk"}
    if version < V25_06:      # resource_link -> a text block that still names the resource
        assert link_slot["type"] == "text" and "test://data/notes.txt" in link_slot["text"]
    if version < V25_03:      # audio -> a text block saying what was left out
        assert audio_slot["type"] == "text" and "audio/wav" in audio_slot["text"]
    structured = call(wire, "out_typeddict")             # the data survives as text everywhere (R6)
    assert json.loads(ok_text(structured)) == {"name": "Ada", "age": 36}
    assert ("structuredContent" in structured) is (version >= V25_06)


@pytest.mark.parametrize("version", [V24, V25_03])
def test_resource_annotations_respect_the_version(servers, version):
    resource = next(r for r in listing(servers(version), "resources/list", "resources")
                    if r["uri"] == "test://meta/full")
    assert resource["annotations"] == {"audience": ["assistant"]}


ARRAY_OUT = """import sys; sys.path.insert(0, %r)
from mcp_min import Server
server = Server("array-out")
server.tool(lambda: [1, 2], name="numbers", output_schema={"type": "array"})
server.run()
"""


@pytest.mark.parametrize("version", [V25_06, V25_11, mcp_min.V2026_07])
def test_an_output_schema_that_is_no_object_reaches_only_2026_07_28(spawn, tmp_path, version):
    """2025-06-18 and 2025-11-25 define outputSchema with root type "object" and
    structuredContent as an object (the TypeScript SDK refuses the whole tools/list
    otherwise); 2026-07-28 allows any schema and value. The text block carries the data."""
    script = tmp_path / "array_out.py"
    script.write_text(ARRAY_OUT % str(ROOT))
    wire, modern = spawn(str(script)), version == mcp_min.V2026_07
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": version,
                      "io.modelcontextprotocol/clientCapabilities": {}}} if modern else {}
    if not modern:
        wire.initialize(version)
    [tool] = wire.result("tools/list", meta)["tools"]
    result = wire.result("tools/call", {"name": "numbers", "arguments": {}, **meta})
    assert ("outputSchema" in tool) is modern and ("structuredContent" in result) is modern
    assert json.loads(ok_text(result)) == [1, 2]


# ============================================================================================
# Values JSON has no type for, and resources that are not there
# ============================================================================================

def test_uuid_decimal_and_path_travel_as_strings_both_ways():
    import decimal
    import pathlib
    import uuid
    server = Server("strings")

    @server.tool
    def shift(u: uuid.UUID, d: decimal.Decimal, p: pathlib.Path) -> dict:
        return {"u": u, "d": d + 1, "p": p / "x", "s": {1},
                "types": [type(u).__name__, type(d).__name__, isinstance(p, pathlib.Path)]}

    with Client(server) as client:
        schema = client.list_tools()[0]["inputSchema"]["properties"]
        assert schema["u"] == {"type": "string", "format": "uuid"}
        assert schema["d"] == {"type": ["string", "number"]}
        result = client.call_tool("shift", {"u": str(uuid.UUID(int=5)), "d": "1.5", "p": "/a"})
        assert result["structuredContent"] == {
            "u": "00000000-0000-0000-0000-000000000005", "d": "2.5", "p": "/a/x", "s": [1],
            "types": ["UUID", "Decimal", True]}
        bad = client.call_tool("shift", {"u": "nope", "d": "x", "p": "/a"})
        assert bad["isError"] is True
        assert 'u: expected a UUID, got "nope"' in bad["content"][0]["text"]
        assert 'd: expected a Decimal, got "x"' in bad["content"][0]["text"]


def test_sets_frozensets_and_enums_become_lists_and_values():
    import enum

    class Colour(enum.Enum):
        RED = "red"
    server = Server("values")

    @server.tool
    def values():
        return {"set": {3}, "frozen": frozenset({"a"}), "colour": Colour.RED,
                "by_colour": {Colour.RED: [Colour.RED]}}

    with Client(server) as client:
        result = client.call_tool("values")
    assert result["structuredContent"] == {"set": [3], "frozen": ["a"], "colour": "red",
                                           "by_colour": {"red": ["red"]}}


class Unencodable:
    pass


@pytest.mark.parametrize("value, message", [
    ({"items": [1, 2, {"when": Unencodable()}]},
     "TypeError: result.items[2].when: a value of type Unencodable has no JSON form; convert "
     "it to a str, number, bool, list, dict or dataclass"),
    ([1, b"raw"], "TypeError: result[1]: a value of type bytes has no JSON form; send it as "
                  "image(...), audio(...), embedded_resource(blob=...) or base64 text"),
    ({"x": [float("nan")]}, "ValueError: result.x[0]: nan has no JSON form (JSON has no NaN "
                            "or Infinity)"),
    ({"at": {(1, 2): "pair"}}, "TypeError: result.at: a key of type tuple, (1, 2); JSON object "
                               "keys are strings"),
], ids=["object", "bytes", "nan", "key"])
def test_a_result_json_cannot_encode_names_the_field(value, message):
    """Not a bare "Object of type X is not JSON serializable": where it is, and what to do."""
    server = Server("unencodable")
    server.tool(lambda: value, name="plain")

    @server.tool
    def annotated() -> typing.Any:
        return value

    with Client(server) as client:
        for name in ("plain", "annotated"):
            result = client.call_tool(name)
            assert result["isError"] is True
            assert result["content"][0]["text"] == message


@pytest.mark.parametrize("era, code", [("legacy", -32002), ("2026-07-28", -32602)])
def test_a_resource_function_says_not_found_with_the_code_of_the_era(era, code):
    server = Server("files")

    @server.resource("file:///notes/{name}")
    def note(name: str) -> str:
        if name == "gone":
            raise ResourceNotFound(name)
        if name == "missing":
            raise FileNotFoundError(name)
        return "here"

    with Client(server, era=era) as client:
        assert client.read_resource("file:///notes/a")["contents"][0]["text"] == "here"
        for uri in ("file:///notes/gone", "file:///notes/missing"):
            with pytest.raises(JSONRPCError) as raised:
                client.read_resource(uri)
            assert raised.value.code == code and raised.value.data == {"uri": uri}


# ============================================================================================
# What a tool or prompt returns that is no content block, no object, or no JSON
# ============================================================================================

def test_a_prompt_message_needs_a_role_of_the_spec_and_one_content_block():
    server = Server("prompts")
    returns = {"number": {"role": "user", "content": 5}, "none": {"role": "user"},
               "several": {"role": "user", "content": ["a", "b"]},
               "system": {"role": "system", "content": "hi"},
               "fine": {"role": "assistant", "content": "hi"}}
    for name, value in returns.items():
        server.prompt(lambda value=value: value, name=name)
    with Client(server) as client:
        errors = {}
        for name in returns:
            try:
                client.get_prompt(name)
            except JSONRPCError as e:
                errors[name] = e.message
        fine = client.get_prompt("fine")["messages"]
    assert fine == [{"role": "assistant", "content": {"type": "text", "text": "hi"}}]
    assert errors == {
        "number": "Internal error: TypeError: a prompt message's content must be a content "
                  "block (a str, or text(), image(), ...), not 5",
        "none": "Internal error: TypeError: a prompt message's content must be a content "
                "block (a str, or text(), image(), ...), not null",
        "several": "Internal error: TypeError: a prompt message's content must be a content "
                   'block (a str, or text(), image(), ...), not ["a", "b"]',
        "system": 'Internal error: TypeError: a prompt message\'s role is "user" or '
                  '"assistant", not "system"'}


def test_tool_result_takes_one_block_as_a_block_and_says_what_is_none():
    from decimal import Decimal
    server = Server("results")
    results = {
        "dict_block": lambda: mcp_min.ToolResult({"type": "text", "text": "hello"}),
        "bytes": lambda: mcp_min.ToolResult(b"hi"),
        "list_structured": lambda: mcp_min.ToolResult("x", structured=[1, 2]),
        "no_json": lambda: mcp_min.ToolResult("x", structured={"when": object()}),
        "decimal_size": lambda: mcp_min.ToolResult(
            mcp_min.resource_link("file:///a.csv", size=Decimal("3")))}
    for name, make in results.items():
        server.tool(make, name=name)
    with Client(server) as client:
        got = {name: client.call_tool(name) for name in results}
    assert got["dict_block"] == {"content": [{"type": "text", "text": "hello"}],
                                 "isError": False}
    texts = {name: r["content"][0]["text"] for name, r in got.items() if r["isError"]}
    assert texts == {
        "bytes": "TypeError: ToolResult content must be a content block (a str, or text(), "
                 'image(), ...), not "b\'hi\'"',
        "list_structured": "TypeError: ToolResult(structured=...) is an object (a dict, a "
                           "dataclass), not [1, 2]",
        "no_json": "TypeError: result.structuredContent.when: a value of type object has no "
                   "JSON form; convert it to a str, number, bool, list, dict or dataclass",
        "decimal_size": "TypeError: result.content[0].size: a value of type Decimal has no "
                        "JSON form; convert it to a str, number, bool, list, dict or dataclass"}


def test_embedded_resource_takes_base64_text_as_a_blob_and_refuses_bytes_as_text():
    block = mcp_min.embedded_resource("file:///logo.png", blob="iVBORw0KGgo=",
                                      mime_type="image/png")
    assert block["resource"] == {"uri": "file:///logo.png", "mimeType": "image/png",
                                 "blob": "iVBORw0KGgo="}
    with pytest.raises(TypeError, match=r"takes a str, not bytes: bytes go in blob="):
        mcp_min.embedded_resource("file:///notes.txt", text=b"hello")


def test_a_template_variable_whose_percent_encoding_is_not_utf8_is_refused():
    """caf%E9 and caf%FF would both reach the function as 'caf\ufffd'."""
    server = Server("notes")

    @server.resource("file:///notes/{name}")
    def note(name: str) -> str:
        return name
    with Client(server) as client:
        assert client.read_resource("file:///notes/caf%C3%A9")["contents"][0]["text"] == "café"
        with pytest.raises(JSONRPCError) as info:
            client.read_resource("file:///notes/caf%E9")
    assert info.value.code == -32602
    assert info.value.message == ("Invalid params: file:///notes/caf%E9 has a "
                                  "percent-encoding that is not UTF-8")
