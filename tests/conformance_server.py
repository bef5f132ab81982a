"""The fixtures of the official MCP conformance suite, served by mcp_min.

The suite (@modelcontextprotocol/conformance 0.1.16, server side) connects once per scenario and
looks for tools, resources and prompts with fixed names. This server has all of them:

    bash ../shared/conformance/run.sh python3 tests/conformance_server.py     # from the repo root
    CONFORMANCE_SCENARIOS="ping tools-list" bash ../shared/conformance/run.sh ...   # some
    CONFORMANCE_INCLUDE_PENDING=1 bash ../shared/conformance/run.sh ...   # + json-schema-2020-12
    CONFORMANCE_OUT=/tmp/conf bash ../shared/conformance/run.sh ...       # keep checks.json

Over Streamable HTTP, 0.2.0-alpha.12 tests both eras: the handshake era's scenarios and those
of 2026-07-28 (stateless requests, subscriptions/listen, input_required results), for which
the fixtures at the end of this file exist:

    python3 mcp_min.py serve --http 127.0.0.1:8790 tests/conformance_server.py &
    bash ../shared/conformance/run-http.sh http://127.0.0.1:8790/mcp 2026-07-28
    bash ../shared/conformance/run-http.sh http://127.0.0.1:8790/mcp 2025-11-25

Each fixture is marked with the scenario that uses it. The values are the ones the scenario
descriptions give; the suite itself checks only some of them (see the comments).
Protocol methods the suite also exercises need no code here: initialize, ping,
logging/setLevel and resources/subscribe|unsubscribe are built into mcp_min.

Every tool returns content blocks (``Content`` or ``ToolResult``), so each result is exactly
the content the scenario describes, without the ``structuredContent`` a ``-> str`` annotation adds.
"""

import io
import json
import os
import struct
import sys
import threading
import time
import wave
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import mcp_min  # noqa: E402
from mcp_min import Content, Context, Server, ToolError, ToolResult  # noqa: E402

server = Server("mcp-min-conformance", version=mcp_min.__version__,
                title="mcp_min conformance fixtures",
                instructions="Fixtures for the MCP conformance suite; not a useful server.")


# ---------------------------------------------------------------------------------------------
# Media: a 1x1 red PNG and a short silent WAV, built with the standard library
# ---------------------------------------------------------------------------------------------

def png_1x1_red():
    """A 1x1 pixel, 8-bit RGB PNG whose pixel is pure red."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)     # width, height, depth, RGB, ...
    pixels = b"\x00" + b"\xff\x00\x00"                         # filter byte, then R G B
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b""))


def wav_silence(samples=8, rate=8000):
    """A mono 16-bit PCM WAV of ``samples`` silent samples."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x00" * samples)
    return buffer.getvalue()


RED_PIXEL_PNG = png_1x1_red()
SILENT_WAV = wav_silence()


# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------
# tools-list: every tool must have a non-empty description (here: the docstring's first line).

# tools-call-simple-text: a text block with non-empty text.
@server.tool
def test_simple_text() -> Content:
    """Tests simple text content response."""
    return mcp_min.text("This is a simple text response for testing.")


# tools-call-image: an image block with data and a mimeType.
@server.tool
def test_image_content() -> Content:
    """Tests image content response (a 1x1 red PNG)."""
    return mcp_min.image(data=RED_PIXEL_PNG, mime_type="image/png")


# tools-call-audio: an audio block; mimeType must be exactly "audio/wav".
@server.tool
def test_audio_content() -> Content:
    """Tests audio content response (a short silent WAV)."""
    return mcp_min.audio(data=SILENT_WAV, mime_type="audio/wav")


# tools-call-embedded-resource: a resource block with uri, mimeType and text.
@server.tool
def test_embedded_resource() -> Content:
    """Tests embedded resource content response."""
    return mcp_min.embedded_resource("test://embedded-resource", mime_type="text/plain",
                                     text="This is an embedded resource content.")


# tools-call-mixed-content: at least one text, one image and one resource block.
@server.tool
def test_multiple_content_types() -> ToolResult:
    """Tests response with multiple content types (text, image, resource)."""
    data = json.dumps({"test": "data", "value": 123}, separators=(",", ":"))
    return ToolResult([
        mcp_min.text("Multiple content types test:"),
        mcp_min.image(data=RED_PIXEL_PNG, mime_type="image/png"),
        mcp_min.embedded_resource("test://mixed-content-resource", mime_type="application/json",
                                  text=data),
    ])


# tools-call-with-logging: three info-level notifications/message, 50 ms apart, during the
# call. The scenario first sets the level to "debug", then counts at least 3 messages.
@server.tool
def test_tool_with_logging(ctx: Context) -> Content:
    """Tests a tool that sends log messages during execution."""
    ctx.info("Tool execution started")
    time.sleep(0.05)
    ctx.info("Tool processing data")
    time.sleep(0.05)
    ctx.info("Tool execution completed")
    return mcp_min.text("Tool with logging executed successfully")


# tools-call-with-progress: progress 0, 50 and 100 of 100, 50 ms apart, all before the
# result. The token is whatever the request's _meta.progressToken was (the suite's client
# sends the request id, an integer); report_progress sends nothing without one.
@server.tool
def test_tool_with_progress(ctx: Context) -> Content:
    """Tests a tool that reports progress notifications."""
    for step in (0, 50, 100):
        if step:
            time.sleep(0.05)
        ctx.report_progress(step, total=100, message=f"Completed step {step} of 100")
    return mcp_min.text("Tool with progress executed successfully")


# tools-call-error: the result must have isError: true and a text; ToolError gives both.
@server.tool
def test_error_handling() -> Content:
    """Tests error response handling: always fails."""
    raise ToolError("This tool intentionally returns an error for testing")


def _text_of(content):
    """The text of a sampling result's content (a block or, since 2025-11-25, a list)."""
    blocks = content if isinstance(content, list) else [content]
    return "".join(block.get("text", "") for block in blocks
                   if isinstance(block, dict) and block.get("type") == "text")


# tools-call-sampling: sampling/createMessage with one user message and maxTokens 100. The
# suite checks that the request reached its client and that the tool returned some content.
@server.tool
def test_sampling(prompt: str, ctx: Context) -> Content:
    """Tests server-initiated sampling (an LLM completion request to the client).

    Args:
        prompt: The prompt to send to the LLM
    """
    reply = ctx.sample(prompt, max_tokens=100)
    return mcp_min.text(f"LLM response: {_text_of(reply.get('content')) or 'No response'}")


# tools-call-elicitation: elicitation/create with the scenario's two-field form.
@server.tool
def test_elicitation(message: str, ctx: Context) -> Content:
    """Tests server-initiated elicitation (a request for user input).

    Args:
        message: The message to show the user
    """
    reply = ctx.elicit(message, {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    })
    return mcp_min.text(f"User response: action={reply.get('action')}, "
                        f"content={json.dumps(reply.get('content') or {})}")


# elicitation-sep1034-defaults (SEP-1034, 2025-11-25): a default for every primitive type.
# Checked exactly: name "John Doe" (string), age 30 (integer), score 95.5 (number),
# status "active" (string enum containing it), verified true (boolean).
SEP1034_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status",
                   "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


@server.tool
def test_elicitation_sep1034_defaults(ctx: Context) -> Content:
    """Tests elicitation with default values for every primitive type (SEP-1034)."""
    reply = ctx.elicit("Please review and update the form fields with defaults", SEP1034_SCHEMA)
    return mcp_min.text(f"Elicitation completed: action={reply.get('action')}, "
                        f"content={json.dumps(reply.get('content') or {})}")


# elicitation-sep1330-enums (SEP-1330, 2025-11-25): the five enum shapes. Checked: untitled
# single (enum, no oneOf/enumNames), titled single (oneOf of const/title, no enum), legacy
# (enum + enumNames of equal length), untitled multi (array, items.enum, no items.anyOf),
# titled multi (array, items.anyOf of const/title, no items.enum).
SEP1330_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string", "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string", "description": "Select one option with titles",
            "oneOf": [{"const": "value1", "title": "First Option"},
                      {"const": "value2", "title": "Second Option"},
                      {"const": "value3", "title": "Third Option"}],
        },
        "legacyEnum": {
            "type": "string", "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array", "description": "Select multiple options with titles",
            "minItems": 1, "maxItems": 3,
            "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}]},
        },
    },
    "required": [],
}


@server.tool
def test_elicitation_sep1330_enums(ctx: Context) -> Content:
    """Tests elicitation with the enum schema variants of SEP-1330."""
    reply = ctx.elicit("Please select options from the enum fields", SEP1330_SCHEMA)
    return mcp_min.text(f"Elicitation completed: action={reply.get('action')}, "
                        f"content={json.dumps(reply.get('content') or {})}")


# json-schema-2020-12 (pending in the suite; SEP-1613): tools/list must keep $schema, $defs
# (with "address") and additionalProperties: false in the inputSchema as given.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        },
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
    },
    "additionalProperties": False,
}


@server.tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(name: str | None = None, address: dict | None = None) -> Content:
    """Tool with JSON Schema 2020-12 features."""
    return mcp_min.text(f"JSON Schema 2020-12 tool called with: "
                        f"{json.dumps({'name': name, 'address': address})}")


# ---------------------------------------------------------------------------------------------
# Resources
# ---------------------------------------------------------------------------------------------
# resources-list: each resource needs a uri and a name.

# resources-read-text: contents[0] needs uri, mimeType and text.
@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text():
    """A static text resource for testing."""
    return "This is the content of the static text resource."


# resources-read-binary: contents[0] needs uri, mimeType and a base64 blob (bytes -> blob).
@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary():
    """A static binary resource (a PNG image) for testing."""
    return RED_PIXEL_PNG


# resources-subscribe, resources-unsubscribe: the URI the scenarios subscribe to.
@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource():
    """A resource clients can subscribe to."""
    return "Watched resource content"


# resources-templates-read: test://template/123/data must come back with "123" in its text.
@server.resource("test://template/{id}/data", name="template", mime_type="application/json")
def template_data(id: str):
    """A resource template with parameter substitution."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"},
                      separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------------
# prompts-list: each prompt needs a non-empty description (the docstring's first line).

# prompts-get-simple: one user message.
@server.prompt
def test_simple_prompt():
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


# prompts-get-with-args: the messages must contain both argument values.
@server.prompt
def test_prompt_with_arguments(arg1: str, arg2: str):
    """A prompt with required arguments.

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


# prompts-get-embedded-resource: a message whose content is an embedded resource.
@server.prompt
def test_prompt_with_embedded_resource(resourceUri: str):  # noqa: N803 (the suite's name)
    """A prompt that includes an embedded resource.

    Args:
        resourceUri: URI of the resource to embed
    """
    return [
        mcp_min.embedded_resource(resourceUri, mime_type="text/plain",
                                  text="Embedded resource content for testing."),
        "Please process the embedded resource above.",
    ]


# prompts-get-with-image: a message whose content is an image with data and mimeType.
@server.prompt
def test_prompt_with_image():
    """A prompt that includes image content."""
    return [
        mcp_min.image(data=RED_PIXEL_PNG, mime_type="image/png"),
        "Please analyze the image above.",
    ]


# ---------------------------------------------------------------------------------------------
# Completion
# ---------------------------------------------------------------------------------------------
# completion-complete: completion/complete for argument arg1 of test_prompt_with_arguments
# (value "test"); any {"completion": {"values": [...]}} passes.
# NOTE: the completion registration API is not final. This uses the signature in mcp_min.py
# today, completion(argument, prompt=name) with fn(value, context_arguments) -> list of str
# (an earlier sketch had @server.completion(ref, argument)).
ARG1_SUGGESTIONS = ("testValue1", "testValue2", "paris", "park", "party")


@server.completion("arg1", prompt="test_prompt_with_arguments")
def complete_arg1(value, context_arguments):
    return [word for word in ARG1_SUGGESTIONS if word.startswith(value)]


# ---------------------------------------------------------------------------------------------
# 2026-07-28: stateless diagnostics (server-stateless)
# ---------------------------------------------------------------------------------------------
# The suite calls these over HTTP at 2026-07-28, where a question for the client is an
# input_required result. Written with the ordinary Context calls, they work in the handshake
# era too, where the same calls send real requests to the client.

# The scenario calls it declaring no capabilities and wants error -32021 whose
# data.requiredCapabilities is {"sampling": {}}: ctx.sample raises CapabilityError, which
# mcp_min turns into exactly that.
@server.tool
def test_missing_capability(ctx: Context) -> Content:
    """Needs the client's sampling capability: asks its model one question."""
    reply = ctx.sample("Reply with the word 'ready'.", max_tokens=10)
    return mcp_min.text(f"Sampling capability is declared; the model said: "
                        f"{_text_of(reply.get('content')) or 'nothing'}")


# Called declaring elicitation: the response stream must carry no server request, only the
# result (here input_required, with the question inside it).
@server.tool
def test_streaming_elicitation(ctx: Context) -> Content:
    """Asks the user to confirm (at 2026-07-28 inside the result, never as a request)."""
    reply = ctx.elicit("Please confirm to continue", _form(ok="boolean"))
    return mcp_min.text(f"Streaming elicitation completed: action={reply.get('action')}")


# Called without a logLevel in _meta: no notifications/message may reach the client. The tool
# logs anyway; mcp_min sends a message only at or above the level the request asked for.
@server.tool
def test_logging_tool(ctx: Context) -> Content:
    """Logs an info message (sent only if the request asked for log messages)."""
    ctx.info("test_logging_tool ran")
    return mcp_min.text("Logging tool executed")


# With a subscriptions/listen stream open, these must make notifications/tools/list_changed
# (or prompts) arrive on it, and nothing on a stream that did not ask for that kind. Each adds
# a throwaway entry and removes it again: the list really changes (twice), and every other
# scenario still sees the same list.
def _throwaway_tool() -> Content:
    """A tool that exists only while test_trigger_tool_change runs."""
    return mcp_min.text("Throwaway tool")


def _throwaway_prompt():
    """A prompt that exists only while test_trigger_prompt_change runs."""
    return "Throwaway prompt"


_changing = threading.Lock()       # two calls at once must not add the same name twice


def _add_and_remove(register, remove, fn, name):
    """Register ``fn`` as ``name``, then remove it: two list changes, the list as before."""
    with _changing:
        register(fn, name=name)
        remove(name)


@server.tool
def test_trigger_tool_change() -> Content:
    """Changes the tool list (adds a tool, then removes it), so list_changed is sent."""
    _add_and_remove(server.tool, server.remove_tool, _throwaway_tool, "test_throwaway_tool")
    return mcp_min.text("Tool list changed")


@server.tool
def test_trigger_prompt_change() -> Content:
    """Changes the prompt list (adds a prompt, then removes it), so list_changed is sent."""
    _add_and_remove(server.prompt, server.remove_prompt, _throwaway_prompt,
                    "test_throwaway_prompt")
    return mcp_min.text("Prompt list changed")


# ---------------------------------------------------------------------------------------------
# 2026-07-28: asking the client for input (input-required-result-*)
# ---------------------------------------------------------------------------------------------
# Each scenario names the inputRequests key it expects; key= gives the question that name.
# At 2026-07-28 mcp_min signs requestState itself (HMAC), so a tampered one is refused with
# -32602 before the tool runs, and an answer counts only for a question the server asked.

def _form(**properties):
    """An elicitation form whose properties (name=JSON type) are all required."""
    return {"type": "object", "properties": {name: {"type": kind}
                                             for name, kind in properties.items()},
            "required": list(properties)}


def _ask_name(ctx):
    return ctx.elicit("What is your name?", _form(name="string"), key="user_name")


def _accepted(reply, field, default):
    """The answer to a one-field form, or ``default`` if the user did not accept it."""
    if reply.get("action") != "accept":
        return default
    return (reply.get("content") or {}).get(field, default)


# input-required-result-basic-elicitation, and (same tool) -missing-input-response,
# -result-type, -ignore-extra-params and -validate-input: round 1 asks key "user_name",
# round 2 answers "Hello, <name>!".
@server.tool
def test_input_required_result_elicitation(ctx: Context) -> Content:
    """Asks the user's name (elicitation), then greets them."""
    name = _accepted(_ask_name(ctx), "name", "stranger")
    return mcp_min.text(f"Hello, {name}!")


# input-required-result-basic-sampling: key "capital_question", the user message below and
# maxTokens 100; round 2 returns the model's answer.
@server.tool
def test_input_required_result_sampling(ctx: Context) -> Content:
    """Asks the client's model a question (sampling) and returns its answer."""
    reply = ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return mcp_min.text(f"The model answered: {_text_of(reply.get('content')) or 'nothing'}")


# input-required-result-basic-list-roots: key "client_roots"; round 2 names the roots.
@server.tool
def test_input_required_result_list_roots(ctx: Context) -> Content:
    """Asks for the client's roots and lists them."""
    roots = ctx.list_roots(key="client_roots")
    listed = ", ".join(root.get("uri", "?") for root in roots) or "none"
    return mcp_min.text(f"Client roots: {listed}")


# input-required-result-request-state: round 1 carries inputRequests ("confirm") and a
# requestState; round 2's text must contain "state-ok". At 2026-07-28 the answer reaches the
# tool only through a requestState that passed the signature check; the handshake era has no
# requestState, so the text does not claim one there.
@server.tool
def test_input_required_result_request_state(ctx: Context) -> Content:
    """Asks for a confirmation; at 2026-07-28 through a signed requestState."""
    reply = ctx.elicit("Please confirm", _form(ok="boolean"), key="confirm")
    checked = "state-ok: requestState verified" if "requestState" in ctx.params \
        else "no requestState in this protocol version"
    return mcp_min.text(f"{checked}; ok={_accepted(reply, 'ok', False)}")


# input-required-result-multiple-input-requests: one round with an elicitation, a sampling
# request and roots/list (keys user_name, greeting, client_roots) plus requestState.
@server.tool
def test_input_required_result_multiple_inputs(ctx: Context) -> Content:
    """Asks for a name, a model-written greeting and the roots, all in one round."""
    reply, greeting, roots = ctx.ask_together(
        lambda: _ask_name(ctx),
        lambda: ctx.sample("Generate a greeting", max_tokens=50, key="greeting"),
        lambda: ctx.list_roots(key="client_roots"))
    return mcp_min.text(f"{_text_of(greeting.get('content')) or 'Hello'} "
                        f"{_accepted(reply, 'name', 'stranger')} "
                        f"({len(roots)} root(s))")


# input-required-result-multi-round: three rounds. Round 1 asks "step1", round 2 "step2"
# with a new requestState (it now carries the first answer), round 3 completes.
@server.tool
def test_input_required_result_multi_round(ctx: Context) -> Content:
    """Asks two questions, one round each, then answers with both."""
    name = _accepted(ctx.elicit("Step 1: What is your name?", _form(name="string"),
                                key="step1"), "name", "stranger")
    color = _accepted(ctx.elicit("Step 2: What is your favorite color?", _form(color="string"),
                                 key="step2"), "color", "no colour")
    return mcp_min.text(f"{name}'s favorite color is {color}")


# input-required-result-tampered-state: round 1 needs a requestState; a retry whose state
# was altered must be an error (mcp_min: -32602, the signature does not match).
@server.tool
def test_input_required_result_tampered_state(ctx: Context) -> Content:
    """Asks for a confirmation; a retry with an altered requestState is refused."""
    reply = ctx.elicit("Please confirm", _form(ok="boolean"), key="confirm")
    return mcp_min.text(f"Confirmed: ok={_accepted(reply, 'ok', False)}")


def _if_declared(ask):
    """``ask`` as a function that returns None, rather than raising CapabilityError, when
    the client did not declare what the question needs."""
    def run():
        try:
            return ask()
        except mcp_min.CapabilityError:
            return None
    return run


# input-required-result-capability-check: called declaring only sampling; the result may ask
# only what the client declared (here: the sampling question, never the elicitation).
@server.tool
def test_input_required_result_capabilities(ctx: Context) -> Content:
    """Asks the user (if the client can elicit) and its model (if it can sample)."""
    reply, answer = ctx.ask_together(
        _if_declared(lambda: ctx.elicit("What is your name?", _form(name="string"),
                                        key="user_name")),
        _if_declared(lambda: ctx.sample("Say hello", max_tokens=20, key="model_hello")))
    if reply is None and answer is None:
        return mcp_min.text("Nothing asked: the client declared neither elicitation nor sampling")
    parts = []
    if reply is not None:
        parts.append(f"name={_accepted(reply, 'name', 'stranger')}")
    if answer is not None:
        parts.append(f"model={_text_of(answer.get('content')) or 'nothing'}")
    return mcp_min.text("Asked what the client declared: " + ", ".join(parts))


# input-required-result-non-tool-request: prompts/get may ask too. Key "user_context"; round 2
# returns the prompt's messages.
@server.prompt
def test_input_required_result_prompt(ctx: Context):
    """A prompt that first asks the user what context to use."""
    reply = ctx.elicit("What context should the prompt use?", _form(context="string"),
                       key="user_context")
    return f"Answer using this context: {_accepted(reply, 'context', 'none given')}"


if __name__ == "__main__":
    server.run()
